"""Tests of the helpers added so Part II's notebooks keep no formulas of their own.

Each function here replaced a formula or a small function typed into a chapter or a lab
(code review, section 3.2). The expected values are derived by hand in each docstring, from
the published model configs and the catalog's datasheet figures.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from numpy.testing import assert_allclose

from helpers import (
    cachesim,
    hardware,
    inference,
    kvcache,
    kvtransfer,
    llm,
    offload,
    tiers,
    traces,
)

# ---------------------------------------------------------------------------
# llm
# ---------------------------------------------------------------------------


def test_attention_and_mlp_weights_split_a_block_in_units_of_d_squared():
    """Llama-3-70B (d = 8192, 8 KV heads of 128, d_ff = 28,672): W_Q and W_O are d^2 each, W_K and
    W_V d^2 / 8 each, so attention is 2.25 d^2; the gated MLP is 3 * 3.5 d^2 = 10.5 d^2; together
    they are the block's weights."""
    m = llm.get_model("llama-3-70b")
    d2 = m.d_model**2
    assert m.attention_weights() == 2.25 * d2
    assert m.mlp_weights() == 10.5 * d2
    assert m.layer_weights() == m.attention_weights() + m.mlp_weights()


def test_ungated_mlp_has_two_matrices():
    """Without gating the MLP is up and down only: 2 d d_ff."""
    m = llm.ModelConfig("plain", 2, 64, 4, 4, 16, 256, 100, gated_mlp=False)
    assert m.mlp_weights() == 2 * 64 * 256


def test_attention_crossover_keys_llama2_7b():
    """Llama-2-7B: 2 * 32 * (4 * 4096^2 + 3 * 4096 * 11008) = 12,952,010,752 FLOP of matmuls per
    token; a key costs 4 * 32 * 4096 = 524,288 FLOP of attention; they are equal at 24,704 keys."""
    keys = llm.attention_crossover_keys("llama-2-7b")
    assert keys == 24_704
    assert llm.attention_flops("llama-2-7b", keys) == pytest.approx(
        llm.linear_flops_per_token("llama-2-7b")
    )


def test_attention_crossover_grows_with_the_mlp_not_the_kv_heads():
    """GQA shrinks only W_K and W_V, so Llama-3-70B's crossover is 2 * 12.75 d^2 / (4 d) = 6.375 d
    = 52,224 keys."""
    assert llm.attention_crossover_keys("llama-3-70b") == pytest.approx(6.375 * 8192)


# ---------------------------------------------------------------------------
# kvcache
# ---------------------------------------------------------------------------


def test_mooncake_coefficients_from_the_config():
    """Llama-3-70B: b = 2 * 12.75 = 25.5 (the paper rounds its own count to 22), a = 2 * q_dim / d
    = 2 (causal pairs; the paper's 4 counts every query-key pair)."""
    assert kvcache.mooncake_coefficients("llama-3-70b") == (2.0, 25.5)


def test_mooncake_formula_with_config_coefficients_matches_prefill_cost():
    """With the config's (a, b), Eq. 1 counts the prefill's FLOP without the lm_head, up to the
    n vs n + 1 of the causal pairs: within 1e-4 at 8,192 tokens."""
    m = llm.get_model("llama-3-70b")
    n = 8192
    eq1 = kvcache.mooncake_prefill_flops(
        m, n, coefficients=kvcache.mooncake_coefficients(m)
    )
    counted = llm.prefill_cost(m, n).flops - 2.0 * m.d_model * m.vocab_size
    assert eq1 == pytest.approx(counted, rel=1e-4)


# ---------------------------------------------------------------------------
# offload
# ---------------------------------------------------------------------------


def test_step_latency_is_two_crossings_per_layer():
    """80 layers x 2 crossings x 2 µs (ConnectX-7) = 0.32 ms; the 100 GbE NIC's 10 µs gives 1.6 ms."""
    assert offload.step_latency_s("llama-3-70b", "cx7") == pytest.approx(0.32e-3)
    assert offload.step_latency_s("llama-3-70b", "100gbe") == pytest.approx(1.6e-3)


