"""KV-transfer benchmark: torch.distributed against a plain socket and shared memory, same bytes.

``python benchmarks/kv_transfer.py`` prints the table; ``benchmarks/run.py`` runs it as its
``kv_transfer`` section (through :func:`run_section`).

For each cache size, a prefill worker sends a KV cache (a seeded random one of
``helpers.tinygpt.tiny_config``'s shape, fp32: ``kvtransfer.distributed_kv_transfer(...,
prefill=False)``) to a decode worker with ``torch.distributed`` (gloo on a CPU, NCCL between two
GPUs), and the same bytes, in the same ``2 * n_layers`` messages, go between two processes over a
plain TCP socket (``kvtransfer.socket_transfer``) and through shared memory
(``kvtransfer.shared_memory_transfer``). Reported: the best bandwidth of ``rounds`` interleaved
rounds for each path, and the ratio torch.distributed / socket. Target: ratio >= 0.5 at the largest
size (the runtime should not cost more than half of what the kernel's own socket path achieves).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from helpers import kvtransfer  # noqa: E402
from helpers.formatting import format_si, markdown_table  # noqa: E402
from helpers.tinygpt import tiny_config  # noqa: E402

TOKENS = (512, 4096, 32768)
TARGET_RATIO = 0.5


def run_section(rounds: int = 3, tokens: tuple[int, ...] = TOKENS) -> dict[str, Any]:
    """Measure the three paths; return ``{"title", "metrics", "targets", "markdown"}``.

    ``targets`` holds ``(name, value, op, threshold, unit)`` tuples (``benchmarks/run.py``'s ``Target`` fields).
    """
    config = tiny_config()
    dtype = "fp32"
    best: dict[int, dict[str, Any]] = {n: {} for n in tokens}
    backend = kvtransfer.default_backend()  # with gloo the benchmark moves host memory
    for _ in range(rounds):  # interleaved, so every path sees the same machine state
        sent = kvtransfer.distributed_kv_transfer(
            config,
            tokens,
            dtype=dtype,
            repeats=10,
            warmup=2,
            backend=backend,
            prefill=False,
            device="cuda" if backend == "nccl" else "cpu",
            timeout=300,
        )
        for result in sent:
            sizes = kvtransfer.kv_message_bytes(config, result.tokens, dtype=dtype)
            for path, r in (
                ("distributed", result),
                ("socket", kvtransfer.socket_transfer(sizes, repeats=10, warmup=2)),
                (
                    "shared_memory",
                    kvtransfer.shared_memory_transfer(sizes, repeats=10, warmup=2),
                ),
            ):
                if not r.verified:
                    raise RuntimeError(
                        f"{path} transfer of {result.tokens} tokens delivered wrong bytes"
                    )
                entry = best[result.tokens].setdefault(
                    path,
                    {
                        "bandwidths": [],
                        "nbytes": r.nbytes,
                        "device": r.device,
                        "path": r.path,
                    },
                )
                entry["bandwidths"].append(r.bandwidth)
    metrics: dict[str, Any] = {
        "config": config.name,
        "dtype": dtype,
        "backend": backend,
        "rounds": rounds,
    }
    header = [
        "tokens",
        "cache",
        "torch.distributed",
        "plain socket",
        "shared memory",
        "distributed / socket",
    ]
    rows = []
    for n in tokens:
        row = {path: max(v["bandwidths"]) for path, v in best[n].items()}
        ratio = row["distributed"] / row["socket"]
        metrics[f"{n} tokens"] = {
            **{p: v for p, v in best[n].items()},
            "best_bandwidth": row,
            "ratio_distributed_over_socket": ratio,
        }
        rows.append(
            [
                n,
                format_si(best[n]["socket"]["nbytes"], "B"),
                format_si(row["distributed"], "B/s"),
                format_si(row["socket"], "B/s"),
                format_si(row["shared_memory"], "B/s"),
                f"{ratio:.2f}",
            ]
        )
    largest = metrics[f"{tokens[-1]} tokens"]["ratio_distributed_over_socket"]
    markdown = (
        f"KV caches of `tiny_config()` ({config.n_layers} layers, {2 * config.n_layers} messages per cache, {dtype}) "
        f"sent from a prefill worker to a decode worker over torch.distributed ({backend}), and the same bytes over a "
        f"plain TCP socket and through shared memory between two processes on 127.0.0.1; best bandwidth of {rounds} "
        f"interleaved rounds (10 timed transfers each, median). Every transfer was verified byte for byte.\n\n"
        + markdown_table(header, rows, align="rrrrrr")
    )
    return {
        "title": "KV-cache transfer: torch.distributed against a plain socket and shared memory",
        "metrics": metrics,
        "targets": [
            (
                f"torch.distributed / socket bandwidth at {tokens[-1]} tokens",
                largest,
                ">=",
                TARGET_RATIO,
                "",
            )
        ],
        "markdown": markdown,
    }


if __name__ == "__main__":
    import torch

    if not torch.cuda.is_available():
        torch.set_num_threads(1)
    out = run_section()
    print(out["markdown"])
    for name, value, op, threshold, _ in out["targets"]:
        print(
            f"{name}: {value:.3f} (target {op} {threshold}) -> {'MET' if value >= threshold else 'NOT MET'}"
        )
