"""FLOPs and bytes of the operations the book studies.

Conventions: one multiply-accumulate (MAC) = 2 FLOP. Bytes count each operand
read once from memory and each result written once (the ideal a well-tiled
kernel approaches); caches are not modelled. Published ResNet-50 "GFLOPs"
(4.1) are MACs: in FLOP it is 8.2 G.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from . import _args
from .hardware import Accelerator, dtype_bytes, get_accelerator
from .roofline import (
    Roof,
    TimeBreakdown,
    breakdown,
    crossing_batch,
    ridge_point,
    roofline_time,
)

DEFAULT_TILE: tuple[int, int] = (128, 128)
"""Output tile (rows, columns) one thread block of a GEMM computes: cuBLAS's common 128 x 128.

NVIDIA, *Matrix Multiplication Background User's Guide*, section "Dimension
Quantization Effects", uses 128 x 128 (and 256 x 128) tiles in its examples.
"""


@dataclass(frozen=True)
class Cost:
    """Work of a computation: ``flops`` (FLOP) and ``bytes`` moved to/from memory.

    Costs add (``a + b``: run one after the other) and scale by a number
    (``3 * c``: run three times).
    """

    flops: float
    bytes: float

    def __post_init__(self) -> None:
        _args.non_negative("flops", self.flops)
        _args.non_negative("bytes", self.bytes)

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP/byte (``inf`` when no bytes move)."""
        if self.bytes == 0:
            return math.inf
        return self.flops / self.bytes

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(self.flops + other.flops, self.bytes + other.bytes)

    def __radd__(self, other: object) -> Cost:
        if other == 0:  # lets sum() start from 0
            return self
        return NotImplemented

    def __mul__(self, factor: float) -> Cost:
        factor = _args.non_negative("factor", factor)
        return Cost(self.flops * factor, self.bytes * factor)

    __rmul__ = __mul__


def elementwise_cost(
    n: int, *, dtype: str = "fp32", n_inputs: int = 1, flops_per_element: float = 1.0
) -> Cost:
    """Cost of an elementwise op over ``n`` elements (e.g. ReLU: 1 input; add: 2 inputs).

    Reads ``n_inputs * n`` elements, writes ``n``; does ``flops_per_element * n`` FLOP.
    Its intensity, ``flops_per_element / ((n_inputs + 1) * bytes)``, is far below
    any GPU's ridge point: elementwise ops are memory-bound.
    """
    n = _args.positive_int("n", n)
    n_inputs = _args.positive_int("n_inputs", n_inputs)
    flops_per_element = _args.non_negative("flops_per_element", flops_per_element)
    return Cost(flops_per_element * n, float(dtype_bytes(dtype) * (n_inputs + 1) * n))


def reduction_cost(n: int, *, dtype: str = "fp32", outputs: int = 1) -> Cost:
    """Cost of summing ``n`` elements into ``outputs`` results (e.g. a row-sum).

    ``n - outputs`` additions; reads ``n`` elements and writes ``outputs``.
    """
    n = _args.positive_int("n", n)
    outputs = _args.positive_int("outputs", outputs)
    if outputs > n:
        raise ValueError(f"outputs ({outputs}) must not exceed n ({n})")
    return Cost(float(n - outputs), float(dtype_bytes(dtype) * (n + outputs)))


def matmul_cost(
    m: int, k: int, n: int, *, dtype: str = "fp16", out_dtype: str | None = None
) -> Cost:
    """Cost of ``C[m, n] = A[m, k] @ B[k, n]``: ``2mkn`` FLOP, ``(mk + kn + mn)`` elements moved.

    ``A`` and ``B`` are stored in ``dtype`` and ``C`` in ``out_dtype``
    (default: ``dtype``); an fp8 GEMM usually writes bf16.

    Examples
    --------
    >>> matmul_cost(64, 7168, 2112, dtype="fp8", out_dtype="bf16").bytes
    15867904.0
    """
    m, k, n = (_args.positive_int(p, v) for p, v in (("m", m), ("k", k), ("n", n)))
    width = dtype_bytes(dtype)
    out_width = width if out_dtype is None else dtype_bytes(out_dtype)
    return Cost(2.0 * m * k * n, float(width * (m * k + k * n) + out_width * m * n))


