"""Reuse a cached prefix: in a real model (TinyGPT), and request by request over a trace.

Two halves, one idea: a prompt whose first ``h`` tokens already have a KV
cache needs only its last ``n - h`` tokens computed.

* :func:`prefill_with_prefix` runs a :class:`~helpers.tinygpt.TinyGPT` on the
  uncached suffix of a prompt, given the KV cache of its prefix, and returns
  what :meth:`~helpers.tinygpt.TinyGPT.prefill` of the whole prompt returns
  (same logits, same cache, up to rounding). :func:`prefix_of_cache` cuts the
  cache of a prefix out of a longer cache (the keys and values of the first
  ``h`` positions depend on those positions only, so they *are* the prefix's
  cache). Torch is imported lazily: the trace half does not need it.
* :func:`replay_prefill` gives every request of a trace its own tier split
  (from the LRU stack distances of :mod:`helpers.cachesim`) and its own
  fetch-or-recompute verdicts and prefill time, exactly as
  :func:`helpers.tiers.tiered_prefill` computes them one request at a time
  (the tests check it request by request), but with the roofline times of
  each token count computed once, so a whole trace at many capacities takes
  seconds. :func:`helpers.tiers.expected_prefill_time` is the mean-field
  version of the same estimate (one typical request).

Units: seconds, tokens, bytes.

References
----------
Qin et al. (2025), "Mooncake: Trading More Storage for Less Computation", FAST'25.
Mattson et al. (1970), "Evaluation techniques for storage hierarchies", IBM Systems Journal.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _validate, cachesim, inference, kvcache, tiers
from .hardware import Accelerator
from .llm import ModelConfig, get_model

if TYPE_CHECKING:  # pragma: no cover
    from .tinygpt import KVCache, TinyGPT


# ---------------------------------------------------------------------------
# A real model: prefill only the uncached suffix
# ---------------------------------------------------------------------------


def _check_model(model: object) -> TinyGPT:
    from .tinygpt import TinyGPT

    if not isinstance(model, TinyGPT):
        raise TypeError(
            f"model must be a helpers.tinygpt.TinyGPT, got {type(model).__name__}"
        )
    return model


def _check_cache(name: str, model: TinyGPT, cache: object) -> KVCache:
    import torch

    n_layers = model.config.n_layers
    if not isinstance(cache, (list, tuple)) or len(cache) != n_layers:
        raise ValueError(
            f"{name} must be a list of {n_layers} (keys, values) pairs, one per layer"
        )
    shape = None
    for i, pair in enumerate(cache):
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or not all(isinstance(t, torch.Tensor) for t in pair)
        ):
            raise TypeError(f"{name}[{i}] must be a (keys, values) pair of tensors")
        k, v = pair
        if k.ndim != 4 or k.shape != v.shape:
            raise ValueError(
                f"{name}[{i}]: keys and values must have the same shape (batch, n_kv_heads, tokens, head_dim)"
            )
        if k.shape[1] != model.config.n_kv_heads or k.shape[3] != model.config.head_dim:
            raise ValueError(
                f"{name}[{i}] has {k.shape[1]} KV heads of {k.shape[3]}; the model has "
                f"{model.config.n_kv_heads} of {model.config.head_dim}"
            )
        if shape is None:
            shape = k.shape
        elif k.shape != shape:
            raise ValueError(
                f"{name}: every layer must hold the same batch and tokens, layer {i} differs"
            )
    return list(cache)


def prefix_of_cache(cache: KVCache, tokens: int) -> KVCache:
    """The KV cache of the first ``tokens`` positions of a longer cache (views, no copy).

    Causal attention makes the keys and values of position ``i`` depend on
    positions ``0..i`` only, so the first ``tokens`` positions of the cache of
    a prompt are exactly the cache of its first ``tokens`` tokens.

    Parameters
    ----------
    cache : list of (keys, values)
        Per layer, tensors of shape ``(batch, n_kv_heads, length, head_dim)``.
    tokens : int
        Positions to keep, ``1 <= tokens <= length``.
    """
    import torch

    tokens = _validate.positive_int("tokens", tokens)
    if not isinstance(cache, (list, tuple)) or not cache:
        raise ValueError("cache must be a non-empty list of (keys, values) pairs")
    if not all(
        isinstance(p, (list, tuple))
        and len(p) == 2
        and all(isinstance(t, torch.Tensor) and t.ndim == 4 for t in p)
        for p in cache
    ):
        raise TypeError("cache must hold (keys, values) pairs of 4-d tensors")
    length = int(cache[0][0].shape[2])
    if tokens > length:
        raise ValueError(
            f"tokens ({tokens}) must not exceed the cache's {length} positions"
        )
    return [(k[:, :, :tokens], v[:, :, :tokens]) for k, v in cache]


def prefill_with_prefix(
    model: TinyGPT, suffix: Any, prefix_cache: KVCache
) -> tuple[Any, KVCache]:
    """Prefill the uncached suffix of prompts whose prefix's KV cache is given.

    Runs every block of ``model`` on the ``s`` suffix tokens, at positions
    ``h .. h + s - 1`` (rotary embeddings continue after the prefix), each
    suffix token attending causally to the ``h`` cached positions and to the
    suffix tokens before it. The work is the suffix's weight matmuls and
    ``s * (h + s)`` query-key pairs per head (TinyGPT computes the masked
    rectangle), instead of ``(h + s) ** 2`` for the whole prompt.

    Parameters
    ----------
    model : TinyGPT
    suffix : torch.Tensor of int
        Token ids, shape ``(batch, s)`` with ``s >= 1`` (or ``(s,)`` for one sequence).
    prefix_cache : list of (keys, values)
        The prefix's cache, e.g. from ``model.prefill(prefix)`` or
        :func:`prefix_of_cache`; its batch must match ``suffix``'s.

    Returns
    -------
    logits : torch.Tensor, shape (batch, vocab)
        Logits of the last position, as :meth:`helpers.tinygpt.TinyGPT.prefill` of the whole prompt returns them.
    cache : list of (keys, values)
        The whole prompt's cache (prefix then suffix).
    """
    import torch

    model = _check_model(model)
    if not isinstance(suffix, torch.Tensor):
        raise TypeError(
            f"suffix must be a torch.Tensor of token ids, got {type(suffix).__name__}"
        )
    if suffix.ndim == 1:
        suffix = suffix[None, :]
    if suffix.ndim != 2 or suffix.shape[1] < 1:
        raise ValueError(
            f"suffix must have shape (batch, tokens) with tokens >= 1, got {tuple(suffix.shape)}"
        )
    if suffix.dtype.is_floating_point or suffix.dtype == torch.bool:
        raise TypeError(f"suffix must hold integer token ids, got dtype {suffix.dtype}")
    cache = _check_cache("prefix_cache", model, prefix_cache)
    if cache[0][0].shape[0] != suffix.shape[0]:
        raise ValueError(
            f"prefix_cache holds {cache[0][0].shape[0]} sequences but suffix has {suffix.shape[0]}"
        )
    device = model.device
    with torch.no_grad():
        x = model.embed(suffix.to(device))
        grown = []
        for block, (k, v) in zip(model.blocks, cache):
            x, layer_cache = block(x, (k.to(device), v.to(device)))
            grown.append(layer_cache)
        logits = model.lm_head(model.norm(x[:, -1:, :]))[:, 0, :]
    return logits, grown


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
        Seconds fetching and computing, as :class:`helpers.tiers.PrefillEstimate` has them.
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
        return np.asarray(
            tiers.pipelined_time(self.fetch_s, self.compute_s, self.n_layers)
        )

    def saved_fraction(self, prefetch: bool = False) -> float:
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
    tier_list: Sequence[tiers.Tier],
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
    computed: :func:`helpers.tiers.plan_chunks`, the loop of
    :func:`helpers.tiers.tiered_prefill`, whose result this equals request by
    request (times are memoised: many requests share lengths).

    Parameters
    ----------
    trace : cachesim.Trace or cachesim.StackDistances
    tier_list : sequence of tiers.Tier
        Fastest first, capacities (in ``model`` tokens) strictly increasing.
    model, acc, dtype, n_gpus, mfu
        As in :func:`helpers.tiers.tiered_prefill`.
    block_tokens : int
        Cache block size in tokens (a multiple of the trace's 512).

    Returns
    -------
    ReplayedPrefill
    """
    m = get_model(model)
    n_gpus = _validate.positive_int("n_gpus", n_gpus)
    mfu = _validate.fraction("mfu", mfu)
    levels = tuple(tier_list)
    if not levels:
        raise ValueError("tier_list must hold at least one Tier")
    for i, tier in enumerate(levels):
        if not isinstance(tier, tiers.Tier):
            raise TypeError(
                f"tier_list[{i}] must be a tiers.Tier, got {type(tier).__name__}"
            )
    capacities = [tier.capacity_tokens(m, dtype=dtype) for tier in levels]
    if any(b <= a for a, b in zip(capacities, capacities[1:])):
        raise ValueError(
            f"tier_list capacities must grow strictly from tier to tier, got {capacities} tokens"
        )
    if capacities[0] < 1:
        raise ValueError(f"tier_list[0] holds no whole token of {m.name}'s KV cache")
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
            inference.prefill_time(m, tokens, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)
            if tokens
            else 0.0
        )

    @functools.cache
    def fetch(k: int, tokens: int) -> float:
        return kvcache.transfer_time(m, tokens, levels[k], dtype=dtype)

    n = len(lengths)
    fetched = np.zeros(cached.shape, dtype=bool)
    fetch_s = np.zeros(n)
    compute_s = np.zeros(n)
    no_cache = np.zeros(n)
    counts = cached.tolist()
    for r, length in enumerate(lengths.tolist()):
        plans, fetch_s[r], compute_s[r] = tiers.plan_chunks(
            length, counts[r], fetch, prefill
        )
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


__all__ = [
    "ReplayedPrefill",
    "prefill_with_prefix",
    "prefix_of_cache",
    "replay_prefill",
]
