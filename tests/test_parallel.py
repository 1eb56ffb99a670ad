"""Tests for helpers.parallel: collectives against their closed forms and a published nccl-tests run."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import hardware, parallel

GIB = 2**30


def test_ring_allreduce_1gib_8_gpus_nvlink4_by_hand():
    """Ring all-reduce of 1 GiB over 8 H100s on NVLink 4 (450 GB/s per direction, 1 us latency).

    Bandwidth term 2*(8-1)/8 * 2**30 / 450e9 = 1.75 * 1073741824 / 450e9 = 4.17566e-3 s;
    latency term 2*(8-1) steps * 1e-6 s = 14e-6 s; total 4.18966e-3 s.
    """
    t = parallel.allreduce_time(GIB, 8, "NVLink 4 (H100)")
    assert t == pytest.approx(1.75 * 2**30 / 450e9 + 14e-6, rel=1e-12)
    assert t == pytest.approx(4.18966e-3, rel=1e-5)


def test_tree_allreduce_has_log_steps_and_the_same_bandwidth_term():
    """Tree on 8 ranks: 2*ceil(log2 8) = 6 latency steps instead of 14; bytes unchanged.

    16 KiB on NVLink 4: ring 14e-6 + 1.75*16384/450e9 = 14.0637e-6 s; tree 6e-6 + 0.0637e-6 s.
    """
    ring = parallel.allreduce_time(16384, 8, "nvlink4")
    tree = parallel.allreduce_time(16384, 8, "nvlink4", algorithm="tree")
    bw = 1.75 * 16384 / 450e9
    assert ring == pytest.approx(14e-6 + bw)
    assert tree == pytest.approx(6e-6 + bw)


def test_allgather_reducescatter_alltoall_closed_forms():
    """4 ranks on a 400 Gb/s ConnectX-7 (50e9 B/s, 2 us), S = 1e9 bytes.

    ring all-gather = reduce-scatter = all-to-all: 3*2e-6 + 3/4*1e9/50e9 = 6e-6 + 0.015 s;
    tree all-gather: 2*2e-6 + 0.015 s; Bruck all-to-all: 2*2e-6 + 2/2*1e9/50e9 = 4e-6 + 0.02 s.
    """
    link = "cx7"
    for f in (
        parallel.allgather_time,
        parallel.reducescatter_time,
        parallel.alltoall_time,
    ):
        assert f(1e9, 4, link) == pytest.approx(6e-6 + 0.015)
    assert parallel.allgather_time(1e9, 4, link, algorithm="tree") == pytest.approx(
        4e-6 + 0.015
    )
    assert parallel.reducescatter_time(1e9, 4, link, algorithm="tree") == pytest.approx(
        4e-6 + 0.015
    )
    assert parallel.alltoall_time(1e9, 4, link, algorithm="tree") == pytest.approx(
        4e-6 + 0.02
    )


def test_allreduce_is_a_reducescatter_then_an_allgather():
    """Ring all-reduce = ring reduce-scatter + ring all-gather of the same array (Thakur et al. 2005)."""
    for n in (2, 3, 8, 64):
        for link in hardware.links():
            s = 3.7e8
            assert parallel.allreduce_time(s, n, link) == pytest.approx(
                parallel.reducescatter_time(s, n, link)
                + parallel.allgather_time(s, n, link)
            )


def test_one_rank_costs_nothing_and_latency_override():
    assert parallel.allreduce_time(GIB, 1, "nvlink4") == 0.0
    assert parallel.allreduce_time(0, 8, "nvlink4", latency=5e-6) == pytest.approx(
        70e-6
    )


def test_published_nccl_tests_bus_bandwidth_row():
    """nccl-tests all_reduce_perf on 16 H100s (2 nodes, GCP A3 Mega), published output
    (github.com/lessizzmore/create-a3mega-ztan-fork, file ``ztan-NCCL-test-result``):
    size 8589934592 B, out-of-place time 47535 us, algbw 180.71 GB/s, busbw 338.82 GB/s.

    By the definition: 8589934592 / 47535e-6 = 180.71e9; * 2*15/16 = 338.8e9.
    """
    busbw = parallel.bus_bandwidth("allreduce", 8589934592, 16, 47535e-6)
    assert busbw == pytest.approx(338.82e9, rel=2e-4)
    # The model is a lower bound on time: with the bus bandwidth as the link's B,
    # the model's ring time (latency aside) equals the measured time.
    link = hardware.Link("measured busbw", busbw, 0.0, "nccl-tests")
    assert parallel.allreduce_time(8589934592, 16, link) == pytest.approx(
        47535e-6, rel=2e-4
    )
    # and the measured bus bandwidth stays under the NVLink 4 per-direction peak each H100 has.
    assert busbw < hardware.get_link("nvlink4").bandwidth


def test_model_bus_bandwidth_approaches_the_link():
    """busbw of the modelled time -> B as S grows (latency amortised), and is below B always."""
    link = hardware.get_link("nvlink4")
    for coll in parallel.COLLECTIVES[:3]:
        prev = 0.0
        for s in (1e3, 1e6, 1e9, 1e12):
            t = parallel.collective_time(coll, s, 8, link)
            bb = parallel.bus_bandwidth(coll, s, 8, t)
            assert prev < bb < link.bandwidth
            prev = bb
        assert bb == pytest.approx(link.bandwidth, rel=1e-3)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(nbytes=-1, n=8, link="nvlink4"), "nbytes"),
        (dict(nbytes=1, n=0, link="nvlink4"), "n"),
        (dict(nbytes=1, n=8, link="nvlink4", algorithm="butterfly"), "algorithm"),
        (dict(nbytes=1, n=8, link="nvlink4", latency=-1.0), "latency"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        parallel.allreduce_time(**kwargs)


def test_unknown_link_and_collective():
    with pytest.raises(KeyError, match="link"):
        parallel.allgather_time(1, 2, "carrier pigeon")
    with pytest.raises(ValueError, match="collective"):
        parallel.collective_time("broadcast", 1, 2, "nvlink4")
    with pytest.raises(ValueError, match="n"):
        parallel.bus_bandwidth("allreduce", 1, 1, 1.0)


@given(
    s=st.floats(1.0, 1e12),
    n=st.integers(2, 1024),
    coll=st.sampled_from(parallel.COLLECTIVES),
    alg=st.sampled_from(parallel.ALGORITHMS),
)
def test_time_grows_with_bytes_and_never_beats_the_bandwidth_bound(s, n, coll, alg):
    """Never faster than nccl-tests' bound S/B * factor; more bytes never take less time."""
    link = hardware.get_link("nvlink4")
    t = parallel.collective_time(coll, s, n, link, algorithm=alg)
    bound = s / link.bandwidth * parallel._BUS_FACTOR[coll](n)
    assert t >= bound * (1 - 1e-12)
    assert parallel.collective_time(coll, 2 * s, n, link, algorithm=alg) > t
    assert math.isfinite(t)