def _tile(tile: tuple[int, int]) -> tuple[int, int]:
    if not isinstance(tile, tuple) or len(tile) != 2:
        raise TypeError(f"tile must be a pair (rows, columns), got {tile!r}")
    return (
        _args.positive_int("tile[0]", tile[0]),
        _args.positive_int("tile[1]", tile[1]),
    )


def gemm_tiles(m: int, n: int, *, tile: tuple[int, int] = DEFAULT_TILE) -> int:
    """Output tiles of an ``m x n`` GEMM result: ``ceil(m / t_m) * ceil(n / t_n)``.

    One thread block computes one tile, on one SM at a time.
    """
    m = _args.positive_int("m", m)
    n = _args.positive_int("n", n)
    t_m, t_n = _tile(tile)
    return math.ceil(m / t_m) * math.ceil(n / t_n)


def gemm_utilization(
    m: int, n: int, acc: str | Accelerator, *, tile: tuple[int, int] = DEFAULT_TILE
) -> float:
    """Fraction of ``acc``'s SMs kept busy over the waves of an ``m x n`` GEMM's output tiles.

    With ``T`` tiles (:func:`gemm_tiles`) on ``S`` SMs the GEMM runs in
    ``ceil(T / S)`` waves, and the last one may be partly empty ("wave
    quantization"): the utilization is ``T / (ceil(T / S) * S)``. A 1024 x
    1024 result has 64 tiles of 128 x 128: 64 / 132 = 48 % of an H100 SXM's
    SMs, 100 % of a T4's 40 after two waves' 64 / 80 = 80 %. NVIDIA, *GPU
    Performance Background User's Guide*, "GPU Execution Model" (waves,
    tail effect), and *Matrix Multiplication Background User's Guide*,
    "Wave Quantization". Split-K (several blocks per tile) is the remedy
    cuBLAS uses for short, wide GEMMs and is not modelled.

    Raises ``KeyError`` for a device with no published SM count.

    Examples
    --------
    >>> round(gemm_utilization(1024, 1024, "H100 SXM"), 3)
    0.485
    >>> gemm_utilization(1024, 1024, "T4")
    0.8
    """
    return _busy_share(gemm_tiles(m, n, tile=tile), get_accelerator(acc).sms())


def _busy_share(blocks: int, sms: int) -> float:
    """Share of ``ceil(blocks / sms)`` waves of ``sms`` SMs that ``blocks`` blocks keep busy."""
    return blocks / (math.ceil(blocks / sms) * sms)


def tile_efficiency(m: int, n: int, *, tile: tuple[int, int] = DEFAULT_TILE) -> float:
    """Useful fraction of the tiles' area: ``m n / (ceil(m / t_m) t_m * ceil(n / t_n) t_n)``.

    "Tile quantization": a tile computes all its ``t_m x t_n`` outputs even
    when the matrix edge cuts it. For a linear layer ``m`` is the batch, so a
    batch of 16 on 128-row tiles is padded to 128 rows and does 1/8 useful
    work; throughput then grows in proportion to the batch up to the tile
    height, whatever the roofline says.

    Examples
    --------
    >>> tile_efficiency(16, 4096)
    0.125
    """
    m = _args.positive_int("m", m)
    n = _args.positive_int("n", n)
    t_m, t_n = _tile(tile)
    return m * n / (math.ceil(m / t_m) * t_m * math.ceil(n / t_n) * t_n)


GEMM_TILES: tuple[tuple[int, int], ...] = ((128, 128), (128, 64), (64, 64))
"""Output tiles :func:`gemm_efficiency` chooses among, as a GEMM library picks among its kernels."""


