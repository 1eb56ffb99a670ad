"""Helpers for *GPU performance from first principles*: every formula and number the book uses.

Modules (SI units throughout: seconds, bytes, FLOP, FLOP/s, bytes/s):

* :mod:`helpers.hardware` -- accelerators and links with datasheet sources
* :mod:`helpers.roofline` -- ridge point, attainable FLOP/s, roofline time
* :mod:`helpers.ops` -- FLOPs and bytes of matmuls, MLPs, convolutions, ResNet-50
* :mod:`helpers.llm` -- transformer configs, parameters, KV cache, prefill/decode cost
* :mod:`helpers.kvcache` -- transfer versus recompute of a KV cache
* :mod:`helpers.bench` -- measure this machine (imports torch lazily)
* :mod:`helpers.plots`, :mod:`helpers.widgets`, :mod:`helpers.exercises` -- figures, calculators, answer checks

``import helpers`` does not import torch, so the chapters also run in the browser.
"""

from . import hardware, kvcache, llm, ops, roofline

__all__ = ["hardware", "kvcache", "llm", "ops", "roofline"]
__version__ = "0.1.0"
