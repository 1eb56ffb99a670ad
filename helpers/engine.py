"""A continuous-batching serving engine, simulated iteration by iteration: what vLLM, SGLang or TensorRT-LLM delivers.

Each iteration the engine builds one batch under a **token budget** (vLLM's
``max_num_batched_tokens``, SGLang's ``chunked_prefill_size``, TensorRT-LLM's
``max_num_tokens``): first every running decode (one token each), then
waiting prompts, first come first served, chunked to fit what is left of the
budget (chunked prefill). It admits a new request only while it has a
sequence slot (``max_num_seqs``) and KV blocks for it, and runs the step
whose time :mod:`helpers.steps` predicts kernel by kernel, plus a host cost
per iteration. Decode-only steps run as CUDA graphs, padded to the next
captured batch size. Engines with an overlap scheduler (SGLang, TensorRT-LLM)
schedule iteration n+1 while n runs, so a request arriving at a busy engine
joins one iteration later; ``serve(frontend=True)`` adds an HTTP frontend's
measured latency (tokenising, IPC, streaming) before each request reaches the
scheduler (:func:`helpers.efficiency.frontend_s`).

The batch the engine can hold is set by memory: a share of each GPU
(:attr:`EnginePreset.memory_fraction`) holds the weights, the activation
peak of a full-budget step, the CUDA graphs' pool, and KV blocks of
``block_size`` tokens, a sequence's last block partly empty
(:func:`kv_capacity`).

:func:`serve` is the entry point: a model on ``tp`` GPUs per replica and
``replicas`` replicas, fed all at once (``requests``), by a fixed number of
clients (``concurrency``), by Poisson arrivals (``rate``), or at full load
(none of them: the engine's largest batch, in steady state). It returns
throughput, TTFT and TPOT (median and p90), the mean batch and where the
time went (:class:`ServeResult`).

Examples
--------
>>> from helpers import engine
>>> r = engine.serve("llama-3-8b", "H100-SXM", input_len=1000, output_len=200)
>>> r.output_tokens_per_s > 1000, r.ttft_s < r.ttft_p90_s * 1.0001
(True, True)
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from . import _args, efficiency, steps
from .hardware import GIB, Accelerator, Link
from .llm import ModelConfig, get_model, kv_cache_bytes_per_token, param_count


@dataclass(frozen=True)
class EnginePreset:
    """An engine's scheduling and memory defaults, with the version and page they were read from.

    Attributes
    ----------
    name : str
    version : str
        The release whose defaults these are.
    source : str
        Where they were read (URL and the function or table).
    token_budget : int
        Tokens per iteration on GPUs of 70 GiB or more (not A100).
    token_budget_small : int
        Tokens per iteration on smaller GPUs and the A100.
    max_seqs : int
        Sequences per iteration on GPUs of 70 GiB or more (not A100).
    max_seqs_small : int
        The same on the rest.
    memory_fraction : float
        Share of memory the engine uses, read as ``memory_rule`` says.
    memory_rule : {'total', 'static', 'free'}
        ``'total'`` (vLLM's ``gpu_memory_utilization``): the share of the
        GPU's memory holds weights, activation peak, CUDA graphs and KV;
        ``'static'`` (SGLang's ``mem_fraction_static``): it holds weights and
        KV only, activations and graphs live in the rest; ``'free'``
        (TensorRT-LLM's ``free_gpu_memory_fraction``): KV gets the share of
        what weights, activations and graphs leave free.
    block_size : int
        Tokens per KV block (page).
    graph_sizes : tuple of int
        Decode batch sizes captured as CUDA graphs (a decode batch is padded
        to the next one; beyond the largest, the step runs unpadded).
    reserve_output : float
        Share of a request's output tokens whose KV blocks are reserved at
        admission: 0 admits on the prompt alone (and preempts when the cache
        fills), 1 reserves the whole output (no eviction).
    host_s : float
        CPU time per iteration not hidden behind the GPU (s).
    host_per_seq_s : float
        CPU time per running sequence per iteration not hidden (s).
    graph_pool_bytes : float
        Memory the CUDA graphs' pool takes per GPU.
    overlap_schedule : bool
        The CPU schedules iteration n+1 while the GPU runs iteration n
        (SGLang's and TensorRT-LLM's overlap schedulers): a request that
        arrives while the engine is busy joins one iteration later than a
        synchronous scheduler would take it (that batch was already
        prepared). An idle engine takes it at once.
    notes : str
        Which values are documented defaults and which are assumptions.
    large_gpu_gib : float
        GPUs with at least this much memory get ``token_budget`` and ``max_seqs``;
        smaller ones the ``_small`` values.
    a100_small : bool
        Whether an A100 counts as small whatever its memory (vLLM's rule).
    memory_fraction_by_tp : tuple of (int, float)
        ``(min_tp, fraction)`` pairs that replace ``memory_fraction`` from
        ``min_tp`` GPUs per replica up (SGLang lowers its static share with TP).
    """

    name: str
    version: str
    source: str
    token_budget: int
    token_budget_small: int
    max_seqs: int
    max_seqs_small: int
    memory_fraction: float
    memory_rule: str
    block_size: int
    graph_sizes: tuple[int, ...]
    reserve_output: float
    host_s: float
    host_per_seq_s: float
    graph_pool_bytes: float
    notes: str = ""
    overlap_schedule: bool = False
    large_gpu_gib: float = 70.0
    a100_small: bool = True
    memory_fraction_by_tp: tuple[tuple[int, float], ...] = ()


_VLLM_GRAPHS = (1, 2, 4, *range(8, 513, 8))
_SGLANG_GRAPHS = (1, 2, 4, *range(8, 161, 8))
_TRT_GRAPHS: tuple[
    int, ...
] = ()  # enable_padding is off by default: no batch is padded

PRESETS: Mapping[str, EnginePreset] = MappingProxyType(
    {
        "vllm": EnginePreset(
            "vllm",
            "0.10",
            "vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults (OPENAI_API_SERVER context: 8192 tokens and "
            "1024 sequences for GPUs of >= 70 GiB other than the A100, else 2048 and 256); "
            "https://docs.vllm.ai/en/latest/configuration/engine_args.html (gpu_memory_utilization 0.9, "
            "block_size 16, cuda_graph_sizes up to 512)",
            8192,
            2048,
            1024,
            256,
            0.9,
            "total",
            16,
            _VLLM_GRAPHS,
            0.0,
            3e-4,
            2e-6,
            0.5 * GIB,
            "Budgets, sequences, memory share, block size and graph sizes are vLLM's documented defaults. "
            "vLLM schedules on the CPU between steps (asynchronous scheduling is an option, off by default), so "
            "its host cost shows; its size (0.3 ms + 2 us per sequence) and the graph pool are assumptions, "
            "not from a source and not fitted.",
        ),
        "sglang": EnginePreset(
            "sglang",
            "0.4",
            "python/sglang/srt/server_args.py (v0.4), ServerArgs.__post_init__: mem_fraction_static 0.88 at "
            "TP 1, 0.87 at TP 2, 0.85 at TP 4, 0.81 at TP 8, 0.79 from TP 16; chunked_prefill_size 8192 "
            "(2048 below 25 GB); cuda_graph_max_bs 160; page_size 1; "
            "https://docs.sglang.ai/backend/server_arguments.html",
            8192,
            2048,
            4096,
            1024,
            0.88,
            "static",
            1,
            _SGLANG_GRAPHS,
            0.1,
            0.0,
            0.0,
            0.5 * GIB,
            "SGLang reserves a decaying share of each request's output (new_token_ratio, down to 0.1). "
            "No host cost: its overlap scheduler prepares batch n+1 on the CPU while the GPU runs batch n "
            "(SGLang v0.4 blog, 'Zero-overhead batch scheduler', https://lmsys.org/blog/2024-12-04-sglang-v0-4/, "
            "whose Nsight profile shows no GPU idle time between decode batches); the price is that a request "
            "arriving while the GPU runs batch n joins batch n+2 (batch n+1 was scheduled when n launched: "
            "Scheduler.event_loop_overlap). "
            "max_running_requests is sized from memory by SGLang; 4096 here is only a cap.",
            large_gpu_gib=25.0,
            a100_small=False,
            overlap_schedule=True,
            memory_fraction_by_tp=((2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79)),
        ),
        "trtllm": EnginePreset(
            "trtllm",
            "0.20",
            "tensorrt_llm/llmapi/llm_args.py: max_batch_size 2048, max_num_tokens 8192; KvCacheConfig "
            "tokens_per_block 32, free_gpu_memory_fraction 0.9; CudaGraphConfig enable_padding False; "
            "CapacitySchedulerPolicy GUARANTEED_NO_EVICT; "
            "https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/",
            8192,
            8192,
            2048,
            2048,
            0.9,
            "free",
            32,
            _TRT_GRAPHS,
            1.0,
            0.0,
            0.0,
            0.5 * GIB,
            "The capacity scheduler's default reserves every request's whole output (no eviction). "
            "No host cost: the overlap scheduler, on by default, runs the CPU work of step n beside the GPU "
            "work of step n+1 (https://nvidia.github.io/TensorRT-LLM/latest/torch/features/overlap_scheduler.html); "
            "a request arriving while step n runs joins step n+2 (step n+1 was already scheduled).",
            overlap_schedule=True,
        ),
    }
)
"""Engine presets by name (``engine=`` of :func:`serve`)."""


def preset(name: str | EnginePreset) -> EnginePreset:
    """The :class:`EnginePreset` named ``name`` (``"vllm"``, ``"sglang"``, ``"trtllm"``); a preset passes through."""
    if isinstance(name, EnginePreset):
        return name
    key = _args.name("engine", name).replace("-", "").replace("tensorrtllm", "trtllm")
    if key not in PRESETS:
        raise KeyError(f"engine {name!r} is unknown; choose one of {sorted(PRESETS)}")
    return PRESETS[key]


def _large(acc: Accelerator, pre: EnginePreset) -> bool:
    if pre.a100_small and acc.name.startswith("A100"):
        return False
    return acc.memory_capacity >= pre.large_gpu_gib * GIB


def _memory_fraction(pre: EnginePreset, tp: int) -> float:
    frac = pre.memory_fraction
    for min_tp, value in sorted(pre.memory_fraction_by_tp):
        if tp >= min_tp:
            frac = value
    return frac


@dataclass(frozen=True)
class Capacity:
    """What one replica can hold: KV tokens, sequences, and the memory that went elsewhere (bytes per GPU)."""

    kv_tokens: int
    max_seqs: int
    token_budget: int
    weights_bytes: float
    activation_bytes: float
    graph_bytes: float
    kv_bytes: float


def _dense_mlp_params(m: ModelConfig) -> float:
    """Parameters of the MLPs every token runs: dense layers' MLPs and shared experts."""
    gates = 3 if m.gated_mlp else 2
    if m.moe is None:
        return m.n_layers * gates * m.d_model * (m.d_ff or 0)
    dense = m.moe.first_dense_layers * gates * m.d_model * (m.d_ff or 0)
    shared = (
        (m.n_layers - m.moe.first_dense_layers)
        * m.moe.n_shared
        * gates
        * m.d_model
        * m.moe.d_ff_expert
    )
    return dense + shared


def _kv_per_token_per_gpu(
    m: ModelConfig, kv_dtype: str, tp: int, dp_attention: bool
) -> float:
    per_token = kv_cache_bytes_per_token(m, kv_dtype=kv_dtype)
    if m.mla is not None:
        return per_token  # a latent is whole on the GPU that serves it (replicated under TP)
    if dp_attention:
        return per_token
    return per_token * max(1, m.n_kv_heads // tp) / m.n_kv_heads


def kv_capacity(
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    tp: int = 1,
    ep: int = 1,
    dp_attention: bool = False,
    weight_dtype: str = "bf16",
    kv_dtype: str | None = None,
    engine: str | EnginePreset = "vllm",
    token_budget: int | None = None,
    max_seqs: int | None = None,
    memory_fraction: float | None = None,
) -> Capacity:
    """KV tokens a replica of ``tp`` GPUs holds under ``engine``'s memory rules.

    Per GPU, with ``memory_rule`` ``'total'`` (vLLM): ``memory_fraction *
    capacity`` less the weights it stores (``param_count * bytes / tp``, the
    embedding and LM-head tables in 16 bits whatever ``weight_dtype``; with
    ``dp_attention`` the attention weights whole on every GPU), less the
    activation peak of a full-budget step (the widest layer's input and
    output for every budget token, and fp32 logits for every sequence), less
    the CUDA graphs' pool; ``'static'`` (SGLang): ``memory_fraction *
    capacity`` less the weights; ``'free'`` (TensorRT-LLM):
    ``memory_fraction`` of what the weights, activations and graphs leave.
    The rest is KV blocks, ``floor(rest / (block_size * bytes per token))``.
    A replica holds ``blocks * block_size`` tokens per KV group (``tp``
    groups under ``dp_attention``, and for MLA, whose latent every GPU of a
    head-sharded group stores whole, one).

    >>> c = kv_capacity("llama-3-8b", "H100")
    >>> c.kv_tokens > 400_000, c.max_seqs
    (True, 1024)
    """
    m = get_model(model)
    device = steps.accelerator(acc)
    pre = preset(engine)
    tp = _args.positive_int("tp", tp)
    w = _args.name("weight_dtype", weight_dtype)
    wb = steps.weight_bytes_per_element(w)
    kv = steps.pricer(
        m,
        device,
        tp=tp,
        ep=ep,
        dp_attention=dp_attention,
        weight_dtype=w,
        kv_dtype=kv_dtype,
    ).cfg.kv_dtype
    budget = (
        (pre.token_budget if _large(device, pre) else pre.token_budget_small)
        if token_budget is None
        else _args.positive_int("token_budget", token_budget)
    )
    seqs = (
        (pre.max_seqs if _large(device, pre) else pre.max_seqs_small)
        if max_seqs is None
        else _args.positive_int("max_seqs", max_seqs)
    )
    frac = (
        _memory_fraction(pre, tp)
        if memory_fraction is None
        else _args.fraction("memory_fraction", memory_fraction)
    )
    tables = m.vocab_size * m.d_model * (1 if m.tied_embeddings else 2)  # 16-bit
    weights = ((param_count(m) - tables) * wb + tables * 2.0) / tp
    if dp_attention:
        weights += m.n_layers * m.attention_weights() * wb * (1 - 1 / tp)
        # and the LM head whole (it runs on each GPU's own sequences, see steps)
        weights += m.vocab_size * m.d_model * 2.0 * (1 - 1 / tp)
        # and the dense MLPs and shared experts whole (they run on each GPU's own tokens)
        weights += _dense_mlp_params(m) * wb * (1 - 1 / tp)
    widest = max(
        m.d_ff if m.moe is None else max(m.d_ff, m.moe.d_ff_expert * m.moe.top_k),
        m.d_model,
    )
    act = (
        budget * (2 * widest / tp + 4 * m.d_model) * 2.0
        + seqs
        * m.vocab_size
        * 4.0
        / tp  # logits: 1/tp of the vocab, or 1/tp of the seqs
    )
    capacity = device.memory_capacity
    if pre.memory_rule == "static":
        usable = frac * capacity - weights
    elif pre.memory_rule == "free":
        usable = frac * (capacity - weights - act - pre.graph_pool_bytes)
    else:
        usable = frac * capacity - weights - act - pre.graph_pool_bytes
    per_token = _kv_per_token_per_gpu(m, kv, tp, dp_attention)
    blocks = max(0, int(usable // (pre.block_size * per_token)))
    groups = tp if dp_attention else 1
    return Capacity(
        kv_tokens=blocks * pre.block_size * groups,
        max_seqs=seqs,
        token_budget=budget,
        weights_bytes=weights,
        activation_bytes=act,
        graph_bytes=pre.graph_pool_bytes,
        kv_bytes=max(usable, 0.0),
    )


@dataclass(frozen=True)
class ServeResult:
    """What :func:`serve` predicts for a deployment (all replicas together for the rates).

    Attributes
    ----------
    output_tokens_per_s, total_tokens_per_s : float
        Generated tokens per second; prompt plus generated tokens per second.
    ttft_s, ttft_p90_s : float
        Time to first token (arrival to first token, queueing included), median and 90th percentile (s).
    tpot_s, tpot_p90_s : float
        Time per output token after the first, per request, median and 90th percentile (s).
    mean_batch : float
        Mean sequences in an iteration (decodes and prefills), time-weighted.
    breakdown : Mapping[str, float]
        Share of the GPU time per kernel class (:data:`helpers.steps.KERNEL_CLASSES`,
        ``floors``) and ``host``, summing to 1.
    max_batch : int
        The most sequences the engine could run at once (memory and ``max_num_seqs``).
    kv_tokens : int
        KV tokens one replica holds.
    iterations : int
        Iterations simulated (one replica).
    preemptions : int
        Requests evicted and recomputed because the KV cache filled.
    peak_batch : int
        The most sequences that ran in one iteration (one replica).
    gpus : int
        GPUs in the deployment, ``tp * replicas``.
    """

    output_tokens_per_s: float
    total_tokens_per_s: float
    ttft_s: float
    tpot_s: float
    ttft_p90_s: float
    tpot_p90_s: float
    mean_batch: float
    breakdown: Mapping[str, float] = field(default_factory=dict)
    max_batch: int = 0
    kv_tokens: int = 0
    iterations: int = 0
    preemptions: int = 0
    peak_batch: int = 0
    gpus: int = 1

    @property
    def output_tokens_per_s_per_gpu(self) -> float:
        """``output_tokens_per_s / gpus``: what one GPU of the deployment delivers."""
        return self.output_tokens_per_s / self.gpus


class _Sim:
    """One replica's iteration loop."""

    def __init__(
        self,
        p: steps.Pricer,
        pre: EnginePreset,
        cap: Capacity,
        input_len: int | np.ndarray,
        output_len: int | np.ndarray,
        cached_len: int | np.ndarray = 0,
    ) -> None:
        self.p = p
        self.pre = pre
        self.cap = cap
        self.inputs = np.atleast_1d(np.asarray(input_len, dtype=np.int64))
        self.outputs = np.atleast_1d(np.asarray(output_len, dtype=np.int64))
        self.cached = np.atleast_1d(np.asarray(cached_len, dtype=np.int64))
        max_tokens = max(cap.token_budget, 1) + cap.max_seqs
        self.grid, self.lin = steps.token_table(p, max_tokens)
        # head (lm_head + sampling) is linear in seqs beyond small counts: tabulate too
        self.graph_sizes = np.array(pre.graph_sizes)
        m = p.cfg.model
        # decode attention: seconds per cached token (all layers), its floor per step
        one = p.decode_attention(1, 1.0)[0]
        self.attn_per_token = one
        self.attn_floor = m.n_layers * p.floor
        self.parts = dict.fromkeys((*steps.KERNEL_CLASSES, "floors", "host"), 0.0)

    def lin_s(self, rows: int) -> float:
        return float(np.interp(rows, self.grid, self.lin))

    def pad(self, b: int) -> int:
        if not len(self.graph_sizes):
            return b
        i = int(np.searchsorted(self.graph_sizes, b))
        return int(self.graph_sizes[i]) if i < len(self.graph_sizes) else b

    def head_s(self, seqs: int) -> float:
        lm, samp, fl, _ = self.p.head(seqs)
        return lm + samp + fl

    def decode_only_s(self, b: int, kv_tokens: float) -> tuple[float, float]:
        """(fixed part, per-kv-token part) of a decode-only step of ``b`` sequences."""
        fixed = (
            self.lin_s(self.pad(b)) + self.attn_floor + self.head_s(b) + self.host(b)
        )
        return fixed, self.attn_per_token

    def host(self, seqs: int) -> float:
        return self.pre.host_s + self.pre.host_per_seq_s * seqs

    def mixed_s(
        self, decodes: int, kv_tokens: float, chunks: list[tuple[int, int]], logits: int
    ) -> float:
        tokens = decodes + sum(c for c, _ in chunks)
        t = self.lin_s(tokens)
        if decodes:
            t += self.attn_per_token * kv_tokens + self.attn_floor
        if chunks:
            t += self.p.prefill_attention(chunks)[0] + self.attn_floor
        return t + self.head_s(logits) + self.host(decodes + len(chunks))

    def run(
        self,
        arrivals: np.ndarray,
        closed_loop: int | None,
        n_requests: int,
        frontend_s: float = 0.0,
    ) -> dict[str, np.ndarray | float | int]:
        """Serve ``n_requests`` from ``closed_loop`` clients or at open ``arrivals``.

        A closed-loop client sends its next request when one finishes; each
        request reaches the scheduler ``frontend_s`` after it is sent.
        """
        ids = np.arange(n_requests)
        i_req = self.inputs[ids % len(self.inputs)]
        o_req = self.outputs[ids % len(self.outputs)]
        # a cached prefix is not prefilled again; at least the prompt's last token is
        c_req = np.minimum(self.cached[ids % len(self.cached)], i_req - 1)
        self.i_req, self.o_req = i_req, o_req
        bs = self.pre.block_size
        cap_tokens = self.cap.kv_tokens
        max_seqs = self.cap.max_seqs
        budget = self.cap.token_budget
        arrive = np.full(n_requests, np.inf)
        first = np.full(n_requests, np.nan)
        finish = np.full(n_requests, np.nan)
        # arrive = when the engine's scheduler sees a request: ``frontend_s`` after it was sent
        if closed_loop is None:
            arrive[:] = arrivals + frontend_s
            next_arrival_idx = 0
        else:
            k = min(closed_loop, n_requests)
            arrive[:k] = frontend_s
            next_arrival_idx = 0
        sent = n_requests if closed_loop is None else min(closed_loop, n_requests)
        waiting: deque[int] = deque()
        prefilling: deque[int] = deque()  # admitted, prompt not finished
        done_prefill = np.zeros(n_requests, dtype=np.int64)
        gen0 = np.zeros(
            n_requests, dtype=np.int64
        )  # tokens generated before an eviction
        decoding: dict[int, int] = {}  # id -> iteration at which it finishes
        fin_heap: list[tuple[int, int]] = []
        kv_sum = 0.0  # cached tokens of the decoding sequences
        blocks_used = 0
        length = np.zeros(n_requests, dtype=np.int64)  # tokens whose KV is stored
        held = np.zeros(n_requests, dtype=np.int64)  # KV blocks each request holds
        is_dec = np.zeros(n_requests, dtype=bool)

        def grow(steps_: int) -> int:
            """Decoders store ``steps_`` more tokens each; blocks newly taken."""
            length[is_dec] += steps_
            need = -(-length[is_dec] // bs)
            extra = np.maximum(need - held[is_dec], 0)
            held[is_dec] += extra
            return int(extra.sum())

        def release(rid: int) -> int:
            freed = int(held[rid])
            held[rid] = 0
            length[rid] = 0
            is_dec[rid] = False
            return freed

        reserve = self.pre.reserve_output
        now = 0.0
        it = 0
        busy_seq_time = 0.0
        preemptions = 0
        peak = 0
        trace_t = [0.0]
        trace_tok = [0.0]
        out_tokens = 0.0

        def blocks_of(tokens: int) -> int:
            return -(-tokens // bs)

        def need_blocks(rid: int) -> int:
            g = int(gen0[rid])
            i, o = int(i_req[rid]), int(o_req[rid])
            return blocks_of(i + g + int(math.ceil(reserve * (o - g))))

        cap_blocks = cap_tokens // bs
        order = np.argsort(arrive, kind="stable") if closed_loop is None else None
        completed = 0
        lag = self.pre.overlap_schedule
        prev_start = 0.0  # when the last iteration started (and, overlapped, the next was scheduled)

        def next_arrival() -> float:
            if closed_loop is None:
                assert order is not None
                if next_arrival_idx < n_requests:
                    return float(arrive[order[next_arrival_idx]])
                return math.inf
            return (
                float(arrive[next_arrival_idx]) if next_arrival_idx < sent else math.inf
            )

        while completed < n_requests:
            # arrivals the scheduler sees: up to now, or, when an overlap scheduler
            # prepared this iteration while the last one ran, up to the last start
            cutoff = prev_start if lag and (decoding or prefilling) else now
            if closed_loop is None:
                assert order is not None
                while (
                    next_arrival_idx < n_requests
                    and arrive[order[next_arrival_idx]] <= cutoff
                ):
                    waiting.append(int(order[next_arrival_idx]))
                    next_arrival_idx += 1
            else:
                while next_arrival_idx < sent and arrive[next_arrival_idx] <= cutoff:
                    waiting.append(next_arrival_idx)
                    next_arrival_idx += 1
            held_back = next_arrival() <= now  # arrived, for the next iteration
            running = len(decoding) + len(prefilling)
            # admission
            while waiting and running < max_seqs:
                rid = waiting[0]
                nb = need_blocks(rid)
                if blocks_used + nb > cap_blocks:
                    break
                waiting.popleft()
                prefilling.append(rid)
                if gen0[rid] == 0:  # a preempted request recomputes its whole context
                    done_prefill[rid] = c_req[rid]
                held[rid] = nb
                blocks_used += nb
                running += 1
            peak = max(peak, running)
            if not decoding and not prefilling:
                if waiting:
                    raise ValueError(
                        f"input_len + output_len: one request needs {need_blocks(waiting[0]) * bs} KV tokens, "
                        f"the engine holds {cap_tokens}"
                    )
                # idle: jump to the next arrival
                if next_arrival() < math.inf:
                    now = max(now, next_arrival())
                    continue
                break
            b = len(decoding)
            while fin_heap and decoding.get(fin_heap[0][1]) != fin_heap[0][0]:
                heapq.heappop(fin_heap)  # drop stale entries of evicted sequences
            if not prefilling:
                # decode-only: jump to the next finish (or arrival that could be admitted)
                next_fin = fin_heap[0][0] if fin_heap else it + 1
                k = max(1, next_fin - it)
                # KV growth: without a full reservation, blocks grow by about b / bs per iteration
                if reserve < 1.0:
                    free = cap_blocks - blocks_used
                    k = max(1, min(k, int(free * bs // max(b, 1)) - 1))
                if held_back and running < max_seqs:
                    k = 1  # one iteration, then the held-back arrivals join
                fixed, per = self.decode_only_s(b, kv_sum)
                j = np.arange(k)
                times = fixed + per * (kv_sum + j * b)
                t_next = next_arrival()
                if t_next < math.inf and running < max_seqs:
                    ends = now + np.cumsum(times)
                    cut = int(np.searchsorted(ends, t_next)) + 1 + int(lag)
                    k = max(1, min(k, cut))
                    times = times[:k]
                total = float(times.sum())
                prev_start = now + total - float(times[-1])
                self._account_decode(b, kv_sum, k, total)
                busy_seq_time += b * total
                now += total
                kv_sum += k * b
                blocks_used += grow(k)
                it += k
                out_tokens += k * b
                trace_t.append(now)
                trace_tok.append(out_tokens)
            else:
                left = budget - b
                chunks: list[tuple[int, int]] = []
                finishing: list[int] = []
                for rid in prefilling:
                    if left <= 0:
                        break
                    rest = int(i_req[rid]) + int(gen0[rid]) - int(done_prefill[rid])
                    c = min(rest, left)
                    chunks.append((c, int(done_prefill[rid])))
                    left -= c
                    if c == rest:
                        finishing.append(rid)
                if not chunks and b == 0:
                    raise ValueError("token_budget is too small to make progress")
                prev_start = now
                step = self.mixed_s(b, kv_sum + b, chunks, b + len(finishing))
                self._account_mixed(b, kv_sum + b, chunks, b + len(finishing), step)
                busy_seq_time += (b + len(chunks)) * step
                now += step
                it += 1
                kv_sum += b
                blocks_used += grow(1)
                out_tokens += b + len(finishing)
                for (c, _), rid in zip(chunks, list(prefilling)):
                    done_prefill[rid] += c
                for rid in finishing:
                    prefilling.remove(rid)
                    if math.isnan(first[rid]):
                        first[rid] = now
                    left_to_decode = int(o_req[rid]) - int(gen0[rid]) - 1
                    if left_to_decode == 0:
                        finish[rid] = now
                        completed += 1
                        blocks_used -= release(rid)
                        if closed_loop is not None and sent < n_requests:
                            arrive[sent] = now + frontend_s
                            sent += 1
                        continue
                    decoding[rid] = it + left_to_decode
                    heapq.heappush(fin_heap, (it + left_to_decode, rid))
                    kv_sum += int(i_req[rid]) + int(gen0[rid]) + 1
                    is_dec[rid] = True
                    length[rid] = int(i_req[rid]) + int(gen0[rid])
                trace_t.append(now)
                trace_tok.append(out_tokens)
            # finishes
            while fin_heap and fin_heap[0][0] <= it:
                f, rid = heapq.heappop(fin_heap)
                if decoding.get(rid) != f:
                    continue  # evicted since: a stale entry
                del decoding[rid]
                finish[rid] = now
                completed += 1
                kv_sum -= int(i_req[rid]) + int(o_req[rid])
                blocks_used -= release(rid)
                if closed_loop is not None and sent < n_requests:
                    arrive[sent] = now + frontend_s
                    sent += 1
            # preemption (KV full): evict the newest decoding sequence, recompute later
            while reserve < 1.0 and blocks_used > cap_blocks and decoding:
                rid = next(
                    reversed(decoding)
                )  # the latest to join (its heap entry goes stale)
                end = decoding.pop(rid)
                gen = int(o_req[rid]) - (end - it)
                kv_sum -= int(i_req[rid]) + gen
                blocks_used -= release(rid)
                done_prefill[rid] = 0
                gen0[rid] = gen
                waiting.appendleft(rid)
                preemptions += 1
        return {
            "arrive": arrive,
            "first": first,
            "finish": finish,
            "now": now,
            "iterations": it,
            "busy": busy_seq_time,
            "preemptions": preemptions,
            "peak": peak,
            "trace_t": np.array(trace_t),
            "trace_tok": np.array(trace_tok),
        }

    def _account_decode(self, b: int, kv_sum: float, k: int, total: float) -> None:
        p = self.p
        g, e, c, x, f, *_ = p.linear_part(self.pad(b))
        lm, samp, hf, _ = p.head(b)
        per = {
            "gemm": g,
            "elementwise": e,
            "tp_comm": c,
            "ep_comm": x,
            "floors": f + hf + self.attn_floor,
            "lm_head": lm,
            "sampling": samp,
            "host": self.host(b),
        }
        for key, v in per.items():
            self.parts[key] += k * v
        self.parts["attention"] += total - k * sum(per.values())

    def _account_mixed(
        self, b: int, kv: float, chunks: list[tuple[int, int]], logits: int, step: float
    ) -> None:
        p = self.p
        tokens = b + sum(c for c, _ in chunks)
        g, e, c, x, f, *_ = p.linear_part(tokens)
        lm, samp, hf, _ = p.head(logits)
        per = {
            "gemm": g,
            "elementwise": e,
            "tp_comm": c,
            "ep_comm": x,
            "floors": f + hf,
            "lm_head": lm,
            "sampling": samp,
            "host": self.host(b + len(chunks)),
        }
        scale = 1.0
        lin = g + e + c + x + f
        if lin > 0:
            scale = self.lin_s(tokens) / lin  # the interpolated table's value
        for key in ("gemm", "elementwise", "tp_comm", "ep_comm"):
            per[key] *= scale
        for key, v in per.items():
            self.parts[key] += v
        self.parts["attention"] += max(step - sum(per.values()), 0.0)


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    v = values[np.isfinite(values)]
    if v.size == 0:
        return math.nan, math.nan
    return float(np.median(v)), float(np.percentile(v, 90))


def _lengths(name: str, value: int | Sequence[int]) -> np.ndarray:
    """``value`` as a non-empty array of whole numbers >= 1, errors naming ``name``."""
    if isinstance(value, (str, bytes)):
        raise TypeError(
            f"{name} must be a whole number or a sequence of them, got {value!r}"
        )
    items = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    if not items:
        raise ValueError(f"{name} must not be empty")
    return np.array([_args.positive_int(name, v) for v in items], dtype=np.int64)


def serve(
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    tp: int = 1,
    replicas: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str | None = None,
    input_len: int | Sequence[int],
    output_len: int | Sequence[int],
    requests: int | None = None,
    concurrency: int | None = None,
    rate: float | None = None,
    engine: str | EnginePreset = "vllm",
    ep: int = 1,
    dp_attention: bool = False,
    act_dtype: str | None = None,
    token_budget: int | None = None,
    max_seqs: int | None = None,
    memory_fraction: float | None = None,
    seed: int = 0,
    link: str | Link | None = "auto",
    gemm_overlap: float = 0.0,
    frontend: bool = False,
    cached_len: int | Sequence[int] = 0,
) -> ServeResult:
    """Simulate ``engine`` serving ``model`` on ``replicas`` x ``tp`` GPUs of ``acc``; throughput, TTFT, TPOT.

    Parameters
    ----------
    model : str or ModelConfig
    acc : str or Accelerator
        A catalog GPU (``"H100-SXM"``, ``"H200"``, ``"A100"``, ...).
    tp : int
        GPUs per replica (tensor parallel).
    replicas : int
        Independent replicas; load is split evenly over them: each gets a
        Poisson share of the arrivals (random routing) and, of a list of
        lengths, every ``replicas``-th entry, so it sees the whole list's mix.
    weight_dtype, kv_dtype, act_dtype : str
        Precision of the weights, the KV cache (``None``: 16-bit) and the
        GEMM inputs (``None``: :func:`helpers.steps.default_act_dtype`).
    input_len, output_len : int or sequence of int
        Prompt and generated tokens per request; sequences give request
        ``i`` the ``i``-th length, cycling (a workload's length mix: the
        TTFT and TPOT percentiles then spread over it).
    requests : int or None
        Requests to serve. Alone: all arrive at once (an offline batch);
        throughput is tokens over the makespan, ramp-down included.
    concurrency : int or None
        Clients each sending their next request as soon as one finishes.
        Without ``requests``: steady state. The clients start together, as
        benchmark tools' do, so with one fixed length their requests stay in
        step (a cohort prefills together; TTFT is that cohort's prefill).
    rate : float or None
        Poisson arrivals per second (all replicas); ``requests`` defaults to 500.
    engine : str or EnginePreset
        ``"vllm"``, ``"sglang"`` or ``"trtllm"`` (:data:`PRESETS`).
    ep, dp_attention
        Expert parallelism (1 or ``tp``) and data-parallel attention, for MoE models.
    token_budget, max_seqs, memory_fraction
        Override the preset's per-iteration token budget, sequence cap and memory share.
    link : str, Link or None
        What the replica's collectives cross: ``"auto"`` (:func:`helpers.parallel.tp_link`),
        a link, or ``None`` (no communication).
    gemm_overlap : float
        Inside-GEMM overlap sensitivity, 0 to 1 (:func:`helpers.steps.pricer`).
    cached_len : int or sequence of int
        Prompt tokens of each request already in the prefix cache (cycling
        like ``input_len``; 0 by default): its prefill starts after them, its
        chunks priced with them as context, as an engine's automatic prefix
        caching does; its KV cache still holds the whole prompt. A request
        evicted and readmitted recomputes its whole context.
    frontend : bool
        Requests pass through an HTTP frontend (tokenise, chat template, IPC,
        stream): each reaches the scheduler :func:`helpers.efficiency.frontend_s`
        after it is sent, and its TTFT counts from the send. Off by default
        (offline benchmarks hand the engine token ids).
    seed : int
        Seed of the Poisson arrivals.

    Notes
    -----
    With none of ``requests``, ``concurrency`` and ``rate``: full load, the
    engine's largest batch kept full, in steady state: as many closed-loop
    clients as ``max_num_seqs`` or as the KV cache holds sequences of the mean
    length ``input_len + output_len / 2`` (:attr:`ServeResult.max_batch`),
    whichever is smaller. Steady-state rates and latencies are measured
    between the first wave's end and the last request's arrival (warm-up and
    ramp-down left out); with ``requests`` every request counts and the rate
    is tokens over the makespan.

    Returns
    -------
    ServeResult
    """
    m = get_model(model)
    device = steps.accelerator(acc)
    pre = preset(engine)
    tp = _args.positive_int("tp", tp)
    replicas = _args.positive_int("replicas", replicas)
    inputs = _lengths("input_len", input_len)
    outputs = _lengths("output_len", output_len)
    if rate is not None and concurrency is not None:
        raise ValueError("rate and concurrency: give one of them, not both")
    p = steps.pricer(
        m,
        device,
        tp=tp,
        ep=ep,
        dp_attention=dp_attention,
        weight_dtype=weight_dtype,
        act_dtype=act_dtype,
        kv_dtype=kv_dtype,
        link=link,
        gemm_overlap=gemm_overlap,
    )
    cap = kv_capacity(
        m,
        device,
        tp=tp,
        ep=ep,
        dp_attention=dp_attention,
        weight_dtype=weight_dtype,
        kv_dtype=p.cfg.kv_dtype,
        engine=pre,
        token_budget=token_budget,
        max_seqs=max_seqs,
        memory_fraction=memory_fraction,
    )
    longest = (
        int(np.max(inputs + outputs))
        if len(inputs) == len(outputs)
        else (int(inputs.max() + outputs.max()))
    )
    if cap.kv_tokens < longest:
        raise ValueError(
            f"tp: the weights leave room for {cap.kv_tokens} KV tokens per replica on {tp} x {device.name}, "
            f"fewer than one request's {longest}"
        )
    per_seq = float(inputs.mean()) + math.ceil(float(outputs.mean()) / 2)
    mem_batch = max(1, int(cap.kv_tokens // per_seq))
    max_batch = min(cap.max_seqs, mem_batch)
    cached = np.atleast_1d(np.asarray(cached_len, dtype=np.int64))
    if cached.size == 0 or (cached < 0).any():
        raise ValueError("cached_len must be >= 0 (one count, or one per request)")
    if replicas > 1:
        # a replica gets every replicas-th request of a list: a sample of the
        # whole list rather than its first 1/replicas
        inputs, outputs, cached = (
            a[::replicas] if len(a) >= replicas else a
            for a in (inputs, outputs, cached)
        )
    sim = _Sim(p, pre, cap, inputs, outputs, cached)
    closed: int | None = None
    arrivals = np.zeros(0)
    steady = False
    if rate is not None:
        rate = _args.positive("rate", rate) / replicas
        n = 500 if requests is None else _args.positive_int("requests", requests)
        n = max(1, round(n / replicas))
        gaps = np.random.default_rng(seed).exponential(1.0 / rate, n)
        arrivals = np.cumsum(gaps) - gaps[0]
    elif concurrency is not None:
        c = _args.positive_int("concurrency", concurrency)
        closed = max(1, round(c / replicas))
        if requests is None:
            steady = True
            n = max(4 * closed, 64)
        else:
            n = max(1, round(_args.positive_int("requests", requests) / replicas))
    elif requests is not None:
        n = max(1, round(_args.positive_int("requests", requests) / replicas))
        arrivals = np.zeros(n)
    else:
        closed = max_batch
        steady = True
        n = max(4 * closed, 64)
    _args.boolean("frontend", frontend)
    front = efficiency.frontend_s() if frontend else 0.0
    out = sim.run(arrivals, closed, n, front)
    arrive, first, finish = out["arrive"], out["first"], out["finish"]
    assert (
        isinstance(arrive, np.ndarray)
        and isinstance(first, np.ndarray)
        and isinstance(finish, np.ndarray)
    )
    ttft = first - arrive + front
    o_req = sim.o_req
    tpot = np.where(o_req > 1, (finish - first) / np.maximum(o_req - 1, 1), 0.0)
    now = float(out["now"])  # type: ignore[arg-type]
    if steady:
        assert closed is not None
        # window: after the first wave has finished, before the last request arrived (ramp-down)
        t_a = float(np.sort(finish)[min(closed, n - 1)])
        t_b = float(np.max(arrive))
        tt, tok = out["trace_t"], out["trace_tok"]
        assert isinstance(tt, np.ndarray) and isinstance(tok, np.ndarray)
        if t_b <= t_a:
            t_a, t_b = 0.0, now
        produced = float(np.interp(t_b, tt, tok) - np.interp(t_a, tt, tok))
        out_rate = produced / (t_b - t_a)
        sel = (arrive >= t_a) & (arrive <= t_b)
        if sel.sum() < 8:
            sel = np.ones(n, dtype=bool)
        ttft_sel, tpot_sel = ttft[sel], tpot[sel]
    else:
        out_rate = float(o_req.sum()) / now
        ttft_sel, tpot_sel = ttft, tpot
    total_rate = out_rate * float(sim.i_req.sum() + o_req.sum()) / float(o_req.sum())
    t50, t90 = _percentiles(ttft_sel)
    p50, p90 = _percentiles(tpot_sel)
    total_time = sum(sim.parts.values())
    shares = (
        {k: v / total_time for k, v in sim.parts.items()}
        if total_time > 0
        else dict(sim.parts)
    )
    return ServeResult(
        output_tokens_per_s=out_rate * replicas,
        total_tokens_per_s=total_rate * replicas,
        ttft_s=t50,
        tpot_s=p50,
        ttft_p90_s=t90,
        tpot_p90_s=p90,
        mean_batch=float(out["busy"]) / now if now > 0 else 0.0,  # type: ignore[arg-type]
        breakdown=MappingProxyType(shares),
        max_batch=max_batch,
        kv_tokens=cap.kv_tokens,
        iterations=int(out["iterations"]),  # type: ignore[call-overload]
        preemptions=int(out["preemptions"]),  # type: ignore[call-overload]
        peak_batch=int(out["peak"]),  # type: ignore[call-overload]
        gpus=tp * replicas,
    )


__all__ = [
    "Capacity",
    "EnginePreset",
    "PRESETS",
    "ServeResult",
    "kv_capacity",
    "preset",
    "serve",
]
