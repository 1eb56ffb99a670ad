"""Published GPU measurements: the evidence the book checks its model against.

No GPU has run the book's labs in its committed outputs, so the GPU side of
every claim is checked against numbers others measured and printed: GEMM
throughput by shape, achievable peaks, ResNet-50 images/s by batch, LLM
decode throughput by batch, KV-cache transfer bandwidth, a serving engine's
throughput at full load and its time to first token, and attention-kernel
throughput. Each point
records what was measured, on what hardware and software, in which
precision, and where it was printed (a URL pinned to a commit or a paper,
and the table or figure). The data live in ``helpers/data/published/``, one
CSV per kind, copied from the sources as printed (never rounded or read off
a plot); :func:`load` returns them in SI units.

Units of :attr:`PublishedPoint.value`: FLOP/s, bytes/s, images/s, tokens/s or
seconds, as :attr:`PublishedPoint.unit` says.

Examples
--------
>>> from helpers import published
>>> points = published.load("gemm")
>>> all(p.source.startswith("https://") for p in points)
True
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from . import _validate
from .hardware import get_accelerator

Kind = Literal[
    "gemm",
    "peak",
    "resnet50",
    "decode",
    "kv_transfer",
    "serving",
    "ttft",
    "attention",
]
KINDS: tuple[Kind, ...] = (
    "gemm",
    "peak",
    "resnet50",
    "decode",
    "kv_transfer",
    "serving",
    "ttft",
    "attention",
)
"""The kinds of measurement, one CSV file each."""

DATA_DIR = Path(__file__).parent / "data" / "published"

_SCALE = MappingProxyType(
    {
        "TFLOP/s": (1e12, "FLOP/s"),
        "TFLOPS": (1e12, "FLOP/s"),
        "GB/s": (1e9, "B/s"),
        "GiB/s": (2.0**30, "B/s"),
        "TB/s": (1e12, "B/s"),
        "Gb/s": (1e9 / 8, "B/s"),
        "images/s": (1.0, "images/s"),
        "tokens/s": (1.0, "tokens/s"),
        "ms": (1e-3, "s"),
        "us": (1e-6, "s"),
        "s": (1.0, "s"),
    }
)
"""Printed unit -> (factor to SI, SI unit)."""

_COMMON = ("gpu", "software", "source_url", "source_locator", "notes")
_COLUMNS: Mapping[Kind, tuple[str, ...]] = MappingProxyType(
    {
        "gemm": ("precision", "m", "n", "k", "batch", "quantity", "value", "unit"),
        "peak": ("quantity", "precision", "value", "unit", "benchmark", "size"),
        "resnet50": (
            "precision",
            "batch",
            "quantity",
            "value",
            "unit",
            "framework",
            "image_size",
            "latency_ms",
        ),
        "decode": (
            "num_gpus",
            "model",
            "precision",
            "kv_precision",
            "batch",
            "input_len",
            "output_len",
            "quantity",
            "value",
            "unit",
            "framework",
        ),
        "kv_transfer": (
            "link",
            "protocol",
            "nominal_gbps",
            "num_links",
            "message_bytes",
            "quantity",
            "value",
            "unit",
            "what_moves",
        ),
        "serving": (
            "engine",
            "model",
            "precision",
            "kv_precision",
            "tp",
            "replicas",
            "ep",
            "dp_attention",
            "input_len",
            "output_len",
            "concurrency",
            "requests",
            "quantity",
            "value",
            "unit",
        ),
        "ttft": (
            "engine",
            "model",
            "precision",
            "kv_precision",
            "tp",
            "input_len",
            "output_len",
            "concurrency",
            "quantity",
            "value",
            "unit",
        ),
        "attention": (
            "kernel",
            "phase",
            "causal",
            "batch",
            "n_heads",
            "seq_q",
            "seq_k",
            "head_dim",
            "precision",
            "quantity",
            "value",
            "unit",
        ),
    }
)
"""The columns of each kind's CSV besides the common ones."""


