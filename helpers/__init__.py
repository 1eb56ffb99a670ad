"""Helpers for *GPU performance from first principles*: every formula and number the book uses.

Each quantity has exactly one function, in the module of its concept; every
notebook, lab, benchmark and test calls that function. SI units throughout
(seconds, bytes, FLOP, FLOP/s, bytes/s); a name carries its unit where SI is
not obvious (``tbt_s``, ``capacity_bytes``).

Modules, one concept each (``helpers.MODULES`` lists them by kind):

* :mod:`helpers.hardware` -- what a device is: accelerators and links with
  datasheet sources, dtype sizes, torch device names
* :mod:`helpers.roofline` -- the time model: ridge point, attainable FLOP/s,
  the time :func:`~helpers.roofline.breakdown`, the critical (crossing) batch
* :mod:`helpers.ops` -- what an operation costs: elementwise, matmul, linear,
  MLP, convolution, ResNet-50's layers
* :mod:`helpers.batching` -- a layer over a range of batch sizes, and the
  measured knee
* :mod:`helpers.convnets` -- convolutions on the roofline: intensity limits,
  ResNet-50 layer by layer
* :mod:`helpers.dispatch`, :mod:`helpers.fusion`, :mod:`helpers.l2cache` --
  what real hardware adds to the roofline: CPU-GPU asynchrony, unfused
  elementwise kernels, the L2 cache (tiles and waves are in :mod:`helpers.ops`,
  several compute roofs and derated ceilings in :mod:`helpers.roofline`)
* :mod:`helpers.calibration` -- fitting the first- and second-order time
  models to measurements and testing them on held-out points
* :mod:`helpers.profiling` -- sorting a profiler's kernels into matrix and
  elementwise work
* :mod:`helpers.published`, :mod:`helpers.validation` -- GPU measurements
  others published, each cited, and the time models checked against them
* :mod:`helpers.achievable` -- achievable shares of datasheet peaks, from
  the published peak measurements
* :mod:`helpers.reports` -- Markdown tables of those measurements and errors
* :mod:`helpers.papers` -- the figures of other papers (Mooncake) the book
  sets its models beside, cited
* :mod:`helpers.llm` -- what a transformer costs: configs, parameters, KV
  cache, prefill and decode FLOP and bytes
* :mod:`helpers.kv_formats` -- how a KV cache stores each element: fp8, int8,
  NVFP4, KIVI-style int4/int2, with their scale overhead
* :mod:`helpers.inference` -- serving: prefill and decode step times, the
  largest batch that fits, batches under a latency target
* :mod:`helpers.parallel` -- collectives across GPUs: ring and tree
  all-reduce, all-gather, reduce-scatter, all-to-all over the catalog's links
* :mod:`helpers.serving` -- serving under TTFT and TBT targets: a decode
  step with a prefill chunk, goodput, the prefill-to-decode ratio
* :mod:`helpers.queueing` -- DistServe's M/D/1 queue in front of a prefill
  instance: the mean wait, and the utilisation a TTFT target allows; the
  M/G/1 queue of prompts of unequal length (a trace's prefill times)
* :mod:`helpers.kvcache` -- moving a KV cache: transfer against recompute,
  break-even, Mooncake's bandwidth threshold
* :mod:`helpers.tiers` -- a tiered KV cache and layer-wise prefetching
* :mod:`helpers.offload` -- attention offload to memory-rich devices
* :mod:`helpers.attention_variants` -- sliding-window, linear-hybrid and sparse attention:
  the cache they keep, the bytes a step reads, c(n) and prefix reuse
* :mod:`helpers.traces` -- the Mooncake request traces: loading and checking
  them, what their prompts cost to prefill
* :mod:`helpers.cachesim` -- prefix-cache hit rates of a trace, at every
  capacity in one pass
* :mod:`helpers.routing` -- a trace routed over nodes with one cache each (hot prefixes copied or not),
  against one pooled cache
* :mod:`helpers.belady` -- Bélády's optimal replacement: the hit-rate bound beside LRU
* :mod:`helpers.multigpu` -- what parallelism costs a model: TP, EP, CP and PP collectives
* :mod:`helpers.prefix_reuse` -- reusing a cached prefix: TinyGPT's suffix
  prefill, and every request of a trace through a tier hierarchy
* :mod:`helpers.planner` -- planning a deployment: layouts, pools, batch, KV tiers
  and engine flags under TTFT and TBT targets (``python -m helpers.planner``)
* :mod:`helpers.pd_replay` -- a trace replayed request by request through
  prefill and decode pools: each request's TTFT and TBT, the share within
  thresholds, and Mooncake's Figs. 14 and 15 beside it
* :mod:`helpers.bench`, :mod:`helpers.labtools`, :mod:`helpers.tinygpt`,
  :mod:`helpers.kvtransfer`, :mod:`helpers.kvpool` -- measuring this machine
  (torch, imported lazily; ``kvpool``: a local Mooncake Store pool)
* :mod:`helpers.plots`, :mod:`helpers.figures_part2`, :mod:`helpers.widgets`, :mod:`helpers.calculators`,
  :mod:`helpers.exercises`, :mod:`helpers.formatting` -- the book's figures,
  calculator harness, the chapters' calculators, answer checks, and printed
  numbers and tables

Calling convention, followed by every public function: first what is
computed on (a model, a cost, a layer), then how big (tokens, context, batch,
a shape), then where (accelerator, link), all positional; then every option
keyword-only (``dtype``, ``batch`` where it has a default, ``n_gpus``,
``mfu``, ``reserve``, ``overhead`` ...). Functions that split a time into its
terms return :class:`helpers.roofline.TimeBreakdown`. "Never" is ``math.inf``
for a batch or a token count (a crossing that is never reached), ``None`` for
an interval that does not exist, and 0 for a batch that does not fit.

Adding a GPU is one entry in ``helpers/_accelerators.py`` (its ``torch_names``
let the labs recognise it); adding a model is one entry in the model catalog
(``helpers/_models.py``). Every table, dropdown and chapter enumerates those
catalogs; CONTRIBUTING.md has the recipes and names the test that catches a step
left out. A name that moved is one line of ``helpers._moved.MOVED``.

``import helpers`` does not import torch, so the chapters also run in the browser.
"""

