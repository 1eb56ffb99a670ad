"""Convolutional networks on the roofline: ResNet-50 layer by layer, and how batching moves it.

Each layer of :func:`helpers.ops.resnet50_layers` is an implicit GEMM
(:func:`helpers.ops.conv2d_cost`) whose bytes are its filters (read once per
step, whatever the batch) plus its input and output activations (per image).
So, like a linear layer, its intensity grows with the batch towards a ceiling
set by the activations alone, and it crosses the ridge point at a batch
computed by :func:`helpers.roofline.crossing_batch`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from . import _args, dispatch, fusion, published
from .hardware import Accelerator, dtype_bytes, get_accelerator
from .ops import (
    Cost,
    Layer,
    conv2d_cost,
    gemm_efficiency,
    linear_cost,
    resnet50_layers,
)
from .roofline import Bound, attainable_flops, breakdown, crossing_batch


def activation_ceiling(
    c_in: int, c_out: int, kernel: int, *, dtype: str = "fp16"
) -> float:
    """Intensity (FLOP/byte) a stride-1 "same" convolution approaches as the batch grows.

    From :func:`helpers.ops.conv2d_cost`, ``1/I = w / (2 N H W) + w (C + K) / (2 K C R S)``;
    with ``N`` large only the activation term remains:
    ``I_act = (R S / w) * 2 C K / (C + K)``. More and bigger filters raise it; no batch can.
    """
    c_in = _args.positive_int("c_in", c_in)
    c_out = _args.positive_int("c_out", c_out)
    kernel = _args.positive_int("kernel", kernel)
    return kernel * kernel / dtype_bytes(dtype) * 2 * c_in * c_out / (c_in + c_out)


def filter_limit(batch: int, height: int, width: int, *, dtype: str = "fp16") -> float:
    """Intensity (FLOP/byte) a stride-1 "same" convolution approaches as its channels grow: ``2 N H W / w``.

    The filter term of ``1/I`` above: each weight is reused at the ``N H W``
    output positions, so a small feature map caps intensity however many filters it has.
    """
    batch = _args.positive_int("batch", batch)
    height = _args.positive_int("height", height)
    width = _args.positive_int("width", width)
    return 2 * batch * height * width / dtype_bytes(dtype)


def _cost_at(layer: Layer, batch: int, *, dtype: str) -> Cost:
    return layer_cost(layer, batch, dtype=dtype)


def layer_cost(layer: Layer, batch: int, *, dtype: str = "fp16") -> Cost:
    """Cost of ``layer`` (from :func:`helpers.ops.resnet50_layers`) at another ``batch`` and ``dtype``."""
    if not isinstance(layer, Layer):
        raise TypeError(
            f"layer must be a helpers.ops.Layer, got {type(layer).__name__}"
        )
    batch = _args.positive_int("batch", batch)
    if layer.kind == "fc":
        return linear_cost(batch, layer.c_in, layer.c_out, dtype=dtype)
    return conv2d_cost(
        batch,
        layer.c_in,
        layer.c_out,
        layer.in_size,
        layer.in_size,
        layer.kernel,
        stride=layer.stride,
        dtype=dtype,
    )


@dataclass(frozen=True)
class LayerRoofline:
    """One layer's place on a roofline at a given batch.

    Attributes
    ----------
    name : str
        Layer name, e.g. ``"layer1.0.conv2"``.
    kind : str
        ``"conv"`` or ``"fc"``.
    kernel : int
        Filter size ``R = S``.
    c_in, c_out : int
        Input channels ``C`` and filters ``K``.
    out_size : int
        Output height = width (``P = Q``).
    flops, bytes : float
        Work and traffic at this batch (FLOP, bytes).
    intensity : float
        ``flops / bytes`` in FLOP/byte.
    attainable : float
        Roofline ceiling at that intensity, FLOP/s.
    seconds : float
        Roofline time in seconds (no overhead).
    bound : str
        ``'memory'`` or ``'compute'``.
    crossing_batch : float
        Batch at which the layer reaches the ridge point
        (:func:`helpers.roofline.crossing_batch`; below 1: compute-bound
        already at batch 1; ``inf`` if never).
    """

    name: str
    kind: str
    kernel: int
    c_in: int
    c_out: int
    out_size: int
    flops: float
    bytes: float
    intensity: float
    attainable: float
    seconds: float
    bound: Bound
    crossing_batch: float


def resnet50_roofline(
    batch: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    image_size: int = 224,
) -> list[LayerRoofline]:
    """Every ResNet-50 layer's intensity, ceiling, time and bound on ``acc`` in ``dtype`` at ``batch``.

    Weights and activations are both stored in ``dtype``, which also picks the
    peak FLOP/s (``"fp32"``: plain FP32 units; ``"fp16"``: tensor cores).
    Layers as in :func:`helpers.ops.resnet50_layers` (He et al. 2016).
    """
    device = get_accelerator(acc)
    device.flops(dtype)
    batch = _args.positive_int("batch", batch)
    rows = []
    for layer in resnet50_layers(batch, image_size=image_size, dtype=dtype):
        cost = layer.cost
        ceiling = attainable_flops(cost.intensity, device, dtype=dtype)
        parts = breakdown(cost.flops, cost.bytes, device, dtype=dtype)
        rows.append(
            LayerRoofline(
                name=layer.name,
                kind=layer.kind,
                kernel=layer.kernel,
                c_in=layer.c_in,
                c_out=layer.c_out,
                out_size=layer.out_size,
                flops=cost.flops,
                bytes=cost.bytes,
                intensity=cost.intensity,
                attainable=float(ceiling),
                seconds=parts.seconds,
                bound=parts.bound,
                crossing_batch=crossing_batch(
                    functools.partial(_cost_at, layer, dtype=dtype),
                    device,
                    dtype=dtype,
                ),
            )
        )
    return rows


def count_memory_bound(
    batch: int, acc: str | Accelerator, *, dtype: str = "fp16", image_size: int = 224
) -> int:
    """How many ResNet-50 layers are memory-bound on ``acc`` in ``dtype`` at ``batch``."""
    rows = resnet50_roofline(batch, acc, dtype=dtype, image_size=image_size)
    return sum(row.bound == "memory" for row in rows)


def resnet50_step_time(
    batch: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    overhead: float = 0.0,
    image_size: int = 224,
) -> float:
    """Predicted seconds of one ResNet-50 forward step: the layers' roofline times plus overheads.

    ``sum_l max(F_l / P, B_l / W) + L * overhead`` over the ``L = 54`` layers
    of :func:`resnet50_roofline` (the layers run one after the other, so
    their times add; the overhead is charged once per layer, as eager
    PyTorch launches one kernel per convolution). Images per second are
    ``batch / resnet50_step_time(...)``.

    Parameters
    ----------
    batch : int
        Images per step.
    acc : str or Accelerator
        The device.
    dtype : str
        Storage dtype and peak FLOP/s, as in :func:`resnet50_roofline`.
    overhead : float
        Fixed time per layer in seconds (e.g.
        :data:`helpers.batching.DEFAULT_OVERHEAD_S`).
    image_size : int
        Input height = width in pixels.
    """
    overhead = _args.non_negative("overhead", overhead)
    rows = resnet50_roofline(batch, acc, dtype=dtype, image_size=image_size)
    return sum(row.seconds for row in rows) + len(rows) * overhead


def memory_time_share(
    batch: int, acc: str | Accelerator, *, dtype: str = "fp16", image_size: int = 224
) -> float:
    """Fraction (0 to 1) of ResNet-50's roofline time spent in memory-bound layers.

    ``sum of seconds over memory-bound layers / sum of seconds over all
    layers`` from :func:`resnet50_roofline` (no overhead). Near 1, a faster
    memory (or fewer bytes) speeds the network up; near 0, more FLOP/s do.
    """
    rows = resnet50_roofline(batch, acc, dtype=dtype, image_size=image_size)
    memory = sum(row.seconds for row in rows if row.bound == "memory")
    return memory / sum(row.seconds for row in rows)


VECTOR_DTYPE: Mapping[str, str] = MappingProxyType({"tf32": "fp32", "int8": "fp32"})
"""The vector-roof dtype of elementwise work on data stored in a tensor-core-only format.

