"""Tests of :mod:`helpers.hardware`: the accelerator and link catalog.

Every expected figure below is typed in from the vendor document cited in the
test's docstring, not copied from the module, so a typo in the catalog fails.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from numpy.testing import assert_allclose

from helpers import hardware
from helpers.hardware import (
    DTYPE_BYTES,
    GIB,
    MIB,
    from_device_name,
    get_accelerator,
    get_link,
)

PUBLISHED = {  # name: (SMs, L2 MiB), from each architecture's whitepaper
    "T4": (40, 4),
    "V100 SXM2": (80, 6),
    "A100 SXM4 40GB": (108, 40),
    "A100 SXM4 80GB": (108, 40),
    "H100 SXM": (132, 50),
    "H200 SXM": (132, 50),
    "L4": (58, 48),
    "RTX 4090": (128, 72),
}


FP32_LANES_AND_BOOST = {  # FP32 lanes per SM and boost clock (Hz), whitepapers
    "T4": (64, 1.59e9),
    "V100 SXM2": (64, 1.53e9),
    "A100 SXM4 80GB": (64, 1.41e9),
    "H100 SXM": (128, 1.98e9),
    "L4": (128, 2.04e9),
    "RTX 4090": (128, 2.52e9),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_sm_count_and_l2_match_whitepapers(name):
    """SM count and L2 size are the whitepapers' (H100 SXM5: 132 SMs, 50 MB L2; A100: 108, 40 MB ...)."""
    acc = get_accelerator(name)
    sms, l2 = PUBLISHED[name]
    assert acc.sm_count == sms
    assert acc.l2_bytes == l2 * MIB
    assert acc.whitepaper.startswith("https://")


@pytest.mark.parametrize("name", sorted(FP32_LANES_AND_BOOST))
def test_sm_count_reproduces_fp32_peak(name):
    """SMs x FP32 lanes x 2 FLOP x boost clock gives the datasheet's FP32 peak within 1 %."""
    acc = get_accelerator(name)
    lanes, clock = FP32_LANES_AND_BOOST[name]
    assert_allclose(acc.sm_count * lanes * 2 * clock, acc.flops("fp32"), rtol=0.01)


def test_vector_roofs():
    """Non-tensor peaks: H100 fp16 133.8, A100 fp16 78 / bf16 39; fp32 equals the plain FP32 peak."""
    assert get_accelerator("H100 SXM").vector_flops("fp16") == pytest.approx(133.8e12)
    a100 = get_accelerator("A100")
    assert a100.vector_flops("fp16") == 78e12 and a100.vector_flops("bf16") == 39e12
    for acc in hardware.accelerators():
        for dtype, value in acc.vector_peak_flops.items():
            if dtype == "fp32":
                assert value == acc.flops("fp32")
            elif dtype in acc.peak_flops:
                assert value < acc.flops(dtype), (acc.name, dtype)
    with pytest.raises(KeyError, match="no vector"):
        get_accelerator("T4").vector_flops("bf16")


def test_bad_accelerator_fields_raise():
    """A negative SM count or L2 size is refused with the parameter named."""
    base = dict(
        name="x", peak_flops={"fp32": 1.0}, memory_bandwidth=1.0, memory_capacity=1.0
    )
    with pytest.raises(ValueError, match="sm_count"):
        hardware.Accelerator(**base, source="s", sm_count=0)
    with pytest.raises(ValueError, match="l2_bytes"):
        hardware.Accelerator(**base, source="s", l2_bytes=-1.0)


T4_DATASHEET = "NVIDIA T4 Tensor Core GPU datasheet (951643): FP32 8.1 TFLOPS, mixed FP16/FP32 65 TFLOPS, INT8 130 TOPS, 320+ GB/s"
A100_DATASHEET = "NVIDIA A100 datasheet (1758950-r4): TF32 156 (312*), BF16/FP16 312 (624*), FP32 19.5 TFLOPS; 1,555 GB/s (40GB), 2,039 GB/s (80GB SXM)"
H100_DATASHEET = "NVIDIA H100 datasheet: SXM BF16 1,979 TFLOPS* (*with sparsity), TF32 989*, FP8 3,958*, 3.35 TB/s"

REQUIRED_ACCELERATORS = [
    "T4",
    "V100 SXM2",
    "A100 SXM4 40GB",
    "A100 SXM4 80GB",
    "A800",
    "H100 SXM",
    "H800",
    "H200",
    "L4",
    "A10",
    "A10G",
    "RTX 4090",
    "B200",
    "B300",
    "GB200",
    "MI300X",
    "MI325X",
]
REQUIRED_LINKS = [
    "cx7",
    "cx6",
    "100gbe",
    "pcie4x16",
    "pcie5x16",
    "nvlink3",
    "nvlink4",
    "nvlink5",
    "nvlink-c2c",
    "cxl",
]


