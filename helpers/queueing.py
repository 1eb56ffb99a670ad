"""Queueing in front of a prefill instance: the M/D/1 wait that a TTFT target leaves room for.

DistServe (Zhong et al., OSDI'24, §3.1, Eq. 1) models a prefill instance as an
M/D/1 queue: requests arrive at random (Poisson, rate ``R``), each takes the
same service time ``D`` (uniform prompts, no batching, first come first
served), one server. The mean time to first token is the service time plus
the mean wait,

    TTFT = D + R D^2 / (2 (1 - R D)) = D + rho D / (2 (1 - rho)),

with ``rho = R D`` the instance's utilisation (the Pollaczek-Khinchine
formula with a service time of zero variance). The wait grows without bound
as ``rho -> 1``, so a TTFT target caps how busy a prefill instance may be.

The formula lives in :func:`md1_mean_wait`; :func:`md1_max_utilisation`
inverts it for a target. Units: seconds; utilisations are fractions.

Prompts are not all the same length, and a percentile target is set by the
long ones twice over: a long prompt's own prefill is long, and the prompts
behind it wait for it. :func:`mg1_sojourn_quantile` prices both from a
sample of service times (M/G/1: the Pollaczek-Khinchine mean wait
``R E[S^2] / (2 (1 - rho))``, the same tail shape as
:func:`md1_wait_quantile`, and each request's own service added), and
:func:`mg1_max_rate` inverts it for a target. With one service time they
give the M/D/1 values exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import _args


def md1_mean_wait(service_s: float, utilisation: float) -> float:
    """Mean seconds a request waits in an M/D/1 queue before its service starts.

    ``W = rho * D / (2 (1 - rho))`` (DistServe, OSDI'24, §3.1, Eq. 1, whose
    second term is ``R D^2 / (2 (1 - R D))`` with ``rho = R D``). The mean TTFT
    of a prefill instance is ``service_s + md1_mean_wait(service_s, rho)``.

    Parameters
    ----------
    service_s : float
        Service time of every request, seconds (> 0): one prompt's prefill.
    utilisation : float
        ``rho``, arrival rate times service time, in [0, 1). At 1 and above
        the queue grows without bound, and this raises ``ValueError``.

    Returns
    -------
    float
        Mean wait in seconds (0 at ``rho = 0``).

    Examples
    --------
    At half load a request waits half a service time on average:

    >>> md1_mean_wait(0.2, 0.5)
    0.1
    """
    service_s = _args.positive("service_s", service_s)
    rho = _args.fraction_below_one("utilisation", utilisation)
    return rho * service_s / (2 * (1 - rho))


def md1_max_utilisation(service_s: float, ttft_target_s: float) -> float:
    """Highest utilisation at which an M/D/1 prefill instance's mean TTFT meets ``ttft_target_s``.

    Solves ``D + md1_mean_wait(D, rho) = T`` for ``rho``:
    ``rho = 2 (T - D) / (2 T - D)``. It is 0 when the target equals the
    service time (no room to wait) and tends to 1 as the target grows.

    Parameters
    ----------
    service_s : float
        ``D``, seconds of one prompt's prefill (> 0).
    ttft_target_s : float
        ``T``, the mean TTFT allowed, seconds (>= ``service_s``).

    Examples
    --------
    A target of twice the service time allows two-thirds load:

    >>> round(md1_max_utilisation(0.2, 0.4), 4)
    0.6667
    """
    service_s = _args.positive("service_s", service_s)
    ttft_target_s = _args.positive("ttft_target_s", ttft_target_s)
    if ttft_target_s < service_s:
        raise ValueError(
            f"ttft_target_s must be at least service_s ({service_s} s): "
            f"no load meets a target below one prefill, got {ttft_target_s}"
        )
    return 2 * (ttft_target_s - service_s) / (2 * ttft_target_s - service_s)


def md1_wait_quantile(service_s: float, utilisation: float, quantile: float) -> float:
    """Seconds of waiting that a share ``quantile`` of requests does not exceed (approximation).

    A request waits at all with probability ``rho`` (the server is busy when
    it arrives); the waits of those that do are taken as exponential with
    mean ``md1_mean_wait / rho``, Kingman's heavy-traffic shape (exact for
    M/M/1, close for M/D/1 near saturation, where a TTFT target bites). So
    ``P(W > t) = rho * exp(-t * rho / W_mean)`` and the ``q`` quantile is
    ``(W_mean / rho) * ln(rho / (1 - q))`` when ``rho > 1 - q``, else 0.

    Parameters
    ----------
    service_s : float
        ``D``, seconds of service (> 0).
    utilisation : float
        ``rho`` in [0, 1).
    quantile : float
        ``q`` in (0, 1), e.g. 0.9 for a p90 target.

    Examples
    --------
    At 80 % load, one request in ten waits more than 5.2 service times:

    >>> round(md1_wait_quantile(1.0, 0.8, 0.9), 2)
    5.2
    """
    mean = md1_mean_wait(service_s, utilisation)
    q = _args.fraction_below_one("quantile", quantile)
    if q <= 0:
        raise ValueError(f"quantile must be in (0, 1), got {quantile}")
    rho = float(utilisation)
    if rho <= 1 - q:
        return 0.0
    return (mean / rho) * math.log(rho / (1 - q))


def md1_max_utilisation_quantile(
    service_s: float, ttft_target_s: float, *, quantile: float = 0.9
) -> float:
    """Highest utilisation at which ``D + md1_wait_quantile(D, rho, q)`` stays within ``ttft_target_s``.

    The quantile counterpart of :func:`md1_max_utilisation`, found by
    bisection (the quantile grows with ``rho``). 0 when the target is below
    one service time.

    >>> round(md1_max_utilisation_quantile(0.2, 0.4, quantile=0.9), 2)
    0.36
    """
    service_s = _args.positive("service_s", service_s)
    ttft_target_s = _args.positive("ttft_target_s", ttft_target_s)
    if ttft_target_s < service_s:
        return 0.0
    lo, hi = 0.0, 0.999999
    for _ in range(60):
        mid = (lo + hi) / 2
        if service_s + md1_wait_quantile(service_s, mid, quantile) <= ttft_target_s:
            lo = mid
        else:
            hi = mid
    return lo


def _services(service_s: Sequence[float] | np.ndarray | float) -> np.ndarray:
    s = np.atleast_1d(np.asarray(service_s, dtype=float))
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(
            f"service_s must be one or more positive, finite seconds, got {service_s!r}"
        )
    return s


def mg1_sojourn_quantile(
    service_s: Sequence[float] | np.ndarray | float,
    rate: float,
    quantile: float,
    *,
    servers: int = 1,
) -> float:
    """Seconds from arrival to the end of service that a share ``quantile`` of requests does not exceed.

    An M/G/1 queue: Poisson arrivals at ``rate`` per second, each request's
    service drawn from ``service_s`` (equally likely values: a trace's
    prefill times, or a sample of them). The mean wait is the
    Pollaczek-Khinchine ``W = R E[S^2] / (2 (1 - rho))`` with
    ``rho = R E[S]`` (Kleinrock, *Queueing Systems*, Vol. I, 1975, "The Queue M/G/1"); the
    wait's tail takes the shape :func:`md1_wait_quantile` takes,
    ``P(wait > t) = rho exp(-t rho / W)``. A request's time is its wait plus
    its own service, the wait independent of it, so
    ``P(T > x) = mean_i P(wait > x - S_i)``, solved for ``1 - quantile`` by
    bisection. With a single service time this is
    ``D + md1_wait_quantile(D, rho, quantile)``.

    Parameters
    ----------
    service_s : float or sequence of float
        Seconds of service, each > 0.
    rate : float
        Arrivals per second (>= 0); ``rho`` must stay below 1.
    quantile : float
        In (0, 1), e.g. 0.9 for a p90 target.
    servers : int
        Prompts an instance serves at once, each in its own service time
        (expert-parallel ranks): the queue is taken as one server of service
        ``S / servers``, the approximation the planner uses for equal prompts.

    Returns
    -------
    float
        Seconds; ``inf`` when ``rho >= 1``.

    Examples
    --------
    One service time gives the M/D/1 value; a spread of the same mean gives more:

    >>> round(mg1_sojourn_quantile(1.0, 0.8, 0.9), 2)
    6.2
    >>> mg1_sojourn_quantile([0.5, 0.5, 0.5, 2.5], 0.8, 0.9) > 6.2
    True
    """
    s = _services(service_s)
    rate = _args.non_negative("rate", rate)
    servers = _args.positive_int("servers", servers)
    q = _args.fraction_below_one("quantile", quantile)
    if q <= 0:
        raise ValueError(f"quantile must be in (0, 1), got {quantile}")
    queue = s / servers
    rho = rate * float(queue.mean())
    if rho >= 1:
        return math.inf
    if s.size == 1 or float(s.min()) == float(s.max()):
        d = float(s[0])
        if rho <= 0:
            return d
        return d + md1_wait_quantile(float(queue[0]), rho, q)
    if rho <= 0:
        return float(np.quantile(s, q, method="inverted_cdf"))
    mean_wait = rate * float((queue**2).mean()) / (2 * (1 - rho))
    decay = rho / mean_wait  # per second

    def beyond(x: float) -> float:
        t = x - s
        return float(
            np.where(t < 0, 1.0, rho * np.exp(-decay * np.maximum(t, 0))).mean()
        )

    lo, hi = (
        float(s.min()),
        float(s.max()) + mean_wait / rho * math.log(rho / (1 - q)) + 1e-12,
    )
    hi = max(hi, lo)
    while beyond(hi) > 1 - q:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if beyond(mid) > 1 - q:
            lo = mid
        else:
            hi = mid
    return hi


def mg1_max_rate(
    service_s: Sequence[float] | np.ndarray | float,
    target_s: float,
    *,
    quantile: float = 0.9,
    servers: int = 1,
) -> float:
    """Highest arrival rate (per second) at which :func:`mg1_sojourn_quantile` stays within ``target_s``.

    0 when even an empty queue misses the target (the ``quantile`` of the
    services alone exceeds it). Found by bisection: the quantile grows with
    the rate.

    >>> round(mg1_max_rate(0.2, 0.4, quantile=0.9), 2)
    1.8
    """
    s = _services(service_s)
    target_s = _args.positive("target_s", target_s)
    servers = _args.positive_int("servers", servers)
    if mg1_sojourn_quantile(s, 0.0, quantile, servers=servers) > target_s:
        return 0.0
    lo, hi = 0.0, servers / float(s.mean())
    for _ in range(60):
        mid = (lo + hi) / 2
        if mg1_sojourn_quantile(s, mid, quantile, servers=servers) <= target_s:
            lo = mid
        else:
            hi = mid
    return lo


__all__ = [
    "md1_max_utilisation",
    "md1_max_utilisation_quantile",
    "md1_mean_wait",
    "md1_wait_quantile",
    "mg1_max_rate",
    "mg1_sojourn_quantile",
]