def gemm_efficiency(
    m: int,
    n: int,
    k: int,
    acc: str | Accelerator,
    *,
    tiles: tuple[tuple[int, int], ...] = GEMM_TILES,
    min_k_chunk: int = 256,
    batch: int = 1,
) -> float:
    """Best ``u * e`` a GEMM library can reach for an ``m x n x k`` GEMM: tile choice and split-K.

    ``batch`` independent GEMMs of that shape (a batched or grouped GEMM)
    run as one launch whose ``batch * T`` tiles share the SMs.
    For each candidate tile, a GEMM with fewer tiles than SMs splits its
    ``k`` loop over ``s = min(S // T, k // min_k_chunk)`` blocks per tile
    (*split-K*; at least 1), so ``s T`` blocks share the SMs; the result is
    the largest ``gemm_utilization(s T) * tile_efficiency`` over the tiles.
    The partial sums' extra traffic is left out. This is how cuBLAS and
    cuDNN keep a short, wide GEMM (a late ResNet layer at batch 1: ``m =
    49``) from leaving most SMs idle; :func:`gemm_utilization` alone, with
    one fixed tile and no split, is the worst case.

    Examples
    --------
    >>> round(gemm_utilization(49, 512, "A100") * tile_efficiency(49, 512), 3)
    0.014
    >>> round(gemm_efficiency(49, 512, 4608, "A100"), 3)
    0.737
    """
    k = _args.positive_int("k", k)
    min_k_chunk = _args.positive_int("min_k_chunk", min_k_chunk)
    batch = _args.positive_int("batch", batch)
    if not tiles:
        raise ValueError("tiles must list at least one (rows, columns) tile")
    sms = get_accelerator(acc).sms()
    best = 0.0
    for tile in tiles:
        count = batch * gemm_tiles(m, n, tile=tile)
        split = max(1, min(sms // count, k // min_k_chunk))
        blocks = split * count
        best = max(best, _busy_share(blocks, sms) * tile_efficiency(m, n, tile=tile))
    return best


def matmul_breakdown(
    m: int,
    k: int,
    n: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    tile: tuple[int, int] = DEFAULT_TILE,
    overhead: float = 0.0,
) -> TimeBreakdown:
    """Time terms of ``C[m, n] = A[m, k] @ B[k, n]`` with tile and wave quantization.

    The compute term is the time of ``ceil(T / S)`` waves of full tiles,
    ``2 k t_m t_n ceil(T / S) / (peak / S)``, i.e. :func:`matmul_cost`'s
    FLOP at ``peak * gemm_utilization * tile_efficiency``; the memory term
    and the overhead are the roofline's. Pass
    :func:`helpers.roofline.achievable` for derated ceilings.

    Examples
    --------
    A 1024-cube on an H100 SXM takes 2.06x the roofline's compute time
    (48.5 % of the SMs busy, no padding):

    >>> t = matmul_breakdown(1024, 1024, 1024, "H100 SXM")
    >>> round(t.compute_s / (2 * 1024**3 / 989.4e12), 2)
    2.06
    """
    cost = matmul_cost(m, k, n, dtype=dtype)
    efficiency = gemm_utilization(m, n, acc, tile=tile) * tile_efficiency(
        m, n, tile=tile
    )
    return breakdown(
        cost.flops, cost.bytes, acc, dtype=dtype, overhead=overhead, mfu=efficiency
    )


def gemm_time(
    m: int,
    n: int,
    k: int,
    acc: str | Accelerator,
    *,
    dtype: str = "bf16",
    batch: int = 1,
    out_dtype: str | None = None,
    overlap: float = 0.0,
    overhead: float = 0.0,
) -> float:
    """Second-order seconds of ``batch`` independent ``[m, k] @ [k, n]`` products run as one GEMM.

    The model chapters ``two_ceilings`` to ``batching`` build, in one call: :func:`matmul_cost` (times
    ``batch``) on the roofline of :func:`helpers.roofline.breakdown`, whose
    compute term runs at the fraction :func:`gemm_efficiency` of the peak
    (the library's best tile, split-K, the waves of tiles over the SMs) and
    whose two terms overlap as ``overlap`` says, plus ``overhead`` (s) per
    launch. For the *achievable* ceilings rather than the datasheet's, pass
    ``acc`` through :func:`helpers.roofline.achievable`.

    Parameters
    ----------
    m, n, k : int
        Rows of ``A`` and of the result, columns of ``B`` and of the result,
        and the shared (reduction) dimension.
    acc : str or Accelerator
        The device; it needs a published SM count (``KeyError`` otherwise).
    dtype : str
        Storage dtype of ``A`` and ``B`` and the peak used.
    batch : int
        Independent products in the launch.
    out_dtype : str or None
        Storage dtype of the result (default ``dtype``).
    overlap : float
        In [0, 1]; see :func:`helpers.roofline.breakdown`.
    overhead : float
        Fixed seconds per launch.

    Examples
    --------
    A 1024-cube in bf16 on an H100 SXM: 64 tiles of 128 x 128 on 132 SMs,
    split-K lifts it to 128 blocks, 97 % of the SMs; the roofline alone
    says 2.17 us.

    >>> round(gemm_time(1024, 1024, 1024, "H100 SXM") * 1e6, 2)
    2.24
    """
    batch = _args.positive_int("batch", batch)
    cost = batch * matmul_cost(m, k, n, dtype=dtype, out_dtype=out_dtype)
    e = gemm_efficiency(m, n, k, acc, batch=batch)
    return breakdown(
        cost.flops,
        cost.bytes,
        acc,
        dtype=dtype,
        mfu=e,
        overlap=overlap,
        overhead=overhead,
    ).seconds


def linear_cost(
    batch: int,
    d_in: int,
    d_out: int,
    *,
    dtype: str = "fp16",
    weight_dtype: str | None = None,
) -> Cost:
    """Cost of a linear layer ``y = x @ W`` for ``batch`` rows (tokens or samples).

    Weights (``d_in * d_out``) are stored in ``weight_dtype`` (default ``dtype``),
    activations in ``dtype``; the bias is ignored (``d_out`` extra elements).

    The intensity is ``2 B d_in d_out / (w_w d_in d_out + w_a B (d_in + d_out))``,
    which for ``B << d_in, d_out`` is about ``2B / w_w``.
    """
    batch = _args.positive_int("batch", batch)
    d_in = _args.positive_int("d_in", d_in)
    d_out = _args.positive_int("d_out", d_out)
    w_a = dtype_bytes(dtype)
    w_w = dtype_bytes(weight_dtype if weight_dtype is not None else dtype)
    flops = 2.0 * batch * d_in * d_out
    bytes_ = w_w * d_in * d_out + w_a * batch * (d_in + d_out)
    return Cost(flops, float(bytes_))


def linear_weight_bytes(d_in: int, d_out: int, *, dtype: str = "fp16") -> float:
    """Bytes of a linear layer's ``d_in x d_out`` weights stored in ``dtype``: ``w d_in d_out``.

    The part of :func:`linear_cost`'s bytes that is read once per step
    whatever the batch (pass the layer's ``weight_dtype``). A 1024 x 1024
    fp16 layer holds 2 MiB (2,097,152 bytes).
    """
    d_in = _args.positive_int("d_in", d_in)
    d_out = _args.positive_int("d_out", d_out)
    return float(dtype_bytes(dtype) * d_in * d_out)


def mlp_cost(
    batch: int,
    d_model: int,
    d_ff: int,
    *,
    dtype: str = "fp16",
    gated: bool = False,
    weight_dtype: str | None = None,
) -> Cost:
    """Cost of a transformer MLP: up-projection(s) ``d_model -> d_ff`` and down ``d_ff -> d_model``.

    ``gated=True`` (SwiGLU, as in Llama) adds a second up-projection (gate).
    Elementwise activation work is ignored; the hidden activations are written
    and read back once.
    """
    _args.boolean("gated", gated)
    up = linear_cost(batch, d_model, d_ff, dtype=dtype, weight_dtype=weight_dtype)
    down = linear_cost(batch, d_ff, d_model, dtype=dtype, weight_dtype=weight_dtype)
    return (2 if gated else 1) * up + down


def conv_output_size(
    size: int, kernel: int, *, stride: int = 1, padding: int | None = None
) -> int:
    """Spatial output size of a convolution: ``(size + 2*padding - kernel) // stride + 1``.

    ``padding=None`` means ``kernel // 2`` ("same" for odd kernels at stride 1).
    """
    size = _args.positive_int("size", size)
    kernel = _args.positive_int("kernel", kernel)
    stride = _args.positive_int("stride", stride)
    padding = (
        kernel // 2 if padding is None else _args.non_negative_int("padding", padding)
    )
    out = (size + 2 * padding - kernel) // stride + 1
    if out < 1:
        raise ValueError(
            f"kernel {kernel} does not fit an input of size {size} with padding {padding}"
        )
    return out


def conv2d_cost(
    batch: int,
    c_in: int,
    c_out: int,
    height: int,
    width: int,
    kernel: int,
    *,
    stride: int = 1,
    padding: int | None = None,
    dtype: str = "fp16",
) -> Cost:
    """Cost of a 2-D convolution as an implicit GEMM.

    With ``N`` images of ``C x H x W``, ``K`` filters of ``C x R x S`` (here
    ``R = S = kernel``) and output ``P x Q``: the GEMM has
    ``M = N P Q``, ``N_gemm = K``, ``K_gemm = C R S`` so FLOP = ``2 N P Q K C R S``.
    Bytes: input ``N C H W`` + filters ``K C R S`` + output ``N K P Q`` elements.
    """
    batch = _args.positive_int("batch", batch)
    c_in = _args.positive_int("c_in", c_in)
    c_out = _args.positive_int("c_out", c_out)
    height = _args.positive_int("height", height)
    width = _args.positive_int("width", width)
    p = conv_output_size(height, kernel, stride=stride, padding=padding)
    q = conv_output_size(width, kernel, stride=stride, padding=padding)
    w = dtype_bytes(dtype)
    flops = 2.0 * batch * p * q * c_out * c_in * kernel * kernel
    elements = (
        batch * c_in * height * width
        + c_out * c_in * kernel * kernel
        + batch * c_out * p * q
    )
    return Cost(flops, float(w * elements))


OP_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "relu": "ReLU y = max(x, 0) over `size` elements (1 read, 1 write, 1 FLOP each)",
        "add": "elementwise add z = x + y over `size` elements (2 reads, 1 write, 1 FLOP each)",
        "sum": "sum of `size` elements into one number (a reduction)",
        "matmul": "square matmul C = A @ B with A, B, C all `size` x `size`",
        "linear": "linear layer y = x @ W, W of d_model x d_model, for a batch of `size` rows",
    }
)
"""Operation kinds :func:`op_cost` knows, with what ``size`` means for each."""