@pytest.mark.parametrize("name", REQUIRED_ACCELERATORS)
def test_catalog_has_required_accelerators(name):
    """Every accelerator the book discusses is in the catalog (by name or alias).

    The list is the book's: the Colab T4, the datacenter generations V100 -> H200,
    the China-market A800/H800 used by Mooncake (Qin et al., FAST'25), and the
    L4, A10G and RTX 4090 readers rent or own.
    """
    acc = get_accelerator(name)
    assert isinstance(acc, hardware.Accelerator)
    assert acc in hardware.accelerators()


@pytest.mark.parametrize("name", REQUIRED_LINKS)
def test_catalog_has_required_links(name):
    """Every link the book discusses is in the catalog (NICs, PCIe, NVLink)."""
    link = get_link(name)
    assert link in hardware.links()
    assert link.bandwidth > 0 and link.latency >= 0


def test_t4_matches_datasheet():
    """T4 figures equal the datasheet: fp16 (tensor-core) 65e12, fp32 8.1e12 FLOP/s, 320e9 B/s.

    Reference: NVIDIA T4 datasheet (nvidia_t4). The source article's "65 TFLOP/s"
    is the FP16 tensor-core figure; plain FP32 is 8.1.
    """
    t4 = get_accelerator("T4")
    assert_allclose(t4.flops("fp16"), 65e12, rtol=1e-12)
    assert_allclose(t4.flops("fp32"), 8.1e12, rtol=1e-12)
    assert_allclose(t4.flops("int8"), 130e12, rtol=1e-12)
    assert_allclose(t4.memory_bandwidth, 320e9, rtol=1e-12)
    # the driver's 15,360 MiB with ECC on, not the datasheet's "16 GB GDDR6"
    assert t4.memory_capacity == 15 * 2**30 == 16_106_127_360
    assert hardware.datasheet_memory("T4") == 16 * 2**30


def test_a100_matches_datasheet():
    """A100 SXM4: bf16 dense 312e12 FLOP/s; 40GB at 1,555 GB/s and 80GB at 2,039 GB/s.

    Reference: NVIDIA A100 datasheet (nvidia_a100), dense (unstarred) figures.
    """
    a40 = get_accelerator("A100 SXM4 40GB")
    a80 = get_accelerator("A100 SXM4 80GB")
    for acc in (a40, a80):
        assert_allclose(acc.flops("bf16"), 312e12, rtol=1e-12)
        assert_allclose(acc.flops("fp16"), 312e12, rtol=1e-12)
        assert_allclose(acc.flops("fp32"), 19.5e12, rtol=1e-12)
    assert_allclose(a40.memory_bandwidth, 1555e9, rtol=1e-12)
    assert_allclose(a80.memory_bandwidth, 2039e9, rtol=1e-12)
    # "40GB" and "80GB" HBM2(e) read as GiB: 42,949,672,960 and 85,899,345,920 bytes
    assert a40.memory_capacity == 40 * 2**30 == 42_949_672_960
    assert a80.memory_capacity == 80 * 2**30 == 85_899_345_920


def test_h100_sxm_matches_datasheet_dense():
    """H100 SXM bf16 dense = 989.4e12 FLOP/s (half the datasheet's sparse 1,979), 3.35e12 B/s.

    Reference: NVIDIA H100 datasheet (nvidia_h100); its BF16 1,979 TFLOPS carries the
    footnote "with sparsity", so the dense figure is half (989.4 TFLOP/s).
    """
    h100 = get_accelerator("H100 SXM")
    assert_allclose(h100.flops("bf16"), 989.4e12, rtol=1e-12)
    assert_allclose(h100.flops("bf16"), 1979e12 / 2, rtol=1e-3)
    assert_allclose(h100.flops("fp8"), 3958e12 / 2, rtol=1e-3)
    assert_allclose(h100.flops("tf32"), 989e12 / 2, rtol=1e-3)
    assert_allclose(h100.memory_bandwidth, 3.35e12, rtol=1e-12)


def test_h200_and_l4_match_datasheets():
    """H200: 4.8 TB/s and 141 GB with H100 compute; L4: fp16 dense 121 (242 sparse), 300 GB/s.

    References: NVIDIA H200 datasheet (nvidia_h200); NVIDIA L4 datasheet.
    """
    h200 = get_accelerator("H200")
    assert_allclose(h200.memory_bandwidth, 4.8e12, rtol=1e-12)
    assert (
        h200.memory_capacity == 141 * 2**30
    )  # "141GB HBM3e" read as GiB: 151,397,597,184 bytes
    assert_allclose(
        h200.flops("bf16"), get_accelerator("H100").flops("bf16"), rtol=1e-12
    )
    l4 = get_accelerator("L4")
    assert_allclose(l4.flops("fp16"), 242e12 / 2, rtol=1e-3)
    assert_allclose(l4.memory_bandwidth, 300e9, rtol=1e-12)


