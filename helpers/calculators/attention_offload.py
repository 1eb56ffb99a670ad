"""The calculator of the chapter ``attention_offload``:
tokens per dollar of attention offload against an all-GPU baseline.

:func:`attention_offload` builds it (controls with the chapter's defaults) around
:func:`render_attention_offload`, which draws and returns a Markdown summary. Conventions are in
:mod:`helpers.calculators`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import ipywidgets as widgets
from matplotlib.axes import Axes

from .. import inference, offload, plots
from ..widgets import Calculator
from . import _controls

__all__ = ["ILLUSTRATIVE_PRICE", "attention_offload", "render_attention_offload"]


ILLUSTRATIVE_PRICE: Mapping[str, float] = MappingProxyType(
    {
        "H100 SXM": 2.50,
        "H200 SXM": 3.50,
        "H20": 1.00,
        "L4": 0.50,
        "A10G": 0.80,
        "RTX 4090": 0.40,
    }
)
"""Dollars per device-hour used as Chapter ``attention_offload``'s defaults: round numbers for the
example, NOT market quotes."""


def render_attention_offload(
    ax: Axes,
    model: str,
    context: int,
    compute: str,
    n_compute: int,
    memory: str,
    n_memory: int,
    link: str,
    n_baseline: int,
    price_compute: float,
    price_memory: float,
    dtype: str,
) -> str:
    """Chapter ``attention_offload``: tokens per dollar against the batch, all-GPU baseline against
    attention offload."""
    if not inference.weights_fit(model, compute, n_gpus=n_compute, dtype=dtype):
        raise ValueError(
            f"n_compute: the weights of {model} do not fit on {n_compute} × {compute}"
        )
    base_cap = inference.max_decode_batch(
        model, context, compute, n_gpus=n_baseline, dtype=dtype
    )
    off_cap = inference.max_decode_batch(
        model, context, memory, n_gpus=n_memory, dtype=dtype, holds_weights=False
    )
    if base_cap == 0 or off_cap == 0:
        raise ValueError(
            "n_baseline / n_memory: not even one sequence's KV cache fits; "
            "add devices or shorten the context"
        )
    base_price = n_baseline * price_compute
    off_price = n_compute * price_compute + n_memory * price_memory
    base_b, off_b = _controls.batch_grid(base_cap), _controls.batch_grid(off_cap)
    base = [
        b
        / inference.decode_step_time(
            model,
            context,
            compute,
            batch=int(b),
            dtype=dtype,
            n_gpus=n_baseline,
            link=None,  # offload's model has no TP communication either
        )
        for b in base_b
    ]
    steps = [
        offload.offload_step_time(
            model,
            context,
            compute,
            memory,
            link,
            batch=int(b),
            n_compute=n_compute,
            n_memory=n_memory,
            dtype=dtype,
        )
        for b in off_b
    ]
    over = [b / s.overlapped_s for b, s in zip(off_b, steps, strict=True)]
    serial = [b / s.serial_s for b, s in zip(off_b, steps, strict=True)]

    def per_dollar(rates: list[float], price: float) -> list[float]:
        return [offload.tokens_per_dollar(r, price) for r in rates]

    ax.loglog(
        base_b,
        per_dollar(base, base_price),
        label=f"{n_baseline} × {compute} (baseline)",
    )
    ax.loglog(
        off_b,
        per_dollar(over, off_price),
        label=f"offload, overlapped: {n_compute} × {compute} + {n_memory} × {memory}",
    )
    ax.loglog(off_b, per_dollar(serial, off_price), ls="--", label="offload, serial")
    ax.set_xlabel("batch (sequences per decode step)")
    ax.set_ylabel("tokens per dollar (your prices)")
    ax.legend(fontsize=plots.SMALL)
    last = steps[-1]
    ratio = offload.breakeven_price_ratio(
        over[-1], n_compute, n_memory, base[-1], n_baseline
    )
    verdict = " (it cannot win even with free memory devices)." if ratio <= 0 else "."
    return (
        f"**Baseline** {n_baseline} × {compute}: batch {base_cap}, {base[-1]:,.0f} tokens/s, "
        f"**{offload.tokens_per_dollar(base[-1], base_price):,.0f} tokens/\\$**.  \n"
        f"**Offload** {n_compute} × {compute} + {n_memory} × {memory}: batch {off_cap}, step "
        f"{last.linear_s * 1e3:.1f} ms linear / {last.attention_s * 1e3:.1f} ms attention / "
        f"{last.transfer_s * 1e3:.1f} ms link; {over[-1]:,.0f} tokens/s overlapped "
        f"({serial[-1]:,.0f} serial), "
        f"**{offload.tokens_per_dollar(over[-1], off_price):,.0f} tokens/\\$** overlapped.  \n"
        f"Price-free: at these batches offload ties when one {memory} costs **{ratio:.2f} ×** "
        f"one {compute}{verdict}"
    )


def attention_offload() -> Calculator:
    """Chapter ``attention_offload``'s calculator: compute GPUs, memory devices, the link, a
    baseline and prices per hour."""
    controls = {
        "model": _controls.model("llama-3-70b"),
        "context": widgets.BoundedIntText(
            value=4096, min=0, max=1_000_000, step=1024, description="context"
        ),
        "compute": _controls.accelerator("H100 SXM", description="compute"),
        "n_compute": widgets.BoundedIntText(
            value=4, min=1, max=64, description="# compute"
        ),
        "memory": _controls.accelerator("H20", description="memory"),
        "n_memory": widgets.BoundedIntText(
            value=8, min=1, max=512, description="# memory"
        ),
        "link": _controls.link("ConnectX-7 (400 Gb/s)"),
        "n_baseline": widgets.BoundedIntText(
            value=8, min=1, max=64, description="# baseline"
        ),
        "price_compute": widgets.BoundedFloatText(
            value=ILLUSTRATIVE_PRICE["H100 SXM"],
            min=0,
            max=1000,
            step=0.1,
            description="$/h compute",
        ),
        "price_memory": widgets.BoundedFloatText(
            value=ILLUSTRATIVE_PRICE["H20"],
            min=0,
            max=1000,
            step=0.1,
            description="$/h memory",
        ),
        "dtype": _controls.dtype("bf16"),
    }
    return Calculator(controls, render_attention_offload)
