"""The deployment planner: hand-worked cases, properties, bad input (function and command line)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import inference, llm, papers, planner, queueing, serving, steps, tiers

SMALL_ARGV = [
    "--model",
    "llama-3-8b",
    "--gpu",
    "H100",
    "--gpus",
    "8",
    "--ttft",
    "2",
    "--tbt",
    "0.05",
]
"""The command's options for a small model on one server, without lengths or a trace."""


def test_small_model_fits_one_gpu_and_plans_tp1() -> None:
    p = planner.plan(
        "llama-3-8b",
        "H100",
        n_gpus=1,
        input_len=1024,
        output_len=256,
        ttft_slo_s=2,
        tbt_slo_s=0.05,
    )
    assert p.best.gpus == 1 and p.tp == 1 and p.ep == 1
    assert p.mode == "aggregated"  # one GPU cannot be split into two pools
    # hand check: output tokens/s per GPU never exceed the TBT-bound decode batch over one step
    b, step, _ = serving.measured_max_batch(
        "llama-3-8b", 1024 + 128, "H100", tbt_s=0.05, terms=serving.STEP_TERMS
    )
    assert p.goodput_tokens_per_s_per_gpu <= b / step + 1e-9


def test_tbt_bound_decode_pool_names_its_batch() -> None:
    rate, batch, step, why = planner._decode_pool(
        planner._Work(
            planner.resolve_model("llama-3-70b"),
            inference.get_accelerator("H100"),
            "bf16",
            2048,
            256,
            0,
            0.0,
            2.0,
            0.02,
            planner.get_link("cx7"),
        ),
        8,
        1,
    )
    assert why == f"TBT target at batch {batch}"
    assert step <= 0.02
    # one more sequence would miss the target (the step grows with the batch)
    assert (
        serving.measured_step_time(
            "llama-3-70b",
            2048 + 128,
            "H100",
            batch=batch + 1,
            tp=8,
            terms=serving.STEP_TERMS,
        )
        > 0.02
    )
    assert rate == pytest.approx(batch / step / 256)


def test_planner_prices_a_dense_step_as_the_sum_of_its_kernels() -> None:
    """The planner's dense step is the engine simulator's (helpers.steps), not the one-roofline bound."""
    opts = planner._opts(
        planner._Work(
            planner.resolve_model("llama-2-13b"),
            inference.get_accelerator("A100"),
            "bf16",
            512,
            64,
            0,
            0.0,
            0.4,
            0.04,
            planner.get_link("cx7"),
        ),
        1,
        1,
    )
    assert serving.KERNEL_SUM in opts["terms"]
    got = serving.measured_step_time(
        "llama-2-13b", 544, "A100", batch=32, chunk=256, prefix=128, **opts
    )
    want = steps.mixed_step(
        "llama-2-13b",
        "A100",
        decode_batch=32,
        decode_context=544,
        chunks=[(256, 128)],
    ).seconds
    assert got == pytest.approx(want)


def test_kernel_sum_charges_decodes_that_ride_in_a_chunk_step() -> None:
    """One roofline hides much of 32 decodes' time under a chunk's compute; separate kernels charge more of it.

    The decodes' extra time in a 224-token chunk's step (a 256-token budget)
    is over 1.2 times the roofline's under the kernel sum, and still below a
    decode-only step.
    """

    def extra(terms: tuple[str, ...]) -> tuple[float, float]:
        def t(batch: int, chunk: int) -> float:
            return serving.measured_step_time(
                "llama-2-13b",
                544,
                "A100",
                batch=batch,
                chunk=chunk,
                prefix=128 if chunk else 0,
                terms=terms,
            )

        return t(32, 224) - t(0, 224), t(32, 0)

    roof, _ = extra(serving.EFFICIENCY_TERMS)
    kernels, decode_only = extra(serving.STEP_TERMS)
    assert kernels > 1.2 * roof > 0
    assert kernels < decode_only
    with pytest.raises(ValueError, match="terms"):
        serving.measured_step_time("llama-2-13b", 0, "A100", batch=1, terms=["kernels"])


def test_chunking_cost_of_a_prompt() -> None:
    """One piece is the whole prompt; 512-token pieces cost more under the kernel sum than under one roofline."""
    kw = dict(chunk=512, tp=8)
    whole = serving.chunking_cost("llama-3-70b", 512, "A800", **kw)
    assert whole == pytest.approx(1.0)
    roof = serving.chunking_cost(
        "llama-3-70b", 15325, "A800", terms=serving.EFFICIENCY_TERMS, **kw
    )
    kernels = serving.chunking_cost("llama-3-70b", 15325, "A800", **kw)
    assert 1.0 <= roof < kernels < 1.5
    # hand check of the pieces: 29 of 512 tokens and one of 477, each after the ones before it
    pieces = sum(
        serving.measured_step_time(
            "llama-3-70b",
            0,
            "A800",
            batch=0,
            chunk=min(512, 15325 - p),
            prefix=p,
            tp=8,
            terms=serving.STEP_TERMS,
        )
        for p in range(0, 15325, 512)
    )
    whole_s = serving.measured_step_time(
        "llama-3-70b", 0, "A800", batch=0, chunk=15325, tp=8, terms=serving.STEP_TERMS
    )
    assert kernels == pytest.approx(pieces / whole_s)
    with pytest.raises(ValueError, match="chunk"):
        serving.chunking_cost("llama-3-70b", 100, "A800", chunk=0)


def test_cache_tier_that_pays_and_one_that_does_not() -> None:
    fast = tiers.Tier("NVLink peer HBM", 1e12, 450e9)
    slow = tiers.Tier("slow disk", 1e13, 0.2e9)
    v = tiers.tier_verdicts("llama-3-70b", 8192, [fast, slow], "H100", n_gpus=8)
    assert [c.verdict for c in v] == ["transfer", "recompute"]


