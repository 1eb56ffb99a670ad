"""The engine kinds of helpers.validation: serving throughput, time to first token, attention kernels.

Each test reads the committed data (helpers/data/published/{serving,ttft,attention}.csv) and checks
the rules the validation is built on: every point says where it comes from and how it was run,
points are left out by rules on their setting only, one calibration point per GPU is picked by a key
that never reads the published value, the prediction is the engine's own, and no source the engine
is calibrated on validates it.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import engine, hardware, published, validation
from helpers.validation import _serving
from helpers.validation._engine import _compare

ENGINE_KINDS = ("serving", "ttft", "attention")
EFFICIENCY = Path(__file__).resolve().parents[1] / "helpers" / "data" / "efficiency"


@pytest.mark.parametrize("kind", ENGINE_KINDS)
def test_every_point_names_its_source_run_and_setting(kind):
    """Source pinned (a commit for repositories, a versioned page otherwise), the table and row,
    the engine's version, lengths, parallelism and precision."""
    points = published.load(kind)
    assert points
    for p in points:
        if p.source.startswith("https://github.com/"):
            assert re.search(r"/blob/[0-9a-f]{40}/", p.source), p.source
        else:
            assert re.search(r"/\d+\.\d+\.\d+/", p.source), p.source
        assert "row" in p.locator or "row" in p.locator.lower(), p.locator
        assert re.search(r"v?\d+\.\d+", p.software), p.software
        assert p.precision
        if kind == "attention":
            assert int(p.setting["seq_q"]) > 0 and int(p.setting["head_dim"]) > 0
        else:
            assert int(p.setting["input_len"]) > 0 and int(p.setting["output_len"]) > 0
            assert int(p.setting["tp"]) >= 1 and p.setting["engine"] in engine.PRESETS


def test_the_issue_asks_for_enough_points():
    """#35: at least 20 serving points over at least 2 GPUs, 10 TTFT points, 8 attention points (validating)."""
    for kind, points, gpus in (
        ("serving", 20, 2),
        ("ttft", 10, 2),
        ("attention", 8, 1),
    ):
        valid = validation.with_role(validation.compare(kind), "validation")
        assert len(valid) >= points, kind
        assert len({c.point.gpu for c in valid}) >= gpus, kind


def test_exclusions_follow_from_the_setting_alone():
    """A point's exclusion does not change when its published value does: the rules read the setting."""
    for p in published.load("serving")[::7]:
        moved = replace(p, value=p.value * 3.7)
        assert _serving._excluded(moved) == _serving._excluded(p)
    reasons = {
        c.reason
        for c in validation.compare("serving")
        if c.role == "excluded" and c.point.setting["model"].startswith("qwen3")
    }
    assert reasons == {
        "a mixture of experts whose expert-parallel size the source does not state"
    }


def test_one_calibration_point_per_gpu_picked_by_the_setting():
    """The calibration point of each GPU is the usable point with the smallest key
    (fewest GPUs, smallest model, shortest request): the published value never enters the choice."""
    for kind in ("serving", "ttft"):
        comparisons = validation.compare(kind)
        calib = validation.with_role(comparisons, "calibration")
        assert len({c.point.gpu for c in calib}) == len(calib)
        for c in calib:
            usable = [
                p
                for p in published.load(kind, gpu=c.point.gpu)
                if not _serving._excluded(p)
            ]
            assert c.point == min(usable, key=_serving._calibration_key)
            assert not any(
                v.point.gpu == c.point.gpu
                for v in validation.with_role(comparisons, "validation")
                if v.point == c.point
            )


def test_serving_prediction_is_the_engines_own():
    """Constant-free: engine.serve of the point's setting, total or per GPU as published."""
    (c,) = [
        c
        for c in validation.compare("serving")
        if c.point.gpu == "H200 SXM" and c.point.label == "Llama-3-8B, 1000/1000, fp8"
    ]
    r = engine.serve(
        "llama-3-8b",
        "H200 SXM",
        tp=1,
        weight_dtype="fp8",
        input_len=1000,
        output_len=1000,
        engine="trtllm",
    )
    assert c.constant_free == pytest.approx(r.output_tokens_per_s, rel=1e-12)
    per_gpu = [
        c
        for c in validation.compare("serving")
        if c.point.quantity == "output_throughput_per_gpu" and c.role == "validation"
    ][0]
    p = per_gpu.point
    r = _serving._serve(p, 0.0)
    assert per_gpu.constant_free == pytest.approx(
        r.output_tokens_per_s / int(p.setting["tp"]), rel=1e-12
    )


