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

from . import _validate
from .hardware import Accelerator, dtype_bytes, get_accelerator
from .roofline import crossing_batch, ridge_point, roofline_time


@dataclass(frozen=True)
class Cost:
    """Work of a computation: ``flops`` (FLOP) and ``bytes`` moved to/from memory.

    Costs add (``a + b``: run one after the other) and scale by a number
    (``3 * c``: run three times).
    """

    flops: float
    bytes: float

    def __post_init__(self) -> None:
        _validate.non_negative("flops", self.flops)
        _validate.non_negative("bytes", self.bytes)

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
        factor = _validate.non_negative("factor", factor)
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
    n = _validate.positive_int("n", n)
    n_inputs = _validate.positive_int("n_inputs", n_inputs)
    flops_per_element = _validate.non_negative("flops_per_element", flops_per_element)
    return Cost(flops_per_element * n, float(dtype_bytes(dtype) * (n_inputs + 1) * n))


def reduction_cost(n: int, *, dtype: str = "fp32", outputs: int = 1) -> Cost:
    """Cost of summing ``n`` elements into ``outputs`` results (e.g. a row-sum).

    ``n - outputs`` additions; reads ``n`` elements and writes ``outputs``.
    """
    n = _validate.positive_int("n", n)
    outputs = _validate.positive_int("outputs", outputs)
    if outputs > n:
        raise ValueError(f"outputs ({outputs}) must not exceed n ({n})")
    return Cost(float(n - outputs), float(dtype_bytes(dtype) * (n + outputs)))


def matmul_cost(m: int, k: int, n: int, *, dtype: str = "fp16") -> Cost:
    """Cost of ``C[m, n] = A[m, k] @ B[k, n]``: ``2mkn`` FLOP, ``(mk + kn + mn)`` elements moved."""
    m, k, n = (_validate.positive_int(p, v) for p, v in (("m", m), ("k", k), ("n", n)))
    width = dtype_bytes(dtype)
    return Cost(2.0 * m * k * n, float(width * (m * k + k * n + m * n)))


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
    batch = _validate.positive_int("batch", batch)
    d_in = _validate.positive_int("d_in", d_in)
    d_out = _validate.positive_int("d_out", d_out)
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
    d_in = _validate.positive_int("d_in", d_in)
    d_out = _validate.positive_int("d_out", d_out)
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
    _validate.boolean("gated", gated)
    up = linear_cost(batch, d_model, d_ff, dtype=dtype, weight_dtype=weight_dtype)
    down = linear_cost(batch, d_ff, d_model, dtype=dtype, weight_dtype=weight_dtype)
    return (2 if gated else 1) * up + down


def conv_output_size(
    size: int, kernel: int, *, stride: int = 1, padding: int | None = None
) -> int:
    """Spatial output size of a convolution: ``(size + 2*padding - kernel) // stride + 1``.

    ``padding=None`` means ``kernel // 2`` ("same" for odd kernels at stride 1).
    """
    size = _validate.positive_int("size", size)
    kernel = _validate.positive_int("kernel", kernel)
    stride = _validate.positive_int("stride", stride)
    padding = (
        kernel // 2
        if padding is None
        else _validate.non_negative_int("padding", padding)
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
    batch = _validate.positive_int("batch", batch)
    c_in = _validate.positive_int("c_in", c_in)
    c_out = _validate.positive_int("c_out", c_out)
    height = _validate.positive_int("height", height)
    width = _validate.positive_int("width", width)
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
    key = _validate.name("kind", kind)
    size = _validate.positive_int("size", size)
    if key == "relu":
        return elementwise_cost(size, dtype=dtype, n_inputs=1)
    if key == "add":
        return elementwise_cost(size, dtype=dtype, n_inputs=2)
    if key == "sum":
        return reduction_cost(size, dtype=dtype)
    if key == "matmul":
        return matmul_cost(size, size, size, dtype=dtype)
    if key == "linear":
        d_model = _validate.positive_int("d_model", d_model)
        return linear_cost(size, d_model, d_model, dtype=dtype)
    raise KeyError(f"kind {kind!r} is unknown; choose one of {list(OP_KINDS)}")


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
    d_in = _validate.positive_int("d_in", d_in)
    d_out = _validate.positive_int("d_out", d_out)
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
    batch = _validate.positive_int("batch", batch)
    image_size = _validate.positive_int("image_size", image_size)
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
