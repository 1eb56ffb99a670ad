"""Attention that does not keep (or read) every token: sliding windows, linear-attention hybrids, sparse attention.

The rest of the book counts the KV cache of *full* attention: every layer keeps
``kappa_layer`` bytes for every token of the context, and a decode step reads all
of them (:func:`helpers.llm.kv_cache_bytes_per_token`). Three families of recent
models break that rule, each in its own way:

* **sliding-window layers** keep only the last ``window`` tokens (gpt-oss
  alternates 128-token windows with full layers);
* **linear-attention layers** (Gated DeltaNet, KDA, Mamba) keep a fixed-size
  *state* per sequence instead of per-token keys and values (Qwen3-Next puts one
  full-attention layer after every three Gated DeltaNet layers);
* **sparse attention** keeps every token but reads only ``top_k`` of them per query,
  chosen by a small *indexer* whose own keys are cached for every token and read in
  full (DeepSeek-V3.2's DSA: 2,048 tokens chosen per query).

:class:`AttentionMix` describes a model's layers by kind, with the bytes each kind
stores per token or per sequence; :func:`cache_bytes` is what one sequence holds at
a context, :func:`decode_read_bytes` what one decode step of one sequence reads, and
:func:`reusable_prefix_tokens` how much of a cached prefix an engine can reuse when
linear layers keep states only at checkpoints. :func:`recompute_flops_per_cache_byte`
is Chapter ``transfer_or_recompute``'s ``c(n)`` for such a model: the FLOP that recomputing a prefix costs per
byte of cache that fetching it moves. Every byte count comes from the model's
published ``config.json``; the sources are in :data:`MIXES`.

Units: bytes, tokens, FLOP.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _args


@dataclass(frozen=True)
class AttentionMix:
    """A model's attention layers by kind, with the bytes each keeps.

    Attributes
    ----------
    name : str
        The model's name as its authors publish it.
    full_layers : int
        Layers with full attention (every token's keys and values kept).
    full_bytes_per_token : float
        Bytes one token adds to one full-attention layer (``2 h_kv d_h w`` for GQA,
        ``(d_c + d_R) w`` for MLA).
    window_layers : int
        Sliding-window layers.
    window : int
        Their window, in tokens (0 if there are none).
    window_bytes_per_token : float
        Bytes one token adds to one sliding-window layer while it is in the window.
    linear_layers : int
        Linear-attention (recurrent) layers.
    linear_state_bytes : float
        Bytes of state one sequence keeps in one linear layer, whatever its length.
    top_k : int
        Tokens a sparse-attention query reads per full layer (0: dense attention).
    index_bytes_per_token : float
        Bytes the sparse indexer caches per token and full layer (read in full by every query).
    active_params : float
        Parameters used per token (for the recompute cost).
    attention_flops_per_key : float
        FLOP one query spends on one key it attends to, in one full layer (``4 h d_h``
        for GQA; the absorbed ``2 h (2 d_c + d_R)`` for MLA).
    source : str
        Where the numbers were read.
    """

    name: str
    full_layers: int
    full_bytes_per_token: float
    window_layers: int = 0
    window: int = 0
    window_bytes_per_token: float = 0.0
    linear_layers: int = 0
    linear_state_bytes: float = 0.0
    top_k: int = 0
    index_bytes_per_token: float = 0.0
    active_params: float = 0.0
    attention_flops_per_key: float = 0.0
    source: str = ""


def _gqa_bytes(kv_heads: int, head_dim: int, width: float = 2.0) -> float:
    return 2.0 * kv_heads * head_dim * width


#: Three shapes of attention as published, in bf16 caches (16-bit states):
#:
#: * ``"gpt-oss-120b"``: 36 layers alternating a 128-token sliding window and full
#:   attention, 8 KV heads of 64 (``config.json``: ``layer_types``, ``sliding_window``);
#:   5.1 B active parameters (OpenAI's model card); 64 query heads.
#: * ``"Qwen3-Next-80B-A3B"``: 48 layers, one full-attention layer (2 KV heads of 256,
#:   16 query heads) after every three Gated DeltaNet layers
#:   (``full_attention_interval`` 4); each DeltaNet layer keeps 32 value heads of a
#:   128 x 128 state plus a 4-tap convolution over the 2 x 16 x 128 + 32 x 128 channels
#:   (3 past inputs); about 3 B active parameters (the model card).
#: * ``"DeepSeek-V3.2"``: DeepSeek-V3's MLA (61 layers, 512 + 64 latent elements, 128
#:   heads) with a lightning indexer that picks ``index_topk`` = 2,048 tokens per query;
#:   the indexer caches a 128-element key per token and layer, stored in fp8 with one
#:   fp32 scale (132 bytes, the layout vLLM and SGLang use); 37 B active parameters.
MIXES: dict[str, AttentionMix] = {
    "gpt-oss-120b": AttentionMix(
        name="gpt-oss-120b",
        full_layers=18,
        full_bytes_per_token=_gqa_bytes(8, 64),
        window_layers=18,
        window=128,
        window_bytes_per_token=_gqa_bytes(8, 64),
        active_params=5.1e9,
        attention_flops_per_key=4.0 * 64 * 64,
        source="huggingface.co/openai/gpt-oss-120b config.json and model card",
    ),
    "Qwen3-Next-80B-A3B": AttentionMix(
        name="Qwen3-Next-80B-A3B",
        full_layers=12,
        full_bytes_per_token=_gqa_bytes(2, 256),
        linear_layers=36,
        linear_state_bytes=2.0 * (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)),
        active_params=3.0e9,
        attention_flops_per_key=4.0 * 16 * 256,
        source="huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct config.json and model card",
    ),
    "DeepSeek-V3.2": AttentionMix(
        name="DeepSeek-V3.2",
        full_layers=61,
        full_bytes_per_token=(512 + 64) * 2.0,
        top_k=2048,
        index_bytes_per_token=128 + 4,
        active_params=37e9,
        attention_flops_per_key=2.0 * 128 * (2 * 512 + 64),
        source="huggingface.co/deepseek-ai/DeepSeek-V3.2 config.json (index_topk, index_head_dim)",
    ),
}


def get_mix(mix: str | AttentionMix) -> AttentionMix:
    """Return the :class:`AttentionMix` named ``mix`` (a key of :data:`MIXES`), or ``mix`` itself."""
    if isinstance(mix, AttentionMix):
        return mix
    if mix not in MIXES:
        raise KeyError(f"mix must be one of {sorted(MIXES)}, got {mix!r}")
    return MIXES[mix]


def full_attention_bytes_per_token(mix: str | AttentionMix) -> float:
    """Bytes per token the same model would cache if every attention layer kept every token.

    Sliding-window layers counted as full, linear layers as full layers of the
    full-attention width, and no indexer: the Chapter ``transformer_inference`` count for the same depth.
    """
    m = get_mix(mix)
    return (
        m.full_layers * m.full_bytes_per_token
        + m.window_layers * (m.window_bytes_per_token or m.full_bytes_per_token)
        + m.linear_layers * m.full_bytes_per_token
    )


def cache_bytes(mix: str | AttentionMix, context: int) -> float:
    """Bytes one sequence holds at ``context`` tokens.

    ``context * (L_full kappa_full + L_full kappa_index) + min(context, W) L_win kappa_win
    + L_lin S``: full layers (and a sparse model's indexer) grow with the context, windows
    stop at ``W`` tokens and linear layers keep a fixed state ``S``.
    """
    m = get_mix(mix)
    n = _args.positive_int("context", context)
    return (
        n * m.full_layers * (m.full_bytes_per_token + m.index_bytes_per_token)
        + min(n, m.window) * m.window_layers * m.window_bytes_per_token
        + m.linear_layers * m.linear_state_bytes
    )


def cache_bytes_per_token(mix: str | AttentionMix, context: int) -> float:
    """Average bytes per token of context, :func:`cache_bytes` ``/ context``: the book's kappa for such a model."""
    return cache_bytes(mix, context) / _args.positive_int("context", context)


def decode_read_bytes(mix: str | AttentionMix, context: int) -> float:
    """Cache bytes one decode step of one sequence reads at ``context`` tokens.

    Full layers read every token's entry, or only ``top_k`` of them under sparse
    attention (plus every token's indexer key); windows read ``min(context, W)``
    tokens; linear layers read their state once.
    """
    m = get_mix(mix)
    n = _args.positive_int("context", context)
    attended = n if m.top_k == 0 else min(n, m.top_k)
    return (
        m.full_layers
        * (attended * m.full_bytes_per_token + n * m.index_bytes_per_token)
        + min(n, m.window) * m.window_layers * m.window_bytes_per_token
        + m.linear_layers * m.linear_state_bytes
    )


def prefill_flops(mix: str | AttentionMix, context: int) -> float:
    """FLOP to prefill ``context`` tokens: ``2 N_active n`` plus causal attention.

    Full layers attend to ``i + 1`` keys at position ``i`` (``n (n + 1) / 2`` pairs;
    a sparse model's prefill is counted dense, an upper bound), window layers to
    ``min(i + 1, W)``; linear layers' state updates are in ``N_active``.
    """
    m = get_mix(mix)
    n = _args.positive_int("context", context)
    full_pairs = n * (n + 1) / 2
    w = m.window
    window_pairs = full_pairs if n <= w else w * (w + 1) / 2 + (n - w) * w
    per_key = m.attention_flops_per_key
    return 2.0 * m.active_params * n + per_key * (
        m.full_layers * full_pairs + m.window_layers * window_pairs
    )


def recompute_flops_per_cache_byte(mix: str | AttentionMix, context: int) -> float:
    """Chapter ``transfer_or_recompute``'s ``c(n)`` for the model: FLOP to recompute a prefix per byte of its cache.

    :func:`prefill_flops` over :func:`cache_bytes`. Fetching beats recomputing
    when a GPU's FLOP/s per byte/s of link is below it; a model that stores fewer
    bytes per token for the same FLOP raises it, so fetching wins more often.
    """
    return prefill_flops(mix, context) / cache_bytes(mix, context)


def reusable_prefix_tokens(
    mix: str | AttentionMix, prefix: int, *, checkpoint_interval: int = 1
) -> int:
    """Tokens of a ``prefix`` an engine can reuse from its cache.

    Full and window layers can resume at any block boundary (a window layer needs only
    the window's last ``W`` tokens). A linear layer can resume only where its state was
    saved: engines checkpoint it every ``checkpoint_interval`` tokens, so the reusable
    prefix rounds down to a multiple of it. ``checkpoint_interval=1`` is the
    full-attention rule (every prefix reusable).
    """
    m = get_mix(mix)
    p = _args.non_negative_int("prefix", prefix)
    step = _args.positive_int("checkpoint_interval", checkpoint_interval)
    if m.linear_layers == 0:
        return p
    return (p // step) * step


def savings_vs_full(mix: str | AttentionMix, context: int) -> float:
    """How many times fewer cache bytes the model holds at ``context`` than full attention would."""
    m = get_mix(mix)
    n = _args.positive_int("context", context)
    return full_attention_bytes_per_token(m) * n / cache_bytes(m, n)


__all__ = [
    "MIXES",
    "AttentionMix",
    "cache_bytes",
    "cache_bytes_per_token",
    "decode_read_bytes",
    "full_attention_bytes_per_token",
    "get_mix",
    "prefill_flops",
    "recompute_flops_per_cache_byte",
    "reusable_prefix_tokens",
    "savings_vs_full",
]