def test_v100_and_rtx4090_match_datasheets():
    """V100 SXM2: 125 TFLOP/s fp16 tensor, 15.7 fp32, 900 GB/s; RTX 4090: 82.6 fp32, 1,008 GB/s.

    References: NVIDIA V100 datasheet; NVIDIA Ada GPU architecture whitepaper (nvidia_ada), Appendix A.
    """
    v100 = get_accelerator("V100 SXM2")
    assert_allclose(v100.flops("fp16"), 125e12, rtol=1e-12)
    assert_allclose(v100.flops("fp32"), 15.7e12, rtol=1e-12)
    assert_allclose(v100.memory_bandwidth, 900e9, rtol=1e-12)
    rtx = get_accelerator("RTX 4090")
    assert_allclose(rtx.flops("fp32"), 82.6e12, rtol=1e-12)
    assert_allclose(rtx.memory_bandwidth, 1008e9, rtol=1e-12)


def test_china_market_variants_share_compute():
    """A800 = A100 80GB and H800 = H100 SXM in compute and HBM (only NVLink is cut).

    Reference: NVIDIA A800/H800 product pages; Mooncake (qin2025mooncake) uses both.
    """
    for variant, base in (("A800", "A100 SXM4 80GB"), ("H800", "H100 SXM")):
        v, b = get_accelerator(variant), get_accelerator(base)
        assert dict(v.peak_flops) == dict(b.peak_flops)
        assert v.memory_bandwidth == b.memory_bandwidth
        assert v is not b


def test_dense_not_sparse():
    """Peak figures are dense: A100 tf32 = 156e12 (not the sparse 312e12); bf16 = 2x tf32 on Ampere/Hopper.

    Reference: A100 datasheet (nvidia_a100), TF32 "156 TF | 312 TF*" where * = with sparsity.
    """
    a100 = get_accelerator("A100")
    assert_allclose(a100.flops("tf32"), 156e12, rtol=1e-12)
    assert a100.flops("tf32") != 312e12
    for name in (
        "A100 SXM4 40GB",
        "A100 SXM4 80GB",
        "A800",
        "H100 SXM",
        "H800",
        "H200",
    ):
        acc = get_accelerator(name)
        assert_allclose(acc.flops("bf16"), 2 * acc.flops("tf32"), rtol=2e-3)
        assert "dense" in acc.notes.lower() or "sparse" in acc.notes.lower()


def test_links_match_specs():
    """Link bandwidths per direction: CX7 400 Gb/s = 50e9 B/s, CX6 25e9, 100GbE 12.5e9,
    PCIe 4.0 x16 = 16 GT/s x 16 x 128/130 / 8 = 31.5e9, PCIe 5.0 twice that, NVLink3 300e9, NVLink4 450e9.

    References: NVIDIA ConnectX-7 datasheet (nvidia_cx7); ConnectX-6 datasheet; IEEE 802.3;
    PCI-SIG base specs 4.0/5.0 (128b/130b encoding); A100 (600 GB/s total) and H100 (900 GB/s total) datasheets.
    """
    expected = {
        "cx7": 50e9,
        "cx6": 25e9,
        "100gbe": 12.5e9,
        "pcie4x16": 16e9 * 16 * 128 / 130 / 8,
        "pcie5x16": 32e9 * 16 * 128 / 130 / 8,
        "nvlink3": 300e9,
        "nvlink4": 450e9,
    }
    for name, bandwidth in expected.items():
        assert_allclose(get_link(name).bandwidth, bandwidth, rtol=1e-12, err_msg=name)
    assert_allclose(get_link("pcie4x16").bandwidth, 31.5e9, rtol=2e-3)
    assert_allclose(get_link("ConnectX-7 (400 Gb/s)").bandwidth, 400e9 / 8, rtol=1e-12)


def test_alias_a100_is_80gb_and_h100_is_sxm():
    """Aliases: "A100" means the A100 SXM4 80GB and "H100" the H100 SXM (the book's defaults)."""
    assert get_accelerator("A100") is get_accelerator("A100 SXM4 80GB")
    assert get_accelerator("H100") is get_accelerator("H100 SXM")
    assert get_accelerator("a100-40gb") is get_accelerator("A100 SXM4 40GB")


@pytest.mark.parametrize(
    "spelling", ["h100", "H100", "  H100 sxm ", "h100 SXM", "H100 SXM5"]
)
def test_lookup_is_case_insensitive(spelling):
    """Look-ups ignore case and surrounding spaces (readers type names into calculators)."""
    assert get_accelerator(spelling) is get_accelerator("H100 SXM")


def test_link_lookup_is_case_insensitive():
    """Link look-ups ignore case too."""
    assert get_link("CX7") is get_link("cx7") is get_link("ConnectX-7")


def test_objects_pass_through():
    """An Accelerator or Link object passes through the look-up unchanged (measured devices)."""
    acc = get_accelerator("T4")
    assert get_accelerator(acc) is acc
    link = get_link("cx7")
    assert get_link(link) is link


def test_every_entry_has_https_source_and_notes():
    """Every accelerator and link cites an https source and explains its figures in notes."""
    for item in (*hardware.accelerators(), *hardware.links()):
        assert item.source.startswith("https://"), item.name
        assert len(item.notes) > 20, item.name


