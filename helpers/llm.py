"""Transformer (decoder-only, Llama-style) inference arithmetic.

Counting rules, used everywhere in the book:

* every matmul costs 2 FLOP per multiply-accumulate;
* attention is causal: in a prefill of ``t`` tokens, query ``i`` attends to
  ``i + 1`` keys, ``t (t + 1) / 2`` query-key pairs in all (what a causal
  FlashAttention kernel computes); each pair costs ``2 * n_heads * head_dim``
  FLOP for the scores and as much again for the weighted values;
* bytes = the weights read once, plus the KV cache read and written
  (activations between layers are ignored: they are small next to either).

Norms, rotary embeddings and softmax are elementwise and left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from . import _validate
from .hardware import dtype_bytes
from .ops import Cost


@dataclass(frozen=True)
class ModelConfig:
    """Shape of a decoder-only transformer, as in its published ``config.json``.

    Attributes
    ----------
    name : str
    n_layers, d_model, n_heads, n_kv_heads, head_dim, d_ff, vocab_size : int
        ``n_kv_heads < n_heads`` is grouped-query attention (GQA);
        ``n_kv_heads == 1`` is multi-query attention (MQA).
    gated_mlp : bool
        SwiGLU MLP with three matrices (gate, up, down) instead of two.
    tied_embeddings : bool
        Whether the output projection (lm_head) shares the embedding matrix.
    source : str
        URL of the published configuration.
    nominal_params : float or None
        The size in the model's published name (``7e9`` for "Llama-2-7B"),
        which :func:`param_count` should round to; ``None`` if it has none.
    """

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    gated_mlp: bool = True
    tied_embeddings: bool = False
    source: str = ""
    nominal_params: float | None = None

    def __post_init__(self) -> None:
        _validate.name("name", self.name)
        _validate.boolean("gated_mlp", self.gated_mlp)
        _validate.boolean("tied_embeddings", self.tied_embeddings)
        if self.nominal_params is not None:
            _validate.positive("nominal_params", self.nominal_params)
        for field in (
            "n_layers",
            "d_model",
            "n_heads",
            "n_kv_heads",
            "head_dim",
            "d_ff",
            "vocab_size",
        ):
            _validate.positive_int(field, getattr(self, field))
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})"
            )

    @property
    def gqa_group(self) -> int:
        """Query heads per KV head (1 for MHA, ``n_heads`` for MQA)."""
        return self.n_heads // self.n_kv_heads

    @property
    def q_dim(self) -> int:
        """Width of the concatenated query heads, ``n_heads * head_dim``."""
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the concatenated key (or value) heads, ``n_kv_heads * head_dim``."""
        return self.n_kv_heads * self.head_dim

    def attention_weights(self) -> int:
        """Weights of one block's attention projections.

        ``W_Q`` and ``W_O`` hold ``d * q_dim`` each, ``W_K`` and ``W_V`` ``d * kv_dim`` each.
        """
        return 2 * self.d_model * self.q_dim + 2 * self.d_model * self.kv_dim

    def mlp_weights(self) -> int:
        """Weights of one block's MLP: ``3 * d * d_ff`` if gated (gate, up, down), else ``2 * d * d_ff``."""
        return (3 if self.gated_mlp else 2) * self.d_model * self.d_ff

    def layer_weights(self) -> int:
        """Weights of one transformer block's matmuls (attention + MLP), excluding norms."""
        return self.attention_weights() + self.mlp_weights()


def _hf(repo: str) -> str:
    return f"https://huggingface.co/{repo}/blob/main/config.json"


