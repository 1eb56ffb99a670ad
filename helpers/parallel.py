"""Collective communication: the time of an all-reduce, all-gather, reduce-scatter or all-to-all.

Every collective here is modelled the way Hockney's latency-bandwidth (alpha-beta)
model costs a message: each of the algorithm's sequential *steps* pays the link's
latency ``alpha``, and the bytes each rank must send through its own link pay
``S / B``. For ``n`` ranks, each with a link of ``B`` bytes/s per direction:

=================  ==========================  ===========================
collective         ring: steps, bytes / B      tree: steps, bytes / B
=================  ==========================  ===========================
all-reduce         2(n-1),  2(n-1)/n * S       2 ceil(log2 n),  2(n-1)/n * S
all-gather         n-1,     (n-1)/n * S        ceil(log2 n),    (n-1)/n * S
reduce-scatter     n-1,     (n-1)/n * S        ceil(log2 n),    (n-1)/n * S
all-to-all         n-1,     (n-1)/n * S        ceil(log2 n),    ceil(log2 n)/2 * S
=================  ==========================  ===========================

``S`` is the size of the whole array in bytes, as NCCL's tests report it: the
all-reduce's buffer, the all-gather's *output* (``sendcount * n`` elements),
the reduce-scatter's *input*, and the bytes each rank holds for the all-to-all.

Sources:

* The bandwidth terms are the lower bounds behind nccl-tests' "bus bandwidth"
  (NVIDIA/nccl-tests, ``doc/PERFORMANCE.md``): an all-reduce needs
  ``2(n-1)`` transfers of every element spread over ``n`` links, so
  ``t >= 2(n-1)/n * S/B`` for *any* algorithm built from sends and receives;
  reduce-scatter, all-gather and all-to-all need ``(n-1)/n * S/B``. nccl-tests
  divides a measured time into ``busbw = S/t * factor`` with exactly these
  factors (:func:`bus_bandwidth`), so a measured bus bandwidth is directly
  comparable with ``B``.
* The step counts are those of Thakur, Rabenseifner and Gropp, "Optimization
  of Collective Communication Operations in MPICH" (IJHPCA 19(1), 2005): the
  ring (``n-1`` steps per phase); recursive doubling for all-gather and
  recursive halving for reduce-scatter (``log2 n`` steps, same bytes);
  Rabenseifner's all-reduce, a reduce-scatter then an all-gather
  (``2 log2 n`` steps, same bytes as the ring); and Bruck's all-to-all
  (``log2 n`` steps, but each step forwards half the data, so
  ``log2(n)/2 * S`` bytes). NCCL's own "tree" all-reduce is a double binary
  tree (Sanders, Speck and Träff 2009; NVIDIA blog "Massively Scale Your Deep
  Learning Training with NCCL 2.4", 2019): logarithmic latency at the same
  full-bandwidth bound, which is what the "tree" column assumes.

What the model leaves out: protocol and kernel overheads beyond ``alpha``
(NCCL's LL/LL128/Simple protocols trade bandwidth for latency), in-network
reduction (NVLink SHARP; nccl-tests' bus factor for it is ``(n-1)/(n+1)``),
contention with other traffic and overlap with compute. It is a
lower bound that a measured collective approaches for large ``S``.

Units: bytes, seconds, bytes/s.
"""

from __future__ import annotations

import math

from . import _validate
from .hardware import Accelerator, Link, get_accelerator, get_link

ALGORITHMS = ("ring", "tree")
"""The algorithms every collective here offers."""
_TP_LINKS = {
    "NVLink 5 (B200, GB200 NVL72)": ("B200", "B300", "GB200"),
    "NVLink 4 (H100)": ("H100", "H200", "H20"),
    "NVLink 3 (A100)": ("A100",),
}
_EXPORT_NVLINK = Link(
    "NVLink (A800/H800, 400 GB/s)",
    200e9,
    1e-6,
    "https://www.nvidia.cn/data-center/a800/",
    "The China-market A800 and H800 SXM: NVLink cut to 400 GB/s in total, 200 GB/s per "
    "direction (the catalog's A800 and H800 notes; nvidia.cn/data-center/a800/ and /h800/). "
    "Latency as the other NVLinks, an order of magnitude.",
)
_INFINITY_FABRIC = Link(
    "Infinity Fabric (MI300X, 7 x 64 GB/s)",
    448e9,
    1e-6,
    "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
    "amd-instinct-mi300x-data-sheet.pdf",
    "An MI300X OAM's seven Infinity Fabric links to the other seven GPUs of a platform, 128 GB/s "
    "each in both directions together (896 GB/s aggregate, the datasheet): 448 GB/s per direction "
    "when a collective uses them all, as RCCL's rings over the fully connected mesh do. Latency as "
    "NVLink's, an order of magnitude.",
)
COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall")
"""The collectives :func:`collective_time` and :func:`bus_bandwidth` accept."""

