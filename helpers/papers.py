"""Figures other papers publish that the book sets its models beside, one namespace, one naming scheme.

Every name is ``<PAPER>_<WHERE>_<WHAT>`` (``MOONCAKE_FIG9_SHARE_AT_3M``: the
Mooncake paper, Fig. 9, the share at 3 M tokens), in SI units or with the
unit in the name, and is used by a chapter or a test (``tests/test_papers.py``
lists which). Sources:

* Mooncake: Qin et al., "Mooncake: Trading More Storage for Less Computation",
  FAST'25 (the PDF in the Mooncake repository,
  ``FAST25-release/Mooncake-FAST25.pdf``, commit 3b5a594).

GPU measurements others published are in :mod:`helpers.published`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from . import _moved
from .kvcache import MeasuredTransfer

MOONCAKE_TABLE2: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "conversation": MappingProxyType(
            {
                "mean_input": 12_035,
                "mean_output": 343,
                "cache_ratio": 0.40,
                "requests": 12_031,
            }
        ),
        "toolagent": MappingProxyType(
            {
                "mean_input": 8_596,
                "mean_output": 182,
                "cache_ratio": 0.59,
                "requests": 23_608,
            }
        ),
        "synthetic": MappingProxyType(
            {
                "mean_input": 15_325,
                "mean_output": 149,
                "cache_ratio": 0.66,
                "requests": 3_993,
            }
        ),
    }
)
"""Mooncake FAST'25, Table 2 ("Workload Statistics"): mean input and output tokens, "Cache Ratio", requests.

The paper does not define "Cache Ratio" beyond "prefix caching ratio"
(§5.2.1); :func:`helpers.cachesim.hit_rate_definitions` computes the candidate definitions.
"""

MOONCAKE_FIG9_SHARE_AT_3M: Mapping[str, float] = MappingProxyType(
    {"conversation": 0.41, "toolagent": 0.75, "synthetic": 0.46, "all": 0.48}
)
"""Mooncake FAST'25, Fig. 9: hit rate of a 3 M-token LRU cache as a share of the workload's maximum.

Read from the figure's arrow labels ("41% max" points at the Conversation
curve, "75% max" at Tool&Agent, "46% max" at Synthetic, "48% max" at All).
§5.3.1 adds that "a cache capacity of 50M tokens nearly reaches the
theoretical maximum hit rate" (:data:`MOONCAKE_FIG9_NEAR_MAX_TOKENS`).
"""

MOONCAKE_FIG9_LOCAL_TOKENS = 3e6
"""Mooncake FAST'25, §5.3.1 and Fig. 9: tokens a node's ~1 TB of local DRAM holds ("about 3 million tokens")."""

MOONCAKE_FIG9_NEAR_MAX_TOKENS = 50e6
"""Mooncake FAST'25, §5.3.1: "a cache capacity of 50M tokens nearly reaches the theoretical maximum hit rate"."""

MOONCAKE_FIG10_GLOBAL_OVER_LOCAL: Mapping[str, float] = MappingProxyType(
    {"conversation": 2.22, "toolagent": 1.38, "synthetic": 2.36}
)
"""Mooncake FAST'25, Fig. 10 (left, bar labels): global-cache hit rate ÷ local-cache hit rate.

Setup (§5.3.2): 10 prefill nodes, 3 M tokens of cache each; local: a node
reads only its own cache and the scheduler sends a request to the node with
the higher prefix match; global: the ten caches are shared.
"""

MOONCAKE_FIG10_PREFILL_TIME_RATIO: Mapping[str, float] = MappingProxyType(
    {"conversation": 0.76, "toolagent": 0.74, "synthetic": 0.52}
)
"""Mooncake FAST'25, Fig. 10 (right, bar labels): mean prefill GPU time, global ÷ local cache ("up to 48%" less)."""

