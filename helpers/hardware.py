"""Accelerator and link specifications, each with its published source.

Every figure is in SI units: FLOP/s, bytes/s, bytes, seconds. Peak FLOP/s are
the **dense** tensor-core figures (where a datasheet quotes "with sparsity",
the 2:4 structured-sparsity number is twice the dense one; we store the dense
half and say so in ``notes``). ``fp32`` means plain (non-tensor-core) FP32;
``tf32`` is the tensor-core TF32 mode.

Look-ups are case-insensitive and accept aliases: ``get_accelerator("a100")``
returns the A100 SXM4 80GB, ``get_accelerator("H100")`` the H100 SXM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import _validate
from ._accelerators import _ACCELERATORS as _ACCELERATORS
from ._accelerators import _GB200_NVL72_PAGE
from ._accelerators import DATASHEET_MEMORY as DATASHEET_MEMORY
from ._accelerators import FP4_DENSE_FLOPS as FP4_DENSE_FLOPS
from ._accelerators import MIB as MIB
from ._devices import DTYPE_BYTES as DTYPE_BYTES
from ._devices import GIB as GIB
from ._devices import GIGA as GIGA
from ._devices import TERA as TERA
from ._devices import Accelerator as Accelerator
from ._devices import Link as Link
from ._devices import dtype_bytes as dtype_bytes
from ._links import _LINKS as _LINKS

for _obj in (Accelerator, Link, dtype_bytes):
    _obj.__module__ = __name__  # documented (and pickled) as helpers.hardware's


@dataclass(frozen=True)
class NVLinkDomain:
    """A rack whose GPUs share one NVLink Switch domain, and the CPU memory beside them.

    Attributes
    ----------
    name : str
        Display name, e.g. ``"GB200 NVL72"``.
    accelerator : str
        Catalog name of one GPU (:func:`get_accelerator`).
    gpus, cpus : int
        GPUs and CPUs in the domain.
    cpu_memory_bytes : float
        Memory of one CPU in bytes (the datasheet's "GB" read as GiB, as for HBM).
    cpu_memory_bandwidth : float
        Peak bandwidth of one CPU's memory in bytes/s.
    gpu_link, cpu_link : str
        Catalog names of the GPU-to-GPU link and the CPU-to-GPU link (:func:`get_link`).
    source : str
        URL of the specification.
    notes : str
        Caveats.
    """

    name: str
    accelerator: str
    gpus: int
    cpus: int
    cpu_memory_bytes: float
    cpu_memory_bandwidth: float
    gpu_link: str
    cpu_link: str
    source: str
    notes: str = ""

    def __post_init__(self) -> None:
        _validate.positive_int("gpus", self.gpus)
        _validate.positive_int("cpus", self.cpus)
        _validate.positive("cpu_memory_bytes", self.cpu_memory_bytes)
        _validate.positive("cpu_memory_bandwidth", self.cpu_memory_bandwidth)

    @property
    def hbm_bytes(self) -> float:
        """HBM of all the domain's GPUs: ``gpus * memory_capacity``."""
        return self.gpus * get_accelerator(self.accelerator).memory_capacity

    @property
    def cpu_memory_total(self) -> float:
        """CPU memory of the whole domain: ``cpus * cpu_memory_bytes``."""
        return self.cpus * self.cpu_memory_bytes

    def cpu_memory_bandwidth_per_gpu(self) -> float:
        """Bytes/s one GPU gets from CPU memory when every GPU fetches at once.

        ``min(cpu_link.bandwidth, cpu_memory_bandwidth) * cpus / gpus``: each CPU's
        link (per direction) and its memory are shared by its ``gpus / cpus``
        GPUs, and the slower of the two limits. GB200 NVL72:
        ``min(450, 512) GB/s * 36 / 72 = 225 GB/s``.
        """
        link = get_link(self.cpu_link)
        return min(link.bandwidth, self.cpu_memory_bandwidth) * self.cpus / self.gpus


GB200_NVL72 = NVLinkDomain(
    name="GB200 NVL72",
    accelerator="GB200 (per GPU)",
    gpus=72,
    cpus=36,
    cpu_memory_bytes=480 * GIB,
    cpu_memory_bandwidth=512e9,
    gpu_link="NVLink 5 (B200, GB200 NVL72)",
    cpu_link="NVLink-C2C (Grace-Blackwell)",
    source=_GB200_NVL72_PAGE,
    notes=(
        "36 GB200 superchips (1 Grace + 2 Blackwell each) in one NVLink Switch domain. The page "
        "gives up to 13.4 TB of HBM3e at 576 TB/s and up to 17 TB of LPDDR5X at up to 18.4 TB/s "
        "per rack, and per superchip up to 480 GB of LPDDR5X at up to 512 GB/s: 36 x 480 GB = "
        "17.3 TB, the rack's 'up to 17 TB'. Chapter 11's tiers: the GPU's own HBM; the other GPUs' "
        "HBM over NVLink 5; Grace LPDDR5X over NVLink-C2C."
    ),
)
"""The GB200 NVL72 rack: 72 GPUs in one NVLink domain, with 36 Grace CPUs' LPDDR5X as a memory tier."""


def _index(items: tuple, kind: str) -> dict[str, object]:
    table: dict[str, object] = {}
    for item in items:
        for key in (item.name, *item.aliases):
            key = key.lower()
            if key in table:
                raise RuntimeError(f"duplicate {kind} name {key!r}")
            table[key] = item
    return table


_ACC_INDEX = _index(_ACCELERATORS, "accelerator")
_LINK_INDEX = _index(_LINKS, "link")


def accelerators() -> tuple[Accelerator, ...]:
    """All accelerators in the catalog, in catalog order."""
    return _ACCELERATORS


def links() -> tuple[Link, ...]:
    """All links in the catalog, in catalog order."""
    return _LINKS


def get_accelerator(name: str | Accelerator) -> Accelerator:
    """Look up an accelerator by name or alias (case-insensitive).

    An :class:`Accelerator` passes through unchanged, so every function that
    takes ``acc`` accepts either a name or an object (e.g. a measured one).
    """
    if isinstance(name, Accelerator):
        return name
    key = _validate.name("accelerator", name)
    if key not in _ACC_INDEX:
        raise KeyError(
            f"accelerator {name!r} is unknown; choose one of {[a.name for a in _ACCELERATORS]}"
        )
    return _ACC_INDEX[key]  # type: ignore[return-value]


def from_device_name(device_name: str) -> Accelerator | None:
    """The catalog entry for a device name as torch reports it, or ``None``.

    ``torch.cuda.get_device_name()`` spells names its own way (``"Tesla T4"``,
    ``"NVIDIA A100-SXM4-80GB"``, ``"NVIDIA H100 80GB HBM3"``); each catalog
    entry's :attr:`Accelerator.torch_names` patterns map them onto it. A CPU
    (a name starting with ``"cpu"``), an unknown GPU, or another part of
    the same family (a PCIe or NVL board, a GH200's GPU, a V100 with 16 GB,
    an RTX 4090 D) gives ``None``: a device is never mapped onto a
    different part's datasheet.

    Raises
    ------
    RuntimeError
        If two catalog entries claim the name (their patterns overlap).
    """
    key = _validate.name("device_name", device_name)
    if key.startswith("cpu"):
        return None
    found = [a for a in _ACCELERATORS if any(re.search(p, key) for p in a.torch_names)]
    if len(found) > 1:
        raise RuntimeError(
            f"device {device_name!r} matches several catalog entries: {[a.name for a in found]}"
        )
    return found[0] if found else None


def host_link(acc: str | Accelerator) -> Link:
    """The :class:`Link` between ``acc`` and its host's memory (:attr:`Accelerator.host_link`).

    Raises ``KeyError`` naming the accelerator if the catalog has none for it.

    >>> host_link("T4").name, host_link("H200").name
    ('PCIe 3.0 x16', 'PCIe 5.0 x16')
    """
    a = get_accelerator(acc)
    if a.host_link is None:
        raise KeyError(f"{a.name} has no host link in the catalog ({a.notes})")
    return get_link(a.host_link)


def datasheet_memory(acc: str | Accelerator) -> float:
    """The memory the datasheet quotes for ``acc``, in bytes ("GB" read as GiB).

    For the GDDR parts with ECC on by default (T4, L4, A10G) this is more than
    :attr:`Accelerator.memory_capacity`, which stores what the driver reports
    (``DATASHEET_MEMORY``); for every other entry the two are the same.
    Raises ``KeyError`` for a name the catalog does not know.

    >>> datasheet_memory("T4") / GIB, get_accelerator("T4").memory_capacity / GIB
    (16.0, 15.0)
    >>> datasheet_memory("H100") == get_accelerator("H100").memory_capacity
    True
    """
    a = get_accelerator(acc)
    return DATASHEET_MEMORY.get(a.name, a.memory_capacity)


def get_link(name: str | Link) -> Link:
    """Look up a link by name or alias (case-insensitive); a :class:`Link` passes through."""
    if isinstance(name, Link):
        return name
    key = _validate.name("link", name)
    if key not in _LINK_INDEX:
        raise KeyError(
            f"link {name!r} is unknown; choose one of {[l.name for l in _LINKS]}"
        )
    return _LINK_INDEX[key]  # type: ignore[return-value]


def _tera(value: float | None) -> str:
    return "—" if value is None else f"{value / TERA:,.1f}"


def catalog_markdown() -> str:
    """The accelerator and link catalog as Markdown tables, with sources (the book's appendix).

    Four tables narrow enough for a book page: dense peak throughput per
    dtype; memory, 16-bit ridge point and source; generation, SM count and
    L2 size ("not published" where the vendor gives none); links.
    """
    dtypes = list(DTYPE_BYTES)
    compute = [
        "| accelerator | " + " | ".join(dtypes) + " |",
        "|---" + "|---:" * len(dtypes) + "|",
    ]
    memory = [
        "| accelerator | memory GB/s | memory GiB | 16-bit ridge (FLOP/byte) | source |",
        "|---|---:|---:|---:|---|",
    ]
    for acc in _ACCELERATORS:
        compute.append(
            f"| {acc.name} | "
            + " | ".join(_tera(acc.peak_flops.get(d)) for d in dtypes)
            + " |"
        )
        half = acc.half_dtype
        ridge = (
            "—" if half is None else f"{acc.flops(half) / acc.memory_bandwidth:,.0f}"
        )
        memory.append(
            f"| {acc.name} | {acc.memory_bandwidth / GIGA:,.0f} "
            f"| {acc.memory_capacity / GIB:,.3g} | {ridge} | [datasheet]({acc.source}) |"
        )
    architecture = [
        "| accelerator | generation | SMs | L2 MiB |",
        "|---|---|---:|---:|",
    ]
    for acc in _ACCELERATORS:
        sms = "not published" if acc.sm_count is None else f"{acc.sm_count:,}"
        l2 = "not published" if acc.l2_bytes is None else f"{acc.l2_bytes / MIB:,.0f}"
        architecture.append(f"| {acc.name} | {acc.generation} | {sms} | {l2} |")
    links = [
        "| link | GB/s per direction | latency µs | source |",
        "|---|---:|---:|---|",
    ]
    links += [
        f"| {l.name} | {l.bandwidth / GIGA:,.1f} | {l.latency * 1e6:,.0f} | [spec]({l.source}) |"
        for l in _LINKS
    ]
    return (
        "**Dense peak throughput, TFLOP/s** (integer rows: TOPS)\n\n"
        + "\n".join(compute)
        + "\n\n**Memory and ridge point**\n\n"
        + "\n".join(memory)
        + "\n\n**Architecture** (what the tiling and per-generation constants read)\n\n"
        + "\n".join(architecture)
        + "\n\n**Links**\n\n"
        + "\n".join(links)
        + "\n"
    )


def catalog_notes_markdown() -> str:
    """What each catalog figure means (sparsity, accumulate precision, caveats), one bullet per entry."""
    items: tuple[Accelerator | Link, ...] = (*_ACCELERATORS, *_LINKS)
    return "\n".join(f"- **{item.name}:** {item.notes}" for item in items) + "\n"