# nccl-tests' correction factors from algorithm bandwidth S/t to bus bandwidth
# (doc/PERFORMANCE.md, "Summary"); also the bandwidth terms' factors above.
_BUS_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
}


def _args(
    nbytes: float, n: int, link: str | Link, algorithm: str, latency: float | None
) -> tuple[float, int, float, float]:
    nbytes = _validate.non_negative("nbytes", nbytes)
    n = _validate.positive_int("n", n)
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    try:
        spec = get_link(link)
    except KeyError as err:
        raise KeyError(f"link: {err.args[0]}") from None
    alpha = (
        spec.latency if latency is None else _validate.non_negative("latency", latency)
    )
    return nbytes, n, spec.bandwidth, alpha


def _log2_steps(n: int) -> int:
    return math.ceil(math.log2(n)) if n > 1 else 0


def allreduce_time(
    nbytes: float,
    n: int,
    link: str | Link,
    *,
    algorithm: str = "ring",
    latency: float | None = None,
) -> float:
    """Time (s) for ``n`` ranks to all-reduce (sum) an array of ``nbytes`` bytes each.

    Ring: ``t = 2(n-1) * alpha + 2(n-1)/n * S/B`` (a reduce-scatter then an
    all-gather around the ring, each ``n-1`` steps moving ``S/n`` per step).
    Tree: ``t = 2 ceil(log2 n) * alpha + 2(n-1)/n * S/B`` (Rabenseifner's
    halving-doubling, or NCCL's double binary tree at full bandwidth).

    ``link`` is a :class:`helpers.hardware.Link` or its catalog name; ``B`` is
    its bandwidth per direction and ``alpha`` its latency (or ``latency``, s
    per step). ``n = 1`` costs 0. The bandwidth term is nccl-tests' bound
    ``t >= S/B * 2(n-1)/n`` (``doc/PERFORMANCE.md``); the step counts are
    Thakur, Rabenseifner and Gropp (2005). See the module docstring.

    Example: 1 GiB over 8 GPUs on NVLink 4 (450 GB/s, 1 us), ring:
    ``2*7/8 * 2**30 / 450e9 + 14 * 1e-6`` = 4.19 ms.
    """
    s, n, bw, alpha = _args(nbytes, n, link, algorithm, latency)
    if n == 1:
        return 0.0
    steps = 2 * (n - 1) if algorithm == "ring" else 2 * _log2_steps(n)
    return steps * alpha + 2 * (n - 1) / n * s / bw


def _one_pass(
    nbytes: float, n: int, link: str | Link, algorithm: str, latency: float | None
) -> float:
    """All-gather's and reduce-scatter's common cost: each rank sends ``(n-1)/n`` of ``nbytes``."""
    s, n, bw, alpha = _args(nbytes, n, link, algorithm, latency)
    if n == 1:
        return 0.0
    steps = (n - 1) if algorithm == "ring" else _log2_steps(n)
    return steps * alpha + (n - 1) / n * s / bw


def allgather_time(
    nbytes: float,
    n: int,
    link: str | Link,
    *,
    algorithm: str = "ring",
    latency: float | None = None,
) -> float:
    """Time (s) for ``n`` ranks to all-gather an output of ``nbytes`` bytes (``nbytes / n`` from each).

    Ring: ``t = (n-1) * alpha + (n-1)/n * S/B``; tree (recursive doubling):
    ``t = ceil(log2 n) * alpha + (n-1)/n * S/B``. ``S`` is the gathered
    output, as nccl-tests counts it (``sendcount * n`` elements). Sources as
    :func:`allreduce_time`.
    """
    return _one_pass(nbytes, n, link, algorithm, latency)


def reducescatter_time(
    nbytes: float,
    n: int,
    link: str | Link,
    *,
    algorithm: str = "ring",
    latency: float | None = None,
) -> float:
    """Time (s) for ``n`` ranks to reduce-scatter an input of ``nbytes`` bytes (each keeps ``nbytes / n``).

    Ring: ``t = (n-1) * alpha + (n-1)/n * S/B``; tree (recursive halving):
    ``t = ceil(log2 n) * alpha + (n-1)/n * S/B``. ``S`` is the whole input
    array (``recvcount * n`` elements in nccl-tests). The reduction's
    arithmetic is left out (it runs at memory bandwidth, far above ``B``).
    Sources as :func:`allreduce_time`.
    """
    return _one_pass(nbytes, n, link, algorithm, latency)


