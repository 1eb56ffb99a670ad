"""Every public name that moved, in one table, and the module ``__getattr__`` that forwards it.

:data:`MOVED` maps an old name, ``"<module>.<name>"`` relative to :mod:`helpers`, to its new
home, spelled the same way. A module that lost names ends with
``__getattr__ = forwarder(__name__)``: reading a moved name warns with
:class:`DeprecationWarning` (once per use site) and returns the object from its new home, so an
older notebook still runs. Names that did not move never pass through here (a module's
``__getattr__`` is only consulted for missing attributes), so calls do not warn.

The forwarder holds strings, not imports: a module never imports a moved name's new home, so a
shim cannot close an import circle. Every old name goes in release :data:`REMOVE_IN`; a test
(``tests/test_api.py::test_moved_names_are_removed_on_time``) fails once the package's version
reaches it while the table still holds entries. To move a name: move it, add one line here, and
make sure its old module ends with the forwarder line.

This module imports nothing from :mod:`helpers`, so any module may use it (QuantEcon's PEP 562
pattern, with QuantEcon's stated removal version).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

REMOVE_IN = "0.3.0"
"""The release in which every name in :data:`MOVED` stops working."""

_TRACES = (
    "CACHE_DIR",
    "ENV_VAR",
    "TRACE_SHA256",
    "TRACE_URL",
    "load_trace",
    "load_traces",
    "trace_path",
    "trace_prefill_flops",
)
_MOONCAKE_FIGURES = (
    "TABLE2",
    "FIG9_SHARE_AT_3M",
    "FIG9_LOCAL_TOKENS",
    "FIG9_NEAR_MAX_TOKENS",
    "FIG10_GLOBAL_OVER_LOCAL",
    "FIG10_PREFILL_TIME_RATIO",
    "FIG10_NODES",
)
_VALIDATION_REPORTS = (
    "summary_markdown",
    "worst_markdown",
    "calibration_markdown",
    "fractions_markdown",
    "targets_markdown",
)

_CALCULATORS: dict[str, dict[str, tuple[str, ...]]] = {
    # old module -> {new module (named for its builder): names that moved there}
    "part1": {
        "two_ceilings": (
            "OP_SIZE_LIMITS",
            "render_two_ceilings",
            "two_ceilings_controls",
            "two_ceilings",
        ),
        "rooflines": (
            "ROOFLINE_OPERATIONS",
            "render_rooflines",
            "rooflines_controls",
            "rooflines",
        ),
        "batched_layer": (
            "LAYER_SHAPES",
            "WEIGHT_FORMATS",
            "render_batched_layer",
            "batched_layer_controls",
            "batched_layer",
        ),
        "resnet50": ("render_resnet50", "resnet50_controls", "resnet50"),
    },
    "part2": {
        "transformer_inference": (
            "render_transformer_inference",
            "transformer_inference",
        ),
        "transfer_or_recompute": (
            "TRANSFER_MAX_TOKENS",
            "render_transfer_or_recompute",
            "transfer_or_recompute",
        ),
        "kv_pool": ("render_kv_pool", "kv_pool"),
        "attention_offload": (
            "ILLUSTRATIVE_PRICE",
            "render_attention_offload",
            "attention_offload",
        ),
        "kv_tiers": ("render_kv_tiers", "kv_tiers"),
    },
    "kernel_terms": {
        "matmul_terms": (
            "TERMS",
            "matmul_terms_s",
            "render_matmul_terms",
            "matmul_terms_controls",
            "matmul_terms",
        ),
    },
    "latency": {
        "latency_targets": (
            "latency_targets",
            "latency_targets_controls",
            "render_latency_targets",
        ),
    },
    "many_gpus": {
        "parallelism": ("render_parallelism", "parallelism_controls", "parallelism")
    },
}

MOVED: Mapping[str, str] = MappingProxyType(
    {
        # the split of cachesim into traces, cachesim and routing
        **{f"cachesim.{n}": f"traces.{n}" for n in _TRACES},
        "cachesim.LocalGlobal": "routing.LocalGlobal",
        "cachesim.local_vs_global": "routing.local_vs_global",
        "cachesim.prefill_flops_saved": "llm.prefill_flops_saved",
        # other papers' figures, gathered in papers
        **{f"cachesim.PAPER_{n}": f"papers.MOONCAKE_{n}" for n in _MOONCAKE_FIGURES},
        "serving.MOONCAKE_TBT_SLOS_S": "papers.MOONCAKE_TBT_SLOS_S",
        "serving.MOONCAKE_FIG15_BEST_PD_RATIO": "papers.MOONCAKE_FIG15_BEST_PD_RATIO",
        "kvcache.MOONCAKE_TRANSFER_ENGINE": "papers.MOONCAKE_FIG12_TRANSFER_ENGINE",
        # the replay of a trace through tiers, out of prefix_reuse (which needs torch)
        "prefix_reuse.ReplayedPrefill": "tiers.ReplayedPrefill",
        "prefix_reuse.replay_prefill": "tiers.replay_prefill",
        "tiers.cached_tokens_from_fractions": "tiers._cached_tokens_from_fractions",
        # names unified across the evidence modules
        "published.Measurement": "published.PublishedPoint",
        "published.counts_markdown": "reports.counts_markdown",
        "published.sources_markdown": "reports.sources_markdown",
        "validation.Comparison": "validation.Prediction",
        "validation.PRECISION_CLASS": "achievable.PRECISION_CLASS",
        **{f"validation.{n}": f"reports.{n}" for n in _VALIDATION_REPORTS},
        # one module per calculator, named for its builder, instead of one per book part
        **{
            f"calculators.{old}.{name}": f"calculators.{new}.{name}"
            for old, homes in _CALCULATORS.items()
            for new, names in homes.items()
            for name in names
        },
    }
)
"""Old name -> new home, both relative to :mod:`helpers` (``"cachesim.PAPER_TABLE2"`` ->
``"papers.MOONCAKE_TABLE2"``). One line per moved name; removed in :data:`REMOVE_IN`."""


def moved_from(module: str) -> dict[str, str]:
    """The names that moved out of ``module`` (``"cachesim"`` or ``"helpers.cachesim"``): old -> new home."""
    prefix = module.removeprefix("helpers.") + "."
    return {
        old.removeprefix(prefix): new
        for old, new in MOVED.items()
        if old.startswith(prefix) and "." not in old.removeprefix(prefix)
    }


def forwarder(module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``module`` (pass ``__name__``) forwarding its :data:`MOVED` names.

    Reading a moved name warns where it went and imports its new home then, not before; any
    other missing name raises :class:`AttributeError`, as a module would.
    """
    moved = moved_from(module)

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home, _, new = f"helpers.{moved[name]}".rpartition(".")
        warnings.warn(
            f"{module}.{name} is now {home}.{new} (the old name goes in {REMOVE_IN})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), new)

    return __getattr__
