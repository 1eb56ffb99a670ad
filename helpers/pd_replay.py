"""Replay a request trace through a prefill/decode-disaggregated cluster, request by request.

The planner (:mod:`helpers.planner`) sizes pools for the highest rate that
meets p90 targets, from mean lengths. Mooncake's Fig. 15 asks a different
question: at one replayed load, what share of a trace's requests meets both
thresholds, for each split of 16 nodes? This module answers that question
with the same step prices, so the two can be compared like with like.

The cluster (:func:`replay`):

* **Prefill.** ``prefill_nodes`` instances, each prefilling one prompt at a
  time (the uncached part, after the cached prefix) in the order the prompts
  arrive, on whichever instance frees first. A prompt's price is
  :func:`helpers.serving.measured_step_time` of its chunk after its prefix,
  so a request's TTFT is its wait plus that price. The KV cache streams to
  the decode node layer by layer while the prefill runs (Mooncake §3, step
  3), so no transfer is added.
* **Decode.** ``decode_nodes`` instances with continuous batching. A request
  goes to the instance running and holding the fewest requests when its
  prefill ends, joins at that instance's next step if its KV cache (prompt
  and whole output) fits, and waits otherwise. A step of ``B`` sequences
  costs :func:`helpers.serving.measured_step_time` at their mean context
  (to 256 tokens), plus ``decode_step_extra_s``.
* **TBT.** Mooncake's metric (§5.1): the mean of a request's longest 10 % of
  token intervals, its first interval running from its first token (the end
  of its prefill) to the end of its first decode step.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _args, engine, papers, serving
from .cachesim import simulate_prefix_cache
from .hardware import Accelerator
from .llm import ModelConfig, get_model
from .traces import Trace

CONTEXT_STEP_TOKENS = 256
"""Decode steps are priced at their mean context rounded to this many tokens."""

TBT_LONGEST_SHARE = 0.10
"""Mooncake's TBT: the mean of a request's longest 10 % of token intervals (§5.1)."""


@dataclass(frozen=True)
class Replay:
    """Per-request latencies of one replay.

    Attributes
    ----------
    prefill_nodes, decode_nodes : int
    rate : float
        Poisson arrivals per second.
    ttft_s : numpy.ndarray of float64, shape (n,)
        Each request's time to first token (s).
    tbt_s : numpy.ndarray of float64, shape (n,)
        Each request's TBT (s, Mooncake's metric); NaN for a request of
        fewer than two output tokens (it has no interval).
    mean_decode_batch : float
        Sequences a decode instance runs, averaged over the instances and
        over the time from the first request's arrival at the decode pool
        to the last step's end.
    """

    prefill_nodes: int
    decode_nodes: int
    rate: float
    ttft_s: np.ndarray
    tbt_s: np.ndarray
    mean_decode_batch: float

    def effective_share(self, *, ttft_slo_s: float, tbt_slo_s: float) -> float:
        """Share of requests whose TTFT and TBT are both within the thresholds (s)."""
        _args.positive("ttft_slo_s", ttft_slo_s)
        _args.positive("tbt_slo_s", tbt_slo_s)
        ok = (self.ttft_s <= ttft_slo_s) & ~(self.tbt_s > tbt_slo_s)
        return float(ok.mean())

    @property
    def mean_ttft_s(self) -> float:
        return float(self.ttft_s.mean())

    @property
    def mean_tbt_s(self) -> float:
        """Mean TBT over the requests that have one (s)."""
        return float(np.nanmean(self.tbt_s))


def _check_trace(trace: object) -> Trace:
    if not isinstance(trace, Trace):
        raise ValueError(
            f"trace must be a helpers.traces.Trace (load_trace), got {type(trace).__name__}"
        )
    return trace


def _hits(trace: Trace, hit_tokens: Any) -> np.ndarray:
    """Cached prompt tokens per request, at most the prompt less one token."""
    if hit_tokens is None:
        hits = simulate_prefix_cache(trace, math.inf).hit_tokens
    else:
        hits = np.asarray(hit_tokens, dtype=np.int64)
        if hits.shape != trace.input_lengths.shape:
            raise ValueError(
                f"hit_tokens must give one count per request ({len(trace.input_lengths)}), got shape {hits.shape}"
            )
        if (hits < 0).any():
            raise ValueError("hit_tokens must be >= 0")
    return np.minimum(hits, trace.input_lengths - 1)


def prefill_prices(
    model: str | ModelConfig,
    acc: str | Accelerator,
    trace: Trace,
    *,
    tp: int = 8,
    dtype: str = "bf16",
    hit_tokens: Any = None,
    terms: Collection[str] = serving.STEP_TERMS,
) -> np.ndarray:
    """Seconds each request of ``trace`` takes to prefill on one instance of ``tp`` GPUs.

    :func:`helpers.serving.measured_step_time` of the request's uncached
    tokens after its cached prefix; ``hit_tokens`` gives each request's cached
    prefix (default: an unlimited cache shared by all instances, as Mooncake's
    store, :func:`helpers.cachesim.simulate_prefix_cache`).
    """
    trace = _check_trace(trace)
    _args.positive_int("tp", tp)
    hits = _hits(trace, hit_tokens)
    price: dict[tuple[int, int], float] = {}
    out = np.empty(len(hits))
    for i, (n, pre) in enumerate(
        zip(trace.input_lengths.tolist(), hits.tolist(), strict=True)
    ):
        s = price.get((n - pre, pre))
        if s is None:
            s = serving.measured_step_time(
                model,
                0,
                acc,
                batch=0,
                chunk=n - pre,
                prefix=pre,
                tp=tp,
                dtype=dtype,
                terms=terms,
            )
            price[(n - pre, pre)] = s
        out[i] = s
    return out


def _fcfs(arrival: np.ndarray, service: np.ndarray, servers: int) -> np.ndarray:
    """Each request's wait plus service: first come first served, on whichever server frees first."""
    free = [0.0] * servers
    done = np.empty(len(arrival))
    for i in range(len(arrival)):
        start = max(arrival[i], heapq.heappop(free))
        heapq.heappush(free, start + service[i])
        done[i] = start + service[i] - arrival[i]
    return done


