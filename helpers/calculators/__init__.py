"""The chapters' calculators: each a tested ``render`` function and a builder.

A chapter shows its calculator with one line, e.g.
``calculators.two_ceilings().show()``. Each builder returns a
:class:`helpers.widgets.Calculator` whose controls (ipywidgets, with the
chapter's defaults, built from the shared factories of
``helpers.calculators._controls``, and from ``*_controls()`` where a chapter wants them) drive a
``render_*`` function: ``render_*(ax, **values) -> str`` draws into ``ax``
and returns a Markdown summary, and raises ``ValueError``/``KeyError``/
``TypeError`` with a message naming the bad input (a batch that does not fit,
capacities that do not grow, a dtype the device lacks), which the calculator
shows instead of a result. The render functions need no widgets, so the tests
call them directly.

Part I (rooflines and batching), in ``helpers.calculators.part1`` (chapter 3's in
``helpers.calculators.kernel_terms``):

* :func:`~helpers.calculators.part1.two_ceilings` (chapter 1) -- which of compute, memory and overhead
  binds one operation, as its size varies;
* :func:`~helpers.calculators.part1.rooflines` (chapter 2) -- rooflines of several devices and dtypes,
  with operations placed on them;
* :func:`~helpers.calculators.part1.batched_layer` (chapter 4) -- step time, throughput and regime of a
  linear layer or MLP against the batch;
* :func:`~helpers.calculators.kernel_terms.matmul_terms` (chapter 3) -- a square matmul's time, term
  by term (roofline, achievable peaks and tiles, GPU floor, library's fixed cost), beside published
  measurements, against its size;
* :func:`~helpers.calculators.part1.resnet50` (chapter 5) -- ResNet-50's layers on a roofline, and the
  network's step time with a per-layer overhead.

Part II (serving a transformer), in ``helpers.calculators.part2``:

* :func:`~helpers.calculators.part2.transformer_inference` (chapter 6) -- prefill and decode bounds, the
  KV cache and the largest batch that fits, against the batch;
* :func:`~helpers.calculators.part2.transfer_or_recompute` (chapter 7) -- recompute a prefix's KV cache
  or fetch it, against the prefix length;
* :func:`~helpers.calculators.part2.kv_pool` (chapter 9) -- a KV-cache pool's hit rate on a trace, and
  the prefill compute it saves;
* :func:`~helpers.calculators.part2.attention_offload` (chapter 10) -- tokens per dollar of attention
  offload against an all-GPU baseline;
* :func:`~helpers.calculators.part2.kv_tiers` (chapter 11) -- a tiered KV cache, fetch or compute per
  part of a prompt.

Latency targets, in ``helpers.calculators.latency``:

* :func:`~helpers.calculators.latency.latency_targets` (chapter 8) -- a decode step carrying a prompt's
  last chunk against the chunk size, and the prefill utilisation a TTFT target allows.

Planning, in ``helpers.calculators.plan_deployment``:

* :func:`~helpers.calculators.plan_deployment.plan_deployment` (chapter 13) -- the planner's ranked
  layouts and the plan, with its cost.

Many GPUs, in ``helpers.calculators.many_gpus``:

* :func:`~helpers.calculators.many_gpus.parallelism` (chapter 12) -- what tensor or context
  parallelism's collectives cost against the compute they split.

The renders only wire the helpers the chapters use to the controls: every
number comes from the model modules. Dropdowns list the catalogs
(:func:`helpers.hardware.accelerators`, :func:`helpers.hardware.links`,
:func:`helpers.llm.models`), so a GPU or a model added there appears in every
calculator. Units as everywhere in :mod:`helpers` (seconds, bytes, FLOP),
except the controls' ``overhead_us``, in microseconds for the slider. An
accelerator control is keyed ``acc`` in every calculator.
"""

from .kernel_terms import *  # noqa: F403
from .kernel_terms import __all__ as _kernel_terms
from .latency import *  # noqa: F403
from .latency import __all__ as _latency
from .many_gpus import *  # noqa: F403
from .many_gpus import __all__ as _many_gpus
from .part1 import *  # noqa: F403
from .part1 import __all__ as _part1
from .part2 import *  # noqa: F403
from .part2 import __all__ as _part2
from .plan_deployment import *  # noqa: F403
from .plan_deployment import __all__ as _plan_deployment

__all__ = [*_part1, *_kernel_terms, *_part2, *_latency, *_many_gpus, *_plan_deployment]
