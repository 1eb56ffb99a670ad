"""Tests for :mod:`helpers.queueing`: DistServe's M/D/1 wait in front of a prefill instance.

Reference: Zhong et al., DistServe, OSDI'24 (zhong2024distserve), §3.1, Eq. 1:
Avg_TTFT = D + R D^2 / (2 (1 - R D)), with R D the utilisation.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import papers, queueing


def test_wait_by_hand():
    """Hand-derived: rho = 0.5 waits D/2; rho = 0.8 waits 2 D; rho = 0.9 waits 4.5 D."""
    assert queueing.md1_mean_wait(0.2, 0.5) == pytest.approx(0.1)
    assert queueing.md1_mean_wait(1.0, 0.8) == pytest.approx(2.0)
    assert queueing.md1_mean_wait(2.0, 0.9) == pytest.approx(9.0)


def test_wait_is_distserve_eq1():
    """The wait is Eq. 1's second term R D^2 / (2 (1 - R D)) for a rate R and service time D."""
    rate, service = 5.0, 0.1  # requests/s, s: rho = 0.5
    eq1 = rate * service**2 / (2 * (1 - rate * service))
    assert queueing.md1_mean_wait(service, rate * service) == pytest.approx(eq1)


def test_no_load_no_wait_and_full_load_diverges():
    """rho -> 0 waits nothing; the wait grows without bound as rho -> 1, and rho = 1 raises."""
    assert queueing.md1_mean_wait(0.3, 0.0) == 0.0
    waits = [queueing.md1_mean_wait(0.3, 1 - 10.0**-k) for k in range(1, 7)]
    assert all(b > 10 * a * 0.9 for a, b in zip(waits, waits[1:]))
    assert waits[-1] > 1e4
    with pytest.raises(ValueError, match="utilisation"):
        queueing.md1_mean_wait(0.3, 1.0)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"service_s": 0.0, "utilisation": 0.5}, "service_s"),
        ({"service_s": -1.0, "utilisation": 0.5}, "service_s"),
        ({"service_s": math.nan, "utilisation": 0.5}, "service_s"),
        ({"service_s": 0.1, "utilisation": -0.1}, "utilisation"),
        ({"service_s": 0.1, "utilisation": 1.5}, "utilisation"),
    ],
)
def test_bad_input_to_the_wait_names_the_parameter(kwargs, name):
    """Bad numbers raise ValueError naming the parameter."""
    with pytest.raises(ValueError, match=name):
        queueing.md1_mean_wait(**kwargs)


def test_max_utilisation_by_hand():
    """T = 2 D allows rho = 2/3; T = D allows none; T = 11 D allows 20/21."""
    assert queueing.md1_max_utilisation(0.2, 0.4) == pytest.approx(2 / 3)
    assert queueing.md1_max_utilisation(0.2, 0.2) == 0.0
    assert queueing.md1_max_utilisation(1.0, 11.0) == pytest.approx(20 / 21)


@given(
    st.floats(min_value=1e-3, max_value=10.0), st.floats(min_value=1.0, max_value=1e3)
)
def test_max_utilisation_inverts_the_wait(service, ratio):
    """Property: at the utilisation returned, service plus mean wait is the target, and rho < 1."""
    target = service * ratio
    rho = queueing.md1_max_utilisation(service, target)
    assert 0 <= rho < 1
    assert service + queueing.md1_mean_wait(service, rho) == pytest.approx(
        target, rel=1e-9
    )


def test_max_utilisation_rejects_a_target_below_one_prefill():
    """A target shorter than the service time cannot be met at any load; bad numbers name the parameter."""
    with pytest.raises(ValueError, match="ttft_target_s"):
        queueing.md1_max_utilisation(0.5, 0.4)
    with pytest.raises(ValueError, match="service_s"):
        queueing.md1_max_utilisation(0.0, 0.4)
    with pytest.raises(ValueError, match="ttft_target_s"):
        queueing.md1_max_utilisation(0.1, -1.0)


def test_distserve_fig1_figures():
    """DistServe §1 and Fig. 1: two prefill instances at 5.6 req/s feed one decode instance at 10 req/s,
    10 req/s on 3 GPUs = 3.3 per GPU, about 2.1 times the co-located 1.6."""
    fig1 = papers.DISTSERVE_FIG1_GOODPUT
    pair = min(2 * fig1["prefill_only_rps"], fig1["decode_only_rps"]) / 3
    assert pair == pytest.approx(3.3, abs=0.05)
    assert pair / fig1["colocated_rps"] == pytest.approx(2.1, abs=0.05)
    assert fig1["prompt_tokens"] == 512 and fig1["output_tokens"] == 64
    assert fig1["ttft_slo_s"] == 0.4 and fig1["tpot_slo_s"] == 0.04