from . import hardware, inference, kvcache, llm, ops, roofline

MODULES: dict[str, tuple[str, ...]] = {
    "model": (
        "hardware",
        "roofline",
        "ops",
        "batching",
        "convnets",
        "dispatch",
        "fusion",
        "l2cache",
        "calibration",
        "profiling",
        "published",
        "achievable",
        "validation",
        "reports",
        "papers",
        "llm",
        "kv_formats",
        "attention_variants",
        "inference",
        "serving",
        "queueing",
        "parallel",
        "multigpu",
        "kvcache",
        "tiers",
        "offload",
        "traces",
        "cachesim",
        "belady",
        "routing",
        "prefix_reuse",
        "efficiency",
        "steps",
        "engine",
        "planner",
        "pd_replay",
    ),
    "measure": ("bench", "labtools", "tinygpt", "kvtransfer", "kvpool"),
    "book": (
        "plots",
        "figures_part2",
        "widgets",
        "calculators",
        "exercises",
        "formatting",
    ),
}
"""Every public module of the package, once, by kind: ``"model"`` (the formulas, the specs and
the evidence; no torch), ``"measure"`` (measuring this machine; torch, imported lazily) and
``"book"`` (figures, calculators, answer checks, printed numbers). The tests, the README's layout
table and the API page are checked against it; a new module is one line here."""

__all__ = ["MODULES", "hardware", "inference", "kvcache", "llm", "ops", "roofline"]
__version__ = "0.2.0"