MOONCAKE_FIG8_PREFILL_GPU_TIME: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "conversation": MappingProxyType(
            {"vllm": 1.56, "vllm_prefix_caching": 1.43, "vllm_chunked_prefill": 1.90}
        ),
        "toolagent": MappingProxyType(
            {"vllm": 2.12, "vllm_prefix_caching": 1.40, "vllm_chunked_prefill": 2.68}
        ),
        "synthetic": MappingProxyType(
            {"vllm": 2.76, "vllm_prefix_caching": 2.59, "vllm_chunked_prefill": 3.33}
        ),
    }
)
"""Mooncake FAST'25, Fig. 8 (bar labels): mean prefill GPU time per request of vLLM 0.5.1, ÷ Mooncake's.

Same 16 nodes and workloads as its end-to-end runs (§5.2.3). Plain vLLM and
vLLM with chunked prefill both recompute every prompt token, so their ratio
is what chunking costs in prefill time in that engine: "vLLM with chunked
prefill sacrifices some prefill efficiency to maintain lower TBT".
"""

MOONCAKE_FIG10_NODES = 10
"""Mooncake FAST'25, §5.3.2: prefill nodes in the local-against-global experiment."""


MOONCAKE_TBT_SLOS_S = (0.1, 0.2, 0.3)
"""Mooncake FAST'25, §5.1: its TBT thresholds, "depending on the scenario", seconds.

Its TBT is "the average of the longest 10% of the token arrival intervals" of a request.
"""

MOONCAKE_FIG15_BEST_PD_RATIO = 1.0
"""Mooncake FAST'25, §5.5 and Fig. 15: prefill nodes per decoding node at the highest effective
request capacity ("approximately 1:1"; 16 nodes of 8 x A800, synthetic workload,
TTFT and TBT thresholds 10 s and 100 ms).

Effective request capacity is the share of requests meeting both thresholds at
the load replayed (§5.1), not a highest rate; the load is not stated."""

_MOONCAKE_FIG12 = (
    "Qin et al., Mooncake, FAST'25, section 5.4.1 and Fig. 12 (40 GB transfers)"
)

MOONCAKE_FIG12_TRANSFER_ENGINE: tuple[MeasuredTransfer, ...] = (
    MeasuredTransfer("4 x 200 Gb/s RDMA NICs", 4 * 200e9 / 8, 87e9, _MOONCAKE_FIG12),
    MeasuredTransfer("8 x 400 Gb/s RDMA NICs", 8 * 400e9 / 8, 190e9, _MOONCAKE_FIG12),
)
"""Mooncake FAST'25, §5.4.1 and Fig. 12: its Transfer Engine moved 87 GB/s on 4 x 200 Gb/s
(87 % of line rate) and 190 GB/s on 8 x 400 Gb/s (47.5 %). Measured by the paper's authors
on their testbed, not in this book."""

MOVED = MappingProxyType(
    {
        old: new.removeprefix("papers.")
        for old, new in _moved.MOVED.items()
        if new.startswith("papers.")
    }
)
"""Where each figure lived before it moved here (``module.OLD`` -> name here), read from the
package's one table of moved names, ``helpers._moved.MOVED``; the old names warn."""


__all__ = [
    "MOONCAKE_FIG10_GLOBAL_OVER_LOCAL",
    "MOONCAKE_FIG10_NODES",
    "MOONCAKE_FIG8_PREFILL_GPU_TIME",
    "MOONCAKE_FIG10_PREFILL_TIME_RATIO",
    "MOONCAKE_FIG12_TRANSFER_ENGINE",
    "MOONCAKE_FIG13_TTFT_KNEE",
    "MOONCAKE_FIG15_BEST_PD_RATIO",
    "MOONCAKE_FIG9_LOCAL_TOKENS",
    "MOONCAKE_FIG9_NEAR_MAX_TOKENS",
    "MOONCAKE_FIG9_SHARE_AT_3M",
    "MOONCAKE_NODE_GPUS",
    "MOONCAKE_TABLE2",
    "MOONCAKE_TBT_SLOS_S",
    "MOVED",
]