def _highest(ok: Callable[[float], bool], lo: float, hi: float) -> float:
    """The highest rate in [lo, hi] at which ``ok`` holds, to 0.1 % (geometric bisection; ``ok`` falls with rate)."""
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def prefill_ttft(
    model: str | ModelConfig,
    acc: str | Accelerator,
    trace: Trace,
    *,
    prefill_nodes: int,
    rate: float,
    tp: int = 8,
    dtype: str = "bf16",
    hit_tokens: Any = None,
    seed: int = 0,
    terms: Collection[str] = serving.STEP_TERMS,
    prices: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(arrival s, TTFT s) of every request of ``trace`` on ``prefill_nodes`` instances of ``tp`` GPUs.

    The arrivals are Poisson at ``rate`` per second (seeded by ``seed``), in
    the trace's order; each prompt waits for the first free instance and
    takes its :func:`prefill_prices` (or ``prices``, already computed).
    """
    trace = _check_trace(trace)
    _args.positive_int("prefill_nodes", prefill_nodes)
    _args.positive("rate", rate)
    if prices is None:
        prices = prefill_prices(
            model, acc, trace, tp=tp, dtype=dtype, hit_tokens=hit_tokens, terms=terms
        )
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0 / rate, len(prices)))
    return arrival, _fcfs(arrival, prices, prefill_nodes)


def prefill_max_rate(
    model: str | ModelConfig,
    acc: str | Accelerator,
    trace: Trace,
    *,
    prefill_nodes: int,
    ttft_slo_s: float,
    quantile: float = 0.9,
    tp: int = 8,
    dtype: str = "bf16",
    hit_tokens: Any = None,
    seed: int = 0,
) -> float:
    """The highest Poisson rate (requests/s) at which the replayed TTFT's ``quantile`` meets ``ttft_slo_s``.

    The prefill pool alone, the trace's own prompts (:func:`prefill_ttft`);
    bisection to 0.1 %. Each prompt is priced at its own length and goes to
    the first free server; the planner's queue (:mod:`helpers.queueing`)
    prices equal prompts, or a trace's spread, on each instance alone.
    """
    _args.positive("ttft_slo_s", ttft_slo_s)
    _args.fraction_below_one("quantile", quantile)
    prices = prefill_prices(
        model, acc, trace, tp=tp, dtype=dtype, hit_tokens=hit_tokens
    )
    if np.quantile(prices, quantile) > ttft_slo_s:
        return 0.0

    def meets(rate: float) -> bool:
        _, ttft = prefill_ttft(
            model,
            acc,
            trace,
            prefill_nodes=prefill_nodes,
            rate=rate,
            seed=seed,
            prices=prices,
        )
        return bool(np.quantile(ttft, quantile) <= ttft_slo_s)

    lo, hi = (
        1e-3,
        prefill_nodes / float(prices.mean()),
    )  # the pool's service rate bounds it
    if meets(hi):
        return hi
    return _highest(meets, lo, hi)


def replay(
    model: str | ModelConfig,
    acc: str | Accelerator,
    trace: Trace,
    *,
    prefill_nodes: int,
    decode_nodes: int,
    rate: float,
    tp: int = 8,
    decode_tp: int | None = None,
    dtype: str = "bf16",
    hit_tokens: Any = None,
    seed: int = 0,
    decode_step_extra_s: float = 0.0,
    terms: Collection[str] = serving.STEP_TERMS,
) -> Replay:
    """Replay ``trace`` at ``rate`` requests/s through ``prefill_nodes`` + ``decode_nodes`` instances.

    Parameters
    ----------
    model, acc
        A dense model (a mixture of experts raises: its expert-parallel step
        is not priced here) and a catalog GPU; a prefill instance is ``tp``
        GPUs, a decode instance ``decode_tp`` (default ``tp``).
    trace : Trace
        Its lengths and prefix blocks are used; its timestamps are replaced by
        Poisson arrivals at ``rate`` (as Mooncake dispatched its synthetic
        workload, §5.2.1).
    prefill_nodes, decode_nodes : int
    rate : float
        Requests per second, > 0.
    hit_tokens : array of int or None
        Cached prompt tokens per request (default: an unlimited shared cache).
    decode_step_extra_s : float
        Seconds every decode step costs beyond its kernels (an engine's
        measured per-step cost; 0 by default), >= 0.
    terms
        The step model's terms (:data:`helpers.serving.STEP_TERMS`).

    Returns
    -------
    Replay
    """
    _args.positive_int("decode_nodes", decode_nodes)
    dtp = tp if decode_tp is None else _args.positive_int("decode_tp", decode_tp)
    if get_model(model).moe is not None:
        raise ValueError(
            "model: a mixture of experts is not replayed (its expert-parallel step is priced in helpers.serving)"
        )
    _args.non_negative("decode_step_extra_s", decode_step_extra_s)
    arrival, ttft = prefill_ttft(
        model,
        acc,
        trace,
        prefill_nodes=prefill_nodes,
        rate=rate,
        tp=tp,
        dtype=dtype,
        hit_tokens=hit_tokens,
        seed=seed,
        terms=terms,
    )
    inp = trace.input_lengths.tolist()
    out = trace.output_lengths.tolist()
    capacity = engine.kv_capacity(model, acc, tp=dtp, weight_dtype=dtype).kv_tokens
    too_big = [i for i in range(len(inp)) if inp[i] + out[i] > capacity]
    if too_big:
        raise ValueError(
            f"trace: request {too_big[0]} needs {inp[too_big[0]] + out[too_big[0]]} KV tokens, "
            f"more than one decode instance holds ({capacity})"
        )
    step_price: dict[tuple[int, int], float] = {}

    def step_s(batch: int, context: float) -> float:
        key = (batch, round(context / CONTEXT_STEP_TOKENS))
        s = step_price.get(key)
        if s is None:
            s = serving.measured_step_time(
                model,
                key[1] * CONTEXT_STEP_TOKENS,
                acc,
                batch=batch,
                tp=dtp,
                dtype=dtype,
                terms=terms,
            )
            step_price[key] = s
        return s + decode_step_extra_s

    first = arrival + ttft
    order = [i for i in np.argsort(first, kind="stable").tolist() if out[i] >= 2]
    running: list[list[int]] = [[] for _ in range(decode_nodes)]
    waiting: list[deque[int]] = [deque() for _ in range(decode_nodes)]
    used = [0] * decode_nodes
    step_end = [math.inf] * decode_nodes
    step_start = [0.0] * decode_nodes
    end = 0.0
    last = first.tolist()
    made = [0] * len(inp)
    intervals: list[list[float]] = [[] for _ in range(len(inp))]

    def admit(d: int) -> None:
        while (
            waiting[d] and used[d] + inp[waiting[d][0]] + out[waiting[d][0]] <= capacity
        ):
            i = waiting[d].popleft()
            running[d].append(i)
            used[d] += inp[i] + out[i]

    def start(d: int, now: float) -> None:
        admit(d)
        if running[d]:
            context = sum(inp[i] + made[i] for i in running[d]) / len(running[d])
            step_start[d] = now
            step_end[d] = now + step_s(len(running[d]), context)
        else:
            step_end[d] = math.inf

    busy = 0.0  # sequence-seconds of decode steps
    nxt = 0
    while nxt < len(order) or min(step_end) < math.inf:
        d = min(range(decode_nodes), key=step_end.__getitem__)
        t_step = step_end[d]
        t_arrive = first[order[nxt]] if nxt < len(order) else math.inf
        if t_arrive <= t_step:
            i = order[nxt]
            nxt += 1
            k = min(
                range(decode_nodes),
                key=lambda j: len(running[j]) + len(waiting[j]),
            )
            waiting[k].append(i)
            if step_end[k] == math.inf:
                start(k, float(t_arrive))
            continue
        busy += len(running[d]) * (t_step - step_start[d])
        keep = []
        for i in running[d]:
            intervals[i].append(t_step - last[i])
            last[i] = t_step
            made[i] += 1
            if made[i] >= out[i] - 1:
                used[d] -= inp[i] + out[i]
            else:
                keep.append(i)
        running[d] = keep
        end = t_step
        start(d, t_step)
    tbt = np.full(len(inp), np.nan)
    for i in order:
        gaps = sorted(intervals[i], reverse=True)
        k = max(1, math.ceil(TBT_LONGEST_SHARE * len(gaps)))
        tbt[i] = sum(gaps[:k]) / k
    span = end - float(first[order[0]]) if order else 0.0
    mean_batch = busy / (decode_nodes * span) if span > 0 else 0.0
    return Replay(prefill_nodes, decode_nodes, float(rate), ttft, tbt, mean_batch)


# ---------------------------------------------------------------------------
# Mooncake's engine beside the step model (Fig. 14), and its P/D run (Fig. 15)

MOONCAKE_MODEL = "llama-3-70b"
MOONCAKE_GPU = "A800"
MOONCAKE_TP = 8
"""GPUs per instance in Mooncake's §5 runs: one instance per 8 x A800 node (§5.1)."""


@dataclass(frozen=True)
class StepCheckRow:
    """One prompt length of Mooncake's Fig. 14 beside the step model (8 x A800, one request).

    ``prefill_*``: seconds to prefill the whole prompt (no cache);
    ``decode_*``: seconds per decode step at batch 1, measured as Fig. 14's
    128-token decode (both panels' mean) / 128.
    """

    prompt_tokens: int
    prefill_measured_s: float
    prefill_model_s: float
    decode_measured_s: float
    decode_model_s: float


def mooncake_step_check() -> list[StepCheckRow]:
    """The step model (kernel sum) beside Mooncake's measured prefill and batch-1 decode (Fig. 14)."""
    rows = []
    decode = papers.MOONCAKE_FIG14_DECODE_128_S
    for j, n in enumerate(papers.MOONCAKE_FIG14_PROMPT_TOKENS):
        rows.append(
            StepCheckRow(
                n,
                papers.MOONCAKE_FIG14_PREFILL_S[j],
                serving.measured_step_time(
                    MOONCAKE_MODEL,
                    0,
                    MOONCAKE_GPU,
                    batch=0,
                    chunk=n,
                    tp=MOONCAKE_TP,
                    terms=serving.STEP_TERMS,
                ),
                (decode["cache_0"][j] + decode["cache_95"][j]) / 2 / 128,
                serving.measured_step_time(
                    MOONCAKE_MODEL,
                    n,
                    MOONCAKE_GPU,
                    batch=1,
                    tp=MOONCAKE_TP,
                    terms=serving.STEP_TERMS,
                ),
            )
        )
    return rows


def mooncake_decode_extra_s() -> float:
    """Seconds a decode step of Mooncake's engine costs beyond the kernels: Fig. 14's mean excess at batch 1.

    Calibrated on Fig. 14 alone (five prompt lengths, one request each);
    Fig. 15 then judges it.
    """
    rows = mooncake_step_check()
    return sum(r.decode_measured_s - r.decode_model_s for r in rows) / len(rows)


@dataclass(frozen=True)
class SplitRow:
    """One split of Mooncake's Fig. 15: measured beside the replay (shares, s).

    ``decode_batch_model``: the replay's mean sequences per decode instance
    (:attr:`Replay.mean_decode_batch`); Mooncake publishes no batch.
    """

    prefill_nodes: int
    decode_nodes: int
    share_measured: float
    share_model: float
    ttft_measured_s: float
    ttft_model_s: float
    tbt_measured_s: float
    tbt_model_s: float
    decode_batch_model: float


def mooncake_fig15_rate(*, seed: int = 0) -> float:
    """The load (requests/s) at which the replay's 5P11D mean TTFT is Fig. 15b's (5.75 s).

    Mooncake does not state the load it replayed; this one point of Fig. 15b
    sets it, and is therefore not judged. Bisection on the prefill pool alone
    (its TTFT does not depend on the decode pool), to 0.1 %.
    """
    from .traces import load_trace

    trace = load_trace("synthetic")
    p, _ = papers.MOONCAKE_FIG15_SPLITS[0]
    target = papers.MOONCAKE_FIG15_MEAN_TTFT_S[0]
    prices = prefill_prices(MOONCAKE_MODEL, MOONCAKE_GPU, trace, tp=MOONCAKE_TP)

    def mean_ttft(rate: float) -> float:
        _, ttft = prefill_ttft(
            MOONCAKE_MODEL,
            MOONCAKE_GPU,
            trace,
            prefill_nodes=p,
            rate=rate,
            seed=seed,
            prices=prices,
        )
        return float(ttft.mean())

    return _highest(lambda rate: mean_ttft(rate) < target, 0.5, 64.0)


def mooncake_fig15(
    *,
    decode_step_extra_s: float = 0.0,
    rate: float | None = None,
    seed: int = 0,
    splits: Sequence[tuple[int, int]] = papers.MOONCAKE_FIG15_SPLITS,
) -> list[SplitRow]:
    """Mooncake's Fig. 15 replayed: each split's share within TTFT 10 s and TBT 100 ms, mean TTFT and TBT.

    The synthetic trace (3,993 requests, an unlimited shared prefix cache) at
    ``rate`` (default :func:`mooncake_fig15_rate`) through each of Fig. 15's
    splits of 16 nodes of 8 x A800, with ``decode_step_extra_s`` added to
    every decode step (:func:`mooncake_decode_extra_s` for Mooncake's engine).
    ``splits``: (prefill, decode) server counts, Fig. 15's by default; a split
    Fig. 15 did not run gets NaN for its measured values.
    """
    from .traces import load_trace

    trace = load_trace("synthetic")
    hits = simulate_prefix_cache(trace, math.inf).hit_tokens
    if rate is None:
        rate = mooncake_fig15_rate(seed=seed)
    ttft_slo, tbt_slo = papers.MOONCAKE_FIG15_SLOS_S
    rows = []
    measured = {
        split: (
            papers.MOONCAKE_FIG15_EFFECTIVE_SHARE[j],
            papers.MOONCAKE_FIG15_MEAN_TTFT_S[j],
            papers.MOONCAKE_FIG15_MEAN_TBT_MS[j] / 1e3,
        )
        for j, split in enumerate(papers.MOONCAKE_FIG15_SPLITS)
    }
    nan = (math.nan, math.nan, math.nan)
    for p, d in splits:
        r = replay(
            MOONCAKE_MODEL,
            MOONCAKE_GPU,
            trace,
            prefill_nodes=p,
            decode_nodes=d,
            rate=rate,
            tp=MOONCAKE_TP,
            hit_tokens=hits,
            seed=seed,
            decode_step_extra_s=decode_step_extra_s,
        )
        share, ttft, tbt = measured.get((p, d), nan)
        rows.append(
            SplitRow(
                p,
                d,
                share,
                r.effective_share(ttft_slo_s=ttft_slo, tbt_slo_s=tbt_slo),
                ttft,
                r.mean_ttft_s,
                tbt,
                r.mean_tbt_s,
                r.mean_decode_batch,
            )
        )
    return rows
