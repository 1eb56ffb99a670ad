"""The link catalog of :mod:`helpers.hardware`: one specification entry per link."""

from __future__ import annotations

from ._accelerators import _A100_PDF, _BLACKWELL_TUNING, _GB200_NVL72_PAGE, _H100_PDF
from ._devices import Link

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
        "https://docs.nvidia.com/networking/display/ConnectX6VPI/Introduction",
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