def test_planner_tiers_from_a_trace_only_count_paying_tiers() -> None:
    p = planner.plan(
        "llama-3-8b",
        "H100",
        n_gpus=8,
        input_len=4096,
        output_len=256,
        ttft_slo_s=2,
        tbt_slo_s=0.05,
        trace="tiny",
    )
    assert p.tiers
    paying = sum(t.hit_share for t in p.tiers if t.verdict == "transfer")
    assert p.hit_tokens == min(4095, int(4096 * paying))


def test_hit_rate_lowers_prefill_and_never_lowers_goodput() -> None:
    kw = dict(n_gpus=16, input_len=8192, output_len=256, ttft_slo_s=3, tbt_slo_s=0.05)
    cold = planner.plan("llama-3-70b", "H100", **kw)
    warm = planner.plan("llama-3-70b", "H100", hit_rate=0.5, **kw)
    assert warm.goodput_tokens_per_s_per_gpu >= cold.goodput_tokens_per_s_per_gpu


def test_candidates_ranked_and_plan_has_flags_for_each_engine() -> None:
    p = planner.plan(
        "llama-3-70b",
        "H100",
        n_gpus=16,
        input_len=4096,
        output_len=512,
        ttft_slo_s=2,
        tbt_slo_s=0.05,
        gpu_hour_usd=2.5,
    )
    # no rate given: ranked by the requests/s served on the GPUs given
    rates = [c.rate for c in p.candidates]
    assert rates == sorted(rates, reverse=True)
    assert {c.mode for c in p.candidates} == {"aggregated", "disaggregated"}
    assert set(p.engine_flags) == set(planner.ENGINES)
    assert f"--tensor-parallel-size {p.tp}" in p.engine_flags["vllm"] or p.ep > 1
    tokens = p.goodput_tokens_per_s_per_gpu * p.best.gpus
    assert p.usd_per_million_tokens == pytest.approx(
        p.best.gpus * 2.5 / 3600 / tokens * 1e6
    )
    for c in p.candidates:
        assert c.tbt_p90_s <= 0.05 + 1e-9 and c.ttft_p90_s <= 2 + 1e-9


def test_moe_plans_expert_parallel_with_dp_attention() -> None:
    p = planner.plan(
        "deepseek-v3",
        "H800",
        n_gpus=32,
        input_len=2048,
        output_len=512,
        ttft_slo_s=2,
        tbt_slo_s=0.05,
        dtype="fp8",
    )
    assert p.ep >= 8 and p.best.dp_attention
    assert "--enable-dp-attention" in p.engine_flags["sglang"]


def test_p90_wait_quantile_against_the_mean() -> None:
    # the p90 wait exceeds the mean wait at high load and is 0 at low load
    assert queueing.md1_wait_quantile(1.0, 0.95, 0.9) > queueing.md1_mean_wait(
        1.0, 0.95
    )
    assert queueing.md1_wait_quantile(1.0, 0.05, 0.9) == 0.0


def test_pd_gap_table_rows_are_cumulative() -> None:
    rows = serving.pd_ratio_gap("llama-2-70b", 15325, 149, "A800", tbt_s=0.1, n_gpus=8)
    assert [r[0] for r in rows] == ["roofline", *serving.STEP_TERMS]
    # the kernel sum charges prefill more than one roofline does (chunk GEMMs
    # and attention no longer hide each other's time), so the last row moves
    # the split towards prefill
    assert rows[-1][1].prefill_s > rows[-2][1].prefill_s
    # achievable compute slows prefill only: the prefill seconds grow, decode's stay
    assert rows[1][1].prefill_s > rows[0][1].prefill_s
    assert rows[1][1].decode_s == pytest.approx(rows[0][1].decode_s)


@settings(max_examples=6, deadline=None)
@given(
    tbt=st.sampled_from([0.03, 0.05, 0.1]),
    looser=st.sampled_from([1.5, 2.0, 4.0]),
)
def test_looser_slo_never_lowers_goodput(tbt: float, looser: float) -> None:
    kw = dict(n_gpus=4, input_len=2048, output_len=256, ttft_slo_s=2.0)
    tight = planner.plan("llama-3-70b", "H100", tbt_slo_s=tbt, **kw)
    loose = planner.plan("llama-3-70b", "H100", tbt_slo_s=tbt * looser, **kw)
    # to the search's resolution: the aggregated rate is bisected to 2**-24 of
    # an interval that grows with the batch a looser target allows
    # the objective with no rate given: the requests/s the GPUs serve within both targets
    assert loose.best.rate >= tight.best.rate * (1 - 1e-5)
    assert loose.goodput_tokens_per_s_per_gpu * loose.best.gpus >= (
        tight.goodput_tokens_per_s_per_gpu * tight.best.gpus * (1 - 1e-5)
    )


@settings(max_examples=6, deadline=None)
@given(extra=st.integers(min_value=0, max_value=8))
def test_more_gpus_never_raise_cost_at_fixed_load(extra: int) -> None:
    kw = dict(
        input_len=2048,
        output_len=256,
        ttft_slo_s=2.0,
        tbt_slo_s=0.05,
        rate=2.0,
        gpu_hour_usd=2.0,
    )
    base = planner.plan("llama-3-70b", "H100", n_gpus=8, **kw)
    more = planner.plan("llama-3-70b", "H100", n_gpus=8 + extra, **kw)
    assert (
        more.usd_per_million_tokens is not None
        and base.usd_per_million_tokens is not None
    )
    assert more.usd_per_million_tokens <= base.usd_per_million_tokens * (1 + 1e-9)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"n_gpus": 0}, "n_gpus"),
        ({"input_len": -1}, "input_len"),
        ({"ttft_slo_s": 0}, "ttft_slo_s"),
        ({"tbt_slo_s": math.nan}, "tbt_slo_s"),
        ({"rate": -2.0}, "rate"),
        ({"gpu_hour_usd": 0}, "gpu_hour_usd"),
        ({"engine": "tgi"}, "engine"),
        ({"hit_rate": 1.0}, "hit_rate"),
    ],
)
def test_bad_input_names_the_parameter(kwargs: dict, word: str) -> None:
    args = dict(n_gpus=8, input_len=1024, output_len=128, ttft_slo_s=2, tbt_slo_s=0.05)
    args.update(kwargs)
    with pytest.raises(ValueError, match=word):
        planner.plan("llama-3-70b", "H100", **args)


