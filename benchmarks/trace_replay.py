"""Trace-replay benchmark: how long the Mooncake trace replays of Chapter 9, Chapter 11 and Lab 6 take here.

``python benchmarks/trace_replay.py`` prints the table; ``benchmarks/run.py`` can run it as a
``trace_replay`` section through :func:`run_section` (same return shape as ``benchmarks/kv_transfer.py``).

For each open Mooncake trace (``conversation``: 12,031 requests; ``synthetic``: 3,993) it times, on the
host CPU (the replay is numpy and Python, it never touches a GPU):

* ``cachesim.simulate_prefix_cache`` at one capacity, a 2 TB pool of Llama-3-70B bf16 KV cache
  (6.1 M tokens): the direct LRU walk;
* ``cachesim.stack_distances``: the one-pass LRU stack distances that give every capacity's hit rate;
* ``cachesim.hit_rate_curve`` at 300 capacities from those distances;
* ``tiers.replay_prefill``: every request's fetch-or-recompute prefill time through Lab 6's
  HBM / DRAM / remote-pool hierarchy (Llama-3-70B on 8 x H800).

and checks that the direct walk and the one pass agree request by request at that capacity.
Reported: the best of ``rounds`` runs of each. Targets: the conversation trace's direct replay and its
one-pass stack distances each < 2 s.

The traces are found as ``helpers.traces.load_trace`` finds them: ``$MOONCAKE_TRACES``, then the
local cache, then a download; if ``$MOONCAKE_TRACES`` is unset and ``../shared/data/mooncake-traces``
exists beside the repository, that folder is used.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from helpers import bench, cachesim, inference, llm, tiers, traces  # noqa: E402
from helpers.formatting import format_si, markdown_table  # noqa: E402
from helpers.tiers import replay_prefill  # noqa: E402

TARGET_SECONDS = 2.0
MODEL = "llama-3-70b"
POOL_BYTES = 2e12


def _best_of(fn: Callable[[], Any], rounds: int) -> tuple[float, list[float], Any]:
    """Best wall-clock seconds of ``rounds`` calls of ``fn``, every sample, and the last result."""
    samples, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return min(samples), samples, result


def _hierarchy() -> list[tiers.Tier]:
    """Lab 6's tiers with a 16 TB remote pool: HBM left after the weights on 8 x H800, 2 TB DRAM (PCIe 5.0), pool (ConnectX-7)."""
    hbm_free = inference.free_kv_bytes(MODEL, "h800", n_gpus=8)
    return tiers.example_hierarchy(
        "h800",
        n_gpus=8,
        hbm_bytes=hbm_free,
        dram_bytes=2e12,
        pool_bytes=hbm_free + 2e12 + 16e12,
        ssd_bytes=0,
    )


def run_section(
    rounds: int = 3, names: tuple[str, ...] = ("conversation", "synthetic")
) -> dict[str, Any]:
    """Time the replays; return ``{"title", "metrics", "targets", "markdown"}``.

    ``targets`` holds ``(name, value, op, threshold, unit)`` tuples (``benchmarks/run.py``'s ``Target`` fields).
    """
    shared = ROOT.parent / "shared" / "data" / "mooncake-traces"
    if not os.environ.get(traces.ENV_VAR) and shared.is_dir():
        os.environ[traces.ENV_VAR] = str(shared)
    capacity = POOL_BYTES / llm.kv_cache_bytes_per_token(MODEL, dtype="bf16")
    grid = np.geomspace(512, 3e8, 300)
    levels = _hierarchy()
    host = bench.device_name("cpu")
    metrics: dict[str, Any] = {
        "host": host,
        "rounds": rounds,
        "capacity_tokens": capacity,
        "model": MODEL,
    }
    header = [
        "trace",
        "requests",
        "block refs",
        "load",
        "direct replay, 1 capacity",
        "one pass (stack distances)",
        "curve, 300 capacities",
        "per-request tiered prefill",
        "agree",
    ]
    rows = []
    targets = []
    for name in names:
        load_s, _, trace = _best_of(lambda: traces.load_trace(name), 1)
        direct_s, direct_all, stats = _best_of(
            lambda: cachesim.simulate_prefix_cache(trace, capacity), rounds
        )
        one_pass_s, one_pass_all, sd = _best_of(
            lambda: cachesim.stack_distances(trace), rounds
        )
        curve_s, _, _ = _best_of(lambda: cachesim.hit_rate_curve(sd, grid), rounds)
        tiered_s, _, replay = _best_of(
            lambda: replay_prefill(sd, levels, MODEL, "h800", n_gpus=8), rounds
        )
        agree = bool(np.array_equal(stats.hit_tokens, sd.request_hit_tokens(capacity)))
        if not agree:
            raise RuntimeError(
                f"{name}: direct replay and stack distances disagree at {capacity:.0f} tokens"
            )
        metrics[name] = {
            "requests": trace.n_requests,
            "block_references": len(trace.block_ids),
            "load_s": load_s,
            "direct_s": direct_s,
            "direct_samples": direct_all,
            "stack_distances_s": one_pass_s,
            "stack_distances_samples": one_pass_all,
            "curve_300_s": curve_s,
            "tiered_replay_s": tiered_s,
            "hit_rate_at_capacity": stats.hit_rate,
            "tiered_saved_fraction": replay.saved_fraction(),
            "agree": agree,
        }
        rows.append(
            [
                name,
                f"{trace.n_requests:,}",
                f"{len(trace.block_ids):,}",
                format_si(load_s, "s"),
                format_si(direct_s, "s"),
                format_si(one_pass_s, "s"),
                format_si(curve_s, "s"),
                format_si(tiered_s, "s"),
                "yes" if agree else "NO",
            ]
        )
        if name == "conversation":
            targets += [
                (
                    f"conversation trace ({trace.n_requests:,} requests): direct replay at one capacity, seconds",
                    direct_s,
                    "<=",
                    TARGET_SECONDS,
                    "s",
                ),
                (
                    "conversation trace: one-pass stack distances, seconds",
                    one_pass_s,
                    "<=",
                    TARGET_SECONDS,
                    "s",
                ),
            ]
    markdown = (
        f"Replays of the open Mooncake traces on the host CPU ({host}); best of {rounds} runs. The capacity is a "
        f"{POOL_BYTES / 1e12:g} TB pool of {MODEL} bf16 KV cache ({capacity / 1e6:.2f} M tokens); 'agree' checks that "
        "the direct LRU walk and the one-pass stack distances give every request the same hit tokens. The tiered "
        "prefill is `tiers.replay_prefill` through Lab 6's HBM / 2 TB DRAM / 16 TB pool hierarchy "
        "(Llama-3-70B, 8 x H800).\n\n" + markdown_table(header, rows, align="lrrrrrrrl")
    )
    return {
        "title": "Trace replay: Mooncake traces through helpers.cachesim",
        "metrics": metrics,
        "targets": targets,
        "markdown": markdown,
    }


if __name__ == "__main__":
    out = run_section()
    print(out["markdown"])
    for name, value, op, threshold, _ in out["targets"]:
        met = value <= threshold if op == "<=" else value >= threshold
        print(
            f"{name}: {value:.3f} (target {op} {threshold}) -> {'MET' if met else 'NOT MET'}"
        )