def alltoall_time(
    nbytes: float,
    n: int,
    link: str | Link,
    *,
    algorithm: str = "ring",
    latency: float | None = None,
) -> float:
    """Time (s) for an all-to-all in which each of ``n`` ranks holds ``nbytes`` bytes, ``nbytes / n`` per destination.

    Ring (pairwise exchange, ``n-1`` rounds, what NCCL and MoE dispatch use):
    ``t = (n-1) * alpha + (n-1)/n * S/B``. Tree (Bruck's algorithm, for small
    messages): ``t = ceil(log2 n) * alpha + ceil(log2 n)/2 * S/B``: fewer
    steps, but each forwards about half the data. Bandwidth bound: nccl-tests'
    all-to-all factor ``(n-1)/n``; step counts: Thakur, Rabenseifner and
    Gropp (2005).
    """
    s, n, bw, alpha = _args(nbytes, n, link, algorithm, latency)
    if n == 1:
        return 0.0
    if algorithm == "ring":
        return (n - 1) * alpha + (n - 1) / n * s / bw
    steps = _log2_steps(n)
    return steps * alpha + steps / 2 * s / bw


_TIMES = {
    "allreduce": allreduce_time,
    "allgather": allgather_time,
    "reducescatter": reducescatter_time,
    "alltoall": alltoall_time,
}


def collective_time(
    collective: str,
    nbytes: float,
    n: int,
    link: str | Link,
    *,
    algorithm: str = "ring",
    latency: float | None = None,
) -> float:
    """Time (s) of ``collective`` (one of :data:`COLLECTIVES`) by name; see the functions it dispatches to."""
    if collective not in _TIMES:
        raise ValueError(f"collective must be one of {COLLECTIVES}, got {collective!r}")
    return _TIMES[collective](nbytes, n, link, algorithm=algorithm, latency=latency)


def bus_bandwidth(collective: str, nbytes: float, n: int, time_s: float) -> float:
    """nccl-tests' bus bandwidth (bytes/s) of a collective of ``nbytes`` over ``n`` ranks that took ``time_s``.

    ``busbw = algbw * factor`` with ``algbw = S / t`` and ``factor``
    ``2(n-1)/n`` for all-reduce and ``(n-1)/n`` for all-gather,
    reduce-scatter and all-to-all (NVIDIA/nccl-tests ``doc/PERFORMANCE.md``).
    It is the per-link bandwidth the measured time implies, comparable with a
    link's ``bandwidth``; this module's times give ``busbw -> B`` as ``S``
    grows.
    """
    if collective not in _BUS_FACTOR:
        raise ValueError(f"collective must be one of {COLLECTIVES}, got {collective!r}")
    nbytes = _validate.positive("nbytes", nbytes)
    n = _validate.positive_int("n", n)
    time_s = _validate.positive("time_s", time_s)
    if n == 1:
        raise ValueError("n must be >= 2 for a bus bandwidth, got 1")
    return nbytes / time_s * _BUS_FACTOR[collective](n)


def tp_link(acc: str | Accelerator) -> Link:
    """The catalog link a tensor-parallel group of ``acc`` GPUs in one server talks over.

    B200, B300 and GB200: NVLink 5 through NVSwitch (900 GB/s per direction
    per GPU, the catalog's NVLink 5 link); H100, H200 and H20 SXM boards:
    NVLink 4 through NVSwitch (450 GB/s per
    direction per GPU, the H100 datasheet); A100 SXM: NVLink 3 (300 GB/s per
    direction). Every other GPU in the catalog, PCIe 4.0 x16 (T4, L4, A10G and
    RTX 4090 have no NVLink; the V100's NVLink 2 is not a catalog link, so
    PCIe is a conservative stand-in for it). The A800 and H800, whose NVLink
    is cut to 400 GB/s in total, get a link of 200 GB/s per direction; the
    MI300X and MI325X, their seven Infinity Fabric links together (448 GB/s
    per direction, the MI300X datasheet's 896 GB/s aggregate).
    """
    name = get_accelerator(acc).name
    if name.startswith(("A800", "H800")):
        return _EXPORT_NVLINK
    if name.startswith(("MI300X", "MI325X")):
        return _INFINITY_FABRIC
    for link, prefixes in _TP_LINKS.items():
        if name.startswith(prefixes):
            return get_link(link)
    return get_link("PCIe 4.0 x16")
