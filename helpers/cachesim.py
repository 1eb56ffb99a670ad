"""Replay request traces through a prefix KV cache: hit rates, LRU stack distances, tiers.

The traces are the open Mooncake FAST'25 request traces (Qin et al., FAST'25):
JSON lines, one request each::

    {"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, ...]}

``timestamp`` is in milliseconds since the start of the trace, lengths are in
tokens, and ``hash_ids`` names the request's 512-token prefix blocks: two
requests whose ``hash_ids`` start with the same ids share that prefix, so
the KV cache of those blocks can be reused instead of recomputed.

Cache model used throughout (a prefix cache, as in vLLM or Mooncake):

* the cache holds whole blocks, ``floor(capacity_tokens / block_tokens)`` of them;
* a request *hits* the longest prefix of its blocks that is in the cache when
  it arrives (prefix semantics: the first missing block ends the hit, because
  the KV of later blocks depends on every earlier token);
* after the request, all its blocks are in the cache: they are touched in
  reverse order, last block first, so the request's first block ends up the
  most recently used and, under LRU, a prefix's tail is evicted before its head;
* eviction is least-recently-used (LRU).

Because every block is inserted whatever the outcome, the cache *contents*
never depend on hits, and LRU has the inclusion property
(Mattson et al., 1970): the cache of ``c`` blocks holds exactly the
``c`` most recently touched distinct blocks. So one pass over the trace that
records stack distances gives the hit rate at every capacity
(:func:`stack_distances`, :func:`hit_rate_curve`, :func:`tier_hit_fractions`);
:func:`simulate_prefix_cache` is the direct, one-capacity simulation that
the tests check the curve against.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import tempfile
import urllib.error
import urllib.request
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from . import _validate, llm

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

TRACE_REQUESTS: Mapping[str, int] = MappingProxyType(
    {"conversation": 12_031, "synthetic": 3_993}
)
"""Number of requests in each open trace."""

ENV_VAR = "MOONCAKE_TRACES"
"""Environment variable naming a folder that holds ``<name>_trace.jsonl`` files."""

CACHE_DIR = Path("~/.cache/gpu-book/mooncake-traces")
"""Local download cache for the open traces (``~`` is expanded at use)."""

_DATA_DIR = Path(__file__).resolve().parent / "data"
_BUNDLED = MappingProxyType({"tiny": _DATA_DIR / "tiny_trace.jsonl"})

_POLICIES = ("lru",)

# ---------------------------------------------------------------------------
# What the Mooncake FAST'25 paper reports (Qin et al., FAST'25; the PDF in the
# Mooncake repository, FAST25-release/Mooncake-FAST25.pdf, commit 3b5a594).
# ---------------------------------------------------------------------------

PAPER_TABLE2: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "conversation": MappingProxyType(
            {
                "mean_input": 12_035,
                "mean_output": 343,
                "cache_ratio": 0.40,
                "requests": 12_031,
            }
        ),
        "toolagent": MappingProxyType(
            {
                "mean_input": 8_596,
                "mean_output": 182,
                "cache_ratio": 0.59,
                "requests": 23_608,
            }
        ),
        "synthetic": MappingProxyType(
            {
                "mean_input": 15_325,
                "mean_output": 149,
                "cache_ratio": 0.66,
                "requests": 3_993,
            }
        ),
    }
)
"""Mooncake FAST'25, Table 2 ("Workload Statistics"): mean input and output tokens, "Cache Ratio", requests.

The paper does not define "Cache Ratio" beyond "prefix caching ratio"
(§5.2.1); :func:`hit_rate_definitions` computes the candidate definitions.
"""

PAPER_FIG9_SHARE_AT_3M: Mapping[str, float] = MappingProxyType(
    {"conversation": 0.41, "toolagent": 0.75, "synthetic": 0.46, "all": 0.48}
)
"""Mooncake FAST'25, Fig. 9: hit rate of a 3 M-token LRU cache as a share of the workload's maximum.

Read from the figure's arrow labels ("41% max" points at the Conversation
curve, "75% max" at Tool&Agent, "46% max" at Synthetic, "48% max" at All).
§5.3.1 adds that "a cache capacity of 50M tokens nearly reaches the
theoretical maximum hit rate" (:data:`PAPER_FIG9_NEAR_MAX_TOKENS`).
"""

PAPER_FIG9_LOCAL_TOKENS = 3e6
"""Mooncake FAST'25, §5.3.1 and Fig. 9: tokens a node's ~1 TB of local DRAM holds ("about 3 million tokens")."""

PAPER_FIG9_NEAR_MAX_TOKENS = 50e6
"""Mooncake FAST'25, §5.3.1: "a cache capacity of 50M tokens nearly reaches the theoretical maximum hit rate"."""

