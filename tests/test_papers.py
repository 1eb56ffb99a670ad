"""Tests for :mod:`helpers.papers`: the cited figures, and the old names that still reach them with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import papers


def test_paper_constants_are_the_figures():
    """Cited values, as printed in Mooncake FAST'25 (Table 2; Fig. 9 and Fig. 10 labels)."""
    assert papers.MOONCAKE_TABLE2["conversation"]["cache_ratio"] == 0.40
    assert papers.MOONCAKE_TABLE2["toolagent"]["requests"] == 23_608
    assert papers.MOONCAKE_TABLE2["synthetic"]["requests"] == 3_993
    assert papers.MOONCAKE_TABLE2["conversation"]["requests"] == 12_031
    assert papers.MOONCAKE_FIG9_SHARE_AT_3M["conversation"] == 0.41
    assert papers.MOONCAKE_FIG9_SHARE_AT_3M["synthetic"] == 0.46
    # "a maximum increase of 136% in cache hit rate" (§5.3.2) is the largest Fig. 10 ratio
    assert max(papers.MOONCAKE_FIG10_GLOBAL_OVER_LOCAL.values()) == pytest.approx(2.36)
    # "a reduction of up to 48% in prefill computation time"
    assert min(papers.MOONCAKE_FIG10_PREFILL_TIME_RATIO.values()) == pytest.approx(
        1 - 0.48
    )


def test_old_homes_of_the_figures_warn_and_forward():
    """``serving.MOONCAKE_TBT_SLOS_S`` and ``kvcache.MOONCAKE_TRANSFER_ENGINE`` still work, warning;
    :data:`helpers.papers.MOVED` lists every old home, and each resolves to a name here."""
    from helpers import kvcache, serving

    with pytest.warns(DeprecationWarning, match="papers.MOONCAKE_TBT_SLOS_S"):
        assert serving.MOONCAKE_TBT_SLOS_S == (0.1, 0.2, 0.3)
    with pytest.warns(DeprecationWarning, match="MOONCAKE_FIG12_TRANSFER_ENGINE"):
        assert kvcache.MOONCAKE_TRANSFER_ENGINE is papers.MOONCAKE_FIG12_TRANSFER_ENGINE
    for new in papers.MOVED.values():
        assert hasattr(papers, new)


def test_transfer_engine_efficiencies():
    """87 GB/s of 4 x 200 Gb/s = 100 GB/s is 0.87; 190 of 8 x 400 Gb/s = 400 GB/s is 0.475."""
    effs = [t.efficiency for t in papers.MOONCAKE_FIG12_TRANSFER_ENGINE]
    assert effs == pytest.approx([0.87, 0.475])


def test_every_figure_is_used_by_a_chapter_or_a_test():
    """No cited figure sits unused (three did, and were deleted): each public name of
    helpers.papers appears in a chapter, a lab, the appendix or a test other than this file."""
    root = Path(__file__).resolve().parents[1]
    pages = [
        *root.glob("chapters/*.ipynb"),
        *root.glob("labs/*.ipynb"),
        *root.glob("appendix/*.ipynb"),
        *(p for p in root.glob("tests/test_*.py") if p.name != "test_papers.py"),
        *root.glob("helpers/*.py"),
    ]
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in pages if p.name != "papers.py"
    )
    unused = [name for name in papers.__all__ if name != "MOVED" and name not in text]
    assert unused == [], f"figures no chapter or test uses: {unused}"


def test_chapter_10_and_11_figures():
    """Mooncake Table 1: B_h2d = 128 GB/s. FlashMLA on an H800 SXM5: 3,000 GB/s memory-bound is
    90 % of 3.35 TB/s; 660 TFLOP/s is 76 % of the throttled 865 TFLOP/s; the throttled ridge over
    two, 865 / 3.35 / 2 = 129, is the deep dive's "h_q s_q >= 128"."""
    assert papers.MOONCAKE_TABLE1_H2D_BANDWIDTH == 128e9
    assert papers.FLASHMLA_H800_MEMORY_BOUND_BANDWIDTH / 3.35e12 == pytest.approx(
        0.896, abs=1e-3
    )
    ratio = (
        papers.FLASHMLA_H800_COMPUTE_BOUND_FLOPS
        / papers.FLASHMLA_H800_THROTTLED_PEAK_FLOPS
    )
    assert ratio == pytest.approx(0.763, abs=1e-3)
    assert papers.FLASHMLA_H800_THROTTLED_PEAK_FLOPS / 3.35e12 / 2 == pytest.approx(
        129, abs=0.5
    )


def test_mooncake_fig8_bars_agree_with_its_text() -> None:
    """Section 5.2.3: Mooncake cuts prefill GPU time by 36 %, 53 % and 64 % against vLLM, and
    vLLM with prefix caching takes 1.43x and 1.40x Mooncake's on the first two workloads."""
    fig = papers.MOONCAKE_FIG8_PREFILL_GPU_TIME
    for workload, cut in (
        ("conversation", 0.36),
        ("toolagent", 0.53),
        ("synthetic", 0.64),
    ):
        assert 1 - 1 / fig[workload]["vllm"] == pytest.approx(cut, abs=0.005)
    assert fig["conversation"]["vllm_prefix_caching"] == 1.43
    assert fig["toolagent"]["vllm_prefix_caching"] == 1.40
    for bars in fig.values():  # chunking costs prefill time in every workload
        assert bars["vllm_chunked_prefill"] > bars["vllm"]
