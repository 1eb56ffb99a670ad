"""The calling convention of ``helpers/__init__.py`` holds for every public function of the model modules.

Positional: what is computed on, how big, where. Every option (dtype, n_gpus,
mfu, reserve, overhead ...) is keyword-only, so ``f(model, 4096, "H100", 8)``
is a TypeError instead of a silently different question.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

MODEL_MODULES = [
    "roofline",
    "ops",
    "batching",
    "convnets",
    "dispatch",
    "fusion",
    "l2cache",
    "calibration",
    "llm",
    "inference",
    "serving",
    "kvcache",
    "tiers",
    "offload",
    "prefix_reuse",
    "formatting",
    "plots",
]
OPTIONS = {
    "dtype",
    "weight_dtype",
    "n_gpus",
    "mfu",
    "reserve",
    "overhead",
    "holds_weights",
    "tbt_s",
    "max_batch",
    "gated",
    "stride",
    "padding",
    "image_size",
    "n_inputs",
    "flops_per_element",
    "outputs",
    "n_links",
    "n_compute",
    "n_memory",
    "max_tokens",
    "block_tokens",
    "digits",
    "align",
    "knee",
    "mark",
    "fraction",
    "tile",
    "tiles",
    "roof",
    "fused",
    "dispatch_s",
    "usable_fraction",
    "min_k_chunk",
    "model",
    "tile_cols",
    "rounds",
}
"""Names of options: a parameter so named that has a default must be keyword-only (``batch`` too, unless it is
the first parameter, as in ``ops.resnet50_layers(batch=1)``)."""


def _public_functions():
    for name in MODEL_MODULES:
        module = importlib.import_module(f"helpers.{name}")
        for attr, func in inspect.getmembers(module, inspect.isfunction):
            if not attr.startswith("_") and func.__module__ == module.__name__:
                yield f"{name}.{attr}", func


@pytest.mark.parametrize(
    "qualified, func",
    list(_public_functions()),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_options_are_keyword_only(qualified, func):
    """Every option, and ``batch`` where it has a default after a size, is keyword-only."""
    params = list(inspect.signature(func).parameters.values())
    positional = [
        p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    optional = [
        (i, p.name) for i, p in enumerate(positional) if p.default is not p.empty
    ]
    misplaced = [
        name for i, name in optional if name in OPTIONS or (name == "batch" and i > 0)
    ]
    assert misplaced == [], f"{qualified}: options {misplaced} must be keyword-only"