_MODELS: Mapping[str, ModelConfig] = MappingProxyType(
    {
        m.name: m
        for m in (
            ModelConfig(
                "llama-2-7b",
                32,
                4096,
                32,
                32,
                128,
                11008,
                32000,
                source=_hf("meta-llama/Llama-2-7b-hf"),
                nominal_params=7e9,
            ),
            ModelConfig(
                "llama-2-13b",
                40,
                5120,
                40,
                40,
                128,
                13824,
                32000,
                source=_hf("meta-llama/Llama-2-13b-hf"),
                nominal_params=13e9,
            ),
            ModelConfig(
                "llama-2-70b",
                80,
                8192,
                64,
                8,
                128,
                28672,
                32000,
                source=_hf("meta-llama/Llama-2-70b-hf"),
                nominal_params=70e9,
            ),
            ModelConfig(
                "llama-3-8b",
                32,
                4096,
                32,
                8,
                128,
                14336,
                128256,
                source=_hf("meta-llama/Meta-Llama-3-8B"),
                nominal_params=8e9,
            ),
            ModelConfig(
                "llama-3-70b",
                80,
                8192,
                64,
                8,
                128,
                28672,
                128256,
                source=_hf("meta-llama/Meta-Llama-3-70B"),
                nominal_params=70e9,
            ),
        )
    }
)


def models() -> tuple[ModelConfig, ...]:
    """All model configurations in the catalog."""
    return tuple(_MODELS.values())


def get_model(name: str | ModelConfig) -> ModelConfig:
    """Look up a model by name (case-insensitive; ``_`` and spaces read as ``-``).

    A :class:`ModelConfig` passes through unchanged.
    """
    if isinstance(name, ModelConfig):
        return name
    key = _validate.name("model", name).replace("_", "-").replace(" ", "-")
    if key not in _MODELS:
        raise KeyError(f"model {name!r} is unknown; choose one of {list(_MODELS)}")
    return _MODELS[key]


def param_count(model: str | ModelConfig) -> int:
    """Total parameters: embeddings, blocks (with their two RMSNorms), final norm, lm_head."""
    m = get_model(model)
    embeddings = m.vocab_size * m.d_model * (1 if m.tied_embeddings else 2)
    blocks = m.n_layers * (m.layer_weights() + 2 * m.d_model)
    return embeddings + blocks + m.d_model


def weight_bytes(model: str | ModelConfig, *, dtype: str = "bf16") -> float:
    """Bytes of all parameters stored in ``dtype``."""
    return float(param_count(model) * dtype_bytes(dtype))


def kv_cache_bytes_per_token(model: str | ModelConfig, *, dtype: str = "bf16") -> float:
    """Bytes of KV cache one token adds: ``2 * n_layers * n_kv_heads * head_dim * bytes``.

    For Llama-2-70B in bf16: ``2 * 80 * 8 * 128 * 2 = 327,680`` bytes.
    """
    m = get_model(model)
    return float(2 * m.n_layers * m.kv_dim * dtype_bytes(dtype))


def kv_cache_bytes(
    model: str | ModelConfig, tokens: int, *, batch: int = 1, dtype: str = "bf16"
) -> float:
    """Bytes of KV cache that ``batch`` sequences of ``tokens`` tokens each hold.

    ``batch * tokens * kv_cache_bytes_per_token``. For Llama-3-70B in bf16, one
    sequence of 4,096 tokens: ``4096 * 327,680`` bytes, about 1.34 GB.
    """
    tokens = _validate.positive_int("tokens", tokens)
    batch = _validate.positive_int("batch", batch)
    return batch * tokens * kv_cache_bytes_per_token(model, dtype=dtype)


def linear_flops_per_token(model: str | ModelConfig) -> float:
    """FLOP of the weight matmuls for one token through all blocks (no lm_head)."""
    m = get_model(model)
    return 2.0 * m.n_layers * m.layer_weights()


