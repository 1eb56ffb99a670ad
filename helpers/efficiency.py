"""Measured efficiency of real kernels: the share of a roof each implementation reaches, from published runs.

The roofline (:mod:`helpers.roofline`) says what a kernel could take; a real
kernel reaches a share of each roof that depends on the implementation and
the shape. This module loads the published measurements the step model of
:mod:`helpers.steps` is calibrated on, each row with its source, from
``helpers/data/efficiency/*.csv``, and derives from them:

* :func:`gemm_floor` -- the fixed cost of a small GEMM and the share of the
  bandwidth it streams its weights at (a line through DeepGEMM's small-``m``
  FP8 timings: ``t = t0 + bytes / (f B)``);
* :func:`attention_fractions` -- the share of the bandwidth a decode
  attention kernel reaches and the share of the peak a prefill (FlashAttention)
  kernel reaches, per GPU generation;
* :func:`busbw_fraction` -- the bus bandwidth NCCL reaches over NVLink, per
  algorithm, as a share of the link's line rate.

Every source listed here is a *calibration* source; none of them is a
whole-engine serving benchmark, and :mod:`helpers.validation` must not use
them as validation points (``NOTES/calibration-sources.txt``).
Where a generation has no measurement, the nearest measured one stands in
and the functions say which (``source`` of the returned record).

Units: seconds, bytes/s, fractions in (0, 1].
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from . import dispatch
from .hardware import Accelerator, get_accelerator

_DATA = Path(__file__).parent / "data" / "efficiency"


@cache
def _rows(name: str) -> tuple[dict[str, str], ...]:
    with open(_DATA / f"{name}.csv", newline="", encoding="utf-8") as handle:
        return tuple(csv.DictReader(handle))


def table(name: str) -> tuple[dict[str, str], ...]:
    """The rows of ``helpers/data/efficiency/<name>.csv``, as strings.

    ``name``: ``gemm``, ``gemm_overlap`` (GEMM time against rows, the
    calibration of the inside-GEMM overlap), ``attention``, ``collectives`` or
    ``host``.

    >>> all(row["source"] for row in table("gemm"))
    True
    """
    names = ("gemm", "gemm_overlap", "attention", "collectives", "host")
    if name not in names:
        raise KeyError(f"name must be one of {', '.join(names)}; got {name!r}")
    return _rows(name)


@dataclass(frozen=True)
class GemmFloor:
    """A small GEMM's time as a line in the bytes it moves: ``t = floor_s + bytes / (memory_fraction * bandwidth)``.

    Attributes
    ----------
    floor_s : float
        Time of a GEMM that moves no bytes (s): launch, prologue, epilogue,
        the wave's tail; what a weight-streaming GEMM pays beyond its bytes.
    memory_fraction : float
        Share of the datasheet bandwidth the weights stream at.
    source : str
        The measurements the line was fitted through.
    """

    floor_s: float
    memory_fraction: float
    source: str


@cache
def _gemm_fit(generation: str) -> GemmFloor | None:
    points = []
    sources = set()
    for row in _rows("gemm"):
        acc = get_accelerator(row["gpu"])
        if dispatch.generation(acc) != generation:
            continue
        m, n, k = (int(row[c]) for c in ("m", "n", "k"))
        seconds = 2.0 * m * n * k / (float(row["tflops"]) * 1e12)
        points.append((seconds * float(row["gbps"]) * 1e9, seconds, acc))
        sources.add(row["source"])
    if len(points) < 2:
        return None
    n_pts = len(points)
    mean_b = sum(p[0] for p in points) / n_pts
    mean_t = sum(p[1] for p in points) / n_pts
    slope = sum((b - mean_b) * (t - mean_t) for b, t, _ in points) / sum(
        (b - mean_b) ** 2 for b, _, _ in points
    )
    floor = mean_t - slope * mean_b
    bandwidth = points[0][2].memory_bandwidth
    return GemmFloor(
        max(floor, 0.0), min(1.0 / (slope * bandwidth), 1.0), "; ".join(sorted(sources))
    )


def gemm_floor(acc: str | Accelerator) -> GemmFloor:
    """Fixed cost and weight-streaming share of a small GEMM on ``acc``'s generation.

    A least-squares line ``t = t0 + bytes / (f B)`` through the published
    small-``m`` GEMM timings of the same generation (``gemm.csv``: DeepGEMM's
    FP8 GEMMs on an H800, ``m`` = 64 and 128, where the weights dominate the
    bytes). The four points lie within 27 % of the line (the worst, 128 x
    7168 x 2048, runs faster than it). ``t0`` includes
    :func:`helpers.dispatch.kernel_floor`. Where a
    generation has no row, Hopper's line stands in (its ``source`` says so).

    >>> g = gemm_floor("H100")
    >>> round(g.floor_s * 1e6, 1), round(g.memory_fraction, 2)
    (4.0, 0.93)
    """
    gen = dispatch.generation(acc)
    fit = _gemm_fit(gen)
    if fit is not None:
        return fit
    hopper = _gemm_fit("Hopper")
    assert hopper is not None
    return GemmFloor(
        hopper.floor_s,
        hopper.memory_fraction,
        f"no {gen} measurement: Hopper's stands in ({hopper.source})",
    )


@dataclass(frozen=True)
class AttentionFractions:
    """Shares of the roofs attention kernels reach on one GPU generation.

    Attributes
    ----------
    decode_memory : float
        Decode attention (one query per sequence): share of the bandwidth
        the KV cache streams at, long contexts.
    decode_compute : float
        Decode attention when compute-bound (MLA's 128 heads score one
        latent): share of the 16-bit tensor peak.
    prefill_compute : float
        Prefill (FlashAttention forward, long sequences): share of the 16-bit
        tensor peak, before the causal tiles' and waves' losses
        (:func:`helpers.steps.prefill_attention_efficiency`).
    source : str
    """

    decode_memory: float
    decode_compute: float
    prefill_compute: float
    source: str


_STAND_IN = {
    "Volta": "Ampere",
    "Turing": "Ampere",
    "Ada": "Ampere",
    "Blackwell": "Hopper",
    "CDNA 3": "Hopper",
}


def _attention_values(generation: str) -> dict[tuple[str, str], tuple[float, str]]:
    found: dict[tuple[str, str], tuple[float, str]] = {}
    for row in _rows("attention"):
        acc = get_accelerator(row["gpu"])
        if dispatch.generation(acc) != generation:
            continue
        value = float(row["value"])
        if row["quantity"] == "memory_bandwidth":
            share = value / acc.memory_bandwidth
        else:
            share = value / acc.flops(row["dtype"])
        found[(row["phase"], row["quantity"])] = (min(share, 1.0), row["source"])
    return found


def attention_fractions(acc: str | Accelerator) -> AttentionFractions:
    """The :class:`AttentionFractions` of ``acc``'s generation, from ``attention.csv``.

    Hopper: FlashMLA's 3000 GB/s and 660 TFLOP/s on an H800 (0.90 of the
    bandwidth, 0.67 of the bf16 peak) for decode, FlashAttention-3's
    740 TFLOP/s (0.75) for prefill. Ampere: FlashAttention-2's 73 % of the
    A100's peak for prefill; its decode shares are Hopper's (no published
    Ampere decode-kernel bandwidth is in the table). A generation with no row
    takes the nearest one's (Blackwell and CDNA 3: Hopper's; Volta, Turing,
    Ada: Ampere's), and ``source`` says so.

    >>> f = attention_fractions("H100")
    >>> round(f.decode_memory, 2), round(f.prefill_compute, 2)
    (0.9, 0.75)
    """
    gen = dispatch.generation(acc)
    chain = [gen]
    if gen in _STAND_IN:
        chain.append(_STAND_IN[gen])
    if "Hopper" not in chain:
        chain.append("Hopper")
    notes = [] if gen not in _STAND_IN else [f"no {gen} row: {_STAND_IN[gen]}'s used"]
    values: dict[tuple[str, str], tuple[float, str]] = {}
    for g in reversed(chain):  # the nearest generation wins
        values.update(_attention_values(g))
    dm, s1 = values[("decode", "memory_bandwidth")]
    dc, s2 = values[("decode", "flops")]
    pc, s3 = values[("prefill", "flops")]
    return AttentionFractions(dm, dc, pc, "; ".join([*notes, *sorted({s1, s2, s3})]))


def busbw_fraction(link_name: str, *, algorithm: str = "ring") -> float:
    """A collective's measured bus bandwidth over ``link_name``, as a share of its line rate (``collectives.csv``).

    ``algorithm``: ``"ring"`` (NCCL's all-reduce), ``"nvls"`` (NVLink
    SHARP all-reduce, whose bus bandwidth exceeds the line rate because the
    switch does the sums) or ``"alltoall"`` (MoE dispatch and combine:
    DeepEP's measured bottleneck bandwidth). A link with no row of that
    algorithm takes the median share of the links that have one (the same
    protocol overheads, about 20 % by NCCL's maintainers' account).

    >>> round(busbw_fraction("NVLink 4 (H100)"), 3), round(busbw_fraction("NVLink 4 (H100)", algorithm="alltoall"), 3)
    (0.822, 0.786)
    """
    rows = [r for r in _rows("collectives") if r["algorithm"] == algorithm]
    if not rows:
        raise ValueError(
            f"algorithm must be 'ring', 'nvls' or 'alltoall', got {algorithm!r}"
        )
    mine = [r for r in rows if r["link"] == link_name] or rows
    shares = sorted(float(r["busbw"]) / float(r["line"]) for r in mine)
    mid = len(shares) // 2
    return shares[mid] if len(shares) % 2 else (shares[mid - 1] + shares[mid]) / 2


def eager_dispatch_s(*, framework: str = "PyTorch eager") -> float:
    """CPU time an eager framework spends issuing one operator (s), from ``host.csv``, with its source.

    PyTorch eager: 1.2 us per elementwise op (a published loop of ``x + y``
    on small CUDA tensors). Ops that pick a cuBLAS or cuDNN algorithm
    spend more, so for a network of convolutions this is a lower bound; pass
    it as ``dispatch_s`` to :func:`helpers.dispatch.stream_time`.

    >>> eager_dispatch_s()
    1.2e-06
    """
    for row in _rows("host"):
        if (
            row["framework"].lower() == framework.lower()
            and row["quantity"] == "dispatch_s_per_op"
        ):
            return float(row["value"])
    raise KeyError(
        f"framework {framework!r} has no published dispatch time in host.csv"
    )


__all__ = [
    "eager_dispatch_s",
    "frontend_s",
    "AttentionFractions",
    "GemmFloor",
    "attention_fractions",
    "busbw_fraction",
    "gemm_floor",
    "table",
]


def frontend_s(*, frontend: str = "SGLang HTTP frontend") -> float:
    """Latency a request spends outside the model before its first token reaches the client (s), from ``host.csv``.

    An OpenAI-compatible HTTP frontend parses the request, applies the chat
    template, tokenises, passes the ids to the scheduler's process and
    detokenises and streams the first token. It runs in its own process, so
    it delays each request's first token without holding the GPU. Measured on
    SGLang with the device replaced by a timed mock: 6.6 ms (TTFT minus the
    mock forward and the engine's own per-iteration overhead), one client;
    the host CPU is not stated, and a busy frontend queues requests, which is
    not modelled.

    >>> frontend_s()
    0.0066
    """
    for row in _rows("host"):
        if (
            row["framework"].lower() == frontend.lower()
            and row["quantity"] == "request_s"
        ):
            return float(row["value"])
    raise KeyError(
        f"frontend {frontend!r} has no published request latency in host.csv"
    )