def test_unknown_model_and_gpu_raise_key_error() -> None:
    with pytest.raises(KeyError, match="model"):
        planner.plan(
            "gpt-9",
            "H100",
            n_gpus=8,
            input_len=1,
            output_len=1,
            ttft_slo_s=1,
            tbt_slo_s=1,
        )
    with pytest.raises(KeyError, match="accelerator"):
        planner.plan(
            "llama-3-70b",
            "X1",
            n_gpus=8,
            input_len=1,
            output_len=1,
            ttft_slo_s=1,
            tbt_slo_s=1,
        )


def test_weights_that_do_not_fit_say_so() -> None:
    with pytest.raises(ValueError, match="n_gpus"):
        planner.plan(
            "llama-3-70b",
            "L4",
            n_gpus=1,
            input_len=512,
            output_len=64,
            ttft_slo_s=2,
            tbt_slo_s=0.1,
        )


BASE = [
    "--model",
    "llama-3-70b",
    "--gpu",
    "H100",
    "--gpus",
    "16",
    "--isl",
    "4096",
    "--osl",
    "512",
    "--ttft",
    "2",
    "--tbt",
    "0.05",
]


def test_cli_prints_plan_runner_up_and_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert planner.main(argv=[*BASE, "--price", "2.5"]) == 0
    out = capsys.readouterr().out
    assert (
        "layout" in out and "runner-up" in out and "[vllm]" in out and "[sglang]" in out
    )
    assert "per million output tokens" in out


def test_cli_accepts_aliases(capsys: pytest.CaptureFixture[str]) -> None:
    args = [*BASE]
    args[1], args[3] = "Llama-3.3-70B", "h100 sxm5"
    assert planner.main(argv=args) == 0