# ---------------------------------------------------------------------------
# Appended for chapters ``attention_offload`` and ``hybrid_strategies`` (second edition)
# ---------------------------------------------------------------------------

MOONCAKE_TABLE1_H2D_BANDWIDTH = 128e9
"""Mooncake FAST'25, Table 1 ("Notations and parameters"): ``B_h2d``, host-to-device bandwidth,
128 GB/s, for the paper's 8 x A800 node (the whole server, not one GPU): the host-DRAM tier's
bandwidth the authors plan with, well below eight PCIe x16 links' line rate."""

_FLASHMLA = (
    "deepseek-ai/FlashMLA README and docs/20250422-new-kernel-deep-dive.md "
    "(commit 9241ae3), dense MLA decoding kernel on an H800 SXM5, CUDA 12.8"
)

FLASHMLA_H800_MEMORY_BOUND_BANDWIDTH = 3000e9
"""FlashMLA, dense MLA decode kernel: "up to 3000 GB/s in memory-bound configuration" on an
H800 SXM5 (datasheet 3.35 TB/s). Measured by DeepSeek, not in this book."""

FLASHMLA_H800_COMPUTE_BOUND_FLOPS = 660e12
"""FlashMLA, dense MLA decode kernel: "660 TFLOPS in computation-bound configuration" on an
H800 SXM5 (bf16; datasheet 990 TFLOP/s dense). Measured by DeepSeek, not in this book."""

FLASHMLA_H800_THROTTLED_PEAK_FLOPS = 865e12
"""FlashMLA deep dive: the H800 SXM5 throttles to about 1,600 MHz under this kernel, so "the
practical peak FLOPs drops to ~865 TFlops"; with 3.35 TB/s the kernel is compute-bound once
``h_q s_q >= 865 / 3.35 / 2 = 128`` (``h_q`` the query heads per GPU)."""

__all__ += [
    "FLASHMLA_H800_COMPUTE_BOUND_FLOPS",
    "FLASHMLA_H800_MEMORY_BOUND_BANDWIDTH",
    "FLASHMLA_H800_THROTTLED_PEAK_FLOPS",
    "MOONCAKE_TABLE1_H2D_BANDWIDTH",
]
MOONCAKE_FIG13_TTFT_KNEE = 100e9 / 8
"""Mooncake FAST'25, section 5.4.2 and Fig. 13: on the synthetic workload, time to first token
degrades sharply once the network bandwidth falls below about 100 Gb/s (12.5 GB/s, the value here,
in bytes/s). The paper attributes the knee to "evident network congestion, as demonstrated by the
substantial divergence between actual and theoretical transfer times". Read off the figure by the
authors of this book, on the paper's 8 x A800 testbed."""

MOONCAKE_NODE_GPUS: Mapping[str, str] = MappingProxyType(
    {
        "4 x 200 Gb/s RDMA NICs": "a800",
        "8 x 400 Gb/s RDMA NICs": "h800",
    }
)
"""The GPU of the node type each :data:`MOONCAKE_FIG12_TRANSFER_ENGINE` network belongs to
(accelerator names of :mod:`helpers.hardware`). Mooncake FAST'25 pairs "each A800 GPU ... with a
100/200 Gbps NIC, and each H800 GPU ... with a 200/400 Gbps NIC" (section 3.2.3), and its A800
testbed has 4 x 200 Gb/s per node (section 5.1)."""
DISTSERVE_FIG1_GOODPUT: Mapping[str, float] = MappingProxyType(
    {
        "prompt_tokens": 512,
        "output_tokens": 64,
        "ttft_slo_s": 0.4,
        "tpot_slo_s": 0.04,
        "colocated_rps": 1.6,
        "prefill_only_rps": 5.6,
        "decode_only_rps": 10.0,
    }
)
"""DistServe OSDI'24 (Zhong et al., zhong2024distserve), §1 and Fig. 1: a 13B model on one
NVIDIA A100 80GB, synthetic requests of 512 prompt and 64 output tokens (Poisson arrivals),
targets P90 TTFT 0.4 s and P90 TPOT 0.04 s. The largest request rate per GPU that meets both is
about 1.6 req/s co-located; one GPU serving only prefill meets the TTFT target up to about
5.6 req/s, one serving only decode meets the TPOT target up to about 10 req/s, so two prefill
GPUs and one decode GPU serve 10 req/s, 3.3 per GPU (2.1x). Measured by the paper's authors."""

