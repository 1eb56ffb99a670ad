"""Tests for the expert-load skew of an expert-parallel step (:func:`helpers.serving.expert_skew`).

An expert-parallel MoE step waits for its busiest GPU. The term reads the
router's balancedness from SGLang's simulation (calibration: that figure)
and, for decode with EPLB, from SGLang's decode case study (calibration:
that run's balancedness, not its throughput). It is judged on other
measurements of the same blog: the EPLB ablation's speedups and its two
prefill profiles (EPLB placement, perfect balance); the case study's
throughput against balancedness checks the form.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from helpers import papers, planner, serving, steps

DECODE = {"batch": 256, "dtype": "fp8", "ep": 72}
PREFILL = {"batch": 0, "chunk": 16_384, "prompts": 4, "dtype": "fp8", "ep": 32}
PLAN = {
    "n_gpus": 32,
    "input_len": 2000,
    "output_len": 500,
    "ttft_slo_s": 5.0,
    "tbt_slo_s": 0.1,
    "dtype": "fp8",
}


def step(context: int, routing: str | float, **kw: object) -> float:
    return serving.measured_step_time(
        "deepseek-v3", context, "H100", routing=routing, **kw
    )  # type: ignore[arg-type]


def test_balance_reads_the_simulated_points_and_holds_outside_them() -> None:
    for routing, points in papers.SGLANG_EPLB_BALANCEDNESS.items():
        for ep, b in points:
            assert serving.expert_balance(ep, routing) == pytest.approx(b)
        first, last = points[0], points[-1]
        # below the first simulated size, towards 1.0 at one GPU (linear in log GPUs)
        half = math.log(4) / math.log(first[0])
        assert serving.expert_balance(4, routing) == pytest.approx(
            1 + half * (first[1] - 1)
        )
        assert serving.expert_balance(1024, routing) == pytest.approx(last[1])
    # between two simulated sizes, linear in log(ep): 24 GPUs is 0.585 of the way from 16 to 32
    frac = math.log(24 / 16) / math.log(2)
    assert serving.expert_balance(24, "none") == pytest.approx(
        0.614 + frac * (0.551 - 0.614)
    )
    assert serving.expert_balance(72, "uniform") == 1.0
    assert serving.expert_balance(1, "eplb") == 1.0
    assert serving.expert_balance(72, 0.7) == 0.7


def test_balancer_is_better_than_none_at_every_simulated_size() -> None:
    for ep in (8, 16, 32, 64, 72):
        assert serving.expert_balance(ep, "eplb") > serving.expert_balance(ep, "none")


def test_skew_is_never_below_uniform_and_grows_without_a_balancer() -> None:
    pairs = 16_384 * 32 * 8
    assert serving.expert_skew(32, "uniform", assignments=pairs) == 1.0
    # a balancedness better than uniform routing's own spread adds nothing
    assert serving.expert_skew(8, 1.0, assignments=128 * 8) == 1.0
    for routing in ("eplb", "none", 0.5, 0.99):
        for ep in (2, 8, 32, 144):
            for decode in (False, True):
                assert (
                    serving.expert_skew(
                        ep, routing, assignments=ep * 1024, decode=decode
                    )
                    >= 1.0
                )
    assert (
        serving.expert_skew(32, "none", assignments=pairs)
        > serving.expert_skew(32, "eplb", assignments=pairs)
        > 1
    )


def test_decode_with_the_balancer_is_at_its_random_spread() -> None:
    """SGLang's decode case study: the balancer left the random spread and no more (within about 1 %)."""
    measured, floor = serving.eplb_decode_balance()
    b = np.array([row[1] for row in papers.SGLANG_EPLB_CASE_STUDY])
    assert measured == pytest.approx(1 / np.mean(1 / b))
    assert measured >= floor  # what lets decode under EPLB be priced as uniform routing
    assert serving.expert_skew(72, "eplb", assignments=256 * 72 * 8, decode=True) == 1.0
    # the simulation alone would have priced a skew
    assert serving.expert_skew(72, "eplb", assignments=256 * 72 * 8) > 1.1


@pytest.mark.parametrize("bad", ["balanced", "default", "EPLB", 0.0, 1.5, -0.2, True])
def test_bad_routing_names_the_parameter(bad: object) -> None:
    with pytest.raises(ValueError, match="routing"):
        serving.expert_balance(32, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="routing"):
        step(2000, bad, **DECODE)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^expert_routing"):
        planner.plan("deepseek-v3", "H100", expert_routing=bad, **PLAN)  # type: ignore[arg-type]


