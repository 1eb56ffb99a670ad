"""Tests of :mod:`helpers.profiling`: kernels are classified by the op that launched them, then by name.

The kernel names are real ones, as they appear in published profiles of cuDNN,
cuBLAS and CUTLASS on T4 (Turing), V100 (Volta), A100 (Ampere) and H100
(Hopper) GPUs: the Turing and Volta cuDNN convolutions as quoted in
NVIDIA/apex#530, ryujaehun/pytorch-gpu-benchmark#6 and TensorFlow's
``IsKernelUsingTensorCore``; cuBLAS's Hopper ``nvjet`` GEMMs, Ampere's
``s16816`` and ``sm80_xmma`` kernels as Nsight Systems lists them.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from helpers import profiling

REAL_KERNELS = [
    # T4 (sm_75): cuDNN tensor-core convolutions whose names carry a fused-relu epilogue
    (
        "turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
        "matrix",
    ),
    (
        "turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_interior_nhwc_tn_v1",
        "matrix",
    ),
    ("turing_h1688gemm_128x128_ldg8_nn", "matrix"),
    (
        "void cudnn::winograd::winograd3x3Kernel<float, float, 4, 1, 8, (cudnn::winograd::WinogradLayout)0>(cudnn::winograd::Winograd3x3Params)",
        "matrix",
    ),
    (
        "void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, true, false, true>",
        "matrix",
    ),
    # V100 (sm_70)
    (
        "volta_fp16_s884cudnn_fp16_256x128_ldg8_splitK_relu_f2f_exp_small_nhwc_tn_v1",
        "matrix",
    ),
    ("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", "matrix"),
    ("volta_sgemm_128x64_nn", "matrix"),
    # A100 (sm_80)
    (
        "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_t1r1s1_execute_kernel_trt",
        "matrix",
    ),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", "matrix"),
    (
        "void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_relu_f16_64x64_64x4_nhwc_align8>(cutlass_80_tensorop_f16_s16816gemm_relu_f16_64x64_64x4_nhwc_align8::Params)",
        "matrix",
    ),
    (
        "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>",
        "matrix",
    ),
    # H100 (sm_90)
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "matrix"),
    (
        "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        "matrix",
    ),
    # elementwise, normalization, pooling, layout (any GPU)
    (
        "void cudnn::bn_fw_inf_1C11_kernel_NCHW<__half, float, true, 1>(float, float, cudnnTensorStruct)",
        "elementwise",
    ),
    (
        "void at::native::batch_norm_transform_input_channels_last_kernel<c10::Half, float, float, true>",
        "elementwise",
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar>",
        "elementwise",
    ),
    (
        "void at::native::(anonymous namespace)::max_pool_forward_nhwc<c10::Half, float>",
        "elementwise",
    ),
    (
        "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>",
        "layout",
    ),
    # operators (the CPU profile)
    ("aten::conv2d", "matrix"),
    ("aten::addmm", "matrix"),
    ("aten::batch_norm", "elementwise"),
    ("aten::relu_", "elementwise"),
    ("aten::max_pool2d", "elementwise"),
    ("aten::empty", "other"),
    ("Memset (Device)", "other"),
]


@pytest.mark.parametrize("name, kind", REAL_KERNELS)
def test_kernel_kind_from_real_names(name, kind):
    """Real kernel names from T4, V100, A100 and H100 profiles land in the right kind by name alone."""
    assert profiling.kernel_kind(name) == kind


def test_the_launching_op_decides_before_the_name():
    """A kernel whose name says nothing (or says 'relu') is classified by the aten op that launched it."""
    conv = (
        "aten::cudnn_convolution",
        "aten::_convolution",
        "aten::convolution",
        "aten::conv2d",
    )
    assert profiling.kernel_class("sm75_xmma_fprop_fused_kernel", ops=conv) == "matrix"
    assert profiling.kernel_class("some_future_kernel_v9", ops=conv) == "matrix"
    assert (
        profiling.kernel_class(
            "some_future_kernel_v9", ops=("aten::cudnn_batch_norm", "aten::batch_norm")
        )
        == "elementwise"
    )
    assert (
        profiling.kernel_class("some_future_kernel_v9", ops=("aten::add_",))
        == "elementwise"
    )
    assert (
        profiling.kernel_class("some_future_kernel_v9") == "other"
    )  # no op, unknown name
    # unknown op: the name decides
    assert (
        profiling.kernel_class("nvjet_tst_64x8", ops=("aten::my_custom_op",))
        == "matrix"
    )


def _event(name, kernels=(), parent=None):
    return SimpleNamespace(
        name=name,
        kernels=[SimpleNamespace(name=k, duration=us) for k, us in kernels],
        cpu_parent=parent,
    )


def test_launched_kernels_reads_a_profile_and_summarizes_it():
    """Kernels hang off the op that launched them (FunctionEvent.kernels, durations in µs)."""
    conv2d = _event("aten::conv2d")
    cudnn = _event(
        "aten::cudnn_convolution",
        [
            (
                "turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
                30.0,
            )
        ],
        conv2d,
    )
    bn = _event(
        "aten::cudnn_batch_norm",
        [("void cudnn::bn_fw_inf_1C11_kernel_NHWC<__half>", 5.0)],
    )
    relu = _event("aten::relu_", [("mystery_kernel", 2.0)])
    kernels = profiling.launched_kernels([conv2d, cudnn, bn, relu])
    assert [k.ops for k in kernels][0] == ("aten::cudnn_convolution", "aten::conv2d")
    assert kernels[0].seconds == pytest.approx(30e-6)
    s = profiling.summarize(kernels)
    assert s["matrix"] == (1, pytest.approx(30e-6))
    assert s["elementwise"] == (2, pytest.approx(7e-6))
    assert profiling.unclassified(kernels) == []
    odd = profiling.launched_kernels([_event("aten::foo", [("mystery", 1.0)])])
    assert profiling.unclassified(odd) == ["mystery"]


def test_summarize_counts_and_times():
    """Counts and times add up per kind; a negative time is refused."""
    s = profiling.summarize(
        [("aten::conv2d", 3.0), ("aten::relu", 1.0), ("aten::add", 1.0)]
    )
    assert s == {"matrix": (1, 3.0), "elementwise": (2, 2.0)}
    with pytest.raises(ValueError, match="seconds"):
        profiling.summarize([("aten::conv2d", -1.0)])


def _trace():
    """A two-op GPU trace: conv2d launches one conv kernel, relu one elementwise kernel."""
    ev = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "step",
            "ts": 100,
            "dur": 60,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::conv2d",
            "ts": 105,
            "dur": 20,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::convolution",
            "ts": 106,
            "dur": 18,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": 110,
            "dur": 5,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::relu",
            "ts": 130,
            "dur": 10,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "sm80_xmma_fprop_implicit_gemm",
            "ts": 120,
            "dur": 30,
            "tid": 7,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "vectorized_elementwise_kernel",
            "ts": 150,
            "dur": 4,
            "tid": 7,
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::empty",
            "ts": 500,
            "dur": 1,
            "tid": 1,
            "args": {"x": 1},
        },
        {"ph": "i", "name": "marker", "ts": 120},
    ]
    return {"traceEvents": ev}


def test_timeline_places_cpu_ops_by_depth_and_kernels_below():
    """Times are seconds from the first event; nesting sets the depth; kernels are classified."""
    events = profiling.timeline(_trace())
    by = {e.name: e for e in events}
    assert by["step"].start == 0 and by["step"].depth == 0
    assert by["aten::conv2d"].depth == 1 and by["aten::convolution"].depth == 2
    assert by["cudaLaunchKernel"].depth == 3 and by["cudaLaunchKernel"].kind == "launch"
    assert by["aten::relu"].depth == 1 and by["aten::relu"].kind == "elementwise"
    gemm = by["sm80_xmma_fprop_implicit_gemm"]
    assert gemm.lane == "gpu" and gemm.kind == "matrix"
    assert gemm.start == pytest.approx(20e-6) and gemm.seconds == pytest.approx(30e-6)
    assert "marker" not in by


def test_trim_trace_keeps_one_annotated_step_without_args():
    trimmed = profiling.trim_trace(_trace(), annotation="step")
    names = [e["name"] for e in trimmed["traceEvents"]]
    assert "aten::empty" not in names and "vectorized_elementwise_kernel" in names
    assert all("args" not in e for e in trimmed["traceEvents"])
    with pytest.raises(KeyError, match="annotation"):
        profiling.trim_trace(_trace(), annotation="nope")
    with pytest.raises(KeyError, match="traceEvents"):
        profiling.timeline({"events": []})


def test_plot_timeline_draws_both_lanes_and_says_when_there_is_no_gpu():
    import matplotlib

    matplotlib.use("Agg")
    events = profiling.timeline(_trace())
    ax = profiling.plot_timeline(events)
    assert ax.get_yticklabels()[0].get_text() == "GPU kernels"
    cpu_only = [e for e in events if e.lane == "cpu"]
    ax = profiling.plot_timeline(cpu_only)
    assert ax.get_yticklabels()[0].get_text() == "GPU: none (CPU run)"
    with pytest.raises(ValueError, match="events"):
        profiling.plot_timeline([])


def test_the_committed_cpu_trace_is_one_small_step_of_a_bottleneck():
    """Chapter 3's worked timeline: one step, four convolutions, under 200 kB, its device named."""
    from pathlib import Path

    path = (
        Path(__file__).resolve().parents[1]
        / "chapters/figures/trace_cpu_resnet_block.json"
    )
    assert path.stat().st_size < 200_000
    trace = profiling.load_trace(path)
    assert trace["device"].startswith("CPU: ")
    events = profiling.timeline(trace)
    top = [e for e in events if e.depth == 1]
    assert [e.name for e in top].count("aten::conv2d") == 4
    assert {e.lane for e in events} == {"cpu"}


def test_record_trace_and_profile_kinds_on_this_machine(tmp_path):
    """A real profile of one bottleneck: four convolutions at depth 1, written as a small trace."""
    torch = pytest.importorskip("torch")
    block = profiling.resnet_bottleneck(c_in=8, width=8, c_out=16)
    x = torch.randn(1, 8, 8, 8)
    trace = profiling.record_trace(lambda: block(x), tmp_path / "t.json", warmup=1)
    assert (tmp_path / "t.json").stat().st_size < 200_000
    top = [e.name for e in profiling.timeline(trace) if e.depth == 1]
    assert top.count("aten::conv2d") == 4
    kinds, unknown = profiling.profile_kinds(lambda: block(x))
    assert kinds["matrix"][0] >= 4 and kinds["elementwise"][0] >= 3 and unknown == []
    with pytest.raises(ValueError, match="width"):
        profiling.resnet_bottleneck(width=0)
