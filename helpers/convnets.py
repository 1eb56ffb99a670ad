"""Convolutional networks on the roofline: ResNet-50 layer by layer, and how batching moves it.

Each layer of :func:`helpers.ops.resnet50_layers` is an implicit GEMM
(:func:`helpers.ops.conv2d_cost`) whose bytes are its filters (read once per
step, whatever the batch) plus its input and output activations (per image).
So, like a linear layer, its intensity grows with the batch towards a ceiling
set by the activations alone, and it crosses the ridge point at a batch
computed by :func:`helpers.batching.crossing_batch`.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _validate
from .batching import crossing_batch
from .hardware import Accelerator, dtype_bytes, get_accelerator
from .ops import Cost, Layer, conv2d_cost, linear_cost, resnet50_layers
from .roofline import Bound, attainable_flops, bound, roofline_time


def activation_ceiling(c_in: int, c_out: int, kernel: int, dtype: str = "fp16") -> float:
    """Intensity (FLOP/byte) a stride-1 "same" convolution approaches as the batch grows.

    From :func:`helpers.ops.conv2d_cost`, ``1/I = w / (2 N H W) + w (C + K) / (2 K C R S)``;
    with ``N`` large only the activation term remains:
    ``I_act = (R S / w) * 2 C K / (C + K)``. More and bigger filters raise it; no batch can.
    """
    c_in = _validate.positive_int("c_in", c_in)
    c_out = _validate.positive_int("c_out", c_out)
    kernel = _validate.positive_int("kernel", kernel)
    return kernel * kernel / dtype_bytes(dtype) * 2 * c_in * c_out / (c_in + c_out)


def filter_limit(batch: int, height: int, width: int, dtype: str = "fp16") -> float:
    """Intensity (FLOP/byte) a stride-1 "same" convolution approaches as its channels grow: ``2 N H W / w``.

    The filter term of ``1/I`` above: each weight is reused at the ``N H W``
    output positions, so a small feature map caps intensity however many filters it has.
    """
    batch = _validate.positive_int("batch", batch)
    height = _validate.positive_int("height", height)
    width = _validate.positive_int("width", width)
    return 2 * batch * height * width / dtype_bytes(dtype)


def layer_cost(layer: Layer, batch: int, dtype: str = "fp16") -> Cost:
    """Cost of ``layer`` (from :func:`helpers.ops.resnet50_layers`) at another ``batch`` and ``dtype``."""
    if not isinstance(layer, Layer):
        raise TypeError(f"layer must be a helpers.ops.Layer, got {type(layer).__name__}")
    batch = _validate.positive_int("batch", batch)
    if layer.kind == "fc":
        return linear_cost(batch, layer.c_in, layer.c_out, dtype)
    return conv2d_cost(batch, layer.c_in, layer.c_out, layer.in_size, layer.in_size, layer.kernel, layer.stride, dtype=dtype)


def layer_crossing_batch(layer: Layer, acc: str | Accelerator, dtype: str = "fp16") -> float:
    """Batch at which ``layer`` reaches the ridge point of ``acc`` in ``dtype`` (see :func:`helpers.batching.crossing_batch`).

    Below 1: compute-bound already at batch 1. ``inf``: memory-bound at any batch.
    """
    return crossing_batch(acc, lambda b: layer_cost(layer, b, dtype), dtype)


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
    time : float
        Roofline time in seconds (no overhead).
    bound : str
        ``'memory'`` or ``'compute'``.
    crossing_batch : float
        Batch at which the layer reaches the ridge point (``inf`` if never).
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
    time: float
    bound: Bound
    crossing_batch: float


def resnet50_roofline(
    acc: str | Accelerator,
    dtype: str = "fp16",
    batch: int = 1,
    image_size: int = 224,
) -> list[LayerRoofline]:
    """Every ResNet-50 layer's intensity, ceiling, time and bound on ``acc`` in ``dtype`` at ``batch``.

    Weights and activations are both stored in ``dtype``, which also picks the
    peak FLOP/s (``"fp32"``: plain FP32 units; ``"fp16"``: tensor cores).
    Layers as in :func:`helpers.ops.resnet50_layers` (He et al. 2016).
    """
    device = get_accelerator(acc)
    device.flops(dtype)
    batch = _validate.positive_int("batch", batch)
    rows = []
    for layer in resnet50_layers(batch, image_size, dtype):
        cost = layer.cost
        ceiling = attainable_flops(cost.intensity, device, dtype)
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
                attainable=ceiling,
                time=roofline_time(cost.flops, cost.bytes, device, dtype),
                bound=bound(cost.flops, cost.bytes, device, dtype),
                crossing_batch=layer_crossing_batch(layer, device, dtype),
            )
        )
    return rows


def count_memory_bound(acc: str | Accelerator, dtype: str = "fp16", batch: int = 1, image_size: int = 224) -> int:
    """How many ResNet-50 layers are memory-bound on ``acc`` in ``dtype`` at ``batch``."""
    return sum(row.bound == "memory" for row in resnet50_roofline(acc, dtype, batch, image_size))

