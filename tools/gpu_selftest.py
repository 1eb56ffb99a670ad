"""Self-test of the labs' GPU timing and profiling paths, run first by ``make gpu-labs`` (about 40 s).

Each check prints ``PASS`` or ``FAIL`` with its numbers; the exit status is the number of
failures. On a machine without CUDA only the CPU checks run and the GPU ones say ``SKIP``.

1. ``bench.time_amortized(graph=True)`` on a small convolution reports CUDA-graph replay (a
   fallback would time the CPU's dispatch), and its window holds at least 1 ms.
2. A 4096³ fp16 matmul times the same (within 15 %) by one call between events and by graph replay:
   a long kernel has no dispatch to hide.
3. The GPU's floor per kernel: a replayed graph of 256 tiny adds, per add (printed; Lab 5 and
   Lab 3 compare kernels × floor with their times).
4. The profiler classes a conv + batch norm + ReLU: at least one matrix and one elementwise kernel.
5. A trace of one ResNet bottleneck (``profiling.record_trace``) holds GPU kernels (on a CPU:
   CPU operators only).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from helpers import bench, profiling  # noqa: E402

failures = 0


def check(name: str, ok: bool, detail: str) -> None:
    global failures
    failures += not ok
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)


def main() -> int:
    t0 = time.perf_counter()
    dev = bench.device()
    on_gpu = dev.type == "cuda"
    print(f"self-test on {bench.device_name(dev)}")
    if on_gpu:
        conv = torch.nn.Conv2d(
            64, 64, 3, padding=1, bias=False, device=dev, dtype=torch.float16
        )
        x = torch.randn(1, 64, 56, 56, device=dev, dtype=torch.float16)
        with torch.no_grad():
            t = bench.time_amortized(lambda: conv(x), graph=True, dev=dev, repeats=5)
        check(
            "graph-timed convolution",
            t.method == "events, CUDA graph replay" and t.calls * t.median >= 0.9e-3,
            f"{t.median * 1e6:.1f} µs per call, {t.calls} calls per window, method {t.method!r}",
        )
        a = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
        one = bench.time_fn(lambda: a @ a, warmup=3, repeats=5, dev=dev).median
        graphed = bench.time_amortized(
            lambda: a @ a, graph=True, dev=dev, repeats=5
        ).median
        check(
            "long matmul: events and graph agree",
            abs(one / graphed - 1) < 0.15,
            f"{one * 1e3:.3f} ms by events, {graphed * 1e3:.3f} ms by graph replay",
        )
        y = torch.zeros(1, device=dev)

        def adds() -> None:
            for _ in range(256):
                y.add_(1)

        floor = bench.time_amortized(adds, graph=True, dev=dev, repeats=5).median / 256
        check(
            "floor per kernel in a graph",
            0 < floor < 20e-6,
            f"{floor * 1e6:.2f} µs per tiny kernel",
        )
        from torch.profiler import ProfilerActivity, profile

        block = (
            torch.nn.Sequential(
                torch.nn.Conv2d(64, 64, 3, padding=1, bias=False),
                torch.nn.BatchNorm2d(64),
                torch.nn.ReLU(),
            )
            .to(dev, torch.float16)
            .eval()
        )
        with torch.no_grad():
            block(x)
            with profile(
                activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]
            ) as prof:
                block(x)
                torch.cuda.synchronize()
        kinds = profiling.summarize(profiling.launched_kernels(prof.events()))
        check(
            "profiler classes conv + bn + relu",
            kinds.get("matrix", (0, 0))[0] >= 1
            and kinds.get("elementwise", (0, 0))[0] >= 1,
            f"{ {k: n for k, (n, _) in kinds.items()} }",
        )
    else:
        for name in (
            "graph-timed convolution",
            "long matmul",
            "floor per kernel",
            "profiler classes",
        ):
            print(f"SKIP  {name}: no CUDA device")
    block = profiling.resnet_bottleneck().to(dev)
    if on_gpu:
        block = block.half()
    xb = torch.randn(1, 64, 56, 56, device=dev, dtype=next(block.parameters()).dtype)
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        trace = profiling.record_trace(lambda: block(xb), Path(tmp) / "t.json")
    events = profiling.timeline(trace)
    lanes = {e.lane for e in events}
    check(
        "trace of a ResNet bottleneck",
        ("gpu" in lanes) == on_gpu and "cpu" in lanes,
        f"{len(events)} events, lanes {sorted(lanes)}",
    )
    print(f"self-test: {failures} failure(s) in {time.perf_counter() - t0:.1f} s")
    return failures


if __name__ == "__main__":
    sys.exit(main())
