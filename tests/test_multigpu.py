"""Tests for :mod:`helpers.multigpu`: the collectives of each parallelism, sized by a model.

Expected values are derived by hand in each docstring from the model's shapes (Llama-3-70B: 80 layers,
d_model 8192, 8 KV heads of 128; DeepSeek-V3: d_model 7168, top-8 experts, 58 MoE layers) and the
catalog's links (NVLink 4: 450 GB/s and 1 us per step; ConnectX-7: 50 GB/s and 2 us).
"""

from __future__ import annotations

import pytest
from numpy.testing import assert_allclose

from helpers import inference, multigpu


def test_activation_bytes_by_hand():
    """8192 * 2 = 16,384 bytes per token in bf16; 355 tokens: 5,816,320 bytes."""
    assert multigpu.activation_bytes("llama-3-70b", 1) == 16_384
    assert multigpu.activation_bytes("llama-3-70b", 355) == 5_816_320


def test_tp_prefill_by_hand():
    """4,096 tokens, TP-8, ring over NVLink 4: 160 all-reduces of 67.1 MB,
    each 14 * 1 us + 1.75 * 67,108,864 / 450e9 = 274.97 us: 44.0 ms, 60 % of the 73.6 ms bound."""
    cost = multigpu.tp_prefill("llama-3-70b", 4096, "H100", 8, "nvlink4")
    each = 14e-6 + 1.75 * 4096 * 16384 / 450e9
    assert_allclose(cost.comm_s, 160 * each)
    assert_allclose(
        cost.compute_s,
        inference.prefill_time("llama-3-70b", 4096, "H100", n_gpus=8, link=None),
    )
    assert_allclose(cost.share, 160 * each / cost.compute_s)
    assert cost.serial_s == cost.compute_s + cost.comm_s
    assert cost.overlapped_s == cost.compute_s


def test_tp_decode_tree_has_fewer_steps():
    """Batch 355, TP-8: ring 14 latency steps per all-reduce, tree 2 * 3 = 6; same bandwidth term,
    so the difference is 160 * 8 * 1 us = 1.28 ms."""
    ring = multigpu.tp_decode("llama-3-70b", 4096, "H100", 8, "nvlink4", batch=355)
    tree = multigpu.tp_decode(
        "llama-3-70b", 4096, "H100", 8, "nvlink4", batch=355, algorithm="tree"
    )
    assert_allclose(ring.comm_s - tree.comm_s, 160 * 8 * 1e-6)
    assert_allclose(ring.comm_s, 160 * (14e-6 + 1.75 * 5_816_320 / 450e9))


def test_tp_over_one_gpu_costs_nothing():
    """n = 1: no all-reduce."""
    assert multigpu.tp_prefill("llama-3-70b", 4096, "H100", 1, "nvlink4").comm_s == 0.0


def test_ep_alltoall_matches_deepep_setting_by_hand():
    """DeepSeek-V3, 128 tokens per GPU, top-8, d 7168: dispatch in fp8 moves 7,340,032 bytes per GPU,
    combine in bf16 twice that. At EP 256 over a 50 GB/s NIC with no latency term:
    255/256 * 7,340,032 / 50e9 = 146.2 us and 292.5 us (DeepEP README, H800 + CX7: 194 and 360 us measured)."""
    dispatch, combine = multigpu.ep_alltoall_times(
        "deepseek-v3", 128, 256, "cx7", latency=0
    )
    assert_allclose(dispatch, 255 / 256 * 7_340_032 / 50e9)
    assert_allclose(combine, 2 * dispatch)
    assert dispatch < 194e-6 and combine < 360e-6  # a bound, below the measurement


def test_cp_comm_by_hand():
    """Llama-3-70B keeps 4,096 B per token per layer; 131,072 tokens over 8 GPUs on ConnectX-7, ring all-gather:
    80 * (7 * 2 us + 7/8 * 131072 * 4096 / 50e9) = 80 * 9.409 ms = 0.7527 s."""
    t = multigpu.cp_comm_time("llama-3-70b", 131_072, 8, "cx7")
    assert_allclose(t, 80 * (7 * 2e-6 + 7 / 8 * 131_072 * 4096 / 50e9))


def test_cp_share_falls_with_prompt_length():
    """Traffic is linear in the prompt, attention quadratic: the share at 128 k tokens is below the share at 8 k."""
    short = multigpu.cp_prefill("llama-3-70b", 8192, "H100", 8, "cx7")
    long = multigpu.cp_prefill("llama-3-70b", 131_072, "H100", 8, "cx7")
    assert long.share < short.share


def test_pp_bubble_by_hand():
    """(p - 1) / (m + p - 1): 4 stages, 1 micro-batch 3/4; 16 micro-batches 3/19; 1 stage none."""
    assert multigpu.pp_bubble_fraction(4, 1) == 0.75
    assert multigpu.pp_bubble_fraction(4, 16) == 3 / 19
    assert multigpu.pp_bubble_fraction(1, 5) == 0.0


