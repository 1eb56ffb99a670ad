"""Figures and labels of Part II (``transformer_inference`` to ``many_gpus``) kept out of visible cells.

Each function draws from numbers the chapter has already computed and shown in
its code cell; nothing here computes a quantity of the book. :func:`model_label`
prints a catalog model under the name readers know it by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import plots
from .llm import ModelConfig, get_model

_LABELS = {
    "llama-2-7b": "Llama-2-7B",
    "llama-2-13b": "Llama-2-13B",
    "llama-2-70b": "Llama-2-70B",
    "llama-3-8b": "Llama-3-8B",
    "llama-3-70b": "Llama-3-70B",
    "deepseek-v3": "DeepSeek-V3",
}


def model_label(model: str | ModelConfig) -> str:
    """The model's name as its authors publish it (``"Llama-3-70B"``, not ``"llama-3-70b"``).

    Uses the catalog's ``display_name`` where the catalog has one, else the
    published spelling of the book's catalog names, else the catalog name.
    """
    m = get_model(model)
    shown = getattr(m, "display_name", "")
    if shown and shown != m.name:
        return str(shown)
    return _LABELS.get(m.name, m.name)


def decode_batch_sweep(
    batches: Sequence[int] | np.ndarray,
    steps: Sequence[Any],
    measured: Mapping[int, float],
    fit: int,
    *,
    title: str,
) -> Any:
    """Chapter ``transformer_inference``'s figure: the decode step bound, its two terms,
    measured steps and tokens/s against the batch.

    Parameters
    ----------
    batches : sequence of int
        Decode batches swept (x axis).
    steps : sequence
        One :class:`~helpers.roofline.TimeBreakdown` per batch (``seconds``,
        ``memory_s``, ``compute_s``, in seconds).
    measured : mapping
        Published step times in seconds by batch (drawn as black squares).
    fit : int
        Largest batch that fits in memory (a vertical line).
    title : str
        The axes' title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if len(batches) != len(steps):
        raise ValueError(
            f"steps must have one entry per batch ({len(batches)}), got {len(steps)}"
        )
    x = np.asarray(batches, dtype=float)
    fig, ax = plots.new_figure()
    ax.loglog(x, [s.seconds * 1e3 for s in steps], marker="o", ms=4, markevery=(0, 8),
              label="decode step bound (ms)")  # fmt: skip
    ax.loglog(x, [s.memory_s * 1e3 for s in steps], "--^", lw=1, ms=4,
              markevery=(4, 8), label="memory term (ms)")  # fmt: skip
    ax.loglog(x, [s.compute_s * 1e3 for s in steps], ":v", lw=1, ms=4, markevery=8,
              label="compute term (ms)")  # fmt: skip
    ax.loglog(list(measured), [v * 1e3 for v in measured.values()], "ks", ms=6,
              label="LMDeploy, measured step (ms)")  # fmt: skip
    ax.axvline(fit, color="grey", lw=1)
    ax.annotate(f"largest batch that fits: {fit}", (fit, 0.5), xytext=(-6, 0),
                textcoords="offset points", ha="right", fontsize=plots.SMALL)  # fmt: skip
    ax.set_xlabel("decode batch (sequences)")
    ax.set_ylabel("time per decode step (ms)")
    rate = ax.twinx()
    rate.loglog(x, x / np.array([s.seconds for s in steps]), color="C3", ls="-.",
                marker="d", ms=4, markevery=8, label="tokens/s (right axis)")  # fmt: skip
    rate.set_ylabel("generated tokens/s (upper bound)")
    rate.grid(False)
    plots.plain_log_ticks(ax, rate)
    fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2,
               fontsize=plots.SMALL)  # fmt: skip
    ax.set_title(title)
    return fig


__all__ = ["decode_batch_sweep", "model_label"]
