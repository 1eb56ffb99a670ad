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

import atexit
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _validate
from ._measure import (
    byte_pattern,
    cpu_label,
    free_port,
    run_children,
    summarize_samples,
)
from .kvtransfer import TransferResult
from .llm import ModelConfig, get_model

_HOST = "127.0.0.1"
_MIB = 1 << 20


@dataclass(frozen=True)
class PoolAddress:
    """Where a client finds the pool, and how it moves bytes.

    Attributes
    ----------
    master : str
        ``host:port`` of the master's RPC service.
    metadata : str
        URL of the metadata server (``http://host:port/metadata``), or an etcd address.
    protocol : str
        ``"tcp"`` (any machine) or ``"rdma"`` (RDMA NICs, CUDA build).
    devices : str
        RDMA device names, comma-separated (``"mlx5_0,mlx5_1"``); empty for TCP.
    hostname : str
        This client's address as the other clients reach it.
    """

    master: str
    metadata: str
    protocol: str = "tcp"
    devices: str = ""
    hostname: str = _HOST


def _load_cuda_runtime() -> None:
    """Import torch, if present, before ``mooncake.store``.

    The CUDA build's ``store.so`` links against ``libcudart.so.12``, which a
    spawned worker finds on the loader's path only once torch has loaded the
    CUDA runtime of its NVIDIA wheels; without torch, nothing is done.
    """
    try:
        import torch  # noqa: F401
    except ImportError:
        pass


def unavailable_reason() -> str | None:
    """Why a Mooncake pool cannot run here (``None`` if it can): package, binary or libraries missing."""
    if _master_binary() is None:
        return "mooncake_master was not found (pip install mooncake-transfer-engine-non-cuda)"
    try:
        _load_cuda_runtime()
        from mooncake.store import MooncakeDistributedStore  # noqa: F401
    except ImportError as exc:  # a missing libibverbs/librdmacm shows up here
        return f"mooncake.store does not import: {exc}"
    return None


def _master_binary() -> str | None:
    path = os.pathsep.join(
        (os.path.dirname(sys.executable), os.environ.get("PATH", ""))
    )
    return shutil.which("mooncake_master", path=path)


def _die_with_parent() -> None:
    """In the child before exec: Linux sends it SIGTERM if this process dies (even by SIGKILL)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _reachable(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address must be 'host:port', got {address!r}")
    return host, int(port)


def _metadata_host_port(url: str) -> tuple[str, int]:
    return _split(url.removeprefix("http://").split("/", 1)[0])


class LocalPool:
    """A ``mooncake_master`` with its HTTP metadata server on loopback, in its own process group.

    Use :func:`start_local_pool`; :meth:`stop` (called by ``with``, on errors and at exit)
    ends the whole process group: SIGTERM, then SIGKILL after ``grace`` seconds.
    """

    def __init__(self, process: Any, address: PoolAddress, log: Any) -> None:
        self.process = process
        self.address = address
        self._log = log
        atexit.register(self.stop)

    @property
    def pid(self) -> int:
        """Process id of the master (also its process group id)."""
        return self.process.pid

    def running(self) -> bool:
        """Whether the master process is alive."""
        return self.process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines the master wrote (for error messages)."""
        self._log.flush()
        self._log.seek(0)
        return "".join(
            self._log.read().decode(errors="replace").splitlines(True)[-lines:]
        )

    def stop(self, grace: float = 5.0) -> None:
        """Stop the master and everything in its process group; idempotent."""
        if self.process.poll() is None:
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
                try:
                    os.killpg(self.process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if not self._log.closed:
            self._log.close()
        atexit.unregister(self.stop)

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_local_pool(*, timeout: float = 30.0, host: str = _HOST) -> LocalPool:
    """Start ``mooncake_master`` with its HTTP metadata server on free ports of ``host``.

    Returns once both the RPC port and the metadata server accept connections;
    past ``timeout`` seconds, or if the master exits, it is killed and a
    :class:`RuntimeError` (with the master's last log lines) is raised.
    """
    timeout = _validate.positive("timeout", timeout)
    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"cannot start a Mooncake pool: {reason}")
    rpc, http, metrics = (free_port(host=host) for _ in range(3))
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [
            str(_master_binary()),
            f"-rpc_address={host}",
            f"-rpc_port={rpc}",
            "-enable_http_metadata_server=true",
            f"-http_metadata_server_host={host}",
            f"-http_metadata_server_port={http}",
            f"-metrics_port={metrics}",
            "-logtostderr",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: stop() ends everything it starts
        preexec_fn=_die_with_parent,
    )
    address = PoolAddress(f"{host}:{rpc}", f"http://{host}:{http}/metadata")
    pool = LocalPool(process, address, log)
    deadline = time.monotonic() + timeout
    try:
        while not (_reachable(host, rpc, 0.2) and _reachable(host, http, 0.2)):
            if not pool.running():
                raise RuntimeError(
                    f"mooncake_master exited with code {process.returncode}:\n"
                    + pool.log_tail()
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"mooncake_master did not listen within timeout={timeout} s:\n"
                    + pool.log_tail()
                )
            time.sleep(0.05)
    except BaseException:
        pool.stop()
        raise
    return pool