PAPER_FIG10_GLOBAL_OVER_LOCAL: Mapping[str, float] = MappingProxyType(
    {"conversation": 2.22, "toolagent": 1.38, "synthetic": 2.36}
)
"""Mooncake FAST'25, Fig. 10 (left, bar labels): global-cache hit rate ÷ local-cache hit rate.

Setup (§5.3.2): 10 prefill nodes, 3 M tokens of cache each; local: a node
reads only its own cache and the scheduler sends a request to the node with
the higher prefix match; global: the ten caches are shared.
"""

PAPER_FIG10_PREFILL_TIME_RATIO: Mapping[str, float] = MappingProxyType(
    {"conversation": 0.76, "toolagent": 0.74, "synthetic": 0.52}
)
"""Mooncake FAST'25, Fig. 10 (right, bar labels): mean prefill GPU time, global ÷ local cache ("up to 48%" less)."""

PAPER_FIG10_NODES = 10
"""Mooncake FAST'25, §5.3.2: prefill nodes in the local-against-global experiment."""


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
    timestamps : numpy.ndarray of int64, shape (n,)
        Arrival time of each request, milliseconds since the trace's start.
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
    timestamps: np.ndarray
    input_lengths: np.ndarray
    output_lengths: np.ndarray
    block_ids: np.ndarray
    offsets: np.ndarray
    block_tokens: int = TRACE_BLOCK_TOKENS

    def __post_init__(self) -> None:
        _validate.positive_int("block_tokens", self.block_tokens)
        n = len(self.input_lengths)
        if (
            len(self.timestamps) != n
            or len(self.output_lengths) != n
            or len(self.offsets) != n + 1
        ):
            raise ValueError(
                "timestamps, input_lengths, output_lengths and offsets must describe the same requests"
            )
        if (
            self.offsets[0] != 0
            or self.offsets[-1] != len(self.block_ids)
            or np.any(np.diff(self.offsets) < 0)
        ):
            raise ValueError("offsets must rise from 0 to len(block_ids)")
        for field in (
            "timestamps",
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


def _parse(lines: Sequence[str] | object, source: str, name: str) -> Trace:
    timestamps: list[int] = []
    inputs: list[int] = []
    outputs: list[int] = []
    counts: list[int] = []
    ids: list[int] = []
    for number, line in enumerate(lines, start=1):  # type: ignore[call-overload]
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
        timestamps=np.asarray(timestamps, dtype=np.int64),
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


def trace_path(name: str, download: bool = True) -> Path:
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
    key = _validate.name("name", name)
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
        _validate.name("names", n)
        for n in ([names] if isinstance(names, str) else names)
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


# ---------------------------------------------------------------------------
# Blocks at a chosen granularity
# ---------------------------------------------------------------------------


def _check_trace(trace: object) -> Trace:
    if not isinstance(trace, Trace):
        raise TypeError(
            f"trace must be a Trace (from load_trace), got {type(trace).__name__}"
        )
    return trace


def _group(trace: Trace, block_tokens: object) -> tuple[int, np.ndarray, np.ndarray]:
    """Dense block ids and offsets at ``block_tokens`` per block (a multiple of the trace's)."""
    block_tokens = _validate.positive_int("block_tokens", block_tokens)
    if block_tokens % trace.block_tokens:
        raise ValueError(
            f"block_tokens must be a multiple of the trace's {trace.block_tokens}-token blocks, got {block_tokens}"
        )
    k = block_tokens // trace.block_tokens
    if k == 1:
        _, dense = np.unique(trace.block_ids, return_inverse=True)
        return block_tokens, dense.astype(np.int64).ravel(), np.asarray(trace.offsets)
    # A coarse block is k consecutive trace blocks; it is the same block only if all k ids match.
    index: dict[tuple[int, ...], int] = {}
    ids: list[int] = []
    counts = np.empty(trace.n_requests, dtype=np.int64)
    raw = trace.block_ids.tolist()
    off = trace.offsets.tolist()
    for r in range(trace.n_requests):
        start, stop = off[r], off[r + 1]
        for s in range(start, stop, k):
            ids.append(index.setdefault(tuple(raw[s : min(s + k, stop)]), len(index)))
        counts[r] = -(-(stop - start) // k)
    offsets = np.zeros(trace.n_requests + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return block_tokens, np.asarray(ids, dtype=np.int64), offsets


def _block_weights(
    trace: Trace, offsets: np.ndarray, block_tokens: int
) -> tuple[np.ndarray, np.ndarray]:
    """Request index and prompt tokens of every block (the last block of a prompt may be partial)."""
    counts = np.diff(offsets)
    request = np.repeat(np.arange(trace.n_requests), counts)
    position = np.arange(len(request)) - offsets[request]
    length = trace.input_lengths[request]
    weights = np.minimum((position + 1) * block_tokens, length) - np.minimum(
        position * block_tokens, length
    )
    return request, weights.astype(np.int64)


def _capacity_blocks(name: str, capacity_tokens: object, block_tokens: int) -> float:
    """``floor(capacity / block_tokens)`` blocks; ``math.inf`` means unlimited."""
    if isinstance(capacity_tokens, (int, float, np.number)) and not isinstance(
        capacity_tokens, bool
    ):
        if math.isinf(float(capacity_tokens)) and float(capacity_tokens) > 0:
            return math.inf
    return float(math.floor(_validate.positive(name, capacity_tokens) / block_tokens))


# ---------------------------------------------------------------------------
# Direct simulation
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CacheStats:
    """Outcome of replaying a trace through a prefix cache of one capacity.

    Attributes
    ----------
    capacity_tokens : float
        Cache size in tokens (``math.inf`` for unlimited).
    block_tokens : int
        Tokens per cache block.
    policy : str
    hit_tokens : numpy.ndarray of int64, shape (n_requests,)
        Prompt tokens of each request served from the cache (its hit prefix).
    input_tokens : int
        Prompt tokens of all requests.
    hit_blocks, total_blocks : int
        Blocks found in the cache (within hit prefixes) and blocks referenced.
    """

    capacity_tokens: float
    block_tokens: int
    policy: str
    hit_tokens: np.ndarray
    input_tokens: int
    hit_blocks: int
    total_blocks: int

    @property
    def hit_rate(self) -> float:
        """Token-weighted hit rate: hit prompt tokens / prompt tokens."""
        return float(self.hit_tokens.sum()) / self.input_tokens

    @property
    def block_hit_rate(self) -> float:
        """Hit blocks / referenced blocks."""
        return self.hit_blocks / self.total_blocks


def simulate_prefix_cache(
    trace: Trace,
    capacity_tokens: float,
    *,
    block_tokens: int = TRACE_BLOCK_TOKENS,
    policy: str = "lru",
) -> CacheStats:
    """Replay ``trace`` through a prefix cache of ``capacity_tokens`` tokens, directly.

    Each request hits the longest prefix of its blocks present when it
    arrives; then all its blocks are touched, last block first (see the
    module docstring), and least-recently-used blocks are evicted down to
    ``floor(capacity_tokens / block_tokens)`` blocks.

    Parameters
    ----------
    trace : Trace
    capacity_tokens : float
        Cache size in tokens, > 0 (``math.inf`` for unlimited).
    block_tokens : int
        Tokens per cache block: a multiple of the trace's 512-token blocks
        (a larger block is ``k`` consecutive trace blocks, shared only when
        all ``k`` match).
    policy : {"lru"}
        Eviction policy.

    Returns
    -------
    CacheStats
    """
    trace = _check_trace(trace)
    key = _validate.name("policy", policy)
    if key not in _POLICIES:
        raise ValueError(
            f"policy {policy!r} is not supported; choose one of {list(_POLICIES)}"
        )
    block_tokens, ids, offsets = _group(trace, block_tokens)
    capacity = _capacity_blocks("capacity_tokens", capacity_tokens, block_tokens)
    lengths = trace.input_lengths.tolist()
    ids_list = ids.tolist()
    off = offsets.tolist()
    cache: OrderedDict[int, None] = OrderedDict()
    move = cache.move_to_end
    hit_tokens = np.empty(trace.n_requests, dtype=np.int64)
    hit_blocks = 0
    for r in range(trace.n_requests):
        blocks = ids_list[off[r] : off[r + 1]]
        k = 0
        for b in blocks:
            if b not in cache:
                break
            k += 1
        hit_blocks += k
        hit_tokens[r] = min(k * block_tokens, lengths[r])
        for b in reversed(blocks):
            if b in cache:
                move(b)
            else:
                cache[b] = None
        while len(cache) > capacity:
            cache.popitem(last=False)
    return CacheStats(
        capacity_tokens=float(capacity_tokens),
        block_tokens=block_tokens,
        policy=key,
        hit_tokens=hit_tokens,
        input_tokens=trace.input_tokens,
        hit_blocks=hit_blocks,
        total_blocks=len(ids_list),
    )


# ---------------------------------------------------------------------------
# One pass: LRU stack distances
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StackDistances:
    """Per-block prefix stack distances of a trace: every capacity's hits in one array.

    Attributes
    ----------
    trace_name : str
    block_tokens : int
    distances : numpy.ndarray of float64, shape (total blocks,)
        For block ``j`` of a request, ``max(d_0, ..., d_j)`` where ``d_i`` is
        the LRU stack distance of the request's block ``i`` when the request
        arrives (distinct blocks touched since it was last touched; ``inf``
        for a first reference). The block hits in a cache of ``c`` blocks iff
        ``distances[j] < c``.
    weights : numpy.ndarray of int64, shape (total blocks,)
        Prompt tokens of each block (the last block of a prompt may be partial).
    request : numpy.ndarray of int64, shape (total blocks,)
        Request index of each block.
    n_requests, input_tokens : int
    distinct_blocks : int
        Distinct blocks in the trace: a cache this large never evicts.
    """

    trace_name: str
    block_tokens: int
    distances: np.ndarray
    weights: np.ndarray
    request: np.ndarray
    n_requests: int
    input_tokens: int
    distinct_blocks: int

    def __post_init__(self) -> None:
        for field in ("distances", "weights", "request"):
            getattr(self, field).setflags(write=False)
        order = np.argsort(self.distances, kind="stable")
        object.__setattr__(self, "_sorted", self.distances[order])
        object.__setattr__(
            self, "_cum_tokens", np.concatenate([[0], np.cumsum(self.weights[order])])
        )

    def hit_tokens(self, capacities_tokens: object) -> np.ndarray:
        """Prompt tokens served from a cache of each capacity (tokens; ``inf`` allowed)."""
        blocks = _capacities_blocks(capacities_tokens, self.block_tokens)
        return self._cum_tokens[
            np.searchsorted(self._sorted, blocks, side="left")
        ].astype(np.int64)

    def request_hit_tokens(self, capacity_tokens: float) -> np.ndarray:
        """Prompt tokens of each request served from a cache of ``capacity_tokens``."""
        capacity = _capacity_blocks(
            "capacity_tokens", capacity_tokens, self.block_tokens
        )
        hit = self.distances < capacity
        return np.bincount(
            self.request, weights=self.weights * hit, minlength=self.n_requests
        ).astype(np.int64)


def _capacities_blocks(capacities_tokens: object, block_tokens: int) -> np.ndarray:
    try:
        caps = np.asarray(capacities_tokens, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"capacities_tokens must be numbers, got {capacities_tokens!r}"
        ) from exc
    if caps.size == 0:
        raise ValueError("capacities_tokens must not be empty")
    if np.any(np.isnan(caps)) or np.any(caps <= 0):
        raise ValueError(
            f"capacities_tokens must be > 0 everywhere (inf allowed), got min {np.nanmin(caps) if caps.size else caps}"
        )
    return np.floor(caps / block_tokens)


def stack_distances(
    trace: Trace, *, block_tokens: int = TRACE_BLOCK_TOKENS
) -> StackDistances:
    """LRU stack distances of every block reference, in one pass (Mattson et al. 1970).

    Why one pass gives the prefix-semantics hit of every capacity (LRU):

    1. The cache's contents do not depend on hits: every request's blocks are
       touched whether they hit or not. With LRU, the cache of ``c`` blocks
       therefore holds exactly the ``c`` most recently touched distinct blocks
       (the inclusion property of Mattson et al., 1970).
    2. So when a request arrives, its block ``i`` is in a cache of ``c``
       blocks iff its stack distance ``d_i`` (distinct blocks touched since
       ``i`` was last touched) is ``< c``; ``d_i = inf`` if never touched.
       All ``d_i`` are taken at the request's arrival, before it touches
       anything.
    3. Prefix semantics: the request hits blocks ``0..k-1`` where ``k`` is the
       first ``i`` with ``d_i >= c``. Block ``j`` is among the hits iff
       ``d_0, ..., d_j`` are all ``< c``, i.e. iff ``m_j = max(d_0..d_j) < c``.
       ``m_j`` does not depend on ``c``, so the hit tokens at capacity ``c``
       are the total weight of blocks with ``m_j < c``: one sort of ``m``
       gives the whole curve.

    The distances are computed offline with a merge-sort tree: the stack
    distance of a reference at arrival time ``q`` whose block was last touched
    at position ``p`` is the number of touch positions ``i`` in ``(p, q)``
    whose block is not touched again before ``q``.

    Parameters
    ----------
    trace : Trace
    block_tokens : int
        Tokens per cache block, a multiple of the trace's block size.

    Returns
    -------
    StackDistances
    """
    trace = _check_trace(trace)
    block_tokens, ids, offsets = _group(trace, block_tokens)
    n_req = trace.n_requests
    counts = np.diff(offsets)
    request, weights = _block_weights(trace, offsets, block_tokens)
    n = len(ids)
    # Touch order: each request's blocks reversed (last block first).
    position_in_request = np.arange(n) - offsets[request]
    # touch index of reference j
    touch_of_ref = offsets[request] + (counts[request] - 1 - position_in_request)
    touched = np.empty(n, dtype=np.int64)
    touched[touch_of_ref] = ids
    touch_request = request  # requests occupy the same index ranges in both orders
    arrival = offsets[touch_request]  # q: first touch index of the request
    # previous and next touch of the same block
    order = np.lexsort((np.arange(n), touched))
    same = touched[order][1:] == touched[order][:-1]
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, n, dtype=np.int64)
    prev[order[1:][same]] = order[:-1][same]
    nxt[order[:-1][same]] = order[1:][same]
    # For a block referenced twice in one request, use the touch before the request.
    depth = np.full(n, np.inf)
    first = prev < arrival
    p = prev[first]
    q = arrival[first]
    known = p >= 0
    depth_first = np.full(len(p), np.inf)
    depth_first[known] = _count_distinct(nxt, prev, p[known], q[known])
    depth[first] = depth_first
    for i in np.flatnonzero(
        ~first
    ):  # repeated within its own request: same block, same depth
        depth[i] = depth[prev[i]]
    d_ref = depth[touch_of_ref]  # back to prompt order
    # prefix maximum within each request: shift request r by r * big, accumulate, shift back
    finite_max = float(np.max(d_ref[np.isfinite(d_ref)], initial=0.0))
    big = finite_max + 2.0
    code = np.where(np.isfinite(d_ref), d_ref, finite_max + 1.0) + request * big
    prefix = np.maximum.accumulate(code) - request * big
    prefix[prefix > finite_max] = np.inf
    return StackDistances(
        trace_name=trace.name,
        block_tokens=block_tokens,
        distances=prefix,
        weights=weights,
        request=request,
        n_requests=n_req,
        input_tokens=trace.input_tokens,
        distinct_blocks=int(ids.max()) + 1 if n else 0,
    )


def _count_distinct(
    nxt: np.ndarray, prev: np.ndarray, p: np.ndarray, q: np.ndarray
) -> np.ndarray:
    """For each query, ``#{i : p < i < q and nxt[i] >= q}`` (vectorised merge-sort tree).

    That is the number of distinct blocks touched strictly between positions
    ``p`` and ``q``: each is counted once, at its last touch before ``q``.
    Computed as ``F(q) - F(p + 1)`` with ``F(x) = #{i < x : nxt[i] >= q}``.
    ``F(q)`` is the number of distinct blocks touched before ``q`` (a running
    count of first touches); ``F(p + 1)`` splits ``[0, p + 1)`` into one
    sorted segment per set bit of ``p + 1``, counted with a binary search.
    """
    n = len(nxt)
    if n == 0 or len(p) == 0:
        return np.zeros(len(p))
    distinct_before = np.concatenate([[0], np.cumsum(prev < 0)])
    counts = distinct_before[q].astype(np.int64)
    x = p + 1
    span = n + 2
    level = 0
    while (1 << level) <= n:
        size = 1 << level
        keys = np.sort((np.arange(n) >> level) * span + nxt)
        has = np.flatnonzero(x & size)
        if len(has):
            seg = (
                x[has] >> (level + 1)
            ) * 2  # the segment [x - x % 2size, + size) at this level
            needles = seg * span + q[has]
            order = np.argsort(needles, kind="stable")  # sorted needles search faster
            below = np.empty(len(has), dtype=np.int64)
            below[order] = np.searchsorted(keys, needles[order], side="left")
            counts[has] -= np.minimum((seg + 1) * size, n) - below
        level += 1
    return counts.astype(float)


def _as_distances(trace_or_distances: object, block_tokens: int) -> StackDistances:
    if isinstance(trace_or_distances, StackDistances):
        if block_tokens != trace_or_distances.block_tokens:
            raise ValueError(
                f"block_tokens ({block_tokens}) differs from the precomputed distances' "
                f"({trace_or_distances.block_tokens})"
            )
        return trace_or_distances
    return stack_distances(_check_trace(trace_or_distances), block_tokens=block_tokens)


def hit_rate_curve(
    trace: Trace | StackDistances,
    capacities_tokens: Sequence[float] | np.ndarray,
    *,
    block_tokens: int = TRACE_BLOCK_TOKENS,
) -> np.ndarray:
    """Token-weighted prefix-cache hit rate of an LRU cache at each capacity, from one pass.

    Equal, capacity by capacity, to ``simulate_prefix_cache(trace, c, block_tokens=b).hit_rate``
    (see :func:`stack_distances` for the proof; the tests check it).

    Parameters
    ----------
    trace : Trace or StackDistances
        A trace, or its precomputed :func:`stack_distances` (fast for calculators).
    capacities_tokens : sequence of float
        Cache sizes in tokens, each > 0 (``inf`` allowed).
    block_tokens : int

    Returns
    -------
    numpy.ndarray of float, same shape as ``capacities_tokens``
        Hit prompt tokens / prompt tokens.
    """
    sd = _as_distances(trace, block_tokens)
    return sd.hit_tokens(capacities_tokens) / sd.input_tokens


def capacity_for_fraction(
    trace: Trace | StackDistances,
    fraction: float,
    *,
    block_tokens: int = TRACE_BLOCK_TOKENS,
) -> float:
    """Smallest LRU capacity, in tokens, whose hit rate reaches ``fraction`` of the trace's ceiling.

    The ceiling is the hit rate of an infinite cache (``hit_rate_curve(trace,
    [inf])``). The curve is a step function of the capacity in whole blocks,
    so the answer is exact: a whole number of blocks, ``(m + 1) *
    block_tokens`` where ``m`` is the largest stack distance among the
    blocks needed. ``fraction = 1`` gives the capacity from which the cache
    never misses a block it could hit; 0 if the trace has no hits at all.

    Parameters
    ----------
    trace : Trace or StackDistances
    fraction : float
        Share of the ceiling to reach, in (0, 1].
    block_tokens : int
    """
    fraction = _validate.fraction("fraction", fraction)
    sd = _as_distances(trace, block_tokens)
    ceiling = float(sd.hit_tokens([math.inf])[0])
    if ceiling == 0:
        return 0.0
    needed = int(np.searchsorted(sd._cum_tokens, fraction * ceiling, side="left"))
    largest = sd._sorted[needed - 1]
    return float((math.floor(largest) + 1) * sd.block_tokens)


def tier_hit_fractions(
    trace: Trace | StackDistances,
    capacities_tokens: Sequence[float] | np.ndarray,
    *,
    block_tokens: int = TRACE_BLOCK_TOKENS,
) -> np.ndarray:
    """Fractions of prompt tokens served by each tier of an inclusive LRU hierarchy, and the miss.

    Tier ``i`` (e.g. HBM, DRAM, remote) holds the ``C_i`` most recently used
    blocks, ``C_0 < C_1 < ...`` (inclusive: each tier contains the faster
    ones). A prompt token is served by tier ``i`` when its prefix is complete
    within tiers ``0..i`` but not within tiers ``0..i-1``; so the first ``i + 1``
    fractions add up to ``hit_rate_curve(trace, [C_i])``.

    Parameters
    ----------
    trace : Trace or StackDistances
    capacities_tokens : sequence of float
        Strictly increasing capacities in tokens, one per tier (``inf`` allowed last).
    block_tokens : int

    Returns
    -------
    numpy.ndarray of float, shape (len(capacities_tokens) + 1,)
        Served fraction per tier, then the miss fraction; the sum is 1.
    """
    caps = (
        np.asarray(capacities_tokens, dtype=float)
        if not isinstance(capacities_tokens, str)
        else None
    )
    if caps is None or caps.ndim != 1:
        raise TypeError(
            "capacities_tokens must be a one-dimensional sequence of numbers"
        )
    if caps.size > 1 and np.any(np.diff(caps) <= 0):
        raise ValueError(
            f"capacities_tokens must be strictly increasing, got {caps.tolist()}"
        )
    sd = _as_distances(trace, block_tokens)
    cumulative = sd.hit_tokens(caps) / sd.input_tokens
    served = np.diff(np.concatenate([[0.0], cumulative]))
    return np.concatenate([served, [1.0 - cumulative[-1]]])


# ---------------------------------------------------------------------------
# Hit-rate definitions, and one cache per node against one pooled cache
# ---------------------------------------------------------------------------


def hit_rate_definitions(trace: Trace | StackDistances) -> dict[str, float]:
    """The hit rate of an infinite prefix cache, by four definitions a paper might use.

    All four count a block as hit when its whole prefix was seen before
    (prefix semantics, unlimited capacity); they differ in what is averaged:

    ``"blocks"``
        hit block references ÷ block references (every block weighs 1);
    ``"full blocks"``
        the same, counting only full blocks (a prompt's partial last block is left out);
    ``"tokens"``
        hit prompt tokens ÷ prompt tokens, aggregated over the trace: the
        book's hit rate, :func:`hit_rate_curve` at ``inf``;
    ``"mean per request"``
        the mean over requests of each request's hit tokens ÷ its prompt tokens.

    Parameters
    ----------
    trace : Trace or StackDistances
        At the trace's own block size.

    Returns
    -------
    dict of str to float
        Each definition's value, a fraction in [0, 1].
    """
    sd = _as_distances(trace, TRACE_BLOCK_TOKENS)
    hit = np.isfinite(sd.distances)
    full = sd.weights == sd.block_tokens
    per_request = sd.request_hit_tokens(math.inf)
    lengths = np.bincount(sd.request, weights=sd.weights, minlength=sd.n_requests)
    return {
        "blocks": float(hit.mean()),
        "full blocks": float(hit[full].mean()),
        "tokens": float(sd.hit_tokens([math.inf])[0] / sd.input_tokens),
        "mean per request": float(np.mean(per_request / lengths)),
    }


@dataclass(frozen=True, eq=False)
class LocalGlobal:
    """Hit rates of ``n_nodes`` separate caches against one cache pooled across them.

    Attributes
    ----------
    trace : Trace
        The replayed trace.
    n_nodes : int
    capacity_tokens : float
        Cache per node, tokens.
    local_hit_rate : float
        Token-weighted hit rate when each node reads only its own cache.
    global_hit_rate : float
        Token-weighted hit rate of one LRU cache of ``n_nodes * capacity_tokens``.
    load_imbalance : float
        Prompt tokens sent to the busiest node ÷ the mean per node (1 = even),
        under the local routing.
    local_hit_tokens, global_hit_tokens : numpy.ndarray of int64, shape (n_requests,)
        Each request's prompt tokens served from the cache, local and pooled.
    """

    trace: Trace
    n_nodes: int
    capacity_tokens: float
    local_hit_rate: float
    global_hit_rate: float
    load_imbalance: float
    local_hit_tokens: np.ndarray
    global_hit_tokens: np.ndarray

    def prefill_flops_ratio(self, model: str | llm.ModelConfig) -> float:
        """Prefill FLOP left to compute with the pooled cache ÷ with the local caches (< 1: pooling saves).

        Both are :func:`trace_prefill_flops` less :func:`prefill_flops_saved`
        by each request's hit; at a fixed FLOP/s the same ratio holds for prefill GPU time.
        """
        total = trace_prefill_flops(self.trace, model)
        left_global = total - prefill_flops_saved(model, self.global_hit_tokens).sum()
        left_local = total - prefill_flops_saved(model, self.local_hit_tokens).sum()
        return float(left_global / left_local)

    @property
    def ratio(self) -> float:
        """``global_hit_rate / local_hit_rate`` (``inf`` if the local caches never hit)."""
        if self.local_hit_rate == 0:
            return math.inf
        return self.global_hit_rate / self.local_hit_rate


def local_vs_global(
    trace: Trace,
    n_nodes: int,
    capacity_tokens: float,
    *,
    prefill_tokens_per_s: float,
    routing: str = "cache-aware",
    block_tokens: int = TRACE_BLOCK_TOKENS,
    distances: StackDistances | None = None,
) -> LocalGlobal:
    """Replay ``trace`` over ``n_nodes`` nodes, each with a private LRU prefix cache, and pooled.

    Local: each request goes to the node with the earliest estimated first
    token, ``queue + (prompt - cached prefix) / prefill_tokens_per_s``, the
    rule of Mooncake's scheduler (FAST'25, Algorithm 1, without transfers):
    a node that holds a longer prefix wins unless its queue outweighs the
    prefill it saves; ties go to the lowest-numbered node. Each node
    prefills one request at a time at ``prefill_tokens_per_s``, starting
    at the request's arrival (``trace.timestamps``) or when its previous one
    ends. With ``routing="round-robin"`` request ``i`` goes to node
    ``i % n_nodes`` instead, blind to caches and load. The node serves the hit from its own cache and then holds all the
    request's blocks (touched last block first, LRU, as in
    :func:`simulate_prefix_cache`). Global: one LRU cache of
    ``n_nodes * capacity_tokens`` that every node reads
    (:func:`hit_rate_curve`), transfers not modelled.

    Parameters
    ----------
    trace : Trace
    n_nodes : int
        Nodes, >= 1.
    capacity_tokens : float
        Cache per node, tokens, > 0.
    prefill_tokens_per_s : float
        Prompt tokens one node prefills per second, > 0: sets how much load
        the routing weighs against cache affinity.
    routing : {"cache-aware", "round-robin"}
    block_tokens : int
        Tokens per block, a multiple of the trace's.
    distances : StackDistances, optional
        ``stack_distances(trace, block_tokens=block_tokens)`` if already
        computed (saves recomputing it for the pooled cache).

    Returns
    -------
    LocalGlobal
    """
    trace = _check_trace(trace)
    n_nodes = _validate.positive_int("n_nodes", n_nodes)
    rate = _validate.positive("prefill_tokens_per_s", prefill_tokens_per_s)
    routing = _validate.name("routing", routing)
    if routing not in ("cache-aware", "round-robin"):
        raise ValueError(
            f"routing {routing!r} is not supported; choose 'cache-aware' or 'round-robin'"
        )
    block_tokens, ids, offsets = _group(trace, block_tokens)
    capacity = _capacity_blocks("capacity_tokens", capacity_tokens, block_tokens)
    lengths = trace.input_lengths.tolist()
    arrivals = (trace.timestamps / 1e3).tolist()  # s
    ids_list = ids.tolist()
    off = offsets.tolist()
    caches: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(n_nodes)]
    free_at = [0.0] * n_nodes  # s, when each node finishes its queue
    load = [0] * n_nodes
    hits = np.zeros(trace.n_requests, dtype=np.int64)
    for r in range(trace.n_requests):
        blocks = ids_list[off[r] : off[r + 1]]
        now, length = arrivals[r], lengths[r]
        best, best_ttft, best_hit = 0, math.inf, 0
        nodes = range(n_nodes) if routing == "cache-aware" else (r % n_nodes,)
        for node in nodes:
            cache, k = caches[node], 0
            for b in blocks:
                if b not in cache:
                    break
                k += 1
            hit = min(k * block_tokens, length)
            ttft = max(free_at[node] - now, 0.0) + (length - hit) / rate
            if ttft < best_ttft:
                best, best_ttft, best_hit = node, ttft, hit
        hits[r] = best_hit
        load[best] += length
        free_at[best] = now + best_ttft
        cache = caches[best]
        for b in reversed(blocks):
            if b in cache:
                cache.move_to_end(b)
            else:
                cache[b] = None
        while len(cache) > capacity:
            cache.popitem(last=False)
    pooled = n_nodes * float(capacity_tokens)
    if distances is None:
        distances = stack_distances(trace, block_tokens=block_tokens)
    elif (
        not isinstance(distances, StackDistances)
        or distances.block_tokens != block_tokens
        or distances.n_requests != trace.n_requests
        or distances.input_tokens != trace.input_tokens
    ):
        raise ValueError(
            "distances must be stack_distances(trace, block_tokens=block_tokens) of this trace"
        )
    global_hits = distances.request_hit_tokens(pooled)
    return LocalGlobal(
        trace=trace,
        n_nodes=n_nodes,
        capacity_tokens=float(capacity_tokens),
        local_hit_rate=float(hits.sum()) / trace.input_tokens,
        global_hit_rate=float(global_hits.sum()) / trace.input_tokens,
        load_imbalance=max(load) / (sum(load) / n_nodes),
        local_hit_tokens=hits,
        global_hit_tokens=global_hits,
    )


# ---------------------------------------------------------------------------
# Compute a hit saves
# ---------------------------------------------------------------------------


def trace_prefill_flops(trace: Trace, model: str | llm.ModelConfig) -> float:
    """Prefill FLOP of every prompt of ``trace`` with no cache: the sum of :func:`helpers.llm.prefill_cost`.

    What a cache's hits save is measured against this total
    (:func:`prefill_flops_saved` per request). Each distinct prompt length is
    costed once.
    """
    t = _check_trace(trace)
    m = llm.get_model(model)
    lengths, counts = np.unique(t.input_lengths, return_counts=True)
    return float(
        sum(int(c) * llm.prefill_cost(m, int(n)).flops for n, c in zip(lengths, counts))
    )


def prefill_flops_saved(model: str | llm.ModelConfig, hit_tokens: object) -> np.ndarray:
    """Prefill FLOP not spent because the first ``hit_tokens`` of a prompt came from the cache.

    With the counting rules of :mod:`helpers.llm`, a prompt of ``L`` tokens
    costs ``L`` tokens of weight matmuls plus causal attention over
    ``L (L + 1) / 2`` query-key pairs. Given a cached prefix of ``h`` tokens,
    only the last ``L - h`` tokens run: their matmuls, and their attention
    over all ``L`` keys (``L (L + 1) / 2 - h (h + 1) / 2`` pairs). The
    difference does not depend on ``L``:

    ``saved(h) = h * linear_flops_per_token + attention_flops(h (h + 1) / 2)``,

    which is ``llm.prefill_cost(model, h).flops`` without the lm_head of the
    last token (still computed for the suffix).

    Parameters
    ----------
    model : str or ModelConfig
    hit_tokens : int or array of int
        Cached prefix length of each request, tokens (>= 0).

    Returns
    -------
    numpy.ndarray of float
        FLOP saved per request (same shape as ``hit_tokens``).
    """
    m = llm.get_model(model)
    try:
        h = np.asarray(hit_tokens, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"hit_tokens must be numbers, got {hit_tokens!r}") from exc
    if np.any(~np.isfinite(h)) or np.any(h < 0):
        raise ValueError("hit_tokens must be finite and >= 0")
    return h * llm.linear_flops_per_token(m) + llm.attention_flops(m, h * (h + 1) / 2)


__all__ = [
    "PAPER_FIG10_GLOBAL_OVER_LOCAL",
    "PAPER_FIG10_NODES",
    "PAPER_FIG10_PREFILL_TIME_RATIO",
    "PAPER_FIG9_LOCAL_TOKENS",
    "PAPER_FIG9_NEAR_MAX_TOKENS",
    "PAPER_FIG9_SHARE_AT_3M",
    "PAPER_TABLE2",
    "CacheStats",
    "LocalGlobal",
    "StackDistances",
    "Trace",
    "capacity_for_fraction",
    "hit_rate_curve",
    "hit_rate_definitions",
    "load_trace",
    "load_traces",
    "local_vs_global",
    "prefill_flops_saved",
    "simulate_prefix_cache",
    "stack_distances",
    "tier_hit_fractions",
    "trace_path",
    "trace_prefill_flops",
]
