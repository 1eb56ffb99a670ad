"""Move a KV cache from a prefill worker to a decode worker, and time it.

Disaggregated serving (DistServe, Splitwise, Mooncake) runs the prefill and
the decode of a request on different workers, so the prompt's KV cache must
travel between them. :func:`distributed_kv_transfer` does this for real on
one machine or two: it starts two processes on 127.0.0.1 (or joins the
rendezvous named by ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK`` and
``WORLD_SIZE``) joined by ``torch.distributed`` (``nccl`` between two GPUs,
``gloo`` otherwise, through pinned host buffers when the cache is on a GPU),
the *prefill worker* (rank 0) runs
:class:`helpers.tinygpt.TinyGPT` on a prompt and sends every layer's keys and
values, and the *decode worker* (rank 1) receives them into preallocated
buffers, times the transfer, checks the cache against its own prefill and
decodes one token with it.

Two reference paths move the same bytes, in the same messages, between two
processes without a distributed runtime: :func:`socket_transfer` (a plain
TCP socket on the loopback interface) and :func:`shared_memory_transfer`
(``multiprocessing.shared_memory``: one copy in, one copy out). Their ratio
with the distributed path is what the runtime costs or saves.

Every call starts its processes itself and joins them within ``timeout``
seconds; on an error or a timeout the children are killed before the call
raises. Torch is imported only inside the distributed path. The children are
*spawned* (a fresh interpreter, safe with threads and CUDA), so a script that
calls these functions needs the usual ``if __name__ == "__main__":`` guard;
notebooks and pytest need nothing.

References
----------
Zhong et al. 2024 (DistServe); Patel et al. 2024 (Splitwise); Qin et al. 2025 (Mooncake).
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np

from . import _args
from ._measure import (
    LOOPBACK,
    TransferResult,
    free_port,
    run_children,
    summarize_samples,
)
from ._reference_transfers import shared_memory_transfer, socket_transfer
from ._transfer_analysis import fit_link, measured_breakeven
from .hardware import dtype_bytes
from .llm import ModelConfig, get_model, kv_cache_bytes_per_token

_HOST = LOOPBACK

# The public names, the re-exported ones among them, in the order the API reference shows them.
__all__ = [
    "TransferResult",
    "kv_message_bytes",
    "Rendezvous",
    "rendezvous_from_env",
    "host_staging_buffers",
    "send_cache",
    "receive_cache",
    "default_backend",
    "distributed_kv_transfer",
    "socket_transfer",
    "shared_memory_transfer",
    "fit_link",
    "measured_breakeven",
]


def kv_message_bytes(
    model: str | ModelConfig, tokens: int, *, batch: int = 1, dtype: str = "bf16"
) -> tuple[int, ...]:
    """Sizes in bytes of the messages that carry a KV cache: keys then values of each layer.

    ``2 * n_layers`` messages of ``batch * tokens * n_kv_heads * head_dim * bytes`` each;
    they add up to ``batch * tokens * helpers.llm.kv_cache_bytes_per_token``. With
    multi-head latent attention a layer's cache is one tensor (latent and rotary
    key together): ``n_layers`` messages of ``batch * tokens * (kv_lora_rank +
    qk_rope_head_dim) * bytes``.
    """
    m = get_model(model)
    tokens = _args.positive_int("tokens", tokens)
    batch = _args.positive_int("batch", batch)
    per_layer = 1 if m.mla is not None else 2
    one = batch * tokens * (m.kv_elements_per_layer // per_layer) * dtype_bytes(dtype)
    sizes = (one,) * (per_layer * m.n_layers)
    assert sum(sizes) == batch * tokens * kv_cache_bytes_per_token(m, dtype=dtype)
    return sizes


def _threads_per_worker() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


# --- torch.distributed path -------------------------------------------------


@dataclass(frozen=True)
class Rendezvous:
    """Where the two workers of :func:`distributed_kv_transfer` meet (``torch.distributed``'s ``env://``).

    The four fields are the environment variables ``torchrun`` and cluster
    launchers set: ``MASTER_ADDR`` and ``MASTER_PORT`` (the rank-0 host and a
    free TCP port on it), ``RANK`` (0: the prefill worker, 1: the decode
    worker) and ``WORLD_SIZE`` (2).
    """

    master_addr: str
    master_port: int
    rank: int
    world_size: int = 2

    def __post_init__(self) -> None:
        if not self.master_addr:
            raise ValueError("master_addr (MASTER_ADDR) must name a host")
        if not 0 < self.master_port < 65536:
            raise ValueError(
                f"master_port (MASTER_PORT) must be in 1..65535, got {self.master_port}"
            )
        if self.world_size != 2:
            raise ValueError(
                f"world_size (WORLD_SIZE) must be 2 (one prefill and one decode worker), "
                f"got {self.world_size}"
            )
        if self.rank not in (0, 1):
            raise ValueError(f"rank (RANK) must be 0 or 1, got {self.rank}")

    def environ(self) -> dict[str, str]:
        """The ``env://`` variables for this rank."""
        return {
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
        }


_RENDEZVOUS_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")


OPT_IN_VAR = "KV_LAB_RENDEZVOUS"
"""Set it to ``env`` to join the rendezvous named by the environment (:func:`rendezvous_from_env`)."""


def rendezvous_from_env(
    *, environ: Mapping[str, str] | None = None
) -> Rendezvous | None:
    """The :class:`Rendezvous` named by ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK`` and ``WORLD_SIZE``, if asked for.

    Opt-in: only with ``KV_LAB_RENDEZVOUS=env`` set. A notebook inside a
    launcher's job (torchrun, Kubeflow, SageMaker) inherits those four
    variables for a job of its own, usually not of two ranks; without the
    opt-in they are ignored (L4-7). ``environ`` defaults to ``os.environ``.
    Returns ``None`` without the opt-in or when none of the four is set (one
    machine: :func:`distributed_kv_transfer` starts both workers itself);
    raises ``ValueError`` naming the variable when only some are set or one is
    malformed.
    """
    env = os.environ if environ is None else environ
    if env.get(OPT_IN_VAR, "").strip().lower() != "env":
        return None
    present = [v for v in _RENDEZVOUS_VARS if env.get(v)]
    if not present:
        return None
    missing = [v for v in _RENDEZVOUS_VARS if not env.get(v)]
    if missing:
        raise ValueError(
            f"{', '.join(missing)} must be set too: a rendezvous needs all of "
            f"{', '.join(_RENDEZVOUS_VARS)}"
        )
    numbers = {}
    for var in ("MASTER_PORT", "RANK", "WORLD_SIZE"):
        try:
            numbers[var] = int(env[var])
        except ValueError:
            raise ValueError(f"{var} must be an integer, got {env[var]!r}") from None
    return Rendezvous(
        env["MASTER_ADDR"],
        numbers["MASTER_PORT"],
        numbers["RANK"],
        numbers["WORLD_SIZE"],
    )


def _worker_device(backend: str, rank: int, spec: dict) -> Any:
    """The device of this worker's cache: ``cuda:<index>`` for NCCL, ``cuda`` or ``cpu`` for gloo.

    Workers this machine spawned (``spec["spawned"]``) use GPUs 0 and 1 by
    rank, whatever ``LOCAL_RANK`` a launcher left in the environment (both
    would otherwise pick the same GPU); a worker of a rendezvous across
    machines uses its ``LOCAL_RANK`` (0 if unset).
    """
    import torch

    if spec["device"] == "cpu":
        return torch.device("cpu")
    if backend != "nccl":
        local = 0
    elif spec.get("spawned"):
        local = rank
    else:
        local = int(os.environ.get("LOCAL_RANK", 0))
    return torch.device(f"cuda:{local % max(1, torch.cuda.device_count())}")


def _init_worker(rank: int, rendezvous: Rendezvous, backend: str, spec: dict) -> Any:
    """Join the process group through ``env://``; return this worker's device."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(_threads_per_worker())
    os.environ.update(rendezvous.environ())
    dev = _worker_device(backend, rank, spec)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    dist.init_process_group(
        backend,
        init_method="env://",
        rank=rank,
        world_size=rendezvous.world_size,
        timeout=timedelta(seconds=spec["timeout"]),
    )
    return dev


def _cache_shape(spec: dict, tokens: int) -> tuple[int, int, int, int]:
    m = spec["config"]
    return (spec["batch"], m.n_kv_heads, tokens, m.head_dim)


def _make_cache(spec: dict, tokens: int, prompt: Any, model: Any, dev: Any) -> list:
    """The cache to send: the model's prefill of ``prompt``, or a seeded random one of its shape."""
    import torch

    from .bench import torch_dtype

    if model is not None:
        _, cache = model.prefill(prompt)
    else:
        generator = torch.Generator().manual_seed(spec["seed"] + tokens)
        dtype = torch_dtype(spec["dtype"])
        cache = [
            tuple(
                torch.randn(_cache_shape(spec, tokens), generator=generator).to(
                    dev, dtype
                )
                for _ in range(2)
            )
            for _ in range(spec["config"].n_layers)
        ]
    return [t.contiguous() for pair in cache for t in pair]


def _empty_cache(spec: dict, tokens: int, dev: Any) -> list:
    import torch

    from .bench import torch_dtype

    dtype = torch_dtype(spec["dtype"])
    shape = _cache_shape(spec, tokens)
    return [
        torch.empty(shape, dtype=dtype, device=dev)
        for _ in range(2 * spec["config"].n_layers)
    ]


def host_staging_buffers(tensors: Sequence[Any], *, pin: bool = True) -> list | None:
    """Host buffers for sending GPU tensors over gloo (pinned when ``pin``), or ``None`` for CPU tensors.

    Gloo moves host memory only, so a KV cache on a GPU travels GPU → pinned
    host → peer → GPU: each tensor is copied into its buffer before the send
    and out of it after the receive (:func:`send_cache`, :func:`receive_cache`).
    """
    import torch

    if all(t.device.type == "cpu" for t in tensors):
        return None
    return [
        torch.empty(t.shape, dtype=t.dtype, device="cpu", pin_memory=pin)
        for t in tensors
    ]


def _synchronize_all(tensors: Sequence[Any]) -> None:
    import torch

    for dev in {t.device for t in tensors if t.device.type == "cuda"}:
        torch.cuda.synchronize(dev)


def send_cache(
    dist: Any, tensors: Sequence[Any], host: Sequence[Any] | None, peer: int
) -> None:
    """Send every tensor to ``peer``; with ``host`` buffers, each goes device → host buffer → send."""
    for i, t in enumerate(tensors):
        if host is None:
            dist.send(t, peer)
            continue
        host[i].copy_(t, non_blocking=True)
        _synchronize_all([t])
        dist.send(host[i], peer)


def receive_cache(
    dist: Any, tensors: Sequence[Any], host: Sequence[Any] | None, peer: int
) -> None:
    """Receive every tensor from ``peer``; with ``host`` buffers, each goes receive → host buffer → device."""
    for i, t in enumerate(tensors):
        if host is None:
            dist.recv(t, peer)
            continue
        dist.recv(host[i], peer)
        t.copy_(host[i], non_blocking=True)
    _synchronize_all(tensors)


def _time_transfer(
    dist: Any, rank: int, tensors: list, host: list | None, spec: dict
) -> list[float]:
    """Seconds per transfer, measured by the decode worker (rank 1) from its "go" to the last byte in place.

    One small round trip is included, as in :func:`socket_transfer`; with host
    staging, the copies out of and into device memory are too.
    """
    import torch

    go = torch.zeros(1)  # a host tensor: gloo and NCCL both move it (NCCL after .to)
    if spec["backend"] == "nccl":
        go = go.to(tensors[0].device)
    samples = []
    dist.barrier()  # both workers hold their tensors before the first "go"
    for i in range(spec["warmup"] + spec["repeats"]):
        _synchronize_all(tensors)
        start = time.perf_counter()
        if rank == 1:
            dist.send(go, 0)
            receive_cache(dist, tensors, host, 0)
        else:
            dist.recv(go, 1)
            send_cache(dist, tensors, host, 1)
        _synchronize_all(tensors)
        if i >= spec["warmup"]:
            samples.append(time.perf_counter() - start)
    return samples


def _verify(spec: dict, received: list, expected: list, model: Any) -> bool:
    """The received cache equals the decode worker's own, and (with a model) decodes to finite logits."""
    import torch

    ok = all(
        torch.allclose(a.float(), b.float(), rtol=1e-3, atol=1e-3)
        for a, b in zip(received, expected)
    )
    if model is not None and ok:
        n = spec["config"].n_layers
        pairs = [(received[2 * i], received[2 * i + 1]) for i in range(n)]
        logits, _ = model.decode_step(
            torch.zeros(spec["batch"], dtype=torch.long), pairs
        )
        ok = bool(torch.isfinite(logits).all())
    return ok


def _path_label(dev: Any, host: list | None) -> str:
    from .bench import device_name

    name = device_name(dev)
    if dev.type != "cuda":
        return name
    if host is not None:
        return f"{name} -> pinned host -> gloo -> pinned host -> {name}"
    return f"GPU (rank 0) -> {name}"


def _kv_rank(rank: int, rendezvous: Rendezvous, backend: str, spec: dict) -> list:
    """Run one worker in this process; both ranks return the decode worker's results."""
    import torch
    import torch.distributed as dist

    from .tinygpt import TinyGPT

    dev = _init_worker(rank, rendezvous, backend, spec)
    try:
        m = spec["config"]
        model = (
            TinyGPT(m, dtype=spec["dtype"], device=dev, seed=spec["seed"])
            if spec["prefill"]
            else None
        )
        out = []
        for tokens in spec["tokens"]:
            generator = torch.Generator().manual_seed(spec["seed"] + tokens)
            prompt = torch.randint(
                0, m.vocab_size, (spec["batch"], tokens), generator=generator
            )
            if rank == 0:
                tensors = _make_cache(spec, tokens, prompt, model, dev)
            else:
                tensors = _empty_cache(spec, tokens, dev)
            host = host_staging_buffers(tensors) if backend == "gloo" else None
            samples = _time_transfer(dist, rank, tensors, host, spec)
            if rank == 1:
                expected = _make_cache(spec, tokens, prompt, model, dev)
                median, spread = summarize_samples(samples)
                out.append(
                    TransferResult(
                        backend,
                        sum(t.numel() * t.element_size() for t in tensors),
                        len(tensors),
                        median,
                        spread,
                        len(samples),
                        _path_label(dev, host),
                        _verify(spec, tensors, expected, model),
                        tokens,
                    )
                )
        shared = [out]
        dist.broadcast_object_list(shared, src=1)
        dist.barrier()
        return list(shared[0])
    finally:
        dist.destroy_process_group()


def _kv_worker(
    rank: int, rendezvous: Rendezvous, backend: str, spec: dict, results: Any
) -> None:
    """One of the two workers in a spawned process: its results or its traceback go to ``results``."""
    try:
        results.put((rank, True, _kv_rank(rank, rendezvous, backend, spec)))
    except (
        BaseException
    ):  # report any failure to the parent, which kills the other worker
        results.put((rank, False, traceback.format_exc()))


def default_backend() -> str:
    """``"nccl"`` when two CUDA GPUs are visible, else ``"gloo"`` (CPU tensors)."""
    import torch

    return (
        "nccl"
        if torch.cuda.is_available() and torch.cuda.device_count() >= 2
        else "gloo"
    )


def distributed_kv_transfer(
    model: str | ModelConfig,
    tokens: int | Sequence[int],
    *,
    batch: int = 1,
    dtype: str = "fp32",
    repeats: int = 5,
    warmup: int = 1,
    backend: str | None = None,
    timeout: float = 120.0,
    seed: int = 0,
    prefill: bool = True,
    device: str | None = None,
    rendezvous: Rendezvous | None = None,
) -> tuple[TransferResult, ...]:
    """Prefill in one process, send the KV cache to another with ``torch.distributed``, time it.

    **Where the workers run.** With no ``rendezvous`` and none asked for in
    the environment (:func:`rendezvous_from_env`: ``KV_LAB_RENDEZVOUS=env``
    with ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``), this call spawns both workers
    on this machine and joins them on 127.0.0.1. With one, this process *is*
    the worker of that rank: start the same call on two machines (rank 0, the
    prefill worker, on ``MASTER_ADDR``; rank 1, the decode worker, elsewhere),
    for instance with ``torchrun --nnodes 2 --nproc-per-node 1``; both get the
    decode worker's results.

    **What moves.** NCCL (two or more GPUs, :func:`default_backend`) sends GPU
    memory to GPU memory. Gloo with the cache on a GPU (one GPU per machine,
    or two processes sharing one GPU) sends it the way such a deployment
    would: GPU → pinned host buffer → gloo → pinned host buffer → GPU, every
    copy inside the time. Gloo on the CPU moves host memory.

    Parameters
    ----------
    model : str or ModelConfig
        Shape of the :class:`~helpers.tinygpt.TinyGPT` both workers build (same seed, same weights).
    tokens : int or sequence of int
        Prompt length(s); each gives one result.
    batch : int
        Prompts prefilled together (the cache moves as one tensor per layer and kind).
    dtype : str
        Model and cache dtype (``"fp32"``, ``"bf16"``, ``"fp16"``).
    repeats, warmup : int
        Timed and untimed transfers per prompt length.
    backend : {"gloo", "nccl"}, optional
        Default :func:`default_backend`.
    timeout : float
        Seconds for the whole call, process start-up included; the workers are killed past it.
    seed : int
        Seed of the weights and prompts.
    prefill : bool
        ``True``: the prefill worker runs the model and sends the cache it produced.
        ``False``: it sends a seeded random cache of the same shape and no model is built
        (same bytes, without the cost of building a large model on a CPU).
    device : {"cuda", "cpu"}, optional
        Where each worker keeps the cache; default ``"cuda"`` when a GPU is
        visible, else ``"cpu"``. NCCL needs ``"cuda"``.
    rendezvous : Rendezvous, optional
        Run this process as one worker of a two-machine transfer (default: from the
        environment, else both workers here).

    Returns
    -------
    tuple of TransferResult
        One per prompt length, timed by the decode worker; ``verified`` says the received
        cache equals the one the decode worker computes itself (its own prefill, or the same
        seeded random cache) and, with ``prefill``, decodes to finite logits.
    """
    config = get_model(model)
    sizes = (tokens,) if isinstance(tokens, (int, np.integer)) else tuple(tokens)
    if not sizes:
        raise ValueError("tokens must name at least one prompt length")
    sizes = tuple(_args.positive_int("tokens", t) for t in sizes)
    if backend is not None and _args.name("backend", backend) not in (
        "gloo",
        "nccl",
    ):
        raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
    spec: dict[str, Any] = {
        "config": config,
        "tokens": sizes,
        "batch": _args.positive_int("batch", batch),
        "dtype": dtype,
        "repeats": _args.positive_int("repeats", repeats),
        "warmup": _args.non_negative_int("warmup", warmup),
        "seed": _args.non_negative_int("seed", seed),
        "timeout": _args.positive("timeout", timeout),
        "prefill": bool(prefill),
    }
    dtype_bytes(dtype)
    chosen = default_backend() if backend is None else _args.name("backend", backend)
    spec["backend"] = chosen
    spec["device"] = _cache_device(device, chosen)
    if rendezvous is None:
        rendezvous = rendezvous_from_env()
    if rendezvous is not None:  # one worker of a run across machines
        return tuple(_kv_rank(rendezvous.rank, rendezvous, chosen, spec))
    port = free_port()
    spec = {**spec, "spawned": True}
    worker_results = run_children(
        [
            (_kv_worker, (rank, Rendezvous(_HOST, port, rank), chosen, spec))
            for rank in (0, 1)
        ],
        spec["timeout"],
    )
    return tuple(worker_results[1])


def _cache_device(device: str | None, backend: str) -> str:
    """``"cuda"`` or ``"cpu"``: ``device`` checked against ``backend`` (default: a GPU when visible)."""
    if device is None:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    key = _args.name("device", device)
    if key not in ("cuda", "cpu"):
        raise ValueError(f"device must be 'cuda' or 'cpu', got {device!r}")
    if backend == "nccl" and key != "cuda":
        raise ValueError("device must be 'cuda' with backend='nccl'")
    return key
