"""Attention offload: run a decode step's attention on memory-rich devices.

A decode step has two kinds of work (:func:`decode_split`):

* **attention**: every sequence reads its *own* KV cache, so its FLOP and
  its bytes both grow with ``batch * context`` and the intensity is a
  constant of the model, ``2 * gqa_group / bytes_per_element`` FLOP/byte
  for MHA/GQA with one query token per step (:func:`attention_intensity`),
  whatever the batch; multi-head latent attention raises it to about
  ``4 * h / bytes_per_element`` with ``h`` the heads one device runs (all
  of them under data-parallel attention, ``n_heads / TP`` when tensor
  parallelism shards the heads: ``heads_per_device``), and ``s_q`` query
  tokens per step (speculative decoding) multiply either by ``s_q``;
  :func:`kv_bytes_per_token_per_device` gives the KV bytes each device
  stores under head-sharded TP (MLA's latent is replicated) and under
  decode context parallelism (the latent striped by tokens), and
  :func:`dcp_exchange_bytes` what DCP sends per layer instead;
* **the rest** (weight matmuls, lm_head, embedding rows; "linear" for
  short): the weights are read once for the whole batch, so the intensity
  grows with the batch.

Attention offload (Chen et al. 2024, "Lamina") puts the linear layers on
compute-rich GPUs and attention on cheaper memory-rich devices, at the price
of shipping each sequence's query, new key and new value to the memory
devices and the attention output back, at every layer
(:func:`layer_traffic_bytes`). :func:`offload_step_time` times the three
parts, with the link counted two ways: a layer's critical path (send, then
receive) and the link's occupancy when micro-batches pipeline the layers
over a full-duplex link (each direction carries its own bytes at once);
:func:`tokens_per_dollar` turns throughput and a *user-supplied*
price into tokens per dollar. This module ships no prices.

The co-located baseline (everything on the compute GPUs) and the number of
sequences that fit, on either kind of device, come from
:mod:`helpers.inference` (:func:`~helpers.inference.decode_step_time`,
:func:`~helpers.inference.max_decode_batch` with ``holds_weights=False`` for
memory devices), with the same memory reserve as everywhere else.

References
----------
Chen, Lin, Zhang, Wu (2024), "Efficient and Economic Large Language Model
Inference with Attention Offloading", arXiv:2405.01814.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import _args
from .hardware import Accelerator, Link, dtype_bytes, get_accelerator, get_link
from .llm import ModelConfig, decode_cost, get_model, kv_cache_bytes_per_token
from .ops import Cost
from .roofline import breakdown


@dataclass(frozen=True)
class DecodeSplit:
    """One decode step's cost, split in two.

    Attributes
    ----------
    attention : Cost
        Scores and weighted values over ``context + 1`` keys per sequence,
        and each sequence's KV cache read (``context`` tokens) and written (1 token).
    linear : Cost
        Everything else in :func:`helpers.llm.decode_cost`: weight matmuls,
        lm_head, embedding rows; the weights are read once for the batch.
    """

    attention: Cost
    linear: Cost

    @property
    def total(self) -> Cost:
        """``attention + linear``, equal to :func:`helpers.llm.decode_cost`."""
        return self.attention + self.linear


def decode_split(
    model: str | ModelConfig, context: int, *, batch: int = 1, dtype: str = "bf16"
) -> DecodeSplit:
    """Split :func:`helpers.llm.decode_cost` into its attention and its linear part.

    Attention is the part of the decode cost that grows with the context:
    ``decode_cost(context + 1) - decode_cost(context)`` is one more key per
    sequence (its score, its weighted value, its KV bytes), and attention
    over ``context + 1`` keys is ``context + 1`` times that. The linear part
    is what remains. Deriving the split from ``decode_cost`` keeps this
    module's counts identical to :mod:`helpers.llm`'s.

    Parameters
    ----------
    model : str or ModelConfig
    context : int
        Tokens already in each sequence's KV cache (>= 0).
    batch : int
        Sequences decoded together (>= 1).
    dtype : str
        Dtype of weights and KV cache.
    """
    m = get_model(model)
    context = _args.non_negative_int("context", context)
    batch = _args.positive_int("batch", batch)
    total = decode_cost(m, context, batch=batch, dtype=dtype)
    longer = decode_cost(m, context + 1, batch=batch, dtype=dtype)
    keys = context + 1
    attention = Cost(
        (longer.flops - total.flops) * keys, (longer.bytes - total.bytes) * keys
    )
    linear = Cost(total.flops - attention.flops, total.bytes - attention.bytes)
    return DecodeSplit(attention, linear)


def attention_intensity(
    model: str | ModelConfig,
    *,
    dtype: str = "bf16",
    query_tokens: int = 1,
    heads_per_device: int | None = None,
) -> float:
    """Arithmetic intensity of decode attention on one device, in FLOP/byte (long contexts).

    Per cached token and layer a device reads the KV elements its query
    heads need once, and each of its ``s_q = query_tokens`` new tokens spends
    2 FLOP per multiply-accumulate on them for every one of its
    ``h_d = heads_per_device`` query heads (absorbed form for MLA).

    * MHA/GQA (group ``g`` query heads per KV head, head width ``d``): the
      device reads ``ceil(h_d / g)`` KV heads, so the intensity is
      ``4 d h_d s_q / (2 d ceil(h_d / g) b) = 2 h_d s_q / (ceil(h_d / g) b)``,
      which is ``2 g s_q / b`` whenever ``h_d`` is a multiple of ``g``:
      Llama-3-70B (group 8) in bf16 with one query token: 8 FLOP/byte on one
      GPU or under TP-8 (8 query heads and 1 KV head per GPU) alike.
    * MLA: every head scores the same latent and rotary key, so the device
      reads the whole entry (``kv_lora + rope`` elements) whatever ``h_d``:
      ``2 h_d (2 kv_lora + rope) s_q / ((kv_lora + rope) b)``, about
      ``4 h_d s_q / b``. DeepSeek-V3 in bf16 with all 128 heads on one device
      (data-parallel attention, as DeepSeek and SGLang deploy it):
      ``2 * 128 * 1088 / 1152 = 241.8``, close to an H100's ridge (295);
      head-sharded over TP-8, 16 heads per GPU: ``2 * 16 * 1088 / 1152 = 30.2``,
      memory-bound. FlashMLA's note puts the rule at ``2 h_q s_q`` with
      ``h_q`` the heads per GPU.

    No batch appears (each sequence reads its own cache), and no context
    either once it is long (the new tokens' own keys are neglected).

    Parameters
    ----------
    model : str or ModelConfig
    dtype : str
        KV cache dtype (sets ``b``, bytes per element).
    query_tokens : int
        New tokens per sequence per step, >= 1 (> 1 with speculative decoding).
    heads_per_device : int, optional
        Query heads one device computes, 1 to ``n_heads``; default all
        (``n_heads / tensor_parallel`` for head-sharded tensor parallelism).
    """
    m = get_model(model)
    s_q = _args.positive_int("query_tokens", query_tokens)
    h = m.n_heads
    if heads_per_device is not None:
        h = _args.positive_int("heads_per_device", heads_per_device)
        if h > m.n_heads:
            raise ValueError(
                f"heads_per_device must be at most the model's {m.n_heads} heads, got {h}"
            )
    per_pair = m.attention_flops_per_pair(absorbed=True) * h / m.n_heads
    if m.mla is not None:
        elements = float(m.kv_elements_per_layer)
    else:
        elements = m.kv_elements_per_layer * math.ceil(h / m.gqa_group) / m.n_kv_heads
    return s_q * per_pair / (elements * dtype_bytes(dtype))


def kv_bytes_per_token_per_device(
    model: str | ModelConfig,
    *,
    dtype: str = "bf16",
    tensor_parallel: int = 1,
    decode_context_parallel: int = 1,
) -> float:
    """KV cache bytes one device stores per token when attention is head-sharded over ``tensor_parallel`` devices.

    MHA/GQA: the ``n_kv`` KV heads are split, each device holding
    ``max(n_kv / TP, 1)`` of them (a KV head is replicated once TP exceeds
    ``n_kv``), so the bytes are ``2 L d max(n_kv / TP, 1) b``: Llama-3-70B
    (8 KV heads) under TP-8 stores ``327,680 / 8 = 40,960`` bytes per token
    per GPU. MLA's latent is one "head" that every query head reads, so each
    of the TP devices stores all of it, ``L (kv_lora + rope) b``: DeepSeek-V3
    keeps ``61 * 576 * 2 = 70,272`` bytes per token on each GPU under any TP,
    and a TP group of ``G`` GPUs holds ``G`` times fewer tokens than the same
    GPUs under data-parallel attention (``tensor_parallel=1``: each sequence's
    cache on the one device that runs its attention).

    The latent cannot be split by heads, but it can be split by *tokens*:
    decode context parallelism (DCP, vLLM's ``--decode-context-parallel-size``,
    SGLang's ``--dcp-size``) stripes each sequence's cache over
    ``decode_context_parallel = c`` ranks of the TP group (rank ``r`` keeps the
    positions ``p`` with ``p mod c = r``), so each stores ``1/c`` of what it
    stored: DeepSeek-V3 under TP-8 with DCP-8 keeps ``70,272 / 8 = 8,784``
    bytes per token per GPU, as many tokens as data-parallel attention. For
    GQA, DCP can only remove the copies of a replicated KV head, so ``c`` must
    divide ``max(TP / n_kv, 1)``. :func:`dcp_exchange_bytes` gives what DCP
    sends instead.

    Parameters
    ----------
    model : str or ModelConfig
    dtype : str
        KV cache dtype.
    tensor_parallel : int
        Devices that share each sequence's attention heads, >= 1, at most ``n_heads``.
    decode_context_parallel : int
        Ranks of the TP group over which each sequence's tokens are striped, >= 1,
        a divisor of ``tensor_parallel`` (1: no DCP).
    """
    m = get_model(model)
    tp = _args.positive_int("tensor_parallel", tensor_parallel)
    dcp = _args.positive_int("decode_context_parallel", decode_context_parallel)
    if tp > m.n_heads:
        raise ValueError(
            f"tensor_parallel must be at most the model's {m.n_heads} heads, got {tp}"
        )
    if tp % dcp:
        raise ValueError(
            f"decode_context_parallel must divide tensor_parallel ({tp}), got {dcp}"
        )
    full = kv_cache_bytes_per_token(m, dtype=dtype)
    if m.mla is not None:
        return full / dcp
    copies = max(tp // m.n_kv_heads, 1)
    if copies % dcp:
        raise ValueError(
            "decode_context_parallel must divide the copies of each KV head "
            f"({copies} under TP-{tp} with {m.n_kv_heads} KV heads), got {dcp}"
        )
    return full * max(m.n_kv_heads / tp, 1) / m.n_kv_heads / dcp


def dcp_exchange_bytes(
    model: str | ModelConfig,
    *,
    batch: int,
    decode_context_parallel: int,
    dtype: str = "bf16",
) -> tuple[float, float]:
    """Bytes DCP exchanges per layer of a decode step: ``(query all-gather, output all-to-all)``.

    Under DCP each rank scores its ``1/c`` of every sequence's tokens with *all*
    the heads of the group, so per layer (for MLA, in the absorbed form that
    scores the latent directly):

    * the ranks all-gather the queries: ``b h (d_c + d_R) w`` bytes in all for
      MLA, ``b h d_h w`` for GQA;
    * each rank returns a partial output and its log-sum-exp for every head, and
      the ranks exchange them in one all-to-all to merge exactly:
      ``b h (d_c w + 4)`` bytes for MLA (the latent-space output before the value
      up-projection, plus an fp32 log-sum-exp), ``b h (d_h w + 4)`` for GQA.

    These are the array sizes ``S`` of :func:`helpers.parallel.collective_time`;
    a step pays them once per layer. DeepSeek-V3, batch 1, bf16: ``128 * 576 * 2
    = 147,456`` and ``128 * (512 * 2 + 4) = 131,584`` bytes.

    Parameters
    ----------
    model : str or ModelConfig
    batch : int
        Sequences in the decode step (of the DCP group), >= 1.
    decode_context_parallel : int
        DCP size, >= 2 (with 1 nothing is exchanged).
    dtype : str
        Dtype of the queries and outputs exchanged.
    """
    m = get_model(model)
    b = _args.positive_int("batch", batch)
    c = _args.positive_int("decode_context_parallel", decode_context_parallel)
    if c < 2:
        raise ValueError(
            f"decode_context_parallel must be >= 2 to exchange anything, got {c}"
        )
    w = dtype_bytes(dtype)
    if m.mla is not None:
        q = m.mla.kv_lora_rank + m.mla.qk_rope_head_dim
        out = m.mla.kv_lora_rank
    else:
        q = out = m.head_dim
    return (b * m.n_heads * q * w, b * m.n_heads * (out * w + 4.0))


def turnover_time_s(acc: str | Accelerator) -> float:
    """Seconds a device takes to read its whole memory once: capacity over bandwidth, ``C / W``.

    A fleet of memory devices sized to hold a KV cache needs at least this
    long per decode step once the cache fills them (each reads all of its
    own memory): a floor that more devices of the same kind do not lower.
    H100 SXM: ``80 GiB / 3.35 TB/s = 85.9e9 / 3.35e12 = 25.6`` ms.
    """
    device = get_accelerator(acc)
    return device.memory_capacity / device.memory_bandwidth


def layer_traffic_bytes(
    model: str | ModelConfig, *, dtype: str = "bf16"
) -> tuple[float, float]:
    """Bytes one sequence moves per layer between compute and memory devices: ``(sent, received)``.

    Sent to the memory device: the query (``n_heads * head_dim`` elements)
    and the new token's key and value (``2 * n_kv_heads * head_dim``, to be
    appended to the cache there). Received back: the attention output
    (``n_heads * head_dim``). For Llama-3-70B in bf16: sent
    ``(8192 + 2 * 1024) * 2 = 20,480`` bytes, received ``16,384`` bytes.
    With MLA (absorbed form) the query is ``n_heads * (kv_lora + rope)``
    wide, the new entry ``kv_lora + rope`` and the output ``n_heads * kv_lora``.
    """
    m = get_model(model)
    width = dtype_bytes(dtype)
    if m.mla is not None:
        entry = m.kv_elements_per_layer
        return float((m.n_heads + 1) * entry * width), float(
            m.n_heads * m.mla.kv_lora_rank * width
        )
    return float((m.q_dim + 2 * m.kv_dim) * width), float(m.q_dim * width)


def step_traffic_bytes(
    model: str | ModelConfig, *, batch: int = 1, dtype: str = "bf16"
) -> float:
    """Bytes moved (both directions) in one decode step: ``batch * n_layers * (sent + received)``."""
    m = get_model(model)
    batch = _args.positive_int("batch", batch)
    sent, received = layer_traffic_bytes(m, dtype=dtype)
    return batch * m.n_layers * (sent + received)


def step_latency_s(model: str | ModelConfig, link: str | Link) -> float:
    """Seconds of link latency in one offloaded decode step: ``2 * n_layers * latency``.

    Every layer crosses the link twice (query, key and value out; attention
    output back), and the crossings of one step are sequential, so this term
    does not shrink with more links or more bandwidth. For Llama-3-70B over
    ConnectX-7 (2 µs): ``160 * 2e-6 = 0.32`` ms.
    """
    return 2 * get_model(model).n_layers * get_link(link).latency


@dataclass(frozen=True)
class OffloadStep:
    """Times of one decode step with attention offloaded (seconds).

    Attributes
    ----------
    linear_s : float
        Linear part on the compute GPUs (roofline time, work split evenly).
    attention_s : float
        Attention on the memory devices (roofline time, sequences split evenly).
    transfer_s : float
        The link on the step's critical path without pipelining: every layer
        sends, then (after attention) receives, so both directions' bytes
        add up, plus two link latencies per layer.
    traffic_bytes : float
        Bytes moved in the step, both directions together.
    link_busy_s : float
        The link's occupancy per step when micro-batches pipeline the layers
        over a full-duplex link: the two directions carry different
        micro-batches at once, so the busier direction sets it
        (``max(sent, received) / bandwidth``; latency overlaps too).
    linear_pipelined_s : float
        The linear part when the batch is split into ``micro_batches``
        micro-batches (to overlap the parts): each re-reads the weights.
    micro_batches : int
        Micro-batches assumed by ``linear_pipelined_s`` and :attr:`overlapped_s`.
    """

    linear_s: float
    attention_s: float
    transfer_s: float
    traffic_bytes: float
    link_busy_s: float
    linear_pipelined_s: float
    micro_batches: int

    @property
    def serial_s(self) -> float:
        """Step time when the three parts run one after another (no overlap): their sum."""
        return self.linear_s + self.attention_s + self.transfer_s

    @property
    def overlapped_s(self) -> float:
        """Step time when ``micro_batches`` micro-batches pipeline the parts: the slowest busy resource.

        ``max(linear_pipelined_s, attention_s, link_busy_s)``. A bound, not a
        promise: it assumes the micro-batches keep every device and both
        directions of the link busy at once and ignores the pipeline's fill
        and drain (Lamina pipelines micro-batches this way). Splitting into
        micro-batches makes each re-read the weights, which is why the
        linear term is ``linear_pipelined_s`` and not ``linear_s``.
        """
        return max(self.linear_pipelined_s, self.attention_s, self.link_busy_s)


def offload_step_time(
    model: str | ModelConfig,
    context: int,
    compute_acc: str | Accelerator,
    memory_acc: str | Accelerator,
    link: str | Link,
    *,
    batch: int = 1,
    n_compute: int = 1,
    n_memory: int = 1,
    dtype: str = "bf16",
    n_links: int | None = None,
    mfu: float = 1.0,
    micro_batches: int = 2,
) -> OffloadStep:
    """Time one decode step with linear layers on compute GPUs and attention on memory devices.

    Parameters
    ----------
    model : str or ModelConfig
    context : int
        Tokens in each sequence's cache.
    batch : int
        Sequences decoded together.
    compute_acc, memory_acc : str or Accelerator
        The compute-rich device (holds the weights) and the memory-rich one (holds the KV cache).
    link : str or Link
        The link between them; its bandwidth is per direction.
    n_compute, n_memory : int
        How many of each; each kind splits its work evenly (communication
        inside a kind, e.g. tensor-parallel all-reduces, is ignored).
    dtype : str
    n_links : int, optional
        Parallel links carrying the traffic. Default: one link per device on
        each side, so ``min(n_compute, n_memory)`` (the side with fewer links
        is the bottleneck).
    mfu : float
        Fraction of the compute GPUs' peak FLOP/s reached by the linear part.
    micro_batches : int
        Micro-batches the overlapped bound assumes (2, the fewest that can
        overlap; capped at ``batch``); each re-reads the weights.

    Returns
    -------
    OffloadStep
        ``transfer_s = 2 * n_layers * latency + traffic / (n_links * bandwidth)``
        (critical path); ``link_busy_s = batch * n_layers * max(sent, received)
        / (n_links * bandwidth)`` (full-duplex occupancy).
    """
    n_compute = _args.positive_int("n_compute", n_compute)
    batch = _args.positive_int("batch", batch)
    micro_batches = min(_args.positive_int("micro_batches", micro_batches), batch)
    n_memory = _args.positive_int("n_memory", n_memory)
    n_links = (
        min(n_compute, n_memory)
        if n_links is None
        else _args.positive_int("n_links", n_links)
    )
    chosen = get_link(link)
    m = get_model(model)
    split = decode_split(m, context, batch=batch, dtype=dtype)
    linear_s = breakdown(
        split.linear.flops,
        split.linear.bytes,
        compute_acc,
        dtype=dtype,
        n_gpus=n_compute,
        mfu=mfu,
    ).seconds
    linear_pipelined_s = 0.0
    for k in range(micro_batches):  # sizes differ by at most one sequence
        size = batch // micro_batches + (k < batch % micro_batches)
        part = decode_split(m, context, batch=size, dtype=dtype).linear
        linear_pipelined_s += breakdown(
            part.flops, part.bytes, compute_acc, dtype=dtype, n_gpus=n_compute, mfu=mfu
        ).seconds
    attention_s = breakdown(
        split.attention.flops,
        split.attention.bytes,
        memory_acc,
        dtype=dtype,
        n_gpus=n_memory,
    ).seconds
    traffic = step_traffic_bytes(m, batch=batch, dtype=dtype)
    transfer_s = step_latency_s(m, chosen) + traffic / (n_links * chosen.bandwidth)
    busiest = max(layer_traffic_bytes(m, dtype=dtype))
    link_busy_s = batch * m.n_layers * busiest / (n_links * chosen.bandwidth)
    return OffloadStep(
        linear_s,
        attention_s,
        transfer_s,
        traffic,
        link_busy_s,
        linear_pipelined_s,
        micro_batches,
    )


def tokens_per_dollar(tokens_per_second: float, price_per_hour: float) -> float:
    """Tokens generated per dollar: ``tokens_per_second * 3600 / price_per_hour``.

    ``price_per_hour`` is what the reader pays for the whole deployment, in
    dollars per hour; no price is built in.
    """
    tokens_per_second = _args.non_negative("tokens_per_second", tokens_per_second)
    price_per_hour = _args.positive("price_per_hour", price_per_hour)
    return tokens_per_second * 3600.0 / price_per_hour


def breakeven_price_ratio(
    offload_tokens_per_s: float,
    n_compute: int,
    n_memory: int,
    baseline_tokens_per_s: float,
    n_baseline: int,
) -> float:
    """Price of one memory device, as a fraction of one compute GPU's, at which offload and baseline tie.

    The baseline runs ``n_baseline`` compute GPUs at price ``p`` each; the
    offload deployment ``n_compute`` of them plus ``n_memory`` memory
    devices at price ``q`` each. Equal tokens per dollar,
    ``T_off / (n_compute p + n_memory q) = T_base / (n_baseline p)``, gives
    ``q / p = (n_baseline T_off / T_base - n_compute) / n_memory``.
    Offload is cheaper per token iff the memory device costs less than that
    fraction; a negative result means it loses even with free memory devices.
    No price is needed, only the ratio.
    """
    offload_tokens_per_s = _args.non_negative(
        "offload_tokens_per_s", offload_tokens_per_s
    )
    baseline_tokens_per_s = _args.positive(
        "baseline_tokens_per_s", baseline_tokens_per_s
    )
    n_compute = _args.positive_int("n_compute", n_compute)
    n_memory = _args.positive_int("n_memory", n_memory)
    n_baseline = _args.positive_int("n_baseline", n_baseline)
    return (
        n_baseline * offload_tokens_per_s / baseline_tokens_per_s - n_compute
    ) / n_memory
