"""Operator fusion: what ResNet-50's batch norms, ReLUs and residual adds cost unfused.

:func:`helpers.ops.resnet50_layers` lists only the convolutions and the fc
layer, which is the inference-engine view: batch norm folded into the
convolution weights, ReLU and the residual add fused into the convolution's
epilogue (TensorRT, ``torch.compile``). Eager PyTorch instead launches one
kernel per operation, and each elementwise kernel reads its input from
memory and writes its output back. Those bytes grow with the batch and
never amortize. :func:`resnet50_kernels` lists the kernels either way, so a
chapter can add up both (Horace He, "Making Deep Learning Go Brrrr", section
"Operator fusion"; Ivanov et al., "Data Movement Is All You Need", MLSys 2021).

Conventions: an eval-mode batch norm is ``y = a x + b`` per channel (2 FLOP
per element, the per-channel ``a, b`` are negligible bytes); ReLU 1 FLOP per
element; a residual add reads two tensors; the 3 x 3 stride-2 max-pool reads
its input once and does 9 comparisons per output; the global average pool
reads 7 x 7 maps and writes one value per channel. Units: FLOP, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _args
from .hardware import dtype_bytes
from .ops import Cost, elementwise_cost, linear_cost, resnet50_layers
from .roofline import Accelerator, breakdown


@dataclass(frozen=True)
class Kernel:
    """One kernel of a network's forward pass.

    Attributes
    ----------
    name : str
        E.g. ``"layer1.0.bn1"``.
    kind : str
        ``"conv"``, ``"fc"``, ``"bn"``, ``"relu"``, ``"add"``, ``"maxpool"`` or
        ``"avgpool"``. Convolutions and fc run on the matrix (tensor) units,
        the rest on the vector units.
    cost : Cost
        FLOP and bytes moved.
    """

    name: str
    kind: str
    cost: Cost

    @property
    def matrix(self) -> bool:
        """Whether the kernel is a GEMM (conv, fc) rather than elementwise work."""
        return self.kind in ("conv", "fc")


def resnet50_kernels(
    batch: int = 1, *, dtype: str = "fp16", fused: bool = False, image_size: int = 224
) -> list[Kernel]:
    """ResNet-50 v1.5's forward pass as a list of kernels, unfused (eager) or fused.

    Unfused: every convolution is followed by a batch norm; a ReLU follows
    the stem and each bottleneck's first two batch norms, and the residual
    add, which comes after the third (and the shortcut's): 53 conv + 53 BN +
    49 ReLU + 16 add + 2 pools + 1 fc = **174 kernels**. Fused: the 53
    convolutions (each with its BN folded, its ReLU in the epilogue, and the
    block's last one also reading the shortcut tensor for the add), the two
    pools and the fc: **56 kernels**.
    """
    batch = _args.positive_int("batch", batch)
    _args.boolean("fused", fused)
    w = dtype_bytes(dtype)
    layers = resnet50_layers(batch, image_size=image_size, dtype=dtype)

    def act(layer) -> int:  # elements of a layer's output tensor
        return batch * layer.c_out * layer.out_size * layer.out_size

    def conv(layer, residual: int = 0) -> Kernel:
        extra = Cost(float(residual), float(w * residual))  # the fused add
        return Kernel(layer.name, "conv", layer.cost + extra)

    def bn(layer) -> Kernel:
        return Kernel(
            layer.name.replace("conv", "bn").replace("downsample", "downsample.bn"),
            "bn",
            elementwise_cost(act(layer), dtype=dtype, flops_per_element=2),
        )

    def relu(name: str, layer) -> Kernel:
        return Kernel(name, "relu", elementwise_cost(act(layer), dtype=dtype))

    by_name = {layer.name: layer for layer in layers}
    stem = by_name["conv1"]
    pooled = batch * stem.c_out * ((stem.out_size + 1) // 2) ** 2
    maxpool = Kernel(
        "maxpool", "maxpool", Cost(9.0 * pooled, float(w * (act(stem) + pooled)))
    )
    kernels = [conv(stem)] if fused else [conv(stem), bn(stem), relu("relu", stem)]
    kernels.append(maxpool)
    blocks = dict.fromkeys(
        n.rsplit(".", 1)[0] for n in by_name if n.startswith("layer")
    )
    for block in blocks:
        c1, c2, c3 = (by_name[f"{block}.conv{i}"] for i in (1, 2, 3))
        down = by_name.get(f"{block}.downsample")
        if fused:
            kernels += [conv(c1), conv(c2)]
            if down is not None:
                kernels.append(conv(down))
            kernels.append(conv(c3, residual=act(c3)))
            continue
        kernels += [conv(c1), bn(c1), relu(f"{block}.relu1", c1)]
        kernels += [conv(c2), bn(c2), relu(f"{block}.relu2", c2)]
        kernels += [conv(c3), bn(c3)]
        if down is not None:
            kernels += [conv(down), bn(down)]
        add = elementwise_cost(act(c3), dtype=dtype, n_inputs=2)
        kernels += [Kernel(f"{block}.add", "add", add), relu(f"{block}.relu3", c3)]
    last = by_name["layer4.2.conv3"]
    kernels.append(
        Kernel(
            "avgpool",
            "avgpool",
            Cost(float(act(last)), float(w * (act(last) + batch * last.c_out))),
        )
    )
    fc = by_name["fc"]
    kernels.append(Kernel("fc", "fc", fc.cost))
    return kernels


def elementwise_bytes(kernels: list[Kernel]) -> float:
    """Bytes moved by the kernels that are not GEMMs (BN, ReLU, add, pools)."""
    return sum(k.cost.bytes for k in kernels if not k.matrix)


def bytes_saved(batch: int, *, dtype: str = "fp16", image_size: int = 224) -> float:
    """Bytes one ResNet-50 forward pass moves less when fused than eager (bytes).

    The difference of the two lists of :func:`resnet50_kernels`: the batch
    norms', ReLUs' and residual adds' memory round trips, less the shortcut
    tensors that each block's fused last convolution reads for the add. It
    grows exactly with the batch (no weights to amortize), and at the
    achievable bandwidth it is an upper bound on the time that fusing
    elementwise work can save: a compiler that fuses less saves less.
    """
    eager = resnet50_kernels(batch, dtype=dtype, fused=False, image_size=image_size)
    fused = resnet50_kernels(batch, dtype=dtype, fused=True, image_size=image_size)
    return sum(k.cost.bytes for k in eager) - sum(k.cost.bytes for k in fused)


def linear_stack_kernels(
    batch: int,
    width: int,
    *,
    layers: int = 40,
    dtype: str = "fp16",
    fused: bool = False,
) -> list[Kernel]:
    """A stack of ``layers`` square ``width``-wide linear layers, each followed by a ReLU, as kernels.

    Unfused (eager PyTorch): per layer one matmul kernel (bias in its
    epilogue, as ``addmm`` does; :func:`helpers.ops.linear_cost`) and one ReLU
    kernel that reads the ``batch x width`` output and writes it back
    (:func:`helpers.ops.elementwise_cost`): ``2 * layers`` kernels. Fused:
    the ReLU runs in the matmul's epilogue on data still on chip, so each
    layer is one kernel with the matmul's bytes and ``batch * width`` more
    FLOP: ``layers`` kernels. Units: FLOP, bytes.

    Examples
    --------
    >>> len(linear_stack_kernels(1, 1024)), len(linear_stack_kernels(1, 1024, fused=True))
    (80, 40)
    """
    batch = _args.positive_int("batch", batch)
    width = _args.positive_int("width", width)
    layers = _args.positive_int("layers", layers)
    _args.boolean("fused", fused)
    matmul = linear_cost(batch, width, width, dtype=dtype)
    relu = elementwise_cost(batch * width, dtype=dtype)
    kernels: list[Kernel] = []
    for i in range(layers):
        if fused:
            kernels.append(Kernel(f"linear{i}", "fc", matmul + Cost(relu.flops, 0.0)))
        else:
            kernels.append(Kernel(f"linear{i}", "fc", matmul))
            kernels.append(Kernel(f"relu{i}", "relu", relu))
    return kernels


def kernel_seconds(
    kernels: list[Kernel], acc: str | Accelerator, *, dtype: str = "fp16"
) -> list[float]:
    """Roofline seconds of each kernel on ``acc``: GEMMs on the tensor roof, the rest on the vector roof.

    No tile or wave quantization (use
    :func:`helpers.convnets.resnet50_kernel_seconds` for ResNet-50's
    convolutions, which adds it). Pass :func:`helpers.achievable.achievable_device`
    for the ceilings published measurements reach.
    """
    return [
        breakdown(
            k.cost.flops,
            k.cost.bytes,
            acc,
            dtype=dtype,
            roof="tensor" if k.matrix else "vector",
        ).seconds
        for k in kernels
    ]