__all__ += ["DISTSERVE_FIG1_GOODPUT"]

SGLANG_DECODE_BREAKDOWN_MS_PER_LAYER: Mapping[str, Mapping[str, float]] = (
    MappingProxyType(
        {
            "tbo_256": MappingProxyType(
                {
                    "dispatch": 0.176,
                    "combine": 0.194,
                    "moe": 0.300,
                    "attention_core": 0.332,
                    "gemm": 0.285,
                    "other": 0.135,
                    "launch": 0.050,
                    "overall": 1.494,
                }
            ),
            "no_tbo_256": MappingProxyType(
                {
                    "dispatch": 0.397,
                    "combine": 0.709,
                    "moe": 0.235,
                    "attention_core": 0.282,
                    "gemm": 0.182,
                    "other": 0.091,
                    "launch": 0.029,
                    "overall": 1.932,
                }
            ),
            "no_tbo_128": MappingProxyType(
                {
                    "dispatch": 0.406,
                    "combine": 0.738,
                    "moe": 0.291,
                    "attention_core": 0.306,
                    "gemm": 0.297,
                    "other": 0.144,
                    "launch": 0.047,
                    "overall": 2.244,
                }
            ),
        }
    )
)
"""SGLang's decode step of DeepSeek-V3 on 9 x 8 H100 (EP72), kernel by kernel, ms per layer.

LMSYS / SGLang team, "Deploying DeepSeek with PD Disaggregation and Large-scale
Expert Parallelism on 96 H100 GPUs" (5 May 2025,
https://lmsys.org/blog/2025-05-05-large-scale-ep), section "Ablation Study:
Two-batch Overlap", decode "Detail Breakdown", figure "TBO Ablation (Decode)"
(``public/images/blog/large_scale_ep/tbo-breakdown-decode.png`` in
lm-sys/lm-sys.github.io): "scaled mean time per layer" with two-batch overlap
at 256 tokens per GPU (the 22.3k tokens/s per server run: 1.494 x 61 layers =
91 ms a step), and without it at 256 and 128. "Scaled" puts every run at 256
tokens per GPU: the 128-token run's times are those of two of its steps. Two
checks support that reading: the blog says the overlapped run's compute
matches the unoverlapped 128-token run's, which holds only for the doubled
times; and the unoverlapped 256-token step, 1.932 x 61 = 118 ms, gives
17.4k tokens/s per server, the overlapped run's 22.3k over its measured
25.5 % speedup to within 2 %. ``moe`` is the expert GEMMs,
``gemm`` the other matrix multiplies, ``attention_core`` the MLA kernel,
``dispatch`` and ``combine`` DeepEP's all-to-alls (which busy-wait for the
slowest rank, the blog notes). Read from the figure's pixels by the authors
of this book (340 px per ms; about +-0.005 ms); each run's parts add up to its
``overall`` bar within 1 %. The same blog's SGLang rows are validation points
of the planner, so these numbers diagnose its miss and calibrate nothing.
"""

__all__ += ["SGLANG_DECODE_BREAKDOWN_MS_PER_LAYER"]

SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER: Mapping[str, Mapping[str, float]] = (
    MappingProxyType(
        {
            "deepseek_profile": MappingProxyType(
                {
                    "dispatch_barrier": 2.09,
                    "dispatch": 9.48,
                    "combine_barrier": 2.03,
                    "combine": 17.30,
                    "moe": 12.44,
                    "attention_core": 5.66,
                    "gemm": 8.44,
                    "other": 5.14,
                    "compute_bubble": 2.48,
                    "comm_bubble": 3.65,
                    "overall": 34.64,
                }
            ),
            "sglang": MappingProxyType(
                {
                    "dispatch_barrier": 2.80,
                    "dispatch": 16.74,
                    "combine_barrier": 2.22,
                    "combine": 20.05,
                    "moe": 10.52,
                    "attention_core": 5.72,
                    "gemm": 8.83,
                    "other": 6.18,
                    "compute_bubble": 11.30,
                    "comm_bubble": 0.92,
                    "overall": 42.93,
                }
            ),
            "sglang_perfect_eplb": MappingProxyType(
                {
                    "dispatch_barrier": 3.26,
                    "dispatch": 10.84,
                    "combine_barrier": 1.64,
                    "combine": 14.99,
                    "moe": 12.27,
                    "attention_core": 6.50,
                    "gemm": 9.55,
                    "other": 6.63,
                    "compute_bubble": 1.25,
                    "comm_bubble": 5.53,
                    "overall": 36.32,
                }
            ),
            "unit_test": MappingProxyType(
                {"dispatch": 7.28, "combine": 14.28, "moe": 11.10}
            ),
        }
    )
)
"""DeepSeek-V3's prefill step on 4 x 8 GPUs (EP32), kernel by kernel, ms per layer at 16,384 tokens per GPU.

LMSYS / SGLang team, "Deploying DeepSeek with PD Disaggregation and Large-scale
Expert Parallelism on 96 H100 GPUs" (5 May 2025,
https://lmsys.org/blog/2025-05-05-large-scale-ep), section "Profile Results",
figure "Prefill Time Breakdown"
(``public/images/blog/large_scale_ep/profile-prefill.png`` in
lm-sys/lm-sys.github.io): "scaled mean time per layer" for 16,384 tokens per
GPU in 4,096-token prompts, with two-batch overlap, in four runs. ``deepseek_profile``:
DeepSeek's published profile (H800, routing simulated as perfectly balanced);
``sglang``: SGLang on H100 with the expert placement of its end-to-end runs
(the blog's "Default EPLB": its experimental setup places experts with EPLB
from a distribution matching the benchmark's data; the figure labels the
run "SGLang");
``sglang_perfect_eplb``: the same with routing simulated as balanced;
``unit_test``: DeepEP's and the grouped GEMM's kernels timed alone at the same
shapes (only those three bars are drawn). The runs overlap their two streams,
so each stream adds up to the step: the compute stream is ``moe`` (expert
GEMMs), ``gemm`` (the other matrix multiplies), ``attention_core``, ``other``
and ``compute_bubble`` (idle); the communication stream is the two barriers
(waiting for the other ranks), the ``dispatch`` and ``combine`` cores and
``comm_bubble``. Read from the figure's pixels by the authors of this book:
the gridlines at 10 to 50 ms lie 15.43 px per ms apart, each bar's right edge
read with its anti-aliased pixel, so each value is good to about +-0.07 ms.
Checks (tested): each stream adds up to ``overall`` within 2 %, and 16,384
tokens over ``overall`` x 61 layers gives the run's published throughput
(:data:`SGLANG_PREFILL_PROFILE_TOKENS_PER_S_PER_NODE`) within 2 %. "Per
layer" is read as the step over all 61 layers, as that check supports; if
the profile covered MoE layers only, the MoE-only classes (``moe``, the
all-to-alls) would scale by the 58 MoE layers instead, 5 % less, and the
check would hold as well (0.7 % off). The blog calls ``unit_test`` a
theoretical upper bound, achievable with two-batch overlap off, and does
not say on which GPUs it ran (presumably its H100s). The same
blog's SGLang rows and DeepSeek's profile row are validation points of the
planner, so these numbers diagnose its miss and calibrate nothing.
"""

