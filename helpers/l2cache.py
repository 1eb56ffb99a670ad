"""The L2 cache: does a working set, or one layer's hand-off to the next, fit on chip?

The roofline charges every byte at DRAM bandwidth, and its byte count is
already the *compulsory* traffic: each operand crosses from DRAM once. A
GPU's L2 (4 MiB on a T4, 40 MiB on an A100, 50 MiB on an H100:
:attr:`helpers.hardware.Accelerator.l2_bytes`) sits between the SMs and DRAM
and saves only re-reads, which that count never charged, so a *cold* kernel
(its inputs in DRAM when it starts) cannot beat the DRAM roof however small
it is. Only data already resident can: a tensor that one kernel writes and
the next reads soon after is served from the L2 when it fits, so such a
layer moves fewer DRAM bytes than :func:`helpers.ops.conv2d_cost` counts;
and a timing loop that repeats a small copy finds its buffers warm from the
second iteration on, so it can report more than the datasheet bandwidth. Whether it
does depends on what else competes for the cache (the weights streaming
through, other tensors), so :func:`fits_in_l2` is a necessary condition,
not a guarantee; ``usable_fraction`` leaves room for that competition.
NVIDIA, *GPU Performance Background User's Guide* (A100: 108 SMs, 40 MB L2).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _args
from .hardware import Accelerator, dtype_bytes, get_accelerator
from .ops import resnet50_layers


def fits_in_l2(
    nbytes: float, acc: str | Accelerator, *, usable_fraction: float = 1.0
) -> bool:
    """Whether ``nbytes`` fit in ``usable_fraction`` of ``acc``'s L2 cache.

    Raises ``KeyError`` for a device with no published L2 size.

    Examples
    --------
    >>> fits_in_l2(1.6e6, "T4"), fits_in_l2(26e6, "T4")
    (True, False)
    """
    nbytes = _args.positive("nbytes", nbytes)
    usable = _args.fraction("usable_fraction", usable_fraction)
    device = get_accelerator(acc)
    if device.l2_bytes is None:
        raise KeyError(f"{device.name} has no published L2 size ({device.notes})")
    return nbytes <= usable * device.l2_bytes


@dataclass(frozen=True)
class Handoff:
    """One layer's output tensor, as the next layer reads it.

    Attributes
    ----------
    name : str
        The producing layer.
    bytes : float
        Size of its output tensor (bytes).
    fits : bool
        Whether it fits in the device's usable L2 (:func:`fits_in_l2`).
    """

    name: str
    bytes: float
    fits: bool


def resnet50_handoffs(
    batch: int,
    acc: str | Accelerator,
    *,
    dtype: str = "fp16",
    usable_fraction: float = 1.0,
    image_size: int = 224,
) -> list[Handoff]:
    """Each ResNet-50 convolution's output tensor and whether it fits in ``acc``'s L2.

    The largest hand-offs are the stem's 64 x 112 x 112 and stage 1's
    256 x 56 x 56 maps, 1.6 MB per image in fp16: at batch 1 they fit a T4's
    4 MB, and they fit an A100's 40 MB up to batch 26. Those are the early,
    activation-heavy layers the DRAM roofline calls memory-bound.
    """
    width = dtype_bytes(dtype)
    rows = []
    for layer in resnet50_layers(batch, image_size=image_size, dtype=dtype):
        if layer.kind != "conv":
            continue
        nbytes = float(width * batch * layer.c_out * layer.out_size**2)
        fits = fits_in_l2(nbytes, acc, usable_fraction=usable_fraction)
        rows.append(Handoff(layer.name, nbytes, fits))
    return rows
