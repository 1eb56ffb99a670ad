"""Numbers and tables as the book prints them: SI prefixes, Markdown tables.

:func:`format_si` prints a quantity with an SI prefix (``3.2 µs``,
``989 TFLOP/s``); :func:`markdown_table` turns rows into a Markdown table
that the book renders with a header row.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import _args

_PREFIXES = (
    (1e15, "P"),
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
    (1.0, ""),
    (1e-3, "m"),
    (1e-6, "µ"),
    (1e-9, "n"),
)


def format_si(value: float, unit: str = "", *, digits: int = 3) -> str:
    """``value`` with an SI prefix and ``digits`` significant figures.

    Values below 1e-9 use the nano prefix; zero prints as ``"0 unit"``.

    Examples
    --------
    >>> format_si(3.2e-6, "s")
    '3.2 µs'
    >>> format_si(989.4e12, "FLOP/s")
    '989 TFLOP/s'
    """
    value = _args.non_negative("value", value)
    digits = _args.positive_int("digits", digits)
    if not isinstance(unit, str):
        raise TypeError(f"unit must be a string, got {type(unit).__name__}")
    if value == 0:
        return f"0 {unit}".rstrip()
    rounded = float(f"{value:.{digits}g}")
    index = next(
        (i for i, (scale, _) in enumerate(_PREFIXES) if rounded >= scale),
        len(_PREFIXES) - 1,
    )
    scale, prefix = _PREFIXES[index]
    mantissa = f"{rounded / scale:.{digits}g}"
    if "e" in mantissa:  # more digits than the mantissa needs, e.g. 1234 P
        mantissa = f"{rounded / scale:.0f}"
    return f"{mantissa} {prefix}{unit}".rstrip()


MISSING = "not published"
"""What a table shows for a value that is ``None`` (no datasheet or paper gives it)."""


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[object]], *, align: str | None = None
) -> str:
    """A Markdown table with ``header`` and one line per row (cells printed with ``str``; a
    ``None`` cell, a value no source publishes, as :data:`MISSING`).

    ``align`` has one letter per column, ``"l"`` or ``"r"`` (default: the first
    column left, the others right, as numbers read best).

    Examples
    --------
    >>> print(markdown_table(["GPU", "TFLOP/s"], [["T4", 65]]))
    | GPU | TFLOP/s |
    |---|---:|
    | T4 | 65 |
    """
    header = [str(h) for h in header]
    if not header:
        raise ValueError("header must name at least one column")
    if align is None:
        align = "l" + "r" * (len(header) - 1)
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise ValueError(
            f"align must have one 'l' or 'r' per column ({len(header)}), got {align!r}"
        )
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|",
    ]
    for i, row in enumerate(rows):
        cells = [MISSING if c is None else str(c) for c in row]
        if len(cells) != len(header):
            raise ValueError(
                f"rows[{i}] has {len(cells)} cells, the header {len(header)}"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_intensity(value: float) -> str:
    """An intensity (FLOP/byte) as the book prints it: no decimals from 100 up, else 3 digits."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
