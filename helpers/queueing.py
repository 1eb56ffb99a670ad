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
"""

from __future__ import annotations

import math

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


__all__ = [
    "md1_max_utilisation",
    "md1_max_utilisation_quantile",
    "md1_mean_wait",
    "md1_wait_quantile",
]