SGLANG_PREFILL_PROFILE_TOKENS_PER_S_PER_NODE: Mapping[str, float] = MappingProxyType(
    {"deepseek_profile": 62_713, "sglang": 50_302, "sglang_perfect_eplb": 59_337}
)
"""Prefill throughput (input tokens/s per 8-GPU node) of the runs of :data:`SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER`.

The "Overall Throughput" prefill table of the same LMSYS blog section
(16,384 tokens per device, 4,096-token inputs): "DeepSeek Profile",
"SGLang (Default)" and "SGLang + Simulated Perfect EPLB"."""

DEEPSEEK_PREFILL_SMS: Mapping[str, int] = MappingProxyType(
    {"computation": 108, "communication": 24}
)
"""Streaming multiprocessors of each stream in DeepSeek's overlapped prefill step (of an H800's 132).

deepseek-ai/profile-data, README section "Prefilling" and its figure
``assets/prefill.jpg`` (Feb 2025), which labels the streams "Computation 108
SMs" and "Communication 24 SMs": DeepEP's prefill kernels hold SMs while
they run, so the overlapped compute runs on the rest. In decoding the same
figure gives communication 0 SMs (the README: "after RDMA messages are
issued, all GPU SMs are freed")."""

SGLANG_EPLB_BALANCEDNESS: Mapping[str, tuple[tuple[int, float], ...]] = (
    MappingProxyType(
        {
            "eplb": ((8, 0.944), (16, 0.902), (32, 0.800), (72, 0.810)),
            "none": ((8, 0.674), (16, 0.614), (32, 0.551), (64, 0.478)),
        }
    )
)
"""GPU balancedness of a DeepSeek-V3 MoE layer against expert-parallel size, with and without EPLB.

LMSYS blog (https://lmsys.org/blog/2025-05-05-large-scale-ep), section
"Expert Parallelism Load Balancer", figure "Effects of Scale and EPLB to
Balancedness" (``eplb-balancedness.png`` in lm-sys/lm-sys.github.io): a
simulation from expert-distribution statistics, balancedness being "the
ratio between mean computation time and maximum computation time for a MoE
layer among GPUs", with each GPU's time taken as its token count. Pairs of
(GPUs, balancedness); ``"eplb"``: with DeepSeek's load balancer (288
experts), ``"none"``: the router's own placement, no balancer. Read from the figure's
pixels (log-scaled x axis mapped by its tick gridlines at 8, 10, 20, 40 and
60, y by its gridlines at 0.4 to 1.0; marker centroids): GPU counts land
within 0.2 of 8, 16, 32, 64 and 72, balancedness to about ±0.003. The batch
of the simulation is not stated."""