def op_cost(kind: str, size: int, *, dtype: str = "fp16", d_model: int = 4096) -> Cost:
    """FLOP and bytes of a named operation (one of :data:`OP_KINDS`), for the chapters' calculators.

    Parameters
    ----------
    kind : str
        ``"relu"``, ``"add"``, ``"sum"``, ``"matmul"`` or ``"linear"``.
    size : int
        Elements (relu, add, sum), matrix side (matmul) or batch rows (linear).
    dtype : str
        Storage dtype of every operand.
    d_model : int
        Width of the linear layer's square weight matrix (ignored by other kinds).

    Returns
    -------
    Cost
        From :func:`elementwise_cost`, :func:`reduction_cost`,
        :func:`matmul_cost` or :func:`linear_cost`.
    """
    key = _args.name("kind", kind)
    size = _args.positive_int("size", size)
    if key == "relu":
        return elementwise_cost(size, dtype=dtype, n_inputs=1)
    if key == "add":
        return elementwise_cost(size, dtype=dtype, n_inputs=2)
    if key == "sum":
        return reduction_cost(size, dtype=dtype)
    if key == "matmul":
        return matmul_cost(size, size, size, dtype=dtype)
    if key == "linear":
        d_model = _args.positive_int("d_model", d_model)
        return linear_cost(size, d_model, d_model, dtype=dtype)
    raise KeyError(f"kind {kind!r} is unknown; choose one of {list(OP_KINDS)}")


