"""A tiered KV cache (HBM -> DRAM -> remote pool / SSD) and prefetching.

Each tier is a capacity, a bandwidth and a latency (:class:`Tier`). A request
whose prefix is cached finds its blocks in one tier or another; for each
chunk the rule of :mod:`helpers.kvcache` decides, with the same inequality:
**fetch the chunk from its tier iff its transfer time is less than the time
to recompute it** (:func:`tiered_prefill`). Prefetching overlaps the fetches
with computation (:func:`helpers.kvcache.pipelined_time`).

Conventions: SI units; a tier's bandwidth is what one request's fetch gets;
recompute and prefill times are roofline times (:func:`helpers.inference.prefill_time`
with ``link=None``: no tensor-parallel communication, as in :func:`helpers.kvcache.recompute_time`);
a fetch from a tier is :func:`helpers.kvcache.transfer_time` with the tier as the link.

References
----------
Qin et al. (2025), "Mooncake: Trading More Storage for Less Computation",
FAST'25 (tiered KV cache pool, layer-wise prefill overlapping KV loads).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from . import _args, cachesim
from ._moved import forwarder
from .hardware import Accelerator, Link, get_accelerator, get_link
from .inference import prefill_time, suffix_prefill_time
from .kvcache import Verdict, pipelined_time, transfer_time
from .llm import ModelConfig, get_model, kv_cache_bytes_per_token


@dataclass(frozen=True)
class Tier:
    """One level of a KV cache hierarchy.

    Attributes
    ----------
    name : str
        Display name, e.g. ``"DRAM (PCIe 5.0 x16)"``.
    capacity_bytes : float
        Bytes of KV cache the tier can hold.
    bandwidth : float
        Bytes/s a fetch from this tier into the GPU gets.
    latency : float
        Seconds before the first byte arrives (added once per fetch).
    source : str
        Where the figures come from (a catalog link, a datasheet, or "assumption").
    """

    name: str
    capacity_bytes: float
    bandwidth: float
    latency: float = 0.0
    source: str = ""

    def __post_init__(self) -> None:
        _args.name("name", self.name)
        _args.positive("capacity_bytes", self.capacity_bytes)
        _args.positive("bandwidth", self.bandwidth)
        _args.non_negative("latency", self.latency)

    def capacity_tokens(self, model: str | ModelConfig, *, dtype: str = "bf16") -> int:
        """Tokens of ``model``'s KV cache the tier holds: ``capacity_bytes // kv_cache_bytes_per_token``."""
        return int(self.capacity_bytes // kv_cache_bytes_per_token(model, dtype=dtype))

    def as_link(self) -> Link:
        """The tier as a :class:`~helpers.hardware.Link`, so :mod:`helpers.kvcache` can time fetches from it."""
        return Link(
            self.name, self.bandwidth, self.latency, self.source or "user-supplied"
        )

    @classmethod
    def from_link(
        cls, name: str, capacity_bytes: float, link: str | Link, *, n_links: int = 1
    ) -> Tier:
        """A tier reached through ``n_links`` catalog links (bandwidth adds up, latency is the link's)."""
        chosen = get_link(link)
        n_links = _args.positive_int("n_links", n_links)
        return cls(
            name,
            capacity_bytes,
            n_links * chosen.bandwidth,
            chosen.latency,
            chosen.source,
        )


NVME_LATENCY = 100e-6
"""Seconds before an NVMe read's first byte arrives: an order-of-magnitude assumption, not a datasheet figure."""


def nvme_tier(
    name: str,
    capacity_bytes: float,
    *,
    n_drives: int = 1,
    latency: float = NVME_LATENCY,
) -> Tier:
    """A tier of ``n_drives`` NVMe SSDs, each on a PCIe 4.0 x4 slot.

    Each drive gets a quarter of a PCIe 4.0 x16 link's bandwidth (x4 of x16
    lanes: an upper bound for such a drive, about 7.9 GB/s); bandwidths add
    up over drives, the ``latency`` (an assumption) is paid once per fetch.
    """
    n_drives = _args.positive_int("n_drives", n_drives)
    x16 = get_link("pcie4")
    source = f"PCIe 4.0 x4 per drive, a quarter of {x16.name} ({x16.source}); latency: assumption"
    return Tier(name, capacity_bytes, n_drives * x16.bandwidth / 4, latency, source)


def example_hierarchy(
    acc: str | Accelerator = "H100",
    *,
    n_gpus: int = 8,
    hbm_bytes: float = 100e9,
    dram_bytes: float = 1.5e12,
    dram_link: str | Link = "pcie5",
    dram_bandwidth: float | None = None,
    pool_bytes: float = 15e12,
    pool_link: str | Link = "cx7",
    ssd_bytes: float = 60e12,
) -> list[Tier]:
    """The book's example KV-cache hierarchy on one server of ``n_gpus`` GPUs, fastest first.

    * ``"HBM"``: ``hbm_bytes`` of the GPUs' memory kept for cached prefixes,
      at their memory bandwidth, no latency;
    * ``"host DRAM"``: ``dram_bytes`` over one ``dram_link`` per GPU, at
      their line rate, or at ``dram_bandwidth`` bytes/s for the whole server
      when given (Chapter ``hybrid_strategies`` passes Mooncake's planning figure,
      :data:`helpers.papers.MOONCAKE_TABLE1_H2D_BANDWIDTH`, 128 GB/s: eight
      GPUs copying at once share PCIe switches, NICs and the host's memory,
      so they do not reach eight links' line rate);
    * ``"remote pool"``: ``pool_bytes`` of other servers' memory over one
      ``pool_link`` per GPU;
    * ``"local SSD"``: ``ssd_bytes`` on one NVMe drive per GPU (:func:`nvme_tier`).

    The hierarchy is inclusive (each tier also holds what the faster ones
    hold, as :func:`trace_fractions` assumes), so each capacity is the tier's
    whole size and they must grow from tier to tier. A tier of 0 bytes is left
    out. The defaults are Chapter ``hybrid_strategies``'s: the capacities are illustrative
    assumptions, the bandwidths the catalog's.

    Raises
    ------
    ValueError
        A capacity is negative, HBM is 0, the capacities do not grow, or
        ``dram_bandwidth`` is not positive.
    """
    device = get_accelerator(acc)
    n_gpus = _args.positive_int("n_gpus", n_gpus)
    if dram_bandwidth is not None:
        _args.positive("dram_bandwidth", dram_bandwidth)
    sizes = {
        "hbm_bytes": _args.positive("hbm_bytes", hbm_bytes),
        "dram_bytes": _args.non_negative("dram_bytes", dram_bytes),
        "pool_bytes": _args.non_negative("pool_bytes", pool_bytes),
        "ssd_bytes": _args.non_negative("ssd_bytes", ssd_bytes),
    }
    kept = [(name, size) for name, size in sizes.items() if size > 0]
    for (low, a), (high, b) in zip(kept, kept[1:]):
        if not b > a:
            raise ValueError(
                f"{high} ({b:.3g}) must exceed {low} ({a:.3g}): each tier also holds "
                "what the faster ones hold, so capacities grow from HBM to DRAM to pool to SSD"
            )
    levels = [
        Tier(
            "HBM",
            hbm_bytes,
            n_gpus * device.memory_bandwidth,
            0.0,
            f"{device.source}; capacity: assumption",
        )
    ]
    if dram_bytes > 0:
        dram = Tier.from_link("host DRAM", dram_bytes, dram_link, n_links=n_gpus)
        if dram_bandwidth is not None:
            dram = Tier(
                dram.name,
                dram_bytes,
                dram_bandwidth,
                dram.latency,
                f"dram_bandwidth given for the server; latency: {dram.source}",
            )
        levels.append(dram)
    if pool_bytes > 0:
        levels.append(
            Tier.from_link("remote pool", pool_bytes, pool_link, n_links=n_gpus)
        )
    if ssd_bytes > 0:
        levels.append(nvme_tier("local SSD", ssd_bytes, n_drives=n_gpus))
    return levels


GB200_NVL72_HBM_BYTES = 13.4e12
"""HBM3e of one GB200 NVL72 rack, 72 Blackwell GPUs ("up to 13.4 TB", NVIDIA's GB200 NVL72 page)."""

GB200_NVL72_LPDDR5X_BYTES = 17e12
"""LPDDR5X of the rack's 36 Grace CPUs ("up to 17 TB", NVIDIA's GB200 NVL72 page), two GPUs per Grace."""

GB200_NVL72_GPUS = 72
_GB200_NVL72_PAGE = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"


def rack_scale_tiers(
    *, n_gpus: int = 8, peer_share: float = 0.25, cxl_bytes: float = 4e12
) -> list[Tier]:
    """Tiers a group of ``n_gpus`` GPUs in a GB200 NVL72 rack can reach beyond its own HBM, fastest first.

    * ``"NVL72 peer HBM"``: ``peer_share`` of the other GPUs' HBM (an
      assumption: what the rack's other replicas leave free for cache),
      reached over NVLink 5 at 900 GB/s per direction per GPU, one link per
      GPU of the group (capacity from :data:`GB200_NVL72_HBM_BYTES`);
    * ``"Grace LPDDR5X (NVLink-C2C)"``: the group's own Graces' memory, one
      Grace per two GPUs (:data:`GB200_NVL72_LPDDR5X_BYTES` / 36 each), over
      NVLink-C2C at 450 GB/s per direction per Grace, shared by its two GPUs;
    * ``"CXL Type-3 memory"``: ``cxl_bytes`` (an assumption) behind one
      PCIe 5.0 x16 CXL expander per GPU, 63 GB/s per direction each.

    Bandwidths are the link catalog's datasheet figures, not measurements;
    each tier is the whole of its capacity (they are not inclusive of one
    another, unlike :func:`example_hierarchy`).

    Raises
    ------
    ValueError
        ``n_gpus`` is odd, not positive or more than the rack's 72; ``peer_share``
        is not in (0, 1]; ``cxl_bytes`` is not positive.
    """
    n = _args.positive_int("n_gpus", n_gpus)
    if n % 2 or n >= GB200_NVL72_GPUS:
        raise ValueError(
            f"n_gpus must be even (two GPUs per Grace) and below {GB200_NVL72_GPUS}, got {n}"
        )
    share = _args.fraction("peer_share", peer_share)
    _args.positive("cxl_bytes", cxl_bytes)
    per_gpu_hbm = GB200_NVL72_HBM_BYTES / GB200_NVL72_GPUS
    per_grace = GB200_NVL72_LPDDR5X_BYTES / (GB200_NVL72_GPUS // 2)
    peer = Tier.from_link(
        "NVL72 peer HBM",
        share * per_gpu_hbm * (GB200_NVL72_GPUS - n),
        "nvlink5",
        n_links=n,
    )
    grace = Tier.from_link(
        "Grace LPDDR5X (NVLink-C2C)", per_grace * n // 2, "c2c", n_links=n // 2
    )
    cxl = Tier.from_link("CXL Type-3 memory", cxl_bytes, "cxl", n_links=n)
    return [
        Tier(
            peer.name,
            peer.capacity_bytes,
            peer.bandwidth,
            peer.latency,
            f"{peer.source}; capacity: {share:g} of the other GPUs' HBM ({_GB200_NVL72_PAGE}), assumption",
        ),
        Tier(
            grace.name,
            grace.capacity_bytes,
            grace.bandwidth,
            grace.latency,
            f"{grace.source}; capacity: {_GB200_NVL72_PAGE}",
        ),
        Tier(
            cxl.name,
            cxl.capacity_bytes,
            cxl.bandwidth,
            cxl.latency,
            f"{cxl.source}; capacity: assumption",
        ),
    ]


def _check_tier(tier: object) -> None:
    if not isinstance(tier, Tier):
        raise TypeError(f"tier must be a Tier, got {type(tier).__name__}")


def _prefill(
    model: ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    dtype: str,
    n_gpus: int,
    mfu: float,
) -> float:
    if tokens == 0:
        return 0.0
    return prefill_time(
        model, tokens, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu, link=None
    )


def span_compute_time(
    model: str | ModelConfig,
    start: int,
    stop: int,
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> float:
    """Seconds to compute tokens ``start .. stop - 1`` of a prompt whose first ``start`` tokens are cached.

    :func:`helpers.inference.suffix_prefill_time` (which says why the difference of two prefill
    times is the span's time) with no tensor-parallel collective (``link=None``): a tier's
    chunk is priced as compute alone.
    """
    return suffix_prefill_time(
        model, start, stop, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu, link=None
    )


@dataclass(frozen=True)
class Chunk:
    """The part of a request's prefix found in one tier, and what to do with it.

    Attributes
    ----------
    tier : str
        The tier's name.
    start, stop : int
        Token positions ``[start, stop)`` of the chunk in the prompt.
    fetch_s, recompute_s : float
        Seconds to fetch it from its tier / to recompute it in place.
    verdict : {'transfer', 'recompute'}
        ``'transfer'`` iff ``fetch_s < recompute_s``.
    """

    tier: str
    start: int
    stop: int
    fetch_s: float
    recompute_s: float
    verdict: Verdict

    @property
    def tokens(self) -> int:
        """Tokens in the chunk."""
        return self.stop - self.start


@dataclass(frozen=True)
class PrefillEstimate:
    """Time to prefill one request whose prefix is spread over tiers.

    Attributes
    ----------
    chunks : tuple of Chunk
        One per tier that holds part of the prefix, in prompt order.
    fetch_s : float
        Sum of the fetch times of the chunks whose verdict is ``'transfer'``.
    compute_s : float
        Recomputed chunks plus the uncached rest of the prompt.
    n_layers : int
        The model's layers (the stages a layer-wise prefetch pipelines over).
    """

    chunks: tuple[Chunk, ...]
    fetch_s: float
    compute_s: float
    n_layers: int

    @property
    def serial_s(self) -> float:
        """Fetch everything first, then compute: ``fetch_s + compute_s``."""
        return self.fetch_s + self.compute_s

    @property
    def prefetched_s(self) -> float:
        """Layer-wise prefetch: layer ``l + 1``'s KV arrives while layer ``l`` computes.

        :func:`helpers.kvcache.pipelined_time` over the model's layers.
        """
        return float(pipelined_time(self.fetch_s, self.compute_s, self.n_layers))

    @property
    def hidden_s(self) -> float:
        """Fetch fully hidden: ``compute_s``, the prefill no longer waits for any byte.

        It holds provided the fetch has a head start (it began during the
        previous request, when the scheduler saw the prefix) of at least
        :attr:`head_start_s`; with no head start, :attr:`prefetched_s` applies.
        """
        return self.compute_s

    @property
    def head_start_s(self) -> float:
        """Seconds of head start that hide the fetch fully: ``max(fetch_s - compute_s, 0)``.

        The fetch must have finished by the time the compute would need its
        last layer; with layer-wise prefetch a fetch shorter than the compute
        needs none beyond its first layer (neglected here).
        """
        return max(self.fetch_s - self.compute_s, 0.0)


ChunkPlan = tuple[int, int, int, float, float, bool]
"""One chunk of a tiered prefill: (tier index, start, stop, fetch s, compute s, fetched?)."""


def plan_chunks(
    input_tokens: int,
    counts: Sequence[int],
    fetch: Callable[[int, int], float],
    prefill: Callable[[int], float],
) -> tuple[list[ChunkPlan], float, float]:
    """The fetch-or-recompute rule over one request's chunks: the loop behind every tiered prefill.

    The prompt's first ``counts[0]`` tokens are in tier 0, the next
    ``counts[1]`` in tier 1, and so on; the rest is not cached. A chunk
    ``[a, b)`` in tier ``k`` is fetched iff ``fetch(k, b - a) < prefill(b) -
    prefill(a)``; the uncached tail is computed.

    Parameters
    ----------
    input_tokens : int
        Prompt length.
    counts : sequence of int
        Cached tokens per tier (their sum at most ``input_tokens``).
    fetch : callable
        ``(tier index, tokens) -> seconds`` to fetch that many tokens' KV cache.
    prefill : callable
        ``tokens -> seconds`` to prefill a prompt of that length (``0 -> 0``).

    Returns
    -------
    (chunks, fetch_s, compute_s)
        One :data:`ChunkPlan` per non-empty chunk, and the seconds spent
        fetching and computing.
    """
    chunks: list[ChunkPlan] = []
    start = 0
    fetch_s = compute_s = 0.0
    for k, count in enumerate(counts):
        if count == 0:
            continue
        stop = start + count
        f = fetch(k, count)
        c = prefill(stop) - prefill(start)
        fetched = f < c
        chunks.append((k, start, stop, f, c, fetched))
        if fetched:
            fetch_s += f
        else:
            compute_s += c
        start = stop
    compute_s += prefill(input_tokens) - prefill(start)
    return chunks, fetch_s, compute_s


def tiered_prefill(
    model: str | ModelConfig,
    input_tokens: int,
    tiers: Sequence[Tier],
    cached_tokens: Sequence[int],
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> PrefillEstimate:
    """Prefill time of a request whose prefix lies in tiers, deciding per chunk: fetch or recompute.

    The prompt's first ``cached_tokens[0]`` tokens are in ``tiers[0]``, the
    next ``cached_tokens[1]`` in ``tiers[1]``, and so on (list the tiers
    fastest first: the oldest, most shared blocks of a prefix are the
    hottest); the rest is not cached. A chunk ``[a, b)`` is fetched iff
    ``transfer_time(b - a, tier) < span_compute_time(a, b)`` (:func:`plan_chunks`),
    the inequality of :func:`helpers.kvcache.breakeven` (for the first chunk,
    ``a = 0``, it is exactly that function's verdict). Fetches of different
    chunks add up (they share the GPU's input link).

    Parameters
    ----------
    model : str or ModelConfig
    input_tokens : int
        Prompt length.
    tiers : sequence of Tier
    cached_tokens : sequence of int
        Tokens of the prefix found in each tier (same length as ``tiers``);
        their sum must not exceed ``input_tokens``.
    acc, dtype, n_gpus, mfu
        The prefill hardware, as in :func:`helpers.inference.prefill_time`.
    """
    m = get_model(model)
    input_tokens = _args.positive_int("input_tokens", input_tokens)
    tiers = tuple(tiers)
    counts = [
        _args.non_negative_int(f"cached_tokens[{i}]", c)
        for i, c in enumerate(cached_tokens)
    ]
    if len(counts) != len(tiers):
        raise ValueError(
            f"cached_tokens has {len(counts)} entries but tiers has {len(tiers)}"
        )
    for tier in tiers:
        _check_tier(tier)
    if sum(counts) > input_tokens:
        raise ValueError(
            f"cached_tokens add up to {sum(counts)}, more than input_tokens ({input_tokens})"
        )
    plans, fetch_s, compute_s = plan_chunks(
        input_tokens,
        counts,
        lambda k, n: transfer_time(m, n, tiers[k], dtype=dtype),
        lambda n: _prefill(m, n, acc, dtype, n_gpus, mfu),
    )
    chunks = tuple(
        Chunk(tiers[k].name, a, b, f, c, "transfer" if fetched else "recompute")
        for k, a, b, f, c, fetched in plans
    )
    return PrefillEstimate(chunks, fetch_s, compute_s, m.n_layers)


def _cached_tokens_from_fractions(
    input_tokens: int, fractions: Sequence[float]
) -> list[int]:
    """Turn per-tier fractions of the input (hit rates) into whole token counts for :func:`tiered_prefill`.

    ``fractions[i]`` is the share of input tokens served from tier ``i``
    (e.g. from :func:`helpers.cachesim.tier_hit_fractions`); the rest,
    ``1 - sum(fractions)``, is the miss fraction. Counts are rounded down.
    """
    input_tokens = _args.positive_int("input_tokens", input_tokens)
    values = [_args.non_negative(f"fractions[{i}]", f) for i, f in enumerate(fractions)]
    if sum(values) > 1 + 1e-9:
        raise ValueError(f"fractions add up to {sum(values):.6g} > 1")
    return [int(math.floor(f * input_tokens + 1e-9)) for f in values]


def expected_prefill_time(
    model: str | ModelConfig,
    input_tokens: int,
    tiers: Sequence[Tier],
    fractions: Sequence[float] | np.ndarray,
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> PrefillEstimate:
    """Prefill estimate for a request of ``input_tokens`` whose tokens hit the tiers in the given fractions.

    ``fractions`` has one entry per tier, optionally followed by the miss
    fraction (as :func:`helpers.cachesim.tier_hit_fractions` returns it; the
    miss is then ignored: it is whatever the tiers do not serve).

    A mean-field estimate: the typical request is given the workload's mean
    hit fractions (its prefix is ``fractions[0] * n`` tokens from the first
    tier, then ``fractions[1] * n`` from the second, ...). It is not the mean
    of per-request times, which would need each request's own hits.
    """
    values = list(fractions)
    tiers = tuple(tiers)
    if len(values) == len(tiers) + 1:
        values = values[:-1]
    counts = _cached_tokens_from_fractions(input_tokens, values)
    return tiered_prefill(
        model, input_tokens, tiers, counts, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu
    )


def tier_verdicts(
    model: str | ModelConfig,
    prefix_tokens: int,
    tiers: Sequence[Tier],
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> list[Chunk]:
    """For a whole prefix of ``prefix_tokens`` found in each tier in turn: fetch or recompute?

    One :class:`Chunk` per tier, each ``[0, prefix_tokens)``: the verdict of
    :func:`helpers.kvcache.breakeven` with the tier as the link.
    """
    prefix_tokens = _args.positive_int("prefix_tokens", prefix_tokens)
    recompute = prefill_time(
        model, prefix_tokens, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu, link=None
    )
    out = []
    for tier in tiers:
        _check_tier(tier)
        fetch = transfer_time(model, prefix_tokens, tier, dtype=dtype)
        verdict: Verdict = "transfer" if fetch < recompute else "recompute"
        out.append(Chunk(tier.name, 0, prefix_tokens, fetch, recompute, verdict))
    return out


def trace_fractions(
    trace: cachesim.Trace | cachesim.StackDistances,
    tiers: Sequence[Tier],
    model: str | ModelConfig,
    *,
    dtype: str = "bf16",
    block_tokens: int = cachesim.TRACE_BLOCK_TOKENS,
) -> np.ndarray:
    """Fractions of a trace's prompt tokens served by each tier, then the miss fraction.

    Replays ``trace`` (a :class:`helpers.cachesim.Trace` or its stack
    distances) through an inclusive LRU hierarchy with
    :func:`helpers.cachesim.tier_hit_fractions`. Inclusive means each tier
    also holds what the faster ones hold, so list the tiers fastest first
    with strictly growing capacities; each tier's capacity in tokens is
    :meth:`Tier.capacity_tokens` for ``model``.
    """
    for tier in tiers:
        _check_tier(tier)
    capacities = [tier.capacity_tokens(model, dtype=dtype) for tier in tiers]
    return cachesim.tier_hit_fractions(trace, capacities, block_tokens=block_tokens)


# ---------------------------------------------------------------------------
# A trace: every request's own tier split and fetch-or-recompute verdicts
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ReplayedPrefill:
    """Prefill of every request of a trace through a tiered prefix cache.

    Attributes
    ----------
    trace_name : str
    tier_names : tuple of str
        Fastest first.
    capacities_tokens : tuple of int
        Each tier's capacity in tokens (inclusive hierarchy: each holds what the faster ones hold).
    input_tokens : numpy.ndarray of int64, shape (n,)
        Prompt length of each request.
    cached_tokens : numpy.ndarray of int64, shape (n, tiers)
        Tokens of each request's prefix found in each tier (in prompt order: tier 0's first).
    fetched : numpy.ndarray of bool, shape (n, tiers)
        Whether that chunk is fetched (``True``) or recomputed; ``False`` where the chunk is empty.
    fetch_s, compute_s : numpy.ndarray of float, shape (n,)
        Seconds fetching and computing, as :class:`PrefillEstimate` has them.
    no_cache_s : numpy.ndarray of float, shape (n,)
        Seconds to prefill each prompt with no cache at all.
    n_layers : int
        Layers of the model (the stages of a layer-wise prefetch).
    """

    trace_name: str
    tier_names: tuple[str, ...]
    capacities_tokens: tuple[int, ...]
    input_tokens: np.ndarray
    cached_tokens: np.ndarray
    fetched: np.ndarray
    fetch_s: np.ndarray
    compute_s: np.ndarray
    no_cache_s: np.ndarray
    n_layers: int

    def __post_init__(self) -> None:
        for field in (
            "input_tokens",
            "cached_tokens",
            "fetched",
            "fetch_s",
            "compute_s",
            "no_cache_s",
        ):
            getattr(self, field).setflags(write=False)

    @property
    def n_requests(self) -> int:
        """Requests replayed."""
        return len(self.input_tokens)

    @property
    def serial_s(self) -> np.ndarray:
        """Per request: fetch everything first, then compute."""
        return self.fetch_s + self.compute_s

    @property
    def prefetched_s(self) -> np.ndarray:
        """Per request: layer-wise prefetch (:func:`helpers.kvcache.pipelined_time`)."""
        return np.asarray(pipelined_time(self.fetch_s, self.compute_s, self.n_layers))

    def saved_fraction(self, *, prefetch: bool = False) -> float:
        """Share of the trace's no-cache prefill time the cache saves (summed over requests)."""
        total = (self.prefetched_s if prefetch else self.serial_s).sum()
        return float(1.0 - total / self.no_cache_s.sum())

    def served_fractions(self) -> np.ndarray:
        """Share of all prompt tokens found in each tier, then the miss share (sums to 1)."""
        per_tier = self.cached_tokens.sum(axis=0) / self.input_tokens.sum()
        return np.concatenate([per_tier, [1.0 - per_tier.sum()]])


def _distances(
    trace: object, block_tokens: int
) -> tuple[cachesim.StackDistances, np.ndarray]:
    if isinstance(trace, cachesim.Trace):
        sd = cachesim.stack_distances(trace, block_tokens=block_tokens)
        return sd, np.asarray(trace.input_lengths, dtype=np.int64)
    if isinstance(trace, cachesim.StackDistances):
        if trace.block_tokens != block_tokens:
            raise ValueError(
                f"block_tokens ({block_tokens}) differs from the precomputed distances' ({trace.block_tokens})"
            )
        lengths = np.bincount(
            trace.request, weights=trace.weights, minlength=trace.n_requests
        ).astype(np.int64)
        return trace, lengths
    raise TypeError(
        f"trace must be a cachesim.Trace or cachesim.StackDistances, got {type(trace).__name__}"
    )


def replay_prefill(
    trace: cachesim.Trace | cachesim.StackDistances,
    tiers: Sequence[Tier],
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
    block_tokens: int = cachesim.TRACE_BLOCK_TOKENS,
) -> ReplayedPrefill:
    """Every request's prefill time through an inclusive LRU tier hierarchy, request by request.

    Request ``r`` finds ``H_k(r)`` tokens of its prefix within tiers ``0..k``
    (``cachesim.StackDistances.request_hit_tokens`` at tier ``k``'s capacity);
    tier ``k`` serves the chunk ``[H_{k-1}(r), H_k(r))``. Each chunk is fetched
    iff fetching is faster than recomputing it, and the uncached tail is
    computed: :func:`plan_chunks`, the loop of
    :func:`tiered_prefill`, whose result this equals request by
    request (times are memoised: many requests share lengths).

    Parameters
    ----------
    trace : cachesim.Trace or cachesim.StackDistances
    tiers : sequence of Tier
        Fastest first, capacities (in ``model`` tokens) strictly increasing.
    model, acc, dtype, n_gpus, mfu
        As in :func:`tiered_prefill`.
    block_tokens : int
        Cache block size in tokens (a multiple of the trace's 512).

    Returns
    -------
    ReplayedPrefill
    """
    m = get_model(model)
    n_gpus = _args.positive_int("n_gpus", n_gpus)
    mfu = _args.fraction("mfu", mfu)
    levels = tuple(tiers)
    if not levels:
        raise ValueError("tiers must hold at least one Tier")
    for i, tier in enumerate(levels):
        if not isinstance(tier, Tier):
            raise TypeError(f"tiers[{i}] must be a Tier, got {type(tier).__name__}")
    capacities = [tier.capacity_tokens(m, dtype=dtype) for tier in levels]
    if any(b <= a for a, b in zip(capacities, capacities[1:])):
        raise ValueError(
            f"tiers capacities must grow strictly from tier to tier, got {capacities} tokens"
        )
    if capacities[0] < 1:
        raise ValueError(f"tiers[0] holds no whole token of {m.name}'s KV cache")
    sd, lengths = _distances(trace, block_tokens)
    # hits within tiers 0..k, shape (n, tiers)
    cumulative = np.stack([sd.request_hit_tokens(c) for c in capacities], axis=1)
    cached = np.diff(
        np.concatenate(
            [np.zeros((len(lengths), 1), dtype=np.int64), cumulative], axis=1
        ),
        axis=1,
    )

    @functools.cache
    def prefill(tokens: int) -> float:
        return (
            prefill_time(m, tokens, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu, link=None)
            if tokens
            else 0.0
        )

    @functools.cache
    def fetch(k: int, tokens: int) -> float:
        return transfer_time(m, tokens, levels[k], dtype=dtype)

    n = len(lengths)
    fetched = np.zeros(cached.shape, dtype=bool)
    fetch_s = np.zeros(n)
    compute_s = np.zeros(n)
    no_cache = np.zeros(n)
    counts = cached.tolist()
    for r, length in enumerate(lengths.tolist()):
        plans, fetch_s[r], compute_s[r] = plan_chunks(length, counts[r], fetch, prefill)
        for k, *_, was_fetched in plans:
            fetched[r, k] = was_fetched
        no_cache[r] = prefill(length)
    return ReplayedPrefill(
        trace_name=sd.trace_name,
        tier_names=tuple(t.name for t in levels),
        capacities_tokens=tuple(int(c) for c in capacities),
        input_tokens=lengths,
        cached_tokens=cached,
        fetched=fetched,
        fetch_s=fetch_s,
        compute_s=compute_s,
        no_cache_s=no_cache,
        n_layers=m.n_layers,
    )


__getattr__ = forwarder(__name__)