@dataclass(frozen=True)
class PublishedPoint:
    """One published measurement.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    gpu : str or None
        Catalogue name of the GPU (:func:`helpers.hardware.get_accelerator`);
        ``None`` for a host-to-host transfer.
    precision : str or None
        Storage dtype of the operands (``"fp16"`` for automatic mixed
        precision); ``None`` for a bandwidth.
    quantity : str
        What the number is, e.g. ``"throughput"``, ``"memory_bandwidth"``.
    value : float
        The number in :attr:`unit` (SI: FLOP/s, B/s, images/s, tokens/s, s).
    unit : str
        SI unit of :attr:`value`.
    setting : Mapping
        The kind's own columns (shape, batch, model, link ...), as printed.
    software : str
        Library, framework and versions the source names.
    source : str
        URL (pinned to a commit for repositories).
    locator : str
        Table, figure or section in the source, and the row.
    notes : str
        How it was measured, the GPU-name mapping, caveats.
    """

    kind: Kind
    gpu: str | None
    precision: str | None
    quantity: str
    value: float
    unit: str
    setting: Mapping[str, str] = field(default_factory=dict)
    software: str = ""
    source: str = ""
    locator: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        _validate.positive("value", self.value)
        if not self.source.startswith("https://"):
            raise ValueError(f"source must be an https URL, got {self.source!r}")
        if not self.locator:
            raise ValueError("locator must say where in the source the number is")
        object.__setattr__(self, "setting", MappingProxyType(dict(self.setting)))

    @property
    def label(self) -> str:
        """A short description of the setting, e.g. ``"4096 x 7168 x 2048, bf16"``."""
        s = self.setting
        if self.kind == "gemm":
            groups = "" if s["batch"] == "1" else f" x {s['batch']} groups"
            return f"{s['m']} x {s['n']} x {s['k']}{groups}, {self.precision}"
        if self.kind == "peak":
            what = self.quantity.replace("_", " ")
            return f"{what}{', ' + self.precision if self.precision else ''}"
        if self.kind == "resnet50":
            return f"batch {s['batch']}, {self.precision}"
        if self.kind == "decode":
            gpus = "" if s["num_gpus"] == "1" else f", {s['num_gpus']} GPUs"
            out = f"->{s['output_len']}" if s["output_len"] else ""
            return (
                f"{s['model']}, batch {s['batch']}, {s['input_len']}{out} tokens"
                f"{gpus}, {self.quantity.replace('_', ' ')}"
            )
        if self.kind in ("serving", "ttft"):
            gpus = "" if s["tp"] == "1" else f", TP{s['tp']}"
            load = ""
            if s.get("concurrency"):
                load = f", {s['concurrency']} client{'s' if s['concurrency'] != '1' else ''}"
            elif s.get("requests"):
                load = f", batch {s['requests']}"
            return (
                f"{_display(s['model'])}, {s['input_len']}/{s['output_len']}, "
                f"{self.precision}{gpus}{load}"
            )
        if self.kind == "attention":
            mask = "causal" if s["causal"] == "true" else "full"
            return f"{s['phase']} {s['seq_q']}x{s['seq_k']}, d {s['head_dim']}, {mask}, {self.precision}"
        size = s["message_bytes"]
        if "(" in size and size.split("(")[0].strip().isdigit():  # "1048576 (1 MB)"
            size = size.split("(")[1].split(")")[0]
        return f"{size.split(' (')[0]} messages"

    def integer(self, column: str) -> int:
        """:attr:`setting` ``column`` as an int (``KeyError`` if absent or blank)."""
        text = self.setting.get(column, "")
        if not text:
            raise KeyError(f"{self.kind} point has no {column!r}")
        return int(text)


def _display(model: str) -> str:
    """The catalog's display name of ``model`` ("Llama-3-8B"), or the name as written if the catalog lacks it."""
    from .llm import (
        get_model,
    )  # the model catalog imports hardware, as this module does

    try:
        return get_model(model).display_name
    except KeyError:
        return model


def _row(kind: Kind, row: Mapping[str, str], where: str) -> PublishedPoint:
    missing = [c for c in (*_COMMON, *_COLUMNS[kind]) if c not in row]
    if missing:
        raise KeyError(f"{where}: missing columns {missing}")
    unit = row["unit"]
    if unit not in _SCALE:
        raise ValueError(f"{where}: unit must be one of {list(_SCALE)}, got {unit!r}")
    factor, si = _SCALE[unit]
    gpu = row["gpu"] or None
    if gpu is not None:
        gpu = get_accelerator(gpu).name
    setting = {
        c: row[c]
        for c in _COLUMNS[kind]
        if c not in ("value", "unit", "quantity", "precision")
    }
    return PublishedPoint(
        kind=kind,
        gpu=gpu,
        precision=row.get("precision") or None,
        quantity=row["quantity"],
        value=float(row["value"]) * factor,
        unit=si,
        setting=setting,
        software=row["software"],
        source=row["source_url"],
        locator=row["source_locator"],
        notes=row["notes"],
    )


def load(
    kind: Kind | None = None, *, gpu: str | None = None
) -> tuple[PublishedPoint, ...]:
    """The published measurements of ``kind`` (all kinds if ``None``), optionally on one ``gpu``.

    Raises ``ValueError`` for an unknown kind and ``KeyError`` for an unknown GPU.
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} or None, got {kind!r}")
    name = None if gpu is None else get_accelerator(gpu).name
    out = []
    for k in KINDS if kind is None else (kind,):
        path = DATA_DIR / f"{k}.csv"
        with path.open(newline="", encoding="utf-8") as f:
            for i, row in enumerate(csv.DictReader(f), start=2):
                point = _row(k, row, f"{path.name} line {i}")
                if name is None or point.gpu == name:
                    out.append(point)
    return tuple(out)


def __getattr__(name: str) -> object:
    """Deprecation shim: ``Measurement`` is now :class:`PublishedPoint` (``bench.Measurement`` keeps the name)."""
    if name == "Measurement":
        warnings.warn(
            "helpers.published.Measurement is now helpers.published.PublishedPoint",
            DeprecationWarning,
            stacklevel=2,
        )
        return PublishedPoint
    if name in ("counts_markdown", "sources_markdown"):
        warnings.warn(
            f"helpers.published.{name} is now helpers.reports.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        from . import reports

        return getattr(reports, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
