"""Shared measurement harness: sample summaries, free ports, spawned worker processes.

:mod:`helpers.bench`, :mod:`helpers.kvtransfer` and :mod:`helpers.kvpool`
time things the same way: they summarize repeated samples by their median
and interquartile range (:func:`summarize_samples`), find a free TCP port
for a rendezvous (:func:`free_port`) and run their workers as spawned child
processes that report one message each to a queue, killed on an error or a
timeout (:func:`run_children`); :mod:`helpers.kvtransfer` and
:mod:`helpers.kvpool` report one timed transfer as a :class:`TransferResult`
(re-exported by :mod:`helpers.kvtransfer`). This module holds those pieces
once, so no module imports another's private names. No torch is imported here.
"""

from __future__ import annotations

import multiprocessing as mp
import platform
import queue
import socket
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _args

LOOPBACK = "127.0.0.1"
"""The host every single-machine measurement binds to."""


def summarize_samples(samples: Sequence[float]) -> tuple[float, float]:
    """``(median, interquartile range)`` of timing samples in seconds (IQR 0 with fewer than 4).

    The IQR is ``Q3 - Q1`` with :func:`statistics.quantiles` (``n=4``, the
    "exclusive" method).

    Examples
    --------
    >>> summarize_samples([1.0, 2.0, 3.0])
    (2.0, 0.0)
    >>> summarize_samples([1.0, 2.0, 3.0, 4.0, 5.0])
    (3.0, 3.0)
    """
    values = [float(s) for s in samples]
    if not values:
        raise ValueError("samples must hold at least one time")
    for value in values:
        _args.non_negative("samples", value)
    spread = 0.0
    if len(values) >= 4:
        q = statistics.quantiles(values, n=4)
        spread = q[2] - q[0]
    return statistics.median(values), spread


def free_port(*, host: str = LOOPBACK) -> int:
    """A TCP port on ``host`` that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def byte_pattern(nbytes: int, seed: int) -> np.ndarray:
    """``nbytes`` seeded pseudo-random bytes (``uint8``): what a sender sends and a receiver checks."""
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), or platform's best guess."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_label() -> str:
    """``"CPU: <model name>"``, the device label of a transfer between host processes."""
    return f"CPU: {cpu_name()}"


def _collect(
    children: Sequence[Any], results: Any, deadline: float, timeout: float
) -> dict[int, Any]:
    """One ``(rank, ok, payload)`` message per child from ``results`` before ``deadline``."""
    messages: dict[int, Any] = {}
    while len(messages) < len(children):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"workers did not finish within timeout={timeout} s")
        try:
            rank, ok, payload = results.get(timeout=min(remaining, 0.5))
        except queue.Empty:
            dead = [c for c in children if c.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(
                    f"a worker died with exit code {dead[0].exitcode}"
                ) from None
            continue
        if not ok:
            raise RuntimeError(f"worker {rank} failed:\n{payload}")
        messages[rank] = payload
    return messages


def run_children(
    targets: Sequence[tuple[Callable[..., None], tuple]],
    timeout: float,
    *,
    on_parent: Callable[[float], Any] | None = None,
) -> list[Any]:
    """Start one spawned process per ``(function, args)``, each given a result queue as last argument.

    Each child puts one ``(rank, ok, payload)`` on the queue. Waits for one
    message per child within ``timeout`` seconds (``on_parent(deadline)``,
    if given, runs in this process meanwhile and its result is appended).
    Returns the payloads in rank order. Kills every child on a failure or a
    timeout (``RuntimeError``, ``TimeoutError``); always joins them.
    """
    timeout = _args.positive("timeout", timeout)
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
        messages = _collect(children, results, deadline, timeout)
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
