"""How a KV cache stores each element: fp16/bf16, fp8, int8, NVFP4 and KIVI-style int4/int2.

A quantized cache keeps a few bits per element plus, per group of elements,
the scales (and zero points) that restore them. :class:`KVFormat` holds one
layout and its average bytes per element; :data:`KV_FORMATS` the catalogued
ones, each with its source and accuracy caveat. The KV-size functions of
:mod:`helpers.llm` take them as ``kv_dtype=``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from . import _args


@dataclass(frozen=True)
class KVFormat:
    """How a KV cache stores each element: payload bits plus per-group scale metadata.

    A quantized cache keeps ``bits`` per element and, for every ``group_size``
    consecutive elements, ``scale_bits`` of metadata (a scale, and a zero
    point for asymmetric integer formats), so an element costs
    ``(bits + scale_bits / group_size) / 8`` bytes on average
    (:attr:`bytes_per_element`). ``group_size = None`` means one scale per
    tensor (or per layer), whose cost per element is negligible.

    Attributes
    ----------
    name : str
        The format's name as a ``kv_dtype`` option, e.g. ``"int4"``.
    bits : int
        Payload bits per element.
    group_size : int or None
        Elements that share one set of scales; ``None``: per-tensor scales.
    scale_bits : int
        Bits of metadata per group (0 with per-tensor scales).
    source : str
        Where the layout comes from (a paper or a format specification).
    notes : str
        What the layout means and its accuracy caveat.
    """

    name: str
    bits: int
    group_size: int | None
    scale_bits: int
    source: str
    notes: str = ""

    def __post_init__(self) -> None:
        _args.positive_int("bits", self.bits)
        if self.group_size is not None:
            _args.positive_int("group_size", self.group_size)
        _args.non_negative_int("scale_bits", self.scale_bits)
        if self.group_size is None and self.scale_bits:
            raise ValueError(
                "scale_bits must be 0 when group_size is None (per-tensor scales)"
            )

    @property
    def bytes_per_element(self) -> float:
        """Average bytes per cached element: ``(bits + scale_bits / group_size) / 8``."""
        overhead = 0.0 if self.group_size is None else self.scale_bits / self.group_size
        return (self.bits + overhead) / 8


_KIVI = "https://arxiv.org/abs/2402.02750"
_KVQUANT = "https://arxiv.org/abs/2401.18079"
_NVFP4 = "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/"
_FP8_KV = "https://docs.vllm.ai/en/latest/features/quantization/quantized_kvcache.html"

KV_FORMATS: Mapping[str, KVFormat] = MappingProxyType(
    {
        f.name: f
        for f in (
            KVFormat(
                "fp32",
                32,
                None,
                0,
                "https://en.wikipedia.org/wiki/IEEE_754",
                "Unquantized single precision.",
            ),
            KVFormat(
                "fp16",
                16,
                None,
                0,
                "https://en.wikipedia.org/wiki/IEEE_754",
                "Unquantized half precision.",
            ),
            KVFormat(
                "bf16",
                16,
                None,
                0,
                "https://en.wikipedia.org/wiki/Bfloat16_floating-point_format",
                "Unquantized: the book's default KV dtype.",
            ),
            KVFormat(
                "fp8",
                8,
                None,
                0,
                _FP8_KV,
                "FP8 (E4M3 or E5M2) with one scale per tensor or layer, as vLLM's and SGLang's "
                "fp8 KV caches store it: 1 byte per element.",
            ),
            KVFormat(
                "int8",
                8,
                128,
                32,
                _KVQUANT,
                "8-bit integers, asymmetric, with an fp16 scale and an fp16 zero point per group of "
                "128 elements (one head's row): 8 + 32/128 = 8.25 bits.",
            ),
            KVFormat(
                "fp4",
                4,
                16,
                8,
                _NVFP4,
                "NVFP4 (Blackwell): 4-bit E2M1 values with one FP8 (E4M3) scale per block of 16 and a "
                "per-tensor FP32 scale (negligible): 4 + 8/16 = 4.5 bits.",
            ),
            KVFormat(
                "int4",
                4,
                32,
                32,
                _KIVI,
                "KIVI-style 4-bit: asymmetric groups of 32 elements with an fp16 scale and an fp16 "
                "zero point (keys grouped per channel, values per token): 4 + 32/32 = 5 bits. KIVI "
                "also keeps the most recent 128 tokens in full precision, a fixed cost per sequence "
                "left out here.",
            ),
            KVFormat(
                "int2",
                2,
                32,
                32,
                _KIVI,
                "KIVI-style 2-bit, laid out as int4: 2 + 32/32 = 3 bits.",
            ),
        )
    }
)
"""KV-cache storage formats by ``kv_dtype`` name, with their scale overhead (:class:`KVFormat`).

Accuracy is not free: fp8 KV is near-lossless in published evaluations; KIVI
(Liu et al., ICML'24) reports 2-bit keys (per channel) and values (per token) keeping
almost the quality of fp16 on its Llama, Falcon and Mistral benchmarks; KVQuant (Hooper et al.,
NeurIPS'24) needs per-channel pre-RoPE keys, non-uniform levels and
dense-and-sparse outliers to keep 3-bit perplexity within 0.1 of fp16. Naive
per-token int4 or int2 without these measures degrades far more.
"""


def kv_format(kv_dtype: str | KVFormat) -> KVFormat:
    """The :class:`KVFormat` named ``kv_dtype`` (one of :data:`KV_FORMATS`); a :class:`KVFormat` passes through."""
    if isinstance(kv_dtype, KVFormat):
        return kv_dtype
    key = _args.name("kv_dtype", kv_dtype)
    if key not in KV_FORMATS:
        raise KeyError(
            f"kv_dtype {kv_dtype!r} is unknown; choose one of {sorted(KV_FORMATS)}"
        )
    return KV_FORMATS[key]


def kv_size_ratio(
    kv_dtype: str | KVFormat, *, baseline: str | KVFormat = "bf16"
) -> float:
    """How many times smaller ``kv_dtype`` makes the cache than ``baseline``: ``bytes(baseline) / bytes(kv_dtype)``.

    bf16 -> fp8: 2; -> int4 (5 bits with scales): 3.2; -> fp4 (4.5 bits): 3.56; -> int2: 5.33.
    """
    return kv_format(baseline).bytes_per_element / kv_format(kv_dtype).bytes_per_element


__all__ = ["KV_FORMATS", "KVFormat", "kv_format", "kv_size_ratio"]