SGLANG_EPLB_CASE_STUDY: tuple[tuple[int, float, float], ...] = (
    (13, 0.815, 2644),
    (14, 0.803, 2610),
    (15, 0.787, 2551),
    (16, 0.781, 2494),
    (17, 0.786, 2503),
    (18, 0.803, 2575),
    (20, 0.829, 2632),
    (21, 0.839, 2677),
    (22, 0.840, 2704),
    (23, 0.850, 2732),
    (24, 0.860, 2742),
    (25, 0.869, 2756),
    (26, 0.865, 2772),
    (27, 0.874, 2785),
    (28, 0.874, 2800),
    (29, 0.881, 2793),
    (30, 0.887, 2811),
    (32, 0.894, 2829),
    (33, 0.896, 2831),
    (34, 0.900, 2850),
    (35, 0.897, 2849),
    (36, 0.894, 2850),
    (38, 0.893, 2838),
    (40, 0.900, 2845),
    (41, 0.901, 2849),
    (42, 0.903, 2859),
    (43, 0.902, 2857),
    (44, 0.904, 2853),
    (45, 0.903, 2859),
    (46, 0.907, 2863),
    (47, 0.905, 2864),
    (48, 0.905, 2854),
    (49, 0.900, 2804),
    (50, 0.900, 2837),
    (51, 0.895, 2781),
    (53, 0.897, 2868),
    (54, 0.899, 2847),
    (55, 0.901, 2850),
    (56, 0.899, 2838),
    (57, 0.901, 2847),
    (58, 0.897, 2836),
    (59, 0.894, 2835),
    (60, 0.897, 2828),
    (61, 0.892, 2836),
    (62, 0.891, 2835),
    (63, 0.889, 2825),
    (64, 0.887, 2810),
    (65, 0.889, 2805),
    (66, 0.888, 2813),
    (67, 0.885, 2819),
    (68, 0.887, 2823),
    (69, 0.888, 2804),
    (70, 0.884, 2819),
    (71, 0.879, 2811),
    (72, 0.876, 2804),
    (73, 0.874, 2796),
    (74, 0.874, 2793),
    (75, 0.875, 2796),
    (76, 0.873, 2787),
    (77, 0.873, 2777),
    (78, 0.866, 2773),
    (79, 0.866, 2780),
    (80, 0.864, 2781),
    (81, 0.865, 2772),
    (82, 0.864, 2754),
    (83, 0.861, 2755),
    (84, 0.863, 2755),
    (85, 0.863, 2765),
    (86, 0.863, 2768),
    (87, 0.863, 2765),
    (88, 0.859, 2758),
    (89, 0.857, 2747),
)
"""SGLang's decode case study, step by step: (decode step, balancedness, output tokens/s per GPU).

Same LMSYS blog, section "Ablation Study: EPLB", figure "EPLB Case Study:
Throughput vs Balancedness" (``eplb-throughput-vs-imbalance.png``): a decode
run of DeepSeek-V3 on H100s with 1,800-token inputs, 100-token outputs and
a batch of 256, EPLB on. Read at each step's column from the two curves
(axes mapped by their tick labels: throughput ±3 tokens/s, balancedness
±0.002); steps 19, 31, 37, 39 and 52 are left out where a curve could not be
told apart from a gridline or ran off the chart (the throughput spike at
step 52). The blog defines this balancedness over experts ("average token
count divided by maximum token count"), its simulation above over GPUs."""

SGLANG_EPLB_SPEEDUP: Mapping[str, float] = MappingProxyType(
    {"prefill": 1.49, "decode": 2.54}
)
"""Throughput with EPLB over without it in SGLang's large-scale runs (H100, DeepSeek-V3).

Same LMSYS blog, "Ablation Study: EPLB", "Overall Results": "EPLB delivers a
significant speedup of 1.49x (prefill) and 2.54x (decode)"; its figure puts
the runs at about 47.6k against 32.0k input tokens/s per node and 22.3k
against 8.7k output tokens/s per node. The expert-parallel sizes are not
stated; the blog's runs are EP32 prefill and EP72 decode."""

__all__ += [
    "SGLANG_PREFILL_BREAKDOWN_MS_PER_LAYER",
    "SGLANG_PREFILL_PROFILE_TOKENS_PER_S_PER_NODE",
    "DEEPSEEK_PREFILL_SMS",
    "SGLANG_EPLB_BALANCEDNESS",
    "SGLANG_EPLB_CASE_STUDY",
    "SGLANG_EPLB_SPEEDUP",
]