def test_ttft_prediction_and_the_constant_it_adds():
    """TTFT is the engine's median time to first token; the calibrated model adds the GPU's one
    constant to every iteration's CPU time, so a one-iteration prefill grows by about that much."""
    comparisons = validation.compare("ttft")
    (calib,) = [
        c
        for c in validation.with_role(comparisons, "calibration")
        if c.point.gpu == "A100 SXM4 80GB"
    ]
    constant = validation.calibrated_constant("ttft", "A100 SXM4 80GB")
    assert 0 < constant < 0.1
    assert calib.second_order == pytest.approx(calib.point.value, rel=1e-2)
    assert calib.second_order - calib.constant_free == pytest.approx(constant, rel=0.05)
    assert calib.constant_free == pytest.approx(
        _serving._serve(calib.point, 0.0).ttft_s, rel=1e-12
    )


def test_attention_rate_by_hand():
    """RTX 4090, fp16 165.2 TFLOP/s datasheet, Ada takes Ampere's FlashAttention-2 share (0.73);
    causal at 2,048 tokens in 128-token tiles keeps 2048 * 2049 / 2 of 16 * 17 / 2 * 128**2 pairs."""
    from helpers import efficiency

    acc = hardware.get_accelerator("RTX 4090")
    share = efficiency.attention_fractions(acc).prefill_compute
    full, causal = [
        [
            c
            for c in validation.compare("attention")
            if c.point.setting["causal"] == mask
            and c.point.setting["head_dim"] == "128"
        ][0]
        for mask in ("false", "true")
    ]
    assert full.constant_free == pytest.approx(acc.flops("fp16") * share, rel=1e-12)
    kept = (2048 * 2049 / 2) / (16 * 17 / 2 * 128**2)
    assert causal.constant_free == pytest.approx(
        acc.flops("fp16") * share * kept, rel=1e-12
    )
    assert _serving.attention_flops(causal.point) * 2 == _serving.attention_flops(
        full.point
    )


def test_summaries_carry_signed_medians():
    """The signed median is the median of the signed errors, so a model that leans one way shows it."""
    valid = validation.with_role(validation.compare("ttft"), "validation")
    (g,) = validation.summarize(valid, key=lambda c: "all")
    signed = sorted(c.constant_free_error for c in valid)
    n = len(signed)
    assert g.constant_free_signed == pytest.approx(
        (signed[(n - 1) // 2] + signed[n // 2]) / 2
    )
    assert not math.isnan(g.second_order_signed)


def _documents(text: str) -> set[str]:
    """The documents a source string names: GitHub repositories (owner/repo), arXiv ids, other pages (host/path)."""
    out = set()
    for url in re.findall(r"https?://[^\s,;)\"']+", text):
        m = re.match(r"https?://(?:www\.)?github\.com/([^/]+/[^/]+)", url)
        out.add(m[1].lower() if m else url.split("://")[1].rstrip("/").lower())
    out |= {f"arxiv:{a}" for a in re.findall(r"arXiv:\s*(\d{4}\.\d{4,5})", text)}
    return out


def test_no_source_the_engine_is_calibrated_on_validates_it():
    """The engine's calibration sources (helpers/data/efficiency/*.csv, column ``source``) and the
    sources of the points that validate the engine share no repository, paper or page."""
    calibration: set[str] = set()
    for path in sorted(EFFICIENCY.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                calibration |= _documents(row.get("source", ""))
    assert calibration, "no calibration sources found"
    validating: set[str] = set()
    for kind in ENGINE_KINDS:
        for p in published.load(kind):
            validating |= _documents(p.source + " " + p.notes)
    assert validating
    assert not (calibration & validating), calibration & validating
    # the flash-attn point's notes name no FlashAttention paper either
    for p in published.load("attention"):
        assert "2307.08691" not in p.notes and "2407.08608" not in p.notes


def test_a_costly_kind_runs_its_model_on_a_subset():
    """The engine kinds run through the same engine as the others (_compare): on a subset of one
    GPU the constant is refitted on that subset's own calibration point."""
    subset = [
        p
        for p in published.load("serving", gpu="H200 SXM")
        if p.setting["model"] == "llama-3-8b"
    ]
    out = _compare(subset, _serving.SERVING)
    assert [c.role for c in out].count("calibration") == 1
    assert all(c.role in ("calibration", "validation") for c in out)
