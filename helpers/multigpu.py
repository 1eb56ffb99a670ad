"""What parallelism costs a model: the collectives of tensor, expert, context and pipeline parallelism.

Every time here is a collective of :mod:`helpers.parallel` (alpha-beta bounds
of ring or tree algorithms) sized by a model's shapes, set beside the
roofline bound of the work it serves (:mod:`helpers.inference`):

* **tensor parallelism** (Megatron-LM, Shoeybi et al. 2019): each layer's
  attention and MLP end in an all-reduce of the activations, two per layer
  of ``tokens * d_model * b`` bytes each
  (:func:`helpers.inference.tp_allreduce_time`, set beside the compute by
  :func:`tp_prefill` and :func:`tp_decode`);
* **expert parallelism** for mixture-of-experts layers (GShard, Lepikhin et
  al. 2021; DeepEP): each token's hidden state goes to the devices of its
  ``top_k`` experts and comes back, an all-to-all *dispatch* and *combine*
  per MoE layer (:func:`ep_alltoall_times`);
* **context parallelism** for long prefills (ring attention, Liu et al.
  2023): each device holds ``tokens / n`` of the prompt and receives every
  other device's keys and values, an all-gather of the layer's KV cache
  (:func:`cp_comm_time`);
* **pipeline parallelism** (GPipe, Huang et al. 2019): stages pass
  ``tokens * d_model * b`` bytes point to point; the cost is the bubble,
  ``(p - 1) / (m + p - 1)`` of the time idle (:func:`pp_bubble_fraction`).

The compute times are bounds at peak with the work split evenly over the
``n`` devices (as :func:`helpers.inference.prefill_time` with ``n_gpus``);
communication is charged serially (:attr:`CommCost.serial_s`) or fully
hidden behind compute (:attr:`CommCost.overlapped_s`), the two ends of what
overlap can do. Units: bytes, seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from . import _args, inference, parallel
from .hardware import Accelerator, Link, dtype_bytes, get_link
from .llm import ModelConfig, get_model, kv_cache_bytes_per_token

__all__ = [
    "CommCost",
    "DEEPEP_LOW_LATENCY_S",
    "activation_bytes",
    "tp_prefill",
    "tp_decode",
    "ep_alltoall_times",
    "ep_prefill_alltoall_times",
    "remote_servers_per_token",
    "cp_comm_time",
    "cp_prefill",
    "pp_bubble_fraction",
]


DEEPEP_LOW_LATENCY_S: Mapping[int, tuple[float, float]] = MappingProxyType(
    {
        8: (77e-6, 114e-6),
        16: (118e-6, 195e-6),
        32: (155e-6, 273e-6),
        64: (173e-6, 314e-6),
        128: (192e-6, 369e-6),
        256: (194e-6, 360e-6),
    }
)
"""DeepEP's low-latency kernels, measured: EP size -> (dispatch, combine) seconds.

