"""The types of :mod:`helpers.hardware`: dtype sizes, units, :class:`Accelerator`, :class:`Link`.

Kept apart so the catalogs (``_accelerators``, ``_links``) import them without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from . import _validate

DTYPE_BYTES: Mapping[str, int] = MappingProxyType(
    {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
)
"""Bytes per element of each dtype the book uses (TF32 is stored as FP32)."""

TERA = 1e12
GIGA = 1e9
GIB = 2**30
"""Bytes in a gibibyte. Memory capacities are what the driver reports (see :class:`Accelerator`)."""


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (one of ``helpers.hardware.DTYPE_BYTES``)."""
    key = _validate.name("dtype", dtype)
    if key not in DTYPE_BYTES:
        raise KeyError(
            f"dtype {dtype!r} is unknown; choose one of {sorted(DTYPE_BYTES)}"
        )
    return DTYPE_BYTES[key]


@dataclass(frozen=True)
class Accelerator:
    """One accelerator's peak throughput, memory and the source of each figure.

    Attributes
    ----------
    name : str
        Display name, e.g. ``"H100 SXM"``.
    peak_flops : Mapping[str, float]
        Dense peak throughput per dtype in FLOP/s (integer ops counted as FLOP).
    memory_bandwidth : float
        Peak memory bandwidth in bytes/s.
    memory_capacity : float
        Memory size in bytes, what the driver reports. For HBM parts that is
        the datasheet's "GB" read as GiB (2**30 bytes), within about 1 % (an
        80 GB H100 shows 81,559 MiB); for GDDR parts with ECC on (T4, L4,
        A10G) it is the driver's smaller figure, with the datasheet's in
        :func:`helpers.hardware.datasheet_memory`. What serving does not give
        the KV cache beyond that is the ``reserve`` of
        :func:`helpers.inference.max_decode_batch`.
    source : str
        URL of the datasheet (or paper) the figures come from.
    notes : str
        What the figures mean: sparsity, accumulate precision, caveats.
    aliases : tuple of str
        Other names accepted by :func:`get_accelerator`.
    torch_names : tuple of str
        Regular expressions matched against the lower-cased name torch gives
        the device (``torch.cuda.get_device_name()``, e.g. ``"tesla t4"``), so
        a lab finds the running GPU's datasheet (:func:`from_device_name`).
    sm_count : int or None
        Streaming multiprocessors: how many thread blocks (GEMM output tiles)
        run at once, one per SM (:func:`helpers.ops.gemm_utilization`).
        ``None`` where the vendor publishes no figure, and for a measured
        CPU (its cores are not SMs, and one thread runs a GEMM's tiles one
        after the other).
    l2_bytes : float or None
        Last-level (L2) cache in bytes (MB read as MiB, as the whitepapers'
        KB tables do); ``None`` where unpublished.
    vector_peak_flops : Mapping[str, float]
        Peak FLOP/s per dtype of the plain (CUDA-core, non-tensor) units, where
        elementwise work runs (``roof="vector"`` in
        :func:`helpers.roofline.breakdown`); empty
        where unpublished.
    whitepaper : str
        URL of the architecture whitepaper (or other source) for
        ``sm_count``, ``l2_bytes`` and ``vector_peak_flops``.
    host_link : str or None
        Name of the catalog :class:`Link` between the GPU and its host's
        memory (``"PCIe 3.0 x16"`` on a T4): the datasheet's "PCIe Gen3/4/5"
        system-interface line (``source``, unless ``notes`` names another);
        what a host-to-device copy crosses. ``None`` where no datasheet says.
    generation : str
        The GPU's architecture generation as its vendor names it (``"Hopper"``,
        ``"Blackwell"``, ``"CDNA 3"``): what per-generation constants such as
        :data:`helpers.dispatch.KERNEL_FLOOR_S` are looked up by. Every catalog
        entry names one; ``""`` (the default) for a device built by hand or
        measured (a CPU), which has none.
    """

    name: str
    peak_flops: Mapping[str, float]
    memory_bandwidth: float
    memory_capacity: float
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = ()
    torch_names: tuple[str, ...] = ()
    sm_count: int | None = None
    l2_bytes: float | None = None
    vector_peak_flops: Mapping[str, float] = field(default_factory=dict)
    whitepaper: str = ""
    host_link: str | None = None
    generation: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.generation, str):
            raise TypeError(f"generation must be a str, got {self.generation!r}")
        _validate.positive("memory_bandwidth", self.memory_bandwidth)
        _validate.positive("memory_capacity", self.memory_capacity)
        if not self.peak_flops:
            raise ValueError("peak_flops must list at least one dtype")
        for dtype, value in self.peak_flops.items():
            dtype_bytes(dtype)
            _validate.positive(f"peak_flops[{dtype!r}]", value)
        object.__setattr__(self, "peak_flops", MappingProxyType(dict(self.peak_flops)))
        if self.sm_count is not None:
            _validate.positive_int("sm_count", self.sm_count)
        if self.l2_bytes is not None:
            _validate.positive("l2_bytes", self.l2_bytes)
        for dtype, value in self.vector_peak_flops.items():
            dtype_bytes(dtype)
            _validate.positive(f"vector_peak_flops[{dtype!r}]", value)
        object.__setattr__(
            self, "vector_peak_flops", MappingProxyType(dict(self.vector_peak_flops))
        )

    @property
    def half_dtype(self) -> str | None:
        """The 16-bit dtype the device computes in: ``"bf16"`` if it has a figure, else ``"fp16"``, else ``None``."""
        for dtype in ("bf16", "fp16"):
            if dtype in self.peak_flops:
                return dtype
        return None

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this accelerator has a peak figure for."""
        return tuple(self.peak_flops)

    def flops(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype``; raises ``KeyError`` if the device lacks it."""
        key = _validate.name("dtype", dtype)
        dtype_bytes(key)
        if key not in self.peak_flops:
            raise KeyError(
                f"dtype {dtype!r} has no peak figure on {self.name}; it supports {list(self.peak_flops)}"
            )
        return self.peak_flops[key]

    def vector_flops(self, dtype: str) -> float:
        """Peak FLOP/s of the plain (non-tensor) units for ``dtype``: the roof of elementwise work.

        Raises ``KeyError`` if the catalog has no such figure for this device.
        """
        key = _validate.name("dtype", dtype)
        dtype_bytes(key)
        if key not in self.vector_peak_flops:
            raise KeyError(
                f"dtype {dtype!r} has no vector (non-tensor) peak on {self.name}; "
                f"it lists {list(self.vector_peak_flops)}"
            )
        return self.vector_peak_flops[key]

    def sms(self) -> int:
        """:attr:`sm_count`, or a ``KeyError`` that says why it is missing."""
        if self.sm_count is None:
            raise KeyError(f"{self.name} has no published SM count ({self.notes})")
        return self.sm_count


@dataclass(frozen=True)
class Link:
    """A data path between devices or hosts.

    Attributes
    ----------
    name : str
        Display name, e.g. ``"ConnectX-7 (400 Gb/s)"``.
    bandwidth : float
        Peak bandwidth per direction in bytes/s.
    latency : float
        Typical one-way latency of a small transfer in seconds (order of magnitude).
    source : str
        URL of the specification the bandwidth comes from.
    notes : str
        Caveats (encoding overhead, where the latency figure comes from).
    aliases : tuple of str
        Other names accepted by :func:`get_link`.
    """

    name: str
    bandwidth: float
    latency: float
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _validate.positive("bandwidth", self.bandwidth)
        _validate.non_negative("latency", self.latency)
