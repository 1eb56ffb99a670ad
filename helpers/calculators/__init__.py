"""The chapters' calculators: one module per calculator, named for its builder.

A chapter shows its calculator with one line, e.g. ``calculators.two_ceilings().show()``.
Module ``helpers.calculators.<builder>`` holds

* ``<builder>()``: returns a :class:`helpers.widgets.Calculator` whose controls (ipywidgets, with
  the chapter's defaults, from the shared factories of ``helpers.calculators._controls`` and
  from ``<builder>_controls()`` where a chapter wants them) drive
* ``render_<builder>(ax, **values) -> str``: draws into ``ax`` and returns a Markdown summary,
  and raises ``ValueError``/``KeyError``/``TypeError`` with a message naming the bad input (a
  batch that does not fit, capacities that do not grow, a dtype the device lacks), which the
  calculator shows instead of a result. The render functions need no widgets, so the tests
  call them directly (``tests/test_calculators_<builder>.py``).

``CALCULATORS`` lists them, by the slug of the chapter that shows each (its file name in
``_toc.yml`` without the number); the tests and the API page iterate it. **Adding a calculator**
is a module ``helpers/calculators/<builder>.py`` (copy the shortest, ``resnet50.py``), its line
``from .<builder> import *`` below, one line in ``CALCULATORS``, and
``tests/test_calculators_<builder>.py``; ``tests/test_calculators.py`` fails on a module missing
from the table or a slug missing from ``_toc.yml``.

The renders only wire the helpers the chapters use to the controls: every number comes from the
model modules. Dropdowns list the catalogs (:func:`helpers.hardware.accelerators`,
:func:`helpers.hardware.links`, :func:`helpers.llm.models`), so a GPU or a model added there
appears in every calculator. Units as everywhere in :mod:`helpers` (seconds, bytes, FLOP), except
the controls' ``overhead_us``, in microseconds for the slider. An accelerator control is keyed
``acc`` in every calculator.
"""

from collections.abc import Callable, Mapping
from types import MappingProxyType

from ..widgets import Calculator
from .attention_offload import *  # noqa: F403
from .batched_layer import *  # noqa: F403
from .kv_pool import *  # noqa: F403
from .kv_tiers import *  # noqa: F403
from .latency_targets import *  # noqa: F403
from .matmul_terms import *  # noqa: F403
from .parallelism import *  # noqa: F403
from .plan_deployment import *  # noqa: F403
from .resnet50 import *  # noqa: F403
from .rooflines import *  # noqa: F403
from .transfer_or_recompute import *  # noqa: F403
from .transformer_inference import *  # noqa: F403
from .two_ceilings import *  # noqa: F403

# F405: the builders come from the star imports above, one per module.
CALCULATORS: Mapping[str, Callable[..., Calculator]] = MappingProxyType(
    {
        "two_ceilings": two_ceilings,  # noqa: F405
        "roofline": rooflines,  # noqa: F405
        "below_roofline": matmul_terms,  # noqa: F405
        "batching": batched_layer,  # noqa: F405
        "convolutions": resnet50,  # noqa: F405
        "transformer_inference": transformer_inference,  # noqa: F405
        "transfer_or_recompute": transfer_or_recompute,  # noqa: F405
        "latency_targets": latency_targets,  # noqa: F405
        "disaggregated_memory": kv_pool,  # noqa: F405
        "attention_offload": attention_offload,  # noqa: F405
        "hybrid_strategies": kv_tiers,  # noqa: F405
        "many_gpus": parallelism,  # noqa: F405
        "plan_deployment": plan_deployment,  # noqa: F405
    }
)
"""Chapter slug -> the builder of the calculator that chapter shows; the builder's module is
``helpers.calculators.<builder name>``. One line per calculator."""

__all__ = ["CALCULATORS", *(b.__name__ for b in CALCULATORS.values())]
