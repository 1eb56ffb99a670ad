"""Named operations and a time breakdown for the two-ceilings and roofline chapters.

The chapters' calculators let a reader pick an operation by name ("relu",
"matmul" ...) and a size; :func:`op_cost` turns that choice into a
:class:`~helpers.ops.Cost` with the formulas of :mod:`helpers.ops`, and
:func:`time_breakdown` splits the roofline time of :mod:`helpers.roofline`
into its compute, memory and overhead terms. :func:`format_si` prints a
quantity with an SI prefix (``3.2 µs``, ``989 TFLOP/s``).

References
----------
Williams, Waterman and Patterson, "Roofline: an insightful visual performance
model for multicore architectures", CACM 52(4), 2009.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from . import _validate
from .hardware import Accelerator, get_accelerator
from .ops import Cost, elementwise_cost, linear_cost, matmul_cost, reduction_cost
from .roofline import Bound, attainable_flops, bound, roofline_time

if TYPE_CHECKING:
    from matplotlib.axes import Axes

OP_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "relu": "ReLU y = max(x, 0) over `size` elements (1 read, 1 write, 1 FLOP each)",
        "add": "elementwise add z = x + y over `size` elements (2 reads, 1 write, 1 FLOP each)",
        "sum": "sum of `size` elements into one number (a reduction)",
        "matmul": "square matmul C = A @ B with A, B, C all `size` x `size`",
        "linear": "linear layer y = x @ W, W of d_model x d_model, for a batch of `size` rows",
    }
)
"""Operation kinds :func:`op_cost` knows, with what ``size`` means for each."""


def op_cost(kind: str, size: int, dtype: str = "fp16", d_model: int = 4096) -> Cost:
    """FLOP and bytes of a named operation (one of :data:`OP_KINDS`).

    Parameters
    ----------
    kind : str
        ``"relu"``, ``"add"``, ``"sum"``, ``"matmul"`` or ``"linear"``.
    size : int
        Elements (relu, add, sum), matrix side (matmul) or batch rows (linear).
    dtype : str
        Storage dtype of every operand.
    d_model : int
        Width of the linear layer's square weight matrix (ignored by other kinds).

    Returns
    -------
    Cost
        From :func:`helpers.ops.elementwise_cost`, :func:`~helpers.ops.reduction_cost`,
        :func:`~helpers.ops.matmul_cost` or :func:`~helpers.ops.linear_cost`.
    """
    key = _validate.name("kind", kind)
    size = _validate.positive_int("size", size)
    if key == "relu":
        return elementwise_cost(size, dtype, n_inputs=1)
    if key == "add":
        return elementwise_cost(size, dtype, n_inputs=2)
    if key == "sum":
        return reduction_cost(size, dtype)
    if key == "matmul":
        return matmul_cost(size, size, size, dtype)
    if key == "linear":
        d_model = _validate.positive_int("d_model", d_model)
        return linear_cost(size, d_model, d_model, dtype)
    raise KeyError(f"kind {kind!r} is unknown; choose one of {list(OP_KINDS)}")


@dataclass(frozen=True)
class Breakdown:
    """The three terms of the book's time model for one kernel call, in seconds.

    Attributes
    ----------
    compute : float
        ``flops / peak_flops`` (s).
    memory : float
        ``bytes / memory_bandwidth`` (s).
    overhead : float
        Fixed time per call (launch, framework) (s).
    total : float
        ``max(compute, memory) + overhead`` (s), as :func:`helpers.roofline.roofline_time`.
    bound : str
        ``"compute"``, ``"memory"`` or ``"overhead"``, as :func:`helpers.roofline.bound`.
    """

    compute: float
    memory: float
    overhead: float
    total: float
    bound: Bound


def time_breakdown(cost: Cost, acc: str | Accelerator, dtype: str = "fp16", overhead: float = 0.0) -> Breakdown:
    """Split the roofline time of ``cost`` on ``acc`` into compute, memory and overhead.

    Parameters
    ----------
    cost : Cost
        FLOP and bytes of the kernel.
    acc : str or Accelerator
        The device (name or object).
    dtype : str
        Which peak FLOP/s to use.
    overhead : float
        Fixed seconds per call.

    Returns
    -------
    Breakdown
        Its ``total`` and ``bound`` equal :func:`helpers.roofline.roofline_time`
        and :func:`helpers.roofline.bound` for the same arguments.
    """
    if not isinstance(cost, Cost):
        raise TypeError(f"cost must be a helpers.ops.Cost, got {type(cost).__name__}")
    device = get_accelerator(acc)
    overhead = _validate.non_negative("overhead", overhead)
    total = roofline_time(cost.flops, cost.bytes, device, dtype, overhead)
    which = bound(cost.flops, cost.bytes, device, dtype, overhead)
    return Breakdown(
        compute=cost.flops / device.flops(dtype),
        memory=cost.bytes / device.memory_bandwidth,
        overhead=overhead,
        total=total,
        bound=which,
    )


def mark_ops(ax: "Axes", points: Mapping[str, float], acc: str | Accelerator, dtype: str = "fp16") -> None:
    """Mark operations on a roofline drawn in ``ax``, labels alternating above and below.

    Each ``label: intensity`` (FLOP/byte) becomes a black triangle at the
    attainable FLOP/s of ``acc`` in ``dtype``; labels of neighbouring points
    (sorted by intensity) go on opposite sides so close points stay legible,
    and the y-axis gains head-room for labels above the compute roof.

    Parameters
    ----------
    ax : matplotlib Axes
        Axes holding a roofline, e.g. from :func:`helpers.plots.roofline_plot`.
    points : Mapping[str, float]
        ``{label: arithmetic intensity in FLOP/byte}``.
    acc : str or Accelerator
        The device whose roof the points sit on.
    dtype : str
        Which of its peaks.
    """
    device = get_accelerator(acc)
    if not points:
        raise ValueError("points must name at least one operation")
    ordered = sorted(points.items(), key=lambda item: item[1])
    for i, (label, intensity) in enumerate(ordered):
        intensity = _validate.positive(f"points[{label!r}]", intensity)
        value = attainable_flops(intensity, device, dtype)
        ax.plot([intensity], [value], "k^", ms=6, zorder=5)
        above = i % 2 == 0  # up-left or down-right of the point: off a rising or flat roof either way
        ax.annotate(
            label,
            (intensity, value),
            textcoords="offset points",
            xytext=(-5, 7) if above else (5, -7),
            ha="right" if above else "left",
            va="bottom" if above else "top",
            fontsize=8,
        )
    low, high = ax.get_ylim()
    ax.set_ylim(low, high * 3)  # head-room for the labels above the compute roof


_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))


def format_si(value: float, unit: str = "", digits: int = 3) -> str:
    """``value`` with an SI prefix and ``digits`` significant figures.

    ``format_si(3.2e-6, "s") == "3.2 µs"``, ``format_si(989.4e12, "FLOP/s") == "989 TFLOP/s"``.
    Values below 1e-9 use the nano prefix; zero prints as ``"0 unit"``.
    """
    value = _validate.non_negative("value", value)
    digits = _validate.positive_int("digits", digits)
    if not isinstance(unit, str):
        raise TypeError(f"unit must be a string, got {type(unit).__name__}")
    if value == 0:
        return f"0 {unit}".rstrip()
    rounded = float(f"{value:.{digits}g}")
    index = next((i for i, (scale, _) in enumerate(_PREFIXES) if rounded >= scale), len(_PREFIXES) - 1)
    scale, prefix = _PREFIXES[index]
    mantissa = f"{rounded / scale:.{digits}g}"
    if "e" in mantissa:  # more digits than the mantissa needs, e.g. 1234 P
        mantissa = f"{rounded / scale:.0f}"
    return f"{mantissa} {prefix}{unit}".rstrip()
