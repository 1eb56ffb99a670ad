"""Write the committed CPU trace of one ResNet-50 bottleneck (batch 1, eager) for Chapter 3's worked timeline.

Run from the repository root: ``PYTHONPATH=$PWD python benchmarks/trace_resnet_block.py``.
It profiles one forward pass of :func:`helpers.profiling.resnet_bottleneck` on
the CPU (one thread, fp32, stage 1's 56 × 56 map) and writes the trimmed trace
(the fastest of 25 profiled steps, trimmed by :func:`helpers.profiling.trim_trace` to its complete events, no ``args``)
to ``chapters/figures/trace_cpu_resnet_block.json``, with the machine named in
a ``"device"`` field. Re-running it rewrites the file with this machine's times.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from helpers import bench, profiling  # noqa: E402

OUT = ROOT / "chapters" / "figures" / "trace_cpu_resnet_block.json"


def main() -> None:
    torch.set_num_threads(1)
    block = profiling.resnet_bottleneck()
    x = torch.randn(1, 64, 56, 56)
    trace = profiling.record_trace(lambda: block(x), OUT, warmup=3, steps=25)
    trace["device"] = bench.device_name(torch.device("cpu"))
    trace["what"] = (
        "one eager forward of a ResNet-50 bottleneck (stage 1, 64-64-256), batch 1, fp32, 56 x 56"
    )
    trace["note"] = (
        "wall-clock times on a CPU shared with other jobs: one op's duration can include "
        "time the OS gave another process; the ops' order, nesting and count are exact"
    )
    OUT.write_text(json.dumps(trace, separators=(",", ":")), encoding="utf-8")
    events = profiling.timeline(trace)
    print(
        f"{OUT.relative_to(ROOT)}: {len(events)} events, {OUT.stat().st_size / 1e3:.0f} kB, {trace['device']}"
    )


if __name__ == "__main__":
    main()
