"""Transfer or recompute a KV cache?

A prefix of ``n`` tokens leaves ``n * kv_cache_bytes_per_token`` bytes of KV
cache. A server that needs it again can recompute it (a prefill: FLOP grow as
``n * d_model**2``) or fetch it over a link (bytes grow as ``n``). Fetching
wins when the link's bandwidth exceeds the bytes the GPUs would have produced
per second of recomputation. That is Mooncake's (FAST'25) Eq. 1-2; this
module generalises it to any :class:`~helpers.llm.ModelConfig`.

For the linear layers alone (short prefixes) the rule is the source text's:
fetch when ``peak FLOP/s / bandwidth < c * d_model`` with
``c = linear_flops_per_token / (d_model * kv_bytes_per_token)``; see
:func:`hidden_size_constant`.

The choice need not be binary. Fetching and recomputing use different
engines (the NIC and the tensor cores), so they can run at once:

* **layer-wise pipelining** (:func:`pipelined_time`): layer ``l``'s
  computation starts as soon as layer ``l``'s KV has arrived, while layer
  ``l + 1``'s is still in flight, as Mooncake streams the cache;
* **splitting the prefix** (:func:`best_split`): recompute its first
  ``r`` tokens while the last ``n - r`` load (Cake, arXiv:2410.03065).

Real links deliver less than their line rate, and Mooncake notes that its
transfer stages do not overlap perfectly; both are explicit parameters here
(``efficiency`` of :func:`transfer_time`, ``overlap`` and ``efficiency`` of
:func:`reuse_bandwidth_threshold`), with the paper's measurements in
:data:`helpers.papers.MOONCAKE_FIG12_TRANSFER_ENGINE` and the factor its
Fig. 13 implies in :func:`congestion_factor`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from . import _args
from ._moved import forwarder
from ._search import first_true, last_true
from .hardware import Accelerator, Link, get_accelerator, get_link
from .inference import prefill_time
from .llm import (
    ModelConfig,
    get_model,
    kv_cache_bytes,
    linear_flops_per_token,
    prefill_cost,
    recompute_flops_per_kv_byte,
)


class _AsLink(Protocol):
    """Anything that can stand for a link, such as a cache tier (:class:`helpers.tiers.Tier`)."""

    def as_link(self) -> Link: ...


LinkLike = str | Link | _AsLink
"""A catalog link, its name, or an object with ``as_link()`` (a tier)."""

Verdict = Literal["transfer", "recompute"]
"""Which way a KV cache should reach the GPU."""


def recompute_time(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> float:
    """Seconds to recompute the KV cache of a ``tokens``-token prefix: it is prefilling it.

    :func:`helpers.inference.prefill_time` with ``link=None``: the roofline
    time of :func:`helpers.llm.prefill_cost` on ``n_gpus`` devices (work
    split evenly) whose peak FLOP/s are scaled by ``mfu`` (1 = the datasheet
    peak), with the tensor-parallel all-reduces left out. It is therefore a
    lower bound on recomputing, the most favourable case for it: a verdict
    "transfer" holds a fortiori once communication is charged
    (:mod:`helpers.multigpu` and Chapter ``many_gpus`` add it).
    """
    return prefill_time(
        model, tokens, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu, link=None
    )


@dataclass(frozen=True)
class MeasuredTransfer:
    """A transfer rate measured on real links, against their line rate.

    Attributes
    ----------
    setup : str
        What was measured (NICs per node and their speed).
    line_rate : float
        Aggregate line rate of the links, bytes/s.
    achieved : float
        Bandwidth the measurement reached, bytes/s.
    source : str
        Where the figure is published.
    """

    setup: str
    line_rate: float
    achieved: float
    source: str

    @property
    def efficiency(self) -> float:
        """``achieved / line_rate``: the ``efficiency`` to pass to :func:`transfer_time`."""
        return self.achieved / self.line_rate


def link_time(
    nbytes: float, link: LinkLike, *, n_links: int = 1, efficiency: float = 1.0
) -> float:
    """Seconds to move ``nbytes`` bytes over ``n_links`` copies of ``link``.

    ``latency + nbytes / (efficiency * n_links * bandwidth)``.

    ``link`` is a catalog :class:`~helpers.hardware.Link`, its name, or a
    tier of a cache hierarchy (:class:`helpers.tiers.Tier`, through its
    ``as_link``). ``efficiency`` in (0, 1] is the share of the line rate a
    transfer actually gets (1 = line rate, the most favourable case for
    fetching; Mooncake measured 0.87 and 0.475, :data:`helpers.papers.MOONCAKE_FIG12_TRANSFER_ENGINE`).

    Examples
    --------
    >>> round(link_time(1e9, "100 GbE NIC", efficiency=0.87) * 1e3, 1)
    92.0
    """
    if isinstance(link, (str, Link)) or not hasattr(link, "as_link"):
        chosen = get_link(link)  # type: ignore[arg-type]  # bad input: an error naming link
    else:
        chosen = link.as_link()
    nbytes = _args.non_negative("nbytes", nbytes)
    n_links = _args.positive_int("n_links", n_links)
    efficiency = _args.fraction("efficiency", efficiency)
    return chosen.latency + nbytes / (efficiency * n_links * chosen.bandwidth)


def transfer_time(
    model: str | ModelConfig,
    tokens: int,
    link: LinkLike,
    *,
    dtype: str = "bf16",
    n_links: int = 1,
    efficiency: float = 1.0,
) -> float:
    """Seconds to fetch the KV cache of ``tokens`` tokens: :func:`link_time` of its bytes.

    Parameters as in :func:`link_time`; the bytes are
    :func:`helpers.llm.kv_cache_bytes` in ``dtype``.
    """
    return link_time(
        kv_cache_bytes(model, tokens, dtype=dtype),
        link,
        n_links=n_links,
        efficiency=efficiency,
    )


def reuse_bandwidth_threshold(
    model: str | ModelConfig,
    prefix_tokens: int,
    acc: str | Accelerator,
    *,
    n_gpus: int = 1,
    mfu: float = 1.0,
    dtype: str = "bf16",
    coefficients: tuple[float, float] | None = None,
    overlap: float = 1.0,
    efficiency: float = 1.0,
) -> float:
    """Least link line rate (bytes/s) at which reusing a cached prefix beats recomputing it.

    Mooncake (Qin et al., FAST'25), section 2.2, Eq. 1-2: the prefix's KV
    cache must arrive no slower than the node's ``n_gpus`` GPUs ``acc``, at
    ``mfu`` of their ``dtype`` peak (:func:`compute_rate`, FLOP/s), could
    recompute it, so ``B = kv_bytes(n) * compute_rate / flops(n)``.
    That is a floor: the paper adds that "the transfer stages cannot be
    perfectly overlapped with each other, [so] the actual bandwidth
    requirement is even higher". Two factors make this explicit, giving
    ``B * overlap / efficiency``:

    * ``overlap`` (>= 1): a congestion/overlap factor, how much more
      bandwidth than Eq. 2 the system needs (1 = the paper's Eq. 2). The one
      measured value is read off one experiment: Fig. 13's knee divided by
      Eq. 2 (:func:`congestion_factor`), a knee the paper attributes to
      network congestion (section 5.4.2);
    * ``efficiency`` (0, 1]: the share of the line rate the transfer engine
      reaches (:data:`helpers.papers.MOONCAKE_FIG12_TRANSFER_ENGINE`).

    Parameters
    ----------
    model : str or ModelConfig
    prefix_tokens : int
        Prefix length ``n`` in tokens.
    acc : str or Accelerator
        The GPU that recomputes, e.g. ``"a800"`` with ``n_gpus=8`` for Mooncake's node.
        (A bare FLOP/s here, the old signature, still works with a
        :class:`PendingDeprecationWarning` until release 0.3.0.)
    n_gpus : int
        GPUs that recompute together.
    mfu : float
        Share of the ``dtype`` peak they sustain, in (0, 1].
    dtype : str
        Compute dtype and KV cache dtype.
    coefficients : (a, b), optional
        Use the paper's Eq. 1 literally, ``flops(n) = l (a n^2 d + b n d^2)``
        (the paper gives ``a = 4, b = 22`` for LLaMA3-70B). By default the
        FLOP come from :func:`helpers.llm.prefill_cost` for the model's config.
    overlap : float
        Congestion/overlap factor (>= 1): imperfectly overlapped stages and a
        congested network, e.g. :func:`congestion_factor` of Mooncake's Fig. 13.
    efficiency : float
        Achieved share of the line rate, in (0, 1].
    """
    m = get_model(model)
    n = _args.positive_int("prefix_tokens", prefix_tokens)
    rate = _rate_or_old_flops(acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)
    overlap = _args.positive("overlap", overlap)
    if overlap < 1:
        raise ValueError(f"overlap must be >= 1, got {overlap!r}")
    efficiency = _args.fraction("efficiency", efficiency)
    if coefficients is None:
        flops = prefill_cost(m, n, dtype=dtype).flops
    else:
        flops = mooncake_prefill_flops(m, n, coefficients=coefficients)
    return kv_cache_bytes(m, n, dtype=dtype) * rate / flops * overlap / efficiency


def _rate_or_old_flops(acc: object, *, dtype: str, n_gpus: int, mfu: float) -> float:
    """:func:`compute_rate` of ``acc``; a number in its place is the old signature's FLOP/s."""
    if isinstance(acc, (str, Accelerator)):
        return compute_rate(acc, n_gpus=n_gpus, mfu=mfu, dtype=dtype)
    # Pending, not yet Deprecation: a notebook shows a DeprecationWarning in its outputs, and the
    # chapters still written with the old call would then fail strict nbval until they move.
    warnings.warn(
        "a FLOP/s in place of the accelerator is deprecated (removed in 0.3.0): pass the "
        "accelerator and n_gpus=, e.g. reuse_bandwidth_threshold(model, n, 'a800', n_gpus=8)",
        PendingDeprecationWarning,
        stacklevel=3,
    )
    return _args.positive("compute_flops", acc)


def congestion_factor(
    knee_bandwidth: float,
    model: str | ModelConfig,
    prefix_tokens: int,
    acc: str | Accelerator,
    *,
    n_gpus: int = 1,
    mfu: float = 1.0,
    dtype: str = "bf16",
    coefficients: tuple[float, float] | None = (4.0, 22.0),
) -> float:
    """How many times Eq. 2's floor a measured knee of time to first token lies (dimensionless).

    Mooncake (FAST'25) Fig. 13 shows TTFT degrading sharply below a network
    bandwidth ``knee_bandwidth`` (:data:`helpers.papers.MOONCAKE_FIG13_TTFT_KNEE`);
    dividing it by :func:`reuse_bandwidth_threshold` (Eq. 2, no factors) on the
    same testbed gives the congestion/overlap factor that experiment implies.
    It is read off one experiment: the paper attributes the knee to network
    congestion (section 5.4.2), not to imperfect overlap alone.

    Parameters
    ----------
    knee_bandwidth : float
        Bandwidth (bytes/s) below which TTFT degrades.
    model : str or ModelConfig
    prefix_tokens : int
        Prefix length ``n`` at which Eq. 2 is evaluated.
    acc : str or Accelerator
        The node's GPU (``"a800"`` with ``n_gpus=8`` for the paper's testbed); options
        ``n_gpus``, ``mfu`` and ``dtype`` as in :func:`reuse_bandwidth_threshold`.
    coefficients : (a, b) or None
        Eq. 1's coefficients (the paper's ``(4, 22)`` by default); ``None``
        counts the FLOP from the model's config.
    """
    knee = _args.positive("knee_bandwidth", knee_bandwidth)
    floor = reuse_bandwidth_threshold(
        model,
        prefix_tokens,
        acc,
        n_gpus=n_gpus,
        mfu=mfu,
        dtype=dtype,
        coefficients=coefficients,
    )
    return knee / floor


def mooncake_prefill_flops(
    model: str | ModelConfig,
    tokens: int,
    *,
    coefficients: tuple[float, float] = (4.0, 22.0),
) -> float:
    """Mooncake's (FAST'25, section 2.2) Eq. 1 for a prefill's FLOP: ``l (a n^2 d + b n d^2)``.

    ``l`` layers, ``n`` tokens, width ``d``; the paper gives ``a = 4, b = 22``
    for LLaMA3-70B. :func:`helpers.llm.prefill_cost` counts the same work from
    the model's config (causal attention, GQA, the real MLP width), which is
    what the book uses elsewhere; this form is here to reproduce the paper.
    """
    m = get_model(model)
    n = _args.positive_int("tokens", tokens)
    try:
        a, b = coefficients
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"coefficients must be a pair (a, b), got {coefficients!r}"
        ) from exc
    a = _args.non_negative("coefficients[0] (a)", a)
    b = _args.positive("coefficients[1] (b)", b)
    return m.n_layers * (a * n * n * m.d_model + b * n * m.d_model**2)


def mooncake_coefficients(model: str | ModelConfig) -> tuple[float, float]:
    """The coefficients ``(a, b)`` of Mooncake's Eq. 1 that a model's config implies.

    ``b = linear_flops_per_token / (n_layers * d**2)``: twice the weights of
    one block in units of ``d**2`` (the paper's 22 for LLaMA3-70B; its config
    gives 25.5). ``a = 2 * q_dim / d``: a causal kernel computes about
    ``n**2 / 2`` query-key pairs at ``4 * q_dim`` FLOP each per layer, so
    ``2 * q_dim * n**2 = a n**2 d`` (the paper's ``a = 4`` charges every query
    for every key). With these, :func:`mooncake_prefill_flops` approaches
    :func:`helpers.llm.prefill_cost` without the lm_head as ``n`` grows.
    """
    m = get_model(model)
    a = 2.0 * m.q_dim / m.d_model
    b = linear_flops_per_token(m) / (m.n_layers * m.d_model**2)
    return a, b


def hidden_size_constant(
    model: str | ModelConfig, *, dtype: str = "bf16", tokens: int | None = None
) -> float:
    """The constant ``c`` in the source text's rule *fetch when FLOP/s / bandwidth < c * d_model*.

    Producing one token's KV costs (linear layers only, i.e. short prefixes)
    ``linear_flops_per_token`` FLOP and yields ``kv_cache_bytes_per_token``
    bytes, so recomputing costs ``c * d_model`` FLOP per byte with
    ``c = linear_flops_per_token / (d_model * kv_bytes_per_token)``.
    For MHA with a 4x MLP in 16-bit, ``c = 24 d^2 / (d * 4 d) = 6``; GQA
    divides the KV bytes by the group size, multiplying ``c`` by it.

    With ``tokens`` (a prefix length ``n``) the whole prefill is counted,
    attention and lm_head included (:func:`helpers.llm.prefill_cost`):
    ``c(n) = prefill FLOP / (n * kv_bytes_per_token * d_model)``, that is
    ``c + 2 L q_dim (n + 1) / (d kv) + 2 V / (n kv)`` (attention, then the
    last token's lm_head). It grows with ``n`` once ``n (n + 1) > V d / (L q_dim)``
    (from 32 tokens for Llama-2-7B, 40 for Llama-3-70B), because attention
    adds work per token as the prefix lengthens; for shorter prefixes the
    lm_head, shared by fewer tokens, makes it fall.
    """
    m = get_model(model)
    return _flops_per_kv_byte(m, dtype, tokens) / m.d_model


def _flops_per_kv_byte(m: ModelConfig, dtype: str, tokens: int | None) -> float:
    """``c d`` (FLOP per KV byte): :func:`helpers.llm.recompute_flops_per_kv_byte` for the
    linear layers, or the whole prefill of ``tokens`` tokens per byte of its KV cache."""
    if tokens is None:
        return recompute_flops_per_kv_byte(m, kv_dtype=dtype)
    return prefill_cost(m, tokens, dtype=dtype).flops / kv_cache_bytes(
        m, tokens, dtype=dtype
    )


@dataclass(frozen=True)
class HiddenSizeRule:
    """The hidden-size rule's verdict for one model, compute rate and link.

    Attributes
    ----------
    compute_per_byte : float
        ``mu P / W``: FLOP the GPUs compute in the time the links move one byte (FLOP/byte).
    threshold : float
        ``c d``: FLOP it takes to recompute one byte of KV cache
        (:func:`helpers.llm.recompute_flops_per_kv_byte`; with ``tokens``, the whole
        prefill's ``c(n) d``, :func:`hidden_size_constant` times ``d_model``; FLOP/byte).
    verdict : Verdict
        ``"transfer"`` iff ``compute_per_byte < threshold``.
    speedup : float
        How many times faster the winner is, ``max / min`` of the two (>= 1).
    """

    compute_per_byte: float
    threshold: float
    verdict: Verdict
    speedup: float


def compute_rate(
    acc: str | Accelerator, *, n_gpus: int = 1, mfu: float = 1.0, dtype: str = "bf16"
) -> float:
    """FLOP/s that ``n_gpus`` GPUs ``acc`` sustain at ``mfu`` of their ``dtype`` peak: ``n mu P``.

    The one home of a node's compute rate in this module: every rule here that
    sets recomputation against a link calls it. ``compute_rate("a800", n_gpus=8)``
    is Mooncake's 8 x A800 node, 8 x 312 TFLOP/s = 2.496 PFLOP/s in bf16.
    """
    n_gpus = _args.positive_int("n_gpus", n_gpus)
    mfu = _args.fraction("mfu", mfu)
    return mfu * n_gpus * get_accelerator(acc).flops(dtype)


def hidden_size_rule(
    model: str | ModelConfig,
    acc: str | Accelerator,
    link: str | Link,
    *,
    dtype: str = "bf16",
    mfu: float = 1.0,
    n_gpus: int = 1,
    n_links: int = 1,
    tokens: int | None = None,
) -> HiddenSizeRule:
    """The source text's rule of thumb: fetch a KV cache when ``mu P / W < c d``, else recompute it.

    ``mu P`` is the FLOP/s the ``n_gpus`` GPUs sustain (:func:`compute_rate`:
    ``mfu`` of the ``dtype`` peak), ``W`` the bandwidth of ``n_links`` links
    (line rate, no latency), ``c d`` the FLOP per byte of recomputing a
    token's KV with the linear layers only
    (:func:`helpers.llm.recompute_flops_per_kv_byte`): short prefixes, where
    attention is negligible and the prefill is compute-bound. With ``tokens``
    (a prefix length ``n``), ``c(n) d`` counts the whole prefill, attention
    and lm_head included (:func:`hidden_size_constant` with ``tokens``). The
    full model is :func:`breakeven`; this is its limit, as the tests check.
    """
    m = get_model(model)
    n_links = _args.positive_int("n_links", n_links)
    if tokens is not None:
        tokens = _args.positive_int("tokens", tokens)
    rate = compute_rate(acc, n_gpus=n_gpus, mfu=mfu, dtype=dtype)
    ratio = rate / (n_links * get_link(link).bandwidth)
    threshold = _flops_per_kv_byte(m, dtype, tokens)
    verdict: Verdict = "transfer" if ratio < threshold else "recompute"
    return HiddenSizeRule(
        ratio, threshold, verdict, max(ratio, threshold) / min(ratio, threshold)
    )


def rule_bandwidth(
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    mfu: float = 1.0,
    n_gpus: int = 1,
) -> float:
    """The link bandwidth (bytes/s) at which :func:`hidden_size_rule` breaks even: ``B = mu P / (c d)``."""
    m = get_model(model)
    rate = compute_rate(acc, n_gpus=n_gpus, mfu=mfu, dtype=dtype)
    return rate / _flops_per_kv_byte(m, dtype, None)


@dataclass(frozen=True)
class Breakeven:
    """Both times for one prefix, and which is faster.

    Attributes
    ----------
    recompute_s, transfer_s : float
        Seconds to recompute / to fetch the prefix's KV cache.
    verdict : {'transfer', 'recompute'}
    speedup : float
        ``slower / faster`` (>= 1).
    threshold_bandwidth : float
        Aggregate link bandwidth (bytes/s) above which fetching wins, latency ignored.
    """

    recompute_s: float
    transfer_s: float
    verdict: Verdict
    speedup: float
    threshold_bandwidth: float


def breakeven(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    link: str | Link,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    n_links: int = 1,
    mfu: float = 1.0,
) -> Breakeven:
    """Compare recomputing and fetching the KV cache of a ``tokens``-token prefix."""
    recompute = recompute_time(model, tokens, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)
    transfer = transfer_time(model, tokens, link, dtype=dtype, n_links=n_links)
    verdict: Verdict = "transfer" if transfer < recompute else "recompute"
    threshold = kv_cache_bytes(model, tokens, dtype=dtype) / recompute
    speedup = max(recompute, transfer) / min(recompute, transfer)
    return Breakeven(recompute, transfer, verdict, speedup, threshold)


def _margin(
    model: str | ModelConfig,
    acc: str | Accelerator,
    link: str | Link,
    dtype: str,
    n_gpus: int,
    n_links: int,
    mfu: float,
) -> Callable[[int], float]:
    """``n -> recompute_time(n) - transfer_time(n)``: >= 0 where fetching wins."""

    def margin(n: int) -> float:
        recompute = recompute_time(model, n, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)
        return recompute - transfer_time(model, n, link, dtype=dtype, n_links=n_links)

    return margin


def breakeven_tokens(
    model: str | ModelConfig,
    acc: str | Accelerator,
    link: str | Link,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    n_links: int = 1,
    mfu: float = 1.0,
    max_tokens: int = 1 << 20,
) -> int | float:
    """Shortest prefix (tokens) from which fetching is at least as fast as recomputing, for every longer prefix.

    ``recompute - transfer`` is convex in the prefix length (a maximum of a
    quadratic and a linear function, minus a linear one), so the prefixes where
    recomputing wins form one interval. Fetching can also win for very short
    prefixes, whose recomputation is memory-bound (every weight is read for a
    handful of tokens); those do not count: the result is where fetching wins
    for good.

    Returns
    -------
    int or float
        A token count (an ``int``); ``1`` if fetching wins at every length;
        ``math.inf`` if it does not win at ``max_tokens``.
    """
    max_tokens = _args.positive_int("max_tokens", max_tokens)
    margin = _margin(model, acc, link, dtype, n_gpus, n_links, mfu)
    if margin(max_tokens) < 0:
        return math.inf
    lo, hi = 1, max_tokens  # ternary search for the minimum of the convex margin
    while hi - lo > 2:
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        if margin(m1) < margin(m2):
            hi = m2
        else:
            lo = m1
    lowest = min(range(lo, hi + 1), key=margin)
    if margin(lowest) >= 0:
        return 1
    # margin(lowest) < 0 <= margin(max_tokens), and margin rises in between
    return first_true(lambda n: margin(n) >= 0, lowest, max_tokens)


def recompute_window(
    model: str | ModelConfig,
    acc: str | Accelerator,
    link: str | Link,
    *,
    dtype: str = "bf16",
    n_gpus: int = 1,
    n_links: int = 1,
    mfu: float = 1.0,
    max_tokens: int = 1 << 20,
) -> tuple[int, int] | None:
    """Prefix lengths (first, last; inclusive) for which recomputing a KV cache beats fetching it, or ``None``.

    The interval on which :func:`breakeven` says "recompute", for prefixes of
    1 to ``max_tokens`` tokens. ``recompute - transfer`` is convex in the
    prefix length, so recomputing wins on at most one interval: it ends where
    :func:`breakeven_tokens` says fetching wins for good (``last + 1``), and
    starts (``first``, found here by bisection) where a lone prefill stops
    being so short that reading every weight for a handful of tokens makes it
    slower than the fetch.

    Returns
    -------
    (int, int) or None
        ``None`` when fetching is at least as fast for every length up to ``max_tokens``.
    """
    max_tokens = _args.positive_int("max_tokens", max_tokens)
    end = breakeven_tokens(
        model,
        acc,
        link,
        dtype=dtype,
        n_gpus=n_gpus,
        n_links=n_links,
        mfu=mfu,
        max_tokens=max_tokens,
    )
    if end == 1:
        return None
    last = max_tokens if math.isinf(end) else int(end) - 1
    margin = _margin(model, acc, link, dtype, n_gpus, n_links, mfu)
    if margin(last) >= 0:
        return None
    # recomputing wins on one interval ending at ``last``: find its first length
    return first_true(lambda n: margin(n) < 0, 1, last), last


def pipelined_time(
    fetch_s: float | np.ndarray, compute_s: float | np.ndarray, stages: int
) -> float | np.ndarray:
    """Time of fetch and compute pipelined over ``stages`` equal stages (e.g. layers).

    Stage ``i``'s compute needs stage ``i``'s fetch; the fetch of stage
    ``i + 1`` overlaps the compute of stage ``i`` (layer-wise streaming, as in
    Mooncake). With per-stage times ``f = fetch_s / stages`` and
    ``c = compute_s / stages`` the total is ``f + c + (stages - 1) * max(f, c)``
    ``= max(fetch_s, compute_s) + min(fetch_s, compute_s) / stages``: the
    serial sum for one stage, approaching ``max(fetch_s, compute_s)`` as the
    stages multiply. So a fetch no longer than the computation it feeds
    costs only one stage's worth of time. Assumes equal stages and that
    fetching does not slow computing (separate engines: NIC and tensor cores).
    Vectorised over ``fetch_s`` and ``compute_s`` (seconds, >= 0).
    """
    stages = _args.positive_int("stages", stages)
    f = np.asarray(fetch_s, dtype=float)
    c = np.asarray(compute_s, dtype=float)
    for name, value in (("fetch_s", f), ("compute_s", c)):
        if np.any(~np.isfinite(value)) or np.any(value < 0):
            raise ValueError(f"{name} must be finite and >= 0")
    f, c = f / stages, c / stages
    result = f + c + (stages - 1) * np.maximum(f, c)
    return float(result) if result.ndim == 0 else result


@dataclass(frozen=True)
class Split:
    """The best way to split a cached prefix between recomputing and fetching.

    Attributes
    ----------
    recompute_tokens : int
        The prefix's first tokens, recomputed on the GPUs.
    fetch_tokens : int
        Its remaining tokens, whose KV cache is fetched meanwhile.
    seconds : float
        ``max(recompute_s, fetch_s)``: both run at once.
    recompute_s, fetch_s : float
        Time of each part.
    """

    recompute_tokens: int
    fetch_tokens: int
    seconds: float
    recompute_s: float
    fetch_s: float


def best_split(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    link: str | Link,
    *,
    n_gpus: int = 1,
    dtype: str = "bf16",
    mfu: float = 1.0,
    n_links: int = 1,
    efficiency: float = 1.0,
) -> Split:
    """Recompute the first ``r`` tokens of a ``tokens``-token prefix while the other ``n - r`` load: the best ``r``.

    Recomputing the first ``r`` tokens is prefilling a prompt of ``r``
    tokens, ``R(r) = recompute_time(r)`` (their causal attention covers only
    themselves, ``r (r + 1) / 2`` pairs; the later tokens' keys are not
    needed); fetching the rest costs its bytes, ``T(n - r) =
    transfer_time(n - r)``. The GPUs and the link work at once, so the
    prefix is ready after ``max(R(r), T(n - r))``. ``R`` rises with ``r``
    and ``T(n - r)`` falls, so the maximum is smallest where they cross:
    the best ``r`` is the last one with ``R(r) <= T(n - r)`` or the next
    one, found by bisection. ``r = 0`` is fetching alone (:func:`transfer_time`),
    ``r = n`` recomputing alone (:func:`recompute_time`), and the split is
    never slower than either. Options as in :func:`breakeven`, plus the
    link ``efficiency`` of :func:`transfer_time`.

    Llama-3-70B, 4,096 tokens, 8 x H100 at peak, one 100 GbE link:
    recompute alone 73.6 ms, fetch alone 107.4 ms, the best split
    recomputes 2,445 tokens and fetches 1,651 in 43.3 ms.
    """
    n = _args.positive_int("tokens", tokens)

    def recompute(r: int) -> float:
        if r == 0:
            return 0.0
        return recompute_time(model, r, acc, dtype=dtype, n_gpus=n_gpus, mfu=mfu)

    def fetch(r: int) -> float:
        if r == n:
            return 0.0
        return transfer_time(
            model, n - r, link, dtype=dtype, n_links=n_links, efficiency=efficiency
        )

    lo = last_true(lambda r: recompute(r) <= fetch(r), 0, n)  # recompute(0) = 0
    candidates = {lo, min(lo + 1, n)}
    best = min(candidates, key=lambda r: (max(recompute(r), fetch(r)), r))
    r_s, f_s = recompute(best), fetch(best)
    return Split(best, n - best, max(r_s, f_s), r_s, f_s)


__getattr__ = forwarder(__name__)