def test_a_skewed_router_lengthens_moe_steps_only() -> None:
    uniform = serving.measured_step_time("deepseek-v3", 0, "H100", **PREFILL)
    assert step(0, "uniform", **PREFILL) == uniform
    eplb, none = step(0, "eplb", **PREFILL), step(0, "none", **PREFILL)
    assert uniform < eplb < none
    # the step stretches by less than the skew: attention and the dense layers are not the busiest GPU's
    skew = serving.expert_skew(32, "eplb", assignments=16_384 * 32 * 8)
    assert 1 < eplb / uniform < skew
    # decode: the balancer measured at its random spread; without it, a skew
    assert (
        step(2000, "eplb", **DECODE)
        == step(2000, "uniform", **DECODE)
        < step(2000, "none", **DECODE)
    )
    dense = {"batch": 64, "tp": 8}
    assert serving.measured_step_time(
        "llama-3-70b", 4096, "H100", routing="none", **dense
    ) == (serving.measured_step_time("llama-3-70b", 4096, "H100", **dense))


def test_streams_stretch_the_all_to_alls_by_the_skew() -> None:
    kw = {"batch": 0, "chunk": 16_384, "prompts": 4, "ep": 32}
    flat = serving.moe_streams("deepseek-v3", 0, "H100", **kw)
    skewed = serving.moe_streams("deepseek-v3", 0, "H100", routing="eplb", **kw)
    skew = serving.expert_skew(32, "eplb", assignments=16_384 * 32 * 8)
    assert skewed.alltoall_s == pytest.approx(flat.alltoall_s * skew)
    assert skewed.compute_s > flat.compute_s


def test_spare_experts_take_kv_memory() -> None:
    for ep in (16, 32, 72):
        spares = serving.eplb_spares("deepseek-v3", ep)
        with_spares = serving.moe_rank_kv_bytes(
            "deepseek-v3", "H100", ep=ep, dtype="fp8", spares=spares
        )
        assert with_spares < serving.moe_rank_kv_bytes(
            "deepseek-v3", "H100", ep=ep, dtype="fp8"
        )


@pytest.mark.parametrize("model", ["deepseek-v3", "qwen3-235b-a22b", "gpt-oss-20b"])
@pytest.mark.parametrize("ep", [8, 16, 24, 32, 64, 72, 144])
def test_spares_fill_whole_gpus(model: str, ep: int) -> None:
    n = planner.resolve_model(model).moe.n_routed  # type: ignore[union-attr]
    r = serving.eplb_spares(model, ep)
    least = math.ceil(n * serving.EPLB_SPARE_SHARE)
    assert least <= r < least + ep
    assert (n + r) % ep == 0
    with pytest.raises(ValueError, match="model"):
        serving.eplb_spares("llama-3-8b", ep)


def test_case_study_throughput_falls_less_than_in_proportion() -> None:
    """The form, checked (not a pass band): in SGLang's decode case study and in the model alike,
    throughput falls less than in proportion to the balancedness, because part of the step is not
    the busiest GPU's. The case study's balancedness is over experts, taken here as over GPUs."""
    case = np.array(papers.SGLANG_EPLB_CASE_STUDY)
    b, t = case[:, 1], case[:, 2]
    measured = float(np.polyfit(np.log(b), np.log(t), 1)[0])
    grid = np.linspace(b.min(), b.max(), 5)
    model_t = [256 / step(1800, float(x), **DECODE) for x in grid]
    model = float(np.polyfit(np.log(grid), np.log(model_t), 1)[0])
    for slope in (measured, model):
        assert 0.5 < slope < 1.0


def test_eplb_ablation_is_explained_in_part() -> None:
    """The ablation's speedups beside the term: the model stays below both measured speedups.

    Prefill at EP32; decode at EP64, the largest size DeepSeek-V3's 256
    experts divide over without spares (the blog does not state the size).
    """
    prefill = step(0, "none", **PREFILL) / step(0, "eplb", **PREFILL)
    kw = {**DECODE, "ep": 64}
    decode = step(2000, "none", **kw) / step(2000, "eplb", **kw)
    assert 1 < prefill < papers.SGLANG_EPLB_SPEEDUP["prefill"]
    assert 1 < decode < papers.SGLANG_EPLB_SPEEDUP["decode"]


