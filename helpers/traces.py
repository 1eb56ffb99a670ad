"""The Mooncake FAST'25 request traces: load them, check them, and what they cost to prefill.

The traces are the open Mooncake FAST'25 request traces (Qin et al., FAST'25):
JSON lines, one request each::

    {"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, ...]}

``timestamp`` is in milliseconds since the start of the trace (a
:class:`Trace` holds it in seconds, ``arrival_s``), lengths are in tokens, and
``hash_ids`` names the request's 512-token prefix blocks: two requests whose
``hash_ids`` start with the same ids share that prefix, so the KV cache of
those blocks can be reused instead of recomputed. Replaying a trace through a
cache is :mod:`helpers.cachesim`; routing it over nodes is :mod:`helpers.routing`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from . import _args, llm

TRACE_BLOCK_TOKENS = 512
"""Tokens per block of the Mooncake traces' ``hash_ids``."""

TRACE_URL = "https://raw.githubusercontent.com/kvcache-ai/Mooncake/3b5a594133958449a1feaf1c9e0fc1b553e34a28/FAST25-release/traces/{name}_trace.jsonl"
"""Where a reader with internet downloads the open traces (``name`` is ``conversation`` or ``synthetic``)."""

TRACE_SHA256: Mapping[str, str] = MappingProxyType(
    {
        "conversation": "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df",
        "synthetic": "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131",
    }
)
"""sha256 of each open trace (Mooncake repository, commit 3b5a594, FAST25-release/traces/)."""

ENV_VAR = "MOONCAKE_TRACES"
"""Environment variable naming a folder that holds ``<name>_trace.jsonl`` files."""

CACHE_DIR = Path("~/.cache/gpu-book/mooncake-traces")
"""Local download cache for the open traces (``~`` is expanded at use)."""

_DATA_DIR = Path(__file__).resolve().parent / "data"
_BUNDLED = MappingProxyType({"tiny": _DATA_DIR / "tiny_trace.jsonl"})

# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Trace:
    """A request trace in flat arrays (fast to replay, cheap to slice).

    Attributes
    ----------
    name : str
        ``"conversation"``, ``"synthetic"``, ``"tiny"`` or the file's stem.
    arrival_s : numpy.ndarray of float64, shape (n,)
        Arrival time of each request, seconds since the trace's start (the
        files' ``timestamp`` is in milliseconds; :func:`load_trace` converts).
    input_lengths, output_lengths : numpy.ndarray of int64, shape (n,)
        Prompt and generated tokens of each request.
    block_ids : numpy.ndarray of int64, shape (total blocks,)
        Every request's ``hash_ids``, concatenated in request order.
    offsets : numpy.ndarray of int64, shape (n + 1,)
        Request ``i``'s blocks are ``block_ids[offsets[i]:offsets[i + 1]]``.
    block_tokens : int
        Tokens per block of ``block_ids`` (512 for the Mooncake traces).
    """

    name: str
    arrival_s: np.ndarray
    input_lengths: np.ndarray
    output_lengths: np.ndarray
    block_ids: np.ndarray
    offsets: np.ndarray
    block_tokens: int = TRACE_BLOCK_TOKENS

    def __post_init__(self) -> None:
        _args.positive_int("block_tokens", self.block_tokens)
        n = len(self.input_lengths)
        if (
            len(self.arrival_s) != n
            or len(self.output_lengths) != n
            or len(self.offsets) != n + 1
        ):
            raise ValueError(
                "arrival_s, input_lengths, output_lengths and offsets must describe the same requests"
            )
        if (
            self.offsets[0] != 0
            or self.offsets[-1] != len(self.block_ids)
            or np.any(np.diff(self.offsets) < 0)
        ):
            raise ValueError("offsets must rise from 0 to len(block_ids)")
        arrival = np.array(self.arrival_s, dtype=np.float64)
        if n and (not np.all(np.isfinite(arrival)) or np.any(arrival < 0)):
            raise ValueError("arrival_s must be finite and >= 0 (seconds)")
        arrival.setflags(write=False)
        object.__setattr__(self, "arrival_s", arrival)
        for field in (
            "input_lengths",
            "output_lengths",
            "block_ids",
            "offsets",
        ):
            frozen = np.array(
                getattr(self, field), dtype=np.int64
            )  # a private copy, so the caller's array stays writable
            frozen.setflags(write=False)
            object.__setattr__(self, field, frozen)

    def __len__(self) -> int:
        return len(self.input_lengths)

    @property
    def n_requests(self) -> int:
        """Number of requests."""
        return len(self.input_lengths)

    def blocks(self, i: int) -> np.ndarray:
        """Block ids (``hash_ids``) of request ``i``."""
        return self.block_ids[self.offsets[i] : self.offsets[i + 1]]

    @property
    def duration_s(self) -> float:
        """Seconds from the trace's start to its last arrival (0 for an empty trace)."""
        return float(self.arrival_s.max()) if len(self.arrival_s) else 0.0

    @property
    def timestamps(self) -> np.ndarray:
        """Deprecated: arrival times in milliseconds; use :attr:`arrival_s` (seconds)."""
        warnings.warn(
            "Trace.timestamps (ms) is now Trace.arrival_s (s)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.arrival_s * 1e3

    @property
    def input_tokens(self) -> int:
        """Total prompt tokens of all requests."""
        return int(self.input_lengths.sum())

    def cache_ratio(self) -> float:
        """Fraction of block references whose id appeared earlier in the trace.

        The hit ratio of an infinite cache, counted per block; the trace
        statistic the Mooncake paper reports as "cache ratio".
        """
        _, first = np.unique(self.block_ids, return_index=True)
        return 1.0 - len(first) / len(self.block_ids) if len(self.block_ids) else 0.0


def _accepting_timestamps(init: Any) -> Any:
    """Wrap ``Trace.__init__`` so ``Trace(..., timestamps=ms)`` still works, with a warning."""

    def __init__(self: Trace, *args: Any, **kwargs: Any) -> None:
        if "timestamps" in kwargs:
            warnings.warn(
                "Trace(timestamps=ms) is now Trace(arrival_s=seconds)",
                DeprecationWarning,
                stacklevel=2,
            )
            ms = kwargs.pop("timestamps")
            kwargs["arrival_s"] = np.asarray(ms, dtype=float) / 1e3
        init(self, *args, **kwargs)

    return __init__


Trace.__init__ = _accepting_timestamps(Trace.__init__)  # type: ignore[method-assign]


def _parse(lines: Iterable[str], source: str, name: str) -> Trace:
    timestamps: list[int] = []  # ms, as in the files
    inputs: list[int] = []
    outputs: list[int] = []
    counts: list[int] = []
    ids: list[int] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}, line {number}"
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(request, dict):
            raise ValueError(
                f"{where}: expected a JSON object, got {type(request).__name__}"
            )
        try:
            ts, inp, out, hashes = (
                request[k]
                for k in ("timestamp", "input_length", "output_length", "hash_ids")
            )
        except KeyError as exc:
            raise ValueError(f"{where}: missing field {exc.args[0]!r}") from None
        for key, value in (
            ("timestamp", ts),
            ("input_length", inp),
            ("output_length", out),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"{where}: {key} must be a whole number >= 0, got {value!r}"
                )
        if inp == 0:
            raise ValueError(f"{where}: input_length must be >= 1, got 0")
        if not isinstance(hashes, list) or not hashes:
            raise ValueError(f"{where}: hash_ids must be a non-empty list of block ids")
        if any(isinstance(h, bool) or not isinstance(h, int) or h < 0 for h in hashes):
            raise ValueError(f"{where}: hash_ids must hold whole numbers >= 0")
        timestamps.append(ts)
        inputs.append(inp)
        outputs.append(out)
        counts.append(len(hashes))
        ids.extend(hashes)
    if not inputs:
        raise ValueError(f"{source}: the trace holds no requests")
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Trace(
        name=name,
        arrival_s=np.asarray(timestamps, dtype=np.float64) / 1e3,
        input_lengths=np.asarray(inputs, dtype=np.int64),
        output_lengths=np.asarray(outputs, dtype=np.int64),
        block_ids=np.asarray(ids, dtype=np.int64),
        offsets=offsets,
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _how_to_get(name: str, cache: Path) -> str:
    return (
        f"Download {TRACE_URL.format(name=name)} (sha256 {TRACE_SHA256[name]}) "
        f"into {cache} or into a folder named by the environment variable {ENV_VAR}."
    )


def _fetch(url: str) -> bytes:
    """The bytes at ``url``: urllib in Python, the browser's fetch under Pyodide (which has no sockets)."""
    if sys.platform == "emscripten":  # in-browser kernel (Pyodide)
        from pyodide.http import open_url  # type: ignore[import-not-found]

        return open_url(url).read().encode("utf-8")
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read()


def _save(data: bytes, target: Path) -> Path:
    """Write ``data`` to ``target`` atomically (a half-written file never has the final name)."""
    with tempfile.NamedTemporaryFile(
        dir=target.parent, delete=False, suffix=".part"
    ) as tmp:
        tmp.write(data)
    os.replace(tmp.name, target)
    return target


def _download(name: str, cache: Path) -> Path:
    url = TRACE_URL.format(name=name)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        data = _fetch(url)
    except (urllib.error.URLError, OSError, ImportError) as exc:
        raise FileNotFoundError(
            f"trace {name!r} is not on this machine and downloading it failed ({exc}). "
            + _how_to_get(name, cache)
        ) from exc
    got = hashlib.sha256(data).hexdigest()
    if got != TRACE_SHA256[name]:
        raise ValueError(
            f"downloaded trace {name!r} has sha256 {got}, expected {TRACE_SHA256[name]}; "
            + _how_to_get(name, cache)
        )
    return _save(data, cache / f"{name}_trace.jsonl")


def _cached_url(url: str) -> Path:
    """A local copy of the trace at ``url`` in ``CACHE_DIR`` (downloaded once; open traces checked by sha256)."""
    cache = CACHE_DIR.expanduser()
    target = cache / (url.rstrip("/").rsplit("/", 1)[-1] or "trace.jsonl")
    if target.is_file():
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
        data = _fetch(url)
    except (urllib.error.URLError, OSError, ImportError, ValueError) as exc:
        raise FileNotFoundError(
            f"path_or_name {url!r} could not be downloaded ({exc}); download it by hand and pass the file's path"
        ) from exc
    name = target.stem.removesuffix("_trace")
    if name in TRACE_SHA256 and hashlib.sha256(data).hexdigest() != TRACE_SHA256[name]:
        raise ValueError(
            f"path_or_name {url!r} does not hold the open {name!r} trace (sha256 differs)"
        )
    return _save(data, target)


def trace_path(name: str, *, download: bool = True) -> Path:
    """Where the open trace ``name`` is on this machine, downloading it if needed.

    Looks in the folder named by ``$MOONCAKE_TRACES``, then in
    ``CACHE_DIR``, then (if ``download``) fetches it from
    ``TRACE_URL`` into ``CACHE_DIR``. The file's sha256 is checked.

    Raises
    ------
    KeyError
        ``name`` is not ``"conversation"`` or ``"synthetic"``.
    FileNotFoundError
        The file is nowhere and cannot be downloaded (the message says how to get it).
    ValueError
        A file was found but its sha256 is wrong.
    """
    key = _args.name("name", name)
    if key not in TRACE_SHA256:
        raise KeyError(
            f"name {name!r} is not an open trace; choose one of {list(TRACE_SHA256)}"
        )
    cache = CACHE_DIR.expanduser()
    folders = (
        [Path(os.environ[ENV_VAR]).expanduser()] if os.environ.get(ENV_VAR) else []
    )
    for folder in folders + [cache]:
        candidate = folder / f"{key}_trace.jsonl"
        if candidate.is_file():
            got = _sha256(candidate)
            if got != TRACE_SHA256[key]:
                raise ValueError(
                    f"{candidate} has sha256 {got}, expected {TRACE_SHA256[key]}; delete it. "
                    + _how_to_get(key, cache)
                )
            return candidate
    if not download:
        raise FileNotFoundError(
            f"trace {key!r} is not on this machine. " + _how_to_get(key, cache)
        )
    return _download(key, cache)


def load_trace(path_or_name: str | os.PathLike[str]) -> Trace:
    """Read a Mooncake-format JSONL request trace.

    Parameters
    ----------
    path_or_name : str or path-like
        A file path; an ``http(s)://`` URL (downloaded once into ``CACHE_DIR``;
        an open trace's file name is checked against its sha256); or
        ``"conversation"`` / ``"synthetic"`` (the open
        Mooncake FAST'25 traces, found with :func:`trace_path`: in
        ``$MOONCAKE_TRACES``, then the local cache, then downloaded), or
        ``"tiny"`` (a 16-request trace shipped with the helpers, for tests).

    Returns
    -------
    Trace

    Raises
    ------
    FileNotFoundError
        The file does not exist (or an open trace cannot be downloaded).
    ValueError
        A line is malformed (the message gives the file and line number).
    """
    if isinstance(path_or_name, str) and path_or_name.strip().lower() in _BUNDLED:
        key = path_or_name.strip().lower()
        path = _BUNDLED[key]
    elif (
        isinstance(path_or_name, str)
        and path_or_name.strip().lower() in TRACE_SHA256
        and not Path(path_or_name).exists()
    ):
        key = path_or_name.strip().lower()
        path = trace_path(key)
    elif isinstance(path_or_name, str) and path_or_name.strip().lower().startswith(
        ("http://", "https://")
    ):
        path = _cached_url(path_or_name.strip())
        key = path.stem.removesuffix("_trace")
    elif isinstance(path_or_name, (str, os.PathLike)):
        path = Path(path_or_name).expanduser()
        if not path.is_file():
            raise FileNotFoundError(
                f"path_or_name {str(path_or_name)!r} is neither a file nor a known trace "
                f"(names: {list(TRACE_SHA256) + list(_BUNDLED)})"
            )
        key = path.stem.removesuffix("_trace")
    else:
        raise TypeError(
            f"path_or_name must be a path or a trace name, got {type(path_or_name).__name__}"
        )
    with open(path, encoding="utf-8") as fh:
        return _parse(fh, str(path), key)


def load_traces(
    names: Sequence[str] = ("conversation", "synthetic"), *, sample: str = "tiny"
) -> dict[str, Trace]:
    """Load the open traces ``names``, or the bundled sample if any of them is unavailable.

    ``{name: load_trace(name)}`` for each name. If one cannot be loaded (not
    on this machine and no network to download it, or a wrong checksum), the
    result is ``{sample: load_trace(sample)}`` instead, with a
    ``UserWarning`` naming the cause: every cell of a chapter or lab still
    runs, on a toy trace whose numbers the reader is told not to trust.
    """
    names = [
        _args.name("names", n) for n in ([names] if isinstance(names, str) else names)
    ]
    if not names:
        raise ValueError("names must name at least one trace")
    try:
        return {name: load_trace(name) for name in names}
    except (FileNotFoundError, OSError, ValueError) as exc:
        warnings.warn(
            f"trace {exc.__class__.__name__}: the open traces are unavailable ({exc}); "
            f"using the bundled {sample!r} sample instead, so every number describes a toy",
            stacklevel=2,
        )
        return {sample: load_trace(sample)}


def check_trace(trace: object) -> Trace:
    """``trace`` itself if it is a :class:`Trace`; else a ``TypeError`` naming ``trace``."""
    if not isinstance(trace, Trace):
        raise TypeError(
            f"trace must be a Trace (from load_trace), got {type(trace).__name__}"
        )
    return trace


def with_lengths(trace: Trace, *, input_len: int, output_len: int) -> Trace:
    """``trace`` with every request given ``input_len`` prompt and ``output_len`` output tokens.

    The arrivals and prefix blocks are kept: the same workload with the
    spread of its lengths taken out (what a model priced at mean lengths
    assumes).
    """
    trace = check_trace(trace)
    return Trace(
        f"{trace.name} at fixed lengths",
        trace.arrival_s,
        np.full_like(trace.input_lengths, _args.positive_int("input_len", input_len)),
        np.full_like(
            trace.output_lengths, _args.positive_int("output_len", output_len)
        ),
        trace.block_ids,
        trace.offsets,
        trace.block_tokens,
    )


def trace_prefill_flops(trace: Trace, model: str | llm.ModelConfig) -> float:
    """Prefill FLOP of every prompt of ``trace`` with no cache: the sum of :func:`helpers.llm.prefill_cost`.

    What a cache's hits save is measured against this total
    (:func:`helpers.llm.prefill_flops_saved` per request). Each distinct prompt length is
    costed once.
    """
    t = check_trace(trace)
    m = llm.get_model(model)
    lengths, counts = np.unique(t.input_lengths, return_counts=True)
    return float(
        sum(int(c) * llm.prefill_cost(m, int(n)).flops for n, c in zip(lengths, counts))
    )


__all__ = [
    "CACHE_DIR",
    "ENV_VAR",
    "TRACE_BLOCK_TOKENS",
    "TRACE_SHA256",
    "TRACE_URL",
    "Trace",
    "check_trace",
    "load_trace",
    "load_traces",
    "trace_path",
    "trace_prefill_flops",
]