def test_offload_transfer_time_is_latency_plus_traffic_over_links():
    """Batch 355, eight ConnectX-7 ports: 0.32 ms + 355 * 80 * 36,864 B / 400 GB/s = 2.94 ms."""
    step = offload.offload_step_time(
        "llama-3-70b", 4096, "H100", "H20", "cx7", batch=355, n_links=8
    )
    assert step.transfer_s == pytest.approx(0.32e-3 + 355 * 80 * 36_864 / 400e9)
    assert step.transfer_s == pytest.approx(2.94e-3, abs=0.005e-3)


# ---------------------------------------------------------------------------
# tiers
# ---------------------------------------------------------------------------


def test_nvme_tier_is_a_quarter_of_a_pcie4_x16_link_per_drive():
    """PCIe 4.0 x16 carries 31.5 GB/s, so an x4 drive 7.9 GB/s; eight drives 63 GB/s; 100 µs latency."""
    one, eight = (
        tiers.nvme_tier("one", 1e12),
        tiers.nvme_tier("eight", 8e12, n_drives=8),
    )
    x16 = hardware.get_link("pcie4").bandwidth
    assert one.bandwidth == pytest.approx(x16 / 4) and one.bandwidth == pytest.approx(
        7.88e9, rel=1e-3
    )
    assert eight.bandwidth == pytest.approx(8 * one.bandwidth)
    assert one.latency == tiers.NVME_LATENCY == 100e-6
    with pytest.raises(ValueError, match="n_drives"):
        tiers.nvme_tier("none", 1e12, n_drives=0)


def test_example_hierarchy_is_chapter_nines():
    """8 x H100: HBM at 8 x 3.35 TB/s, host DRAM over eight PCIe 5.0 x16 links (504 GB/s), a pool
    over eight ConnectX-7 ports (400 GB/s), eight NVMe drives (63 GB/s); 0.1, 1.5, 15, 60 TB."""
    levels = tiers.example_hierarchy()
    assert [t.name for t in levels] == ["HBM", "host DRAM", "remote pool", "local SSD"]
    assert [t.capacity_bytes for t in levels] == [100e9, 1.5e12, 15e12, 60e12]
    assert_allclose(
        [t.bandwidth / 1e9 for t in levels], [26_800, 504.1, 400, 63.0], rtol=1e-3
    )
    assert [t.latency for t in levels] == [0.0, 1e-6, 2e-6, 100e-6]


def test_example_hierarchy_leaves_out_empty_tiers_and_follows_its_arguments():
    """Lab 6's hierarchy: no SSD, and no pool at first; other links and GPUs scale the bandwidths."""
    levels = tiers.example_hierarchy(
        "h800",
        n_gpus=4,
        hbm_bytes=400e9,
        dram_bytes=2e12,
        dram_link="pcie4",
        pool_bytes=0,
        ssd_bytes=0,
    )
    assert [t.name for t in levels] == ["HBM", "host DRAM"]
    assert levels[0].bandwidth == pytest.approx(4 * 3.35e12)
    assert levels[1].bandwidth == pytest.approx(
        4 * hardware.get_link("pcie4").bandwidth
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dram_bytes": 50e9}, "dram_bytes"),
        ({"pool_bytes": 1e12}, "pool_bytes"),
        ({"ssd_bytes": 15e12}, "ssd_bytes"),
        ({"hbm_bytes": 0}, "hbm_bytes"),
        ({"pool_bytes": -1.0}, "pool_bytes"),
    ],
)
def test_example_hierarchy_rejects_capacities_that_do_not_grow(kwargs, match):
    """An inclusive hierarchy needs each tier larger than the faster ones; the message names the tier."""
    with pytest.raises(ValueError, match=match):
        tiers.example_hierarchy(**kwargs)


# ---------------------------------------------------------------------------
# cachesim
# ---------------------------------------------------------------------------


def _write(path: Path, requests: list[tuple[int, list[int]]]) -> Path:
    with open(path, "w") as fh:
        for i, (length, ids) in enumerate(requests):
            fh.write(
                json.dumps(
                    {
                        "timestamp": i,
                        "input_length": length,
                        "output_length": 1,
                        "hash_ids": ids,
                    }
                )
                + "\n"
            )
    return path


@pytest.fixture
def abc_trace(tmp_path):
    """Chapter 7's Question 3: A = [a, b, c], B = [a, d], C = [a, b, c, e], full 512-token blocks."""
    path = _write(
        tmp_path / "abc_trace.jsonl",
        [(1536, [0, 1, 2]), (1024, [0, 3]), (2048, [0, 1, 2, 4])],
    )
    return traces.load_trace(path)


