"""A client of a Mooncake pool: bytes and KV caches, through registered buffers where it can.

Part of :mod:`helpers.kvpool` (which re-exports :class:`PoolClient` and
:func:`connect`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _args
from ._mooncake_master import (
    PoolAddress,
    load_cuda_runtime,
    metadata_host_port,
    reachable,
    split_address,
)
from .llm import ModelConfig, get_model

_MIB = 1 << 20


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
            _args.positive_int("batch", batch),
            m.n_kv_heads,
            _args.positive_int("tokens", tokens),
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
            _args.positive_int("batch", batch),
            m.n_kv_heads,
            _args.positive_int("tokens", tokens),
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
    segment_bytes = _args.non_negative_int("segment_bytes", segment_bytes)
    buffer_bytes = _args.positive_int("buffer_bytes", buffer_bytes)
    timeout = _args.positive("timeout", timeout)
    for what, (host, port) in (
        ("master", split_address(address.master)),
        ("metadata server", metadata_host_port(address.metadata)),
    ):
        if not reachable(host, port, timeout):
            raise ConnectionError(
                f"the Mooncake {what} at {host}:{port} does not accept connections "
                f"(is mooncake_master running?)"
            )
    load_cuda_runtime()
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