OP_ROOFS: Mapping[str, Roof] = MappingProxyType(
    {
        "relu": "vector",
        "add": "vector",
        "sum": "vector",
        "matmul": "tensor",
        "linear": "tensor",
    }
)
"""Compute ceiling of each of :data:`OP_KINDS`: tensor cores only multiply matrices.

Elementwise work and reductions run on the plain (CUDA-core) units, whose
peak is :meth:`helpers.hardware.Accelerator.vector_flops`; matmuls and
linear layers on the tensor cores (for ``fp32``, the plain FP32 rate),
:meth:`helpers.hardware.Accelerator.flops`.
"""


def op_roof(kind: str) -> Roof:
    """``'vector'`` or ``'tensor'``: which compute ceiling the operation ``kind`` runs under (:data:`OP_ROOFS`).

    >>> op_roof("relu"), op_roof("matmul")
    ('vector', 'tensor')
    """
    key = _args.name("kind", kind)
    if key not in OP_ROOFS:
        raise KeyError(f"kind {kind!r} is unknown; choose one of {list(OP_KINDS)}")
    return OP_ROOFS[key]


def op_breakdown(
    kind: str,
    size: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    overhead: float = 0.0,
    d_model: int = 4096,
) -> TimeBreakdown:
    """The time model's terms for one named operation on ``acc``, on the ceiling it runs under.

    :func:`helpers.roofline.breakdown` of :func:`op_cost` with ``roof`` =
    :func:`op_roof`: a ReLU's compute term uses the vector peak, a matmul's
    the tensor-core peak. Parameters as in :func:`op_cost`, plus the device
    and the fixed ``overhead`` per call (s). ``KeyError`` if ``acc`` has no
    peak of that kind for ``dtype`` (most devices list no 8-bit vector peak).

    >>> t = op_breakdown("relu", 2**24, "H100 SXM", dtype="fp16")
    >>> round(t.compute_s * 1e9), t.bound
    (125, 'memory')
    """
    cost = op_cost(kind, size, dtype=dtype, d_model=d_model)
    return breakdown(
        cost.flops,
        cost.bytes,
        acc,
        dtype=dtype,
        overhead=overhead,
        roof=op_roof(kind),
    )