def test_capacity_for_fraction_by_hand(abc_trace):
    """Hits and their running maxima: B's a (0); C's a, b, c (0, 2, 3). Four blocks, 2,048 tokens at
    most. Half of that needs the two blocks of distance 0: 1 block of cache; three quarters also
    C's b (distance 2): 3 blocks; all of it C's c (distance 3): 4 blocks."""
    assert cachesim.capacity_for_fraction(abc_trace, 0.5) == 512
    assert cachesim.capacity_for_fraction(abc_trace, 0.75) == 3 * 512
    assert cachesim.capacity_for_fraction(abc_trace, 1.0) == 4 * 512


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.99, 1.0])
def test_capacity_for_fraction_is_the_smallest_that_reaches_it(fraction):
    """On the bundled trace: the capacity reaches the share of the ceiling, one block less does not."""
    sd = cachesim.stack_distances(traces.load_trace("tiny"))
    ceiling = cachesim.hit_rate_curve(sd, [math.inf])[0]
    c = cachesim.capacity_for_fraction(sd, fraction)
    assert c % sd.block_tokens == 0
    assert cachesim.hit_rate_curve(sd, [c])[0] >= fraction * ceiling - 1e-12
    if c > sd.block_tokens:
        assert (
            cachesim.hit_rate_curve(sd, [c - sd.block_tokens])[0] < fraction * ceiling
        )


def test_capacity_for_fraction_edge_cases(tmp_path):
    """A trace without repeats needs no cache (0); the fraction must lie in (0, 1]."""
    fresh = traces.load_trace(
        _write(tmp_path / "fresh_trace.jsonl", [(512, [0]), (512, [1])])
    )
    assert cachesim.capacity_for_fraction(fresh, 1.0) == 0.0
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="fraction"):
            cachesim.capacity_for_fraction(fresh, bad)


def test_trace_prefill_flops_adds_every_prompt(abc_trace, tmp_path):
    """The no-cache prefill FLOP of a trace is the sum over its prompts, repeated lengths included."""
    expected = sum(llm.prefill_cost("llama-3-8b", n).flops for n in (1536, 1024, 2048))
    assert traces.trace_prefill_flops(abc_trace, "llama-3-8b") == pytest.approx(
        expected
    )
    twice = traces.load_trace(
        _write(tmp_path / "twice_trace.jsonl", [(100, [0]), (100, [0])])
    )
    assert traces.trace_prefill_flops(twice, "llama-3-8b") == pytest.approx(
        2 * llm.prefill_cost("llama-3-8b", 100).flops
    )
    with pytest.raises(TypeError, match="trace"):
        traces.trace_prefill_flops("tiny", "llama-3-8b")


def test_load_traces_returns_the_named_traces():
    """Available traces come back by name, in order (a single name is accepted as a string)."""
    loaded = traces.load_traces(["tiny"])
    assert list(loaded) == ["tiny"] and loaded["tiny"].n_requests == 16
    assert list(traces.load_traces("tiny")) == ["tiny"]
    with pytest.raises(ValueError, match="names"):
        traces.load_traces([])


def test_load_traces_falls_back_to_the_sample_with_a_warning(monkeypatch):
    """If an open trace cannot be loaded (offline), every cell still runs on the bundled sample,
    and the warning says why."""
    real = traces.load_trace

    def offline(name):
        if name == "tiny":
            return real(name)
        raise FileNotFoundError(f"trace {name!r} is not on this machine")

    monkeypatch.setattr(traces, "load_trace", offline)
    with pytest.warns(UserWarning, match="tiny"):
        loaded = traces.load_traces(["conversation", "synthetic"])
    assert list(loaded) == ["tiny"]


# ---------------------------------------------------------------------------
# kvtransfer
# ---------------------------------------------------------------------------


