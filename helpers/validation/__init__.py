"""The book's time model against published GPU measurements (:mod:`helpers.published`).

Three predictions for every published number, each built only from the
helpers the chapters teach:

* **naive**: the first-order roofline at the datasheet's peaks, no overhead
  (:func:`helpers.roofline.breakdown`, :func:`helpers.convnets.resnet50_step_time`,
  :func:`helpers.inference.decode_step` without communication, a link at its line rate);
* **constant-free**: what real hardware adds, every term derived and sourced,
  nothing fitted to these data. Achievable peaks (:func:`helpers.roofline.achievable`,
  from the *peak* kind), tile and wave quantization with split-K
  (:func:`helpers.ops.gemm_time`), the GPU-side floor of every kernel
  (:func:`helpers.dispatch.kernel_floor`), the vector roof and fusion of
  ResNet-50's kernels in one stream (:func:`helpers.convnets.resnet50_stream_time`),
  tensor-parallel all-reduces for decode and prefill on several GPUs
  (:func:`helpers.inference.tp_allreduce_time`), a link's achieved share of
  its line rate and its catalog latency (:func:`helpers.kvcache.link_time`);
* **calibrated**: the constant-free model plus **one** constant per GPU and
  kind, a fixed time added where the constant-free model has its floor: per
  GEMM launch (``gemm``), per kernel of CPU dispatch (``resnet50``), per
  decode step (``decode``), per message (``kv_transfer``). It is fitted on one
  point per GPU and kind, chosen by a rule fixed before any error was
  computed: the GPU's smallest GEMM, its batch-1 (smallest-batch) ResNet-50
  point, its smallest decode batch on the fewest GPUs, its smallest message.
  Everything else validates, for both models. The *peak* kind has no
  constant: it is predicted leave-one-architecture-out (a GPU's achievable
  fraction is the median of the fractions of GPUs of other architectures).

Per-operation achievable fractions: GEMMs and convolutions (as implicit
GEMMs) take the GPU's best published GEMM-library share of peak in their
precision class (:func:`helpers.achievable.fractions`); attention and every other memory-bound
kernel the best published bandwidth share. No separate published convolution
or attention peak is in the dataset, so those two borrow the GEMM and the
bandwidth share; the appendix page says where that shows.

Errors are relative, ``(predicted - published) / published``, in the
published quantity (FLOP/s, bytes/s, images/s, tokens/s or seconds).

The package's modules: ``_engine`` (:class:`Prediction`, the fitted constant and
the error statistics), ``_kinds`` (how each kind is predicted, :func:`compare`)
and ``_workloads`` (:func:`predict_workload`); every name is used from here,
``helpers.validation.X``.
"""

from __future__ import annotations

from .._moved import forwarder
from ..achievable import achievable_device, fractions  # noqa: F401 (the tests')
from ..hardware import get_link

LINK_EFFICIENCY = 0.87
"""Share of the line rate a bulk RDMA transfer reaches: Mooncake FAST'25, Fig. 12,
87 GB/s on 4 x 200 Gb/s (:data:`helpers.papers.MOONCAKE_FIG12_TRANSFER_ENGINE`; that
point is not in the dataset scored here)."""

UNSTATED_PRECISION = "fp16"
"""Precision assumed where a source states none (the 16-bit default of the frameworks)."""

RDMA_LATENCY_S = get_link("cx7").latency
"""The constant-free model's latency per message: the catalog's RDMA order of magnitude (2 us)."""

# The kinds read the constants above from this package, so the modules are imported after
# them (E402 is ignored for this file in pyproject.toml).
from ._engine import (
    ErrorSummary,
    Model,
    Prediction,
    Role,
    _solve_constant,  # noqa: F401 (the tests')
    summarize,
    with_role,
)
from ._kinds import (
    _gemm_model,  # noqa: F401 (the tests')
    _run,  # noqa: F401 (the tests')
    calibrated_constant,
    compare,
    implied_constant,
    message_bytes,
)
from ._workloads import Workload, predict_workload

__all__ = [
    "LINK_EFFICIENCY",
    "UNSTATED_PRECISION",
    "RDMA_LATENCY_S",
    "Role",
    "Model",
    "Prediction",
    "message_bytes",
    "compare",
    "ErrorSummary",
    "summarize",
    "with_role",
    "calibrated_constant",
    "implied_constant",
    "Workload",
    "predict_workload",
]

__getattr__ = forwarder(__name__)
