"""Accelerator and link specifications, each with its published source.

Every figure is in SI units: FLOP/s, bytes/s, bytes, seconds. Peak FLOP/s are
the **dense** tensor-core figures (where a datasheet quotes "with sparsity",
the 2:4 structured-sparsity number is twice the dense one; we store the dense
half and say so in ``notes``). ``fp32`` means plain (non-tensor-core) FP32;
``tf32`` is the tensor-core TF32 mode.

Look-ups are case-insensitive and accept aliases: ``get_accelerator("a100")``
returns the A100 SXM4 80GB, ``get_accelerator("H100")`` the H100 SXM.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from . import _validate

DTYPE_BYTES: Mapping[str, int] = MappingProxyType(
    {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
)
"""Bytes per element of each dtype the book uses (TF32 is stored as FP32)."""

TERA = 1e12
GIGA = 1e9
GIB = 2**30
"""Bytes in a gibibyte. Memory capacities are stored as the datasheet's "GB" read as GiB (see :class:`Accelerator`)."""


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (one of :data:`DTYPE_BYTES`)."""
    key = _validate.name("dtype", dtype)
    if key not in DTYPE_BYTES:
        raise KeyError(
            f"dtype {dtype!r} is unknown; choose one of {sorted(DTYPE_BYTES)}"
        )
    return DTYPE_BYTES[key]


@dataclass(frozen=True)
class Accelerator:
    """One accelerator's peak throughput, memory and the source of each figure.

    Attributes
    ----------
    name : str
        Display name, e.g. ``"H100 SXM"``.
    peak_flops : Mapping[str, float]
        Dense peak throughput per dtype in FLOP/s (integer ops counted as FLOP).
    memory_bandwidth : float
        Peak memory bandwidth in bytes/s.
    memory_capacity : float
        Memory size in bytes: the datasheet's "GB" read as GiB (2**30 bytes),
        since memory parts come in binary sizes. What the driver reports is
        within about 1 % of it for HBM parts (an 80 GB H100 shows 81,559 MiB)
        and a few per cent less for GDDR parts with ECC on (the T4); what
        serving leaves free beyond that is the ``reserve`` of
        :func:`helpers.inference.max_decode_batch`.
    source : str
        URL of the datasheet (or paper) the figures come from.
    notes : str
        What the figures mean: sparsity, accumulate precision, caveats.
    aliases : tuple of str
        Other names accepted by :func:`get_accelerator`.
    torch_names : tuple of str
        Regular expressions matched against the lower-cased name torch gives
        the device (``torch.cuda.get_device_name()``, e.g. ``"tesla t4"``), so
        a lab finds the running GPU's datasheet (:func:`from_device_name`).
    sm_count : int or None
        Streaming multiprocessors: how many thread blocks (GEMM output tiles)
        run at once, one per SM (:func:`helpers.ops.gemm_utilization`).
        ``None`` where the vendor publishes no figure, and for a measured
        CPU (its cores are not SMs, and one thread runs a GEMM's tiles one
        after the other).
    l2_bytes : float or None
        Last-level (L2) cache in bytes (MB read as MiB, as the whitepapers'
        KB tables do); ``None`` where unpublished.
    vector_peak_flops : Mapping[str, float]
        Peak FLOP/s per dtype of the plain (CUDA-core, non-tensor) units, where
        elementwise work runs (``roof="vector"`` in
        :func:`helpers.roofline.breakdown`); empty
        where unpublished.
    whitepaper : str
        URL of the architecture whitepaper (or other source) for
        ``sm_count``, ``l2_bytes`` and ``vector_peak_flops``.
    host_link : str or None
        Name of the catalog :class:`Link` between the GPU and its host's
        memory (``"PCIe 3.0 x16"`` on a T4): the datasheet's "PCIe Gen3/4/5"
        system-interface line (``source``, unless ``notes`` names another);
        what a host-to-device copy crosses. ``None`` where no datasheet says.
    """

    name: str
    peak_flops: Mapping[str, float]
    memory_bandwidth: float
    memory_capacity: float
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = ()
    torch_names: tuple[str, ...] = ()
    sm_count: int | None = None
    l2_bytes: float | None = None
    vector_peak_flops: Mapping[str, float] = field(default_factory=dict)
    whitepaper: str = ""
    host_link: str | None = None

    def __post_init__(self) -> None:
        _validate.positive("memory_bandwidth", self.memory_bandwidth)
        _validate.positive("memory_capacity", self.memory_capacity)
        if not self.peak_flops:
            raise ValueError("peak_flops must list at least one dtype")
        for dtype, value in self.peak_flops.items():
            dtype_bytes(dtype)
            _validate.positive(f"peak_flops[{dtype!r}]", value)
        object.__setattr__(self, "peak_flops", MappingProxyType(dict(self.peak_flops)))
        if self.sm_count is not None:
            _validate.positive_int("sm_count", self.sm_count)
        if self.l2_bytes is not None:
            _validate.positive("l2_bytes", self.l2_bytes)
        for dtype, value in self.vector_peak_flops.items():
            dtype_bytes(dtype)
            _validate.positive(f"vector_peak_flops[{dtype!r}]", value)
        object.__setattr__(
            self, "vector_peak_flops", MappingProxyType(dict(self.vector_peak_flops))
        )

    @property
    def half_dtype(self) -> str | None:
        """The 16-bit dtype the device computes in: ``"bf16"`` if it has a figure, else ``"fp16"``, else ``None``."""
        for dtype in ("bf16", "fp16"):
            if dtype in self.peak_flops:
                return dtype
        return None

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this accelerator has a peak figure for."""
        return tuple(self.peak_flops)

    def flops(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype``; raises ``KeyError`` if the device lacks it."""
        key = _validate.name("dtype", dtype)
        dtype_bytes(key)
        if key not in self.peak_flops:
            raise KeyError(
                f"dtype {dtype!r} has no peak figure on {self.name}; it supports {list(self.peak_flops)}"
            )
        return self.peak_flops[key]

    def vector_flops(self, dtype: str) -> float:
        """Peak FLOP/s of the plain (non-tensor) units for ``dtype``: the roof of elementwise work.

        Raises ``KeyError`` if the catalog has no such figure for this device.
        """
        key = _validate.name("dtype", dtype)
        dtype_bytes(key)
        if key not in self.vector_peak_flops:
            raise KeyError(
                f"dtype {dtype!r} has no vector (non-tensor) peak on {self.name}; "
                f"it lists {list(self.vector_peak_flops)}"
            )
        return self.vector_peak_flops[key]

    def sms(self) -> int:
        """:attr:`sm_count`, or a ``KeyError`` that says why it is missing."""
        if self.sm_count is None:
            raise KeyError(f"{self.name} has no published SM count ({self.notes})")
        return self.sm_count


@dataclass(frozen=True)
class Link:
    """A data path between devices or hosts.

    Attributes
    ----------
    name : str
        Display name, e.g. ``"ConnectX-7 (400 Gb/s)"``.
    bandwidth : float
        Peak bandwidth per direction in bytes/s.
    latency : float
        Typical one-way latency of a small transfer in seconds (order of magnitude).
    source : str
        URL of the specification the bandwidth comes from.
    notes : str
        Caveats (encoding overhead, where the latency figure comes from).
    aliases : tuple of str
        Other names accepted by :func:`get_link`.
    """

    name: str
    bandwidth: float
    latency: float
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _validate.positive("bandwidth", self.bandwidth)
        _validate.non_negative("latency", self.latency)


_T4_PDF = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf"
_V100_PDF = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
_A100_PDF = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_H100_PDF = (
    "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
)
_H200_PDF = (
    "https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446"
)
_L4_PDF = "https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet"
_ADA_PDF = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
_TURING_WP = "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf"
_VOLTA_WP = "https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf"
_AMPERE_WP = "https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"
_GA102_WP = "https://images.nvidia.com/aem-dam/en-zz/Solutions/geforce/ampere/pdf/NVIDIA-ampere-GA102-GPU-Architecture-Whitepaper-V1.pdf"
_HOPPER_WP = "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper"
MIB = 2**20
"""Bytes in a mebibyte: the whitepapers give L2 sizes in KB of 1,024 bytes (A100: 40,960 KB)."""
_AMPERE_VECTOR: Mapping[str, float] = MappingProxyType(
    {"fp32": 19.5 * TERA, "fp16": 78 * TERA, "bf16": 39 * TERA}
)
"""A100 non-tensor peaks (Ampere whitepaper, Table 1: FP16 78, BF16 39, FP32 19.5 TFLOP/s)."""
_HOPPER_VECTOR: Mapping[str, float] = MappingProxyType(
    {"fp32": 67 * TERA, "fp16": 133.8 * TERA, "bf16": 133.8 * TERA}
)
"""H100 SXM5 non-tensor peaks (Hopper whitepaper, Table 3: FP16 and BF16 133.8, FP32 66.9 TFLOP/s)."""
_AMPERE_PEAKS: Mapping[str, float] = MappingProxyType(
    {
        "fp32": 19.5 * TERA,
        "tf32": 156 * TERA,
        "fp16": 312 * TERA,
        "bf16": 312 * TERA,
        "int8": 624 * TERA,
    }
)
"""Dense peaks of the A100 SXM4 (40 and 80 GB) and its China-market A800 (A100 datasheet)."""
_HOPPER_PEAKS: Mapping[str, float] = MappingProxyType(
    {
        "fp32": 67 * TERA,
        "tf32": 494.7 * TERA,
        "fp16": 989.4 * TERA,
        "bf16": 989.4 * TERA,
        "fp8": 1978.9 * TERA,
        "int8": 1978.9 * TERA,
    }
)
"""Dense peaks of the H100 SXM, shared by the H800 SXM and the H200 SXM (H100/H200 datasheets)."""
_AMPERE_DENSE = (
    "Tensor-core figures are dense; the datasheet's starred figures are 2:4-sparse (2x). "
    "Ampere whitepaper, Table 1: 108 SMs, 40,960 KB L2; non-tensor FP16 78, BF16 39."
)

_HGX_PAGE = "https://www.nvidia.com/en-us/data-center/hgx/"
_DGX_B200_PDF = "https://resources.nvidia.com/en-us-dgx-systems/dgx-b200-datasheet"
_GB200_NVL72_PAGE = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
_BLACKWELL_ULTRA_BLOG = "https://developer.nvidia.com/blog/inside-nvidia-blackwell-ultra-the-chip-powering-the-ai-factory-era/"
_BLACKWELL_TUNING = "https://docs.nvidia.com/cuda/blackwell-tuning-guide/"
_B200_QUERY = "https://github.com/pytorch/ao/pull/4002"
_MI300X_PDF = "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf"
_MI325X_PAGE = "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html"
_ROCM_SPECS = "https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html"
_B200_PEAKS: Mapping[str, float] = MappingProxyType(
    {
        "fp32": 75 * TERA,
        "tf32": 1125 * TERA,
        "fp16": 2250 * TERA,
        "bf16": 2250 * TERA,
        "fp8": 4500 * TERA,
        "int8": 4500 * TERA,
    }
)
"""Dense peaks of one HGX B200 GPU: the HGX page's 8-GPU sparse figures / 8 / 2 (FP32 / 8)."""
_B300_PEAKS: Mapping[str, float] = MappingProxyType(
    {
        "fp32": 75 * TERA,
        "tf32": 1125 * TERA,
        "fp16": 2250 * TERA,
        "bf16": 2250 * TERA,
        "fp8": 4500 * TERA,
    }
)
"""Dense peaks of one HGX B300 GPU: the HGX page's 8-GPU sparse figures / 8 / 2 (FP32 / 8); no INT8 kept."""
_GB200_PEAKS: Mapping[str, float] = MappingProxyType(
    {
        "tf32": 1250 * TERA,
        "fp16": 2500 * TERA,
        "bf16": 2500 * TERA,
        "fp8": 5000 * TERA,
        "int8": 5000 * TERA,
    }
)
"""Dense tensor-core peaks of one GB200 GPU: the GB200 NVL72 page's rack sparse figures / 72 / 2."""
_MI300_PEAKS: Mapping[str, float] = MappingProxyType(
    {
        "fp32": 163.4 * TERA,
        "tf32": 653.7 * TERA,
        "fp16": 1307.4 * TERA,
        "bf16": 1307.4 * TERA,
        "fp8": 2614.9 * TERA,
        "int8": 2614.9 * TERA,
    }
)
"""Dense matrix peaks of the MI300X and MI325X (AMD datasheets; the sparse figures are twice these)."""
FP4_DENSE_FLOPS: Mapping[str, float] = MappingProxyType(
    {"B200 SXM": 9000 * TERA, "B300 SXM": 13125 * TERA, "GB200 (per GPU)": 10000 * TERA}
)
"""Dense FP4 tensor-core peaks (FLOP/s) where published, by catalog name (sources in each entry's notes).

FP4 is not a :data:`DTYPE_BYTES` dtype (half a byte per element), so it is kept
beside the catalog rather than in ``peak_flops``; Hopper, Ampere and CDNA 3 have none.
"""

_ACCELERATORS: tuple[Accelerator, ...] = (
    Accelerator(
        name="T4",
        peak_flops={"fp32": 8.1 * TERA, "fp16": 65 * TERA, "int8": 130 * TERA},
        memory_bandwidth=320 * GIGA,
        memory_capacity=16 * GIB,
        source=_T4_PDF,
        notes=(
            "Turing: no TF32, BF16 or FP8. 65 TFLOP/s is FP16 tensor-core (mixed precision); FP32 "
            "is 8.1. No sparsity. 40 SMs: the datasheet's 2,560 CUDA cores at 64 per Turing SM "
            "(whitepaper), and 40 x 64 x 2 FLOP x 1.59 GHz = 8.1 TFLOP/s; L2 4 MB (4,096 KB). "
            "Non-tensor FP16 runs at twice FP32 (Turing whitepaper): 16.2."
        ),
        aliases=("tesla t4", "nvidia t4"),
        torch_names=(r"\bt4\b",),
        sm_count=40,
        l2_bytes=4 * MIB,
        vector_peak_flops={"fp32": 8.1 * TERA, "fp16": 16.2 * TERA},
        whitepaper=_TURING_WP,
        host_link="PCIe 3.0 x16",
    ),
    Accelerator(
        name="V100 SXM2",
        peak_flops={"fp32": 15.7 * TERA, "fp16": 125 * TERA},
        memory_bandwidth=900 * GIGA,
        memory_capacity=32 * GIB,
        source=_V100_PDF,
        notes=(
            "Volta: FP16 tensor cores only (125 TFLOP/s 'deep learning'); 32 GB HBM2 model. No "
            "sparsity. Volta whitepaper, Table 1: 80 SMs, 6,144 KB L2; non-tensor FP16 twice "
            "FP32 (31.4). Host link PCIe Gen3 x16: the datasheet's 32 GB/s PCIe figure "
            "(both directions), the V100's host interface on SXM2 boards too (Volta whitepaper)."
        ),
        aliases=("v100", "tesla v100"),
        torch_names=(r"v100(?!.*(pcie|16\s*gb))",),
        sm_count=80,
        l2_bytes=6 * MIB,
        vector_peak_flops={"fp32": 15.7 * TERA, "fp16": 31.4 * TERA},
        whitepaper=_VOLTA_WP,
        host_link="PCIe 3.0 x16",
    ),
    Accelerator(
        name="A100 SXM4 40GB",
        peak_flops=_AMPERE_PEAKS,
        memory_bandwidth=1555 * GIGA,
        memory_capacity=40 * GIB,
        source=_A100_PDF,
        notes=_AMPERE_DENSE,
        aliases=("a100-40gb", "a100 40gb", "a100-sxm4-40gb"),
        torch_names=(r"a100(?!.*pcie).*40\s*gb",),
        sm_count=108,
        l2_bytes=40 * MIB,
        vector_peak_flops=_AMPERE_VECTOR,
        whitepaper=_AMPERE_WP,
        host_link="PCIe 4.0 x16",
    ),
    Accelerator(
        name="A100 SXM4 80GB",
        peak_flops=_AMPERE_PEAKS,
        memory_bandwidth=2039 * GIGA,
        memory_capacity=80 * GIB,
        source=_A100_PDF,
        notes=_AMPERE_DENSE,
        aliases=("a100", "a100-80gb", "a100 80gb", "a100-sxm4-80gb"),
        torch_names=(r"a100(?!.*40\s*gb)(?!.*pcie)",),
        sm_count=108,
        l2_bytes=40 * MIB,
        vector_peak_flops=_AMPERE_VECTOR,
        whitepaper=_AMPERE_WP,
        host_link="PCIe 4.0 x16",
    ),
    Accelerator(
        name="A800 SXM4 80GB",
        peak_flops=_AMPERE_PEAKS,
        memory_bandwidth=2039 * GIGA,
        memory_capacity=80 * GIB,
        source="https://www.nvidia.cn/data-center/a800/",
        notes="China-market A100 variant: same compute and HBM as the A100 SXM4 80GB, NVLink cut to 400 GB/s. "
        + _AMPERE_DENSE,
        aliases=("a800",),
        torch_names=(r"a800(?!.*pcie)",),
        sm_count=108,
        l2_bytes=40 * MIB,
        vector_peak_flops=_AMPERE_VECTOR,
        whitepaper=_AMPERE_WP,
        host_link="PCIe 4.0 x16",
    ),
    Accelerator(
        name="H100 SXM",
        peak_flops=_HOPPER_PEAKS,
        memory_bandwidth=3.35e12,
        memory_capacity=80 * GIB,
        source=_H100_PDF,
        notes=(
            "Dense figures: the datasheet quotes 2:4-sparse ones (TF32 989, BF16 1,979, FP8 "
            "3,958) with a footnote. Hopper whitepaper, Table 3 (H100 SXM5): 132 SMs, 50 MB L2, "
            "non-tensor FP16/BF16 133.8."
        ),
        aliases=("h100", "h100-sxm", "h100 sxm5"),
        torch_names=(r"(?<!g)h100(?!.*(pcie|nvl))",),
        sm_count=132,
        l2_bytes=50 * MIB,
        vector_peak_flops=_HOPPER_VECTOR,
        whitepaper=_HOPPER_WP,
        host_link="PCIe 5.0 x16",
    ),
    Accelerator(
        name="H800 SXM",
        peak_flops=_HOPPER_PEAKS,
        memory_bandwidth=3.35e12,
        memory_capacity=80 * GIB,
        source="https://www.nvidia.cn/data-center/h800/",
        notes=(
            "China-market H100 variant: same tensor throughput and HBM3 as the H100 SXM, NVLink "
            "cut to 400 GB/s. Dense figures. The same GH100 configuration as the H100 SXM5: "
            "132 SMs, 50 MB L2 (Hopper whitepaper)."
        ),
        aliases=("h800",),
        torch_names=(r"h800(?!.*(pcie|nvl))",),
        sm_count=132,
        l2_bytes=50 * MIB,
        vector_peak_flops=_HOPPER_VECTOR,
        whitepaper=_HOPPER_WP,
        host_link="PCIe 5.0 x16",
    ),
    Accelerator(
        name="H200 SXM",
        peak_flops=_HOPPER_PEAKS,
        memory_bandwidth=4.8e12,
        memory_capacity=141 * GIB,
        source=_H200_PDF,
        notes=(
            "Same Hopper compute as the H100 SXM with 141 GB of HBM3e at 4.8 TB/s. Dense figures "
            "(the datasheet's are 2:4-sparse). Its datasheet gives no SM count or L2 size; its "
            "identical peaks are those of the H100 SXM5's 132 SMs and 50 MB L2 (Hopper whitepaper)."
        ),
        aliases=("h200",),
        torch_names=(r"(?<!g)h200(?!.*(nvl|pcie))",),
        sm_count=132,
        l2_bytes=50 * MIB,
        vector_peak_flops=_HOPPER_VECTOR,
        whitepaper=_HOPPER_WP,
        host_link="PCIe 5.0 x16",
    ),
    Accelerator(
        name="H20",
        peak_flops={
            "fp16": 148 * TERA,
            "bf16": 148 * TERA,
            "fp8": 296 * TERA,
            "int8": 296 * TERA,
        },
        memory_bandwidth=4.0e12,
        memory_capacity=96 * GIB,
        source="https://arxiv.org/abs/2405.01814",
        notes=(
            "China-market Hopper with little compute and a lot of memory bandwidth. NVIDIA "
            "publishes no public datasheet; figures as tabulated in the attention-offloading "
            "(Lamina) paper, Chen et al. 2024, Table 1. Dense. No SM count, L2 size or "
            "non-tensor rate: NVIDIA publishes none, and third-party reports (78 SMs, 60 MB) are "
            "unverified, so these are None. No host link either: no datasheet names it."
        ),
        aliases=("nvidia h20",),
        torch_names=(r"\bh20\b",),
    ),
    Accelerator(
        name="L4",
        peak_flops={
            "fp32": 30.3 * TERA,
            "tf32": 60 * TERA,
            "fp16": 121 * TERA,
            "bf16": 121 * TERA,
            "fp8": 242.5 * TERA,
            "int8": 242.5 * TERA,
        },
        memory_bandwidth=300 * GIGA,
        memory_capacity=24 * GIB,
        source=_L4_PDF,
        notes=(
            "Ada, GDDR6. Dense figures (the datasheet's are 2:4-sparse: TF32 120, FP16 242, FP8 "
            "485). 58 SMs: the datasheet's 30.3 TFLOP/s FP32 = 58 SMs x 128 FP32 lanes x 2 FLOP x "
            "2.04 GHz boost (Ada whitepaper: 128 lanes per SM). L2 48 MB (AD104's, not on the "
            "datasheet; approximate). Ada's non-tensor FP16/BF16 run at the FP32 rate "
            "(whitepaper, Appendix A)."
        ),
        aliases=("nvidia l4",),
        torch_names=(r"\bl4\b",),
        sm_count=58,
        l2_bytes=48 * MIB,
        vector_peak_flops={
            "fp32": 30.3 * TERA,
            "fp16": 30.3 * TERA,
            "bf16": 30.3 * TERA,
        },
        whitepaper=_ADA_PDF,
        host_link="PCIe 4.0 x16",
    ),
    Accelerator(
        name="A10G",
        peak_flops={"fp32": 31.52 * TERA, "fp16": 70 * TERA, "bf16": 70 * TERA},
        memory_bandwidth=600 * GIGA,
        memory_capacity=24 * GIB,
        source="https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/",
        notes=(
            "AWS G5's variant of the A10; neither NVIDIA nor AWS publishes a datasheet. Figures "
            "as tabulated by Baseten (2023); tensor figures dense. Treat as approximate. 72 SMs: "
            "31.52 TFLOP/s FP32 = 72 SMs x 128 lanes x 2 FLOP x 1.71 GHz, as on the A10; L2 6 MB "
            "and non-tensor FP16/BF16 at the FP32 rate, as on every GA102 (GA102 whitepaper). "
            "Host link PCIe Gen4 x16, the A10's (NVIDIA A10 datasheet, "
            "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf)."
        ),
        aliases=("nvidia a10g",),
        torch_names=(r"a10g",),
        sm_count=72,
        l2_bytes=6 * MIB,
        vector_peak_flops={
            "fp32": 31.52 * TERA,
            "fp16": 31.52 * TERA,
            "bf16": 31.52 * TERA,
        },
        whitepaper=_GA102_WP,
        host_link="PCIe 4.0 x16",
    ),
    Accelerator(
        name="RTX 4090",
        peak_flops={
            "fp32": 82.6 * TERA,
            "tf32": 82.6 * TERA,
            "fp16": 165.2 * TERA,
            "bf16": 165.2 * TERA,
            "fp8": 330.3 * TERA,
            "int8": 660.6 * TERA,
        },
        memory_bandwidth=1008 * GIGA,
        memory_capacity=24 * GIB,
        source=_ADA_PDF,
        notes="GeForce Ada, GDDR6X. FP16/BF16 tensor with FP32 accumulate (what PyTorch uses) is 165.2 dense; "
        "with FP16 accumulate 330.3. FP8 with FP32 accumulate. Whitepaper Appendix A; dense figures. "
        "128 SMs, 73,728 KB L2; non-tensor FP16/BF16 82.6 (same appendix). Host link PCIe 4.0 x16 "
        "(NVIDIA's RTX 4090 specifications, https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/).",
        aliases=("4090", "geforce rtx 4090"),
        torch_names=(r"rtx 4090(?!\s*d\b)",),
        sm_count=128,
        l2_bytes=72 * MIB,
        vector_peak_flops={
            "fp32": 82.6 * TERA,
            "fp16": 82.6 * TERA,
            "bf16": 82.6 * TERA,
        },
        whitepaper=_ADA_PDF,
        host_link="PCIe 4.0 x16",
    ),
    Accelerator(
        name="B200 SXM",
        peak_flops=_B200_PEAKS,
        memory_bandwidth=8e12,
        memory_capacity=180 * GIB,
        source=_HGX_PAGE,
        notes=(
            "Blackwell, one GPU of an 8-GPU HGX B200 board (x86 host): NVIDIA publishes board "
            "totals, here divided by 8. Dense figures: the page's FP8 72, BF16 36, TF32 18 "
            "PFLOPS and INT8 72 POPS per board are 2:4-sparse, so 4.5, 2.25, 1.125 PFLOP/s and "
            "4.5 POPS dense per GPU; FP32 600 TFLOPS per board is 75 per GPU. FP4 (not a catalog "
            "dtype): 144 PFLOPS sparse per board, 9 PFLOP/s dense per GPU. HBM3e 1,440 GB and "
            "64 TB/s per board: 180 GB and 8 TB/s per GPU (DGX B200 datasheet). Host link PCIe "
            "5.0 x16 (MLPerf Inference v6.0 system descriptions). The datasheet gives no SM count "
            "or L2 size; a CUDA device query on a B200 (pytorch/ao PR 4002) reports 148 SMs, "
            "126.5 MB of L2, 178.35 GiB of memory (1 % under 180) and a 7,680-bit bus that makes "
            "the peak 7.67 TB/s rather than the datasheet's 8 (kept, as for every entry)."
        ),
        aliases=("b200", "hgx b200", "nvidia b200"),
        torch_names=(r"\bb200\b",),
        sm_count=148,
        l2_bytes=126.5 * MIB,
        vector_peak_flops={"fp32": 75 * TERA},
        whitepaper=_B200_QUERY,
        host_link="PCIe 5.0 x16",
    ),
    Accelerator(
        name="B300 SXM",
        peak_flops=_B300_PEAKS,
        memory_bandwidth=8e12,
        memory_capacity=288 * GIB,
        source=_HGX_PAGE,
        notes=(
            "Blackwell Ultra, one GPU of an 8-GPU HGX B300 board: board totals divided by 8. "
            "Dense figures: FP8 72, BF16 36, TF32 18 PFLOPS per board are 2:4-sparse, so 4.5, "
            "2.25, 1.125 PFLOP/s dense per GPU; FP32 600 TFLOPS per board is 75 per GPU. FP4 "
            "(not a catalog dtype): 144 PFLOPS sparse and 105 dense per board, 13.125 PFLOP/s dense "
            "per GPU (Blackwell Ultra raised dense FP4 by about half, so sparsity no longer doubles it). "
            "Blackwell Ultra cut INT8 to a few POPS per board, so no int8 figure is kept. 288 GB "
            "HBM3e (2.3 TB per board) at 8 TB/s (NVIDIA's Blackwell Ultra technical blog). Host "
            "link PCIe 6.0 x16 (same blog). No SM count or L2 size on the datasheet, so None."
        ),
        aliases=("b300", "hgx b300", "nvidia b300"),
        torch_names=(r"\bb300\b",),
        vector_peak_flops={"fp32": 75 * TERA},
        whitepaper=_BLACKWELL_ULTRA_BLOG,
        host_link="PCIe 6.0 x16",
    ),
    Accelerator(
        name="GB200 (per GPU)",
        peak_flops=_GB200_PEAKS,
        memory_bandwidth=8e12,
        memory_capacity=186 * GIB,
        source=_GB200_NVL72_PAGE,
        notes=(
            "One Blackwell GPU of a GB200 superchip (1 Grace CPU + 2 GPUs), as in the GB200 "
            "NVL72 rack: the rack's figures divided by 72. Dense figures: the page's FP8 720, "
            "BF16 360, TF32 180 PFLOPS and INT8 720 POPS are 2:4-sparse, so 5, 2.5, 1.25 PFLOP/s "
            "and 5 POPS dense per GPU. No FP32 figure is kept: transcriptions of NVIDIA's figures "
            "disagree (80 or 90 TFLOPS per GPU). These run at a higher "
            "power limit than the HGX B200's, hence the ~11 % higher peaks. FP4 (not a catalog "
            "dtype): 1,440 PFLOPS sparse per rack, 10 PFLOP/s dense per GPU. HBM3e 13.4 TB and "
            "576 TB/s per rack: 186 GB and 8 TB/s per GPU (the driver reports 186 GB, MLPerf v6.1 "
            "GB200-186GB systems). Host link NVLink-C2C to the superchip's Grace CPU (not PCIe); "
            "its LPDDR5X (480 GB per Grace, 512 GB/s) is a memory tier, see GB200_NVL72. No SM "
            "count or L2 size on the page, so None."
        ),
        aliases=("gb200", "nvidia gb200", "gb200 nvl72"),
        torch_names=(r"\bgb200\b",),
        whitepaper=_GB200_NVL72_PAGE,
        host_link="NVLink-C2C (Grace-Blackwell)",
    ),
    Accelerator(
        name="MI300X",
        peak_flops=_MI300_PEAKS,
        memory_bandwidth=5.3e12,
        memory_capacity=192 * GIB,
        source=_MI300X_PDF,
        notes=(
            "AMD CDNA 3, OAM module. Dense figures: the datasheet lists each matrix peak dense "
            "and 'with structured sparsity' (2x); kept: FP16/BF16 1,307.4, FP8 2,614.9, TF32 "
            "653.7, FP32 matrix 163.4 TFLOP/s, INT8 2,614.9 TOPS. No FP4 on CDNA 3. 192 GB HBM3 "
            "at 5.3 TB/s. 304 compute units (AMD's SM) with 4 MB of L2 per XCD (32 MB) and a "
            "256 MB Infinity Cache as last level (ROCm GPU specifications): l2_bytes is None since "
            "neither is one shared L2 like NVIDIA's. Host link PCIe 5.0 x16 (datasheet); seven "
            "Infinity Fabric links to peer GPUs."
        ),
        aliases=("amd mi300x", "instinct mi300x"),
        torch_names=(r"mi300x",),
        sm_count=304,
        vector_peak_flops={"fp32": 163.4 * TERA},
        whitepaper=_ROCM_SPECS,
        host_link="PCIe 5.0 x16",
    ),
    Accelerator(
        name="MI325X",
        peak_flops=_MI300_PEAKS,
        memory_bandwidth=6e12,
        memory_capacity=256 * GIB,
        source=_MI325X_PAGE,
        notes=(
            "AMD CDNA 3 with the MI300X's compute (same dense peaks: FP16/BF16 1,307.4, FP8 "
            "2,614.9 TFLOP/s; 2x with structured sparsity) and 256 GB of HBM3E at 6 TB/s. No FP4. "
            "304 compute units; 32 MB L2 and 256 MB Infinity Cache, as on the MI300X (ROCm GPU "
            "specifications); l2_bytes is None, as on the MI300X. Host link PCIe 5.0 x16."
        ),
        aliases=("amd mi325x", "instinct mi325x"),
        torch_names=(r"mi325x",),
        sm_count=304,
        vector_peak_flops={"fp32": 163.4 * TERA},
        whitepaper=_ROCM_SPECS,
        host_link="PCIe 5.0 x16",
    ),
)

_CX7_PDF = "https://www.nvidia.com/content/dam/en-zz/Solutions/networking/ethernet-adapters/connectx-7-datasheet-Final.pdf"
_RDMA_LATENCY = (
    "Latency: a typical small-message RDMA latency of a few microseconds, an order of magnitude, "
    "not a datasheet figure."
)

_LINKS: tuple[Link, ...] = (
    Link(
        "ConnectX-7 (400 Gb/s)",
        400e9 / 8,
        2e-6,
        _CX7_PDF,
        "One 400 Gb/s port, InfiniBand NDR or Ethernet. " + _RDMA_LATENCY,
        ("cx7", "connectx-7", "cx-7"),
    ),
    Link(
        "ConnectX-6 (200 Gb/s)",
        200e9 / 8,
        2e-6,
        "https://www.nvidia.com/content/dam/en-zz/Solutions/networking/infiniband-adapters/infiniband-connectx6-dx-datasheet.pdf",
        "One 200 Gb/s port, InfiniBand HDR or Ethernet. " + _RDMA_LATENCY,
        ("cx6", "connectx-6", "cx-6"),
    ),
    Link(
        "100 GbE NIC",
        100e9 / 8,
        10e-6,
        "https://standards.ieee.org/ieee/802.3/10422/",
        "IEEE 802.3 100 Gb/s Ethernet; TCP latency of ~10 us is an order of magnitude.",
        ("100gbe", "100g"),
    ),
    Link(
        "PCIe 3.0 x16",
        8e9 * 16 * (128 / 130) / 8,
        1e-6,
        "https://pcisig.com/specifications",
        "8 GT/s per lane x 16 lanes with 128b/130b encoding = 15.75 GB/s per direction before protocol "
        "overhead (a T4's and a V100's host link).",
        ("pcie3x16", "pcie3", "pcie 3.0"),
    ),
    Link(
        "PCIe 4.0 x16",
        16e9 * 16 * (128 / 130) / 8,
        1e-6,
        "https://pcisig.com/specifications",
        "16 GT/s per lane x 16 lanes with 128b/130b encoding = 31.5 GB/s per direction before protocol overhead.",
        ("pcie4x16", "pcie4", "pcie 4.0"),
    ),
    Link(
        "PCIe 5.0 x16",
        32e9 * 16 * (128 / 130) / 8,
        1e-6,
        "https://pcisig.com/specifications",
        "32 GT/s per lane x 16 lanes with 128b/130b encoding = 63.0 GB/s per direction before protocol overhead.",
        ("pcie5x16", "pcie5", "pcie 5.0"),
    ),
    Link(
        "PCIe 6.0 x16",
        64e9 * 16 / 8,
        1e-6,
        "https://pcisig.com/specifications",
        "64 GT/s per lane (PAM4) x 16 lanes = 128 GB/s per direction before protocol overhead "
        "(PCIe 6.0 has no line code; its FLIT framing and FEC are protocol overhead, a few %).",
        ("pcie6x16", "pcie6", "pcie 6.0"),
    ),
    Link(
        "NVLink 3 (A100)",
        300e9,
        1e-6,
        _A100_PDF,
        "600 GB/s total per A100 = 300 GB/s per direction.",
        ("nvlink3",),
    ),
    Link(
        "NVLink 4 (H100)",
        450e9,
        1e-6,
        _H100_PDF,
        "900 GB/s total per H100 = 450 GB/s per direction.",
        ("nvlink4",),
    ),
    Link(
        "NVLink 5 (B200, GB200 NVL72)",
        900e9,
        1e-6,
        _BLACKWELL_TUNING,
        "1.8 TB/s total per Blackwell GPU (18 links of 100 GB/s) = 900 GB/s per direction. "
        "Through NVLink Switch every GPU reaches every other at this rate: 8 GPUs in an HGX "
        "B200, all 72 in a GB200 NVL72 (130 TB/s in all, GB200 NVL72 page). Latency: order of "
        "magnitude, as for NVLink 4.",
        ("nvlink5", "nvlink 5", "nvlink switch", "nvl72"),
    ),
    Link(
        "NVLink-C2C (Grace-Blackwell)",
        450e9,
        1e-6,
        _GB200_NVL72_PAGE,
        "Grace CPU to Blackwell GPUs inside one GB200 superchip: 900 GB/s total, 450 GB/s per "
        "direction, shared by the superchip's two GPUs. Coherent: a GPU reads Grace's LPDDR5X "
        "directly, but that memory supplies at most 512 GB/s per Grace (both directions), so "
        "a GPU fetching while its twin does gets about half of each. Latency: order of magnitude.",
        ("nvlink-c2c", "c2c", "nvlink c2c"),
    ),
    Link(
        "CXL Type-3 expander (PCIe 5.0 x16)",
        32e9 * 16 * (128 / 130) / 8,
        1e-6,
        "https://computeexpresslink.org/cxl-specification/",
        "CXL 2.0 memory expander (Type 3) on a PCIe 5.0 x16 port: the PCIe 5.0 x16 signalling "
        "rate, 63.0 GB/s per direction before protocol overhead. Each access adds a few hundred "
        "ns over local DRAM (about a remote NUMA socket's latency: Li et al., Pond, ASPLOS'23; "
        "Sun et al., MICRO'23); a GPU reaches it through the host, so 1 us is the GPU's PCIe "
        "order of magnitude, as for the PCIe entries.",
        ("cxl", "cxl type-3", "cxl type 3", "cxl expander"),
    ),
)


@dataclass(frozen=True)
class NVLinkDomain:
    """A rack whose GPUs share one NVLink Switch domain, and the CPU memory beside them.

    Attributes
    ----------
    name : str
        Display name, e.g. ``"GB200 NVL72"``.
    accelerator : str
        Catalog name of one GPU (:func:`get_accelerator`).
    gpus, cpus : int
        GPUs and CPUs in the domain.
    cpu_memory_bytes : float
        Memory of one CPU in bytes (the datasheet's "GB" read as GiB, as for HBM).
    cpu_memory_bandwidth : float
        Peak bandwidth of one CPU's memory in bytes/s.
    gpu_link, cpu_link : str
        Catalog names of the GPU-to-GPU link and the CPU-to-GPU link (:func:`get_link`).
    source : str
        URL of the specification.
    notes : str
        Caveats.
    """

    name: str
    accelerator: str
    gpus: int
    cpus: int
    cpu_memory_bytes: float
    cpu_memory_bandwidth: float
    gpu_link: str
    cpu_link: str
    source: str
    notes: str = ""

    def __post_init__(self) -> None:
        _validate.positive_int("gpus", self.gpus)
        _validate.positive_int("cpus", self.cpus)
        _validate.positive("cpu_memory_bytes", self.cpu_memory_bytes)
        _validate.positive("cpu_memory_bandwidth", self.cpu_memory_bandwidth)

    @property
    def hbm_bytes(self) -> float:
        """HBM of all the domain's GPUs: ``gpus * memory_capacity``."""
        return self.gpus * get_accelerator(self.accelerator).memory_capacity

    @property
    def cpu_memory_total(self) -> float:
        """CPU memory of the whole domain: ``cpus * cpu_memory_bytes``."""
        return self.cpus * self.cpu_memory_bytes

    def cpu_memory_bandwidth_per_gpu(self) -> float:
        """Bytes/s one GPU gets from CPU memory when every GPU fetches at once.

        ``min(cpu_link.bandwidth, cpu_memory_bandwidth) * cpus / gpus``: each CPU's
        link (per direction) and its memory are shared by its ``gpus / cpus``
        GPUs, and the slower of the two limits. GB200 NVL72:
        ``min(450, 512) GB/s * 36 / 72 = 225 GB/s``.
        """
        link = get_link(self.cpu_link)
        return min(link.bandwidth, self.cpu_memory_bandwidth) * self.cpus / self.gpus


GB200_NVL72 = NVLinkDomain(
    name="GB200 NVL72",
    accelerator="GB200 (per GPU)",
    gpus=72,
    cpus=36,
    cpu_memory_bytes=480 * GIB,
    cpu_memory_bandwidth=512e9,
    gpu_link="NVLink 5 (B200, GB200 NVL72)",
    cpu_link="NVLink-C2C (Grace-Blackwell)",
    source=_GB200_NVL72_PAGE,
    notes=(
        "36 GB200 superchips (1 Grace + 2 Blackwell each) in one NVLink Switch domain. The page "
        "gives up to 13.4 TB of HBM3e at 576 TB/s and up to 17 TB of LPDDR5X at up to 18.4 TB/s "
        "per rack, and per superchip up to 480 GB of LPDDR5X at up to 512 GB/s: 36 x 480 GB = "
        "17.3 TB, the rack's 'up to 17 TB'. Chapter 9's tiers: the GPU's own HBM; the other GPUs' "
        "HBM over NVLink 5; Grace LPDDR5X over NVLink-C2C."
    ),
)
"""The GB200 NVL72 rack: 72 GPUs in one NVLink domain, with 36 Grace CPUs' LPDDR5X as a memory tier."""


def _index(items: tuple, kind: str) -> dict[str, object]:
    table: dict[str, object] = {}
    for item in items:
        for key in (item.name, *item.aliases):
            key = key.lower()
            if key in table:
                raise RuntimeError(f"duplicate {kind} name {key!r}")
            table[key] = item
    return table


_ACC_INDEX = _index(_ACCELERATORS, "accelerator")
_LINK_INDEX = _index(_LINKS, "link")


def accelerators() -> tuple[Accelerator, ...]:
    """All accelerators in the catalog, in catalog order."""
    return _ACCELERATORS


def links() -> tuple[Link, ...]:
    """All links in the catalog, in catalog order."""
    return _LINKS


def get_accelerator(name: str | Accelerator) -> Accelerator:
    """Look up an accelerator by name or alias (case-insensitive).

    An :class:`Accelerator` passes through unchanged, so every function that
    takes ``acc`` accepts either a name or an object (e.g. a measured one).
    """
    if isinstance(name, Accelerator):
        return name
    key = _validate.name("accelerator", name)
    if key not in _ACC_INDEX:
        raise KeyError(
            f"accelerator {name!r} is unknown; choose one of {[a.name for a in _ACCELERATORS]}"
        )
    return _ACC_INDEX[key]  # type: ignore[return-value]


def from_device_name(device_name: str) -> Accelerator | None:
    """The catalog entry for a device name as torch reports it, or ``None``.

    ``torch.cuda.get_device_name()`` spells names its own way (``"Tesla T4"``,
    ``"NVIDIA A100-SXM4-80GB"``, ``"NVIDIA H100 80GB HBM3"``); each catalog
    entry's :attr:`Accelerator.torch_names` patterns map them onto it. A CPU
    (a name starting with ``"cpu"``), an unknown GPU, or another part of
    the same family (a PCIe or NVL board, a GH200's GPU, a V100 with 16 GB,
    an RTX 4090 D) gives ``None``: a device is never mapped onto a
    different part's datasheet.

    Raises
    ------
    RuntimeError
        If two catalog entries claim the name (their patterns overlap).
    """
    key = _validate.name("device_name", device_name)
    if key.startswith("cpu"):
        return None
    found = [a for a in _ACCELERATORS if any(re.search(p, key) for p in a.torch_names)]
    if len(found) > 1:
        raise RuntimeError(
            f"device {device_name!r} matches several catalog entries: {[a.name for a in found]}"
        )
    return found[0] if found else None


def host_link(acc: str | Accelerator) -> Link:
    """The :class:`Link` between ``acc`` and its host's memory (:attr:`Accelerator.host_link`).

    Raises ``KeyError`` naming the accelerator if the catalog has none for it.

    >>> host_link("T4").name, host_link("H200").name
    ('PCIe 3.0 x16', 'PCIe 5.0 x16')
    """
    a = get_accelerator(acc)
    if a.host_link is None:
        raise KeyError(f"{a.name} has no host link in the catalog ({a.notes})")
    return get_link(a.host_link)


def get_link(name: str | Link) -> Link:
    """Look up a link by name or alias (case-insensitive); a :class:`Link` passes through."""
    if isinstance(name, Link):
        return name
    key = _validate.name("link", name)
    if key not in _LINK_INDEX:
        raise KeyError(
            f"link {name!r} is unknown; choose one of {[l.name for l in _LINKS]}"
        )
    return _LINK_INDEX[key]  # type: ignore[return-value]


def _tera(value: float | None) -> str:
    return "—" if value is None else f"{value / TERA:,.1f}"


def catalog_markdown() -> str:
    """The accelerator and link catalog as Markdown tables, with sources (the book's appendix).

    Three tables narrow enough for a book page: dense peak throughput per
    dtype; memory, 16-bit ridge point and source; links.
    """
    dtypes = list(DTYPE_BYTES)
    compute = [
        "| accelerator | " + " | ".join(dtypes) + " |",
        "|---" + "|---:" * len(dtypes) + "|",
    ]
    memory = [
        "| accelerator | memory GB/s | memory GiB | 16-bit ridge (FLOP/byte) | source |",
        "|---|---:|---:|---:|---|",
    ]
    for acc in _ACCELERATORS:
        compute.append(
            f"| {acc.name} | "
            + " | ".join(_tera(acc.peak_flops.get(d)) for d in dtypes)
            + " |"
        )
        half = acc.half_dtype
        ridge = (
            "—" if half is None else f"{acc.flops(half) / acc.memory_bandwidth:,.0f}"
        )
        memory.append(
            f"| {acc.name} | {acc.memory_bandwidth / GIGA:,.0f} "
            f"| {acc.memory_capacity / GIB:,.0f} | {ridge} | [datasheet]({acc.source}) |"
        )
    links = [
        "| link | GB/s per direction | latency µs | source |",
        "|---|---:|---:|---|",
    ]
    links += [
        f"| {l.name} | {l.bandwidth / GIGA:,.1f} | {l.latency * 1e6:,.0f} | [spec]({l.source}) |"
        for l in _LINKS
    ]
    return (
        "**Dense peak throughput, TFLOP/s** (integer rows: TOPS)\n\n"
        + "\n".join(compute)
        + "\n\n**Memory and ridge point**\n\n"
        + "\n".join(memory)
        + "\n\n**Links**\n\n"
        + "\n".join(links)
        + "\n"
    )


def catalog_notes_markdown() -> str:
    """What each catalog figure means (sparsity, accumulate precision, caveats), one bullet per entry."""
    items: tuple[Accelerator | Link, ...] = (*_ACCELERATORS, *_LINKS)
    return "\n".join(f"- **{item.name}:** {item.notes}" for item in items) + "\n"
