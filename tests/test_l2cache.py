"""Tests of :mod:`helpers.l2cache`: working sets against the L2 sizes of the whitepapers."""

from __future__ import annotations

import pytest

from helpers import l2cache
from helpers.hardware import MIB


def test_fits_hand_values():
    """4 MiB on a T4: 1.6 MB fits, 26 MB does not; a quarter of the L2 is 1 MiB."""
    assert l2cache.fits_in_l2(1.6e6, "T4")
    assert not l2cache.fits_in_l2(26e6, "T4")
    assert l2cache.fits_in_l2(MIB, "T4", usable_fraction=0.25)
    assert not l2cache.fits_in_l2(MIB + 1, "T4", usable_fraction=0.25)


def test_resnet50_handoffs():
    """Largest fp16 hand-off at batch 1 is 1,605,632 bytes; all fit an A100's 40 MiB up to batch 26."""
    rows = l2cache.resnet50_handoffs(1, "T4")
    assert len(rows) == 53
    assert max(r.bytes for r in rows) == 2 * 64 * 112 * 112
    assert all(r.fits for r in rows)
    assert all(r.fits for r in l2cache.resnet50_handoffs(26, "A100"))
    assert not all(r.fits for r in l2cache.resnet50_handoffs(27, "A100"))


def test_unknown_l2_and_bad_input():
    """A device with no published L2 raises KeyError; a non-positive size raises ValueError."""
    with pytest.raises(KeyError, match="H20"):
        l2cache.fits_in_l2(1.0, "H20")
    with pytest.raises(ValueError, match="nbytes"):
        l2cache.fits_in_l2(0, "T4")
