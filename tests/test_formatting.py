"""Tests of :mod:`helpers.formatting`: numbers with SI prefixes and Markdown tables, as the book prints them.

Expected strings are written out by hand; the T4 figures are NVIDIA's T4
datasheet (65 TFLOP/s FP16 tensor-core, 320 GB/s).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.formatting import format_si, markdown_table

# --- format_si ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, unit, expected",
    [
        (3.2e-6, "s", "3.2 µs"),
        (989.4e12, "FLOP/s", "989 TFLOP/s"),
        (
            999.96,
            "B",
            "1 kB",
        ),  # rounds to 1.00e3 first, so it moves into the next prefix
        (65e12 / 320e9, "FLOP/byte", "203 FLOP/byte"),  # the T4's ridge, 203.125
        (0.0, "s", "0 s"),
        (1.0, "", "1"),
        (2.5e-12, "s", "0.0025 ns"),  # below 1e-9 the nano prefix is kept
        (
            1.5e18,
            "FLOP",
            "1500 PFLOP",
        ),  # above 1e15 the peta prefix is kept, without an exponent
    ],
)
def test_format_si(value, unit, expected):
    """Values print with the right prefix and three significant figures, rounding into the next prefix."""
    assert format_si(value, unit) == expected


def test_format_si_digits_is_keyword_only():
    """``digits`` sets the significant figures and is an option, so keyword-only (1234.5 -> 1.2 k, 1.23 k)."""
    assert format_si(1234.5, "B", digits=2) == "1.2 kB"
    assert format_si(1234.5, "B", digits=3) == "1.23 kB"
    with pytest.raises(TypeError):
        format_si(1234.5, "B", 2)  # type: ignore[misc]


@given(st.floats(min_value=1e-9, max_value=1e17, allow_nan=False, allow_infinity=False))
def test_format_si_reads_back(value):
    """Property: the printed mantissa times its prefix is the value to three significant figures."""
    scale = {
        "n": 1e-9,
        "µ": 1e-6,
        "m": 1e-3,
        "": 1.0,
        "k": 1e3,
        "M": 1e6,
        "G": 1e9,
        "T": 1e12,
        "P": 1e15,
    }
    mantissa, unit = format_si(value, "s").split(" ")
    prefix = unit[:-1]
    assert float(mantissa) * scale[prefix] == pytest.approx(
        float(f"{value:.3g}"), rel=1e-9
    )


def test_format_si_rejects_bad_input():
    """Negative values, a non-string unit and zero digits are refused, naming the parameter."""
    with pytest.raises(ValueError, match="value"):
        format_si(-1.0)
    with pytest.raises(TypeError, match="unit"):
        format_si(1.0, unit=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="digits"):
        format_si(1.0, digits=0)
    with pytest.raises(TypeError, match="value"):
        format_si("1")  # type: ignore[arg-type]


# --- markdown_table -----------------------------------------------------------------


def test_markdown_table_by_hand():
    """A header row, an alignment row (first column left, the others right), one line per row."""
    text = markdown_table(
        ["GPU", "TFLOP/s", "GB/s"], [["T4", 65, 320], ["H100 SXM", 989.4, 3350]]
    )
    assert text == (
        "| GPU | TFLOP/s | GB/s |\n"
        "|---|---:|---:|\n"
        "| T4 | 65 | 320 |\n"
        "| H100 SXM | 989.4 | 3350 |"
    )


def test_markdown_table_alignment_and_empty_body():
    """``align`` sets each column ("l" or "r"); a table may have no rows (header and alignment only)."""
    assert markdown_table(["a", "b"], [], align="rl") == "| a | b |\n|---:|---|"
    assert markdown_table(["only"], [[1]]) == "| only |\n|---|\n| 1 |"


@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            st.lists(
                st.text("abc xyz", min_size=1, max_size=5), min_size=n, max_size=n
            ),
            st.lists(
                st.lists(st.integers(-999, 999), min_size=n, max_size=n), max_size=8
            ),
        )
    )
)
def test_markdown_table_shape(table):
    """Property: two lines more than rows; every line has one cell per column (n + 1 pipes)."""
    header, rows = table
    lines = markdown_table(header, rows).split("\n")
    assert len(lines) == len(rows) + 2
    assert all(line.count("|") == len(header) + 1 for line in lines)
    assert lines[1].count("---") == len(header)


@pytest.mark.parametrize(
    "header, rows, align, message",
    [
        ([], [], None, "header"),
        (["a", "b"], [[1, 2, 3]], None, r"rows\[0\]"),
        (["a", "b"], [[1, 2], [1]], None, r"rows\[1\]"),
        (["a", "b"], [], "l", "align"),
        (["a", "b"], [], "lc", "align"),
    ],
)
def test_markdown_table_rejects_bad_input(header, rows, align, message):
    """No columns, a row with the wrong number of cells, or a bad ``align`` raise ValueError naming it."""
    with pytest.raises(ValueError, match=message):
        markdown_table(header, rows, align=align)


def test_missing_values_read_not_published():
    """R4-9: a None cell prints as "not published", never as Python's None."""
    from helpers.formatting import MISSING, markdown_table

    table = markdown_table(["GPU", "SMs"], [["H20", None], ["T4", 40]])
    assert "None" not in table
    assert f"| H20 | {MISSING} |" in table