def critical_batch_size(
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    weight_dtype: str | None = None,
    d_in: int | None = None,
    d_out: int | None = None,
) -> float:
    """Batch size at which a linear layer's intensity reaches the ridge point.

    Without layer dimensions this is the wide-layer limit ``ridge * w_w / 2``
    (``w_w`` = bytes per weight): for 16-bit weights the critical batch equals
    the ridge point in FLOP/byte. With ``d_in`` and ``d_out`` it is
    :func:`helpers.roofline.crossing_batch` of :func:`linear_cost` (``inf``
    if the layer never becomes compute-bound), which tends to the limit as the
    layer widens.

    ``weight_dtype`` models weight-only quantisation (int8 weights, ``dtype``
    compute): fewer weight bytes halve the batch needed to saturate compute.

    Examples
    --------
    >>> round(critical_batch_size("A100", dtype="fp16"))
    153
    """
    w_w = dtype_bytes(weight_dtype if weight_dtype is not None else dtype)
    if d_in is None and d_out is None:
        return ridge_point(get_accelerator(acc), dtype=dtype) * w_w / 2
    if d_in is None or d_out is None:
        raise ValueError("give both d_in and d_out, or neither")
    d_in = _args.positive_int("d_in", d_in)
    d_out = _args.positive_int("d_out", d_out)
    return crossing_batch(
        lambda b: linear_cost(b, d_in, d_out, dtype=dtype, weight_dtype=weight_dtype),
        acc,
        dtype=dtype,
    )


def speedup(
    cost: Cost,
    old: str | Accelerator,
    new: str | Accelerator,
    *,
    dtype: str = "fp16",
    overhead: float = 0.0,
) -> float:
    """How many times faster ``cost`` runs on ``new`` than on ``old``: a ratio of roofline times.

    ``t_old / t_new`` with ``t = max(F / P, B / W) + overhead``
    (:func:`helpers.roofline.roofline_time`), both in ``dtype``. With no
    overhead a compute-bound cost gains the ratio of the peaks, a
    memory-bound one the ratio of the bandwidths (e.g. a batch-1 linear
    layer from an A100 to an H100: ``3.35 / 2.039 = 1.64``).
    """
    if not isinstance(cost, Cost):
        raise TypeError(f"cost must be a helpers.ops.Cost, got {type(cost).__name__}")
    before = roofline_time(cost.flops, cost.bytes, old, dtype=dtype, overhead=overhead)
    after = roofline_time(cost.flops, cost.bytes, new, dtype=dtype, overhead=overhead)
    return before / after


