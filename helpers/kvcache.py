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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from . import _validate
from .hardware import Accelerator, Link, get_accelerator, get_link
from .llm import ModelConfig, get_model, kv_cache_bytes_per_token, linear_flops_per_token, prefill_cost
from .roofline import roofline_time

Verdict = Literal["transfer", "recompute"]


def kv_bytes(model: str | ModelConfig, tokens: int, dtype: str = "bf16") -> float:
    """Bytes of KV cache for ``tokens`` tokens of one sequence."""
    tokens = _validate.positive_int("tokens", tokens)
    return tokens * kv_cache_bytes_per_token(model, dtype)


def recompute_time(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    dtype: str = "bf16",
    n_gpus: int = 1,
    mfu: float = 1.0,
) -> float:
    """Seconds to recompute the KV cache of a ``tokens``-token prefix by prefill.

    Roofline time of :func:`helpers.llm.prefill_cost` on ``n_gpus`` devices
    (work split evenly, communication ignored) whose peak FLOP/s are scaled
    by ``mfu`` (model FLOP utilisation, in (0, 1]; 1 = the datasheet peak,
    the most favourable case for recomputing).
    """
    device = get_accelerator(acc)
    n_gpus = _validate.positive_int("n_gpus", n_gpus)
    mfu = _validate.fraction("mfu", mfu)
    cost = prefill_cost(model, tokens, dtype=dtype)
    return roofline_time(cost.flops / (n_gpus * mfu), cost.bytes / n_gpus, device, dtype)


def transfer_time(model: str | ModelConfig, tokens: int, link: str | Link, dtype: str = "bf16", n_links: int = 1) -> float:
    """Seconds to fetch the KV cache of ``tokens`` tokens: ``latency + bytes / (n_links * bandwidth)``."""
    chosen = get_link(link)
    n_links = _validate.positive_int("n_links", n_links)
    return chosen.latency + kv_bytes(model, tokens, dtype) / (n_links * chosen.bandwidth)


def reuse_bandwidth_threshold(
    model: str | ModelConfig,
    prefix_tokens: int,
    compute_flops: float,
    dtype: str = "bf16",
    coefficients: tuple[float, float] | None = None,
) -> float:
    """Least loading bandwidth (bytes/s) at which reusing a cached prefix beats recomputing it.

    Mooncake (Qin et al., FAST'25), Eq. 1-2: the prefix's KV cache must
    arrive no slower than the GPUs (``compute_flops`` FLOP/s in all) could
    recompute it, so ``B = kv_bytes(n) * compute_flops / flops(n)``.

    Parameters
    ----------
    model : str or ModelConfig
    prefix_tokens : int
        Prefix length ``n`` in tokens.
    compute_flops : float
        Aggregate FLOP/s available for recomputation (e.g. ``8 * 312e12`` for 8 A800s).
    dtype : str
        KV cache dtype.
    coefficients : (a, b), optional
        Use the paper's Eq. 1 literally, ``flops(n) = l (a n^2 d + b n d^2)``
        (the paper gives ``a = 4, b = 22`` for LLaMA3-70B). By default the
        FLOP come from :func:`helpers.llm.prefill_cost` for the model's config.
    """
    m = get_model(model)
    n = _validate.positive_int("prefix_tokens", prefix_tokens)
    compute_flops = _validate.positive("compute_flops", compute_flops)
    if coefficients is None:
        flops = prefill_cost(m, n, dtype=dtype).flops
    else:
        try:
            a, b = coefficients
        except (TypeError, ValueError) as exc:
            raise ValueError(f"coefficients must be a pair (a, b), got {coefficients!r}") from exc
        a = _validate.non_negative("coefficients[0] (a)", a)
        b = _validate.positive("coefficients[1] (b)", b)
        flops = m.n_layers * (a * n * n * m.d_model + b * n * m.d_model**2)
    return kv_bytes(m, n, dtype) * compute_flops / flops


def hidden_size_constant(model: str | ModelConfig, dtype: str = "bf16") -> float:
    """The constant ``c`` in the source text's rule *fetch when FLOP/s / bandwidth < c * d_model*.

    Producing one token's KV costs (linear layers only, i.e. short prefixes)
    ``linear_flops_per_token`` FLOP and yields ``kv_cache_bytes_per_token``
    bytes, so recomputing costs ``c * d_model`` FLOP per byte with
    ``c = linear_flops_per_token / (d_model * kv_bytes_per_token)``.
    For MHA with a 4x MLP in 16-bit, ``c = 24 d^2 / (d * 4 d) = 6``; GQA
    divides the KV bytes by the group size, multiplying ``c`` by it.
    Attention adds ``4 n d`` FLOP per token, so the true constant grows with
    the prefix length ``n``.
    """
    m = get_model(model)
    return linear_flops_per_token(m) / (m.d_model * kv_cache_bytes_per_token(m, dtype))


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
    dtype: str = "bf16",
    n_gpus: int = 1,
    n_links: int = 1,
    mfu: float = 1.0,
) -> Breakeven:
    """Compare recomputing and fetching the KV cache of a ``tokens``-token prefix."""
    recompute = recompute_time(model, tokens, acc, dtype, n_gpus, mfu)
    transfer = transfer_time(model, tokens, link, dtype, n_links)
    verdict: Verdict = "transfer" if transfer < recompute else "recompute"
    threshold = kv_bytes(model, tokens, dtype) / recompute
    return Breakeven(recompute, transfer, verdict, max(recompute, transfer) / min(recompute, transfer), threshold)


def breakeven_tokens(
    model: str | ModelConfig,
    acc: str | Accelerator,
    link: str | Link,
    dtype: str = "bf16",
    n_gpus: int = 1,
    n_links: int = 1,
    mfu: float = 1.0,
    max_tokens: int = 1 << 20,
) -> float:
    """Shortest prefix (tokens) from which fetching is at least as fast as recomputing, for every longer prefix.

    ``recompute - transfer`` is convex in the prefix length (a maximum of a
    quadratic and a linear function, minus a linear one), so the prefixes where
    recomputing wins form one interval. Fetching can also win for very short
    prefixes, whose recomputation is memory-bound (every weight is read for a
    handful of tokens); those do not count: the result is where fetching wins
    for good. Returns ``inf`` if it does not win at ``max_tokens``; 1 if it wins
    at every length.
    """
    max_tokens = _validate.positive_int("max_tokens", max_tokens)

    def margin(n: int) -> float:  # >= 0: fetching wins at n tokens
        return recompute_time(model, n, acc, dtype, n_gpus, mfu) - transfer_time(model, n, link, dtype, n_links)

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
    lo, hi = lowest, max_tokens  # margin(lo) < 0 <= margin(hi); margin rises on [lo, hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if margin(mid) >= 0:
            hi = mid
        else:
            lo = mid
    return hi