def test_names_and_aliases_are_unique():
    """No two catalog entries share a name or alias (look-up must be unambiguous)."""
    keys = [k.lower() for a in hardware.accelerators() for k in (a.name, *a.aliases)]
    assert len(keys) == len(set(keys))
    keys = [k.lower() for l in hardware.links() for k in (l.name, *l.aliases)]
    assert len(keys) == len(set(keys))


def test_catalog_is_immutable():
    """Catalog entries are frozen: a chapter cannot change a datasheet figure by accident."""
    t4 = get_accelerator("T4")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t4.memory_bandwidth = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        t4.peak_flops["fp16"] = 1.0  # type: ignore[index]


def test_unknown_accelerator_raises_keyerror_naming_parameter():
    """An unknown accelerator name raises KeyError whose message names the parameter and lists choices."""
    with pytest.raises(KeyError, match="accelerator"):
        get_accelerator("B300 Ultra Max")
    with pytest.raises(TypeError, match="accelerator"):
        get_accelerator(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="accelerator"):
        get_accelerator("   ")


def test_unknown_link_raises_keyerror_naming_parameter():
    """An unknown link raises KeyError naming the parameter ``link``."""
    with pytest.raises(KeyError, match="link"):
        get_link("carrier pigeon")
    with pytest.raises(TypeError, match="link"):
        get_link(None)  # type: ignore[arg-type]


def test_missing_dtype_raises_keyerror():
    """A dtype the device lacks (T4 has no bf16: Turing) raises KeyError naming the dtype;
    an unknown dtype raises KeyError too.

    Reference: T4 datasheet (nvidia_t4) lists FP32, FP16, INT8, INT4 only.
    """
    t4 = get_accelerator("T4")
    with pytest.raises(KeyError, match="dtype"):
        t4.flops("bf16")
    with pytest.raises(KeyError, match="dtype"):
        t4.flops("fp64x")
    with pytest.raises(TypeError, match="dtype"):
        t4.flops(16)  # type: ignore[arg-type]
    assert "bf16" not in t4.dtypes