@pytest.mark.parametrize(
    ("change", "option"),
    [
        (("--gpu", "H999"), "--gpu"),
        (("--model", "gpt-9"), "--model"),
        (("--gpus", "0"), "--gpus"),
        (("--tbt", "-1"), "--tbt"),
    ],
)
def test_cli_bad_input_names_the_option(
    change: tuple[str, str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*BASE]
    args[args.index(change[0]) + 1] = change[1]
    assert planner.main(argv=args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option}:") and "Traceback" not in err
    if option == "--gpu":
        assert "H100 SXM" in err  # the catalog is listed


@pytest.mark.parametrize(
    ("extra", "option", "says"),
    [
        (["--hit-rate", "1.5"], "--hit-rate", "below 1"),  # not --rate
        (["--trace", "toolagent"], "--trace", "tiny"),  # the known names listed
        (["--no-kv-tiers"], "--trace", "--no-kv-tiers"),
        (["--isl", "10000000"], "--isl", "KV cache"),  # does not fit, not the targets
    ],
)
def test_cli_bad_input_names_the_real_cause(
    extra: list[str], option: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*BASE]
    if "--isl" in extra:
        args[args.index("--isl") + 1] = extra[1]
        args[args.index("--ttft") + 1] = "100000"
        args[args.index("--tbt") + 1] = "100"
        extra = []
    assert planner.main(argv=[*args, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option}:") and says in err, err
    assert f"{option}: {option.lstrip('-').replace('-', '_')}:" not in err  # no echo


def test_cli_reads_a_malformed_trace_as_a_trace_error(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert planner.main(argv=[*BASE, "--trace", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --trace:") and "line 1" in err
    # a field named like an option's parameter (input_length) is still the trace's fault
    bad.write_text('{"timestamp": 0, "output_length": 5, "hash_ids": []}\n')
    assert planner.main(argv=[*BASE, "--trace", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --trace:") and "input_length" in err, err


def test_rates_are_shown_to_three_significant_figures() -> None:
    assert planner._sig(37.0) == "37.0"
    assert planner._sig(7.1) == "7.10"
    assert planner._sig(1234.4) == "1,234"


def test_published_comparison_has_every_case_with_a_source() -> None:
    rows = planner.published_comparison()
    assert {r["case"].split("-")[0] for r in rows} >= {
        "mooncake",
        "distserve",
        "deepseek",
        "sglang",
    }
    for r in rows:
        assert r["source"].startswith("https://")
        # a plan that keeps the phases together has no P:D ratio to compare
        assert math.isfinite(r["predicted"]) or (
            r["quantity"] == "pd_ratio" and r["planned_mode"] == "aggregated"
        )


def test_engine_goodput_meets_the_targets_at_the_rate_it_returns() -> None:
    from helpers import engine

    kw = dict(input_len=512, output_len=64, requests=100, rate_max=64.0)
    rate = planner.engine_goodput(
        "llama-3-8b", "H100", ttft_slo_s=0.3, tbt_slo_s=0.02, **kw
    )
    assert rate > 0
    r = engine.serve(
        "llama-3-8b", "H100", input_len=512, output_len=64, rate=rate, requests=100
    )
    assert r.ttft_p90_s <= 0.3 and r.tpot_p90_s <= 0.02
    looser = planner.engine_goodput(
        "llama-3-8b", "H100", ttft_slo_s=0.6, tbt_slo_s=0.04, **kw
    )
    assert looser >= rate


def test_cli_names_the_targets_when_nothing_meets_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [*BASE]
    args[args.index("--ttft") + 1] = "0.01"
    assert planner.main(argv=args) == 2
    assert capsys.readouterr().err.startswith("error: --ttft/--tbt:")


def test_published_pools_are_priced_at_the_sources_operating_point() -> None:
    """SGLang's decode row: 256 sequences per GPU at KV length 2,000, as its blog states, not the planner's cap."""
    row = next(
        r for r in planner.load_deployments() if r["case"] == "sglang-96h100-decode"
    )
    assert row["decode_batch_per_gpu"] == "256" and row["decode_kv_len"] == "2000"
    assert "https://" in row["operating_point_source"]
    got = planner.pool_throughputs(row)["decode_output_tokens_per_s_per_gpu"]
    assert row["expert_routing"] == "eplb"
    step = serving.measured_step_time(
        "deepseek-v3", 2000, "H100", batch=256, dtype="fp8", ep=72, routing="eplb"
    )
    assert got == pytest.approx(256 / step)
    blank = dict(
        row, decode_batch_per_gpu="", decode_kv_len="", prefill_tokens_per_gpu=""
    )
    assert planner.pool_throughputs(blank)[
        "decode_output_tokens_per_s_per_gpu"
    ] != pytest.approx(got)
    with pytest.raises(ValueError, match="decode_batch_per_gpu"):
        planner.pool_throughputs(dict(row, decode_batch_per_gpu="0"))


def test_deepseek_split_is_derived_from_its_daily_totals() -> None:
    """The split is input tokens a day over the prefill rate against output tokens a day over the decode rate.

    The overview's unit sizes (4 and 18 nodes) are not the split. The derived
    GPUs must add up to the overview's average occupancy of 226.75 nodes (an
    independent figure in the same source) within 1 %.
    """
    rows = {r["case"]: r for r in planner.load_deployments()}
    pre, dec = rows["deepseek-v3-prod-prefill"], rows["deepseek-v3-prod-decode"]
    day = 24 * 3600
    prefill_gpus = 608e9 / day / float(pre["value"])
    decode_gpus = 168e9 / day / float(dec["value"])
    for r in (pre, dec):
        assert r["pd_published"] == "derived"
        assert int(r["prefill_gpus"]) == round(prefill_gpus)
        assert int(r["decode_gpus"]) == round(decode_gpus)
    assert (prefill_gpus + decode_gpus) / 8 == pytest.approx(226.75, rel=0.01)
    assert prefill_gpus < decode_gpus  # decode-heavy, as the issue says


def test_a_split_is_judged_only_where_the_source_publishes_one() -> None:
    judged = {
        r["case"]: r
        for r in planner.published_comparison()
        if r["pd_family_right"] is not None
    }
    deployments = planner.load_deployments()
    for d in deployments:
        assert d["pd_published"] in (*planner.PD_PUBLISHED, "no")
        assert (d["case"] in judged) == (d["pd_published"] in planner.PD_PUBLISHED)
    # the judged ones carry the published split; the others none
    for r in planner.published_comparison():
        assert math.isnan(r["published_pd"]) == (r["pd_family_right"] is None)
    assert {"mooncake-fig15", "distserve-fig1", "deepseek-v3-prod-decode"} <= set(
        judged
    )


def test_layouts_that_would_copy_kv_heads_are_left_out() -> None:
    """A dense model with 2 KV heads: TP4 and TP8 would store each head twice and four times."""
    from dataclasses import replace as dc_replace

    from helpers import llm

    few = dc_replace(llm.get_model("llama-3-8b"), name="few-kv-heads", n_kv_heads=2)
    p = planner.plan(
        few,
        "H100",
        n_gpus=8,
        input_len=1024,
        output_len=128,
        ttft_slo_s=1.0,
        tbt_slo_s=0.05,
    )
    assert p.candidates and all(c.tp <= 2 and c.prefill_tp <= 2 for c in p.candidates)


def test_deepseek_lengths_meet_both_published_figures() -> None:
    """The overview's 608 B input to 168 B output tokens a day, and its mean KV length of 4,989 per output token.

    Under the planner's mean-length model a request's mean decode context is
    its input plus half its output, so the two figures fix both lengths.
    """
    row = next(
        r for r in planner.load_deployments() if r["case"] == "deepseek-v3-prod-decode"
    )
    isl, osl = int(row["input_len"]), int(row["output_len"])
    assert isl / osl == pytest.approx(608 / 168, rel=2e-3)
    assert inference.mean_decode_context(isl, osl) == pytest.approx(
        int(row["decode_kv_len"]), abs=1
    )


def test_pool_streams_set_the_measured_step_beside_the_models_streams() -> None:
    """SGLang's decode: 256 sequences per GPU at 2,787.5 tokens/s per GPU is a 91.8 ms step."""
    p = planner.pool_streams("sglang-96h100-decode")
    assert p.decode and p.tokens == 256
    assert p.step_s == pytest.approx(256 / 2787.5)
    assert p.no_overlap_s == pytest.approx(p.step_s * serving.TBO_SPEEDUP["decode"])
    assert (
        p.model.alltoall_per_expert_s == p.model.alltoall_s
    )  # decode: one copy per expert
    pre = planner.pool_streams("deepseek-v3-profile-prefill")
    assert pre.tokens == 16384 and not pre.decode
    assert pre.model.alltoall_s < pre.model.alltoall_per_expert_s  # one copy per server
    with pytest.raises(KeyError, match="case"):
        planner.pool_streams("no-such-case")
    with pytest.raises(ValueError, match="case"):
        planner.pool_streams("distserve-fig1")


def test_split_at_the_operating_point_is_prefill_over_decode_gpu_seconds() -> None:
    row = next(
        r for r in planner.load_deployments() if r["case"] == "deepseek-v3-prod-decode"
    )
    got = planner.pool_throughputs(row)
    isl, osl = int(row["input_len"]), int(row["output_len"])
    expected = (isl / got["prefill_input_tokens_per_s_per_gpu"]) / (
        osl / got["decode_output_tokens_per_s_per_gpu"]
    )
    assert got["pd_ratio_at_operating_point"] == pytest.approx(expected)
    assert got["plan"].prefill_gpus / got["plan"].decode_gpus == pytest.approx(
        got["pd_ratio"]
    )


def test_sglang_decode_breakdown_reads_consistently() -> None:
    """The figure's bars add up, match the published throughput, and the unoverlapped step matches the speedup."""
    runs = papers.SGLANG_DECODE_BREAKDOWN_MS_PER_LAYER
    for run in runs.values():
        parts = sum(v for k, v in run.items() if k != "overall")
        assert parts == pytest.approx(run["overall"], rel=0.02)
    layers = llm.get_model("deepseek-v3").n_layers
    row = next(
        r
        for r in planner.load_deployments()
        if r["case"] == planner.DECODE_BREAKDOWN_CASE
    )
    step = int(row["decode_batch_per_gpu"]) / float(
        row["value"]
    )  # s, the overlapped step
    assert runs["tbo_256"]["overall"] * layers / 1e3 == pytest.approx(step, rel=0.02)
    plain = planner.decode_breakdown(run="no_tbo_256")[-1].measured_s
    assert plain == pytest.approx(step * serving.TBO_SPEEDUP["decode"], rel=0.03)
    # scaled to 256 tokens per GPU: the 128-token run's step is half its bar
    half = planner.decode_breakdown(run="no_tbo_128")[-1].measured_s
    assert half == pytest.approx(runs["no_tbo_128"]["overall"] * layers / 2e3)


def test_decode_breakdown_prices_the_same_step_as_the_planner() -> None:
    rows = planner.decode_breakdown()
    assert [r.kernels for r in rows][-1] == "step"
    assert sum(r.model_s for r in rows[:-1]) == pytest.approx(rows[-1].model_s)
    # the published decode row's router (EPLB) loads the busiest GPU, as the planner prices it
    streams = serving.moe_streams(
        "deepseek-v3", 2000, "H100", batch=256, ep=72, routing="eplb"
    )
    assert rows[-1].model_s == pytest.approx(streams.compute_s + streams.alltoall_s)
    skew = serving.expert_skew(72, "eplb", assignments=256 * 72 * 8, decode=True)
    assert rows[0].model_s == pytest.approx(
        serving.moe_compute_parts(
            "deepseek-v3", 2000, "H100", batch=256, ep=72, expert_skew=skew
        ).parts["gemm"]
    )
    with pytest.raises(ValueError, match="run"):
        planner.decode_breakdown(run="tbo_256")
    with pytest.raises(ValueError, match="model"):
        serving.moe_compute_parts("llama-3-8b", 100, "H100", batch=1, ep=8)


def test_overlap_growth_of_decode_compute() -> None:
    """Half batches cost the model more compute, and most of what SGLang measured."""
    measured, model = planner.decode_overlap_growth()
    runs = papers.SGLANG_DECODE_BREAKDOWN_MS_PER_LAYER
    tbo = sum(runs["tbo_256"][k] for k in planner.DECODE_COMPUTE_CLASSES)
    plain = sum(runs["no_tbo_256"][k] for k in planner.DECODE_COMPUTE_CLASSES)
    assert measured == pytest.approx(tbo / plain)
    assert 1 < model < measured
    assert model - 1 > (measured - 1) / 2


def test_sglang_prefill_breakdown_reads_consistently() -> None:
    """Each stream of each run adds up to its step, and each step gives the run's published throughput."""
    runs = papers.SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER
    layers = llm.get_model("deepseek-v3").n_layers
    compute = ("moe", "gemm", "attention_core", "other", "compute_bubble")
    comm = ("dispatch_barrier", "dispatch", "combine_barrier", "combine", "comm_bubble")
    for name, per_node in papers.SGLANG_PREFILL_PROFILE_TOKENS_PER_S_PER_NODE.items():
        run = runs[name]
        for stream in (compute, comm):
            assert sum(run[k] for k in stream) == pytest.approx(
                run["overall"], rel=0.02
            )
        step = run["overall"] * layers / 1e3
        assert 16_384 / step == pytest.approx(per_node / planner.NODE_GPUS, rel=0.02)
    # DeepSeek's balanced profile: each kernel timed alone is faster than in the step
    for k in runs["unit_test"]:
        assert runs["unit_test"][k] < runs["deepseek_profile"][k]
    sms = papers.DEEPSEEK_PREFILL_SMS
    assert sum(sms.values()) == inference.get_accelerator("H800").sm_count


def test_prefill_breakdown_prices_the_planners_step() -> None:
    b = planner.prefill_breakdown()
    assert b.gpu == "H800"
    kinds = [r.kernels for r in b.rows]
    assert kinds[-1] == "step" and kinds[-2].startswith("all-to-alls")
    # the compute stream's rows add up to the step on both sides
    assert sum(r.model_s for r in b.rows[:4]) == pytest.approx(b.rows[-1].model_s)
    assert sum(r.measured_s for r in b.rows[:4]) == pytest.approx(
        b.rows[-1].measured_s, rel=0.02
    )
    # the step is the planner's own price of DeepSeek's profile row
    row = next(
        r
        for r in planner.load_deployments()
        if r["case"] == planner.PREFILL_BREAKDOWN_CASES["deepseek_profile"]
    )
    predicted = planner.pool_throughputs(row)["prefill_input_tokens_per_s_per_gpu"]
    assert 16_384 / b.rows[-1].model_s == pytest.approx(predicted)
    assert b.rows[-2].model_s == pytest.approx(b.streams.alltoall_s)
    # the claim the appendix makes: one copy per expert outlasts the whole measured step
    assert b.streams.alltoall_per_expert_s > b.rows[-1].measured_s
    sg = planner.prefill_breakdown(run="sglang")
    assert sg.gpu == "H100"
    unit = papers.SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER["unit_test"]
    assert sg.alltoall_unit_test_s == pytest.approx(
        (unit["dispatch"] + unit["combine"]) * 61 / 1e3
    )
    balanced = planner.prefill_breakdown(run="sglang_perfect_eplb")
    assert (
        balanced.expert_gemm_unit_test_s
        < balanced.expert_gemm_s
        < balanced.rows[0].measured_s
    )
    with pytest.raises(ValueError, match="run"):
        planner.prefill_breakdown(run="unit_test")


@pytest.mark.parametrize(
    "model, gpu, n_gpus, isl, osl, ttft",
    [
        # found by a sweep of the catalog: an uncapped batch search at the plan's
        # rate landed on a larger batch than the TBT target allows (tiles make a
        # step's throughput non-monotone in its batch) ...
        ("gpt-oss-20b", "A100 SXM4 40GB", 8, 1024, 256, 2.0),
        ("llama-2-13b", "A10", 8, 128, 128, 1.0),
        # ... and a decode pool sized at a batch with two-batch overlap ran,
        # at the plan's lower load, at a smaller batch without it
        ("deepseek-v3", "MI325X", 16, 1024, 256, 2.0),
    ],
)
def test_every_candidate_meets_both_targets_at_its_rate(
    model: str, gpu: str, n_gpus: int, isl: int, osl: int, ttft: float
) -> None:
    p = planner.plan(
        model,
        gpu,
        n_gpus=n_gpus,
        input_len=isl,
        output_len=osl,
        ttft_slo_s=ttft,
        tbt_slo_s=0.05,
    )
    assert p.candidates
    for c in p.candidates:
        assert c.ttft_p90_s <= ttft * (1 + 1e-9), c.label
        assert c.tbt_p90_s <= 0.05 * (1 + 1e-9), c.label


@settings(max_examples=12, deadline=None)
@given(
    model=st.sampled_from(
        [
            "llama-3-8b",
            "llama-3-70b",
            "llama-2-13b",
            "gpt-oss-20b",
            "gpt-oss-120b",
            "qwen3-235b-a22b",
            "deepseek-v3",
        ]
    ),
    gpu=st.sampled_from(["A100", "H100", "H200", "L4", "A10", "B200", "MI300X"]),
    n_gpus=st.sampled_from([1, 8, 16]),
    workload=st.sampled_from([(1024, 256, 2.0, 0.05), (8192, 512, 5.0, 0.1)]),
)
def test_no_plan_misses_its_targets(
    model: str, gpu: str, n_gpus: int, workload: tuple[int, int, float, float]
) -> None:
    """Property over the catalog: whatever layouts fit, every ranked one meets both p90 targets."""
    isl, osl, ttft, tbt = workload
    try:
        p = planner.plan(
            model,
            gpu,
            n_gpus=n_gpus,
            input_len=isl,
            output_len=osl,
            ttft_slo_s=ttft,
            tbt_slo_s=tbt,
        )
    except ValueError as err:  # nothing fits, or nothing meets the targets
        assert any(word in str(err) for word in ("n_gpus", "TTFT", "fit"))
        return
    for c in p.candidates:
        assert c.ttft_p90_s <= ttft * (1 + 1e-9) and c.tbt_p90_s <= tbt * (1 + 1e-9)


def test_deployment_plan_and_best_of_each_mode() -> None:
    """The plan from scratch for a published row is the one the comparison judges; best_of ranks within a mode."""
    row = next(r for r in planner.load_deployments() if r["case"] == "distserve-fig1")
    p = planner.deployment_plan(row)
    assert planner.pool_throughputs(row)["plan"] == p.best
    for mode in ("aggregated", "disaggregated"):
        first = p.best_of(mode)
        assert first is not None and first.mode == mode
        assert first == next(c for c in p.candidates if c.mode == mode)
    assert p.best in (p.best_of("aggregated"), p.best_of("disaggregated"))
    with pytest.raises(ValueError, match="mode"):
        p.best_of("colocated")


def test_a_plan_from_a_trace_is_replayed_with_the_traces_own_lengths() -> None:
    """With a trace, a dense plan is replayed at its rate: a co-located one by the engine simulator,
    each request's cache hits skipped by its prefill; without a trace, nothing is replayed, and the
    command says why when a trace was given (a mixture of experts)."""
    kw = dict(n_gpus=8, input_len=4096, output_len=256, ttft_slo_s=2, tbt_slo_s=0.05)
    p = planner.plan("llama-3-8b", "H100", trace="tiny", **kw)
    assert p.hit_tokens > 0 and p.replayed is not None
    how = "engine simulator" if p.mode == "aggregated" else "trace replay"
    assert how in p.replayed.how
    assert 0 < p.replayed.ttft_p90_s and 0 < p.replayed.tbt_p90_s
    bare = planner.plan("llama-3-8b", "H100", **kw)
    assert bare.replayed is None
    args = planner._parser().parse_args(
        SMALL_ARGV + ["--isl", "4096", "--osl", "256", "--trace", "tiny"]
    )
    assert "not replayed" in planner._report(bare, args)
    args.trace = None
    assert "need --trace" in planner._report(bare, args)
    check = planner.ReplayCheck(3.0, 0.02, 2.0, 0.05, "test")
    assert not check.meets and planner.ReplayCheck(1.0, 0.02, 2.0, 0.05, "test").meets


def test_the_command_warns_when_the_replay_misses_and_notes_other_means(capsys) -> None:
    """The report warns when the replay misses a target, and notes a mean that is not the trace's;
    with a trace, --isl and --osl default to the trace's means; without one they are required."""
    from dataclasses import replace

    argv = SMALL_ARGV + ["--trace", "tiny"]
    assert planner.main(argv=argv) == 0
    out = capsys.readouterr().out
    assert (
        "2346 in / 72 out" in out.splitlines()[0]
        or "2347 in / 72 out" in out.splitlines()[0]
    )
    assert "replayed    : with the trace's own lengths" in out and "NOTE" not in out
    assert planner.main(argv=argv + ["--isl", "4096"]) == 0
    assert "NOTE        : the trace's mean request is" in capsys.readouterr().out
    args = planner._parser().parse_args(argv + ["--isl", "2347", "--osl", "72"])
    args.trace_means = (2346.5, 72.5)
    p = planner.plan("llama-3-8b", "H100", n_gpus=8, input_len=2347, output_len=72,
                     ttft_slo_s=2, tbt_slo_s=0.05, trace="tiny")  # fmt: skip
    missed = replace(p, replayed=planner.ReplayCheck(3.0, 0.02, 2.0, 0.05, "test"),
                     usd_per_million_tokens=1.0)  # fmt: skip
    report = planner._report(missed, args)
    assert "WARNING     : the replay misses a target. " in report
    assert "(at a rate its replay misses" in report  # the price carries the warning
    met = planner._report(replace(missed, replayed=planner.ReplayCheck(1.0, 0.02, 2.0, 0.05, "test")),
                          args)  # fmt: skip
    assert "WARNING" not in met and "replay misses" not in met
    assert planner.main(argv=SMALL_ARGV) == 2
    assert "error: --isl:" in capsys.readouterr().err


def test_prompt_shape_keeps_the_mean_and_sorts_the_spread() -> None:
    shape = planner.prompt_shape([100, 300, 200, 400], bins=2)
    assert shape == pytest.approx((0.6, 1.4))
    assert len(planner.prompt_shape(list(range(1, 1001)))) == planner.PROMPT_BINS
    assert sum(
        planner.prompt_shape(list(range(1, 1001)))
    ) / planner.PROMPT_BINS == pytest.approx(1.0)
    with pytest.raises(ValueError, match="uncached_tokens"):
        planner.prompt_shape([0, 5])
    with pytest.raises(ValueError, match="bins"):
        planner.prompt_shape([5], bins=0)


def test_a_spread_of_prompts_lowers_both_modes_ttft_bound_rate() -> None:
    """Same mean prompt, a spread of lengths: the prefill pool and the co-located rank each serve
    less within the p90 TTFT target (the long prompts' own prefill, and the wait behind them)."""
    from dataclasses import replace

    from helpers.hardware import get_accelerator, get_link

    m = llm.get_model("llama-3-70b")
    w = planner._Work(m, get_accelerator("H100"), "bf16", 8192, 256, 0, 256 / math.sqrt(12),
                      3.0, 0.05, get_link("cx7"))  # fmt: skip
    spread = replace(
        w, prompt_shape=(0.25, 0.5, 0.75, 1.0, 1.0, 1.0, 1.25, 1.5, 1.75, 1.0)
    )
    equal = replace(w, prompt_shape=(1.0,) * 10)
    assert planner._prefill_pool(spread, 8, 1)[0] < planner._prefill_pool(w, 8, 1)[0]
    assert planner._aggregated(spread, 8, 1)[0] < planner._aggregated(w, 8, 1)[0]
    # equal bins are the mean prompt: the same pool rate as no spread at all
    assert planner._prefill_pool(equal, 8, 1)[0] == pytest.approx(
        planner._prefill_pool(w, 8, 1)[0]
    )


def test_the_chapter_case_priced_with_its_trace_replays_within_its_targets() -> None:
    """Chapter 13's case (Llama-3-70B, 16 H200s, conversation trace, 2 s / 50 ms): sized for the mean
    request, the plan misses its TTFT target when the trace is replayed; priced with the trace's spread,
    the best layout of each mode, with and without the KV tiers, replays inside both targets and
    within a quarter of the planner's own p90 TTFT (the planner on the safe side of the replay)."""
    from helpers.traces import load_trace

    w = papers.MOONCAKE_TABLE2["conversation"]
    case = dict(n_gpus=16, input_len=int(w["mean_input"]), output_len=int(w["mean_output"]),
                ttft_slo_s=2.0, tbt_slo_s=0.05)  # fmt: skip
    t = load_trace("conversation")
    mean = planner.plan("llama-3-70b", "H200", **case)
    own = planner.replay_candidate(
        "llama-3-70b", "H200", mean.best, t, ttft_slo_s=2.0, tbt_slo_s=0.05
    )
    assert not own.meets
    for kv in (False, True):
        p = planner.plan("llama-3-70b", "H200", trace=t, kv_tiers=kv, **case)
        assert (p.hit_tokens > 0) is kv and bool(p.tiers) is kv
        assert p.best.rate < mean.best.rate
        hits = planner._trace_hits(t, p.tiers)
        for mode in ("aggregated", "disaggregated"):
            c = p.best_of(mode)
            r = planner.replay_candidate("llama-3-70b", "H200", c, t, ttft_slo_s=2.0,
                                         tbt_slo_s=0.05, hit_tokens=hits)  # fmt: skip
            assert r.meets, (kv, mode, r)
            assert 0.75 * c.ttft_p90_s <= r.ttft_p90_s <= c.ttft_p90_s
    with_tiers = planner.plan("llama-3-70b", "H200", trace=t, **case)
    assert with_tiers.replayed is not None and with_tiers.replayed.meets


def test_a_co_located_replay_does_not_depend_on_how_many_replicas_share_the_load() -> (
    None
):
    """Each replica sees the whole trace's mix at its share of the rate, not the trace's first 1/N."""
    from dataclasses import replace

    from helpers.traces import load_trace

    t = load_trace("tiny")
    p = planner.plan("llama-3-8b", "H100", n_gpus=4, input_len=int(t.input_lengths.mean()),
                     output_len=int(t.output_lengths.mean()), ttft_slo_s=2.0, tbt_slo_s=0.05,
                     trace=t)  # fmt: skip
    c = p.best_of("aggregated")
    one = replace(c, decode_instances=1, rate=c.rate / c.decode_instances)
    many = replace(c, decode_instances=4, rate=4 * one.rate)
    args = dict(
        ttft_slo_s=2.0, tbt_slo_s=0.05, hit_tokens=planner._trace_hits(t, p.tiers)
    )
    r1 = planner.replay_candidate("llama-3-8b", "H100", one, t, **args)
    r4 = planner.replay_candidate("llama-3-8b", "H100", many, t, **args)
    assert r4.ttft_p90_s == pytest.approx(r1.ttft_p90_s)
    assert r4.tbt_p90_s == pytest.approx(r1.tbt_p90_s)


def test_the_command_plans_without_kv_tiers_when_asked(capsys) -> None:
    """--no-kv-tiers plans the same trace with every prompt prefilled in full: no tiers line."""
    argv = SMALL_ARGV + ["--trace", "tiny"]
    assert planner.main(argv=argv) == 0
    assert "KV tiers    :" in capsys.readouterr().out
    assert planner.main(argv=argv + ["--no-kv-tiers"]) == 0
    out = capsys.readouterr().out
    assert "KV tiers    :" not in out and "replayed    :" in out


def test_mooncakes_row_planned_from_its_trace_splits_further_towards_prefill() -> None:
    """The appendix's sentence: planned from Mooncake's synthetic trace (its spread and its own reuse),
    the planner's split is more prefill-heavy than the split it plans from the row's mean lengths."""
    from helpers.traces import load_trace

    row = next(r for r in planner.load_deployments() if r["case"] == "mooncake-fig15")
    mean = planner.deployment_plan(row).best
    traced = planner.deployment_plan(row, trace=load_trace("synthetic"))
    assert traced.hit_tokens > 0 and traced.best.mode == "disaggregated"
    ratio = lambda c: c.prefill_gpus / c.decode_gpus  # noqa: E731
    assert ratio(traced.best) > ratio(mean) > 1


def test_parse_layout_reads_the_deployments_files_layouts() -> None:
    assert planner.parse_layout("TP8") == (8, 1)
    assert planner.parse_layout("EP32+DPattn") == (1, 32)
    for row in planner.load_deployments():
        for key in ("prefill_layout", "decode_layout"):
            tp, ep = planner.parse_layout(row[key])
            assert tp >= 1 and ep >= 1
    for bad in ("8", "TP", "DP8"):
        with pytest.raises(ValueError, match="text"):
            planner.parse_layout(bad)


def test_the_command_says_its_expert_parallel_pools_are_optimistic(capsys) -> None:
    """The NOTE a MoE plan carries holds for every published MoE pool, and a dense plan does not carry it."""
    moe = ["--model", "deepseek-v3", "--gpu", "H200", "--gpus", "32", "--isl", "4096",
           "--osl", "1024", "--ttft", "2", "--tbt", "0.05", "--dtype", "fp8"]  # fmt: skip
    assert planner.main(argv=moe) == 0
    assert "MoE pools still come out optimistic" in capsys.readouterr().out
    assert planner.main(argv=SMALL_ARGV + ["--isl", "1000", "--osl", "100"]) == 0
    assert "MoE pools" not in capsys.readouterr().out
    rows = {r["case"]: r for r in planner.load_deployments()}
    for r in planner.published_comparison():
        if planner.resolve_model(rows[r["case"]]["model"]).moe is not None:
            assert r["error"] > 0, r["case"]


def test_most_the_gpus_serve_ranks_by_the_whole_rate() -> None:
    """With no rate given the plan serves the most the GPUs can: a layout that leaves a GPU idle
    does not outrank one that serves more on all of them. Goodput stays per GPU used.

    DistServe's three A100s: one TP2 instance on two GPUs serves less than the 2:1 split on three.
    """
    row = next(r for r in planner.load_deployments() if r["case"] == "distserve-fig1")
    p = planner.deployment_plan(row)
    n = int(row["n_gpus"])
    rates = [c.rate for c in p.candidates]
    assert rates == sorted(rates, reverse=True)
    for c in p.candidates:
        assert c.goodput_tokens_per_s_per_gpu == pytest.approx(
            c.rate * int(row["output_len"]) / c.gpus
        )
    idle = [c for c in p.candidates if c.gpus < n]
    assert idle and all(c is not p.best for c in idle)
    # the idle layout has the higher goodput per GPU used, and still ranks lower
    assert max(c.goodput_tokens_per_s_per_gpu for c in idle) > min(
        c.goodput_tokens_per_s_per_gpu for c in p.candidates if c.gpus == n
    )
    # with a rate given, GPUs a layout does not need are not counted
    fixed = planner.plan(
        "llama-2-13b",
        "A100",
        n_gpus=n,
        input_len=512,
        output_len=64,
        ttft_slo_s=0.4,
        tbt_slo_s=0.04,
        rate=5.0,
    )
    for c in fixed.candidates:
        assert c.goodput_tokens_per_s_per_gpu == pytest.approx(5.0 * 64 / c.gpus)