def attention_flops(
    model: str | ModelConfig, pairs: float | np.ndarray
) -> float | np.ndarray:
    """FLOP of attention over ``pairs`` query-key pairs, in all layers: ``4 * n_layers * q_dim * pairs``.

    Each pair costs ``2 * q_dim`` FLOP for its score (``q . k`` in every head)
    and as much again for its weighted value (``p * v``), at 2 FLOP per
    multiply-accumulate. A causal prefill of ``t`` tokens has
    ``t (t + 1) / 2`` pairs; a decode step over ``c`` cached tokens, ``c + 1``.
    Vectorised over ``pairs`` (>= 0).
    """
    m = get_model(model)
    if np.ndim(pairs) == 0 and not isinstance(
        pairs, str
    ):  # fast path: prefill_cost calls it per request
        return 4.0 * m.n_layers * m.q_dim * _validate.non_negative("pairs", pairs)
    raw = np.asarray(pairs)
    if (
        raw.dtype.kind not in "iuf"
    ):  # not a string ("6" would read as 6.0), a bool or None
        raise TypeError(f"pairs must be a number or an array of numbers, got {pairs!r}")
    values = raw.astype(float)
    if np.any(~np.isfinite(values)) or np.any(values < 0):
        raise ValueError("pairs must be finite and >= 0")
    return 4.0 * m.n_layers * m.q_dim * values


def attention_crossover_keys(model: str | ModelConfig) -> float:
    """Keys per query at which a token's attention FLOP equal its weight-matmul FLOP.

    ``linear_flops_per_token / attention_flops(model, 1)``: below this many
    keys (context), the weight matmuls cost more than attention. For
    Llama-2-7B, ``2 * 6.48e9 / (4 * 32 * 4096) = 24,704`` keys.
    """
    return linear_flops_per_token(model) / attention_flops(model, 1)


def _lm_head_bytes(m: ModelConfig, width: int) -> float:
    return float(m.vocab_size * m.d_model * width)


def prefill_cost(
    model: str | ModelConfig, tokens: int, *, batch: int = 1, dtype: str = "bf16"
) -> Cost:
    """Cost of prefilling ``batch`` prompts of ``tokens`` tokens each (no cache to start).

    FLOP: weight matmuls for every token, causal attention
    (``tokens (tokens + 1) / 2`` pairs per prompt), and the lm_head for the
    last token of each prompt. Bytes: all block weights and the lm_head once,
    the embedding rows looked up, and the KV cache written.
    """
    m = get_model(model)
    tokens = _validate.positive_int("tokens", tokens)
    batch = _validate.positive_int("batch", batch)
    width = dtype_bytes(dtype)
    n = batch * tokens
    flops = n * linear_flops_per_token(m)
    flops += batch * attention_flops(m, tokens * (tokens + 1) / 2)
    flops += batch * 2.0 * m.d_model * m.vocab_size
    bytes_ = m.n_layers * m.layer_weights() * width + _lm_head_bytes(m, width)
    bytes_ += n * m.d_model * width  # embedding rows
    bytes_ += n * kv_cache_bytes_per_token(m, dtype=dtype)
    return Cost(flops, float(bytes_))


def decode_cost(
    model: str | ModelConfig, context: int, *, batch: int = 1, dtype: str = "bf16"
) -> Cost:
    """Cost of one decode step: ``batch`` sequences each generate one token.

    Each new token attends to ``context`` cached tokens plus itself. FLOP:
    weight matmuls, attention over ``context + 1`` keys, the lm_head. Bytes:
    all weights once (shared by the batch), each sequence's KV cache read
    (``context`` tokens) and its new token's KV written.
    """
    m = get_model(model)
    context = _validate.non_negative_int("context", context)
    batch = _validate.positive_int("batch", batch)
    width = dtype_bytes(dtype)
    per_token = linear_flops_per_token(m) + attention_flops(m, context + 1)
    flops = batch * (per_token + 2.0 * m.d_model * m.vocab_size)
    bytes_ = m.n_layers * m.layer_weights() * width + _lm_head_bytes(m, width)
    bytes_ += batch * m.d_model * width
    bytes_ += batch * (context + 1) * kv_cache_bytes_per_token(m, dtype=dtype)
    return Cost(flops, float(bytes_))
