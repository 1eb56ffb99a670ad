"""Move a KV cache from a prefill worker to a decode worker, and time it.

Disaggregated serving (DistServe, Splitwise, Mooncake) runs the prefill and
the decode of a request on different workers, so the prompt's KV cache must
travel between them. :func:`distributed_kv_transfer` does this for real on
one machine: it starts two processes on 127.0.0.1 joined by
``torch.distributed`` (``gloo`` on the CPU; ``nccl`` between two GPUs when
there are two), the *prefill worker* (rank 0) runs
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

import multiprocessing as mp
import os
import queue
import socket
import statistics
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from . import _validate
from .hardware import Link, dtype_bytes
from .llm import ModelConfig, get_model, kv_cache_bytes_per_token

_HOST = "127.0.0.1"


@dataclass(frozen=True)
class TransferResult:
    """One timed transfer of a set of messages from one process to another.

    Attributes
    ----------
    path : str
        ``"gloo"``, ``"nccl"``, ``"socket"`` or ``"shared_memory"``.
    nbytes : int
        Bytes moved per transfer (all messages).
    messages : int
        Messages per transfer (``2 * n_layers`` for a KV cache: keys and values of each layer).
    seconds : float
        Median seconds per transfer, timed by the receiver.
    spread : float
        Interquartile range of the repeats in seconds (0 with fewer than 4 repeats).
    repeats : int
        Timed transfers.
    device : str
        Where the bytes lived (``"CPU: ..."`` or the GPU names).
    verified : bool
        Whether the receiver checked the bytes it got (the KV cache against its own prefill,
        or the raw bytes against the sender's pattern).
    tokens : int
        Prompt tokens whose KV cache was moved (0 for raw bytes).
    """

    path: str
    nbytes: int
    messages: int
    seconds: float
    spread: float
    repeats: int
    device: str
    verified: bool
    tokens: int = 0

    @property
    def bandwidth(self) -> float:
        """Achieved bandwidth in bytes/s: ``nbytes / seconds``."""
        return self.nbytes / self.seconds


def free_port(host: str = _HOST) -> int:
    """A TCP port on ``host`` that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


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
    tokens = _validate.positive_int("tokens", tokens)
    batch = _validate.positive_int("batch", batch)
    per_layer = 1 if m.mla is not None else 2
    one = batch * tokens * (m.kv_elements_per_layer // per_layer) * dtype_bytes(dtype)
    sizes = (one,) * (per_layer * m.n_layers)
    assert sum(sizes) == batch * tokens * kv_cache_bytes_per_token(m, dtype=dtype)
    return sizes


def _summary(samples: list[float]) -> tuple[float, float]:
    spread = 0.0
    if len(samples) >= 4:
        q = statistics.quantiles(samples, n=4)
        spread = q[2] - q[0]
    return statistics.median(samples), spread


def _run_children(
    targets: Sequence[tuple[Callable[..., None], tuple]],
    timeout: float,
    on_parent: Callable[[Any], Any] | None = None,
) -> list[Any]:
    """Start one spawned process per ``(function, args)``, each given a result queue as last argument.

    Waits for one message per child within ``timeout`` seconds (``on_parent``, if given,
    runs in this process meanwhile and its result is appended). Kills every child on a
    failure or a timeout; always joins them.
    """
    ctx = mp.get_context("spawn")
    results: Any = ctx.Queue()
    children = [
        ctx.Process(target=fn, args=(*args, results), daemon=True)
        for fn, args in targets
    ]
    deadline = time.monotonic() + timeout
    try:
        for child in children:
            child.start()
        parent_result = on_parent(deadline) if on_parent is not None else None
        messages: dict[int, Any] = {}
        while len(messages) < len(children):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"transfer workers did not finish within timeout={timeout} s"
                )
            try:
                rank, ok, payload = results.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                dead = [c for c in children if c.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(
                        f"a transfer worker died with exit code {dead[0].exitcode}"
                    ) from None
                continue
            if not ok:
                raise RuntimeError(f"transfer worker {rank} failed:\n{payload}")
            messages[rank] = payload
        for child in children:
            child.join(max(0.1, deadline - time.monotonic()))
        ordered = [messages[i] for i in sorted(messages)]
        return ordered + ([parent_result] if on_parent is not None else [])
    finally:
        for child in children:
            if child.pid is None:
                continue
            if child.is_alive():
                child.kill()
            child.join(5)
        results.close()


def _threads_per_worker() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def _pattern(nbytes: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


# --- torch.distributed path -------------------------------------------------


def _kv_worker(rank: int, port: int, backend: str, spec: dict, results: Any) -> None:
    """One of the two distributed workers (runs in a spawned process)."""
    try:
        import torch
        import torch.distributed as dist

        from .bench import device_name, torch_dtype
        from .tinygpt import TinyGPT

        torch.set_num_threads(_threads_per_worker())
        dev = torch.device(f"cuda:{rank}") if backend == "nccl" else torch.device("cpu")
        if dev.type == "cuda":
            torch.cuda.set_device(dev)
        dist.init_process_group(
            backend,
            init_method=f"tcp://{_HOST}:{port}",
            rank=rank,
            world_size=2,
            timeout=timedelta(seconds=spec["timeout"]),
        )
        m = spec["config"]
        dtype = torch_dtype(spec["dtype"])
        model = (
            TinyGPT(m, dtype=spec["dtype"], device=dev, seed=spec["seed"])
            if spec["prefill"]
            else None
        )

        def make_cache(tokens: int, prompt: Any) -> list:
            if model is not None:
                _, cache = model.prefill(prompt)
            else:
                generator = torch.Generator().manual_seed(spec["seed"] + tokens)
                shape = (spec["batch"], m.n_kv_heads, tokens, m.head_dim)
                cache = [
                    tuple(
                        torch.randn(shape, generator=generator).to(dev, dtype)
                        for _ in range(2)
                    )
                    for _ in range(m.n_layers)
                ]
            return [t.contiguous() for pair in cache for t in pair]

        out = []
        for tokens in spec["tokens"]:
            generator = torch.Generator().manual_seed(spec["seed"] + tokens)
            prompt = torch.randint(
                0, m.vocab_size, (spec["batch"], tokens), generator=generator
            )
            if rank == 0:
                tensors = make_cache(tokens, prompt)
            else:
                shape = (spec["batch"], m.n_kv_heads, tokens, m.head_dim)
                tensors = [
                    torch.empty(shape, dtype=dtype, device=dev)
                    for _ in range(2 * m.n_layers)
                ]
            samples = []
            go = torch.zeros(1, device=dev)
            dist.barrier()  # both workers hold their tensors before the first "go"
            for i in range(spec["warmup"] + spec["repeats"]):
                # the decode worker asks ("go") and times until the last tensor has arrived:
                # one small round trip is included, as in socket_transfer
                if dev.type == "cuda":
                    torch.cuda.synchronize(dev)
                start = time.perf_counter()
                if rank == 1:
                    dist.send(go, 0)
                    for t in tensors:
                        dist.recv(t, 0)
                else:
                    dist.recv(go, 1)
                    for t in tensors:
                        dist.send(t, 1)
                if dev.type == "cuda":
                    torch.cuda.synchronize(dev)
                if i >= spec["warmup"]:
                    samples.append(time.perf_counter() - start)
            if rank == 1:
                expected = make_cache(tokens, prompt)
                verified = all(
                    torch.allclose(a.float(), b.float(), rtol=1e-3, atol=1e-3)
                    for a, b in zip(tensors, expected)
                )
                if model is not None:
                    received = [
                        (tensors[2 * i], tensors[2 * i + 1]) for i in range(m.n_layers)
                    ]
                    logits, _ = model.decode_step(
                        torch.zeros(spec["batch"], dtype=torch.long), received
                    )
                    verified = verified and bool(torch.isfinite(logits).all())
                nbytes = sum(t.numel() * t.element_size() for t in tensors)
                median, spread = _summary(samples)
                name = device_name(dev)
                if dev.type == "cuda":
                    name = f"{device_name(torch.device('cuda:0'))} -> {name}"
                out.append(
                    TransferResult(
                        backend,
                        nbytes,
                        len(tensors),
                        median,
                        spread,
                        len(samples),
                        name,
                        verified,
                        tokens,
                    )
                )
        dist.barrier()
        dist.destroy_process_group()
        results.put((rank, True, out))
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
) -> tuple[TransferResult, ...]:
    """Prefill in one process, send the KV cache to another with ``torch.distributed``, time it.

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
    sizes = tuple(_validate.positive_int("tokens", t) for t in sizes)
    if backend is not None and _validate.name("backend", backend) not in (
        "gloo",
        "nccl",
    ):
        raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
    spec = {
        "config": config,
        "tokens": sizes,
        "batch": _validate.positive_int("batch", batch),
        "dtype": dtype,
        "repeats": _validate.positive_int("repeats", repeats),
        "warmup": _validate.non_negative_int("warmup", warmup),
        "seed": _validate.non_negative_int("seed", seed),
        "timeout": _validate.positive("timeout", timeout),
        "prefill": bool(prefill),
    }
    dtype_bytes(dtype)
    chosen = (
        default_backend() if backend is None else _validate.name("backend", backend)
    )
    port = free_port()
    worker_results = _run_children(
        [(_kv_worker, (rank, port, chosen, spec)) for rank in (0, 1)], spec["timeout"]
    )
    return tuple(worker_results[1])


# --- reference paths: a plain socket, shared memory --------------------------


def _socket_sender(
    port: int, sizes: tuple[int, ...], rounds: int, seed: int, results: Any
) -> None:
    try:
        payload = _pattern(sum(sizes), seed)
        views, offset = [], 0
        for size in sizes:
            views.append(memoryview(payload)[offset : offset + size])
            offset += size
        with socket.create_connection((_HOST, port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(rounds):
                if sock.recv(1) != b"g":
                    raise RuntimeError("receiver closed the connection")
                for view in views:
                    sock.sendall(view)
        results.put((0, True, None))
    except BaseException:
        results.put((0, False, traceback.format_exc()))


def _recv_exactly(sock: socket.socket, buffer: memoryview) -> None:
    got = 0
    while got < len(buffer):
        n = sock.recv_into(buffer[got:])
        if n == 0:
            raise RuntimeError("sender closed the connection early")
        got += n


def socket_transfer(
    message_bytes: Sequence[int],
    *,
    repeats: int = 5,
    warmup: int = 1,
    timeout: float = 60.0,
    seed: int = 0,
) -> TransferResult:
    """Send ``message_bytes`` (one ``sendall`` each) from a child process over TCP on 127.0.0.1; time it.

    This process receives into a preallocated buffer and times each round from its
    one-byte "go" to the last byte (so one small round trip is included), then checks
    the bytes against the sender's pattern.
    """
    sizes = tuple(_validate.positive_int("message_bytes", s) for s in message_bytes)
    if not sizes:
        raise ValueError("message_bytes must list at least one message")
    repeats = _validate.positive_int("repeats", repeats)
    warmup = _validate.non_negative_int("warmup", warmup)
    timeout = _validate.positive("timeout", timeout)
    total = sum(sizes)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind((_HOST, 0))
    server.listen(1)
    port = int(server.getsockname()[1])

    def receive(deadline: float) -> tuple[list[float], bool]:
        server.settimeout(max(0.1, deadline - time.monotonic()))
        conn, _ = server.accept()
        with conn:
            conn.settimeout(max(0.1, deadline - time.monotonic()))
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buffer = np.empty(total, dtype=np.uint8)
            view = memoryview(buffer)
            samples = []
            for i in range(warmup + repeats):
                start = time.perf_counter()
                conn.sendall(b"g")
                _recv_exactly(conn, view)
                if i >= warmup:
                    samples.append(time.perf_counter() - start)
            return samples, bool(np.array_equal(buffer, _pattern(total, seed)))

    try:
        _, (samples, verified) = _run_children(
            [(_socket_sender, (port, sizes, warmup + repeats, seed))], timeout, receive
        )
    finally:
        server.close()
    median, spread = _summary(samples)
    return TransferResult(
        "socket", total, len(sizes), median, spread, repeats, _cpu_label(), verified
    )


def _shm_writer(
    name: str, sizes: tuple[int, ...], conn: Any, seed: int, results: Any
) -> None:
    try:
        block = shared_memory.SharedMemory(name=name)
        try:
            source = _pattern(sum(sizes), seed)
            target = np.ndarray(source.shape, dtype=np.uint8, buffer=block.buf)
            while conn.recv() == "go":
                offset = 0
                for size in sizes:
                    np.copyto(
                        target[offset : offset + size], source[offset : offset + size]
                    )
                    offset += size
                conn.send("done")
            del target
        finally:
            block.close()
        results.put((0, True, None))
    except BaseException:
        results.put((0, False, traceback.format_exc()))


def shared_memory_transfer(
    message_bytes: Sequence[int],
    *,
    repeats: int = 5,
    warmup: int = 1,
    timeout: float = 60.0,
    seed: int = 0,
) -> TransferResult:
    """Move ``message_bytes`` from a child process to this one through ``multiprocessing.shared_memory``.

    Each round: this process says "go" over a pipe, the child copies every message into
    the shared block and answers "done", this process copies the block out. Two memory
    copies and two pipe messages: the floor for moving bytes between processes on one host.
    """
    sizes = tuple(_validate.positive_int("message_bytes", s) for s in message_bytes)
    if not sizes:
        raise ValueError("message_bytes must list at least one message")
    repeats = _validate.positive_int("repeats", repeats)
    warmup = _validate.non_negative_int("warmup", warmup)
    timeout = _validate.positive("timeout", timeout)
    total = sum(sizes)
    block = shared_memory.SharedMemory(create=True, size=total)
    ctx = mp.get_context("spawn")
    mine, theirs = ctx.Pipe()

    def read(deadline: float) -> tuple[list[float], bool]:
        shared = np.ndarray((total,), dtype=np.uint8, buffer=block.buf)
        out = np.empty(total, dtype=np.uint8)
        samples = []
        try:
            for i in range(warmup + repeats):
                start = time.perf_counter()
                mine.send("go")
                if not mine.poll(max(0.1, deadline - time.monotonic())):
                    raise TimeoutError(
                        f"shared-memory writer did not answer within timeout={timeout} s"
                    )
                mine.recv()
                np.copyto(out, shared)
                if i >= warmup:
                    samples.append(time.perf_counter() - start)
            mine.send("stop")
            return samples, bool(np.array_equal(out, _pattern(total, seed)))
        finally:
            del shared

    try:
        _, (samples, verified) = _run_children(
            [(_shm_writer, (block.name, sizes, theirs, seed))], timeout, read
        )
    finally:
        mine.close()
        theirs.close()
        block.close()
        block.unlink()
    median, spread = _summary(samples)
    return TransferResult(
        "shared_memory",
        total,
        len(sizes),
        median,
        spread,
        repeats,
        _cpu_label(),
        verified,
    )


def fit_link(
    name: str,
    nbytes: Sequence[float],
    seconds: Sequence[float],
    *,
    source: str = "measured",
) -> Link:
    """A :class:`~helpers.hardware.Link` through the smallest and the largest of paired measurements.

    ``seconds[i]`` is the measured time to move ``nbytes[i]`` bytes. The
    bandwidth is the slope between the smallest and the largest transfer,
    ``(b1 - b0) / (t1 - t0)``, and the latency what is left of the smallest
    one, ``max(t0 - b0 / bandwidth, 0)``; if the largest was not the slower
    (no slope to read), the bandwidth is ``b1 / t1`` and the latency 0. The
    link then predicts ``latency + bytes / bandwidth`` for every other size
    (:func:`helpers.kvcache.transfer_time`), which is how a lab checks the
    points in between.
    """
    b = np.asarray(nbytes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if b.ndim != 1 or b.shape != t.shape or b.size == 0:
        raise ValueError(
            f"nbytes and seconds must be equally long, non-empty sequences, got {b.shape} and {t.shape}"
        )
    if (
        np.any(~np.isfinite(b))
        or np.any(b <= 0)
        or np.any(~np.isfinite(t))
        or np.any(t <= 0)
    ):
        raise ValueError("nbytes and seconds must be finite and > 0")
    lo, hi = int(np.argmin(b)), int(np.argmax(b))
    (b0, t0), (b1, t1) = (b[lo], t[lo]), (b[hi], t[hi])
    if b1 > b0 and t1 > t0:
        bandwidth = (b1 - b0) / (t1 - t0)
        latency = max(t0 - b0 / bandwidth, 0.0)
    else:
        bandwidth, latency = b1 / t1, 0.0
    return Link(name, float(bandwidth), float(latency), source)


def measured_breakeven(
    lengths: Sequence[int], transfer_s: Sequence[float], recompute_s: Sequence[float]
) -> int | None:
    """Shortest measured prompt length from which moving a KV cache beat recomputing it at every longer length.

    ``lengths`` in increasing order, with the measured seconds to move the
    cache (``transfer_s``) and to recompute it (``recompute_s``) at each.
    Returns ``lengths[i]`` for the smallest ``i`` such that transfer was
    faster at ``i`` and every later length, or ``None`` if it was not faster
    at the longest length.
    """
    n = np.asarray(lengths)
    moved, recomputed = (
        np.asarray(transfer_s, dtype=float),
        np.asarray(recompute_s, dtype=float),
    )
    if (
        n.ndim != 1
        or n.size == 0
        or moved.shape != n.shape
        or recomputed.shape != n.shape
    ):
        raise ValueError(
            "lengths, transfer_s and recompute_s must be equally long, non-empty sequences"
        )
    if np.any(np.diff(n) <= 0):
        raise ValueError("lengths must be strictly increasing")
    wins = moved < recomputed
    for i in range(len(n)):
        if wins[i:].all():
            return int(n[i])
    return None


def _cpu_label() -> str:
    from .bench import cpu_name

    return f"CPU: {cpu_name()}"
