"""Chapter ``many_gpus``'s calculator: what tensor or context parallelism costs a model, against the tokens of the work.

Same pattern as the other calculators: :func:`render_parallelism` draws
and returns a Markdown summary (and raises ``ValueError``/``KeyError`` naming
a bad input), :func:`parallelism` wires it to ipywidgets controls. Every number
comes from :mod:`helpers.multigpu`; the dropdowns list the catalogs, so a link
or a GPU added there appears here.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from .. import hardware, llm, multigpu, plots
from ..formatting import format_si
from ..widgets import Calculator

__all__ = ["parallelism", "parallelism_controls", "render_parallelism"]

_STRATEGIES = ("tensor, prefill", "tensor, decode step", "context, prefill")


def _cost(
    strategy: str,
    model: str,
    acc: str,
    n: int,
    link: str,
    tokens: int,
    context: int,
    algorithm: str,
) -> multigpu.CommCost:
    if strategy == "tensor, prefill":
        return multigpu.tp_prefill(model, tokens, acc, n, link, algorithm=algorithm)
    if strategy == "tensor, decode step":
        return multigpu.tp_decode(
            model, context, acc, n, link, batch=tokens, algorithm=algorithm
        )
    if strategy == "context, prefill":
        return multigpu.cp_prefill(model, tokens, acc, n, link, algorithm=algorithm)
    raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}")


def render_parallelism(
    ax: Axes,
    strategy: str,
    model: str,
    acc: str,
    n: int,
    link: str,
    tokens: int,
    context: int,
    algorithm: str,
) -> str:
    """Roofline bound without communication, and collective time, against the tokens; summary at ``tokens``.

    ``tokens`` is the prompt length for a prefill and the batch for a decode
    step (whose sequences hold ``context`` cached tokens each).
    """
    chosen = _cost(strategy, model, acc, n, link, tokens, context, algorithm)
    sweep = np.unique(np.geomspace(1, max(64 * tokens, 1024), 50).astype(int))
    costs = [
        _cost(strategy, model, acc, n, link, int(t), context, algorithm) for t in sweep
    ]
    ax.loglog(  # a line style and a marker per series, for greyscale
        sweep,
        [c.compute_s * 1e3 for c in costs],
        marker="o",
        markevery=8,
        label="bound, no communication (ms)",
    )
    ax.loglog(
        sweep,
        [c.comm_s * 1e3 for c in costs],
        ls="--",
        marker="^",
        markevery=8,
        label="collectives (ms)",
    )
    ax.plot([tokens], [chosen.comm_s * 1e3], "ko", ms=5)
    ax.plot([tokens], [chosen.compute_s * 1e3], "ko", ms=5)
    what = "decode batch (sequences)" if "decode" in strategy else "prompt tokens"
    ax.set_xlabel(what)
    ax.set_ylabel("time (ms)")
    plots.plain_log_ticks(ax)
    ax.legend(loc="upper left", fontsize=plots.SMALL)
    unit = "sequences" if "decode" in strategy else "tokens"
    return (
        f"At {tokens:,} {unit} the collectives take **{chosen.share:.0%} of the roofline bound**. "
        f"Work without communication: at least {format_si(chosen.compute_s, 's')}; collectives: "
        f"{format_si(chosen.comm_s, 's')}.  \n"
        f"Serial: {format_si(chosen.serial_s, 's')}; fully overlapped: "
        f"{format_si(chosen.overlapped_s, 's')}."
    )


def parallelism_controls() -> dict[str, Any]:
    """The controls with chapter ``many_gpus``'s defaults: Llama-3-70B, TP-8 on H100 over NVLink 4,
    a 4,096-token prefill."""
    return {
        "strategy": widgets.Dropdown(
            options=list(_STRATEGIES), value=_STRATEGIES[0], description="split"
        ),
        "model": widgets.Dropdown(
            options=[m.name for m in llm.models() if m.moe is None],
            value="llama-3-70b",
            description="model",
        ),
        "acc": widgets.Dropdown(
            options=[a.name for a in hardware.accelerators()],
            value="H100 SXM",
            description="GPU",
        ),
        "n": widgets.Dropdown(options=[2, 4, 8, 16], value=8, description="GPUs"),
        "link": widgets.Dropdown(
            options=[link.name for link in hardware.links()],
            value=hardware.get_link("nvlink4").name,
            description="link",
        ),
        "tokens": widgets.BoundedIntText(
            value=4096, min=1, max=1_048_576, description="tokens"
        ),
        "context": widgets.BoundedIntText(
            value=4096, min=0, max=131_072, step=512, description="context"
        ),
        "algorithm": widgets.Dropdown(
            options=["ring", "tree"], value="ring", description="algorithm"
        ),
    }


def parallelism() -> Calculator:
    """Chapter ``many_gpus``'s calculator (see :func:`render_parallelism`)."""
    return Calculator(parallelism_controls(), render_parallelism)