DeepEP README ("Low-latency kernels with pure RDMA", deepseek-ai/DeepEP):
H800 GPUs, each with a ConnectX-7 400 Gb/s InfiniBand NIC (about 50 GB/s),
128 tokens per batch, hidden 7,168, top-8 experts, fp8 dispatch and bf16
combine (DeepSeek-V3's decode setting).
"""


@dataclass(frozen=True)
class CommCost:
    """Compute and communication of one piece of work on ``n`` devices.

    Attributes
    ----------
    compute_s : float
        Roofline bound of the work, split over the devices (s).
    comm_s : float
        Its collectives (s).
    """

    compute_s: float
    comm_s: float

    @property
    def share(self) -> float:
        """``comm_s / compute_s``: communication as a fraction of the compute it serves."""
        return self.comm_s / self.compute_s

    @property
    def serial_s(self) -> float:
        """``compute_s + comm_s``: nothing overlapped."""
        return self.compute_s + self.comm_s

    @property
    def overlapped_s(self) -> float:
        """``max(compute_s, comm_s)``: communication fully hidden behind compute (or the reverse)."""
        return max(self.compute_s, self.comm_s)


def activation_bytes(
    model: str | ModelConfig, tokens: int, *, dtype: str = "bf16"
) -> float:
    """Bytes of the activations of ``tokens`` tokens, ``tokens * d_model * b``.

    What one tensor-parallel all-reduce sums, and what a pipeline stage
    passes to the next.

    Llama-3-70B (``d_model = 8192``) in bf16: 16,384 bytes per token, so a
    decode batch of 355 sequences all-reduces ``355 * 16384 = 5.8`` MB.
    """
    m = get_model(model)
    tokens = _args.positive_int("tokens", tokens)
    return float(tokens * m.d_model * dtype_bytes(dtype))


def tp_prefill(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    n: int,
    link: str | Link,
    *,
    dtype: str = "bf16",
    algorithm: str = "ring",
) -> CommCost:
    """A ``tokens``-token prefill under TP-``n``: the compute bound beside its all-reduces.

    Compute: :func:`helpers.inference.prefill_time` with ``link=None`` (the
    even split, no communication); collectives:
    :func:`helpers.inference.tp_allreduce_time` (Megatron-LM's two all-reduces
    of the activations per layer, Shoeybi et al. 2019) over ``link``.
    Llama-3-70B, 4,096 tokens, TP-8 over NVLink 4 (450 GB/s, 1 us per step),
    ring: ``160 * (14 * 1e-6 + 1.75 * 4096 * 16384 / 450e9) = 44.0`` ms
    beside a 73.6 ms bound.
    """
    compute = inference.prefill_time(
        model, tokens, acc, dtype=dtype, n_gpus=n, link=None
    )
    comm = inference.tp_allreduce_time(
        model, tokens, acc, n_gpus=n, dtype=dtype, link=link, algorithm=algorithm
    )
    return CommCost(compute, comm)


def tp_decode(
    model: str | ModelConfig,
    context: int,
    acc: str | Accelerator,
    n: int,
    link: str | Link,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    algorithm: str = "ring",
) -> CommCost:
    """One decode step of ``batch`` sequences under TP-``n``: its bound and its ``2 L`` all-reduces."""
    compute = inference.decode_step_time(
        model, context, acc, batch=batch, dtype=dtype, n_gpus=n, link=None
    )
    comm = inference.tp_allreduce_time(
        model, batch, acc, n_gpus=n, dtype=dtype, link=link, algorithm=algorithm
    )
    return CommCost(compute, comm)


def ep_alltoall_times(
    model: str | ModelConfig,
    tokens_per_device: int,
    n: int,
    link: str | Link,
    *,
    dispatch_dtype: str = "fp8",
    combine_dtype: str = "bf16",
    latency: float | None = None,
) -> tuple[float, float]:
    """Seconds of one MoE layer's dispatch and combine all-to-alls under expert parallelism over ``n`` devices.

    Each device sends each of its ``tokens_per_device`` tokens' hidden
    states to the devices of its ``top_k`` experts (one copy per expert, as
    DeepEP's low-latency kernels do) and gets the expert outputs back, so
    each all-to-all moves ``S = tokens_per_device * top_k * d_model * b``
    bytes per device, of which ``(n - 1) / n`` leave it
    (:func:`helpers.parallel.alltoall_time`, ring). DeepSeek-V3 dispatches in
    fp8 and combines in bf16 (DeepEP README); the fp8 scales are left out.
    With ``latency=0`` the time is the bandwidth bound alone, the fair
    comparison for kernels that send to every peer at once: DeepSeek-V3,
    128 tokens, ``128 * 8 * 7168 = 7.34`` MB per device, over one 50 GB/s
    NIC at EP 256: 146 us for the dispatch.

    Returns
    -------
    (dispatch_s, combine_s)
    """
    m = get_model(model)
    if m.moe is None:
        raise ValueError(f"model {m.name!r} has no mixture-of-experts layers")
    tokens = _args.positive_int("tokens_per_device", tokens_per_device)
    elements = tokens * m.moe.top_k * m.d_model
    return (
        parallel.alltoall_time(
            elements * dtype_bytes(dispatch_dtype), n, link, latency=latency
        ),
        parallel.alltoall_time(
            elements * dtype_bytes(combine_dtype), n, link, latency=latency
        ),
    )


def remote_servers_per_token(
    model: str | ModelConfig, n: int, *, gpus_per_server: int = 8
) -> float:
    """Expected number of *other* servers one token's hidden state is sent to under expert parallelism over ``n`` GPUs.

    The routed experts lie in order over the ``n`` GPUs, ``gpus_per_server``
    to a server; a token picks ``topk_groups`` of the model's ``n_groups``
    expert groups and then ``top_k`` experts among those groups' experts,
    both uniformly at random (the assumption: a balanced router, what
    DeepSeek's load balancer aims at). A server is reached if it holds any
    of the token's experts; the token's own server is one of them with
    probability ``1 / servers``. DeepEP's normal (prefill) kernels send one
    copy per reached server over the network and fan out inside it over
    NVLink (DeepSeek-V3 report, arXiv:2412.19437, section 3.2.2), so this,
    not ``top_k``, sets the network bytes.

    DeepSeek-V3 over four servers (two groups each): a server is missed
    when none of the four chosen groups is its own (``C(6,4) / C(8,4) =
    15/70``) or when none of the token's 8 experts falls in its chosen
    groups; the other three servers are reached 2.2 times on average,
    against ``top_k = 8`` copies when every expert is sent to separately.

    >>> round(remote_servers_per_token("deepseek-v3", 32), 3)
    2.196
    >>> remote_servers_per_token("deepseek-v3", 8)
    0.0
    """
    from itertools import combinations
    from math import comb

    m = get_model(model)
    if m.moe is None:
        raise ValueError(f"model {m.name!r} has no mixture-of-experts layers")
    n = _args.positive_int("n", n)
    per = _args.positive_int("gpus_per_server", gpus_per_server)
    if n <= per:
        return 0.0
    if n % per:
        raise ValueError(f"n ({n}) must be a multiple of gpus_per_server ({per})")
    servers = n // per
    moe = m.moe
    experts = moe.n_routed
    group = experts // moe.n_groups
    touched = 0.0
    subsets = list(combinations(range(moe.n_groups), moe.topk_groups))
    for chosen in subsets:
        pool = [e for g in chosen for e in range(g * group, (g + 1) * group)]
        for s in range(servers):
            lo, hi = s * experts / servers, (s + 1) * experts / servers
            held = sum(lo <= e < hi for e in pool)
            touched += 1 - comb(len(pool) - held, moe.top_k) / comb(
                len(pool), moe.top_k
            )
    touched /= len(subsets)
    return touched * (servers - 1) / servers


def ep_prefill_alltoall_times(
    model: str | ModelConfig,
    tokens_per_device: int,
    n: int,
    link: str | Link,
    nvlink: str | Link,
    *,
    gpus_per_server: int = 8,
    dispatch_dtype: str = "fp8",
    combine_dtype: str = "bf16",
) -> tuple[float, float]:
    """Seconds of one MoE layer's dispatch and combine with DeepEP's normal (prefill) kernels.

    Two stages that pipeline, so the slower one sets the time: the network
    stage sends each token once to every other server it reaches
    (:func:`remote_servers_per_token`), ``tokens * servers * d_model * b``
    bytes over the GPU's own NIC ``link``; the NVLink stage delivers each
    token to its ``top_k`` experts' GPUs inside a server, ``tokens * top_k *
    d_model * b`` bytes over ``nvlink`` (all of it once ``n`` fits one
    server, less the GPU's own share). Bandwidth bounds, as
    :func:`ep_alltoall_times` with ``latency=0``; the decode kernels, which
    send one copy per expert, are :func:`ep_alltoall_times` and
    :data:`DEEPEP_LOW_LATENCY_S`.

    >>> d, c = ep_prefill_alltoall_times("deepseek-v3", 16384, 32, "cx7", "nvlink4")
    >>> round(d * 1e3, 1), round(c * 1e3, 1)
    (5.2, 10.3)
    """
    m = get_model(model)
    if m.moe is None:
        raise ValueError(f"model {m.name!r} has no mixture-of-experts layers")
    tokens = _args.positive_int("tokens_per_device", tokens_per_device)
    n = _args.positive_int("n", n)
    try:
        net, nv = get_link(link), get_link(nvlink)
    except KeyError as err:
        raise KeyError(f"link: {err.args[0]}") from None
    remote = remote_servers_per_token(m, n, gpus_per_server=gpus_per_server)
    inside = min(n, gpus_per_server)
    out = []
    for dtype in (dispatch_dtype, combine_dtype):
        row = m.d_model * dtype_bytes(dtype)
        network = tokens * remote * row / net.bandwidth
        local = tokens * m.moe.top_k * row * (inside - 1) / inside / nv.bandwidth
        out.append(max(network, local))
    return out[0], out[1]


def cp_comm_time(
    model: str | ModelConfig,
    tokens: int,
    n: int,
    link: str | Link,
    *,
    dtype: str = "bf16",
    algorithm: str = "ring",
) -> float:
    """Seconds for context parallelism over ``n`` devices to share a ``tokens``-token prompt's KV, every layer.

    Each layer all-gathers the prompt's keys and values,
    ``tokens * kv_bytes_per_token / n_layers`` bytes
    (:func:`helpers.parallel.allgather_time`), which ring attention (Liu et
    al. 2023) overlaps with the attention of the blocks already received:
    the traffic grows with ``tokens``, the attention with ``tokens**2``.
    Llama-3-70B keeps 4,096 bytes per token per layer in bf16.
    """
    m = get_model(model)
    tokens = _args.positive_int("tokens", tokens)
    per_layer = tokens * kv_cache_bytes_per_token(m, dtype=dtype) / m.n_layers
    return m.n_layers * parallel.allgather_time(per_layer, n, link, algorithm=algorithm)


def cp_prefill(
    model: str | ModelConfig,
    tokens: int,
    acc: str | Accelerator,
    n: int,
    link: str | Link,
    *,
    dtype: str = "bf16",
    algorithm: str = "ring",
) -> CommCost:
    """A ``tokens``-token prefill split by context over ``n`` devices: compute bound beside :func:`cp_comm_time`."""
    compute = inference.prefill_time(
        model, tokens, acc, dtype=dtype, n_gpus=n, link=None
    )
    return CommCost(
        compute, cp_comm_time(model, tokens, n, link, dtype=dtype, algorithm=algorithm)
    )


def pp_bubble_fraction(stages: int, micro_batches: int) -> float:
    """Share of a pipeline's time its stages sit idle: ``(p - 1) / (m + p - 1)`` (GPipe, Huang et al. 2019).

    ``p`` stages and ``m`` equal micro-batches: the last stage starts after
    ``p - 1`` micro-batch times and the pipeline drains for as long. Four
    stages, one micro-batch: 3/4 idle; 16 micro-batches: 3/19 = 0.16.
    """
    p = _args.positive_int("stages", stages)
    m = _args.positive_int("micro_batches", micro_batches)
    return (p - 1) / (m + p - 1)