def test_bad_input_named():
    """Bad sizes, counts, links and a dense model under EP name what is wrong."""
    with pytest.raises(ValueError, match="tokens"):
        multigpu.activation_bytes("llama-3-70b", 0)
    with pytest.raises(ValueError, match="n_gpus"):
        multigpu.tp_prefill("llama-3-70b", 16, "H100", 0, "nvlink4")
    with pytest.raises(KeyError, match="link"):
        multigpu.tp_prefill("llama-3-70b", 16, "H100", 8, "carrier pigeon")
    with pytest.raises(ValueError, match="algorithm"):
        multigpu.tp_decode("llama-3-70b", 16, "H100", 8, "nvlink4", algorithm="star")
    with pytest.raises(ValueError, match="mixture-of-experts"):
        multigpu.ep_alltoall_times("llama-3-70b", 128, 8, "cx7")
    with pytest.raises(ValueError, match="tokens_per_device"):
        multigpu.ep_alltoall_times("deepseek-v3", 0, 8, "cx7")
    with pytest.raises(ValueError, match="stages"):
        multigpu.pp_bubble_fraction(0, 4)
    with pytest.raises(ValueError, match="micro_batches"):
        multigpu.pp_bubble_fraction(4, 0)


def test_deepep_measurements_against_the_bound():
    """DeepEP README (H800 + CX7, 8 GPUs per node): at EP 64 and beyond every measured dispatch and combine is
    slower than the all-over-the-NIC bound ((n-1)/n * 7,340,032 / 50e9 = 144.5 us dispatch at EP 64). At EP 8
    the dispatch (77 us) beats it (7/8 * 7,340,032 / 50e9 = 128 us): the README's note that the kernels use
    NVLink inside a node explains it; with only the (n - 8)/n of the bytes bound for other nodes on the NIC,
    the bound is below every measurement from EP 16 on (EP 16: 8/16 * 7,340,032 / 50e9 = 73 us < 118 us)."""
    table = multigpu.DEEPEP_LOW_LATENCY_S
    for ep, (dispatch, combine) in table.items():
        bound_d, bound_c = multigpu.ep_alltoall_times(
            "deepseek-v3", 128, ep, "cx7", latency=0
        )
        if ep >= 64:
            assert dispatch > bound_d and combine > bound_c
        if ep >= 16:
            off_node = (ep - 8) / ep
            assert dispatch > off_node * 7_340_032 / 50e9
            assert combine > off_node * 2 * 7_340_032 / 50e9
    assert table[8][0] < 7 / 8 * 7_340_032 / 50e9


def test_remote_servers_by_hand_for_two_groups_per_server():
    """DeepSeek-V3 over four servers, two of its eight groups each, 4 groups chosen, 8 of their 128 experts.

    A server is reached unless both its groups are left out (15 of the 70
    choices of 4 groups), or one is chosen and none of the 8 experts falls
    in its 32 (of 128), or both are chosen and none falls in their 64.
    """
    from math import comb

    none_in = comb(6, 4) / comb(8, 4)
    one_in = comb(2, 1) * comb(6, 3) / comb(8, 4)
    both_in = comb(6, 2) / comb(8, 4)
    reached = one_in * (1 - comb(96, 8) / comb(128, 8)) + both_in * (
        1 - comb(64, 8) / comb(128, 8)
    )
    assert none_in + one_in + both_in == pytest.approx(1)
    got = multigpu.remote_servers_per_token("deepseek-v3", 32)
    assert got == pytest.approx(4 * reached * 3 / 4)


def test_remote_servers_never_exceed_top_k_or_the_other_servers():
    last = 0.0
    for n in (16, 32, 64, 128, 256):
        r = multigpu.remote_servers_per_token("deepseek-v3", n)
        assert 0 < r <= min(8, n // 8 - 1)
        assert r > last  # more servers, more of them reached
        last = r
    assert multigpu.remote_servers_per_token("deepseek-v3", 8) == 0.0
    # without group limits (Qwen3's router), a token reaches more servers than V3's
    assert multigpu.remote_servers_per_token("qwen3-235b-a22b", 64) > (
        multigpu.remote_servers_per_token("deepseek-v3", 64)
    )


def test_prefill_alltoall_sends_one_copy_per_server():
    d, c = multigpu.ep_prefill_alltoall_times(
        "deepseek-v3", 16384, 32, "cx7", "nvlink4"
    )
    per = multigpu.remote_servers_per_token("deepseek-v3", 32)
    from helpers.hardware import get_link

    cx7 = get_link("cx7")
    assert d == pytest.approx(16384 * per * 7168 / cx7.bandwidth)
    assert c == pytest.approx(2 * d)
    expert_d, _ = multigpu.ep_alltoall_times("deepseek-v3", 16384, 32, "cx7", latency=0)
    assert d < expert_d / 3  # 2.2 copies against 8 x 31/32
    with pytest.raises(ValueError, match="gpus_per_server"):
        multigpu.remote_servers_per_token("deepseek-v3", 20)
    with pytest.raises(KeyError, match="link"):
        multigpu.ep_prefill_alltoall_times("deepseek-v3", 16, 32, "cx9", "nvlink4")
    with pytest.raises(ValueError, match="mixture-of-experts"):
        multigpu.remote_servers_per_token("llama-3-70b", 32)


def test_group_limited_routing_is_validated():
    from helpers._models import MixtureOfExperts

    with pytest.raises(ValueError, match="n_groups"):
        MixtureOfExperts(n_routed=256, top_k=8, d_ff_expert=2048, n_groups=7)
    with pytest.raises(ValueError, match="topk_groups"):
        MixtureOfExperts(
            n_routed=256, top_k=8, d_ff_expert=2048, n_groups=8, topk_groups=9
        )
    with pytest.raises(ValueError, match="top_k"):
        MixtureOfExperts(
            n_routed=16, top_k=8, d_ff_expert=64, n_groups=8, topk_groups=2
        )
