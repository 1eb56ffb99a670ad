"""The reference paths between two processes: a plain TCP socket and shared memory, no distributed runtime.

Part of :mod:`helpers.kvtransfer` (which re-exports :func:`socket_transfer`
and :func:`shared_memory_transfer`): the same bytes, in the same messages,
as its ``torch.distributed`` path, moved by a loopback socket or through
``multiprocessing.shared_memory``.
"""

from __future__ import annotations

import multiprocessing as mp
import socket
import time
import traceback
from collections.abc import Sequence
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from . import _args
from ._measure import (
    LOOPBACK,
    TransferResult,
    byte_pattern,
    cpu_label,
    run_children,
    summarize_samples,
)

_HOST = LOOPBACK


def _socket_sender(
    port: int, sizes: tuple[int, ...], rounds: int, seed: int, results: Any
) -> None:
    try:
        payload = byte_pattern(sum(sizes), seed)
        views, offset = [], 0
        for size in sizes:
            views.append(payload.data[offset : offset + size])
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
    sizes = tuple(_args.positive_int("message_bytes", s) for s in message_bytes)
    if not sizes:
        raise ValueError("message_bytes must list at least one message")
    repeats = _args.positive_int("repeats", repeats)
    warmup = _args.non_negative_int("warmup", warmup)
    timeout = _args.positive("timeout", timeout)
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
            view = buffer.data
            samples = []
            for i in range(warmup + repeats):
                start = time.perf_counter()
                conn.sendall(b"g")
                _recv_exactly(conn, view)
                if i >= warmup:
                    samples.append(time.perf_counter() - start)
            return samples, bool(np.array_equal(buffer, byte_pattern(total, seed)))

    try:
        _, (samples, verified) = run_children(
            [(_socket_sender, (port, sizes, warmup + repeats, seed))],
            timeout,
            on_parent=receive,
        )
    finally:
        server.close()
    median, spread = summarize_samples(samples)
    return TransferResult(
        "socket", total, len(sizes), median, spread, repeats, cpu_label(), verified
    )


def _shm_writer(
    name: str, sizes: tuple[int, ...], conn: Any, seed: int, results: Any
) -> None:
    try:
        block = shared_memory.SharedMemory(name=name)
        try:
            source = byte_pattern(sum(sizes), seed)
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
    sizes = tuple(_args.positive_int("message_bytes", s) for s in message_bytes)
    if not sizes:
        raise ValueError("message_bytes must list at least one message")
    repeats = _args.positive_int("repeats", repeats)
    warmup = _args.non_negative_int("warmup", warmup)
    timeout = _args.positive("timeout", timeout)
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
            return samples, bool(np.array_equal(out, byte_pattern(total, seed)))
        finally:
            del shared

    try:
        _, (samples, verified) = run_children(
            [(_shm_writer, (block.name, sizes, theirs, seed))],
            timeout,
            on_parent=read,
        )
    finally:
        mine.close()
        theirs.close()
        block.close()
        block.unlink()
    median, spread = summarize_samples(samples)
    return TransferResult(
        "shared_memory",
        total,
        len(sizes),
        median,
        spread,
        repeats,
        cpu_label(),
        verified,
    )
