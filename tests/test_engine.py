"""helpers.engine: the continuous-batching simulator's interface, hand-worked cases and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import efficiency, engine, hardware, llm, steps

FIELDS = (
    "output_tokens_per_s",
    "total_tokens_per_s",
    "ttft_s",
    "tpot_s",
    "ttft_p90_s",
    "tpot_p90_s",
    "mean_batch",
)


def test_interface_fields_and_full_load():
    r = engine.serve("llama-3-8b", "H100-SXM", input_len=1000, output_len=200)
    for name in FIELDS:
        value = getattr(r, name)
        assert math.isfinite(value) and value > 0, name
    assert r.total_tokens_per_s == pytest.approx(r.output_tokens_per_s * 1200 / 200)
    assert r.ttft_s <= r.ttft_p90_s and r.tpot_s <= r.tpot_p90_s
    assert r.mean_batch <= r.max_batch
    assert sum(r.breakdown.values()) == pytest.approx(1.0)


def test_replicas_multiply_throughput_at_full_load():
    one = engine.serve("llama-3-8b", "H100", input_len=500, output_len=100)
    two = engine.serve("llama-3-8b", "H100", input_len=500, output_len=100, replicas=2)
    assert two.output_tokens_per_s == pytest.approx(2 * one.output_tokens_per_s)
    assert two.output_tokens_per_s_per_gpu == pytest.approx(one.output_tokens_per_s)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(tp=0), "tp"),
        (dict(input_len=0), "input_len"),
        (dict(output_len=-1), "output_len"),
        (dict(rate=-1.0), "rate"),
        (dict(concurrency=0), "concurrency"),
        (dict(weight_dtype="fp3"), "weight_dtype"),
        (dict(engine="nope"), "engine"),
        (dict(gemm_overlap=2.0), "gemm_overlap"),
        (dict(token_budget=0), "token_budget"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, word):
    args = dict(input_len=100, output_len=10) | kwargs
    with pytest.raises((ValueError, KeyError, TypeError)) as err:
        engine.serve("llama-3-8b", "H100", **args)
    assert word in str(err.value)


# ---- hand-worked iterations ------------------------------------------------------------------

V = engine.PRESETS["vllm"]


def _host(seqs: int) -> float:
    return V.host_s + V.host_per_seq_s * seqs


def test_budget_limited_prefill_is_three_chunks():
    """A 3,008-token prompt under a 1,024-token budget: chunks of 1,024, 1,024 and 960, one per iteration."""
    r = engine.serve(
        "llama-3-8b",
        "H100",
        input_len=3008,
        output_len=1,
        requests=1,
        token_budget=1024,
    )
    chunks = [(1024, 0, 0), (1024, 1024, 0), (960, 2048, 1)]
    by_hand = sum(
        steps.mixed_step("llama-3-8b", "H100", chunks=[(c, p)], logits=n).seconds
        + _host(1)
        for c, p, n in chunks
    )
    assert r.iterations == 3
    assert r.ttft_s == pytest.approx(by_hand, rel=1e-9)
    assert r.output_tokens_per_s == pytest.approx(1 / by_hand, rel=1e-9)


def test_ramp_down_tail_one_slot():
    """Two requests, one sequence slot: the second waits for the whole first, then runs alone."""
    kw = dict(input_len=16, output_len=5, requests=2, max_seqs=1)
    r = engine.serve("llama-3-8b", "H100", **kw)
    prefill = steps.mixed_step("llama-3-8b", "H100", chunks=[(16, 0)]).seconds + _host(
        1
    )
    decodes = [
        steps.decode_step("llama-3-8b", c, "H100", batch=1).seconds + _host(1)
        for c in (16, 17, 18, 19)
    ]
    first_done = prefill + sum(decodes)
    assert r.iterations == 10
    # TTFTs are the first prefill and the wait plus the second prefill: their median is the mean
    assert r.ttft_s == pytest.approx((prefill + first_done + prefill) / 2, rel=1e-9)
    assert r.tpot_s == pytest.approx(sum(decodes) / 4, rel=1e-9)
    assert r.output_tokens_per_s == pytest.approx(10 / (2 * first_done), rel=1e-9)


def test_memory_limited_batch_by_hand():
    """KV blocks, not max_num_seqs, cap the batch: TensorRT-LLM reserves every request's whole sequence."""
    cap = engine.kv_capacity("llama-3-8b", "H100", engine="trtllm", weight_dtype="fp8")
    t = engine.PRESETS["trtllm"]
    m = llm.get_model("llama-3-8b")
    tables = 2 * m.vocab_size * m.d_model  # embedding and LM head stay 16-bit
    weights = (llm.param_count(m) - tables) * 1.0 + tables * 2.0
    act = 8192 * (2 * 14336 + 4 * 4096) * 2.0 + 2048 * m.vocab_size * 4.0
    free = 0.9 * (80 * 2**30 - weights - act - t.graph_pool_bytes)
    per_token = 32 * 2 * 8 * 128 * 2  # bytes of bf16 KV per token
    assert cap.kv_tokens == int(free // (32 * per_token)) * 32
    r = engine.serve(
        "llama-3-8b",
        "H100",
        weight_dtype="fp8",
        engine="trtllm",
        input_len=4000,
        output_len=96,
        requests=400,
    )
    blocks_per_request = math.ceil(4096 / 32)
    assert r.peak_batch == (cap.kv_tokens // 32) // blocks_per_request < t.max_seqs


# ---- properties ---------------------------------------------------------------------------------


@settings(max_examples=12, deadline=None)
@given(
    prompt=st.integers(min_value=16, max_value=6000),
    extra=st.integers(min_value=1, max_value=4000),
)
def test_longer_prompt_never_lowers_ttft(prompt, extra):
    kw = dict(output_len=4, concurrency=1, requests=2)
    short = engine.serve("llama-3-8b", "H100", input_len=prompt, **kw)
    long = engine.serve("llama-3-8b", "H100", input_len=prompt + extra, **kw)
    assert long.ttft_s >= short.ttft_s


@settings(max_examples=10, deadline=None)
@given(
    budget=st.integers(min_value=256, max_value=4096),
    factor=st.sampled_from([2, 4]),
    prompt=st.integers(min_value=64, max_value=4000),
)
def test_larger_budget_never_lowers_offline_throughput(budget, factor, prompt):
    kw = dict(input_len=prompt, output_len=32, requests=64)
    small = engine.serve("llama-3-8b", "H100", token_budget=budget, **kw)
    large = engine.serve("llama-3-8b", "H100", token_budget=budget * factor, **kw)
    assert large.output_tokens_per_s >= small.output_tokens_per_s * 0.99


@settings(max_examples=10, deadline=None)
@given(
    clients=st.integers(min_value=1, max_value=24),
    more=st.integers(min_value=1, max_value=8),
)
def test_more_clients_never_lower_steady_throughput_below_the_limits(clients, more):
    """While every client's prompt fits one iteration's budget (32 x 256 <= 8,192) and memory.

    Past the budget a cohort's prefill spills into a second iteration and
    throughput can dip (33 clients of 256 tokens: a 3 % dip), as a real
    engine's does when lockstep clients overflow its token budget.
    """
    kw = dict(input_len=256, output_len=64)
    few = engine.serve("llama-3-8b", "H100", concurrency=clients, **kw)
    many = engine.serve("llama-3-8b", "H100", concurrency=clients + more, **kw)
    assert many.output_tokens_per_s >= few.output_tokens_per_s


def test_poisson_rate_low_load_has_no_queue():
    """At a rate far below capacity TTFT is about one prefill, and throughput follows the offered load."""
    r = engine.serve(
        "llama-3-8b", "H100", input_len=512, output_len=64, rate=1.0, requests=60
    )
    alone = engine.serve(
        "llama-3-8b", "H100", input_len=512, output_len=64, concurrency=1, requests=2
    )
    assert r.ttft_s == pytest.approx(alone.ttft_s, rel=0.5)
    assert r.output_tokens_per_s < 64 * 1.0 * 1.5


def test_moe_with_expert_parallelism_serves():
    r = engine.serve(
        "deepseek-v3",
        "H200",
        tp=8,
        ep=8,
        dp_attention=True,
        weight_dtype="fp8",
        input_len=1000,
        output_len=200,
        engine="sglang",
    )
    assert r.output_tokens_per_s > 0 and r.breakdown["ep_comm"] > 0
    assert r.breakdown["tp_comm"] < r.breakdown["ep_comm"]


def test_presets_cite_a_version_and_a_source():
    for p in engine.PRESETS.values():
        assert p.version and "http" in p.source and p.notes


@settings(max_examples=6, deadline=None)
@given(scale=st.floats(min_value=1.0, max_value=8.0))
def test_a_faster_link_never_lowers_throughput(scale):
    nv = hardware.get_link("NVLink 4 (H100)")
    fast = hardware.Link(nv.name, nv.bandwidth * scale, nv.latency / scale, nv.source)
    kw = dict(tp=2, input_len=512, output_len=64, requests=64)
    slow = engine.serve("llama-3-70b", "H100", link=nv, **kw)
    quick = engine.serve("llama-3-70b", "H100", link=fast, **kw)
    assert quick.output_tokens_per_s >= slow.output_tokens_per_s


def test_sglang_static_share_falls_with_tp_by_hand():
    """SGLang at TP 8: 0.81 of each GPU holds the weights' eighth and the KV pool (pages of 1 token)."""
    cap = engine.kv_capacity("llama-3-70b", "H100", tp=8, engine="sglang")
    weights = llm.param_count("llama-3-70b") * 2 / 8
    per_token = 80 * 2 * 1 * 128 * 2  # one KV head per GPU, bf16
    assert cap.kv_tokens == int((0.81 * 80 * 2**30 - weights) // per_token)
    assert cap.token_budget == 8192


def test_unknown_gpu_names_acc():
    with pytest.raises(KeyError, match="acc"):
        engine.serve("llama-3-8b", "H1000", input_len=10, output_len=2)


@pytest.mark.parametrize("name", ["vllm", "sglang", "trtllm"])
def test_every_request_finishes_when_the_cache_fills(name):
    """KV blocks are returned exactly: a long-output load that fills the cache still drains."""
    r = engine.serve(
        "llama-3-8b", "H100", input_len=128, output_len=3000, requests=400, engine=name
    )
    assert r.output_tokens_per_s > 0 and math.isfinite(r.ttft_p90_s)
    assert r.iterations >= 3000


def test_a_decode_batch_is_padded_to_the_next_cuda_graph():
    """Nine sequences decode as vLLM's 16-row graph: their GEMMs run for 16 rows."""
    r = engine.serve("llama-3-8b", "H100", input_len=16, output_len=3, requests=9)
    prefill = steps.mixed_step(
        "llama-3-8b", "H100", chunks=[(16, 0)] * 9
    ).seconds + _host(9)
    decodes = [
        steps.mixed_step(
            "llama-3-8b", "H100", decode_batch=9, decode_context=c, pad_to=16
        ).seconds
        + _host(9)
        for c in (16, 17)
    ]
    assert r.iterations == 3
    assert r.ttft_s == pytest.approx(prefill, rel=1e-9)
    assert r.output_tokens_per_s == pytest.approx(
        27 / (prefill + sum(decodes)), rel=1e-9
    )
    unpadded = steps.mixed_step("llama-3-8b", "H100", decode_batch=9, decode_context=16)
    assert decodes[0] - _host(9) > unpadded.seconds


def test_length_lists_cycle_over_requests():
    kw = dict(requests=40, engine="sglang")
    scalar = engine.serve("llama-3-8b", "H100", input_len=700, output_len=90, **kw)
    listed = engine.serve(
        "llama-3-8b", "H100", input_len=[700] * 3, output_len=(90,), **kw
    )
    assert listed == scalar
    mixed = engine.serve(
        "llama-3-8b", "H100", input_len=[100, 3000], output_len=[400, 20], **kw
    )
    assert mixed.ttft_p90_s > mixed.ttft_s
    # 20 requests of each kind: 20 * 3,520 tokens, of which 20 * 420 generated
    assert mixed.total_tokens_per_s == pytest.approx(
        mixed.output_tokens_per_s * 3520 / 420
    )


@pytest.mark.parametrize("bad", [[], [100, 0], "100"])
def test_bad_length_lists_name_the_parameter(bad):
    with pytest.raises((ValueError, TypeError), match="input_len"):
        engine.serve("llama-3-8b", "H100", input_len=bad, output_len=10)


def test_overlap_scheduler_takes_a_busy_engines_arrival_one_iteration_later():
    """Two clients; the short request's successor arrives while the long one decodes.

    A synchronous scheduler prefills it in the next iteration; an overlap
    scheduler (SGLang, TensorRT-LLM) had already prepared that iteration, so
    one more decode step of the other sequence runs first (by hand).
    """
    import dataclasses

    lagged = engine.preset("sglang")
    assert lagged.overlap_schedule and engine.preset("trtllm").overlap_schedule
    assert not engine.preset("vllm").overlap_schedule
    sync = dataclasses.replace(lagged, overlap_schedule=False)
    kw = dict(input_len=16, output_len=[5, 2], concurrency=2, requests=3)
    a = engine.serve("llama-3-8b", "H100", engine=lagged, **kw)
    b = engine.serve("llama-3-8b", "H100", engine=sync, **kw)
    # TTFTs: two first-iteration prefills and the successor's; p90 of three
    # sorted values s, s, t is s + 0.8 (t - s); the medians are the first prefill
    assert a.ttft_s == pytest.approx(b.ttft_s, rel=1e-12)
    extra = (a.ttft_p90_s - b.ttft_p90_s) / 0.8
    # the decode step the successor waits through: batch 1, 17 cached tokens
    step = steps.decode_step("llama-3-8b", 17, "H100", batch=1).seconds
    assert extra == pytest.approx(step, rel=0.02)
    assert a.iterations == b.iterations + 1


def test_frontend_delays_each_first_token_by_its_measured_latency():
    """One client at a time: the engine is idle when each request arrives, so the
    HTTP frontend's latency (measured on SGLang) adds to every TTFT exactly."""
    kw = dict(input_len=128, output_len=16, concurrency=1, requests=4)
    for name in ("vllm", "sglang"):
        off = engine.serve("llama-3-8b", "H100", engine=name, **kw)
        on = engine.serve("llama-3-8b", "H100", engine=name, frontend=True, **kw)
        assert on.ttft_s - off.ttft_s == pytest.approx(
            efficiency.frontend_s(), rel=1e-9
        )
        assert on.tpot_s == pytest.approx(off.tpot_s, rel=1e-12)
        assert on.output_tokens_per_s < off.output_tokens_per_s
    assert 1e-3 < efficiency.frontend_s() < 2e-2
    assert all(
        r["source"].startswith(("pytorch", "tenstorrent"))
        for r in efficiency.table("host")
    )
    with pytest.raises(TypeError, match="frontend"):
        engine.serve("llama-3-8b", "H100", frontend="yes", **kw)  # type: ignore[arg-type]


def test_a_cached_prefix_is_not_prefilled_again() -> None:
    """Prefix-cache hits shorten the prefill, not the KV cache: a request whose prompt is all cached
    but its last token gets its first token sooner than one with nothing cached; zero changes nothing;
    a negative count names the parameter."""
    kw = dict(tp=1, input_len=4096, output_len=16, requests=1)
    cold = engine.serve("llama-3-8b", "H100", **kw)
    same = engine.serve("llama-3-8b", "H100", cached_len=0, **kw)
    warm = engine.serve("llama-3-8b", "H100", cached_len=4096, **kw)
    assert same.ttft_s == cold.ttft_s
    assert warm.ttft_s < cold.ttft_s / 5
    assert warm.tpot_s == pytest.approx(cold.tpot_s, rel=0.05)
    with pytest.raises(ValueError, match="cached_len"):
        engine.serve("llama-3-8b", "H100", cached_len=-1, **kw)


def test_replicas_share_a_list_of_lengths_round_robin() -> None:
    """A replica sees every N-th request of a list (the whole mix), not the list's first 1/N."""
    lengths = [256] * 40 + [4096] * 40  # the short ones first
    both = engine.serve("llama-3-8b", "H100", replicas=2, input_len=lengths, output_len=64,
                        rate=4.0, requests=80)  # fmt: skip
    one = engine.serve("llama-3-8b", "H100", input_len=lengths[::2], output_len=64,
                       rate=2.0, requests=40)  # fmt: skip
    assert both.ttft_p90_s == pytest.approx(one.ttft_p90_s)
    head = engine.serve("llama-3-8b", "H100", input_len=lengths[:40], output_len=64,
                        rate=2.0, requests=40)  # fmt: skip
    assert both.ttft_p90_s > head.ttft_p90_s