# ---------------------------------------------------------------------------
# M/G/1: prompts of unequal length
# ---------------------------------------------------------------------------


def _simulated_p90(services, rate, n=60_000, seed=0):
    """p90 time in system of a simulated FCFS single-server queue (the check, not the model)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / rate, n))
    service = rng.choice(np.asarray(services, dtype=float), n)
    free, times = 0.0, np.empty(n)
    for i in range(n):
        start = max(arrivals[i], free)
        free = start + service[i]
        times[i] = free - arrivals[i]
    return float(np.quantile(times[n // 50 :], 0.9))


def test_one_service_time_is_the_md1_closed_form():
    """With every request the same, the M/G/1 quantile is D plus the M/D/1 wait quantile."""
    for rho in (0.05, 0.3, 0.8, 0.95):
        want = 0.4 + queueing.md1_wait_quantile(0.4, rho, 0.9)
        got = queueing.mg1_sojourn_quantile([0.4, 0.4, 0.4], rho / 0.4, 0.9)
        assert got == pytest.approx(want)
    assert queueing.mg1_max_rate(0.2, 0.4) == pytest.approx(
        queueing.md1_max_utilisation_quantile(0.2, 0.4) / 0.2, rel=1e-6
    )


@pytest.mark.parametrize(
    "services",
    [
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 5.5],  # one long prompt in ten
        [0.5 + 0.02 * k for k in range(51)],  # a narrow spread
        [0.05 * 1.08**k for k in range(60)],  # a long geometric tail, CV about 1.2
    ],
)
@pytest.mark.parametrize("rho", [0.3, 0.6, 0.85])
def test_the_quantile_matches_a_simulated_queue(services, rho):
    """Within 8 % of a simulated FCFS queue on three spreads at three loads (measured: within 5 %)."""
    rate = rho / (sum(services) / len(services))
    model = queueing.mg1_sojourn_quantile(services, rate, 0.9)
    assert model == pytest.approx(_simulated_p90(services, rate), rel=0.08)


def test_a_spread_costs_more_than_its_mean_and_the_mean_alone_is_far_off():
    """A long prompt in ten: the p90 is over twice what equal prompts of the same mean give."""
    services = [0.5] * 9 + [5.5]  # mean 1 s
    for rho in (0.3, 0.6, 0.85):
        spread = queueing.mg1_sojourn_quantile(services, rho, 0.9)
        equal = queueing.mg1_sojourn_quantile(1.0, rho, 0.9)
        assert spread > 2 * equal
    assert queueing.mg1_max_rate(services, 10.0) < queueing.mg1_max_rate(1.0, 10.0)


def test_the_max_rate_inverts_the_quantile_and_is_zero_when_service_alone_misses():
    services = [0.1, 0.2, 0.4, 1.6]
    rate = queueing.mg1_max_rate(services, 3.0)
    assert queueing.mg1_sojourn_quantile(services, rate, 0.9) == pytest.approx(
        3.0, rel=1e-6
    )
    assert (
        queueing.mg1_max_rate(services, 1.0) == 0.0
    )  # a tenth of requests need 1.6 s alone
    assert queueing.mg1_sojourn_quantile(services, 0.0, 0.9) == 1.6
    # servers: each of two ranks serves its own prompt, so the queue drains twice as fast
    assert queueing.mg1_max_rate(services, 3.0, servers=2) > rate
    assert queueing.mg1_sojourn_quantile(services, 10.0, 0.9) == math.inf


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: queueing.mg1_sojourn_quantile([], 1.0, 0.9), "service_s"),
        (lambda: queueing.mg1_sojourn_quantile([0.1, -1.0], 1.0, 0.9), "service_s"),
        (lambda: queueing.mg1_sojourn_quantile([0.1], -1.0, 0.9), "rate"),
        (lambda: queueing.mg1_sojourn_quantile([0.1], 1.0, 1.5), "quantile"),
        (lambda: queueing.mg1_sojourn_quantile([0.1], 1.0, 0.9, servers=0), "servers"),
        (lambda: queueing.mg1_max_rate([0.1], 0.0), "target_s"),
    ],
)
def test_bad_input_to_the_spread_queue_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