def test_dtype_bytes():
    """Bytes per element: fp32/tf32 4, fp16/bf16 2, fp8/int8 1; unknown -> KeyError naming dtype."""
    assert [
        hardware.dtype_bytes(d) for d in ("fp32", "TF32", "fp16", "bf16", "fp8", "int8")
    ] == [4, 4, 2, 2, 1, 1]
    assert set(DTYPE_BYTES) == {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"}
    with pytest.raises(KeyError, match="dtype"):
        hardware.dtype_bytes("fp64")


def test_accelerator_validates_fields():
    """Building an Accelerator with a bad figure raises naming the field."""
    with pytest.raises(ValueError, match="memory_bandwidth"):
        hardware.Accelerator("x", {"fp16": 1e12}, -1.0, 1e9, "https://example.org")
    with pytest.raises(ValueError, match="peak_flops"):
        hardware.Accelerator("x", {}, 1e9, 1e9, "https://example.org")
    with pytest.raises(ValueError, match="peak_flops"):
        hardware.Accelerator(
            "x", {"fp16": float("nan")}, 1e9, 1e9, "https://example.org"
        )
    with pytest.raises(KeyError, match="dtype"):
        hardware.Accelerator("x", {"fp64": 1e12}, 1e9, 1e9, "https://example.org")
    with pytest.raises(ValueError, match="latency"):
        hardware.Link("x", 1e9, -1.0, "https://example.org")


def test_catalog_markdown_lists_every_accelerator_and_link():
    """``catalog_markdown()`` (the appendix table) has one row per accelerator and link, with its source."""
    text = hardware.catalog_markdown()
    for acc in hardware.accelerators():
        assert re.search(rf"^\| {re.escape(acc.name)} \|", text, re.M), acc.name
        assert acc.source in text
    for link in hardware.links():
        assert f"| {link.name} |" in text
    table_rows = [l for l in text.splitlines() if l.startswith("| ")]
    # four header rows, three rows per accelerator (throughput, memory, architecture), one per link
    assert len(table_rows) == 4 + 3 * len(hardware.accelerators()) + len(
        hardware.links()
    )
    # R4-9: a figure the vendor does not publish reads "not published", never "None"
    assert "None" not in text
    assert "| H20 | Hopper | not published | not published |" in text
    assert "None" not in hardware.catalog_notes_markdown()
    # the T4's fp16 peak (65) and fp16 ridge (65e12 / 320e9 = 203) appear in its rows
    t4_rows = [l for l in text.splitlines() if l.startswith("| T4 |")]
    assert any("| 65.0 |" in l for l in t4_rows)
    assert any("| 203 |" in l for l in t4_rows)


def test_catalog_notes_cover_every_entry():
    """Each accelerator and link has a bullet with its notes (dense vs sparse, caveats) in the appendix."""
    text = hardware.catalog_notes_markdown()
    for item in (*hardware.accelerators(), *hardware.links()):
        assert f"- **{item.name}:** {item.notes}" in text


def test_memory_capacities_are_gib():
    """Capacities are the datasheet's "GB" read as GiB (hardware.GIB = 2**30), except the ECC GDDR parts.

    Datasheets: V100 32, A100 40 / 80, A800 80, H100 80, H800 80, H200 141, H20 96, RTX 4090 24 GB.
    An 80 GB H100 reports 81,559 MiB = 79.65 GiB to the driver, within 0.5 % of 80 GiB
    (and 6.9 % above 80e9 bytes), which is why GiB is the closer reading. The T4, L4, A10
    and A10G (GDDR6, ECC on by default) store what nvidia-smi reports: 15,360, 23,034,
    23,028 and 23,028 MiB, 6 % below their datasheets' 16 and 24 GB read as GiB.
    """
    assert GIB == 1024**3
    expected = {
        "T4": 15,
        "V100 SXM2": 32,
        "A100 SXM4 40GB": 40,
        "A100 SXM4 80GB": 80,
        "A800 SXM4 80GB": 80,
        "H100 SXM": 80,
        "H800 SXM": 80,
        "H200 SXM": 141,
        "H20": 96,
        "L4": 23_034 / 1024,
        "A10": 23_028 / 1024,
        "A10G": 23_028 / 1024,
        "RTX 4090": 24,
        "B200 SXM": 180,
        "B300 SXM": 288,
        "GB200 (per GPU)": 186,
        "MI300X": 192,
        "MI325X": 256,
    }
    assert {
        a.name: a.memory_capacity / 2**30 for a in hardware.accelerators()
    } == expected
    assert abs(81_559 * 2**20 / get_accelerator("H100").memory_capacity - 1) < 0.005


def test_datasheet_memory_differs_only_for_ecc_gddr_parts():
    """``datasheet_memory`` is the datasheet's figure: above ``memory_capacity`` for T4, L4, A10, A10G only.

    The four ECC GDDR parts lose 6.25 % (T4: 15,360 of 16,384 MiB) or about 6.3 % (L4, A10G:
    about 22.5 of 24 GiB) to ECC; every HBM entry's datasheet figure is its capacity.
    """
    ecc = {"T4": 16, "L4": 24, "A10": 24, "A10G": 24}
    for acc in hardware.accelerators():
        sheet = hardware.datasheet_memory(acc)
        if acc.name in ecc:
            assert sheet == ecc[acc.name] * GIB
            assert 0.93 < acc.memory_capacity / sheet < 0.94 + 1e-12
        else:
            assert sheet == acc.memory_capacity
    assert hardware.datasheet_memory("tesla t4") == 16 * GIB  # aliases resolve
    with pytest.raises(KeyError, match="no-such-gpu"):
        hardware.datasheet_memory("no-such-gpu")


def test_half_dtype():
    """The 16-bit dtype each device computes fastest in: bf16 where it has a figure (Ampere and later), else fp16.

    T4 (Turing) and V100 (Volta) have fp16 tensor cores only; an Accelerator with neither has none.
    """
    assert get_accelerator("T4").half_dtype == "fp16"
    assert get_accelerator("V100").half_dtype == "fp16"
    for name in ("A100", "H100", "H20", "L4", "A10G", "RTX 4090"):
        assert get_accelerator(name).half_dtype == "bf16", name
    fp32_only = hardware.Accelerator(
        "x", {"fp32": 1e12}, 1e9, 1e9, "https://example.org"
    )
    assert fp32_only.half_dtype is None
    fp16_only = hardware.Accelerator(
        "y", {"fp16": 1e12, "fp32": 1e11}, 1e9, 1e9, "https://example.org"
    )
    assert fp16_only.half_dtype == "fp16"
    for acc in hardware.accelerators():
        assert acc.half_dtype in acc.dtypes


# --- torch device names ------------------------------------------------------------------

TORCH_NAMES = [
    # (torch.cuda.get_device_name(), catalog entry)
    ("Tesla T4", "T4"),
    ("Tesla V100-SXM2-32GB", "V100 SXM2"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
    ("NVIDIA A800-SXM4-80GB", "A800 SXM4 80GB"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H800", "H800 SXM"),
    ("NVIDIA H200", "H200 SXM"),
    ("NVIDIA H20", "H20"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA A10G", "A10G"),
    ("NVIDIA A10", "A10"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA B200", "B200 SXM"),
    ("NVIDIA B300 SXM6 AC", "B300 SXM"),
    ("NVIDIA GB200", "GB200 (per GPU)"),
    ("AMD Instinct MI300X", "MI300X"),
    ("AMD Instinct MI300X VF", "MI300X"),
    ("AMD Instinct MI325X", "MI325X"),
]
"""Device names as torch.cuda.get_device_name() spells them on each catalog part (Colab, AWS, GCP, vendors' docs)."""

NOT_IN_CATALOG = [
    "CPU: Intel(R) Xeon(R) Processor (2 threads)",
    "NVIDIA H100 PCIe",  # 756 dense bf16 TFLOP/s and 2 TB/s, not the SXM's 989.4 and 3.35 (H100 datasheet)
    "NVIDIA H100 NVL",
    "NVIDIA A100 80GB PCIe",  # 1,935 GB/s, not the SXM's 2,039 (A100 datasheet)
    "Tesla V100-PCIE-32GB",  # 14 / 112 TFLOP/s fp32 / tensor, not the SXM2's 15.7 / 125 (V100 datasheet)
    "NVIDIA H200 NVL",  # 1,671 sparse bf16 TFLOP/s against the SXM's 1,979 (H200 datasheet)
    "NVIDIA H800 PCIe",  # the H100 PCIe's ceilings, not the H800 SXM's
    "NVIDIA RTX A6000",
    "NVIDIA L40S",
    "Tesla P100-PCIE-16GB",
    "NVIDIA GeForce RTX 4080",
    "NVIDIA GB300",  # Blackwell Ultra with Grace: not in the catalog (its peaks differ from the B300's)
    "AMD Instinct MI250X",
    "AMD Instinct MI355X",
    # other parts of a catalogued family: never mapped onto that family's datasheet
    "NVIDIA GH200 480GB",  # Grace Hopper: 96 GB HBM3 at 4 TB/s, not the H200 SXM's 141 GB at 4.8
    "NVIDIA GH200 144G HBM3e",
    "NVIDIA A100-PCIE-40GB",  # a 250 W PCIe board, not the 400 W SXM4 module
    "NVIDIA A800 80GB PCIe",
    "Tesla V100-SXM2-16GB",  # 16 GB, not the catalogued 32 GB SXM2
    "NVIDIA GeForce RTX 4090 D",  # 114 SMs, not 128
]


@pytest.mark.parametrize("torch_name, catalog", TORCH_NAMES)
def test_from_device_name_maps_torch_names(torch_name, catalog):
    """Names as torch.cuda.get_device_name() spells them find their datasheet entry (helpers.hardware sources)."""
    assert from_device_name(torch_name) is get_accelerator(catalog)
    assert from_device_name(torch_name.upper()) is get_accelerator(
        catalog
    )  # case does not matter


@pytest.mark.parametrize("name", NOT_IN_CATALOG)
def test_from_device_name_none_without_a_datasheet(name):
    """A CPU, an unlisted GPU or a variant with other ceilings has no datasheet roofline: None, not a wrong one."""
    assert from_device_name(name) is None


def test_every_accelerator_is_reached_from_a_torch_name():
    """Each catalog entry is found from at least one real torch device name, so every lab recognises it."""
    reached = {from_device_name(torch_name).name for torch_name, _ in TORCH_NAMES}
    assert reached == {a.name for a in hardware.accelerators()}


def test_no_torch_name_matches_two_entries():
    """The torch_names patterns never overlap on a real name (h200 vs h20, a100 40GB vs 80GB, a10g vs a100)."""
    for torch_name in [n for n, _ in TORCH_NAMES] + NOT_IN_CATALOG:
        key = torch_name.lower()
        claims = [
            a.name
            for a in hardware.accelerators()
            if any(re.search(p, key) for p in a.torch_names)
        ]
        assert len(claims) <= 1, (torch_name, claims)


def test_from_device_name_reports_overlapping_patterns(monkeypatch):
    """Two entries claiming one name is a catalog bug: RuntimeError naming both, not a silent first match."""
    twin = hardware.Accelerator(
        "T4 twin", {"fp16": 1e12}, 1e9, 1e9, "https://example.org", torch_names=(r"t4",)
    )
    monkeypatch.setattr(hardware, "_ACCELERATORS", hardware._ACCELERATORS + (twin,))
    with pytest.raises(RuntimeError, match="T4 twin"):
        from_device_name("Tesla T4")


def test_from_device_name_rejects_bad_input():
    """A non-string or empty name raises with the parameter named."""
    with pytest.raises(TypeError, match="device_name"):
        from_device_name(4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="device_name"):
        from_device_name("  ")


# --- 2026 parts: Blackwell, Blackwell Ultra, CDNA 3 ----------------------------------------


def test_blackwell_matches_nvidia_pages_dense():
    """Per-GPU dense peaks from NVIDIA's board and rack totals.

    HGX B200 page (8 GPUs, sparse): FP8 72 PFLOPS, BF16 36, TF32 18, INT8 72 POPS, FP32 600 TFLOPS;
    per GPU dense = total / 8 / 2: FP8 4.5e15, BF16 2.25e15, TF32 1.125e15, INT8 4.5e15; FP32 75e12.
    DGX B200 datasheet: 1,440 GB and 64 TB/s of HBM3e for 8 GPUs -> 180 GB and 8 TB/s each.
    GB200 NVL72 page (72 GPUs, sparse): FP8 720 PFLOPS, BF16 360, TF32 180, HBM3e 13.4 TB at 576 TB/s
    -> per GPU dense FP8 5e15, BF16 2.5e15, TF32 1.25e15, 8e12 B/s.
    """
    b200 = get_accelerator("B200")
    assert_allclose(b200.flops("fp8"), 72e15 / 8 / 2, rtol=1e-12)
    assert_allclose(b200.flops("bf16"), 36e15 / 8 / 2, rtol=1e-12)
    assert_allclose(b200.flops("tf32"), 18e15 / 8 / 2, rtol=1e-12)
    assert_allclose(b200.flops("int8"), 72e15 / 8 / 2, rtol=1e-12)
    assert_allclose(b200.flops("fp32"), 600e12 / 8, rtol=1e-12)
    assert_allclose(b200.memory_bandwidth, 64e12 / 8, rtol=1e-12)
    assert b200.memory_capacity == 1440 // 8 * GIB
    gb200 = get_accelerator("GB200")
    assert_allclose(gb200.flops("fp8"), 720e15 / 72 / 2, rtol=1e-12)
    assert_allclose(gb200.flops("bf16"), 360e15 / 72 / 2, rtol=1e-12)
    assert_allclose(gb200.flops("tf32"), 180e15 / 72 / 2, rtol=1e-12)
    with pytest.raises(KeyError, match="fp32"):
        gb200.flops("fp32")  # not kept: published transcriptions disagree
    assert_allclose(gb200.memory_bandwidth, 576e12 / 72, rtol=1e-12)
    assert abs(72 * 186 / 13_400 - 1) < 0.001  # 186 GB per GPU is the rack's 13.4 TB
    b300 = get_accelerator("B300")
    assert_allclose(b300.flops("bf16"), 36e15 / 8 / 2, rtol=1e-12)
    assert b300.memory_capacity == 288 * GIB
    with pytest.raises(KeyError, match="int8"):
        b300.flops("int8")  # Blackwell Ultra's INT8 is cut; no figure kept


def test_fp4_peaks_beside_the_catalog():
    """FP4 dense: HGX B200 144 PFLOPS sparse / 8 / 2 = 9e15; HGX B300 105 PFLOPS dense / 8 = 13.125e15;
    GB200 NVL72 1,440 PFLOPS sparse / 72 / 2 = 10e15. Every key is a catalog name; fp4 is no catalog dtype."""
    fp4 = hardware.FP4_DENSE_FLOPS
    assert_allclose(fp4["B200 SXM"], 144e15 / 8 / 2, rtol=1e-12)
    assert_allclose(fp4["B300 SXM"], 105e15 / 8, rtol=1e-12)
    assert_allclose(fp4["GB200 (per GPU)"], 1440e15 / 72 / 2, rtol=1e-12)
    for name in fp4:
        assert get_accelerator(name).name == name
        assert fp4[name] > 2 * get_accelerator(name).flops("fp8") * 0.99
    with pytest.raises(KeyError, match="fp4"):
        hardware.dtype_bytes("fp4")


def test_mi300x_and_mi325x_match_amd_datasheets():
    """AMD MI300X datasheet: FP16/BF16 1,307.4 TFLOPS, FP8 2,614.9, TF32 653.7, FP32 matrix 163.4, INT8
    2,614.9 TOPS (each doubled 'with structured sparsity'); 192 GB HBM3 at 5.3 TB/s. MI325X: the same compute,
    256 GB HBM3E at 6 TB/s. Their 16-bit ridge points: 1,307.4 / 5.3 = 246.7 and 1,307.4 / 6 = 217.9 FLOP/byte.
    """
    mi300x, mi325x = get_accelerator("MI300X"), get_accelerator("MI325X")
    assert_allclose(mi300x.flops("bf16"), 1307.4e12, rtol=1e-12)
    assert_allclose(mi300x.flops("fp8"), 2614.9e12, rtol=1e-12)
    assert_allclose(mi300x.flops("tf32"), 653.7e12, rtol=1e-12)
    assert_allclose(mi300x.memory_bandwidth, 5.3e12, rtol=1e-12)
    assert mi300x.memory_capacity == 192 * GIB
    assert dict(mi325x.peak_flops) == dict(mi300x.peak_flops)
    assert_allclose(mi325x.memory_bandwidth, 6e12, rtol=1e-12)
    assert mi325x.memory_capacity == 256 * GIB
    assert_allclose(mi300x.flops("bf16") / mi300x.memory_bandwidth, 246.68, rtol=1e-4)
    assert_allclose(mi325x.flops("bf16") / mi325x.memory_bandwidth, 217.9, rtol=1e-4)
    assert mi300x.sms() == 304  # compute units


def test_new_parts_state_dense_and_where_figures_come_from():
    """Each 2026 entry says its figures are dense, and the per-GPU ones say they are a share of a board or rack."""
    for name in ("B200", "B300", "GB200", "MI300X", "MI325X"):
        assert "dense" in get_accelerator(name).notes.lower(), name
    for name in ("B200", "B300"):
        assert "divided by 8" in get_accelerator(name).notes
    assert "divided by 72" in get_accelerator("GB200").notes


def test_2026_links_match_specs():
    """NVLink 5: 1.8 TB/s per GPU = 900e9 per direction (Blackwell tuning guide); NVLink-C2C: 900 GB/s total
    = 450e9 per direction (GB200 page); a CXL Type-3 expander on PCIe 5.0 x16: 32 GT/s x 16 x 128/130 / 8 =
    63.0e9, the PCIe 5.0 x16 figure. NVLink 5 is twice NVLink 4 and about 14x PCIe 5.0 x16 (900 / 63.0 = 14.3).
    """
    assert_allclose(get_link("nvlink5").bandwidth, 1.8e12 / 2, rtol=1e-12)
    assert_allclose(get_link("nvlink-c2c").bandwidth, 900e9 / 2, rtol=1e-12)
    assert_allclose(get_link("cxl").bandwidth, 32e9 * 16 * 128 / 130 / 8, rtol=1e-12)
    assert get_link("cxl").bandwidth == get_link("pcie5").bandwidth
    assert_allclose(get_link("nvlink5").bandwidth / get_link("nvlink4").bandwidth, 2.0)
    assert_allclose(
        get_link("nvl72").bandwidth / get_link("pcie5").bandwidth, 14.29, rtol=1e-3
    )


def test_gb200_nvl72_domain():
    """GB200 NVL72 page: 72 GPUs, 36 Grace CPUs with up to 480 GB of LPDDR5X at up to 512 GB/s each.

    By hand: HBM 72 x 186 GiB = 13,392 GiB; CPU memory 36 x 480 GiB = 17,280 GiB (the page's "up to 17 TB");
    one GPU's share of CPU-memory bandwidth when all fetch: min(450, 512) GB/s x 36 / 72 = 225 GB/s.
    """
    d = hardware.GB200_NVL72
    assert d.gpus == 72 and d.cpus == 36
    assert d.hbm_bytes == 72 * 186 * GIB
    assert d.cpu_memory_total == 36 * 480 * GIB
    assert_allclose(d.cpu_memory_bandwidth_per_gpu(), 225e9, rtol=1e-12)
    assert get_link(d.gpu_link) is get_link("nvlink5")
    assert get_link(d.cpu_link) is get_link("nvlink-c2c")
    assert get_accelerator(d.accelerator) is get_accelerator("GB200")
    with pytest.raises(ValueError, match="gpus"):
        dataclasses.replace(d, gpus=0)
    with pytest.raises(ValueError, match="cpu_memory_bandwidth"):
        dataclasses.replace(d, cpu_memory_bandwidth=-1.0)


def test_every_gpu_without_sms_or_l2_says_why():
    """A GPU without an SM count or L2 size says why in its notes (the tables say "not published", nothing
    is guessed), and sms() raises.

    The H20 (no NVIDIA datasheet), the B300 and GB200 (none on their pages) and the MI300X/MI325X (two
    cache levels, neither one shared L2) say so. The B200's 148 SMs and 126.5 MB of L2 come from a CUDA
    device query on one (pytorch/ao PR 4002).
    """
    for acc in hardware.accelerators():
        if acc.sm_count is None or acc.l2_bytes is None:
            assert "not published" in acc.notes, acc.name
        if acc.sm_count is None:
            with pytest.raises(KeyError, match="no published SM count"):
                acc.sms()
    b200 = get_accelerator("B200")
    assert b200.sms() == 148 and b200.l2_bytes == 126.5 * 2**20


def test_pcie_3_link_bandwidth():
    """PCIe 3.0 x16: 8 GT/s x 16 lanes x 128/130 / 8 bits = 15.75 GB/s per direction (PCI-SIG)."""
    assert_allclose(get_link("pcie 3.0").bandwidth, 8e9 * 16 * 128 / 130 / 8)
    assert_allclose(get_link("PCIe 3.0 x16").bandwidth, 15.75e9, rtol=2e-3)


@pytest.mark.parametrize(
    "acc, link",
    [
        ("T4", "PCIe 3.0 x16"),  # T4 datasheet: x16 PCIe Gen3
        (
            "V100 SXM2",
            "PCIe 3.0 x16",
        ),  # V100 datasheet: PCIe 32 GB/s (Gen3 x16, both ways)
        ("A100 SXM4 40GB", "PCIe 4.0 x16"),  # A100 datasheet: PCIe Gen4 64 GB/s
        ("A100 SXM4 80GB", "PCIe 4.0 x16"),
        ("L4", "PCIe 4.0 x16"),  # L4 datasheet: PCIe Gen4 x16 64 GB/s
        ("H100 SXM", "PCIe 5.0 x16"),  # H100 datasheet: PCIe Gen5 128 GB/s
        ("H200 SXM", "PCIe 5.0 x16"),  # H200 datasheet: PCIe Gen5 128 GB/s
    ],
)
def test_host_link_follows_the_datasheet(acc, link):
    assert hardware.host_link(acc) is get_link(link)
    assert get_accelerator(acc).host_link == link


def test_every_host_link_is_a_catalog_link():
    """Each accelerator's host_link names a Link of the catalog (or is None and host_link() says why)."""
    for acc in hardware.accelerators():
        if acc.host_link is None:
            with pytest.raises(KeyError, match=acc.name):
                hardware.host_link(acc)
        else:
            assert hardware.host_link(acc).name == acc.host_link
