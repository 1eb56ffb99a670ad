"""Tests of :mod:`helpers.profiling`: kernel names from cuDNN, cuBLAS and aten are sorted by kind."""

from __future__ import annotations

import pytest

from helpers import profiling


@pytest.mark.parametrize(
    "name, kind",
    [
        ("aten::conv2d", "matrix"),
        ("aten::addmm", "matrix"),
        ("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_nhwc", "matrix"),
        ("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", "matrix"),
        ("aten::batch_norm", "elementwise"),
        ("aten::relu_", "elementwise"),
        ("void at::native::vectorized_elementwise_kernel<4, ...>", "elementwise"),
        ("aten::max_pool2d", "elementwise"),
        ("aten::empty", "other"),
    ],
)
def test_kernel_kind(name, kind):
    """Real kernel and operator names land in the right kind."""
    assert profiling.kernel_kind(name) == kind


def test_summarize_counts_and_times():
    """Counts and times add up per kind; a negative time is refused."""
    s = profiling.summarize(
        [("aten::conv2d", 3.0), ("aten::relu", 1.0), ("aten::add", 1.0)]
    )
    assert s == {"matrix": (1, 3.0), "elementwise": (2, 2.0)}
    with pytest.raises(ValueError, match="seconds"):
        profiling.summarize([("aten::conv2d", -1.0)])
