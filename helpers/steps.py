"""A serving step priced kernel by kernel: the prediction beside :mod:`helpers.inference`'s bound.

:func:`helpers.inference.decode_step` and :func:`~helpers.inference.prefill_step`
price a whole forward pass as ONE roofline, ``max(all FLOP / peak, all bytes /
bandwidth)``, as if the weight GEMMs could hide under attention's KV reads.
That is a **lower bound**, and the chapters use it as one. A serving engine
runs the pass as separate kernels, back to back on one stream, each bound by
its own resource; the step therefore takes the **sum** of the kernels' times.
This module is that sum, the book's **prediction** of a step:

``step = sum over kernels (max(flops / (f_c peak), bytes / (f_m bandwidth)) + floor) + collectives``

kernel by kernel, for one GPU of a tensor-parallel group, per layer:

* **GEMMs** (QKV, O, gate-up, down; MLA's projections; the router, the
  routed experts as one grouped GEMM, the shared experts): compute share
  ``f_c`` = the published achievable matmul share of the GPU in that
  precision (:func:`helpers.achievable.fractions`) times the tile and wave
  utilisation of the shape (:func:`helpers.ops.gemm_efficiency`; for a GPU
  with no published SM count, the tiles' share alone, :func:`helpers.ops.tile_efficiency`); memory
  share and fixed cost from a line through published small-GEMM timings
  (:func:`helpers.efficiency.gemm_floor`). Low-bit weights whose precision
  the tensor cores lack (int4, fp4 before Blackwell, fp8 before Hopper) are
  dequantised in the GEMM: ``4`` vector operations per weight element per
  128-row tile, on the vector roof (:meth:`helpers.hardware.Accelerator.vector_flops`).
* **attention**: decode at the published decode kernel's bandwidth and
  compute shares (:func:`helpers.efficiency.attention_fractions`); prefill
  at FlashAttention's published share of the peak times the causal tiles'
  and waves' utilisation (:func:`prefill_attention_efficiency`).
* **elementwise** (two fused add-RMSNorms, rotary embedding, SiLU-and-mul,
  and a per-token quantisation before each group of 8-bit GEMMs) at the
  memory roof with the GEMMs' streaming share.
* **LM head** over the sequences that need logits, in 16 bits whatever the
  weights' precision (vLLM's and ModelOpt's FP8 and INT4 schemes quantise the
  blocks' linear layers, not the LM head or the embeddings), and **sampling**
  (a few kernels over ``seqs x vocab`` fp32 logits).
* **collectives**: two tensor-parallel all-reduces per layer at NCCL's
  measured bus bandwidth (:func:`helpers.efficiency.busbw_fraction`), the
  faster of ring and tree as NCCL picks; with expert parallelism, a
  dispatch and a combine all-to-all per MoE layer at DeepEP's measured
  share of the link (:func:`helpers.efficiency.busbw_fraction`,
  ``algorithm="alltoall"``), the busiest GPU's experts waiting for
  :func:`imbalance`.
* **floor**: every kernel pays :func:`helpers.dispatch.kernel_floor`
  (GEMMs the larger :func:`helpers.efficiency.gemm_floor`).

Nothing overlaps except what the engine overlaps: nothing, in the engines
modelled (vLLM, SGLang and TensorRT-LLM run one stream per step; SGLang's
two-batch overlap for DeepSeek is not modelled). Inside one kernel the
roofline's overlap of loads and math is kept (``max``): published GEMM
time against rows (``gemm_overlap.csv``: vLLM's H100 kernel benchmark, bf16
and fp8, 1 to 128 rows; ``gemm.csv``: DeepGEMM's H800 rows) sit within a few
per cent of it, and 25-46 % below the sum ``F/P + B/W``; a software
pipeline exposes only its first load and last MMA, ``min / (K / BK)``, about
1-2 % at these shapes. ``gemm_overlap=1`` shows the sum's end
(:func:`helpers.roofline.overlap_bounds`). The data stop at 128 rows: GEMMs
at the ridge itself (a few hundred rows) are not calibrated.

:func:`decode_step`, :func:`prefill_step` and :func:`mixed_step` return a
:class:`StepTime`: the seconds, where they went (per kernel class), and the
whole-step bound beside them. Precision is per tensor: ``weight_dtype``,
``act_dtype`` (GEMM inputs) and ``kv_dtype`` (the cache, any
:data:`helpers.kv_formats.KV_FORMATS`).

Examples
--------
>>> from helpers import steps
>>> s = steps.decode_step("llama-3-8b", 1024, "H100", batch=64)
>>> s.seconds > s.bound_s
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from . import _args, achievable, dispatch, efficiency, ops, parallel
from .hardware import FP4_DENSE_FLOPS, Accelerator, Link, get_accelerator, get_link
from .kv_formats import kv_format
from .llm import ModelConfig, get_model, kv_cache_bytes_per_token

WEIGHT_BYTES: Mapping[str, float] = MappingProxyType(
    {
        "fp32": 4.0,
        "bf16": 2.0,
        "fp16": 2.0,
        "fp8": 1.0,
        "int8": 1.0,
        "int4": 0.5 + 2.0 / 128,
        "fp4": 0.5 + 1.0 / 16,
    }
)
"""Bytes per stored weight element, scales included.

int4: AWQ/GPTQ-style groups of 128 with an fp16 scale (0.5 + 2/128);
fp4: NVFP4, an fp8 scale per 16 elements (0.5 + 1/16), as in
:data:`helpers.kv_formats.KV_FORMATS`. fp8 and int8 carry per-channel or
per-tensor scales, negligible.
"""

DEQUANT_OPS_PER_ELEMENT = 4
"""Vector operations to restore one low-bit weight in a mixed-precision GEMM.

Unpack, convert, scale, and apply the zero point or sign.

