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

Two architectures change this arithmetic and are modelled explicitly:

* **multi-head latent attention** (MLA, DeepSeek-V2/V3): each layer caches
  one compressed latent of ``kv_lora_rank`` elements plus a shared rotary key
  of ``qk_rope_head_dim`` elements per token, instead of ``2 * kv_dim``
  (:class:`LatentAttention`);
* **mixture of experts** (MoE): the MLP of most layers is ``n_routed``
  experts of which each token uses ``top_k`` (plus ``n_shared`` always-on
  ones), so FLOP follow the *active* parameters and the bytes a decode step
  reads follow the experts the whole batch touches
  (:class:`MixtureOfExperts`, :func:`expected_experts_touched`).
"""

from __future__ import annotations

import numpy as np

from . import _validate
from ._models import _MODELS as _MODELS
from ._models import LatentAttention as LatentAttention
from ._models import MixtureOfExperts as MixtureOfExperts
from ._models import ModelConfig as ModelConfig
from .hardware import dtype_bytes
from .kv_formats import KVFormat, kv_format
from .ops import Cost

for _cls in (LatentAttention, MixtureOfExperts, ModelConfig):
    _cls.__module__ = (
        __name__  # documented (and pickled) as helpers.llm's, as before the split
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
    """Total parameters: embeddings, blocks (with their norms; every expert), final norm, lm_head.

    DeepSeek-V3: 671.0 B (its technical report: 671 B, without the
    multi-token-prediction module).
    """
    m = get_model(model)
    embeddings = m.vocab_size * m.d_model * (1 if m.tied_embeddings else 2)
    norms = m.n_layers * (2 * m.d_model + m._extra_norms())
    return embeddings + m.block_weights() + norms + m.d_model


def active_param_count(model: str | ModelConfig) -> int:
    """Parameters one token computes with: its blocks' active weights, the norms and the lm_head.

    For a MoE model each MoE layer counts ``top_k + n_shared`` experts; the
    input embedding table is left out (a token looks up one row of it and
    multiplies none), as DeepSeek counts it: DeepSeek-V3 has 36.6 B active
    parameters "including 0.9 B for the output head", the "37 B activated"
    of its technical report. For a dense model, :func:`param_count` less the
    embedding table (or the same when embeddings are tied, since the tied
    matrix serves as the lm_head).
    """
    m = get_model(model)
    head = m.vocab_size * m.d_model
    norms = m.n_layers * (2 * m.d_model + m._extra_norms())
    return m.active_block_weights() + norms + m.d_model + head


def expected_experts_touched(
    model: str | ModelConfig, tokens: float | np.ndarray
) -> float | np.ndarray:
    """Expected distinct routed experts that ``tokens`` tokens use in one MoE layer.

    ``E * (1 - (1 - k / E) ** tokens)`` for ``E`` routed experts of which each
    token picks ``k``, **assuming uniform, independent routing**: each
    expert is picked by a token with probability ``k / E`` independently of
    the other tokens (a token's ``k`` picks are distinct, which this marginal
    already accounts for). Real routers are skewed, and correlated tokens of
    one sequence tend to share experts, so a real batch touches fewer; the
    shared experts (always used) are not included. DeepSeek-V3 (``E = 256``,
    ``k = 8``): 8 experts for one token, 57.4 for 8, 255.9 for 256. A dense
    model has no routed experts: 0. Vectorised over ``tokens`` (>= 0, may be fractional).
    """
    m = get_model(model)
    t = np.asarray(tokens, dtype=float)
    if np.any(~np.isfinite(t)) or np.any(t < 0):
        raise ValueError(f"tokens must be finite and >= 0, got {tokens!r}")
    if m.moe is None:
        result = np.zeros_like(t)
    else:
        e, k = m.moe.n_routed, m.moe.top_k
        result = e * (1.0 - (1.0 - k / e) ** t)
    return float(result) if result.ndim == 0 else result


def weight_bytes(model: str | ModelConfig, *, dtype: str = "bf16") -> float:
    """Bytes of all parameters stored in ``dtype``."""
    return float(param_count(model) * dtype_bytes(dtype))


def weights_read_bytes(
    model: str | ModelConfig, tokens: float, *, dtype: str = "bf16"
) -> float:
    """Bytes of block weights and lm_head one forward pass over ``tokens`` tokens reads (each weight once).

    A dense model reads every block weight whatever the batch. A MoE model
    reads the attention, the dense layers, the routers and the shared experts,
    plus in each MoE layer only the routed experts the tokens touch
    (:func:`expected_experts_touched`): for a decode step of ``b`` sequences
    the weights read grow with ``b`` until every expert is touched, which
    moves the critical batch (:func:`helpers.inference.critical_decode_batch`).
    """
    m = get_model(model)
    tokens = _validate.non_negative("tokens", tokens)
    width = dtype_bytes(dtype)
    experts = 0.0
    if m.moe is not None:
        experts = m.moe.n_shared + float(expected_experts_touched(m, tokens))
    return m._blocks(experts) * width + _lm_head_bytes(m, width)


def kv_cache_bytes_per_token(
    model: str | ModelConfig,
    *,
    dtype: str = "bf16",
    kv_dtype: str | KVFormat | None = None,
) -> float:
    """Bytes of KV cache one token adds: ``n_layers * kv_elements_per_layer * bytes``.

    ``2 * n_layers * n_kv_heads * head_dim * bytes`` for MHA/GQA: for
    Llama-2-70B in bf16, ``2 * 80 * 8 * 128 * 2 = 327,680`` bytes. With MLA,
    ``n_layers * (kv_lora_rank + qk_rope_head_dim) * bytes``: for
    DeepSeek-V3 in bf16, ``61 * 576 * 2 = 70,272`` bytes.

    ``bytes`` is ``dtype``'s width, or, with ``kv_dtype`` (a quantized cache,
    :data:`~helpers.kv_formats.KV_FORMATS`), that format's :attr:`~helpers.kv_formats.KVFormat.bytes_per_element`,
    scales included: Llama-3-70B in ``"int4"`` is ``163,840 * 5 / 8 = 102,400``.
    """
    m = get_model(model)
    width = (
        dtype_bytes(dtype)
        if kv_dtype is None
        else kv_format(kv_dtype).bytes_per_element
    )
    return float(m.n_layers * m.kv_elements_per_layer * width)


def kv_cache_bytes(
    model: str | ModelConfig,
    tokens: int,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    kv_dtype: str | KVFormat | None = None,
) -> float:
    """Bytes of KV cache that ``batch`` sequences of ``tokens`` tokens each hold.

    ``batch * tokens * kv_cache_bytes_per_token``. For Llama-3-70B in bf16, one
    sequence of 4,096 tokens: ``4096 * 327,680`` bytes, about 1.34 GB.
    ``kv_dtype`` as in :func:`kv_cache_bytes_per_token`.
    """
    tokens = _validate.positive_int("tokens", tokens)
    batch = _validate.positive_int("batch", batch)
    return (
        batch * tokens * kv_cache_bytes_per_token(model, dtype=dtype, kv_dtype=kv_dtype)
    )


def kv_capacity_tokens(
    model: str | ModelConfig,
    capacity_bytes: float,
    *,
    kv_dtype: str | KVFormat = "bf16",
) -> int:
    """Tokens of KV cache that ``capacity_bytes`` hold in ``kv_dtype``: ``floor(capacity / bytes per token)``.

    This is the capacity a prefix cache's hit-rate curve is read at
    (:func:`helpers.cachesim.hit_rate_curve` takes capacities in tokens), so
    a smaller format moves a cache along that curve: the same 100 GB holds
    305,175 Llama-3-70B tokens in bf16 and 976,562 in ``"int4"`` (3.2x, not 4x,
    because of the scales).
    """
    capacity = _validate.non_negative("capacity_bytes", capacity_bytes)
    return int(capacity // kv_cache_bytes_per_token(model, kv_dtype=kv_dtype))


def recompute_flops_per_kv_byte(
    model: str | ModelConfig, *, kv_dtype: str | KVFormat = "bf16"
) -> float:
    """FLOP it takes to recompute one byte of KV cache (weight matmuls only): ``c * d_model``.

    ``linear_flops_per_token / kv_cache_bytes_per_token``: the constant that
    Chapter 7's rule compares with a link's FLOP/s per byte/s (fetch when
    ``peak FLOP/s / bandwidth < c * d``), the same quantity as
    :func:`helpers.kvcache.hidden_size_constant` times ``d_model`` for 16-bit
    caches. A smaller KV format raises it by :func:`~helpers.kv_formats.kv_size_ratio`: every byte
    fetched stands for more recomputation, so fetching wins on slower links.
    Llama-3-70B: ``136,902,082,560 / 327,680 = 417,792`` FLOP/byte in bf16, 3.2x that
    in ``"int4"``. (Dequantizing costs a few FLOP per element, left out.)
    """
    m = get_model(model)
    return linear_flops_per_token(m) / kv_cache_bytes_per_token(m, kv_dtype=kv_dtype)


def kv_transfer_bytes(
    model: str | ModelConfig,
    tokens: int,
    *,
    kv_dtype: str | KVFormat = "bf16",
    compression: float = 1.0,
) -> float:
    """Bytes on the wire to send ``tokens`` tokens of KV cache stored in ``kv_dtype``, compressed ``compression``-fold.

    ``kv_cache_bytes(tokens, kv_dtype) / compression``. ``compression`` (>= 1)
    is a codec's size reduction on top of the stored format, CacheGen-style
    (Liu et al., SIGCOMM'24: delta and arithmetic coding of quantized KV,
    a KV cache 3.5-4.3x smaller than the KV-reusing systems it compares
    with, at negligible quality loss on its benchmarks). The codec's encode and decode time is not counted: a fetch is
    ``kv_transfer_bytes / bandwidth`` plus the decode time, which CacheGen
    runs on the GPU and overlaps with transfer.
    """
    compression = _validate.positive("compression", compression)
    if compression < 1:
        raise ValueError(
            f"compression must be >= 1 (a size reduction), got {compression!r}"
        )
    return kv_cache_bytes(model, tokens, kv_dtype=kv_dtype) / compression


def linear_flops_per_token(model: str | ModelConfig) -> float:
    """FLOP of the weight matmuls for one token through all blocks (no lm_head): ``2 *`` active block weights."""
    m = get_model(model)
    return 2.0 * m.active_block_weights()


def attention_flops(
    model: str | ModelConfig, pairs: float | np.ndarray, *, absorbed: bool = False
) -> float | np.ndarray:
    """FLOP of attention over ``pairs`` query-key pairs, in all layers: ``n_layers * pairs *`` the per-pair FLOP.

    For MHA/GQA ``4 * n_layers * q_dim * pairs``: each pair costs ``2 * q_dim``
    FLOP for its score (``q . k`` in every head) and as much again for its
    weighted value (``p * v``), at 2 FLOP per multiply-accumulate. A causal
    prefill of ``t`` tokens has ``t (t + 1) / 2`` pairs; a decode step over
    ``c`` cached tokens, ``c + 1``. ``absorbed`` selects MLA's decode form
    (:meth:`ModelConfig.attention_flops_per_pair`). Vectorised over ``pairs`` (>= 0).
    """
    m = get_model(model)
    per_pair = m.n_layers * m.attention_flops_per_pair(absorbed=absorbed)
    if np.ndim(pairs) == 0 and not isinstance(
        pairs, str
    ):  # fast path: prefill_cost calls it per request
        return per_pair * _validate.non_negative("pairs", pairs)
    raw = np.asarray(pairs)
    if (
        raw.dtype.kind not in "iuf"
    ):  # not a string ("6" would read as 6.0), a bool or None
        raise TypeError(f"pairs must be a number or an array of numbers, got {pairs!r}")
    values = raw.astype(float)
    if np.any(~np.isfinite(values)) or np.any(values < 0):
        raise ValueError("pairs must be finite and >= 0")
    return per_pair * values


def attention_crossover_keys(model: str | ModelConfig) -> float:
    """Keys per query at which a token's attention FLOP equal its weight-matmul FLOP.

    ``linear_flops_per_token / attention_flops(model, 1)``: below this many
    keys (context), the weight matmuls cost more than attention. For
    Llama-2-7B, ``2 * 6.48e9 / (4 * 32 * 4096) = 24,704`` keys.
    """
    return linear_flops_per_token(model) / float(attention_flops(model, 1))


def _lm_head_bytes(m: ModelConfig, width: int) -> float:
    return float(m.vocab_size * m.d_model * width)


def prefill_cost(
    model: str | ModelConfig,
    tokens: int,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    kv_dtype: str | KVFormat | None = None,
) -> Cost:
    """Cost of prefilling ``batch`` prompts of ``tokens`` tokens each (no cache to start).

    FLOP: weight matmuls for every token (active weights for MoE), causal
    attention (``tokens (tokens + 1) / 2`` pairs per prompt; MLA
    materialised), and the lm_head for the last token of each prompt.
    Bytes: the block weights the prompts use (:func:`weights_read_bytes`)
    and the lm_head once, the embedding rows looked up, and the KV cache written
    (in ``kv_dtype``, default ``dtype``: :func:`kv_cache_bytes_per_token`).
    """
    m = get_model(model)
    tokens = _validate.positive_int("tokens", tokens)
    batch = _validate.positive_int("batch", batch)
    width = dtype_bytes(dtype)
    n = batch * tokens
    flops = n * linear_flops_per_token(m)
    flops += batch * float(attention_flops(m, tokens * (tokens + 1) / 2))
    flops += batch * 2.0 * m.d_model * m.vocab_size
    bytes_ = weights_read_bytes(m, n, dtype=dtype)
    bytes_ += n * m.d_model * width  # embedding rows
    bytes_ += n * kv_cache_bytes_per_token(m, dtype=dtype, kv_dtype=kv_dtype)
    return Cost(flops, float(bytes_))


def decode_cost(
    model: str | ModelConfig,
    context: int,
    *,
    batch: int = 1,
    dtype: str = "bf16",
    query_tokens: int = 1,
    kv_dtype: str | KVFormat | None = None,
) -> Cost:
    """Cost of one decode step: ``batch`` sequences each process ``query_tokens`` new tokens.

    With ``query_tokens = 1`` (plain decoding) each new token attends to
    ``context`` cached tokens plus itself. With ``s = query_tokens > 1``
    (speculative decoding verifying ``s - 1`` drafted tokens, or multi-token
    prediction) the ``i``-th new token attends to ``context + i`` keys, but
    the cache is still read once per sequence, so FLOP grow ``s``-fold and
    bytes barely: that is how several query tokens raise the step's
    arithmetic intensity. FLOP: weight matmuls (active weights for MoE),
    attention (MLA in its absorbed decode form), the lm_head per new token.
    Bytes: the weights the ``batch * s`` tokens use, once
    (:func:`weights_read_bytes`: all of them for a dense model), each
    sequence's KV cache read (``context`` tokens) and its new tokens' KV written,
    in ``kv_dtype`` (default ``dtype``; a quantized cache, :data:`helpers.kv_formats.KV_FORMATS`).
    """
    m = get_model(model)
    context = _validate.non_negative_int("context", context)
    batch = _validate.positive_int("batch", batch)
    s = _validate.positive_int("query_tokens", query_tokens)
    width = dtype_bytes(dtype)
    pairs = s * context + s * (s + 1) / 2
    flops = batch * s * (linear_flops_per_token(m) + 2.0 * m.d_model * m.vocab_size)
    flops += batch * float(attention_flops(m, pairs, absorbed=True))
    bytes_ = weights_read_bytes(m, batch * s, dtype=dtype)
    bytes_ += batch * s * m.d_model * width
    bytes_ += (
        batch
        * (context + s)
        * kv_cache_bytes_per_token(m, dtype=dtype, kv_dtype=kv_dtype)
    )
    return Cost(float(flops), float(bytes_))


def prefill_flops_saved(model: str | ModelConfig, hit_tokens: object) -> np.ndarray:
    """Prefill FLOP not spent because the first ``hit_tokens`` of a prompt came from the cache.

    With this module's counting rules, a prompt of ``L`` tokens
    costs ``L`` tokens of weight matmuls plus causal attention over
    ``L (L + 1) / 2`` query-key pairs. Given a cached prefix of ``h`` tokens,
    only the last ``L - h`` tokens run: their matmuls, and their attention
    over all ``L`` keys (``L (L + 1) / 2 - h (h + 1) / 2`` pairs). The
    difference does not depend on ``L``:

    ``saved(h) = h * linear_flops_per_token + attention_flops(h (h + 1) / 2)``,

    which is ``prefill_cost(model, h).flops`` without the lm_head of the
    last token (still computed for the suffix).

    Parameters
    ----------
    model : str or ModelConfig
    hit_tokens : int or array of int
        Cached prefix length of each request, tokens (>= 0).

    Returns
    -------
    numpy.ndarray of float
        FLOP saved per request (same shape as ``hit_tokens``).
    """
    m = get_model(model)
    try:
        h = np.asarray(hit_tokens, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"hit_tokens must be numbers, got {hit_tokens!r}") from exc
    if np.any(~np.isfinite(h)) or np.any(h < 0):
        raise ValueError("hit_tokens must be finite and >= 0")
    return h * linear_flops_per_token(m) + attention_flops(m, h * (h + 1) / 2)
