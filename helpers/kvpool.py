"""A real disaggregated KV pool on one machine: Mooncake Store, started, used and always stopped.

Mooncake (Qin et al. 2025) keeps KV caches in a pool of memory spread over
many machines (Mooncake Store) and moves them with its Transfer Engine. Its
pieces are on PyPI (``mooncake-transfer-engine`` with CUDA and RDMA,
``mooncake-transfer-engine-non-cuda`` for CPUs over TCP):

* a **master** process (``mooncake_master``) that knows which object lives
  where; here it also runs the HTTP **metadata server** through which the
  clients find each other's memory;
* **clients** (``mooncake.store.MooncakeDistributedStore``), each of which may
  contribute a *segment* of its memory to the pool. An object put by a client
  lives in a segment of the pool (here: the putting client's), so that client
  must stay alive until every reader is done.

:func:`start_local_pool` starts a master on free loopback ports, within a
timeout, in its own process group, and stops it (the whole group) on exit
from its ``with`` block, on an error, on ``KeyboardInterrupt`` and at
interpreter exit. :func:`connect` checks that the master and the metadata
server answer before it sets a client up (a missing master is a clear
:class:`ConnectionError` within ``timeout`` seconds, never a hang).
:class:`PoolClient` puts and gets bytes and KV caches layer by layer; a
missing key is a :class:`KeyError`.

:func:`pool_object_transfer` and :func:`pool_kv_transfer` time the pool
between two spawned processes (a *prefill* writer and a *decode* reader),
with the process handling of :mod:`helpers.kvtransfer`.

The same code runs across machines: give :class:`PoolAddress` the master's
and the metadata server's addresses, this machine's reachable hostname, and
``protocol="rdma"`` with the NIC names as ``devices`` (CUDA build).

References
----------
Qin et al. 2025 (Mooncake, FAST'25).
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _args
from ._measure import (
    TransferResult,
    byte_pattern,
    cpu_label,
    run_children,
    summarize_samples,
)
from ._mooncake_master import (
    LocalPool,
    PoolAddress,
    start_local_pool,
    unavailable_reason,
)
from ._pool_client import PoolClient, connect
from .llm import ModelConfig, get_model

# The public names, the re-exported ones among them, in the order the API reference shows them.
__all__ = [
    "PoolAddress",
    "unavailable_reason",
    "LocalPool",
    "start_local_pool",
    "PoolClient",
    "connect",
    "pool_object_transfer",
    "PoolKVResult",
    "pool_kv_transfer",
    "recompute_tokens",
]

_MIB = 1 << 20


# --- two processes: a writer (prefill) and a reader (decode) -----------------


def _report(rank: int, results: Any, work: Any) -> None:
    try:
        results.put((rank, True, work()))
    except BaseException:
        results.put((rank, False, traceback.format_exc()))


def _wait(event: Any, deadline: float) -> None:
    if not event.wait(max(0.1, deadline - time.monotonic())):
        raise TimeoutError("the other worker did not answer in time")


def _object_writer(address, spec, ready, done, results) -> None:
    def work():
        deadline = time.monotonic() + spec["timeout"]
        out: dict[Any, Any] = {}
        with connect(address, segment_bytes=spec["segment"]) as client:
            for size in spec["sizes"]:
                payload = byte_pattern(size, spec["seed"] + size)
                samples = []
                for i in range(spec["warmup"] + spec["repeats"]):
                    start = time.perf_counter()
                    client.put(f"obj/{size}/{i}", payload)
                    if i >= spec["warmup"]:
                        samples.append(time.perf_counter() - start)
                out[size] = samples
            ready.set()
            _wait(done, deadline)  # the objects live in this client's segment
        return out

    _report(0, results, work)


def _object_reader(address, spec, ready, done, results) -> None:
    def work():
        deadline = time.monotonic() + spec["timeout"]
        _wait(ready, deadline)
        out: dict[Any, Any] = {}
        try:
            with connect(address, segment_bytes=0) as client:
                for size in spec["sizes"]:
                    samples, verified = [], True
                    expected = byte_pattern(size, spec["seed"] + size).tobytes()
                    stored = spec["warmup"] + spec["repeats"]
                    for i in range(spec["warmup"] + spec["get_repeats"]):
                        start = time.perf_counter()
                        data = client.get(f"obj/{size}/{i % stored}")
                        if i >= spec["warmup"]:
                            samples.append(time.perf_counter() - start)
                        verified &= data == expected
                    out[size] = (samples, verified)
        finally:
            done.set()
        return out

    _report(1, results, work)


def _events() -> tuple[Any, Any]:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    return ctx.Event(), ctx.Event()


def pool_object_transfer(
    sizes: Sequence[int],
    address: PoolAddress,
    *,
    repeats: int = 5,
    get_repeats: int | None = None,
    warmup: int = 1,
    timeout: float = 60.0,
    seed: int = 0,
) -> tuple[tuple[TransferResult, ...], tuple[TransferResult, ...]]:
    """Put objects of each size from one process, get them from another; time both.

    Returns ``(puts, gets)``, one :class:`~helpers.kvtransfer.TransferResult` per size:
    the median of ``repeats`` puts (each a new object, after ``warmup`` untimed ones) and
    of ``get_repeats`` gets (default ``repeats``; the objects are read in turn, so a get
    may read an object again); ``verified``: the reader got the writer's bytes every time.
    A get includes copying the object into a new ``bytes``.
    """
    sizes = tuple(_args.positive_int("sizes", s) for s in sizes)
    if not sizes:
        raise ValueError("sizes must list at least one object size")
    spec: dict[str, Any] = {
        "sizes": sizes,
        "repeats": _args.positive_int("repeats", repeats),
        "get_repeats": _args.positive_int(
            "get_repeats", repeats if get_repeats is None else get_repeats
        ),
        "warmup": _args.non_negative_int("warmup", warmup),
        "timeout": _args.positive("timeout", timeout),
        "seed": _args.non_negative_int("seed", seed),
    }
    spec["segment"] = 2 * sum(sizes) * (spec["repeats"] + spec["warmup"]) + 64 * _MIB
    ready, done = _events()
    written, read = run_children(
        [
            (_object_writer, (address, spec, ready, done)),
            (_object_reader, (address, spec, ready, done)),
        ],
        spec["timeout"],
    )
    label = cpu_label()
    puts: list[TransferResult] = []
    gets: list[TransferResult] = []
    for size in sizes:
        for kind, samples, verified, out in (
            ("mooncake put", written[size], True, puts),
            ("mooncake get", *read[size], gets),
        ):
            median, spread = summarize_samples(samples)
            out.append(
                TransferResult(
                    kind, size, 1, median, spread, len(samples), label, verified
                )
            )
    return tuple(puts), tuple(gets)


@dataclass(frozen=True)
class PoolKVResult:
    """One prompt length through the pool: prefill and put in one process, get and decode in another.

    Attributes
    ----------
    tokens : int
        Prompt length.
    nbytes : int
        KV cache bytes (``2 * n_layers`` objects).
    prefill_s : float
        Median seconds of the prefill alone (the writer's recompute time).
    put_s : float
        Median seconds to put the whole cache, layer by layer, after the prefill.
    overlapped_s : float
        Median seconds of a prefill that puts each layer from a second thread while
        the next layer computes (Mooncake's layer-wise store).
    get : TransferResult
        The reader's fetch of the whole cache (``2 * n_layers`` gets); its ``path`` says
        ``"mooncake get (zero copy)"`` or ``"mooncake get (bytes)"``.
    generated : tuple of int
        Tokens the reader generated from the fetched cache (the first one is the writer's).
    fallback : str or None
        Why the registered-buffer path was not used (by either process), or ``None``.
    """

    tokens: int
    nbytes: int
    prefill_s: float
    put_s: float
    overlapped_s: float
    get: TransferResult
    generated: tuple[int, ...]
    fallback: str | None = None


def _prompt(config: ModelConfig, tokens: int, seed: int) -> Any:
    import torch

    generator = torch.Generator().manual_seed(seed + tokens)
    return torch.randint(0, config.vocab_size, (1, tokens), generator=generator)


def _overlapped_prefill(
    model: Any, prompt: Any, client: PoolClient, prefix: str
) -> Any:
    """A prefill whose layer ``i`` is put by a second thread while layer ``i + 1`` computes."""
    import torch

    pending: queue.Queue = queue.Queue()
    errors: list[BaseException] = []

    def putter() -> None:
        while (item := pending.get()) is not None:
            try:
                client.put_layer(prefix, *item)
            except BaseException as exc:  # reported after the join
                errors.append(exc)

    thread = threading.Thread(target=putter)
    thread.start()
    try:
        with torch.no_grad():
            x = model.embed(prompt)
            for layer, block in enumerate(model.blocks):
                x, (k, v) = block(x, None)
                pending.put((layer, k, v))
            logits = model.lm_head(model.norm(x[:, -1:, :]))[:, 0, :]
    finally:
        pending.put(None)
        thread.join()
    if errors:
        raise errors[0]
    return logits


def _kv_writer(address, spec, ready, done, results) -> None:
    def work():
        import torch

        from .tinygpt import TinyGPT

        torch.set_num_threads(1)
        deadline = time.monotonic() + spec["timeout"]
        m = spec["config"]
        model = TinyGPT(m, dtype=spec["dtype"], seed=spec["seed"])
        out: dict[Any, Any] = {}
        with connect(
            address, segment_bytes=spec["segment"], zero_copy=spec["zero_copy"]
        ) as client:
            for tokens in spec["tokens"]:
                prompt = _prompt(m, tokens, spec["seed"])
                prefill, put, overlapped = [], [], []
                for i in range(spec["warmup"] + spec["repeats"]):
                    # serial and overlapped alternate which runs first, so neither
                    # always meets the caches (or the scheduler) the other left
                    for order in (0, 1) if i % 2 == 0 else (1, 0):
                        start = time.perf_counter()
                        if order == 0:
                            logits, cache = model.prefill(prompt)
                            middle = time.perf_counter()
                            client.put_kv_cache(f"kv/{tokens}/{i}", cache)
                        else:
                            overlapped_logits = _overlapped_prefill(
                                model, prompt, client, f"kv-overlap/{tokens}/{i}"
                            )
                        end = time.perf_counter()
                        if i < spec["warmup"]:
                            continue
                        if order == 0:
                            prefill.append(middle - start)
                            put.append(end - middle)
                        else:
                            overlapped.append(end - start)
                assert torch.equal(logits, overlapped_logits)
                first = int(logits.argmax(-1)[0])
                client.put(f"kv/{tokens}/first", np.array([first], dtype=np.int64))
                out[tokens] = (prefill, put, overlapped)
            out["fallback"] = client.fallback_reason
            ready.set()
            _wait(done, deadline)  # the caches live in this client's segment
        return out

    _report(0, results, work)


def _kv_reader(address, spec, ready, done, results) -> None:
    def work():
        import torch

        from .tinygpt import TinyGPT

        torch.set_num_threads(1)
        deadline = time.monotonic() + spec["timeout"]
        m = spec["config"]
        model = TinyGPT(m, dtype=spec["dtype"], seed=spec["seed"])
        _wait(ready, deadline)
        out: dict[Any, Any] = {}
        try:
            with connect(
                address, segment_bytes=0, zero_copy=spec["zero_copy"]
            ) as client:
                for tokens in spec["tokens"]:
                    samples = []
                    stored = spec["warmup"] + spec["repeats"]
                    # the decode side's KV memory: allocated and registered once, as a
                    # server's paged KV cache is
                    buffers = client.empty_kv_cache(m, tokens, dtype=spec["dtype"])
                    for i in range(spec["warmup"] + spec["get_repeats"]):
                        start = time.perf_counter()
                        cache = client.get_kv_cache(
                            f"kv/{tokens}/{i % stored}",
                            m,
                            tokens,
                            dtype=spec["dtype"],
                            out=buffers,
                        )
                        if i >= spec["warmup"]:
                            samples.append(time.perf_counter() - start)
                    token = int(
                        np.frombuffer(client.get(f"kv/{tokens}/first"), np.int64)[0]
                    )
                    generated = [token]
                    cache = [(k.clone(), v.clone()) for k, v in cache]
                    for _ in range(spec["new_tokens"] - 1):
                        logits, cache = model.decode_step(torch.tensor([token]), cache)
                        token = int(logits.argmax(-1)[0])
                        generated.append(token)
                    out[tokens] = (samples, tuple(generated))
                    client.unregister([t for pair in buffers for t in pair])
                out["fallback"] = client.fallback_reason
        finally:
            done.set()
        return out

    _report(1, results, work)


def pool_kv_transfer(
    model: str | ModelConfig,
    tokens: int | Sequence[int],
    address: PoolAddress,
    *,
    dtype: str = "fp32",
    new_tokens: int = 8,
    repeats: int = 3,
    get_repeats: int | None = None,
    warmup: int = 1,
    timeout: float = 120.0,
    seed: int = 0,
    zero_copy: bool = True,
) -> tuple[PoolKVResult, ...]:
    """Disaggregated prefill and decode through the pool, between two spawned processes.

    The *prefill* process builds :class:`~helpers.tinygpt.TinyGPT` (``seed``), prefills a
    seeded random prompt of each length, puts the KV cache layer by layer (timed after
    the prefill, and again overlapped with it) and the first generated token. The *decode*
    process (same weights) gets each cache ``get_repeats`` times (default ``repeats``),
    times the fetch, and generates ``new_tokens`` tokens greedily from it.
    :func:`recompute_tokens` gives the tokens to compare them with. Times are medians.
    With ``zero_copy`` (and a build that has it), caches move through registered
    buffers (:class:`PoolClient`); each result's ``fallback`` says when they did not.
    """
    config = get_model(model)
    sizes = (tokens,) if isinstance(tokens, (int, np.integer)) else tuple(tokens)
    if not sizes:
        raise ValueError("tokens must name at least one prompt length")
    spec: dict[str, Any] = {
        "config": config,
        "tokens": tuple(_args.positive_int("tokens", t) for t in sizes),
        "dtype": dtype,
        "new_tokens": _args.positive_int("new_tokens", new_tokens),
        "repeats": _args.positive_int("repeats", repeats),
        "get_repeats": _args.positive_int(
            "get_repeats", repeats if get_repeats is None else get_repeats
        ),
        "warmup": _args.non_negative_int("warmup", warmup),
        "timeout": _args.positive("timeout", timeout),
        "seed": _args.non_negative_int("seed", seed),
        "zero_copy": bool(zero_copy),
    }
    from .llm import kv_cache_bytes

    nbytes = {n: int(kv_cache_bytes(config, n, dtype=dtype)) for n in spec["tokens"]}
    copies = 2 * (spec["repeats"] + spec["warmup"])
    spec["segment"] = 2 * copies * sum(nbytes.values()) + 64 * _MIB
    ready, done = _events()
    written, read = run_children(
        [
            (_kv_writer, (address, spec, ready, done)),
            (_kv_reader, (address, spec, ready, done)),
        ],
        spec["timeout"],
    )
    fallback = written.pop("fallback") or read.pop("fallback", None)
    read.pop("fallback", None)
    out = []
    for n in spec["tokens"]:
        prefill, put, overlapped = written[n]
        samples, generated = read[n]
        median, spread = summarize_samples(samples)
        get = TransferResult(
            "mooncake get (bytes)" if fallback else "mooncake get (zero copy)",
            nbytes[n],
            2 * config.n_layers,
            median,
            spread,
            len(samples),
            cpu_label(),
            True,
            n,
        )
        out.append(
            PoolKVResult(
                n,
                nbytes[n],
                summarize_samples(prefill)[0],
                summarize_samples(put)[0],
                summarize_samples(overlapped)[0],
                get,
                generated,
                fallback,
            )
        )
    return tuple(out)


def recompute_tokens(
    model: str | ModelConfig,
    tokens: int,
    *,
    dtype: str = "fp32",
    new_tokens: int = 8,
    seed: int = 0,
) -> tuple[int, ...]:
    """The tokens one process generates greedily after prefilling the prompt itself.

    Same prompt and weights as :func:`pool_kv_transfer`: its decode process must
    produce exactly these tokens from the fetched cache.
    """
    import torch

    from .tinygpt import TinyGPT

    config = get_model(model)
    net = TinyGPT(config, dtype=dtype, seed=_args.non_negative_int("seed", seed))
    logits, cache = net.prefill(
        _prompt(config, _args.positive_int("tokens", tokens), seed)
    )
    generated = [int(logits.argmax(-1)[0])]
    for _ in range(_args.positive_int("new_tokens", new_tokens) - 1):
        logits, cache = net.decode_step(torch.tensor([generated[-1]]), cache)
        generated.append(int(logits.argmax(-1)[0]))
    return tuple(generated)