Charged once per weight element per 128-row output tile (each thread block
restores the weights it multiplies), on the vector (CUDA-core) roof, in
series with the tensor-core work: Marlin and Machete (vLLM's W4A16 kernels)
dequantise in registers between the loads and the MMAs.
"""

KERNEL_CLASSES = (
    "gemm",
    "attention",
    "elementwise",
    "lm_head",
    "sampling",
    "tp_comm",
    "ep_comm",
)
"""The classes :attr:`StepTime.parts` splits a step into."""


def weight_bytes_per_element(weight_dtype: str) -> float:
    """Bytes one weight element takes in ``weight_dtype`` (:data:`WEIGHT_BYTES`).

    Raises ``KeyError`` naming the parameter for an unknown precision.
    """
    key = _args.name("weight_dtype", weight_dtype)
    if key not in WEIGHT_BYTES:
        raise KeyError(
            f"weight_dtype {weight_dtype!r} is unknown; choose one of {sorted(WEIGHT_BYTES)}"
        )
    return WEIGHT_BYTES[key]


def compute_dtype(acc: str | Accelerator, weight_dtype: str, act_dtype: str) -> str:
    """Which tensor-core precision a GEMM of ``weight_dtype`` weights and ``act_dtype`` inputs runs in on ``acc``.

    Both operands must share the tensor cores' format: 8-bit weights with
    8-bit activations run at the 8-bit peak if ``acc`` has one, NVFP4 with
    NVFP4 at the FP4 peak on Blackwell (``helpers.hardware.FP4_DENSE_FLOPS``); anything
    else runs at ``act_dtype``'s 16-bit peak with the weights dequantised
    (weight-only quantisation, W8A16 / W4A16).

    >>> compute_dtype("H100", "fp8", "fp8"), compute_dtype("A100", "fp8", "fp8"), compute_dtype("H100", "int4", "bf16")
    ('fp8', 'bf16', 'bf16')
    """
    device = get_accelerator(acc)
    w = _args.name("weight_dtype", weight_dtype)
    a = _args.name("act_dtype", act_dtype)
    weight_bytes_per_element(w)
    if a == w == "fp4" and device.name in FP4_DENSE_FLOPS:
        return "fp4"
    if a == w and a in device.peak_flops and a in ("fp8", "int8", "bf16", "fp16"):
        return a
    wide = a if a in ("bf16", "fp16") else "bf16"
    if wide not in device.peak_flops:
        wide = "fp16"
    return wide


def _dequantises(acc: Accelerator, weight_dtype: str, act_dtype: str) -> bool:
    return weight_dtype in ("int4", "fp4", "fp8", "int8") and compute_dtype(
        acc, weight_dtype, act_dtype
    ) in ("bf16", "fp16")


def dequant_roof(acc: str | Accelerator) -> float:
    """FLOP/s of the plain (non-tensor) units that restore low-bit weights: the dequantisation roof.

    The 16-bit vector peak (:meth:`helpers.hardware.Accelerator.vector_flops`,
    bf16), else the fp32 one, else an eighth of the 16-bit tensor peak for a
    part whose catalog entry lists no vector figure.
    """
    device = accelerator(acc)
    try:
        return device.vector_flops("bf16")
    except KeyError:
        pass
    if device.vector_peak_flops:
        return device.vector_flops("fp32")
    return device.flops("bf16" if "bf16" in device.peak_flops else "fp16") / 8


def dequant_critical_batch(
    acc: str | Accelerator, *, weight_dtype: str = "int4"
) -> tuple[float, float]:
    """Critical batch (rows) of a wide low-bit layer in 16-bit arithmetic: ``(bytes only, with dequantisation)``.

    Per weight element a batch of ``b`` rows costs ``w_w / W`` seconds of
    loads, ``2 b / P`` of tensor-core arithmetic and ``c / V`` of
    dequantisation on the plain units (:data:`DEQUANT_OPS_PER_ELEMENT` on
    :func:`dequant_roof`, once per 128-row tile), the last two in series.
    Setting compute equal to loads:

    ``b* = (P / W) (w_w / 2) - P c / (2 V)``

    The first term is the bytes-only rule of :func:`helpers.ops.critical_batch_size`;
    the second is the rows the dequantisation takes away, so a low-bit
    layer turns compute-bound sooner than its bytes say. ``P`` is the 16-bit
    tensor peak, ``W`` the memory bandwidth, ``w_w`` the stored bytes per
    weight with scales (:func:`weight_bytes_per_element`). Valid while
    ``b*`` stays within one 128-row tile; 0 if the dequantisation alone
    outlasts the loads.

    >>> [round(x) for x in dequant_critical_batch("H100")]
    [76, 61]
    """
    device = accelerator(acc)
    w = _args.name("weight_dtype", weight_dtype)
    if w not in ("int4", "fp4", "int8", "fp8"):
        raise ValueError(
            f"weight_dtype must be a low-bit format (int4, fp4, int8, fp8), got {weight_dtype!r}"
        )
    dtype16 = "bf16" if "bf16" in device.peak_flops else "fp16"
    peak = device.flops(dtype16)
    # ops.critical_batch_size's wide-layer rule, with the scales in w_w
    bytes_only = device.ridge(dtype16) * weight_bytes_per_element(w) / 2
    with_dequant = bytes_only - peak * DEQUANT_OPS_PER_ELEMENT / (
        2 * dequant_roof(device)
    )
    return bytes_only, max(0.0, with_dequant)


@dataclass(frozen=True)
class StepTime:
    """One step's predicted time, where it went, and the whole-step bound beside it.

    Attributes
    ----------
    seconds : float
        The prediction: the sum of the kernels' times and collectives (s).
    parts : Mapping[str, float]
        Seconds per kernel class (:data:`KERNEL_CLASSES`, each its roofline
        term at its measured share) and ``"floors"``, every kernel's fixed
        cost together; they sum to ``seconds``.
    floor_s : float
        The kernels' fixed costs, ``parts["floors"]`` (s).
    bound_s : float
        The whole-step roofline of the same kernels, ``max(sum flops / peak,
        sum bytes / bandwidth)`` at datasheet peaks plus the collectives: a
        lower bound, for comparison.
    kernels : int
        Kernels launched.
    """

    seconds: float
    parts: Mapping[str, float]
    floor_s: float
    bound_s: float
    kernels: int
    flops: float = field(default=0.0)
    bytes: float = field(default=0.0)


def prefill_attention_efficiency(
    tokens: int, heads: int, acc: str | Accelerator, *, block: int = 128
) -> float:
    """Share of FlashAttention's best rate a causal prefill of ``tokens`` tokens keeps: diagonal tiles and waves.

    FlashAttention tiles the ``tokens x tokens`` score matrix in ``block x
    block`` tiles and skips those above the diagonal; the ``nb (nb + 1) / 2``
    tiles it computes (``nb = ceil(tokens / block)``) hold ``tokens (tokens +
    1) / 2`` useful pairs. Its ``heads * nb`` thread blocks (one per query
    tile and head) fill the SMs in waves (:func:`helpers.ops.gemm_utilization`'s
    rule; left out for a GPU with no published SM count). The product is the
    share kept; 1 only for long sequences.

    >>> round(prefill_attention_efficiency(512, 32, "H100"), 2)
    0.78
    >>> round(prefill_attention_efficiency(8192, 32, "H100"), 2)
    0.95
    """
    tokens = _args.positive_int("tokens", tokens)
    heads = _args.positive_int("heads", heads)
    nb = math.ceil(tokens / block)
    useful = tokens * (tokens + 1) / 2
    computed = nb * (nb + 1) / 2 * block * block
    ctas = heads * nb
    sms = get_accelerator(acc).sm_count
    waves = 1.0 if sms is None else ctas / (math.ceil(ctas / sms) * sms)
    return useful / computed * waves


@dataclass(frozen=True)
class _Gemm:
    n: int
    k: int
    name: str
    groups: int = 1  # experts in one grouped GEMM (weights read ``groups`` times)
    rows_share: float = 1.0  # rows each group gets, as a share of the step's tokens


def _dense_gemms(m: ModelConfig, tp: int, attn_tp: int) -> list[_Gemm]:
    d = m.d_model
    out: list[_Gemm] = []
    a = m.mla
    if a is None:
        kv_heads = max(1, m.n_kv_heads // attn_tp)
        q = m.q_dim // attn_tp
        out.append(_Gemm(q + 2 * kv_heads * m.head_dim, d, "qkv"))
        out.append(_Gemm(d, q, "o"))
    else:
        h = m.n_heads // attn_tp
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            out.append(
                _Gemm(a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim, d, "qkv_a")
            )
            out.append(_Gemm(h * qk, a.q_lora_rank, "q_b"))
        else:
            out.append(_Gemm(h * qk + a.kv_lora_rank + a.qk_rope_head_dim, d, "qkv_a"))
        out.append(
            _Gemm(h * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, "kv_b")
        )
        out.append(_Gemm(d, h * a.v_head_dim, "o"))
    return out


def _mlp_gemms(m: ModelConfig, tp: int, d_ff: int) -> list[_Gemm]:
    width = d_ff // tp
    return [
        _Gemm((2 if m.gated_mlp else 1) * width, m.d_model, "gate_up"),
        _Gemm(m.d_model, width, "down"),
    ]


@dataclass(frozen=True)
class _Config:
    model: ModelConfig
    acc: Accelerator
    tp: int
    ep: int
    dp_attention: bool
    weight_dtype: str
    act_dtype: str
    kv_dtype: str
    link: Link | None
    gemm_overlap: float = 0.0
    expert_skew: float = 1.0


class Pricer:
    """One deployment's kernel prices, cached: what :func:`mixed_step` sums and the engine calls.

    Made by :func:`pricer` (one per model, GPU, parallelism, precisions and
    link). Its methods give the token-proportional kernels of a step
    (``linear_part``), decode and prefill attention (``decode_attention``,
    ``prefill_attention``) and the LM head with sampling (``head``), each as
    seconds with the FLOP and bytes behind them.
    """

    def __init__(self, cfg: _Config) -> None:
        self.cfg = cfg
        m, acc = cfg.model, cfg.acc
        self.floor = dispatch.kernel_floor(acc)
        gf = efficiency.gemm_floor(acc)
        self.gemm_floor = max(gf.floor_s, self.floor)
        self.f_mem = gf.memory_fraction
        self.cdtype = compute_dtype(acc, cfg.weight_dtype, cfg.act_dtype)
        self.f_comp = achievable.fractions(acc, self.cdtype)[0]
        self.f_comp16 = achievable.fractions(acc, "bf16")[0]
        self.peak = (
            FP4_DENSE_FLOPS[acc.name]
            if self.cdtype == "fp4"
            else acc.flops(self.cdtype)
        )
        self.bw = acc.memory_bandwidth
        self.wbytes = weight_bytes_per_element(cfg.weight_dtype)
        self.abytes = {"fp8": 1.0, "int8": 1.0, "fp4": WEIGHT_BYTES["fp4"]}.get(
            self.cdtype, 2.0
        )
        self.dequant = _dequantises(acc, cfg.weight_dtype, cfg.act_dtype)
        self.vector_peak = dequant_roof(acc)
        self.attn = efficiency.attention_fractions(acc)
        self.peak16 = (
            acc.flops("bf16") if "bf16" in acc.peak_flops else acc.flops("fp16")
        )
        # the attention group: tp GPUs share heads, or each GPU runs its own sequences (dp_attention)
        self.attn_tp = 1 if cfg.dp_attention else cfg.tp
        self.attn_gemms = _dense_gemms(m, cfg.tp, self.attn_tp)
        self.kv_token_layer = self._kv_bytes_per_token_layer()
        self._cache: dict[int, tuple[float, float, float, float, float, float]] = {}
        self._heads: dict[int, tuple[float, float, float, float]] = {}
        self._attn_eff: dict[tuple[int, int], float] = {}

    # ---- pieces -------------------------------------------------------
    def _kv_bytes_per_token_layer(self) -> float:
        m = self.cfg.model
        per_token = kv_cache_bytes_per_token(m, kv_dtype=self.cfg.kv_dtype) / m.n_layers
        if m.mla is not None:
            return per_token  # a latent is not split across heads
        return per_token * max(1, m.n_kv_heads // self.attn_tp) / m.n_kv_heads

    def gemm(
        self, rows: float, g: _Gemm, *, wide: bool = False
    ) -> tuple[float, float, float]:
        """(seconds without floor, flops, bytes) of one GEMM (or grouped GEMM) over ``rows`` token rows.

        ``wide``: a 16-bit GEMM whatever the deployment's precision (the LM head).
        """
        if rows <= 0:
            return 0.0, 0.0, 0.0
        per_group = max(rows * g.rows_share, 1e-9)
        flops = 2.0 * per_group * g.n * g.k * g.groups
        wb, ab = (2.0, 2.0) if wide else (self.wbytes, self.abytes)
        wbytes = g.n * g.k * wb * g.groups
        abytes = per_group * g.groups * (g.k * ab + g.n * 2.0)
        mrows = max(1, math.ceil(per_group))
        if self.cfg.acc.sm_count is None:  # waves unknown: the tiles' useful share only
            util = ops.tile_efficiency(mrows, g.n)
        else:
            util = ops.gemm_efficiency(mrows, g.n, g.k, self.cfg.acc, batch=g.groups)
        if wide:
            compute = flops / (self.peak16 * self.f_comp16 * util)
        else:
            compute = flops / (self.peak * self.f_comp * util)
        if self.dequant and not wide:
            tiles = math.ceil(per_group / 128)
            compute += (
                tiles
                * g.n
                * g.k
                * g.groups
                * DEQUANT_OPS_PER_ELEMENT
                / self.vector_peak
            )
        memory = (wbytes + abytes) / (self.bw * self.f_mem)
        shown = self.cfg.gemm_overlap * min(compute, memory)
        return max(compute, memory) + shown, flops, wbytes + abytes

    def elementwise(self, nbytes: float) -> float:
        return nbytes / (self.bw * self.f_mem)

    def allreduce(self, nbytes: float, n: int) -> float:
        link = self.cfg.link
        if n <= 1 or link is None or nbytes <= 0:
            return 0.0
        frac = efficiency.busbw_fraction(link.name)
        derated = Link(link.name, link.bandwidth * frac, link.latency, link.source)
        return min(
            parallel.allreduce_time(nbytes, n, derated, algorithm=a)
            for a in ("ring", "tree")
        )

    # ---- the token-proportional part of a step, tabulated by token count ----
    def linear_part(
        self, tokens: int
    ) -> tuple[float, float, float, float, float, float]:
        """Token-proportional part of a step of ``tokens`` tokens, all layers.

        ``(gemm_s, elementwise_s, tp_comm_s, ep_comm_s, floors_s, kernels, flops, bytes)``.
        """
        hit = self._cache.get(tokens)
        if hit is not None:
            return hit
        cfg, m = self.cfg, self.cfg.model
        tp = cfg.tp
        # dp attention: each GPU runs 1/tp of the tokens through attention projections
        attn_rows = tokens / tp if cfg.dp_attention else tokens
        gemm_s = elem_s = comm_s = ep_s = floors = 0.0
        kernels = 0.0
        flops = nbytes = 0.0
        d = m.d_model
        act = 2.0  # activations between kernels stay 16-bit

        def add_gemms(rows: float, gemms: list[_Gemm]) -> None:
            nonlocal gemm_s, floors, kernels, flops, nbytes
            for g in gemms:
                s, f, b = self.gemm(rows, g)
                gemm_s += s
                floors += self.gemm_floor
                kernels += 1
                flops += f
                nbytes += b

        def add_elem(nb: float, count: int = 1) -> None:
            nonlocal elem_s, floors, kernels, nbytes
            elem_s += self.elementwise(nb)
            floors += count * self.floor
            kernels += count
            nbytes += nb

        dense_layers = m.n_layers if m.moe is None else m.moe.first_dense_layers
        moe_layers = m.n_layers - dense_layers
        quant = self.cdtype in ("fp8", "int8", "fp4")
        for layers, moe in ((dense_layers, False), (moe_layers, True)):
            if layers == 0:
                continue
            before = (gemm_s, elem_s, comm_s, ep_s, floors, kernels, flops, nbytes)
            # attention half: norm, projections, rope (attention itself is priced per step)
            add_elem(
                4 * attn_rows * d * act
            )  # fused add + RMSNorm: read x, r; write x, r
            add_gemms(attn_rows, self.attn_gemms)
            qk = sum(g.n for g in self.attn_gemms[:1])
            add_elem(2 * attn_rows * qk * act)  # rotary embedding on q and k
            if quant:
                add_elem(attn_rows * d * (act + 1), 2)
            if not cfg.dp_attention:
                comm_s += self.allreduce(tokens * d * act, tp)
            add_elem(4 * attn_rows * d * act)  # post-attention fused add + RMSNorm
            if not moe:
                assert m.d_ff
                # under data-parallel attention the dense MLP runs whole on each GPU's
                # own tokens (SGLang's moe_dense_tp_size=1): no all-reduce
                mlp_tp = 1 if cfg.dp_attention else tp
                mlp = _mlp_gemms(m, mlp_tp, m.d_ff)
                add_gemms(attn_rows, mlp)
                add_elem(3 * attn_rows * (m.d_ff // mlp_tp) * act)  # SiLU and mul
                if quant:
                    add_elem(attn_rows * (d + m.d_ff // mlp_tp) * (act + 1), 2)
                if not cfg.dp_attention:
                    comm_s += self.allreduce(tokens * d * act, tp)
            else:
                self._moe_layer(tokens, add_gemms, add_elem)
                ep_s += self._moe_comm(tokens)
                if self.cfg.ep == 1:
                    # experts split over the tensor-parallel group: their partial sums are
                    # all-reduced; under data-parallel attention the replica's tokens are
                    # all-gathered before and reduce-scattered after (TensorRT-LLM's and
                    # SGLang's dp gather/scatter) -- the same bytes as one all-reduce
                    comm_s += self.allreduce(tokens * d * act, tp)
            after = (gemm_s, elem_s, comm_s, ep_s, floors, kernels, flops, nbytes)
            # one layer was added; scale it to ``layers``
            delta = [a - b for a, b in zip(after, before)]
            gemm_s, elem_s, comm_s, ep_s, floors, kernels, flops, nbytes = (
                b + layers * x for b, x in zip(before, delta)
            )
        result = (gemm_s, elem_s, comm_s, ep_s, floors, float(kernels), flops, nbytes)
        self._cache[tokens] = result  # type: ignore[assignment]
        return result  # type: ignore[return-value]

    def _moe_layer(self, tokens: int, add_gemms, add_elem) -> None:  # type: ignore[no-untyped-def]
        m, cfg = self.cfg.model, self.cfg
        assert m.moe is not None
        e, k, dff = m.moe.n_routed, m.moe.top_k, m.moe.d_ff_expert
        d = m.d_model
        # each GPU routes the tokens it holds: its own under data-parallel attention
        local = tokens / cfg.tp if cfg.dp_attention else tokens
        add_gemms(local, [_Gemm(e, d, "router")])
        add_elem(local * e * 4.0, 2)  # softmax/sigmoid + top-k
        ep = cfg.ep
        if ep > 1:
            local_experts = e / ep
            arrivals = tokens * k / ep  # token-expert pairs per GPU, mean
            arrivals *= imbalance(tokens * k, ep) * cfg.expert_skew
            touched = (
                local_experts * (1 - (1 - 1 / local_experts) ** arrivals)
                if local_experts > 1
                else 1.0
            )
            width = dff
        else:
            arrivals = tokens * k
            touched = e * (1 - (1 - k / e) ** tokens)
            width = dff // cfg.tp
        touched = max(touched, 1.0)
        groups = max(1, round(touched))
        share = arrivals / tokens / groups
        expert_gemms = [
            _Gemm((2 if m.gated_mlp else 1) * width, d, "experts_up", groups, share),
            _Gemm(d, width, "experts_down", groups, share),
        ]
        add_gemms(tokens, expert_gemms)
        add_elem(3 * arrivals * width * 2.0)
        if m.moe.n_shared:
            # shared experts: whole on each GPU's own tokens under data-parallel
            # attention, else split over the tensor-parallel group
            shared_w = m.moe.n_shared * dff // (1 if cfg.dp_attention else cfg.tp)
            add_gemms(local, _mlp_gemms_width(m, shared_w))
            add_elem(3 * local * shared_w * 2.0)
        # weighted combine: each GPU sums the expert outputs it holds, 1/ep of the
        # token-expert pairs (its local experts' partial sums, or its own tokens'
        # returned outputs under data-parallel attention)
        add_elem(tokens * k * d * 2.0 / ep)

    def _moe_comm(self, tokens: int) -> float:
        cfg, m = self.cfg, self.cfg.model
        if cfg.ep <= 1 or cfg.link is None:
            return 0.0
        assert m.moe is not None
        frac = efficiency.busbw_fraction(cfg.link.name, algorithm="alltoall")
        derated = Link(
            cfg.link.name, cfg.link.bandwidth * frac, cfg.link.latency, cfg.link.source
        )
        per_gpu = max(tokens / cfg.ep, 1.0)
        elements = per_gpu * m.moe.top_k * m.d_model
        dispatch_b = elements * (1.0 if self.cdtype in ("fp8", "fp4") else 2.0)
        combine_b = elements * 2.0
        return parallel.alltoall_time(
            dispatch_b, cfg.ep, derated
        ) + parallel.alltoall_time(combine_b, cfg.ep, derated)

    # ---- attention --------------------------------------------------------
    def decode_attention(
        self, seqs: int, kv_tokens: float
    ) -> tuple[float, float, float]:
        """(seconds, flops, bytes) of decode attention over all layers.

        ``seqs`` queries read ``kv_tokens`` cached tokens in all.
        """
        if seqs <= 0:
            return 0.0, 0.0, 0.0
        m = self.cfg.model
        group = self.attn_tp if not self.cfg.dp_attention else 1
        local_seqs = seqs / self.cfg.tp if self.cfg.dp_attention else seqs
        local_kv = kv_tokens / self.cfg.tp if self.cfg.dp_attention else kv_tokens
        nbytes = local_kv * self.kv_token_layer
        per_pair = m.attention_flops_per_pair(absorbed=True) / group
        flops = local_kv * per_pair
        t = max(
            nbytes / (self.bw * self.attn.decode_memory),
            flops / (self.peak16 * self.attn.decode_compute),
        )
        del local_seqs
        return m.n_layers * t, m.n_layers * flops, m.n_layers * nbytes

    def prefill_attention(
        self, chunks: list[tuple[int, int]]
    ) -> tuple[float, float, float]:
        """(seconds, flops, bytes) of prefill attention, all layers, for chunks ``(tokens, prefix)``."""
        m = self.cfg.model
        group = self.attn_tp
        heads = max(1, m.n_heads // group)
        total_s = flops_all = bytes_all = 0.0
        for tokens, prefix in chunks:
            if tokens <= 0:
                continue
            pairs = tokens * prefix + tokens * (tokens + 1) / 2
            flops = pairs * m.attention_flops_per_pair(absorbed=False) / group
            key = (tokens + prefix, heads)
            share = self._attn_eff.get(key)
            if share is None:
                share = self._attn_eff[key] = prefill_attention_efficiency(
                    tokens + prefix, heads, self.cfg.acc
                )
            eff = self.attn.prefill_compute * share
            nbytes = (prefix + tokens) * self.kv_token_layer
            t = max(
                flops / (self.peak16 * eff),
                nbytes / (self.bw * self.attn.decode_memory),
            )
            total_s += t
            flops_all += flops
            bytes_all += nbytes
        if self.cfg.dp_attention:
            # each chunk runs on the GPU that owns its sequence: the replica's GPUs
            # share the chunks, taken as evenly balanced
            total_s /= self.cfg.tp
        return m.n_layers * total_s, m.n_layers * flops_all, m.n_layers * bytes_all

    def head(self, seqs: int) -> tuple[float, float, float, float]:
        """(lm_head_s, sampling_s, floors_s, kernels) for ``seqs`` sequences that need a next token."""
        if seqs <= 0:
            return 0.0, 0.0, 0.0, 0.0
        hit = self._heads.get(seqs)
        if hit is None:
            hit = self._heads[seqs] = self._head(seqs)
        return hit

    def _head(self, seqs: int) -> tuple[float, float, float, float]:
        m = self.cfg.model
        # The LM head is vocab-parallel over the group that runs attention on the
        # sequences. Under data-parallel attention that group is one GPU holding its
        # own sequences (SGLang's enable_dp_lm_head: ParallelLMHead over the attention
        # TP group), so each GPU computes whole-vocabulary logits for its share of the
        # replica's sequences and gathers nothing; the busiest GPU sets the time.
        group = self.attn_tp
        local = math.ceil(seqs / self.cfg.tp) if self.cfg.dp_attention else seqs
        vocab = m.vocab_size // group
        lm_s, _, _ = self.gemm(local, _Gemm(vocab, m.d_model, "lm_head"), wide=True)
        gather = 0.0
        if group > 1 and self.cfg.link is not None:
            gather = parallel.allgather_time(
                local * m.vocab_size * 4.0, group, self.cfg.link
            )
        sampling = self.elementwise(4 * local * m.vocab_size * 4.0)
        kernels = (
            1 + 4 + 1
        )  # final norm; the sampler's softmax, top-p/top-k, draw; embedding
        return (
            lm_s + gather,
            sampling,
            self.gemm_floor + kernels * self.floor,
            1 + kernels,
        )


def imbalance(assignments: float, ep: int) -> float:
    """Load of the busiest of ``ep`` expert-parallel GPUs over the mean, for ``assignments`` token-expert pairs.

    With uniform, independent routing each pair lands on a given GPU with
    probability ``p = 1 / ep``, so a GPU's load is binomial with mean
    ``mu = assignments p`` and standard deviation ``sigma = sqrt(assignments
    p (1 - p))``; the largest of ``ep`` such loads is about ``mu + sigma
    sqrt(2 ln ep)`` (the Gaussian extreme-value approximation). The step
    waits for the busiest GPU. Real routers are more skewed than uniform
    (DeepSeek rebalances with redundant experts, EPLB), so this is a lower
    bound on the imbalance. 1 GPU: 1.

    >>> round(imbalance(128 * 8, 8), 3)
    1.169
    """
    assignments = _args.positive("assignments", assignments)
    ep = _args.positive_int("ep", ep)
    if ep == 1:
        return 1.0
    p = 1.0 / ep
    mu = assignments * p
    sigma = math.sqrt(assignments * p * (1 - p))
    return (mu + sigma * math.sqrt(2 * math.log(ep))) / mu


def _mlp_gemms_width(m: ModelConfig, width: int) -> list[_Gemm]:
    return [
        _Gemm((2 if m.gated_mlp else 1) * width, m.d_model, "shared_up"),
        _Gemm(m.d_model, width, "shared_down"),
    ]


def default_act_dtype(acc: str | Accelerator, weight_dtype: str) -> str:
    """The GEMM input precision an engine pairs with ``weight_dtype`` weights on ``acc``.

    fp8 and int8 weights run W8A8 where the tensor cores take that format
    (vLLM's and SGLang's fp8 on Hopper and later), otherwise bf16; 4-bit
    weights run W4A16, except NVFP4 on Blackwell (W4A4); 16-bit weights, their own precision.

    >>> default_act_dtype("H100", "fp8"), default_act_dtype("A100", "fp8")
    ('fp8', 'bf16')
    """
    device = get_accelerator(acc)
    w = _args.name("weight_dtype", weight_dtype)
    weight_bytes_per_element(w)
    if w in ("fp8", "int8") and w in device.peak_flops:
        return w
    if w == "fp4" and device.name in FP4_DENSE_FLOPS:
        return "fp4"
    if w in ("bf16", "fp16", "fp32"):
        return w if w != "fp32" else "bf16"
    return "bf16"


def accelerator(acc: str | Accelerator) -> Accelerator:
    """The catalog's accelerator ``acc`` (a name or an :class:`Accelerator`), as every step is priced on.

    Raises ``KeyError`` naming the parameter ``acc`` for a name the catalog lacks.
    """
    try:
        return get_accelerator(acc)
    except KeyError as err:
        raise KeyError(f"acc: {err.args[0]}") from None


_PRICERS: dict[tuple, Pricer] = {}


def _pricer(cfg: _Config) -> Pricer:
    acc = cfg.acc
    key = (
        cfg.model,
        acc.name,
        acc.memory_bandwidth,
        tuple(sorted(acc.peak_flops.items())),
        cfg.tp,
        cfg.ep,
        cfg.dp_attention,
        cfg.weight_dtype,
        cfg.act_dtype,
        cfg.kv_dtype,
        None
        if cfg.link is None
        else (cfg.link.name, cfg.link.bandwidth, cfg.link.latency),
        cfg.gemm_overlap,
        cfg.expert_skew,
    )
    hit = _PRICERS.get(key)
    if hit is None:
        if len(_PRICERS) > 256:
            _PRICERS.clear()
        hit = _PRICERS[key] = Pricer(cfg)
    return hit


def pricer(
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    tp: int = 1,
    ep: int = 1,
    dp_attention: bool = False,
    weight_dtype: str = "bf16",
    act_dtype: str | None = None,
    kv_dtype: str | None = None,
    link: str | Link | None = "auto",
    gemm_overlap: float = 0.0,
    expert_skew: float = 1.0,
) -> Pricer:
    """The cached step pricer of one deployment (what :mod:`helpers.engine` calls every iteration).

    ``gemm_overlap`` in [0, 1]: how much of a GEMM's shorter term (compute or
    weight streaming) shows, as :func:`helpers.roofline.breakdown`'s
    ``overlap``: 0 (the default) is the roofline's perfect overlap inside the
    kernel, 1 none (:func:`helpers.roofline.overlap_bounds`' upper end). A
    sensitivity, not a calibrated constant: no published GEMM-versus-rows
    curve in the calibration data pins it (see the module docstring).
    ``expert_skew`` (>= 1): the busiest expert-parallel GPU's load over what
    uniform routing gives it (:func:`imbalance`); 1, the default, is uniform
    routing (:func:`helpers.serving.expert_skew` for a measured router).
    """
    overlap = _args.non_negative("gemm_overlap", gemm_overlap)
    skew = _args.positive("expert_skew", expert_skew)
    if skew < 1:
        raise ValueError(f"expert_skew must be >= 1, got {expert_skew!r}")
    if overlap > 1:
        raise ValueError(f"gemm_overlap must be in [0, 1], got {gemm_overlap!r}")
    m = get_model(model)
    device = accelerator(acc)
    tp = _args.positive_int("tp", tp)
    ep = _args.positive_int("ep", ep)
    _args.boolean("dp_attention", dp_attention)
    w = _args.name("weight_dtype", weight_dtype)
    weight_bytes_per_element(w)
    a = (
        default_act_dtype(device, w)
        if act_dtype is None
        else _args.name("act_dtype", act_dtype)
    )
    if a not in ("bf16", "fp16", "fp8", "int8", "fp4"):
        raise ValueError(
            f"act_dtype must be bf16, fp16, fp8, int8 or fp4, got {act_dtype!r}"
        )
    if a == "fp4" and device.name not in FP4_DENSE_FLOPS:
        raise ValueError(f"act_dtype 'fp4': {device.name} has no FP4 tensor cores")
    if a in ("fp8", "int8") and a not in device.peak_flops:
        raise ValueError(f"act_dtype {a!r}: {device.name} has no {a} tensor cores")
    kv = ("bf16" if w not in ("fp16",) else "fp16") if kv_dtype is None else kv_dtype
    kv = kv_format(kv).name
    if ep > 1 and m.moe is None:
        raise ValueError(
            f"ep: model {m.name!r} has no experts to spread over {ep} GPUs"
        )
    if ep > 1 and ep != tp:
        raise ValueError(f"ep must be 1 or equal tp ({tp}) within a replica, got {ep}")
    if dp_attention and tp == 1:
        raise ValueError(
            "dp_attention needs tp > 1 (the attention data-parallel group is the replica)"
        )
    if link == "auto":
        spec: Link | None = parallel.tp_link(device) if tp > 1 else None
    elif link is None:
        spec = None
    else:
        spec = get_link(link)
    return _pricer(
        _Config(m, device, tp, ep, dp_attention, w, a, kv, spec, overlap, skew)
    )


def mixed_step(
    model: str | ModelConfig,
    acc: str | Accelerator,
    *,
    decode_batch: int = 0,
    decode_context: float = 0,
    chunks: tuple[tuple[int, int], ...] | list[tuple[int, int]] = (),
    logits: int | None = None,
    pad_to: int | None = None,
    tp: int = 1,
    ep: int = 1,
    dp_attention: bool = False,
    weight_dtype: str = "bf16",
    act_dtype: str | None = None,
    kv_dtype: str | None = None,
    link: str | Link | None = "auto",
    gemm_overlap: float = 0.0,
    expert_skew: float = 1.0,
) -> StepTime:
    """Predicted time of one engine step: ``decode_batch`` decodes at mean ``decode_context`` plus prefill ``chunks``.

    The prediction (the sum of the step's kernels, module docstring);
    :attr:`StepTime.bound_s` holds the whole-step roofline of the same work.

    Parameters
    ----------
    model, acc
    decode_batch : int
        Sequences emitting one token each (>= 0).
    decode_context : float
        Their mean cached tokens (>= 0).
    chunks : sequence of (tokens, prefix)
        Prefill chunks in the same step: ``tokens`` new prompt tokens of a
        prompt whose first ``prefix`` tokens are cached.
    logits : int or None
        Sequences that need a next token (default: the decodes plus the
        chunks, each assumed to finish its prompt).
    pad_to : int or None
        Rows the token-proportional kernels run for (a CUDA graph's captured
        batch; >= the step's tokens). ``None``: no padding.
    tp, ep, dp_attention
        GPUs per replica sharing each layer by heads and columns; expert
        parallel size (1 or ``tp``); attention run data-parallel across them.
    weight_dtype, act_dtype, kv_dtype
        Precision of each tensor (``act_dtype=None``: :func:`default_act_dtype`;
        ``kv_dtype=None``: 16-bit).
    link
        ``"auto"`` (:func:`helpers.parallel.tp_link`), a link, or ``None`` (no collectives).
    gemm_overlap, expert_skew
        Inside-GEMM overlap sensitivity and the busiest expert GPU's extra
        load, as in :func:`pricer`.
    """
    p = pricer(
        model,
        acc,
        tp=tp,
        ep=ep,
        dp_attention=dp_attention,
        weight_dtype=weight_dtype,
        act_dtype=act_dtype,
        kv_dtype=kv_dtype,
        link=link,
        gemm_overlap=gemm_overlap,
        expert_skew=expert_skew,
    )
    b = _args.non_negative_int("decode_batch", decode_batch)
    ctx = _args.non_negative("decode_context", decode_context)
    parsed = []
    for i, c in enumerate(chunks):
        if not isinstance(c, tuple | list) or len(c) != 2:
            raise TypeError(f"chunks[{i}] must be a (tokens, prefix) pair, got {c!r}")
        parsed.append(
            (
                _args.positive_int(f"chunks[{i}] tokens", c[0]),
                _args.non_negative_int(f"chunks[{i}] prefix", c[1]),
            )
        )
    tokens = b + sum(t for t, _ in parsed)
    if tokens == 0:
        raise ValueError("a step needs decode_batch > 0 or at least one chunk")
    rows = tokens
    if pad_to is not None:
        rows = _args.positive_int("pad_to", pad_to)
        if rows < tokens:
            raise ValueError(f"pad_to ({rows}) must be >= the step's tokens ({tokens})")
    n_logits = (
        b + len(parsed) if logits is None else _args.non_negative_int("logits", logits)
    )
    return _assemble(p, rows, b, b * (ctx + 1), parsed, n_logits)


def _assemble(
    p: Pricer,
    rows: int,
    decodes: int,
    kv_tokens: float,
    chunks: list[tuple[int, int]],
    n_logits: int,
) -> StepTime:
    gemm_s, elem_s, tp_s, ep_s, floors, kernels, flops, nbytes = p.linear_part(rows)  # type: ignore[misc]
    m = p.cfg.model
    da_s, da_f, da_b = p.decode_attention(decodes, kv_tokens)
    pa_s, pa_f, pa_b = p.prefill_attention(chunks)
    attn_kernels = m.n_layers * ((1 if decodes else 0) + (1 if chunks else 0))
    attn_floor = attn_kernels * p.floor
    lm_s, samp_s, head_floor, head_kernels = p.head(n_logits)
    parts = {
        "gemm": gemm_s,
        "attention": da_s + pa_s,
        "elementwise": elem_s,
        "lm_head": lm_s,
        "sampling": samp_s,
        "tp_comm": tp_s,
        "ep_comm": ep_s,
    }
    all_floors = floors + attn_floor + head_floor
    # floors go to their kernels' classes in proportion to their counts: keep them as a part of their own
    parts_with_floor = dict(parts)
    parts_with_floor["floors"] = all_floors
    seconds = sum(parts_with_floor.values())
    total_flops = flops + da_f + pa_f
    total_bytes = nbytes + da_b + pa_b
    bound = max(total_flops / p.peak, total_bytes / p.bw) + tp_s + ep_s
    return StepTime(
        seconds=seconds,
        parts=MappingProxyType(parts_with_floor),
        floor_s=all_floors,
        bound_s=bound,
        kernels=int(kernels + attn_kernels + head_kernels),
        flops=total_flops,
        bytes=total_bytes,
    )


def decode_step(
    model: str | ModelConfig,
    context: float,
    acc: str | Accelerator,
    *,
    batch: int = 1,
    **options: object,
) -> StepTime:
    """Predicted time of a decode step: ``batch`` sequences with ``context`` cached tokens each emit one token.

    The sum-form prediction beside :func:`helpers.inference.decode_step`, the
    max-form bound (which it never undercuts). ``options`` as in :func:`mixed_step`.

    >>> from helpers import inference
    >>> s = decode_step("llama-3-70b", 2048, "H100", batch=64, tp=4, weight_dtype="fp8")
    >>> s.seconds > inference.decode_step_time("llama-3-70b", 2048, "H100", batch=64, dtype="fp8", n_gpus=4)
    True
    """
    batch = _args.positive_int("batch", batch)
    return mixed_step(model, acc, decode_batch=batch, decode_context=context, **options)  # type: ignore[arg-type]


def prefill_step(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    *,
    batch: int = 1,
    **options: object,
) -> StepTime:
    """Predicted time to prefill ``batch`` prompts of ``tokens`` tokens in one step (each emits its first token).

    The sum-form prediction beside :func:`helpers.inference.prefill_step`.
    ``options`` as in :func:`mixed_step`.
    """
    tokens = _args.positive_int("tokens", tokens)
    batch = _args.positive_int("batch", batch)
    return mixed_step(model, acc, chunks=[(tokens, 0)] * batch, **options)  # type: ignore[arg-type]


def token_grid(max_tokens: int) -> np.ndarray:
    """Token counts at which :func:`token_table` prices a step exactly.

    Every count to 64, then every 16th to 1024, then steps of about 4 %.
    """
    max_tokens = _args.positive_int("max_tokens", max_tokens)
    points = set(range(1, min(max_tokens, 64) + 1))
    points.update(range(64, min(max_tokens, 1024) + 1, 16))
    t = 1024.0
    while t < max_tokens:
        points.add(int(t))
        t *= 1.04
    points.add(max_tokens)
    return np.array(sorted(p for p in points if p <= max_tokens), dtype=float)


def token_table(p: Pricer, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """``(grid, seconds)``: the token-proportional kernels' time at :func:`token_grid`.

    GEMMs, elementwise kernels, collectives and their floors.

    Between grid points the time is interpolated linearly (``numpy.interp``);
    the step functions price exact counts, the engine the interpolation.
    """
    grid = token_grid(max_tokens)
    values = np.empty_like(grid)
    for i, t in enumerate(grid):
        g, e, c, x, f, *_ = p.linear_part(int(t))
        values[i] = g + e + c + x + f
    return grid, values


__all__ = [
    "DEQUANT_OPS_PER_ELEMENT",
    "dequant_critical_batch",
    "dequant_roof",
    "Pricer",
    "KERNEL_CLASSES",
    "StepTime",
    "accelerator",
    "WEIGHT_BYTES",
    "compute_dtype",
    "decode_step",
    "default_act_dtype",
    "imbalance",
    "mixed_step",
    "prefill_attention_efficiency",
    "prefill_step",
    "pricer",
    "token_grid",
    "token_table",
    "weight_bytes_per_element",
]
