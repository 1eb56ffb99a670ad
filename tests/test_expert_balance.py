"""Tests for the expert-load skew of an expert-parallel step (:func:`helpers.serving.expert_skew`).

An expert-parallel MoE step waits for its busiest GPU. The term reads the
router's balancedness from SGLang's simulation (calibration: that figure
only) and is judged on three other measurements of the same blog: the decode
case study, throughput against balancedness step by step, the EPLB
ablation's speedups, and its two prefill profiles (default routing, perfect balance).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import papers, planner, serving, steps

DECODE = {"batch": 256, "dtype": "fp8", "ep": 72}


def test_balance_reads_the_simulated_points_and_holds_outside_them() -> None:
    for routing, points in papers.SGLANG_EPLB_BALANCEDNESS.items():
        for ep, b in points:
            assert serving.expert_balance(ep, routing) == pytest.approx(b)
        first, last = points[0], points[-1]
        assert serving.expert_balance(4, routing) == pytest.approx(first[1])
        assert serving.expert_balance(1024, routing) == pytest.approx(last[1])
    # between two simulated sizes, linear in log(ep): 24 GPUs is 0.585 of the way from 16 to 32
    frac = math.log(24 / 16) / math.log(2)
    assert serving.expert_balance(24, "default") == pytest.approx(
        0.614 + frac * (0.551 - 0.614)
    )
    assert serving.expert_balance(72, "uniform") == 1.0
    assert serving.expert_balance(1, "eplb") == 1.0
    assert serving.expert_balance(72, 0.7) == 0.7


def test_balancer_is_better_than_none_at_every_simulated_size() -> None:
    for ep in (8, 16, 32, 64, 72):
        assert serving.expert_balance(ep, "eplb") > serving.expert_balance(
            ep, "default"
        )


def test_skew_by_hand_and_never_below_uniform() -> None:
    pairs = 256 * 72 * 8
    by_hand = 1 / (0.81 * steps.imbalance(pairs, 72))
    assert serving.expert_skew(72, "eplb", assignments=pairs) == pytest.approx(by_hand)
    assert serving.expert_skew(72, "uniform", assignments=pairs) == 1.0
    # a balancedness better than uniform routing's own spread adds nothing
    assert serving.expert_skew(8, 1.0, assignments=128 * 8) == 1.0
    for routing in ("eplb", "default", 0.5, 0.99):
        for ep in (2, 8, 32, 144):
            assert serving.expert_skew(ep, routing, assignments=ep * 1024) >= 1.0


@pytest.mark.parametrize("bad", ["balanced", 0.0, 1.5, -0.2])
def test_bad_routing_names_the_parameter(bad: object) -> None:
    with pytest.raises(ValueError, match="routing"):
        serving.expert_balance(32, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="routing"):
        serving.measured_step_time("deepseek-v3", 2000, "H100", routing=bad, **DECODE)  # type: ignore[arg-type]


def test_a_skewed_router_lengthens_moe_steps_only() -> None:
    uniform = serving.measured_step_time("deepseek-v3", 2000, "H100", **DECODE)
    assert (
        serving.measured_step_time(
            "deepseek-v3", 2000, "H100", routing="uniform", **DECODE
        )
        == uniform
    )
    eplb = serving.measured_step_time(
        "deepseek-v3", 2000, "H100", routing="eplb", **DECODE
    )
    none = serving.measured_step_time(
        "deepseek-v3", 2000, "H100", routing="default", **DECODE
    )
    assert uniform < eplb < none
    # the step stretches by less than the skew: attention and the dense layers are not the busiest GPU's
    skew = serving.expert_skew(72, "eplb", assignments=256 * 72 * 8)
    assert 1 < eplb / uniform < skew
    # a dense model has no experts to wait for
    dense = {"batch": 64, "tp": 8}
    assert serving.measured_step_time(
        "llama-3-70b", 4096, "H100", routing="default", **dense
    ) == (serving.measured_step_time("llama-3-70b", 4096, "H100", **dense))


def test_streams_stretch_the_all_to_alls_by_the_skew() -> None:
    kw = {"batch": 256, "ep": 72}
    flat = serving.moe_streams("deepseek-v3", 2000, "H100", **kw)
    skewed = serving.moe_streams("deepseek-v3", 2000, "H100", routing="eplb", **kw)
    skew = serving.expert_skew(72, "eplb", assignments=256 * 72 * 8)
    assert skewed.alltoall_s == pytest.approx(flat.alltoall_s * skew)
    assert skewed.compute_s > flat.compute_s


def _elasticity(b: np.ndarray, t: np.ndarray) -> float:
    """Least-squares slope of log throughput on log balancedness."""
    return float(np.polyfit(np.log(b), np.log(t), 1)[0])


def test_case_study_validates_the_form() -> None:
    """Judged, not calibrated: SGLang's decode throughput moves with balancedness as the model says.

    Step by step, the measured throughput per GPU follows the balancedness
    with an elasticity near 0.85; the model, which stretches only the expert
    GEMMs and the all-to-alls, must give the same within 0.1.
    """
    case = np.array(papers.SGLANG_EPLB_CASE_STUDY)
    b, t = case[:, 1], case[:, 2]
    measured = _elasticity(b, t)
    assert 0.7 < measured < 1.0
    grid = np.linspace(b.min(), b.max(), 5)
    model = [
        256
        / serving.measured_step_time(
            "deepseek-v3", 1800, "H100", routing=float(x), **DECODE
        )
        for x in grid
    ]
    assert abs(_elasticity(grid, np.array(model)) - measured) < 0.1


def test_eplb_ablation_is_explained_in_part() -> None:
    """The ablation's speedups, set beside the term (judged): prefill within 15 %, decode under-explained.

    The model's speedup from the balancer is the ratio of its steps without
    and with it, at the blog's sizes (EP32 prefill of 16,384 tokens per GPU,
    EP72 decode at 256). Decode measured 2.54x and the term gives about
    1.5x: the rest is a cost of an unbalanced decode the term does not
    carry, and the test keeps the term from claiming more than was measured.
    """
    prefill = {
        r: serving.measured_step_time(
            "deepseek-v3",
            0,
            "H100",
            batch=0,
            chunk=16_384,
            prompts=4,
            dtype="fp8",
            ep=32,
            routing=r,
        )
        for r in ("eplb", "default")
    }
    decode = {
        r: serving.measured_step_time("deepseek-v3", 2000, "H100", routing=r, **DECODE)
        for r in ("eplb", "default")
    }
    prefill_speedup = prefill["default"] / prefill["eplb"]
    decode_speedup = decode["default"] / decode["eplb"]
    assert prefill_speedup == pytest.approx(
        papers.SGLANG_EPLB_SPEEDUP["prefill"], rel=0.15
    )
    assert 1 < decode_speedup < papers.SGLANG_EPLB_SPEEDUP["decode"]


def test_published_moe_rows_carry_their_router() -> None:
    rows = planner.load_deployments()
    for row in rows:
        routing = row["expert_routing"]
        moe = planner.resolve_model(row["model"]).moe is not None
        assert (routing in serving.EXPERT_ROUTING) if moe else routing == "", row[
            "case"
        ]
        if moe:
            assert "Routing (expert_routing)" in row["notes"], row["case"]


def test_the_router_moves_a_published_pool_the_right_way() -> None:
    """With its router's skew SGLang's decode pool is rated lower than under uniform routing, and still above what was measured."""
    row = next(
        r for r in planner.load_deployments() if r["case"] == "sglang-96h100-decode"
    )
    skewed = planner.pool_throughputs(row)["decode_output_tokens_per_s_per_gpu"]
    flat = planner.pool_throughputs({**row, "expert_routing": "uniform"})[
        "decode_output_tokens_per_s_per_gpu"
    ]
    assert float(row["value"]) < skewed < flat


def test_more_skew_never_raises_a_plans_goodput() -> None:
    kw = {
        "n_gpus": 32,
        "input_len": 2000,
        "output_len": 500,
        "ttft_slo_s": 5.0,
        "tbt_slo_s": 0.1,
        "dtype": "fp8",
    }
    goodput = [
        planner.plan(
            "deepseek-v3", "H100", expert_routing=r, **kw
        ).best.goodput_tokens_per_s_per_gpu
        for r in ("uniform", "eplb", "default")
    ]
    assert goodput[0] >= goodput[1] >= goodput[2]
    assert goodput[0] > goodput[2]


def test_the_command_names_the_routing_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--model", "deepseek-v3", "--gpu", "H100", "--gpus", "32", "--isl", "2000",
            "--osl", "500", "--ttft", "5", "--tbt", "0.1", "--dtype", "fp8"]  # fmt: skip
    assert planner.main(argv=argv + ["--expert-routing", "sometimes"]) == 2
    assert "error: --expert-routing:" in capsys.readouterr().err
    assert planner.main(argv=argv + ["--expert-routing", "0.8"]) == 0
    assert "'0.8'" in capsys.readouterr().out


def test_flags_switch_the_balancer_on_only_when_the_plan_priced_it() -> None:
    kw = {
        "n_gpus": 32,
        "input_len": 2000,
        "output_len": 500,
        "ttft_slo_s": 5.0,
        "tbt_slo_s": 0.1,
        "dtype": "fp8",
    }
    with_eplb = planner.plan("deepseek-v3", "H100", **kw).engine_flags
    uniform = planner.plan(
        "deepseek-v3", "H100", expert_routing="uniform", **kw
    ).engine_flags
    assert (
        "--enable-eplb" in with_eplb["vllm"] and "--enable-eplb" in with_eplb["sglang"]
    )
    assert "load_balancer" in with_eplb["dynamo"]
    assert not any("eplb" in f or "load_balancer" in f for f in uniform.values())


@pytest.mark.parametrize("ep", [8, 16, 24, 32, 64, 72, 144])
def test_redundant_experts_fill_whole_gpus(ep: int) -> None:
    m = planner.resolve_model("deepseek-v3")
    r = planner._eplb_redundant(m, ep)
    assert r >= planner.EPLB_REDUNDANT_EXPERTS
    assert (m.moe.n_routed + r) % ep == 0  # type: ignore[union-attr]
    assert r < planner.EPLB_REDUNDANT_EXPERTS + ep


def test_sglangs_prefill_profiles_differ_as_the_eplb_curve_says() -> None:
    """The third judged ratio: SGLang's EPLB-placed prefill run against simulated perfect balance, 1.18x apart.

    The blog calls the first run "Default EPLB" (its runs place experts with
    EPLB); the model's EPLB curve against uniform routing must give the same
    within 10 %. Read instead as no balancer at all, the model would give
    about 1.5, which the appendix also says.
    """
    profiles = papers.SGLANG_PREFILL_PROFILE_TOKENS_PER_S_PER_NODE
    measured = profiles["sglang_perfect_eplb"] / profiles["sglang"]
    kw = {"batch": 0, "chunk": 16_384, "prompts": 4, "dtype": "fp8", "ep": 32}
    uniform = serving.measured_step_time(
        "deepseek-v3", 0, "H100", routing="uniform", **kw
    )
    eplb = serving.measured_step_time("deepseek-v3", 0, "H100", routing="eplb", **kw)
    none = serving.measured_step_time("deepseek-v3", 0, "H100", routing="default", **kw)
    assert eplb / uniform == pytest.approx(measured, rel=0.1)
    assert none / uniform > 1.4