_ZERO_COPY_METHODS = (
    "register_buffer",
    "unregister_buffer",
    "put_from",
    "get_into",
    "batch_put_from",
    "batch_get_into",
)


def _host_tensor(tensor: Any) -> Any:
    """``tensor`` as a contiguous host tensor (a copy only if it is on a GPU or not contiguous)."""
    return tensor.detach().cpu().contiguous()


class PoolClient:
    """One client of the pool: puts and gets bytes, and KV caches layer by layer.

    Made by :func:`connect`; close it (or use ``with``) before the pool stops.

    **Zero copy.** Where the Mooncake build has its registered-buffer API
    (``register_buffer``, ``put_from``/``get_into`` and their ``batch_``
    forms; mooncake-transfer-engine 0.3.13 has them), a KV cache moves
    between the pool and the tensors' own memory: :meth:`put_kv_cache`
    registers each layer's tensors and puts them in one ``batch_put_from``,
    and :meth:`get_kv_cache` with ``out=`` fills preallocated, registered
    tensors with one ``batch_get_into``. Otherwise (or with
    ``zero_copy=False`` in :func:`connect`) every object goes through Python
    ``bytes``, one more host copy each way; ``fallback_reason`` says why.
    Registered memory is host memory: a tensor on a GPU is first copied to
    the host (GPUDirect needs the CUDA build, an RDMA NIC and GPU memory
    registered with the Transfer Engine, which this helper does not do).
    """

    def __init__(
        self, store: Any, address: PoolAddress, *, zero_copy: bool = True
    ) -> None:
        self._store = store
        self.address = address
        self._registered: dict[int, tuple[int, Any]] = {}
        missing = [m for m in _ZERO_COPY_METHODS if not hasattr(store, m)]
        self.fallback_reason: str | None = None
        if not zero_copy:
            self.fallback_reason = "zero copy turned off (zero_copy=False)"
        elif missing:
            self.fallback_reason = f"this Mooncake build lacks {', '.join(missing)}: objects go through bytes"

    @property
    def zero_copy(self) -> bool:
        """Whether KV caches move through registered buffers (else through ``bytes``)."""
        return self.fallback_reason is None

    def put(self, key: str, data: Any) -> None:
        """Store ``data`` (anything with the buffer protocol: bytes, a contiguous numpy array) under ``key``."""
        code = self._store.put(key, memoryview(data).cast("B"))  # bytes, not elements
        if code != 0:
            raise RuntimeError(f"put of {key!r} failed with Mooncake error {code}")

    def size(self, key: str) -> int:
        """Bytes stored under ``key``; :class:`KeyError` if there is no such object."""
        n = self._store.get_size(key)
        if n < 0:
            raise KeyError(f"no object {key!r} in the pool at {self.address.master}")
        return int(n)

    def get(self, key: str) -> bytes:
        """The bytes stored under ``key``; :class:`KeyError` if there is no such object."""
        data = self._store.get(key)
        if not data:
            self.size(key)  # raises KeyError for a missing key
        return data

    # --- registered buffers ---------------------------------------------------

    def register(self, tensors: Sequence[Any]) -> bool:
        """Register host tensors' memory for zero-copy puts and gets; ``False`` (and a fallback) on failure.

        The tensors must be contiguous and on the CPU, and stay alive until
        :meth:`unregister` (or :meth:`close`).
        """
        if not self.zero_copy:
            return False
        for t in tensors:
            if t.device.type != "cpu" or not t.is_contiguous():
                raise ValueError(
                    "tensors must be contiguous host tensors to be registered"
                )
            ptr, size = t.data_ptr(), t.numel() * t.element_size()
            if ptr in self._registered:
                continue
            code = self._store.register_buffer(ptr, size)
            if code != 0:
                self.fallback_reason = f"register_buffer failed with Mooncake error {code}: objects go through bytes"
                return False
            self._registered[ptr] = (size, t)
        return True

    def unregister(self, tensors: Sequence[Any]) -> None:
        """Unregister the buffers of ``tensors`` (those not registered are skipped)."""
        self._unregister(
            [t.data_ptr() for t in tensors if t.data_ptr() in self._registered]
        )

    def unregister_all(self) -> None:
        """Unregister every buffer this client registered."""
        self._unregister(list(self._registered))

    def _unregister(self, ptrs: Sequence[int]) -> None:
        for ptr in ptrs:
            self._store.unregister_buffer(ptr)
            del self._registered[ptr]

    def _check_codes(
        self, what: str, keys: Sequence[str], codes: Sequence[int]
    ) -> None:
        for key, code in zip(keys, codes):
            if code < 0:
                if what == "get":
                    self.size(key)  # a missing key is a KeyError
                raise RuntimeError(
                    f"{what} of {key!r} failed with Mooncake error {code}"
                )

    def _put_tensors(self, keys: Sequence[str], tensors: Sequence[Any]) -> None:
        host = [_host_tensor(t) for t in tensors]
        if self.zero_copy and self.register(host):
            try:
                codes = self._store.batch_put_from(
                    list(keys),
                    [t.data_ptr() for t in host],
                    [t.numel() * t.element_size() for t in host],
                )
                self._check_codes("put", keys, codes)
                return
            finally:
                self.unregister(host)
        for key, t in zip(keys, host):
            self.put(key, t.numpy())

    # --- KV caches --------------------------------------------------------------

    def put_layer(self, prefix: str, layer: int, keys: Any, values: Any) -> None:
        """Store one layer's keys and values (torch tensors) as two objects: ``prefix/layer/k`` and ``/v``."""
        self._put_tensors(
            [f"{prefix}/{layer}/k", f"{prefix}/{layer}/v"], [keys, values]
        )

    def put_kv_cache(self, prefix: str, cache: Sequence[Any]) -> list[float]:
        """Store a KV cache (per layer ``(keys, values)``) layer by layer; returns seconds per layer."""
        seconds = []
        for layer, (k, v) in enumerate(cache):
            start = time.perf_counter()
            self.put_layer(prefix, layer, k, v)
            seconds.append(time.perf_counter() - start)
        return seconds

    def empty_kv_cache(
        self,
        model: str | ModelConfig,
        tokens: int,
        *,
        batch: int = 1,
        dtype: str = "fp32",
    ) -> list[tuple[Any, Any]]:
        """Host tensors for one cache, registered when zero copy is on: the ``out`` of :meth:`get_kv_cache`."""
        import torch

        from .bench import torch_dtype

        m = get_model(model)
        shape = (
            _validate.positive_int("batch", batch),
            m.n_kv_heads,
            _validate.positive_int("tokens", tokens),
            m.head_dim,
        )
        tdtype = torch_dtype(dtype)
        cache = [
            (torch.empty(shape, dtype=tdtype), torch.empty(shape, dtype=tdtype))
            for _ in range(m.n_layers)
        ]
        self.register([t for pair in cache for t in pair])
        return cache

    def get_kv_cache(
        self,
        prefix: str,
        model: str | ModelConfig,
        tokens: int,
        *,
        batch: int = 1,
        dtype: str = "fp32",
        out: Sequence[tuple[Any, Any]] | None = None,
    ) -> list[tuple[Any, Any]]:
        """Fetch a KV cache stored by :meth:`put_kv_cache`: per layer ``(keys, values)`` torch tensors.

        Each of shape ``(batch, n_kv_heads, tokens, head_dim)`` in ``dtype``; an object of
        the wrong size is a :class:`ValueError`, a missing one a :class:`KeyError`. With
        ``out`` (from :meth:`empty_kv_cache`) and zero copy on, the objects land in
        those tensors through one ``batch_get_into``; else each is copied out of ``bytes``.
        """
        import torch

        from .bench import torch_dtype

        m = get_model(model)
        shape = (
            _validate.positive_int("batch", batch),
            m.n_kv_heads,
            _validate.positive_int("tokens", tokens),
            m.head_dim,
        )
        tdtype = torch_dtype(dtype)
        expected = int(np.prod(shape)) * torch.empty((), dtype=tdtype).element_size()
        keys = [
            f"{prefix}/{layer}/{kind}" for layer in range(m.n_layers) for kind in "kv"
        ]
        if out is not None and self.zero_copy:
            tensors = [t for pair in out for t in pair]
            if len(tensors) != len(keys) or any(
                tuple(t.shape) != shape or t.dtype != tdtype for t in tensors
            ):
                raise ValueError(
                    f"out must hold {m.n_layers} (keys, values) pairs of shape {shape}"
                )
            if all(t.data_ptr() in self._registered for t in tensors):
                codes = self._store.batch_get_into(
                    keys, [t.data_ptr() for t in tensors], [expected] * len(keys)
                )
                self._check_codes("get", keys, codes)
                for key, code in zip(keys, codes):
                    if code != expected:
                        raise ValueError(
                            f"object {key!r} holds {code} bytes, a layer of {tokens} tokens needs {expected}"
                        )
                return [tuple(pair) for pair in out]  # type: ignore[misc]
        cache = []
        for layer in range(m.n_layers):
            pair = []
            for kind in ("k", "v"):
                key = f"{prefix}/{layer}/{kind}"
                data = self.get(key)
                if len(data) != expected:
                    raise ValueError(
                        f"object {key!r} holds {len(data)} bytes, a layer of {tokens} tokens needs {expected}"
                    )
                pair.append(torch.frombuffer(bytearray(data), dtype=tdtype).view(shape))
            cache.append((pair[0], pair[1]))
        return cache

    def close(self) -> None:
        """Leave the pool (the objects in this client's segment go with it)."""
        if self._store is not None:
            self.unregister_all()
            self._store.close()
            self._store = None

    def __enter__(self) -> PoolClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(
    address: PoolAddress,
    *,
    segment_bytes: int = 256 * _MIB,
    buffer_bytes: int = 64 * _MIB,
    timeout: float = 5.0,
    zero_copy: bool = True,
) -> PoolClient:
    """Join the pool at ``address``, contributing ``segment_bytes`` of this process's memory (0: none).

    ``zero_copy`` uses the registered-buffer API where the build has it (:class:`PoolClient`).

    Raises :class:`ConnectionError` within ``timeout`` seconds if the master or the
    metadata server does not accept connections, :class:`RuntimeError` if set-up fails.
    """
    if not isinstance(address, PoolAddress):
        raise TypeError(f"address must be a PoolAddress, got {type(address).__name__}")
    segment_bytes = _validate.non_negative_int("segment_bytes", segment_bytes)
    buffer_bytes = _validate.positive_int("buffer_bytes", buffer_bytes)
    timeout = _validate.positive("timeout", timeout)
    for what, (host, port) in (
        ("master", _split(address.master)),
        ("metadata server", _metadata_host_port(address.metadata)),
    ):
        if not _reachable(host, port, timeout):
            raise ConnectionError(
                f"the Mooncake {what} at {host}:{port} does not accept connections "
                f"(is mooncake_master running?)"
            )
    _load_cuda_runtime()
    from mooncake.store import MooncakeDistributedStore

    store = MooncakeDistributedStore()
    code = store.setup(
        address.hostname,
        address.metadata,
        segment_bytes,
        buffer_bytes,
        address.protocol,
        address.devices,
        address.master,
    )
    if code != 0:
        raise RuntimeError(f"Mooncake client set-up failed with error {code}")
    return PoolClient(store, address, zero_copy=bool(zero_copy))


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
    sizes = tuple(_validate.positive_int("sizes", s) for s in sizes)
    if not sizes:
        raise ValueError("sizes must list at least one object size")
    spec: dict[str, Any] = {
        "sizes": sizes,
        "repeats": _validate.positive_int("repeats", repeats),
        "get_repeats": _validate.positive_int(
            "get_repeats", repeats if get_repeats is None else get_repeats
        ),
        "warmup": _validate.non_negative_int("warmup", warmup),
        "timeout": _validate.positive("timeout", timeout),
        "seed": _validate.non_negative_int("seed", seed),
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
        "tokens": tuple(_validate.positive_int("tokens", t) for t in sizes),
        "dtype": dtype,
        "new_tokens": _validate.positive_int("new_tokens", new_tokens),
        "repeats": _validate.positive_int("repeats", repeats),
        "get_repeats": _validate.positive_int(
            "get_repeats", repeats if get_repeats is None else get_repeats
        ),
        "warmup": _validate.non_negative_int("warmup", warmup),
        "timeout": _validate.positive("timeout", timeout),
        "seed": _validate.non_negative_int("seed", seed),
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
    net = TinyGPT(config, dtype=dtype, seed=_validate.non_negative_int("seed", seed))
    logits, cache = net.prefill(
        _prompt(config, _validate.positive_int("tokens", tokens), seed)
    )
    generated = [int(logits.argmax(-1)[0])]
    for _ in range(_validate.positive_int("new_tokens", new_tokens) - 1):
        logits, cache = net.decode_step(torch.tensor([generated[-1]]), cache)
        generated.append(int(logits.argmax(-1)[0]))
    return tuple(generated)
