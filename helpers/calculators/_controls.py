"""The controls the calculators share, one factory each, so a dropdown is defined once.

Every accelerator control is keyed ``acc`` in a calculator (the keyword of its
``render_*`` function), whatever its label says; the options are the
catalogs (:func:`helpers.hardware.accelerators`, :func:`helpers.hardware.links`,
:func:`helpers.llm.models`), so an entry added there appears in every
calculator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import batching, hardware, llm

SERVING_DTYPES = ("bf16", "fp16", "fp8")
"""The dtypes the serving calculators (chapters ``transformer_inference`` to ``hybrid_strategies``) offer."""


def accelerator_names() -> list[str]:
    """Every catalog accelerator's name, in catalog order."""
    return [a.name for a in hardware.accelerators()]


def link_names() -> list[str]:
    """Every catalog link's name, in catalog order."""
    return [link.name for link in hardware.links()]


def model_names() -> list[str]:
    """Every catalog model's name, in catalog order."""
    return [m.name for m in llm.models()]


def batch_grid(largest: int, *, points: int = 40) -> np.ndarray:
    """Whole batches from 1 to ``largest``, spaced evenly on a log scale."""
    return np.unique(np.geomspace(1, largest, points).astype(int))


def accelerator(value: str, *, description: str = "accelerator") -> Any:
    """A dropdown of the catalog's accelerators, set to ``value``."""
    return widgets.Dropdown(
        options=accelerator_names(), value=value, description=description
    )


def link(value: str, *, description: str = "link") -> Any:
    """A dropdown of the catalog's links, set to ``value``."""
    return widgets.Dropdown(options=link_names(), value=value, description=description)


def model(value: str, *, description: str = "model") -> Any:
    """A dropdown of the catalog's models, set to ``value``."""
    return widgets.Dropdown(options=model_names(), value=value, description=description)


def dtype(
    value: str,
    *,
    options: Sequence[str] = SERVING_DTYPES,
    description: str = "dtype",
) -> Any:
    """A dropdown of dtypes, set to ``value``."""
    return widgets.Dropdown(options=list(options), value=value, description=description)


def overhead_us(*, max_exponent: float = 2) -> Any:
    """A log slider for the fixed time per call ``t0`` in microseconds, from 0.1 to ``10**max_exponent``.

    Its default is :data:`helpers.batching.DEFAULT_OVERHEAD_S`.
    """
    return widgets.FloatLogSlider(
        value=batching.DEFAULT_OVERHEAD_S * 1e6,
        base=10,
        min=-1,
        max=max_exponent,
        step=0.1,
        description="t0 (µs)",
    )