def test_sglangs_prefill_profiles_differ_as_the_eplb_curve_says() -> None:
    """SGLang's EPLB-placed prefill run against simulated perfect balance, 1.18x apart.

    The blog calls the first run "Default EPLB" and its 50,302 tokens/s per
    node is its end-to-end 4K run, set up with EPLB; the model's EPLB curve
    against uniform routing must give the same within 10 %. Read instead as
    no balancer at all, the model would give about 1.5.
    """
    profiles = papers.SGLANG_PREFILL_PROFILE_TOKENS_PER_S_PER_NODE
    measured = profiles["sglang_perfect_eplb"] / profiles["sglang"]
    uniform = step(0, "uniform", **PREFILL)
    assert step(0, "eplb", **PREFILL) / uniform == pytest.approx(measured, rel=0.1)
    assert step(0, "none", **PREFILL) / uniform > 1.4


def test_published_moe_rows_carry_their_router() -> None:
    for row in planner.load_deployments():
        routing = row["expert_routing"]
        moe = planner.resolve_model(row["model"]).moe is not None
        assert (routing in serving.EXPERT_ROUTING) if moe else routing == "", row[
            "case"
        ]
        if moe:
            assert "Routing (expert_routing)" in row["notes"], row["case"]
    profile = next(
        r
        for r in planner.load_deployments()
        if r["case"] == "deepseek-v3-profile-prefill"
    )
    assert profile["expert_routing"] == "uniform"


def test_the_router_moves_a_published_pool_the_right_way() -> None:
    """With its router's skew SGLang's prefill pool is rated lower than under uniform routing, and still above what was measured."""
    row = next(
        r for r in planner.load_deployments() if r["case"] == "sglang-96h100-prefill"
    )
    key = "prefill_input_tokens_per_s_per_gpu"
    skewed = planner.pool_throughputs(row)[key]
    flat = planner.pool_throughputs({**row, "expert_routing": "uniform"})[key]
    assert float(row["value"]) < skewed < flat


def test_routing_defaults_by_model() -> None:
    assert planner.default_routing("deepseek-v3") == "eplb"
    for name in ("qwen3-235b-a22b", "gpt-oss-120b", "llama-3-8b"):
        assert planner.default_routing(name) == "uniform"
    assert planner.default_routing("qwen3-235b-a22b", routing="none") == "none"


def test_a_skewed_router_never_raises_a_plans_goodput() -> None:
    goodput = {
        r: planner.plan(
            "deepseek-v3", "H100", expert_routing=r, **PLAN
        ).best.goodput_tokens_per_s_per_gpu
        for r in ("uniform", "eplb", "none")
    }
    assert goodput["uniform"] >= goodput["eplb"]
    assert goodput["uniform"] > goodput["none"]
    assert (
        planner.plan("deepseek-v3", "H100", **PLAN).best.goodput_tokens_per_s_per_gpu
        == goodput["eplb"]
    )


def test_flags_switch_the_balancer_on_only_when_the_plan_priced_it() -> None:
    with_eplb = planner.plan("deepseek-v3", "H100", **PLAN)
    assert "--enable-eplb" in with_eplb.engine_flags["vllm"]
    assert "--enable-eplb" in with_eplb.engine_flags["sglang"]
    assert "load_balancer" in with_eplb.engine_flags["dynamo"]
    for line in with_eplb.engine_flags["dynamo"].splitlines():
        ep = int(re.search(r"--tensor-parallel-size (\d+)", line).group(1))  # type: ignore[union-attr]
        slots = int(re.search(r"num_slots: (\d+)", line).group(1))  # type: ignore[union-attr]
        assert slots % ep == 0 and slots >= 256
    for routing in ("uniform", 0.8):
        flags = planner.plan(
            "deepseek-v3", "H100", expert_routing=routing, **PLAN
        ).engine_flags
        assert not any("eplb" in f or "load_balancer" in f for f in flags.values())
    other = planner.plan("qwen3-235b-a22b", "H100", **PLAN).engine_flags
    assert not any("eplb" in f for f in other.values())