def test_fit_link_through_two_points():
    """1 kB in 1.1 µs and 11 kB in 2.1 µs: 10 kB per µs is 10 GB/s, and 1 kB takes 0.1 µs of it,
    so the latency is 1 µs; the order of the points does not matter."""
    link = kvtransfer.fit_link("test", [1000, 5000, 11000], [1.1e-6, 9.0, 2.1e-6])
    assert link.bandwidth == pytest.approx(10e9) and link.latency == pytest.approx(1e-6)
    again = kvtransfer.fit_link("test", [11000, 1000], [2.1e-6, 1.1e-6])
    assert again.bandwidth == pytest.approx(10e9) and again.latency == pytest.approx(
        1e-6
    )
    assert kvcache.transfer_time(llm.get_model("llama-2-7b"), 1, link) > link.latency


def test_fit_link_without_a_slope():
    """One point, or a larger transfer that was not slower: bandwidth = bytes / seconds, no latency."""
    one = kvtransfer.fit_link("one", [4e6], [1e-3])
    assert one.bandwidth == pytest.approx(4e9) and one.latency == 0.0
    flat = kvtransfer.fit_link("flat", [1e6, 4e6], [1e-3, 1e-3])
    assert flat.bandwidth == pytest.approx(4e9) and flat.latency == 0.0


@pytest.mark.parametrize(
    "nbytes, seconds",
    [([1, 2], [1.0]), ([], []), ([0, 1], [1.0, 2.0]), ([1, 2], [1.0, -1.0])],
)
def test_fit_link_rejects_bad_measurements(nbytes, seconds):
    """Unequal, empty, zero or negative measurements raise ValueError."""
    with pytest.raises(ValueError):
        kvtransfer.fit_link("bad", nbytes, seconds)


def test_measured_breakeven():
    """Transfer faster at 32 and 128 but slower at 64: it wins for good only from 128. Faster
    everywhere: from the shortest. Slower at the longest: never (None)."""
    lengths, recompute = [16, 32, 64, 128], [2.0, 2.0, 2.0, 2.0]
    assert kvtransfer.measured_breakeven(lengths, [5, 1, 3, 1], recompute) == 128
    assert kvtransfer.measured_breakeven(lengths, [1, 1, 1, 1], recompute) == 16
    assert kvtransfer.measured_breakeven(lengths, [1, 1, 1, 3], recompute) is None
    with pytest.raises(ValueError, match="increasing"):
        kvtransfer.measured_breakeven([32, 16], [1, 1], [2, 2])
    with pytest.raises(ValueError, match="equally long"):
        kvtransfer.measured_breakeven([16, 32], [1], [2, 2])


# ---------------------------------------------------------------------------
# tinygpt
# ---------------------------------------------------------------------------


def test_decode_inputs_head_is_the_first_sequences():
    """head(b) views the first b queries and cache rows; attention over it is the first b rows of
    the full batch's attention; b must be between 1 and the batch held."""
    torch = pytest.importorskip("torch")
    from helpers.tinygpt import TinyGPT, tiny_config

    model = TinyGPT(tiny_config())
    inputs = model.decode_inputs(4, model.random_kv_cache(4, 16))
    head = inputs.head(2)
    assert head.queries[0].shape[0] == 2 and head.cache[0][0].shape == (2, 2, 16, 32)
    assert (
        head.cache[0][0].data_ptr() == inputs.cache[0][0].data_ptr()
    )  # a view, not a copy
    torch.testing.assert_close(
        model.decode_attention(head), model.decode_attention(inputs)[:2]
    )
    for bad in (0, 5):
        with pytest.raises(ValueError, match="batch"):
            inputs.head(bad)


# ---------------------------------------------------------------------------
# the one largest batch
# ---------------------------------------------------------------------------


def test_one_largest_batch_for_llama3_70b_on_8xh100():
    """8 x 80 GiB x 0.9 = 618.5 GB, less 141.1 GB of weights, leaves 477.4 GB; a 4,097-token
    sequence holds 1.3425 GB of KV, so 355 fit, however the quantity is reached."""
    free = inference.free_kv_bytes("llama-3-70b", "H100", n_gpus=8)
    assert free == pytest.approx(8 * 80 * 2**30 * 0.9 - llm.weight_bytes("llama-3-70b"))
    assert free / 1e9 == pytest.approx(477.4, abs=0.1)
    assert inference.max_decode_batch("llama-3-70b", 4096, "H100", n_gpus=8) == 355
    slo = inference.max_batch_under_slo(
        "llama-3-70b", 4096, "H100", tbt_s=0.05, n_gpus=8
    )
    assert slo.batch == 355 and slo.limited_by == "memory"