@dataclass(frozen=True)
class Layer:
    """One layer of a network with its shapes and :class:`Cost`.

    ``kind`` is ``"conv"`` or ``"fc"``; for an fc layer ``kernel = 1`` and the
    spatial sizes are 1. ``params`` counts the layer's weights (and the fc bias),
    not the batch-norm parameters.
    """

    name: str
    kind: str
    c_in: int
    c_out: int
    kernel: int
    stride: int
    in_size: int
    out_size: int
    batch: int
    cost: Cost

    @property
    def params(self) -> int:
        """Weight count: ``c_out * c_in * kernel**2`` (+ ``c_out`` bias for fc)."""
        weights = self.c_out * self.c_in * self.kernel * self.kernel
        return weights + (self.c_out if self.kind == "fc" else 0)

    @property
    def macs(self) -> float:
        """Multiply-accumulates (``cost.flops / 2``)."""
        return self.cost.flops / 2


def _conv(
    name: str,
    batch: int,
    c_in: int,
    c_out: int,
    size: int,
    kernel: int,
    stride: int,
    dtype: str,
) -> Layer:
    out = conv_output_size(size, kernel, stride=stride)
    cost = conv2d_cost(
        batch, c_in, c_out, size, size, kernel, stride=stride, dtype=dtype
    )
    return Layer(name, "conv", c_in, c_out, kernel, stride, size, out, batch, cost)


def resnet50_layers(
    batch: int = 1, *, image_size: int = 224, dtype: str = "fp16"
) -> list[Layer]:
    """Every convolution of ResNet-50 (53) and its final fc layer, in order.

    The architecture is He et al. 2016 in its common "v1.5" form (torchvision):
    the stride-2 of a downsampling bottleneck sits on its 3x3 convolution.
    Stages have 3, 4, 6 and 3 bottlenecks of widths 64, 128, 256, 512 (output
    4x that); the first block of each stage has a 1x1 projection shortcut.
    Pooling, batch norm, ReLU and additions are not listed (they are
    memory-bound elementwise work with no weights to speak of).
    """
    batch = _args.positive_int("batch", batch)
    image_size = _args.positive_int("image_size", image_size)
    if image_size < 32:
        raise ValueError(
            f"image_size must be >= 32 for ResNet-50's five stride-2 steps, got {image_size}"
        )
    layers = [_conv("conv1", batch, 3, 64, image_size, 7, 2, dtype)]
    # 3x3 max-pool, stride 2
    size = conv_output_size(layers[0].out_size, 3, stride=2, padding=1)
    c_in = 64
    for stage, (blocks, width) in enumerate(
        zip((3, 4, 6, 3), (64, 128, 256, 512)), start=2
    ):
        for block in range(blocks):
            stride = 2 if (block == 0 and stage > 2) else 1
            prefix = f"layer{stage - 1}.{block}"
            a = _conv(f"{prefix}.conv1", batch, c_in, width, size, 1, 1, dtype)
            b = _conv(f"{prefix}.conv2", batch, width, width, size, 3, stride, dtype)
            c = _conv(
                f"{prefix}.conv3", batch, width, 4 * width, b.out_size, 1, 1, dtype
            )
            layers += [a, b, c]
            if block == 0:
                layers.append(
                    _conv(
                        f"{prefix}.downsample",
                        batch,
                        c_in,
                        4 * width,
                        size,
                        1,
                        stride,
                        dtype,
                    )
                )
            size, c_in = b.out_size, 4 * width
    fc = linear_cost(batch, c_in, 1000, dtype=dtype)
    layers.append(Layer("fc", "fc", c_in, 1000, 1, 1, 1, 1, batch, fc))
    return layers