TF32 is an input format of the tensor cores (NVIDIA A100 whitepaper); a
TF32 network keeps its activations in FP32, and its batch norms and ReLUs
run on the FP32 lanes. INT8 networks rescale in FP32 or INT32 on the same
lanes (the catalogue lists no separate integer vector rate).
"""


def resnet50_kernel_seconds(
    batch: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    fused: bool = True,
    image_size: int = 224,
) -> list[float]:
    """GPU seconds of each kernel of :func:`helpers.fusion.resnet50_kernels`, second-order.

    Convolutions and the fc layer are GEMMs (``M = N P Q`` or the batch,
    ``N`` = filters, ``K = C R S``) on the tensor roof, slowed by tile and
    wave quantization with the library's best tile and split-K
    (:func:`helpers.ops.gemm_efficiency`); batch norms,
    ReLUs, adds and pools run on the vector roof; on TF32 or INT8 data,
    whose formats only the tensor cores compute in, they run on the FP32
    lanes (:data:`VECTOR_DTYPE`). Pass
    :func:`helpers.roofline.achievable` for derated ceilings.
    """
    device = get_accelerator(acc)
    layers = {
        layer.name: layer
        for layer in resnet50_layers(batch, image_size=image_size, dtype=dtype)
    }
    seconds = []
    for kernel in fusion.resnet50_kernels(
        batch, dtype=dtype, fused=fused, image_size=image_size
    ):
        cost = kernel.cost
        if kernel.matrix:
            layer = layers[kernel.name]
            m = batch * layer.out_size**2
            k = layer.c_in * layer.kernel**2
            e = gemm_efficiency(m, layer.c_out, k, device)
            parts = breakdown(cost.flops, cost.bytes, device, dtype=dtype, mfu=e)
        else:
            parts = breakdown(
                cost.flops,
                cost.bytes,
                device,
                dtype=VECTOR_DTYPE.get(dtype, dtype),
                roof="vector",
            )
        seconds.append(parts.seconds)
    return seconds


def resnet50_stream_time(
    batch: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    fused: bool = True,
    dispatch_s: float = 5e-6,
    image_size: int = 224,
    kernel_floor_s: float = 0.0,
) -> float:
    """Second-order seconds of one ResNet-50 step: its kernels as one asynchronous stream.

    :func:`helpers.dispatch.stream_time` of :func:`resnet50_kernel_seconds`
    with ``dispatch_s`` of CPU time per kernel: 174 kernels unfused (eager),
    56 fused, and ``kernel_floor_s`` of GPU-side time per kernel
    (:func:`helpers.dispatch.kernel_floor`; 0 leaves it out). Compare
    :func:`resnet50_step_time`, the first-order sum of the 54 GEMM layers'
    roofline times plus an overhead per layer.
    """
    dispatch_s = _args.non_negative("dispatch_s", dispatch_s)
    gpu = resnet50_kernel_seconds(
        batch, acc, dtype=dtype, fused=fused, image_size=image_size
    )
    return dispatch.stream_time(gpu, dispatch_s, kernel_floor_s=kernel_floor_s)


def input_bytes(batch: int, *, dtype: str = "fp32", image_size: int = 224) -> float:
    """Bytes of one step's input images: ``batch x 3 x image_size^2`` values of ``dtype``.

    What a benchmark that copies its input to the GPU every step moves over
    the host link (:func:`helpers.hardware.host_link`) before the first
    kernel can start.

    >>> input_bytes(64) / 1e6
    38.535168
    """
    batch = _args.positive_int("batch", batch)
    image_size = _args.positive_int("image_size", image_size)
    return float(batch * 3 * image_size**2 * dtype_bytes(dtype))


def resnet50_published(
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    batch: int = 1,
    image_size: int = 224,
) -> dict[str, float]:
    """Published ResNet-50 inference throughputs (images/s) on ``acc`` for this setting, by framework.

    Read from ``helpers/data/published/resnet50.csv`` (NVIDIA's
    DeepLearningExamples tables, one row per framework, GPU, precision and
    batch; see :func:`helpers.published.load`). An empty dict means no
    published run matches; the model's predictions then stand alone.

    >>> resnet50_published("T4", dtype="fp16", batch=64)["PyTorch"]
    1165.0
    """
    batch = _args.positive_int("batch", batch)
    image_size = _args.positive_int("image_size", image_size)
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a string, got {type(dtype).__name__}")
    out: dict[str, float] = {}
    for point in published.load("resnet50", gpu=get_accelerator(acc).name):
        if (
            point.quantity == "throughput"
            and point.precision == dtype
            and point.integer("batch") == batch
            and point.integer("image_size") == image_size
        ):
            out[point.setting["framework"]] = point.value
    return out