# ---------------------------------------------------------------------------
# Mooncake's latency breakdown (Fig. 14) and its P/D-ratio run (Fig. 15),
# read from the figures' pixels: the PDF page rendered at 300 dpi
# (``pdftoppm -r 300``), each axis mapped by the centres of its tick labels
# (``pdftotext -bbox``), bars read at their centre column by colour, markers
# by their centroid. Testbed of both: §5.1 (8 x A800-SXM4-80GB per node, a
# dummy LLaMA3-70B, four 200 Gb/s NICs).

MOONCAKE_FIG14_PROMPT_TOKENS: tuple[int, ...] = (8_192, 16_384, 32_768, 65_536, 131_072)
"""Mooncake FAST'25, Fig. 14: the prompt lengths of its bars ("8k" to "128k", read as powers of two)."""

MOONCAKE_FIG14_PREFILL_S: tuple[float, ...] = (0.81, 1.85, 4.29, 10.43, 27.36)
"""Mooncake FAST'25, Fig. 14a (prefix cache ratio 0 %): seconds of "layer-wise prefill" per prompt length.

One request on one prefill node (8 x A800). Read as the salmon bar's top less
its bottom; one pixel is 0.12 s, so each value is good to about ±0.15 s."""

MOONCAKE_FIG14_DECODE_128_S: Mapping[str, tuple[float, ...]] = MappingProxyType(
    {
        "cache_0": (3.25, 3.25, 3.37, 3.60, 3.82),
        "cache_95": (3.37, 3.40, 3.50, 3.64, 3.92),
    }
)
"""Mooncake FAST'25, Fig. 14a and 14b: seconds to "decode 128 tokens" per prompt length, one request.

The blue bar's height, with prefix cache ratios 0 % (panel a, ±0.15 s) and
95 % (panel b, ±0.03 s). One request decodes alone, so this is 128 steps at
batch 1; the two panels agree within 5 %."""

MOONCAKE_FIG15_SPLITS: tuple[tuple[int, int], ...] = tuple(
    (p, 16 - p) for p in range(5, 12)
)
"""Mooncake FAST'25, Fig. 15: the (prefill, decoding) node counts of its x axis, 5P11D to 11P5D."""

MOONCAKE_FIG15_SLOS_S: tuple[float, float] = (10.0, 0.1)
"""Mooncake FAST'25, §5.5: the TTFT and TBT thresholds (s) of Fig. 15's effective requests."""

MOONCAKE_FIG15_EFFECTIVE_SHARE: tuple[float, ...] = (
    0.777,
    0.973,
    0.992,
    0.990,
    0.992,
    0.985,
    0.862,
)
"""Mooncake FAST'25, Fig. 15a: share of requests meeting TTFT 10 s and TBT 100 ms, per split.

In the order of :data:`MOONCAKE_FIG15_SPLITS`; markers read to about ±0.003."""

MOONCAKE_FIG15_MEAN_TTFT_S: tuple[float, ...] = (
    5.75,
    1.73,
    1.31,
    1.21,
    1.14,
    1.14,
    1.16,
)
"""Mooncake FAST'25, Fig. 15b: average TTFT (s) per split, markers read to about ±0.05 s."""

MOONCAKE_FIG15_MEAN_TBT_MS: tuple[float, ...] = (
    31.6,
    31.9,
    33.0,
    35.2,
    38.5,
    44.7,
    58.0,
)
"""Mooncake FAST'25, Fig. 15b: average TBT (ms) per split, markers read to about ±0.5 ms.

A request's TBT is the mean of its longest 10 % of token intervals (§5.1)."""

__all__ += [
    "MOONCAKE_FIG14_DECODE_128_S",
    "MOONCAKE_FIG14_PREFILL_S",
    "MOONCAKE_FIG14_PROMPT_TOKENS",
    "MOONCAKE_FIG15_EFFECTIVE_SHARE",
    "MOONCAKE_FIG15_MEAN_TBT_MS",
    "MOONCAKE_FIG15_MEAN_TTFT_S",
    "MOONCAKE_FIG15_SLOS_S",
    "MOONCAKE_FIG15_SPLITS",
]
