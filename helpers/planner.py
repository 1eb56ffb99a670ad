"""Plan a deployment: layouts, pools, batch, chunk and KV tiers under TTFT and TBT targets.

:func:`plan` takes one model, one GPU type, a number of GPUs, a workload
(mean prompt and output lengths, optionally a trace for prefix reuse) and two
latency targets, and searches

* **aggregated** layouts: replicas of ``tp`` GPUs (or, for a mixture of
  experts, data-parallel attention with expert parallelism over ``ep`` GPUs)
  that run each prompt in chunks inside the decode steps (chunked prefill);
* **disaggregated** layouts: a prefill pool and a decode pool, each with its
  own layout, and the P:D split of the GPUs between them.

Every time comes from :func:`helpers.serving.measured_step_time` with
:data:`helpers.serving.STEP_TERMS`: the engine simulator's price of a step,
the sum of its kernels (:func:`helpers.steps.mixed_step`), not one roofline
over the whole step, so the decodes that ride in a chunk's step pay for their
attention; for a mixture of experts, with the all-to-alls and two-batch
overlap; the slow steps at :func:`helpers.serving.tail_context`. The TTFT
percentile comes from the M/D/1 queue of :mod:`helpers.queueing`; the KV tiers from the trace's hit curve
(:func:`helpers.tiers.trace_fractions`) and the fetch-or-recompute verdict of
:func:`helpers.tiers.tier_verdicts`; the prefill-to-decode shipment from
:func:`helpers.kvcache.transfer_time`. Nothing is fitted to the published
deployments it is compared with (``helpers/data/published/deployments.csv``).

Decode context parallelism (DCP, :func:`helpers.offload.kv_bytes_per_token_per_device`)
is not searched: it only removes copies of the KV cache that tensor
parallelism makes when it exceeds a model's KV heads, and no layout searched
here makes any (the catalog's dense models have at least 8 KV heads and
instances at most 8 GPUs; mixtures of experts run attention data-parallel),
and a tensor-parallel size that would copy them is left out.

Goodput is counted in output tokens per second per GPU, for requests that
meet both targets at p90. Costs use a price per GPU-hour the caller supplies
(the catalog carries none). Run ``python -m helpers.planner --help``.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from . import _args, inference, llm, queueing, serving
from .hardware import Accelerator, Link, accelerators, get_accelerator, get_link

__all__ = [
    "BreakdownRow",
    "Candidate",
    "DECODE_BREAKDOWN_CASE",
    "Plan",
    "MODEL_ALIASES",
    "NODE_GPUS",
    "OPERATING_POINT",
    "PD_PUBLISHED",
    "PoolStreams",
    "pool_streams",
    "decode_breakdown",
    "decode_overlap_growth",
    "DECODE_COMPUTE_CLASSES",
    "prefill_breakdown",
    "PrefillBreakdown",
    "PREFILL_BREAKDOWN_CASES",
    "PREFILL_BREAKDOWN_PROMPT",
    "SKEW_CHECK_ABLATION_DECODE_EP",
    "SKEW_CHECK_DECODE",
    "SKEW_CHECK_PREFILL",
    "SkewChecks",
    "skew_checks",
    "default_routing",
    "deployment_plan",
    "engine_flags",
    "engine_goodput",
    "load_deployments",
    "main",
    "pool_throughputs",
    "parse_layout",
    "published_comparison",
    "plan",
    "prompt_shape",
    "resolve_model",
    "usd_per_million_tokens",
]

NODE_GPUS = 8
"""GPUs per server (one NVLink domain of an HGX board); instances of up to this many use NVLink."""

TTFT_QUANTILE = 0.9
"""The percentile both targets are set on (p90)."""

MODEL_ALIASES: dict[str, str] = {
    "llama-3.1-70b": "llama-3-70b",
    "llama-3.3-70b": "llama-3-70b",
    "llama3-70b": "llama-3-70b",
    "llama-3.1-8b": "llama-3-8b",
    "llama3-8b": "llama-3-8b",
    "deepseek-r1": "deepseek-v3",
    "deepseek-v3-0324": "deepseek-v3",
    "kimi-k2-like": "deepseek-v3",
}
"""Names readers use for a catalog architecture (same shapes, different weights)."""


def resolve_model(name: str | llm.ModelConfig) -> llm.ModelConfig:
    """The catalog model for ``name`` or one of :data:`MODEL_ALIASES` (``KeyError`` naming ``model`` otherwise)."""
    if isinstance(name, llm.ModelConfig):
        return name
    key = _args.name("model", name).lower().replace("_", "-").replace(" ", "-")
    return llm.get_model(MODEL_ALIASES.get(key, key))


@dataclass(frozen=True)
class Candidate:
    """One layout at its operating point.

    Attributes
    ----------
    mode : {'aggregated', 'disaggregated'}
    prefill_gpus, decode_gpus : int
        GPUs in each pool (aggregated: all GPUs used in ``decode_gpus``, 0 in prefill).
    prefill_instances, decode_instances : int
    prefill_size, decode_size : int
        GPUs per instance of each pool.
    tp, ep : int
        Tensor- and expert-parallel sizes of the decode (or only) pool.
    dp_attention : bool
        Attention runs data-parallel (one rank per GPU holds whole sequences).
    batch : int
        Decoding sequences per step at the candidate's rate, per instance (per rank under EP).
    chunk : int
        Prompt tokens per step (aggregated; the token budget is ``batch + chunk``).
    rate : float
        Requests per second served within both targets.
    ttft_p90_s, tbt_p90_s : float
        Predicted p90 latencies at that rate.
    goodput_tokens_per_s_per_gpu : float
        Output tokens per second per GPU used. (With no rate given the
        candidates are ranked by the rate they serve on the GPUs given, not
        by this.)
    binding : str
        Which constraint decides, in words.
    gpus : int
        GPUs used.
    prefill_tp, prefill_ep : int
        The prefill pool's layout (disaggregated).
    batch_cap : int
        The largest batch the targets and memory allow (the engine's sequence cap).
    """

    mode: str
    prefill_gpus: int
    decode_gpus: int
    prefill_instances: int
    decode_instances: int
    prefill_size: int
    decode_size: int
    tp: int
    ep: int
    dp_attention: bool
    batch: int
    chunk: int
    rate: float
    ttft_p90_s: float
    tbt_p90_s: float
    goodput_tokens_per_s_per_gpu: float
    binding: str
    gpus: int
    prefill_tp: int = 1
    prefill_ep: int = 1
    batch_cap: int = 0

    @property
    def label(self) -> str:
        """Short description, e.g. ``"disaggregated 2 x TP4 : 2 x TP4"``."""

        def lay(n: int, size: int, tp: int, ep: int) -> str:
            kind = f"EP{ep}+DPattn" if ep > 1 else f"TP{tp}"
            return f"{n} x {kind}"

        if self.mode == "aggregated":
            return "aggregated " + lay(
                self.decode_instances, self.decode_size, self.tp, self.ep
            )
        return (
            "disaggregated "
            + lay(
                self.prefill_instances,
                self.prefill_size,
                self.prefill_tp,
                self.prefill_ep,
            )
            + " : "
            + lay(self.decode_instances, self.decode_size, self.tp, self.ep)
        )


@dataclass(frozen=True)
class TierRow:
    """One KV tier: capacity, the share of prompt tokens it serves, and fetch or recompute."""

    name: str
    capacity_tokens: int
    hit_share: float
    verdict: str


@dataclass(frozen=True)
class ReplayCheck:
    """A plan replayed request by request with its trace's own lengths, at the plan's rate.

    ``ttft_p90_s``: p90 over requests of the time to first token (s);
    ``tbt_p90_s``: p90 over requests of each one's TBT (s), measured as
    ``how`` says; ``how``: which simulator ran it and what its TBT is.
    """

    ttft_p90_s: float
    tbt_p90_s: float
    ttft_slo_s: float
    tbt_slo_s: float
    how: str

    @property
    def meets(self) -> bool:
        """Whether both p90s are within the plan's targets."""
        return self.ttft_p90_s <= self.ttft_slo_s and self.tbt_p90_s <= self.tbt_slo_s


@dataclass(frozen=True)
class Plan:
    """The chosen layout, why, and the ranked alternatives (see :func:`plan`)."""

    mode: str
    prefill_gpus: int
    decode_gpus: int
    tp: int
    ep: int
    batch: int
    chunk: int
    goodput_tokens_per_s_per_gpu: float
    tokens_per_gpu_hour: float
    usd_per_million_tokens: float | None
    binding: str
    engine_flags: dict[str, str]
    candidates: list[Candidate]
    hit_tokens: int
    tiers: list[TierRow] = field(default_factory=list)
    why_not_runner_up: str = ""
    replayed: ReplayCheck | None = None
    """The plan replayed with the trace's own lengths (``_replay_check``); ``None`` without a trace."""
    expert_routing: str | float = "uniform"
    """How the plan priced its experts' load (:func:`default_routing`, :data:`helpers.serving.EXPERT_ROUTING`)."""
    """The best layout of the other mode (else the next), and what holds it back."""

    @property
    def best(self) -> Candidate:
        """The winning candidate (first row of ``candidates``)."""
        return self.candidates[0]

    def best_of(self, mode: str) -> Candidate | None:
        """The highest-ranked candidate of ``mode`` (``"aggregated"`` or ``"disaggregated"``); ``None`` if none."""
        if mode not in ("aggregated", "disaggregated"):
            raise ValueError(
                f"mode must be 'aggregated' or 'disaggregated', got {mode!r}"
            )
        return next((c for c in self.candidates if c.mode == mode), None)


def usd_per_million_tokens(
    tokens_per_s: float, gpus: int, gpu_hour_usd: float
) -> float:
    """Dollars per million tokens: ``gpus * price / 3600 / tokens_per_s * 1e6``."""
    tokens_per_s = _args.positive("tokens_per_s", tokens_per_s)
    gpus = _args.positive_int("gpus", gpus)
    price = _args.positive("gpu_hour_usd", gpu_hour_usd)
    return gpus * price / 3600 / tokens_per_s * 1e6


# ---------------------------------------------------------------------------
# Pools
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Work:
    model: llm.ModelConfig
    acc: Accelerator
    dtype: str
    isl: int
    osl: int
    hit: int
    context_std: float
    ttft: float
    tbt: float
    network: Link
    # each prompt's uncached tokens over the mean, in equal-probability bins
    # (a trace's spread; one bin of 1.0 without a trace: every prompt the mean)
    prompt_shape: tuple[float, ...] = (1.0,)
    # how the router loads the busiest expert-parallel GPU (MoE models)
    routing: str | float = "uniform"

    def uncached(self) -> list[int]:
        """Uncached prompt tokens of each bin of :attr:`prompt_shape` (the mean is ``isl - hit``)."""
        mean = self.isl - self.hit
        return [max(1, round(mean * f)) for f in self.prompt_shape]


def _hit_tokens(isl: int, share: float) -> int:
    """Cached prompt tokens of a mean prompt of ``isl`` tokens at a hit ``share``; at least one token is computed."""
    return min(isl - 1, int(isl * share))


def _work(
    m: llm.ModelConfig,
    acc: Accelerator,
    dtype: str,
    isl: int,
    osl: int,
    ttft: float,
    tbt: float,
    network: Link,
    *,
    hit_share: float = 0.0,
    routing: str | float = "uniform",
) -> _Work:
    """The planner's workload: every request the mean one, the decode context spread by its output alone.

    A request's context grows evenly through its ``osl`` output tokens, so
    its standard deviation over a decode is ``osl / sqrt(12)`` (a uniform
    spread); a trace replaces it with the trace's own spread.
    """
    return _Work(
        m,
        acc,
        dtype,
        isl,
        osl,
        _hit_tokens(isl, hit_share),
        osl / math.sqrt(12),
        ttft,
        tbt,
        network,
        routing=routing,
    )


PROMPT_BINS = 100
"""Equal-probability bins a trace's prompt lengths are summarised in (the p90 falls on a bin edge)."""


def prompt_shape(uncached_tokens: Any, *, bins: int = PROMPT_BINS) -> tuple[float, ...]:
    """A trace's uncached prompt lengths as ``bins`` equal-count bin means over the overall mean.

    The planner's TTFT queue prices each bin's prefill (the trace gives the
    spread; ``input_len`` and the cache's hits give the mean). Sorted; the
    values average 1 up to the remainder of an uneven split.
    """
    import numpy as np

    u = np.sort(np.asarray(uncached_tokens, dtype=float))
    if u.size == 0 or np.any(u <= 0):
        raise ValueError("uncached_tokens: need one or more positive token counts")
    bins = _args.positive_int("bins", bins)
    parts = np.array_split(u, min(bins, u.size))
    mean = float(u.mean())
    return tuple(float(part.mean()) / mean for part in parts)


def _sizes(w: _Work, n_gpus: int) -> list[tuple[int, int]]:
    """(tp, ep) instance layouts whose weights fit."""
    out = []
    if w.model.moe is None:
        for tp in (1, 2, 4, 8):
            if tp > 1 and (w.model.mla is not None or tp > w.model.n_kv_heads):
                continue  # TP would copy KV heads (or an MLA latent): not priced here
            if tp <= n_gpus and inference.weights_fit(
                w.model, w.acc, n_gpus=tp, dtype=w.dtype
            ):
                out.append((tp, 1))
    else:
        ep = NODE_GPUS
        while ep <= n_gpus:
            if (
                serving.moe_rank_kv_bytes(
                    w.model, w.acc, ep=ep, dtype=w.dtype, spares=_spares(w, ep)
                )
                > 0
            ):
                out.append((1, ep))
            ep *= 2
        if (
            n_gpus not in [e for _, e in out]
            and n_gpus >= NODE_GPUS
            and n_gpus % NODE_GPUS == 0
        ):
            if (
                serving.moe_rank_kv_bytes(
                    w.model, w.acc, ep=n_gpus, dtype=w.dtype, spares=_spares(w, n_gpus)
                )
                > 0
            ):
                out.append((1, n_gpus))
    return out


def default_routing(
    model: str | llm.ModelConfig, *, routing: str | float | None = None
) -> str | float:
    """``routing``, or when ``None`` the router the planner assumes for ``model``.

    ``"eplb"`` for a model with DeepSeek-V3's router (the only router whose
    balance under EPLB is published: :data:`helpers.papers.SGLANG_EPLB_BALANCEDNESS`),
    ``"uniform"`` for any other model, dense ones included.

    >>> default_routing("deepseek-v3"), default_routing("qwen3-235b-a22b")
    ('eplb', 'uniform')
    """
    if routing is not None:
        return routing
    m = resolve_model(model)
    same = m.moe is not None and m.moe == llm.get_model("deepseek-v3").moe
    return "eplb" if same else "uniform"


def _spares(w: _Work, ep: int) -> int:
    """EPLB's spare expert copies over ``ep`` GPUs when the plan runs the balancer (they take memory)."""
    return serving.routing_spares(w.model, ep, w.routing)


def _opts(w: _Work, tp: int, ep: int) -> dict[str, Any]:
    return {
        "dtype": w.dtype,
        "tp": tp,
        "ep": ep,
        "ep_link": w.network,
        "terms": serving.STEP_TERMS,
        "routing": w.routing,
    }


def _prefill_service(w: _Work, tp: int, ep: int) -> tuple[float, int]:
    """(seconds the mean prompt takes, prompts served at once) on one prefill instance."""
    t = serving.measured_step_time(
        w.model,
        0,
        w.acc,
        batch=0,
        chunk=w.isl - w.hit,
        prefix=w.hit,
        **_opts(w, tp, ep),
    )
    return t, ep  # under EP every rank prefills its own prompt


def _prefill_services(w: _Work, tp: int, ep: int) -> list[float]:
    """Seconds each bin of the prompt spread takes to prefill on one prefill instance (one bin: the mean prompt)."""
    return [
        serving.measured_step_time(
            w.model, 0, w.acc, batch=0, chunk=u, prefix=w.hit, **_opts(w, tp, ep)
        )
        for u in w.uncached()
    ]


def _transfer_s(w: _Work, size: int) -> float:
    """Seconds to ship one prompt's KV cache to the decode pool over one NIC per GPU."""
    from .kvcache import transfer_time

    return transfer_time(w.model, w.isl, w.network, dtype=w.dtype) / max(
        1, min(size, NODE_GPUS) if w.model.moe is None else 1
    )


def _prefill_pool(w: _Work, tp: int, ep: int) -> tuple[float, float, str]:
    """(requests/s one prefill instance serves within the TTFT target, p90 TTFT there, binding).

    The queue is M/G/1 over the prompt spread (M/D/1 without a trace); the
    instance as one server of service ``S / parallel``, each request's TTFT
    its wait plus its own prefill plus the KV shipment.
    """
    services = _prefill_services(w, tp, ep)
    parallel = ep
    ship = _transfer_s(w, tp * ep)
    budget = w.ttft - ship
    alone = queueing.mg1_sojourn_quantile(
        services, 0.0, TTFT_QUANTILE, servers=parallel
    )
    if budget <= alone:
        why = (
            "link bandwidth (KV shipment)"
            if ship > alone
            else "TTFT target (one prefill)"
            if len(services) == 1
            else "TTFT target (the longest prompts' prefill)"
        )
        return 0.0, alone + ship, why
    rate = queueing.mg1_max_rate(
        services, budget, quantile=TTFT_QUANTILE, servers=parallel
    )
    rho = rate * sum(services) / len(services) / parallel
    return rate, w.ttft, f"TTFT target (prefill queue at {rho:.0%} load)"


def _decode_pool(w: _Work, tp: int, ep: int) -> tuple[float, int, float, str]:
    """(requests/s one decode instance serves within the TBT target, batch per rank, step s, binding)."""
    context = inference.mean_decode_context(w.isl, w.osl)
    batch, step, limited = serving.measured_max_batch(
        w.model,
        context,
        w.acc,
        tbt_s=w.tbt,
        context_std=w.context_std,
        **_opts(w, tp, ep),
    )
    if batch == 0:
        return (
            0.0,
            0,
            step,
            "TBT target (one sequence)" if limited == "tbt" else "KV capacity",
        )
    ranks = ep if ep > 1 else 1
    rate = ranks * batch / step / w.osl
    why = (
        f"TBT target at batch {batch}"
        if limited == "tbt"
        else f"KV capacity at batch {batch}"
    )
    return rate, batch, step, why


def _aggregated(
    w: _Work, tp: int, ep: int
) -> tuple[float, int, int, float, float, str]:
    """Best (rate, batch, chunk, ttft, tbt, binding) of one aggregated instance."""
    best = (0.0, 0, 0, math.inf, math.inf, "TBT target (prompt chunks)")
    ranks = ep if ep > 1 else 1
    context = inference.mean_decode_context(w.isl, w.osl)
    uncached = w.isl - w.hit
    for chunk in (256, 512, 1024, 2048, 4096, 8192, 16384):
        chunk = min(chunk, uncached)
        lo, hi = 1, 1

        # largest batch whose chunk-carrying step meets the TBT target
        def step(b: int, c: int = chunk) -> float:
            ctx = serving.tail_context(context, w.context_std, b)
            return serving.measured_step_time(
                w.model,
                ctx,
                w.acc,
                batch=b,
                chunk=c,
                prefix=max(0, uncached - c) // 2 + w.hit,
                **_opts(w, tp, ep),
            )

        if step(1) > w.tbt:
            continue
        if w.model.moe is None:
            cap = inference.max_decode_batch(
                w.model, context + w.osl, w.acc, n_gpus=tp, dtype=w.dtype
            )
        else:
            per = llm.kv_cache_bytes_per_token(w.model, dtype=w.dtype) * (
                context + w.osl
            )
            cap = int(
                serving.moe_rank_kv_bytes(
                    w.model, w.acc, ep=ep, dtype=w.dtype, spares=_spares(w, ep)
                )
                // per
            )
        if cap < 1:
            continue
        hi = 2
        while hi <= cap and step(hi) <= w.tbt:
            hi *= 2
        hi = min(hi, cap + 1)
        lo = max(1, hi // 2)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if step(mid) <= w.tbt:
                lo = mid
            else:
                hi = mid
        b = lo
        steps = math.ceil(uncached / chunk)
        prefix = max(0, uncached - chunk) // 2 + w.hit

        def state(
            lam: float,
            chunk: int = chunk,
            prefix: int = prefix,
            b: int = b,
            steps: int = steps,
        ) -> tuple[int, float, float, float] | None:
            """(batch, step, slow step, p90 TTFT) of one rank serving ``lam`` requests/s; None if it cannot."""
            found = _smallest_batch(
                w, tp, ep, lam * w.osl, chunk=chunk, prefix=prefix, cap=b
            )
            if found is None:
                return None
            b_op, t_op, t_slow = found
            ttft = _chunked_ttft(w, tp, ep, b_op, chunk, t_op, lam)
            if not math.isfinite(ttft):
                return None
            return b_op, t_op, t_slow, ttft

        full = _smallest_batch(w, tp, ep, 0.0, chunk=chunk, prefix=prefix, cap=b)
        if full is None:
            continue
        t_full = serving.measured_step_time(
            w.model,
            context,
            w.acc,
            batch=b,
            chunk=chunk,
            prefix=prefix,
            **_opts(w, tp, ep),
        )
        lam_lo, lam_hi = 0.0, b / t_full / w.osl  # the most the cap batch emits
        # the highest load whose p90 TTFT meets the target, to 1 part in 2**24
        # of the search interval
        for _ in range(24):
            lam_mid = (lam_lo + lam_hi) / 2
            st = state(lam_mid)
            if st is not None and st[3] <= w.ttft:
                lam_lo = lam_mid
            else:
                lam_hi = lam_mid
        st = state(lam_lo) if lam_lo > 0 else None
        if st is None:
            continue
        b_op, _, t_slow, ttft = st
        rate = ranks * lam_lo
        if b_op >= b:
            why = (
                f"TBT target at batch {b} (chunk {chunk})"
                if b < cap
                else f"KV capacity at batch {b}"
            )
        else:
            why = f"TTFT target (chunked prefill, {steps} steps of {chunk} tokens)"
            if (
                len(w.prompt_shape) > 1
            ):  # a trace: its long prompts bind, not the mean one
                long = w.uncached()[int(TTFT_QUANTILE * len(w.prompt_shape))]
                why = (
                    f"TTFT target (chunked prefill, {math.ceil(long / chunk)} steps of "
                    f"{chunk} tokens for the p90 prompt)"
                )
        if rate > best[0]:
            best = (rate, b, chunk, ttft, t_slow, why)
    return best


# ---------------------------------------------------------------------------
# Search
# ---------------------------------------------------------------------------


def _smallest_batch(
    w: _Work,
    tp: int,
    ep: int,
    tokens_per_s: float,
    chunk: int = 0,
    prefix: int = 0,
    cap: int | None = None,
) -> tuple[int, float, float] | None:
    """Smallest batch (per instance, or per rank) whose steps emit ``tokens_per_s`` output tokens.

    Returns ``(batch, mean step s, slow step s)``, the slow step at
    :func:`helpers.serving.tail_context`; ``None`` if no batch up to the
    memory limit keeps up.
    """
    context = inference.mean_decode_context(w.isl, w.osl)

    def step(b: int, ctx: float) -> float:
        return serving.measured_step_time(
            w.model, ctx, w.acc, batch=b, chunk=chunk, prefix=prefix, **_opts(w, tp, ep)
        )

    def enough(b: int) -> bool:
        return b / step(b, context) >= tokens_per_s * (1 - 1e-9)

    if cap is not None:
        pass
    elif w.model.moe is None or ep == 1:
        cap = inference.max_decode_batch(
            w.model, context + w.osl, w.acc, n_gpus=tp, dtype=w.dtype
        )
    else:
        per = llm.kv_cache_bytes_per_token(w.model, dtype=w.dtype) * (context + w.osl)
        cap = int(
            serving.moe_rank_kv_bytes(
                w.model, w.acc, ep=ep, dtype=w.dtype, spares=_spares(w, ep)
            )
            // per
        )
    if cap < 1 or not enough(
        cap
    ):  # throughput grows with the batch: if the largest fails, all do
        return None
    lo, hi = 0, 1
    while not enough(hi):
        lo, hi = hi, min(2 * hi, cap)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    b = hi
    return b, step(b, context), step(b, serving.tail_context(context, w.context_std, b))


def _chunked_ttft(
    w: _Work, tp: int, ep: int, batch: int, chunk: int, step_s: float, lam: float
) -> float:
    """p90 TTFT (s) of a co-located rank taking ``lam`` prompts/s in chunks, one per step.

    ``step_s``: the step that carries a chunk of the mean prompt at
    ``batch``. Each prompt takes as many steps as it has chunks; the rank's
    queue of prompts is M/G/1 over the prompt spread (M/D/1 without a
    trace); ``inf`` at saturation. With a spread, a prompt's chunk steps are
    priced at its own mean prefix: a chunk attends to every token before it,
    so a long prompt's chunks cost more than the mean prompt's (the step's
    time is linear in the prefix; its slope is priced from a second step).
    """
    uncached = w.uncached()
    if len(uncached) == 1:
        services = [math.ceil(uncached[0] / chunk) * step_s]
    else:
        mean = w.isl - w.hit
        at = max(0, mean - chunk) // 2 + w.hit  # the prefix step_s is priced at
        far = at + 16 * chunk
        # the step is linear in the prefix, so any second prefix gives its slope
        slope = (
            serving.measured_step_time(
                w.model,
                inference.mean_decode_context(w.isl, w.osl),
                w.acc,
                batch=batch,
                chunk=chunk,
                prefix=far,
                **_opts(w, tp, ep),
            )
            - step_s
        ) / (far - at)
        services = []
        for u in uncached:
            n = math.ceil(u / chunk)
            own = w.hit + (n - 1) * chunk / 2  # the mean prefix of its chunks
            services.append(n * max(step_s, step_s + slope * (own - at)))
    return queueing.mg1_sojourn_quantile(services, lam, TTFT_QUANTILE)


def _at_rate(w: _Work, c: Candidate, rate: float) -> tuple[int, float, float]:
    """(batch, p90 TTFT s, p90 TBT s) of candidate ``c`` serving ``rate`` requests/s."""
    q = TTFT_QUANTILE
    uncached = w.isl - w.hit
    if c.mode == "aggregated":
        ranks = c.ep if c.ep > 1 else 1
        per_rank = rate / c.decode_instances / ranks
        prefix = max(0, uncached - c.chunk) // 2 + w.hit
        # within the batch the search found for the TBT target: a step's
        # throughput is not monotone in its batch (tiles), so an uncapped search
        # can land on a larger batch whose slow step misses the target
        found = _smallest_batch(
            w,
            c.tp,
            c.ep,
            per_rank * w.osl,
            chunk=c.chunk,
            prefix=prefix,
            cap=c.batch_cap or c.batch,
        )
        if found is None:
            return c.batch, math.inf, math.inf
        b, t, t_slow = found
        steps = [math.ceil(u / c.chunk) for u in w.uncached()]
        rho = per_rank * t * sum(steps) / len(steps)  # share of steps carrying a chunk
        ttft = _chunked_ttft(w, c.tp, c.ep, b, c.chunk, t, per_rank)
        if not math.isfinite(ttft):
            return b, math.inf, t_slow
        if (
            rho < 1 - q
        ):  # fewer than one step in ten carries a chunk: the slow interval is a plain step
            plain = _smallest_batch(
                w, c.tp, c.ep, per_rank * w.osl, cap=c.batch_cap or c.batch
            )
            t_slow = plain[2] if plain is not None else t_slow
        return b, ttft, t_slow
    services = _prefill_services(w, c.prefill_tp, c.prefill_ep)
    parallel = c.prefill_ep
    ship = _transfer_s(w, c.prefill_size)
    ttft = ship + queueing.mg1_sojourn_quantile(
        services, rate / c.prefill_instances, q, servers=parallel
    )
    if not math.isfinite(ttft):
        return c.batch, math.inf, math.inf
    ranks = c.ep if c.ep > 1 else 1
    found = _smallest_batch(
        w,
        c.tp,
        c.ep,
        rate / c.decode_instances / ranks * w.osl,
        cap=c.batch_cap or c.batch,
    )
    if found is None:
        return c.batch, ttft, math.inf
    b, _, t_slow = found
    return b, ttft, t_slow


def _candidates(w: _Work, n_gpus: int, rate: float | None) -> list[Candidate]:
    out: list[Candidate] = []
    layouts = _sizes(w, n_gpus)
    for tp, ep in layouts:
        size = tp * ep
        r1, b, chunk, ttft, tbt, why = _aggregated(w, tp, ep)
        if r1 <= 0:
            continue
        if rate is None:
            n = n_gpus // size
        else:
            n = math.ceil(rate / r1)
            if n * size > n_gpus:
                continue
        served = n * r1 if rate is None else rate
        out.append(
            Candidate(
                "aggregated",
                0,
                n * size,
                0,
                n,
                0,
                size,
                tp,
                ep,
                ep > 1,
                b,
                chunk,
                served,
                ttft,
                tbt,
                served * w.osl / (n * size),
                why,
                n * size,
            )
        )
    pre = {lay: _prefill_pool(w, *lay) for lay in layouts}
    dec = {lay: _decode_pool(w, *lay) for lay in layouts}
    for (ptp, pep), (rp, ttft, pwhy) in pre.items():
        if rp <= 0:
            continue
        psize = ptp * pep
        for (dtp, dep), (rd, b, step, dwhy) in dec.items():
            if rd <= 0:
                continue
            dsize = dtp * dep
            best: Candidate | None = None
            for n_p in range(1, n_gpus // psize + 1):
                left = n_gpus - n_p * psize
                if rate is None:
                    n_d = left // dsize
                    if n_d < 1:
                        break
                else:
                    n_p = math.ceil(rate / rp)
                    n_d = math.ceil(rate / rd)
                    if n_p * psize + n_d * dsize > n_gpus:
                        break
                cap_p, cap_d = n_p * rp, n_d * rd
                served = min(cap_p, cap_d) if rate is None else rate
                gpus = n_p * psize + n_d * dsize
                why = pwhy if cap_p < cap_d else dwhy
                cand = Candidate(
                    "disaggregated",
                    n_p * psize,
                    n_d * dsize,
                    n_p,
                    n_d,
                    psize,
                    dsize,
                    dtp,
                    dep,
                    dep > 1,
                    b,
                    0,
                    served,
                    ttft,
                    w.tbt if "TBT" in dwhy else step,
                    served * w.osl / gpus,
                    why,
                    gpus,
                    prefill_tp=ptp,
                    prefill_ep=pep,
                )
                if best is None or _rank(cand, rate) < _rank(best, rate):
                    best = cand
                if rate is not None:
                    break
            if best is not None:
                out.append(best)
    # every row's latencies at the rate it serves: its own capacity, or the requested rate
    timed = []
    for c in out:
        b, ttft, tbt = _at_rate(w, c, c.rate)
        timed.append(
            replace(c, batch=b, batch_cap=c.batch, ttft_p90_s=ttft, tbt_p90_s=tbt)
        )
    # a layout whose p90s miss a target at the rate it serves is no plan: a
    # step's time is not monotone in its batch (two-batch overlap starts at a
    # threshold; tiles), so a pool sized at one batch can run slower at the
    # smaller batch a lower load gives it
    slack = 1 + 1e-9
    out = [
        c
        for c in timed
        if c.ttft_p90_s <= w.ttft * slack and c.tbt_p90_s <= w.tbt * slack
    ]
    out.sort(key=lambda c: _rank(c, rate))
    return out


def _rank(c: Candidate, rate: float | None) -> tuple[float, float]:
    """Sort key of a candidate (smaller first).

    No rate given: the most the GPUs serve, so the highest request rate
    first (a layout that leaves a GPU idle wins only by serving more), then
    the higher goodput per GPU used. A rate given: every candidate serves it,
    so the fewest GPUs, that is the highest goodput per GPU used, first.
    """
    if rate is None:
        return (-c.rate, -c.goodput_tokens_per_s_per_gpu)
    return (-c.goodput_tokens_per_s_per_gpu, c.gpus)


def _tier_plan(w: _Work, trace: Any, n_gpus: int) -> tuple[int, list[TierRow], float]:
    """Hit tokens per request from the trace's reuse through HBM, host DRAM, a remote pool and SSD.

    Also returns the spread (standard deviation) of the trace's decode
    contexts, prompt plus half the output, for the tail headroom.
    """
    from . import tiers as tiers_mod
    from .traces import Trace, load_trace

    tr = trace if isinstance(trace, Trace) else load_trace(trace)
    nodes = max(1, n_gpus // NODE_GPUS)
    hbm = max(1e9, 0.1 * n_gpus * w.acc.memory_capacity)
    hierarchy = tiers_mod.example_hierarchy(
        w.acc,
        n_gpus=min(n_gpus, NODE_GPUS),
        hbm_bytes=hbm,
        dram_bytes=max(1.5e12 * nodes, 2 * hbm),
        pool_bytes=max(1.5e12 * nodes * 4, 4 * hbm),
        ssd_bytes=max(60e12 * nodes, 8 * hbm),
    )
    fractions = tiers_mod.trace_fractions(tr, hierarchy, w.model, dtype=w.dtype)
    prefix = max(1, int(w.isl * float(sum(fractions[:-1]))))
    verdicts = tiers_mod.tier_verdicts(
        w.model, prefix, hierarchy, w.acc, dtype=w.dtype, n_gpus=min(n_gpus, NODE_GPUS)
    )
    rows = []
    hit_share = 0.0
    for tier, share, v in zip(hierarchy, fractions, verdicts):
        rows.append(
            TierRow(
                tier.name,
                tier.capacity_tokens(w.model, dtype=w.dtype),
                float(share),
                v.verdict,
            )
        )
        if v.verdict == "transfer":
            hit_share += float(share)
    spread = float((tr.input_lengths + tr.output_lengths / 2).std())
    return min(w.isl - 1, int(w.isl * hit_share)), rows, spread


def plan(
    model: str | llm.ModelConfig,
    acc: str | Accelerator,
    *,
    n_gpus: int,
    input_len: int,
    output_len: int,
    ttft_slo_s: float,
    tbt_slo_s: float,
    rate: float | None = None,
    trace: Any = None,
    kv_tiers: bool = True,
    hit_rate: float | None = None,
    gpu_hour_usd: float | None = None,
    network: str | Link | None = None,
    dtype: str = "bf16",
    engine: str = "vllm",
    expert_routing: str | float | None = None,
) -> Plan:
    """The best layout of ``n_gpus`` GPUs for a workload under p90 TTFT and TBT targets.

    Parameters
    ----------
    model : str or ModelConfig
        A catalog model or one of :data:`MODEL_ALIASES`.
    acc : str or Accelerator
        GPU type (catalog name or alias).
    n_gpus : int
        GPUs available (>= 1).
    input_len, output_len : int
        Mean prompt and output tokens of a request (>= 1).
    ttft_slo_s, tbt_slo_s : float
        p90 targets, seconds (> 0).
    rate : float, optional
        Requests per second to serve; ``None``: the most the GPUs serve within the targets.
    trace : Trace, path or name, optional
        A request trace: its prefix reuse sizes the KV tiers, the spread of its
        prompts prices the TTFT queue (M/G/1, :func:`helpers.queueing.mg1_sojourn_quantile`)
        and its contexts the slow decode step; the plan is replayed with it.
    kv_tiers : bool
        With a trace, ``False`` plans without KV tiers (every prompt prefilled
        in full), to see what the tiers buy on the same trace.
    hit_rate : float, optional
        A measured share of prompt tokens served from cache (instead of a trace), in [0, 1).
    gpu_hour_usd : float, optional
        Price of one GPU-hour; the catalog carries none.
    network : str or Link, optional
        The link between servers (KV shipment, expert all-to-alls, remote tier); default ConnectX-7.
    dtype : str
        Weights and KV dtype.
    engine : str
        Engine whose flags come first in ``Plan.engine_flags`` (``"vllm"``, ``"sglang"``, ``"dynamo"``).
    expert_routing : str, float or None
        MoE models: how the router loads the busiest expert-parallel GPU
        (:func:`helpers.serving.expert_skew`): ``"eplb"`` (DeepSeek's load
        balancer, as SGLang and DeepSeek serve; its spare experts take
        memory), ``"none"`` (no balancer), ``"uniform"`` (uniform routing, the
        optimistic floor) or a measured balancedness over GPUs in (0, 1], the
        step's random spread included. ``None``: :func:`default_routing`.

    Raises
    ------
    ValueError, KeyError
        Naming the bad parameter; ``ValueError`` too when no layout meets the targets.
    """
    m = resolve_model(model)
    device = get_accelerator(acc)
    n_gpus = _args.positive_int("n_gpus", n_gpus)
    isl = _args.positive_int("input_len", input_len)
    osl = _args.positive_int("output_len", output_len)
    ttft = _args.positive("ttft_slo_s", ttft_slo_s)
    tbt = _args.positive("tbt_slo_s", tbt_slo_s)
    if rate is not None:
        rate = _args.positive("rate", rate)
    if gpu_hour_usd is not None:
        gpu_hour_usd = _args.positive("gpu_hour_usd", gpu_hour_usd)
    if engine not in ENGINES:
        raise ValueError(f"engine: unknown {engine!r}; choose one of {list(ENGINES)}")
    if trace is not None and hit_rate is not None:
        raise ValueError("hit_rate: give a trace or a hit rate, not both")
    link = get_link(network if network is not None else "cx7")
    w = _work(
        m,
        device,
        dtype,
        isl,
        osl,
        ttft,
        tbt,
        link,
        routing=serving.checked_routing(
            default_routing(m, routing=expert_routing), name="expert_routing"
        ),
    )
    tier_rows: list[TierRow] = []
    hits: Any = None
    if trace is not None:
        from .traces import Trace, load_trace

        trace = trace if isinstance(trace, Trace) else load_trace(trace)
        hit, tier_rows, spread = _tier_plan(w, trace, n_gpus)
        if not kv_tiers:
            hit, tier_rows = 0, []
        hits = _trace_hits(trace, tier_rows)
        uncached = trace.input_lengths - (0 if hits is None else hits)
        w = replace(
            w,
            hit=hit,
            context_std=spread,
            prompt_shape=prompt_shape(uncached.clip(min=1)),
        )
    elif hit_rate is not None:
        share = _args.non_negative("hit_rate", hit_rate)
        if share >= 1:
            raise ValueError(f"hit_rate must be below 1, got {hit_rate}")
        w = replace(w, hit=_hit_tokens(isl, share))
    if not _sizes(w, n_gpus):
        raise ValueError(
            f"n_gpus: {m.name}'s weights do not fit in {n_gpus} x {device.name} in {dtype}"
        )
    cands = _candidates(w, n_gpus, rate)
    if not cands and w.model.moe is None:
        sizes = _sizes(w, n_gpus)
        if all(
            inference.max_decode_batch(m, isl + osl, device, n_gpus=tp, dtype=dtype)
            == 0
            for tp, _ in sizes
        ):
            raise ValueError(
                f"input_len: one request of {isl} + {osl} tokens needs more KV cache than any instance "
                f"of up to {max(tp for tp, _ in sizes)} x {device.name} holds beside the weights"
            )
    if not cands:
        what = f"{rate} requests/s" if rate is not None else "any load"
        raise ValueError(
            f"no layout of {n_gpus} x {device.name} serves {what} within TTFT {ttft} s and TBT {tbt} s"
        )
    best = cands[0]
    tokens_s = best.goodput_tokens_per_s_per_gpu * best.gpus
    usd = (
        usd_per_million_tokens(tokens_s, best.gpus, gpu_hour_usd)
        if gpu_hour_usd
        else None
    )
    why = ""
    other = [c for c in cands if c.mode != best.mode] or cands[1:]
    if other:
        r = other[0]
        # three significant figures, so that two close rates of a small model read apart
        if (
            rate is None
            and r.gpus < best.gpus
            and r.goodput_tokens_per_s_per_gpu >= best.goodput_tokens_per_s_per_gpu
        ):
            # more per GPU, on fewer of them: less in all, which is what was asked for
            why = (
                f"{r.label} serves more per GPU on fewer GPUs, {_sig(r.rate)} requests/s in all "
                f"against {_sig(best.rate)}. It is held back by: {r.binding}"
            )
        else:
            why = (
                f"{r.label} serves {_sig(r.goodput_tokens_per_s_per_gpu)} output tokens/s per GPU against "
                f"{_sig(best.goodput_tokens_per_s_per_gpu)}. It is held back by: {r.binding}"
            )
    flags = engine_flags(best, m, dtype=dtype, routing=w.routing)
    ordered = {engine: flags[engine], **{k: v for k, v in flags.items() if k != engine}}
    checked = _replay_check(w, best, trace, hits) if trace is not None else None
    return Plan(
        best.mode,
        best.prefill_gpus,
        best.decode_gpus,
        best.tp,
        best.ep,
        best.batch,
        best.chunk,
        best.goodput_tokens_per_s_per_gpu,
        best.goodput_tokens_per_s_per_gpu * 3600,
        usd,
        best.binding,
        ordered,
        cands,
        w.hit,
        tier_rows,
        why,
        checked,
        w.routing,
    )


def replay_candidate(
    model: str | llm.ModelConfig,
    acc: str | Accelerator,
    cand: Candidate,
    trace: Any,
    *,
    ttft_slo_s: float,
    tbt_slo_s: float,
    hit_tokens: Any = None,
    dtype: str = "bf16",
) -> ReplayCheck:
    """One ranked layout replayed request by request with ``trace``'s lengths, at its own rate.

    A split layout runs through :func:`helpers.pd_replay.replay` (TBT: each
    request's slowest 10 % of intervals, as Mooncake measures it); a
    co-located one through :func:`helpers.engine.serve` with the flags the
    planner writes for it (TBT: each request's mean interval), one replica
    fed the whole trace at its even share of the rate. ``hit_tokens``:
    each request's cached prompt tokens, skipped by its prefill (default
    none). A mixture of experts raises: its expert-parallel step is priced at
    an operating point, not replayed.
    """
    import numpy as np

    from . import engine, pd_replay
    from .traces import Trace, load_trace

    m = resolve_model(model)
    if m.moe is not None:
        raise ValueError(
            f"model: {m.name} is a mixture of experts, which is not replayed"
        )
    tr = trace if isinstance(trace, Trace) else load_trace(trace)
    hits = (
        np.zeros(len(tr.input_lengths), dtype=np.int64)
        if hit_tokens is None
        else np.asarray(hit_tokens, dtype=np.int64)
    )
    if cand.mode == "disaggregated":
        r = pd_replay.replay(
            m,
            acc,
            tr,
            prefill_nodes=cand.prefill_instances,
            decode_nodes=cand.decode_instances,
            rate=cand.rate,
            tp=cand.prefill_size,
            decode_tp=cand.decode_size,
            dtype=dtype,
            hit_tokens=hits,
        )
        return ReplayCheck(
            float(np.quantile(r.ttft_s, TTFT_QUANTILE)),
            float(np.nanquantile(r.tbt_s, TTFT_QUANTILE)),
            ttft_slo_s,
            tbt_slo_s,
            "trace replay of the split pools; TBT is each request's slowest 10 % of intervals",
        )
    cap = cand.batch_cap or cand.batch
    # Load split evenly over the replicas: each sees the whole trace's mix of
    # lengths and hits at its share of the rate (not the trace's first 1/N,
    # whose cache is colder than the rest).
    s = engine.serve(
        m,
        acc,
        tp=cand.tp,
        weight_dtype=dtype,
        input_len=tr.input_lengths.tolist(),
        output_len=tr.output_lengths.tolist(),
        rate=cand.rate / cand.decode_instances,
        token_budget=cap + cand.chunk,  # the flags the planner writes
        max_seqs=cap,
        requests=len(tr.input_lengths),
        cached_len=hits.tolist(),
    )
    return ReplayCheck(
        s.ttft_p90_s,
        s.tpot_p90_s,
        ttft_slo_s,
        tbt_slo_s,
        "engine simulator, co-located; TBT is each request's mean interval",
    )


def _sig(x: float) -> str:
    """``x`` to three significant figures, with thousands separators and no exponent."""
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:#.3g}"


def _trace_hits(trace: Any, tiers: Sequence[TierRow]) -> Any:
    """Each request's cached prompt tokens in an LRU cache the size of the paying tiers (``None``: none pay)."""
    from .cachesim import simulate_prefix_cache

    paying = sum(t.capacity_tokens for t in tiers if t.verdict == "transfer")
    return simulate_prefix_cache(trace, paying).hit_tokens if paying else None


def _replay_check(
    w: _Work, best: Candidate, trace: Any, hits: Any
) -> ReplayCheck | None:
    """``best`` replayed (:func:`replay_candidate`) with each request's ``hits``; ``None`` for experts."""
    if w.model.moe is not None:
        return None
    return replay_candidate(
        w.model,
        w.acc,
        best,
        trace,
        ttft_slo_s=w.ttft,
        tbt_slo_s=w.tbt,
        hit_tokens=hits,
        dtype=w.dtype,
    )


# ---------------------------------------------------------------------------
# Engine flags
# ---------------------------------------------------------------------------

ENGINES = ("vllm", "sglang", "dynamo")
"""Engines :func:`engine_flags` writes flags for."""

ENGINE_SOURCES: dict[str, str] = {
    "vllm": "docs.vllm.ai engine arguments, disaggregated prefilling, expert parallel deployment and EPLBConfig "
    "(stable docs read Dec 2026; "
    "chunked prefill and prefix caching are on by default in the V1 engine)",
    "sglang": "docs.sglang.io server arguments and PD disaggregation (read Dec 2026)",
    "dynamo": "NVIDIA Dynamo's TensorRT-LLM worker, python3 -m dynamo.trtllm, as its launch scripts in "
    "ai-dynamo/dynamo spell it (Dynamo docs v1.5 to v1.7), and TensorRT-LLM 1.4.0rc4 TorchLlmArgs and its "
    "wide-EP docs for the --extra-engine-args YAML (read Dec 2026)",
}
"""Where each engine's flag names were read, with the version (see ``appendix/engines.ipynb``)."""


def engine_flags(
    cand: Candidate,
    model: llm.ModelConfig,
    *,
    dtype: str = "bf16",
    routing: str | float = "uniform",
) -> dict[str, str]:
    """Command-line flags (or config keys) that realise ``cand`` in vLLM, SGLang and Dynamo/TensorRT-LLM.

    ``routing``: how the plan priced its experts' load; under ``"eplb"``
    each engine's load balancer is switched on with
    :func:`helpers.serving.routing_spares` spare expert copies. Across servers
    (EP > 8) the all-to-alls are priced as DeepEP's kernels, so vLLM and
    SGLang are asked for them: the throughput kernels in a prefill pool,
    the low-latency ones in a decode pool and in a co-located instance (the
    model prices a mixed step's all-to-alls so: SGLang's blog says its two
    DeepEP modes cannot share one data-parallel-attention group without
    disaggregation); TensorRT-LLM gets its wide-EP MoE backend.
    """

    def deepep(ep: int, role: str | None) -> tuple[str, str]:
        """(vLLM, SGLang) flags choosing DeepEP's kernels, or empty within a server."""
        if ep <= NODE_GPUS:
            return "", ""
        if role == "prefill":
            return "deepep_high_throughput", "normal"
        return "deepep_low_latency", "low_latency"

    kv = " --kv-cache-dtype fp8" if dtype == "fp8" else ""
    cap = cand.batch_cap or cand.batch
    budget = cap + cand.chunk

    def vllm_one(tp: int, ep: int, role: str | None, batch: int) -> str:
        par = (
            f"--data-parallel-size {ep} --enable-expert-parallel"
            if ep > 1
            else f"--tensor-parallel-size {tp}"
        )
        s = f"vllm serve <{model.name}> {par}{kv} --max-num-seqs {max(batch, 1)}"
        backend = deepep(ep, role)[0]
        if backend:
            s += f" --all2all-backend {backend}"
        r = serving.routing_spares(model, ep, routing)
        if r:
            s += f" --enable-eplb --eplb-config '{{\"num_redundant_experts\":{r}}}'"
        if cand.mode == "aggregated":
            s += f" --max-num-batched-tokens {budget}"
        if role:
            s += ' --kv-transfer-config \'{"kv_connector":"NixlConnector","kv_role":"kv_both"}\''
        return s

    def sglang_one(tp: int, ep: int, role: str | None, batch: int) -> str:
        par = (
            f"--tp-size {ep} --dp-size {ep} --enable-dp-attention --ep-size {ep}"
            if ep > 1
            else f"--tp-size {tp}"
        )
        kv_sglang = " --kv-cache-dtype fp8_e4m3" if dtype == "fp8" else ""
        s = f"python -m sglang.launch_server --model-path <{model.name}> {par}{kv_sglang}"
        s += f" --max-running-requests {max(batch * max(ep, 1), 1)}"
        mode = deepep(ep, role)[1]
        if mode:
            s += f" --moe-a2a-backend deepep --deepep-mode {mode}"
        r = serving.routing_spares(model, ep, routing)
        if r:
            s += f" --enable-eplb --ep-num-redundant-experts {r}"
        if cand.mode == "aggregated":
            s += f" --chunked-prefill-size {cand.chunk}"
        if role:
            s += f" --disaggregation-mode {role} --disaggregation-transfer-backend mooncake"
        return s

    def trt_one(tp: int, ep: int, role: str | None, batch: int) -> str:
        tokens = budget if cand.mode == "aggregated" else 8192
        s = f"python3 -m dynamo.trtllm --model-path <{model.name}> --tensor-parallel-size {max(tp, ep)}"
        if ep > 1:
            s += " --enable-attention-dp"
        s += f" --max-batch-size {max(batch, 1)} --max-num-tokens {tokens}"
        if role:
            s += f" --disaggregation-mode {role}"
        spares = serving.routing_spares(model, ep, routing)
        slots = model.moe.n_routed + spares if spares and model.moe is not None else 0
        balancer = (
            f", load_balancer: {{num_slots: {slots}, layer_updates_per_iter: 1}}"
            if slots
            else ""
        )
        keys = [
            f"moe_expert_parallel_size: {ep}" if ep > 1 else "",
            f"moe_config: {{backend: WIDEEP{balancer}}}"
            if ep > NODE_GPUS or slots
            else "",
            "enable_chunked_prefill: true" if cand.mode == "aggregated" else "",
            "cache_transceiver_config: {backend: DEFAULT}" if role else "",
        ]
        extra = "; ".join(k for k in keys if k)
        return s + (f" --extra-engine-args <yaml: {extra}>" if extra else "")

    out = {}
    for name, fn in (("vllm", vllm_one), ("sglang", sglang_one), ("dynamo", trt_one)):
        if cand.mode == "aggregated":
            out[name] = f"{cand.decode_instances} x [{fn(cand.tp, cand.ep, None, cap)}]"
        else:
            p = fn(cand.prefill_tp, cand.prefill_ep, "prefill", 1)
            d = fn(cand.tp, cand.ep, "decode", cap)
            out[name] = (
                f"prefill {cand.prefill_instances} x [{p}]\ndecode {cand.decode_instances} x [{d}]"
            )
    return out


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _routing_words(routing: str | float) -> str:
    """The router a plan assumed, in words."""
    words = {
        "eplb": "DeepSeek's load balancer (EPLB) as SGLang measured and simulated it",
        "none": "no load balancer, as SGLang simulated DeepSeek-V3's router",
        "uniform": "uniform routing, the optimistic floor",
    }
    return (
        words[routing] if isinstance(routing, str) else f"a balancedness of {routing:g}"
    )


def _report(p: Plan, args: argparse.Namespace) -> str:
    b = p.best
    lines = [
        f"Plan for {args.model} on {args.gpus} x {args.gpu}, {args.isl} in / {args.osl} out, "
        f"TTFT p90 <= {args.ttft} s, TBT p90 <= {args.tbt} s",
        f"  layout      : {b.label}  ({b.gpus} GPUs used)",
        f"  batch/chunk : {b.batch} sequences per step"
        + (f", chunk {b.chunk} tokens (budget {b.batch + b.chunk})" if b.chunk else ""),
        f"  goodput     : {p.goodput_tokens_per_s_per_gpu:,.0f} output tokens/s per GPU "
        f"({p.tokens_per_gpu_hour / 1e6:,.2f} M per GPU-hour), {b.rate:,.2f} requests/s",
        f"  p90 TTFT/TBT: {b.ttft_p90_s:.2f} s / {b.tbt_p90_s * 1e3:.0f} ms",
        f"  binding     : {p.binding}",
    ]
    if p.usd_per_million_tokens is not None:
        unsupported = p.replayed is not None and not p.replayed.meets
        lines.append(
            f"  cost        : ${p.usd_per_million_tokens:,.3f} per million output tokens"
            + (" (at a rate its replay misses; see the WARNING)" if unsupported else "")
        )
    if p.tiers:
        lines.append(
            "  KV tiers    : "
            + "; ".join(f"{t.name} {t.hit_share:.0%} ({t.verdict})" for t in p.tiers)
        )
    if p.why_not_runner_up:
        lines.append(f"  runner-up   : {p.why_not_runner_up}")
    if p.replayed is None and getattr(args, "trace", None) is not None:
        lines.append(
            "  replayed    : not replayed (a mixture of experts: its expert-parallel step is priced "
            "at an operating point, not replayed)"
        )
    if b.ep > 1 or b.prefill_ep > 1:
        lines.append(
            "  NOTE        : expert-parallel steps are priced from kernels timed alone, with "
            f"{_routing_words(p.expert_routing)} (--expert-routing); beside published deployments the planner's MoE "
            "pools still come out optimistic, every class of kernel running longer in a serving step "
            "(Chapter 13, 'Against published deployments')"
        )
    if getattr(args, "trace", None) is None:
        lines.append(
            "  NOTE        : every request is taken as the mean one; percentile targets on prompts "
            "of unequal length need --trace (Chapter 13, 'A second opinion')"
        )
    means: tuple[float, float] | None = getattr(args, "trace_means", None)
    other_means = means is not None and (
        abs(args.isl / means[0] - 1) > 0.1 or abs(args.osl / means[1] - 1) > 0.1
    )
    if other_means and means is not None:
        lines.append(
            f"  NOTE        : the trace's mean request is {means[0]:,.0f} in / {means[1]:,.0f} out; the "
            "plan takes the trace's spread around --isl and --osl, the replay the trace as it is "
            "(leave --isl and --osl out to take the trace's means)"
        )
    if p.replayed is not None:
        r = p.replayed
        lines.append(
            f"  replayed    : with the trace's own lengths, p90 TTFT {r.ttft_p90_s:.2f} s / "
            f"TBT {r.tbt_p90_s * 1e3:.0f} ms ({r.how})"
        )
        if not r.meets:
            lines.append(
                "  WARNING     : the replay misses a target"
                + (
                    ": it runs the trace's own lengths, which the plan was not sized for (see NOTE)"
                    if other_means
                    else ". The planner's queue prices the trace's prompt spread in closed form "
                    "(M/G/1), the replay runs it request by request; ask for a lower --rate, or "
                    "see Chapter 13, 'A second opinion'"
                )
            )
    lines.append("Engine flags:")
    for name, flags in p.engine_flags.items():
        lines.append(f"  [{name}] ({ENGINE_SOURCES[name]})")
        lines.extend("    " + line for line in flags.splitlines())
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m helpers.planner",
        description="Plan a deployment: layout, pools, batch and KV tiers under p90 TTFT and TBT targets.",
    )
    ap.add_argument(
        "--model", required=True, help="catalog model, e.g. llama-3-70b, deepseek-v3"
    )
    ap.add_argument("--gpu", required=True, help="catalog GPU, e.g. H100, H200, A100")
    ap.add_argument("--gpus", type=int, required=True, help="GPUs available")
    ap.add_argument(
        "--isl", type=int, help="mean prompt tokens (default with --trace: the trace's)"
    )
    ap.add_argument(
        "--osl", type=int, help="mean output tokens (default with --trace: the trace's)"
    )
    ap.add_argument("--ttft", type=float, required=True, help="p90 TTFT target, s")
    ap.add_argument("--tbt", type=float, required=True, help="p90 TBT target, s")
    ap.add_argument(
        "--rate", type=float, help="requests/s to serve (default: the most)"
    )
    ap.add_argument(
        "--trace", help="trace file or name (conversation, synthetic, tiny)"
    )
    ap.add_argument(
        "--hit-rate", type=float, help="share of prompt tokens served from cache"
    )
    ap.add_argument(
        "--no-kv-tiers",
        action="store_true",
        help="with --trace: plan without KV tiers, every prompt prefilled in full",
    )
    ap.add_argument("--price", type=float, help="USD per GPU-hour")
    ap.add_argument("--dtype", default="bf16", help="weights and KV dtype (bf16, fp8)")
    ap.add_argument(
        "--network", help="link between servers (catalog name, default cx7)"
    )
    ap.add_argument(
        "--engine",
        default="vllm",
        choices=ENGINES,
        help="engine whose flags are printed first (all are printed)",
    )
    ap.add_argument(
        "--expert-routing",
        help="MoE: eplb, none (no load balancer), uniform, or a measured balancedness over GPUs in (0, 1] "
        "(default: eplb for DeepSeek-V3's router, uniform for other models)",
    )
    return ap


def _routing_arg(text: str | None) -> str | float | None:
    """``--expert-routing`` as :func:`plan` takes it: a name, or a number given as text."""
    if text is None or text in serving.EXPERT_ROUTING:
        return text
    try:
        return float(text)
    except ValueError:
        return text  # plan() names the choices


def _option_for(message: str) -> str:
    for key, opt in (
        ("routing", "--expert-routing"),
        ("(--isl)", "--isl"),
        ("(--osl)", "--osl"),
        ("no layout", "--ttft/--tbt"),
        ("accelerator", "--gpu"),
        ("model", "--model"),
        ("n_gpus", "--gpus"),
        ("input_len", "--isl"),
        ("output_len", "--osl"),
        ("ttft", "--ttft"),
        ("tbt", "--tbt"),
        ("hit_rate", "--hit-rate"),
        ("rate", "--rate"),
        ("gpu_hour_usd", "--price"),
        ("link", "--network"),
        ("trace", "--trace"),
        ("dtype", "--dtype"),
    ):
        if key in message:
            return opt
    return "input"


def main(*, argv: Sequence[str] | None = None) -> int:
    """Command-line entry: print the plan, the runner-up and the engine flags; 2 on bad input."""
    args = _parser().parse_args(argv)
    try:
        if args.network is not None:
            get_link(args.network)
        args.trace_means = None
        if args.no_kv_tiers and args.trace is None:
            raise ValueError(
                "trace: --no-kv-tiers plans a trace without its tiers; give a --trace"
            )
        if args.trace is not None:
            from .traces import load_trace

            try:
                tr = load_trace(args.trace)
            except (KeyError, ValueError, FileNotFoundError) as err:
                msg = (
                    str(err.args[0])
                    if isinstance(err, KeyError) and err.args
                    else str(err)
                )
                print(f"error: --trace: {msg}", file=sys.stderr)
                return 2
            args.trace_means = (
                float(tr.input_lengths.mean()),
                float(tr.output_lengths.mean()),
            )
            if args.isl is None:
                args.isl = max(1, round(args.trace_means[0]))
            if args.osl is None:
                args.osl = max(1, round(args.trace_means[1]))
        for opt, value in (("--isl", args.isl), ("--osl", args.osl)):
            if value is None:
                what = "prompt" if opt == "--isl" else "output"
                raise ValueError(
                    f"give the mean {what} tokens ({opt}), or a --trace to take them from"
                )
        p = plan(
            args.model,
            args.gpu,
            n_gpus=args.gpus,
            input_len=args.isl,
            output_len=args.osl,
            ttft_slo_s=args.ttft,
            tbt_slo_s=args.tbt,
            rate=args.rate,
            trace=args.trace,
            kv_tiers=not args.no_kv_tiers,
            hit_rate=args.hit_rate,
            gpu_hour_usd=args.price,
            network=args.network,
            dtype=args.dtype,
            engine=args.engine,
            expert_routing=_routing_arg(args.expert_routing),
        )
    except (KeyError, ValueError, TypeError, FileNotFoundError) as err:
        msg = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
        if "accelerator" in msg and "choose one of" not in msg:
            msg += f" (catalog: {', '.join(a.name for a in accelerators())})"
        opt = _option_for(msg)
        head, sep, rest = msg.partition(": ")
        if sep and " " not in head and _option_for(head) == opt:
            msg = rest  # the option already names the parameter
        print(f"error: {opt}: {msg}", file=sys.stderr)
        return 2
    try:
        print(_report(p, args))
    except BrokenPipeError:  # the reader closed the pipe (e.g. `| head`)
        pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


def engine_goodput(
    model: str | llm.ModelConfig,
    acc: str | Accelerator,
    *,
    input_len: int,
    output_len: int,
    ttft_slo_s: float,
    tbt_slo_s: float,
    tp: int = 1,
    replicas: int = 1,
    engine: str = "vllm",
    requests: int = 300,
    rate_max: float = 64.0,
) -> float:
    """Highest Poisson rate (requests/s) at which :func:`helpers.engine.serve` meets both p90 targets.

    A second opinion on a co-located plan: the engine simulator runs the
    scheduler request by request, where :func:`plan` uses formulas. Found by
    bisection on the rate (10 halvings between 0 and ``rate_max``); 0 if even
    the lowest rate tried misses a target. TBT is judged on the simulator's p90
    TPOT.
    """
    from . import engine as engine_mod

    ttft = _args.positive("ttft_slo_s", ttft_slo_s)
    tbt = _args.positive("tbt_slo_s", tbt_slo_s)
    lo, hi = 0.0, _args.positive("rate_max", rate_max)

    def meets(rate: float) -> bool:
        r = engine_mod.serve(
            model,
            acc,
            tp=tp,
            replicas=replicas,
            input_len=input_len,
            output_len=output_len,
            rate=rate,
            requests=requests,
            engine=engine,
        )
        return r.ttft_p90_s <= ttft and r.tpot_p90_s <= tbt

    for _ in range(10):
        mid = (lo + hi) / 2
        if meets(mid):
            lo = mid
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------------------
# Published deployments: the planner beside them
# ---------------------------------------------------------------------------

DEPLOYMENTS_CSV = "deployments.csv"
"""File in ``helpers/data/published/`` with the published deployments, one quantity per row."""


def parse_layout(text: str) -> tuple[int, int]:
    """``(tp, ep)`` of a deployments-file layout: ``"TP8"`` is (8, 1), ``"EP32+DPattn"`` is (1, 32)."""
    if not re.fullmatch(r"(TP|EP)\d+(\+\w+)?", text):
        raise ValueError(f"text: a layout is TP<n> or EP<n>[+...], got {text!r}")
    if text.startswith("EP"):
        return 1, int(text[2:].split("+")[0])
    return int(text[2:]), 1


def load_deployments() -> list[dict[str, str]]:
    """Rows of ``helpers/data/published/deployments.csv`` (each with its source)."""
    import csv
    from pathlib import Path

    path = Path(__file__).resolve().parent / "data" / "published" / DEPLOYMENTS_CSV
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


PD_PUBLISHED = ("yes", "derived")
"""Values of the deployments file's ``pd_published`` column for which a P:D split is judged.

``yes``: the source states the split as its choice (Mooncake's best ratio,
DistServe's two prefill GPUs per decode GPU); ``derived``: the source states
the quantities that fix it (DeepSeek's daily input and output tokens over its
per-node prefill and decode rates); ``no``: the source measured each pool on
its own (SGLang's blog, DeepSeek's profile), so its GPU counts are not a split.
"""


OPERATING_POINT = ("decode_batch_per_gpu", "decode_kv_len", "prefill_tokens_per_gpu")
"""Columns of the deployments file that carry a source's own operating point (empty where unstated)."""


def _operating_point(row: dict[str, str]) -> dict[str, int]:
    """The operating point a deployment's source states (column -> value), unstated ones left out."""
    out = {}
    for key in OPERATING_POINT:
        text = row.get(key, "").strip()
        if text:
            out[key] = _args.positive_int(key, int(text))
    return out


def deployment_plan(row: dict[str, str], *, trace: Any = None) -> Plan:
    """The planner's own plan, from scratch, for a published deployment's GPUs, workload and targets.

    ``row``: one row of :func:`load_deployments` (its model, GPU, GPU count,
    mean lengths, cache hit rate, precision and the two targets); the
    published layout is not used. ``trace``: plan from the source's trace
    instead (its spread and its own reuse, not the row's hit rate).
    """
    return plan(
        resolve_model(row["model"]),
        get_accelerator(row["gpu"]),
        n_gpus=int(row["n_gpus"]),
        input_len=int(row["input_len"]),
        output_len=int(row["output_len"]),
        ttft_slo_s=float(row["ttft_slo_s"]),
        tbt_slo_s=float(row["tbt_slo_s"]),
        hit_rate=None if trace is not None else float(row["hit_rate"]) or None,
        trace=trace,
        dtype=row["dtype"],
        expert_routing=_row_routing(row),
    )


def _row_routing(row: dict[str, str]) -> str:
    """The router a deployment's source ran (``expert_routing`` column; empty for dense models: uniform)."""
    return row.get("expert_routing", "").strip() or "uniform"


def pool_throughputs(row: dict[str, str]) -> dict[str, Any]:
    """Predicted per-GPU pool throughputs at a published deployment's own layouts.

    ``prefill_input_tokens_per_s_per_gpu``: prompt tokens (cached ones
    included, as DeepSeek counts them) one prefill GPU processes per second at
    full load, one prompt per rank at a time unless the source states its
    tokens per GPU per forward (:data:`OPERATING_POINT`);
    ``decode_output_tokens_per_s_per_gpu``: output tokens one decode GPU emits
    per second at the source's stated batch and KV length, or else at the
    largest batch meeting the TBT target;
    ``requests_per_s_per_gpu``: what the published P:D split serves within both
    targets; ``pd_ratio``: the planner's best split on the same GPUs (``plan``,
    its best :class:`Candidate`); ``pd_ratio_at_operating_point``: the split
    the two pool rates imply; ``prefill_requests_per_s_per_instance``: the
    requests/s one prefill instance of the published layout serves within the
    p90 TTFT target (the planner's queue, every prompt the mean prompt).
    """
    m = resolve_model(row["model"])
    acc = get_accelerator(row["gpu"])
    isl, osl = int(row["input_len"]), int(row["output_len"])
    w = _work(
        m,
        acc,
        row["dtype"],
        isl,
        osl,
        float(row["ttft_slo_s"]),
        float(row["tbt_slo_s"]),
        get_link("cx7"),
        hit_share=float(row["hit_rate"]),
        routing=serving.checked_routing(_row_routing(row)),
    )
    hit = w.hit
    ptp, pep = parse_layout(row["prefill_layout"])
    dtp, dep = parse_layout(row["decode_layout"])
    service, parallel = _prefill_service(w, ptp, pep)
    prefill_tps = parallel / service * isl / (ptp * pep)
    rp, _, _ = _prefill_pool(w, ptp, pep)
    rd, _, _, _ = _decode_pool(w, dtp, dep)
    decode_tps = rd * osl / (dtp * dep)
    stated = _operating_point(row)
    if "prefill_tokens_per_gpu" in stated and pep > 1:
        # the source's own forward: that many prompt tokens per rank at once
        prompts = max(1, stated["prefill_tokens_per_gpu"] // isl)
        t = serving.measured_step_time(
            m,
            0,
            acc,
            batch=0,
            chunk=prompts * (isl - hit),
            prefix=hit,
            prompts=prompts,
            **_opts(w, ptp, pep),
        )
        prefill_tps = prompts * isl / t
    if "decode_batch_per_gpu" in stated and dep > 1:
        # the source's own decode batch and KV length, not the planner's cap
        b = stated["decode_batch_per_gpu"]
        ctx = stated.get("decode_kv_len", inference.mean_decode_context(isl, osl))
        decode_tps = b / serving.measured_step_time(
            m, ctx, acc, batch=b, **_opts(w, dtp, dep)
        )
    pg, dg = int(row["prefill_gpus"]), int(row["decode_gpus"])
    n_p, n_d = pg // (ptp * pep), dg // (dtp * dep)
    best = deployment_plan(row).best
    return {
        "prefill_input_tokens_per_s_per_gpu": prefill_tps,
        "decode_output_tokens_per_s_per_gpu": decode_tps,
        "prefill_requests_per_s_per_instance": rp,
        "requests_per_s_per_gpu": min(n_p * rp, n_d * rd) / (pg + dg),
        # no split to compare when the plan keeps both phases together
        "pd_ratio": best.prefill_gpus / best.decode_gpus
        if best.mode == "disaggregated"
        else math.nan,
        # the split the two pool rates above imply: GPU-seconds of prefill per
        # request over GPU-seconds of decode per request
        "pd_ratio_at_operating_point": (isl / prefill_tps) / (osl / decode_tps),
        "mode": best.mode,
        "plan": best,
    }


@dataclass(frozen=True)
class PoolStreams:
    """A published expert-parallel pool's step beside the model's two streams (seconds).

    The measured step is the tokens one GPU holds per step over the published
    rate; the overlap bounds are :func:`helpers.serving.overlap_streams` at
    SGLang's measured two-batch-overlap speedup (:data:`helpers.serving.TBO_SPEEDUP`).
    """

    case: str
    decode: bool
    tokens: int
    """Tokens one GPU holds per step (the source's operating point)."""
    step_s: float
    no_overlap_s: float
    low_s: float
    high_s: float
    model: serving.MoeStreams
    """The model's two streams of the same step (its step: ``model.step_s``), the busiest GPU loaded
    as the source's router loads it (the deployments file's ``expert_routing``)."""


def pool_streams(case: str) -> PoolStreams:
    """The two-streams diagnostic of one published MoE pool row of the deployments file."""
    rows = {r["case"]: r for r in load_deployments()}
    if case not in rows:
        raise KeyError(f"case: unknown {case!r}; choose one of {sorted(rows)}")
    row = rows[case]
    decode = row["quantity"].startswith("decode")
    _, ep = parse_layout(row["decode_layout"] if decode else row["prefill_layout"])
    stated = _operating_point(row)
    if ep <= NODE_GPUS or not stated:
        raise ValueError(
            f"case: {case!r} is not an expert-parallel pool with a stated operating point"
        )
    if decode:
        tokens = stated["decode_batch_per_gpu"]
        model = serving.moe_streams(
            row["model"],
            stated["decode_kv_len"],
            row["gpu"],
            batch=tokens,
            dtype=row["dtype"],
            ep=ep,
            routing=_row_routing(row),
        )
    else:
        isl = int(row["input_len"])
        prompts = max(1, stated["prefill_tokens_per_gpu"] // isl)
        tokens = prompts * isl
        model = serving.moe_streams(
            row["model"],
            0,
            row["gpu"],
            batch=0,
            chunk=tokens,
            prompts=prompts,
            dtype=row["dtype"],
            ep=ep,
            routing=_row_routing(row),
        )
    step = tokens / float(row["value"])
    total, low, high = serving.overlap_streams(
        step, serving.TBO_SPEEDUP["decode" if decode else "prefill"]
    )
    return PoolStreams(case, decode, tokens, step, total, low, high, model)


@dataclass(frozen=True)
class BreakdownRow:
    """One class of kernels of a published expert-parallel decode step beside the model's price (seconds a step)."""

    kernels: str
    """The class, in words."""
    measured_s: float
    """The published time of the class, all layers."""
    model_s: float
    """The model's time of the same kernels (:func:`helpers.serving.moe_streams`: its compute parts and all-to-alls)."""


def _compute_rows(
    ms: Mapping[str, float],
    parts: Mapping[str, float],
    layers: float,
    *,
    rest: tuple[str, float],
) -> list[BreakdownRow]:
    """The compute stream's classes of a published breakdown beside the model's parts.

    ``ms``: the figure's ms per layer; ``layers``: what turns them into
    seconds a step; ``rest``: the label and the figure's ms per layer of
    everything on the compute stream but the matrix multiplies and attention.
    """
    return [
        BreakdownRow(
            "matrix multiplies, experts included",
            (ms["moe"] + ms["gemm"]) * layers,
            parts["gemm"],
        ),
        BreakdownRow(
            "attention core", ms["attention_core"] * layers, parts["attention"]
        ),
        BreakdownRow(
            rest[0],
            rest[1] * layers,
            sum(v for k, v in parts.items() if k not in ("gemm", "attention")),
        ),
    ]


DECODE_BREAKDOWN_CASE = "sglang-96h100-decode"
"""The deployments-file row whose decode step :func:`decode_breakdown` takes apart."""


def decode_breakdown(*, run: str = "no_tbo_256") -> list[BreakdownRow]:
    """SGLang's decode step without two-batch overlap, class by class, beside the model's.

    ``run``: ``"no_tbo_256"`` (256 sequences per GPU, the batch of the
    published decode row) or ``"no_tbo_128"``, from
    :data:`helpers.papers.SGLANG_DECODE_BREAKDOWN_MS_PER_LAYER`. Without
    overlap the kernels run one after another, so each class's time is its
    own and the classes add up to the step; the overlapped run interleaves
    the two streams and is not taken apart here. Rows: the matrix multiplies
    (experts included), the attention core, everything else on the compute
    stream (elementwise kernels, LM head, sampling, launch gaps), the
    all-to-alls, and the step. The model prices the same rank at the row's
    KV length and expert-parallel size, its busiest GPU loaded as the row's
    router loads it (EPLB, as SGLang's decode runs were set up). The figure's times are scaled to 256
    tokens per GPU; the 128-token run's are halved back to one of its steps.
    """
    from .papers import SGLANG_DECODE_BREAKDOWN_MS_PER_LAYER as runs

    if run not in runs or not run.startswith("no_tbo"):
        choices = sorted(r for r in runs if r.startswith("no_tbo"))
        raise ValueError(f"run: unknown {run!r}; choose one of {choices}")
    row = next(r for r in load_deployments() if r["case"] == DECODE_BREAKDOWN_CASE)
    m = resolve_model(row["model"])
    _, ep = parse_layout(row["decode_layout"])
    batch = int(run.rsplit("_", 1)[1])
    context = int(row["decode_kv_len"])
    streams = serving.moe_streams(
        m,
        context,
        row["gpu"],
        batch=batch,
        dtype=row["dtype"],
        ep=ep,
        routing=_row_routing(row),
    )
    parts = streams.compute_parts
    ms = runs[run]
    # ms per layer, scaled to 256 tokens per GPU -> s per step of this batch
    layers = m.n_layers / 1e3 * batch / 256
    out = _compute_rows(
        ms,
        parts,
        layers,
        rest=("the rest of the compute stream", ms["other"] + ms["launch"]),
    )
    out += [
        BreakdownRow(
            "all-to-alls (dispatch and combine)",
            (ms["dispatch"] + ms["combine"]) * layers,
            streams.alltoall_s,
        ),
    ]
    out.append(
        BreakdownRow(
            "step",
            ms["overall"] * layers,
            streams.compute_s + streams.alltoall_s,
        )
    )
    return out


DECODE_COMPUTE_CLASSES = ("moe", "gemm", "attention_core", "other", "launch")
"""The compute-stream classes of the decode breakdown (:data:`helpers.papers.SGLANG_DECODE_BREAKDOWN_MS_PER_LAYER`)."""


def decode_overlap_growth() -> tuple[float, float]:
    """How much longer the compute of SGLang's decode step runs with two-batch overlap than without: (measured, model).

    Two-batch overlap runs each kernel on half the batch, which reads every
    weight once per half. Measured: the compute classes of the figure's
    overlapped run at 256 tokens per GPU over those of the unoverlapped run
    (:data:`DECODE_COMPUTE_CLASSES`, launch gaps included; both scaled to 256
    tokens per GPU). The unoverlapped 128-token run set beside the 256-token
    one, which isolates the half batch from the overlap, gives 1.32 against
    this 1.35.
    Model: twice the compute of a 128-sequence rank over that of a
    256-sequence one (:func:`helpers.serving.moe_streams`, the row's KV
    length and expert-parallel size), all-to-alls left out on both sides.
    """
    from .papers import SGLANG_DECODE_BREAKDOWN_MS_PER_LAYER as runs

    row = next(r for r in load_deployments() if r["case"] == DECODE_BREAKDOWN_CASE)
    _, ep = parse_layout(row["decode_layout"])
    batch = int(row["decode_batch_per_gpu"])
    context = int(row["decode_kv_len"])
    measured = sum(runs["tbo_256"][k] for k in DECODE_COMPUTE_CLASSES) / sum(
        runs["no_tbo_256"][k] for k in DECODE_COMPUTE_CLASSES
    )
    whole, half = (
        serving.moe_streams(
            row["model"], context, row["gpu"], batch=b, dtype=row["dtype"], ep=ep
        ).compute_s
        for b in (batch, batch // 2)
    )
    return measured, 2 * half / whole


PREFILL_BREAKDOWN_CASES: Mapping[str, str] = MappingProxyType(
    {
        "deepseek_profile": "deepseek-v3-profile-prefill",
        "sglang": "sglang-96h100-prefill",
        "sglang_perfect_eplb": "sglang-96h100-prefill",
    }
)
"""The deployments-file row whose GPU and layout each run of :func:`prefill_breakdown` takes."""

PREFILL_BREAKDOWN_PROMPT = 4096
"""Prompt length (tokens) of the runs in :data:`helpers.papers.SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER`."""


@dataclass(frozen=True)
class PrefillBreakdown:
    """A published expert-parallel prefill step, class by class, beside the model's (seconds a step)."""

    run: str
    """The run of :data:`helpers.papers.SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER`."""
    gpu: str
    """The GPU it ran on."""
    rows: list[BreakdownRow]
    """The compute stream's classes (they add up to the step, idle time
    included), then the all-to-alls beside them (model: one copy per server
    reached, DeepEP's prefill kernels), then the step (model: as the planner
    prices it)."""
    streams: serving.MoeStreams
    """The model's two streams of the same step (:func:`helpers.serving.moe_streams`)."""
    alltoall_unit_test_s: float
    """DeepEP's dispatch and combine timed alone at the same shapes (SGLang's unit tests; GPU unstated), a step."""
    expert_gemm_s: float
    """The run's expert GEMMs, a step (part of the first row)."""
    expert_gemm_unit_test_s: float
    """The expert GEMMs timed alone at the same shapes (the same unit tests), a step."""


def prefill_breakdown(*, run: str = "deepseek_profile") -> PrefillBreakdown:
    """An overlapped expert-parallel prefill step of DeepSeek-V3, class by class, beside the model's.

    ``run``: ``"deepseek_profile"`` (H800), ``"sglang"`` or
    ``"sglang_perfect_eplb"`` (H100), from
    :data:`helpers.papers.SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER`: EP32,
    16,384 tokens per GPU in prompts of :data:`PREFILL_BREAKDOWN_PROMPT`
    tokens, two-batch overlap on. The compute stream's rows are the matrix
    multiplies (experts included), the attention core, the rest of the
    compute kernels, and the stream's idle time (model: the priced step less
    the priced compute), so they add up to the step on both sides. The
    measured all-to-alls are the dispatch and combine cores, the barriers
    (waiting for other ranks) left out.
    """
    from .papers import SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER as runs

    if run not in PREFILL_BREAKDOWN_CASES:
        raise ValueError(
            f"run: unknown {run!r}; choose one of {sorted(PREFILL_BREAKDOWN_CASES)}"
        )
    row = next(
        r for r in load_deployments() if r["case"] == PREFILL_BREAKDOWN_CASES[run]
    )
    m = resolve_model(row["model"])
    _, ep = parse_layout(row["prefill_layout"])
    tokens = int(row["prefill_tokens_per_gpu"])
    prompts = max(1, tokens // PREFILL_BREAKDOWN_PROMPT)
    streams = serving.moe_streams(
        m,
        0,
        row["gpu"],
        batch=0,
        chunk=prompts * PREFILL_BREAKDOWN_PROMPT,
        prompts=prompts,
        dtype=row["dtype"],
        ep=ep,
    )
    parts = streams.compute_parts
    ms = runs[run]
    layers = m.n_layers / 1e3  # ms per layer -> s per step
    out = _compute_rows(
        ms, parts, layers, rest=("the rest of the compute kernels", ms["other"])
    )
    out += [
        BreakdownRow(
            "compute stream idle",
            ms["compute_bubble"] * layers,
            streams.step_s - streams.compute_s,
        ),
        BreakdownRow(
            "all-to-alls (dispatch and combine)",
            (ms["dispatch"] + ms["combine"]) * layers,
            streams.alltoall_s,
        ),
        BreakdownRow("step", ms["overall"] * layers, streams.step_s),
    ]
    unit = runs["unit_test"]
    return PrefillBreakdown(
        run,
        row["gpu"],
        out,
        streams,
        (unit["dispatch"] + unit["combine"]) * layers,
        ms["moe"] * layers,
        unit["moe"] * layers,
    )


SKEW_CHECK_DECODE: Mapping[str, Any] = MappingProxyType(
    {"context": 2000, "batch": 256, "dtype": "fp8", "ep": 72}
)
"""SGLang's decode operating point (H100): 256 sequences per GPU at KV length 2,000, EP72."""

SKEW_CHECK_PREFILL: Mapping[str, Any] = MappingProxyType(
    {"context": 0, "batch": 0, "chunk": 16_384, "prompts": 4, "dtype": "fp8", "ep": 32}
)
"""SGLang's prefill operating point (H100): 16,384 tokens per GPU in 4,096-token prompts, EP32."""

SKEW_CHECK_ABLATION_DECODE_EP = 64
"""GPUs the decode ablation is priced at: without spares DeepSeek-V3's 256 experts do not spread
evenly over SGLang's 72, and the blog does not state the ablation's size."""


@dataclass(frozen=True)
class SkewChecks:
    """The expert-load skew (:func:`helpers.serving.expert_skew`) beside SGLang's measurements.

    Pairs are ``(measured, model)``. Ratios are step times, balancer off over on.
    """

    decode_balance: float
    """SGLang's decode run with EPLB, as its throughput sees it (:func:`helpers.serving.eplb_decode_balance`)."""
    decode_uniform_balance: float
    """What uniform routing gives over the same expert slots."""
    simulated_decode_balance: float
    """The simulation's balancedness at the same 72 GPUs with EPLB, which decode does not use."""
    ablation: Mapping[str, tuple[float, float]]
    """``"prefill"``, ``"decode"``: throughput with the balancer over without (measured), step ratio (model)."""
    profiles: tuple[float, float, float]
    """SGLang's two prefill profiles, perfect balance over EPLB placement: measured, the model
    with the EPLB curve, the model with the no-balancer curve (each over uniform routing)."""
    elasticity: tuple[float, float]
    """Per cent of decode throughput lost per per cent of balancedness (log-log slope) over the case
    study's steps; the model's takes the run's per-expert balancedness as per GPU."""
    breakdown_alltoall_ratio: float
    """SGLang's prefill all-to-alls (dispatch and combine cores), EPLB placement over perfect balance."""
    breakdown_idle_ms: tuple[float, float]
    """Its compute stream's idle time, ms a layer: EPLB placement, perfect balance."""
    breakdown_gemm_longer: bool
    """Whether the profiled GPU's expert GEMMs took longer with EPLB placement than with perfect balance."""


def skew_checks() -> SkewChecks:
    """The expert-load skew set beside the SGLang blog's measurements that do not calibrate it.

    The simulation (:data:`helpers.papers.SGLANG_EPLB_BALANCEDNESS`) and the
    decode case study's balancedness calibrate; the EPLB ablation
    (:data:`helpers.papers.SGLANG_EPLB_SPEEDUP`), the two prefill profiles
    (:data:`helpers.papers.SGLANG_PREFILL_PROFILE_TOKENS_PER_S_PER_NODE`)
    and the case study's throughput judge. DeepSeek-V3 on H100 at
    :data:`SKEW_CHECK_DECODE` and :data:`SKEW_CHECK_PREFILL`.
    """
    import numpy as np

    from . import papers

    def step(point: Mapping[str, Any], routing: str | float, **change: Any) -> float:
        kw = {**point, **change}
        context = kw.pop("context")
        return serving.measured_step_time(
            "deepseek-v3", context, "H100", routing=routing, **kw
        )

    def slope(x: Any, y: Any) -> float:
        return float(np.polyfit(np.log(x), np.log(y), 1)[0])

    case = np.array(papers.SGLANG_EPLB_CASE_STUDY)
    b, t = case[:, 1], case[:, 2]
    grid = np.linspace(b.min(), b.max(), 5)
    batch = SKEW_CHECK_DECODE["batch"]
    model_t = [batch / step(SKEW_CHECK_DECODE, float(x), context=1800) for x in grid]
    run, floor = serving.eplb_decode_balance()
    pre, dec = SKEW_CHECK_PREFILL, SKEW_CHECK_DECODE
    ep = SKEW_CHECK_ABLATION_DECODE_EP
    profiles = papers.SGLANG_PREFILL_PROFILE_TOKENS_PER_S_PER_NODE
    uniform = step(pre, "uniform")
    bars = papers.SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER
    own, even = bars["sglang"], bars["sglang_perfect_eplb"]
    return SkewChecks(
        run,
        floor,
        serving.expert_balance(dec["ep"], "eplb"),
        MappingProxyType(
            {
                "prefill": (
                    papers.SGLANG_EPLB_SPEEDUP["prefill"],
                    step(pre, "none") / step(pre, "eplb"),
                ),
                "decode": (
                    papers.SGLANG_EPLB_SPEEDUP["decode"],
                    step(dec, "none", ep=ep) / step(dec, "eplb", ep=ep),
                ),
            }
        ),
        (
            profiles["sglang_perfect_eplb"] / profiles["sglang"],
            step(pre, "eplb") / uniform,
            step(pre, "none") / uniform,
        ),
        (slope(b, t), slope(grid, model_t)),
        (own["dispatch"] + own["combine"]) / (even["dispatch"] + even["combine"]),
        (own["compute_bubble"], even["compute_bubble"]),
        own["moe"] > even["moe"],
    )


def published_comparison() -> list[dict[str, Any]]:
    """Each published quantity beside the planner's prediction: mode, P:D family, value and error.

    ``published_pd`` is NaN and ``pd_family_right`` None where the source
    publishes no split (:data:`PD_PUBLISHED`).
    """
    out = []
    for row in load_deployments():
        pred = pool_throughputs(row)
        published = float(row["value"])
        predicted = float(pred[row["quantity"]])
        # a split is judged only where the source states or implies one
        pub_pd = (
            int(row["prefill_gpus"]) / int(row["decode_gpus"])
            if row["pd_published"] in PD_PUBLISHED
            else math.nan
        )
        out.append(
            {
                "case": row["case"],
                "quantity": row["quantity"],
                "published": published,
                "predicted": predicted,
                "error": predicted / published - 1,
                "published_mode": row["mode"],
                "planned_mode": pred["mode"],
                "published_pd": pub_pd,
                "planned_pd": pred["pd_ratio"],
                # the side of 1 : 1 only counts where both split the phases;
                # None where the source publishes no split
                "pd_family_right": None
                if math.isnan(pub_pd)
                else pred["mode"] == row["mode"] == "disaggregated"
                and (pub_pd > 1) == (pred["pd_ratio"] > 1),
                "source": row["source_url"],
            }
        )
    return out