def test_the_command_names_the_routing_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--model", "deepseek-v3", "--gpu", "H100", "--gpus", "32", "--isl", "2000",
            "--osl", "500", "--ttft", "5", "--tbt", "0.1", "--dtype", "fp8"]  # fmt: skip
    assert planner.main(argv=argv + ["--expert-routing", "sometimes"]) == 2
    assert "error: --expert-routing:" in capsys.readouterr().err
    assert planner.main(argv=argv + ["--expert-routing", "0.8"]) == 0
    assert "a balancedness of 0.8" in capsys.readouterr().out
    assert planner.main(argv=argv) == 0
    assert "DeepSeek's load balancer (EPLB)" in capsys.readouterr().out


def test_uniform_imbalance_statistic_is_what_the_skew_divides_by() -> None:
    pairs = 16_384 * 32 * 8
    by_hand = 1 / (0.800 * steps.imbalance(pairs, 32))
    assert serving.expert_skew(32, "eplb", assignments=pairs) == pytest.approx(by_hand)


def test_flags_ask_for_the_all_to_all_kernels_the_plan_priced() -> None:
    """Across servers the planner prices DeepEP: throughput kernels in prefill, low-latency ones in decode."""
    flags = planner.plan("deepseek-v3", "H100", **{**PLAN, "n_gpus": 64}).engine_flags
    best = planner.plan("deepseek-v3", "H100", **{**PLAN, "n_gpus": 64}).best
    assert best.mode == "disaggregated" and best.ep > 8
    for line in flags["vllm"].splitlines():
        want = (
            "deepep_high_throughput"
            if line.startswith("prefill")
            else "deepep_low_latency"
        )
        assert f"--all2all-backend {want}" in line
    for line in flags["sglang"].splitlines():
        want = "normal" if line.startswith("prefill") else "low_latency"
        assert f"--moe-a2a-backend deepep --deepep-mode {want}" in line
    assert "backend: WIDEEP" in flags["dynamo"]
    for routing in (
        "uniform",
        "none",
    ):  # the wide-EP backend across servers, balancer or not
        other = planner.plan(
            "deepseek-v3", "H100", expert_routing=routing, **{**PLAN, "n_gpus": 64}
        )
        assert other.best.ep > 8 and "backend: WIDEEP" in other.engine_flags["dynamo"]
    # within one server there is no DeepEP to ask for
    small = planner.plan("deepseek-v3", "H200", **{**PLAN, "n_gpus": 8}).engine_flags
    assert not any("deepep" in f for f in small.values())


def test_a_mixed_step_weights_each_phases_skew_by_its_tokens() -> None:
    """One prompt token added to a decode step moves its price a little, not to the prefill skew."""
    kw = {"batch": 256, "dtype": "fp8", "ep": 32}
    plain = step(2000, "eplb", **kw)
    one = step(2000, "eplb", chunk=1, **kw)
    assert plain < one < plain * 1.02
    # a step that is mostly prompt carries nearly the prefill skew
    mostly = step(2000, "eplb", batch=16, chunk=16_368, dtype="fp8", ep=32)
    flat = step(2000, "uniform", batch=16, chunk=16_368, dtype="fp8", ep=32)
    assert mostly / flat > 1.1


def test_skew_checks_gather_what_the_tests_above_compute() -> None:
    """One home for the appendix's checks: the same ratios the tests above compute step by step."""
    c = planner.skew_checks()
    assert (c.decode_balance, c.decode_uniform_balance) == serving.eplb_decode_balance()
    assert c.simulated_decode_balance == serving.expert_balance(72, "eplb")
    measured, model = c.ablation["prefill"]
    assert measured == papers.SGLANG_EPLB_SPEEDUP["prefill"]
    assert model == pytest.approx(
        step(0, "none", **PREFILL) / step(0, "eplb", **PREFILL)
    )
    measured, model = c.ablation["decode"]
    kw = {**DECODE, "ep": 64}
    assert model == pytest.approx(step(2000, "none", **kw) / step(2000, "eplb", **kw))
    uniform = step(0, "uniform", **PREFILL)
    assert c.profiles[1] == pytest.approx(step(0, "eplb", **PREFILL) / uniform)
    assert c.profiles[2] == pytest.approx(step(0, "none", **PREFILL) / uniform)
    bars = papers.SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER
    own, even = bars["sglang"], bars["sglang_perfect_eplb"]
    assert (
        c.breakdown_alltoall_ratio > 1
        and c.breakdown_idle_ms[0] > c.breakdown_idle_ms[1]
    )
    assert c.breakdown_gemm_longer == (own["moe"] > even["moe"])
    for slope in c.elasticity:
        assert 0.5 < slope < 1.0
