"""Small request traces for the tests of :mod:`helpers.traces`, :mod:`helpers.cachesim` and :mod:`helpers.routing`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from helpers.traces import Trace

REAL = Path(os.environ.get("MOONCAKE_TRACES", "/nonexistent"))
HAVE_REAL = all(
    (REAL / f"{n}_trace.jsonl").is_file() for n in ("conversation", "synthetic")
)


def write_trace(
    path: Path,
    requests: list[tuple[int, list[int]]],
    *,
    spacing_ms: int = 10,
    output_length: int = 5,
) -> Path:
    """Write (input_length, hash_ids) requests as a Mooncake-format JSONL file, ``spacing_ms`` apart."""
    with open(path, "w") as fh:
        for i, (length, ids) in enumerate(requests):
            fh.write(
                json.dumps(
                    {
                        "timestamp": spacing_ms * i,
                        "input_length": length,
                        "output_length": output_length,
                        "hash_ids": ids,
                    }
                )
                + "\n"
            )
    return path


def make_trace(
    requests: list[list[int]], lengths: list[int] | None = None, name: str = "mem"
) -> Trace:
    """Build a Trace in memory; by default every block is a full 512 tokens."""
    lengths = lengths if lengths is not None else [512 * len(ids) for ids in requests]
    offsets = np.concatenate([[0], np.cumsum([len(ids) for ids in requests])]).astype(
        np.int64
    )
    n = len(requests)
    return Trace(
        name=name,
        arrival_s=np.arange(n, dtype=float),
        input_lengths=np.asarray(lengths, dtype=np.int64),
        output_lengths=np.ones(n, dtype=np.int64),
        block_ids=np.asarray([b for ids in requests for b in ids], dtype=np.int64),
        offsets=offsets,
    )


def abc_trace_file(path: Path) -> Path:
    """Chapter ``disaggregated_memory``'s Question 3: A = [a, b, c], B = [a, d], C = [a, b, c, e], full 512-token blocks, 1 ms apart."""
    return write_trace(
        path,
        [(1536, [0, 1, 2]), (1024, [0, 3]), (2048, [0, 1, 2, 4])],
        spacing_ms=1,
        output_length=1,
    )
