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


def write_trace(path: Path, requests: list[tuple[int, list[int]]]) -> Path:
    """Write (input_length, hash_ids) requests as a Mooncake-format JSONL file."""
    with open(path, "w") as fh:
        for i, (length, ids) in enumerate(requests):
            fh.write(
                json.dumps(
                    {
                        "timestamp": 10 * i,
                        "input_length": length,
                        "output_length": 5,
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
