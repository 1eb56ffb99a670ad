"""The accelerator catalog of :mod:`helpers.hardware`: one datasheet entry per GPU."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._devices import GIB, GIGA, TERA, Accelerator

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

DATASHEET_MEMORY: Mapping[str, float] = MappingProxyType(
    {"T4": 16 * GIB, "L4": 24 * GIB, "A10": 24 * GIB, "A10G": 24 * GIB}
)
"""Datasheet memory in bytes ("GB" read as GiB) of the parts whose ``memory_capacity`` differs from it.

These are the GDDR parts with ECC on by default: ECC takes part of the
memory, so the driver reports less (T4 15,360 MiB of "16 GB"; L4 and A10G
about 22.5 GiB of "24 GB"), and ``memory_capacity`` stores what the driver
reports, since that is what a serving engine can allocate. For every other
entry (HBM parts) the datasheet's figure read as GiB is within about 1 % of
what the driver reports, and ``memory_capacity`` is that figure.
"""

_ACCELERATORS: tuple[Accelerator, ...] = (
    Accelerator(
        name="T4",
        generation="Turing",
        peak_flops={"fp32": 8.1 * TERA, "fp16": 65 * TERA, "int8": 130 * TERA},
        memory_bandwidth=320 * GIGA,
        memory_capacity=15_360 * MIB,
        source=_T4_PDF,
        notes=(
            "Memory: what the driver reports with ECC on (the default), 15,360 MiB (nvidia-smi; "
            "torch's total_memory on Colab is about 15.8e9 B), not the datasheet's 16 GB GDDR6 "
            "(DATASHEET_MEMORY). Turing: no TF32, BF16 or FP8. 65 TFLOP/s is FP16 tensor-core (mixed precision); FP32 "
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
        generation="Volta",
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
        generation="Ampere",
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
        generation="Ampere",
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
        generation="Ampere",
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
        generation="Hopper",
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
        generation="Hopper",
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
        generation="Hopper",
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
        generation="Hopper",
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
            "unverified, so the tables say not published. No host link either: no datasheet names it."
        ),
        aliases=("nvidia h20",),
        torch_names=(r"\bh20\b",),
    ),
    Accelerator(
        name="L4",
        generation="Ada",
        peak_flops={
            "fp32": 30.3 * TERA,
            "tf32": 60 * TERA,
            "fp16": 121 * TERA,
            "bf16": 121 * TERA,
            "fp8": 242.5 * TERA,
            "int8": 242.5 * TERA,
        },
        memory_bandwidth=300 * GIGA,
        memory_capacity=23_034 * MIB,
        source=_L4_PDF,
        notes=(
            "Memory: what the driver reports with ECC on (the default), 23,034 MiB (nvidia-smi, "
            "e.g. NVIDIA/TensorRT-LLM issue 2398), not the datasheet's 24 GB (DATASHEET_MEMORY). "
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
        name="A10",
        generation="Ampere",
        peak_flops={
            "fp32": 31.2 * TERA,
            "tf32": 62.5 * TERA,
            "fp16": 125 * TERA,
            "bf16": 125 * TERA,
            "int8": 250 * TERA,
        },
        memory_bandwidth=600 * GIGA,
        memory_capacity=23_028 * MIB,
        source="https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/a10-datasheet.pdf",
        notes=(
            "NVIDIA A10 datasheet: FP32 31.2, TF32 62.5, BF16 and FP16 125, INT8 250 TFLOP/s dense "
            "(the sparse figures are twice these), 24 GB GDDR6 at 600 GB/s, PCIe Gen4 x16. Memory: what "
            "the driver reports with ECC on (the default), 23,028 MiB (nvidia-smi), not the datasheet's "
            "24 GB (DATASHEET_MEMORY). GA102 with 72 SMs; L2 6 MB and non-tensor FP16/BF16 at the FP32 "
            "rate, as on every GA102 (GA102 whitepaper). The GPU of Marlin's W4A16 measurements."
        ),
        aliases=("nvidia a10",),
        torch_names=(r"\ba10\b(?!g)",),
        sm_count=72,
        l2_bytes=6 * MIB,
        vector_peak_flops={
            "fp32": 31.2 * TERA,
            "fp16": 31.2 * TERA,
            "bf16": 31.2 * TERA,
        },
        whitepaper=_GA102_WP,
        host_link="PCIe 4.0 x16",
    ),
    Accelerator(
        name="A10G",
        generation="Ampere",
        peak_flops={"fp32": 31.52 * TERA, "fp16": 70 * TERA, "bf16": 70 * TERA},
        memory_bandwidth=600 * GIGA,
        memory_capacity=23_028 * MIB,
        source="https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/",
        notes=(
            "Memory: what the driver reports with ECC on (the default), 23,028 MiB (nvidia-smi on "
            "an AWS G5), not the tabulated 24 GB GDDR6 (DATASHEET_MEMORY). AWS G5's variant of "
            "the A10; neither NVIDIA nor AWS publishes a datasheet. Figures "
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
        generation="Ada",
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
        generation="Blackwell",
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
        generation="Blackwell",
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
            "link PCIe 6.0 x16 (same blog). No SM count or L2 size on the datasheet, so the tables say not published."
        ),
        aliases=("b300", "hgx b300", "nvidia b300"),
        torch_names=(r"\bb300\b",),
        vector_peak_flops={"fp32": 75 * TERA},
        whitepaper=_BLACKWELL_ULTRA_BLOG,
        host_link="PCIe 6.0 x16",
    ),
    Accelerator(
        name="GB200 (per GPU)",
        generation="Blackwell",
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
            "count or L2 size on the page, so the tables say not published."
        ),
        aliases=("gb200", "nvidia gb200", "gb200 nvl72"),
        torch_names=(r"\bgb200\b",),
        whitepaper=_GB200_NVL72_PAGE,
        host_link="NVLink-C2C (Grace-Blackwell)",
    ),
    Accelerator(
        name="MI300X",
        generation="CDNA 3",
        peak_flops=_MI300_PEAKS,
        memory_bandwidth=5.3e12,
        memory_capacity=192 * GIB,
        source=_MI300X_PDF,
        notes=(
            "AMD CDNA 3, OAM module. Dense figures: the datasheet lists each matrix peak dense "
            "and 'with structured sparsity' (2x); kept: FP16/BF16 1,307.4, FP8 2,614.9, TF32 "
            "653.7, FP32 matrix 163.4 TFLOP/s, INT8 2,614.9 TOPS. No FP4 on CDNA 3. 192 GB HBM3 "
            "at 5.3 TB/s. 304 compute units (AMD's SM) with 4 MB of L2 per XCD (32 MB) and a "
            "256 MB Infinity Cache as last level (ROCm GPU specifications): the L2 column says not published since "
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
        generation="CDNA 3",
        peak_flops=_MI300_PEAKS,
        memory_bandwidth=6e12,
        memory_capacity=256 * GIB,
        source=_MI325X_PAGE,
        notes=(
            "AMD CDNA 3 with the MI300X's compute (same dense peaks: FP16/BF16 1,307.4, FP8 "
            "2,614.9 TFLOP/s; 2x with structured sparsity) and 256 GB of HBM3E at 6 TB/s. No FP4. "
            "304 compute units; 32 MB L2 and 256 MB Infinity Cache, as on the MI300X (ROCm GPU "
            "specifications); the L2 column says not published, as on the MI300X. Host link PCIe 5.0 x16."
        ),
        aliases=("amd mi325x", "instinct mi325x"),
        torch_names=(r"mi325x",),
        sm_count=304,
        vector_peak_flops={"fp32": 163.4 * TERA},
        whitepaper=_ROCM_SPECS,
        host_link="PCIe 5.0 x16",
    ),
)
