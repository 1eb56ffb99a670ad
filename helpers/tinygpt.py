"""A small Llama-style decoder in plain torch, built from a :class:`~helpers.llm.ModelConfig`.

The labs time what :mod:`helpers.llm` predicts, so the same config drives
both: ``TinyGPT(config)`` has exactly the matmuls that
:func:`helpers.llm.prefill_cost` and :func:`helpers.llm.decode_cost` count
(query/key/value/output projections with grouped-query attention, a gated
SwiGLU MLP, an lm_head applied to the last position only), random weights,
nothing downloaded. RMSNorm and rotary position embeddings are included
(they are elementwise, and :mod:`helpers.llm` leaves them out of its FLOP).

Attention is written with explicit matmuls, not ``scaled_dot_product_attention``,
so a FLOP counter sees exactly two batched matmuls per layer and the
attention and linear parts can be timed separately:

* :meth:`TinyGPT.decode_linear` runs every weight matmul of one decode step;
* :meth:`TinyGPT.decode_attention` runs every layer's attention over a cache.

One convention differs from :mod:`helpers.llm`: a prefill of ``t`` tokens
computes the full ``t x t`` score matrix and masks the upper triangle (as a
plain PyTorch implementation does), so it performs ``t**2`` query-key pairs
per head where :mod:`helpers.llm` counts the ``t (t + 1) / 2`` causal pairs a
FlashAttention kernel computes. :func:`prefill_attention_pairs` states the
difference; decode steps agree exactly.

This module imports torch at import time; ``import helpers`` does not import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from . import _args
from .bench import torch_dtype
from .llm import ModelConfig, get_model

KVCache = list[tuple[torch.Tensor, torch.Tensor]]
"""One ``(keys, values)`` pair per layer, each of shape ``(batch, n_kv_heads, tokens, head_dim)``."""


def tiny_config(
    *,
    n_layers: int = 4,
    d_model: int = 256,
    n_heads: int = 8,
    n_kv_heads: int = 2,
    head_dim: int = 32,
    d_ff: int = 704,
    vocab_size: int = 2048,
    name: str = "tinygpt",
) -> ModelConfig:
    """A small Llama-shaped :class:`~helpers.llm.ModelConfig` (GQA, gated MLP) that runs quickly on a CPU."""
    return ModelConfig(
        name,
        n_layers,
        d_model,
        n_heads,
        n_kv_heads,
        head_dim,
        d_ff,
        vocab_size,
        gated_mlp=True,
    )


def prefill_attention_pairs(tokens: int) -> tuple[int, float]:
    """Query-key pairs per head of a prefill: ``(computed by TinyGPT, counted by helpers.llm)``.

    TinyGPT computes the full masked ``tokens**2`` score matrix;
    :func:`helpers.llm.prefill_cost` counts the causal ``tokens (tokens + 1) / 2``.
    """
    tokens = _args.positive_int("tokens", tokens)
    return tokens * tokens, tokens * (tokens + 1) / 2


class RMSNorm(nn.Module):
    """Root-mean-square normalisation with a learned scale (Llama's norm)."""

    def __init__(self, width: int, *, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (x.float() * scale).to(x.dtype) * self.weight


def _rotary(x: torch.Tensor, start: int, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding of ``x`` (``(..., tokens, head_dim)``) for positions ``start, start + 1, ...``."""
    tokens, head_dim = x.shape[-2], x.shape[-1]
    half = head_dim // 2
    inv_freq = base ** (
        -torch.arange(half, device=x.device, dtype=torch.float32) / half
    )
    positions = torch.arange(
        start, start + tokens, device=x.device, dtype=torch.float32
    )
    angles = positions[:, None] * inv_freq[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half : 2 * half]
    rotated = torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return torch.cat((rotated, x[..., 2 * half :]), dim=-1)


class Block(nn.Module):
    """One decoder block: RMSNorm, GQA attention, RMSNorm, gated MLP, residuals around both."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        d, q, kv, ff = config.d_model, config.q_dim, config.kv_dim, config.d_ff
        self.attn_norm = RMSNorm(d)
        self.wq = nn.Linear(d, q, bias=False)
        self.wk = nn.Linear(d, kv, bias=False)
        self.wv = nn.Linear(d, kv, bias=False)
        self.wo = nn.Linear(q, d, bias=False)
        self.mlp_norm = RMSNorm(d)
        self.up = nn.Linear(d, ff, bias=False)
        self.gate = nn.Linear(d, ff, bias=False) if config.gated_mlp else None
        self.down = nn.Linear(ff, d, bias=False)

    def _heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        batch, tokens, _ = x.shape
        return x.view(batch, tokens, n, self.config.head_dim).transpose(1, 2)

    def qkv(
        self, x: torch.Tensor, start: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Project ``x`` (``(batch, tokens, d_model)``) to rotated queries, keys and values, heads first."""
        h = self.attn_norm(x)
        q = _rotary(self._heads(self.wq(h), self.config.n_heads), start)
        k = _rotary(self._heads(self.wk(h), self.config.n_kv_heads), start)
        v = self._heads(self.wv(h), self.config.n_kv_heads)
        return q, k, v

    def attention_core(
        self,
        q: torch.Tensor,
        k_cache: torch.Tensor,
        v_cache: torch.Tensor,
        *,
        causal: bool = False,
    ) -> torch.Tensor:
        """Softmax attention of ``q`` (``(b, n_heads, s, hd)``) over a cache (``(b, n_kv_heads, t, hd)``).

        Two batched matmuls (scores, weighted values), each ``2 * b * n_heads * s * t * head_dim``
        FLOP. Query heads are grouped onto their KV head (GQA) by a view, no copy of the cache.
        With ``causal``, query ``i`` of ``s`` sees keys up to ``t - s + i`` (the masked full matrix).
        Returns ``(b, n_heads, s, hd)``.
        """
        b, n_heads, s, hd = q.shape
        n_kv, t = k_cache.shape[1], k_cache.shape[2]
        group = n_heads // n_kv
        # the group's queries become extra rows of one matmul per KV head: the cache is read once, never expanded
        qg = q.reshape(b, n_kv, group * s, hd)
        scores = torch.matmul(qg, k_cache.transpose(-1, -2)) / math.sqrt(hd)
        if causal and s > 1:
            mask = torch.ones(s, t, dtype=torch.bool, device=q.device).triu(t - s + 1)
            scores = (
                scores.view(b, n_kv, group, s, t)
                .masked_fill(mask, float("-inf"))
                .view(b, n_kv, group * s, t)
            )
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        return torch.matmul(probs, v_cache).reshape(b, n_heads, s, hd)

    def finish(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """Output projection and MLP: ``x + wo(attended)``, then the MLP's residual update."""
        b, _, s, _ = attended.shape
        x = x + self.wo(attended.transpose(1, 2).reshape(b, s, self.config.q_dim))
        h = self.mlp_norm(x)
        inner = (
            self.up(h)
            if self.gate is None
            else nn.functional.silu(self.gate(h)) * self.up(h)
        )
        if self.gate is None:
            inner = nn.functional.gelu(inner)
        return x + self.down(inner)

    def forward(
        self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Run the block on ``x`` after ``cache`` (or from position 0); return the output and the grown cache."""
        start = 0 if cache is None else cache[0].shape[2]
        q, k, v = self.qkv(x, start)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=2), torch.cat((cache[1], v), dim=2)
        return self.finish(x, self.attention_core(q, k, v, causal=True)), (k, v)

    def linear_parts(self, x: torch.Tensor) -> torch.Tensor:
        """Every weight matmul of the block on ``x``, attention skipped (the queries stand in for its output).

        Same FLOP and weight bytes as the block's projections and MLP; used to time them alone.
        """
        q, _, _ = self.qkv(x, 0)
        return self.finish(x, q)


@dataclass(frozen=True)
class DecodeInputs:
    """What one layer's attention needs in a decode step: queries per layer and the cache."""

    queries: list[torch.Tensor]
    cache: KVCache

    def head(self, batch: int) -> DecodeInputs:
        """The first ``batch`` sequences: views of the queries and the cache, no copy.

        Lets one cache built for the largest batch serve every smaller batch of a sweep.
        """
        batch = _args.positive_int("batch", batch)
        have = self.queries[0].shape[0]
        if batch > have:
            raise ValueError(
                f"batch ({batch}) must be <= the {have} sequences these inputs hold"
            )
        return DecodeInputs(
            [q[:batch] for q in self.queries],
            [(k[:batch], v[:batch]) for k, v in self.cache],
        )


class TinyGPT(nn.Module):
    """A decoder-only transformer with random weights, shaped by a :class:`~helpers.llm.ModelConfig`.

    Parameters
    ----------
    config : ModelConfig or str
        Shape of the model (a catalog name works too, but a 7B model needs 28 GB in fp32).
    dtype : str
        Weight and activation dtype, one of the book's names (``"fp32"``, ``"bf16"``, ``"fp16"``).
    device : str or torch.device, optional
        Where the weights live (default: the CPU).
    seed : int
        Seed of the random weights: the same seed gives the same model in every process on the same
        kind of device (CPU and CUDA draw different random numbers).

    Examples
    --------
    >>> model = TinyGPT(tiny_config())
    >>> logits, cache = model.prefill(torch.randint(0, 2048, (1, 16)))
    >>> logits, cache = model.decode_step(logits.argmax(-1), cache)
    """

    def __init__(
        self,
        config: ModelConfig | str,
        *,
        dtype: str = "fp32",
        device: str | torch.device | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.config = get_model(config)
        self.dtype_name = dtype
        seed = _args.non_negative_int("seed", seed)
        m = self.config
        target = torch.device("cpu") if device is None else torch.device(device)
        with target:  # build and fill the weights where they will live (a large model on a GPU in seconds)
            self.embed = nn.Embedding(m.vocab_size, m.d_model)
            self.blocks = nn.ModuleList(Block(m) for _ in range(m.n_layers))
            self.norm = RMSNorm(m.d_model)
            self.lm_head = nn.Linear(m.d_model, m.vocab_size, bias=False)
        generator = torch.Generator(device=target).manual_seed(seed)
        with torch.no_grad():
            for name, param in self.named_parameters():
                if name.endswith("norm.weight"):
                    continue
                fan_in = (
                    param.shape[-1]
                    if param.ndim > 1 and not name.startswith("embed")
                    else 1
                )
                param.copy_(
                    torch.randn(param.shape, generator=generator, device=target)
                    / math.sqrt(fan_in)
                )
        self.to(dtype=torch_dtype(dtype))
        self.eval()
        self.requires_grad_(False)

    @property
    def device(self) -> torch.device:
        """Where the weights live."""
        return self.lm_head.weight.device

    def _tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        if not isinstance(tokens, torch.Tensor):
            raise TypeError(
                f"tokens must be a torch.Tensor of token ids, got {type(tokens).__name__}"
            )
        if tokens.ndim == 1:
            tokens = tokens[:, None]
        if tokens.ndim != 2 or tokens.shape[1] < 1:
            raise ValueError(
                f"tokens must have shape (batch, length) with length >= 1, got {tuple(tokens.shape)}"
            )
        return tokens.to(self.device)

    @torch.no_grad()
    def _run(
        self, tokens: torch.Tensor, cache: KVCache | None
    ) -> tuple[torch.Tensor, KVCache]:
        x = self.embed(tokens)
        grown: KVCache = []
        for i, block in enumerate(self.blocks):
            x, layer_cache = block(x, None if cache is None else cache[i])
            grown.append(layer_cache)
        return self.lm_head(self.norm(x[:, -1:, :]))[:, 0, :], grown

    def prefill(self, tokens: torch.Tensor) -> tuple[torch.Tensor, KVCache]:
        """Process whole prompts (``(batch, length)`` token ids).

        Returns the logits of the last position (``(batch, vocab)``; the lm_head
        runs on that position only, as :func:`helpers.llm.prefill_cost` counts)
        and the KV cache: per layer ``(keys, values)`` of shape
        ``(batch, n_kv_heads, length, head_dim)``.
        """
        return self._run(self._tokens(tokens), None)

    def decode_step(
        self, token: torch.Tensor, kv_cache: KVCache
    ) -> tuple[torch.Tensor, KVCache]:
        """Generate from one new token per sequence (``(batch,)`` or ``(batch, 1)``) after ``kv_cache``.

        Returns the logits ``(batch, vocab)`` and the cache grown by one token.
        """
        self._check_cache(kv_cache)
        token = self._tokens(token)
        if token.shape[1] != 1:
            raise ValueError(
                f"token must hold one token per sequence, got shape {tuple(token.shape)}"
            )
        return self._run(token, kv_cache)

    def _check_cache(self, kv_cache: KVCache) -> None:
        if (
            not isinstance(kv_cache, (list, tuple))
            or len(kv_cache) != self.config.n_layers
        ):
            raise ValueError(
                f"kv_cache must be a list of {self.config.n_layers} (keys, values) pairs"
            )

    def random_kv_cache(self, batch: int, context: int, *, seed: int = 0) -> KVCache:
        """A KV cache of ``context`` tokens for ``batch`` sequences filled with random numbers.

        For timing decode at long contexts without running the prefill first.
        """
        batch = _args.positive_int("batch", batch)
        context = _args.positive_int("context", context)
        m = self.config
        generator = torch.Generator(device=self.device).manual_seed(
            _args.non_negative_int("seed", seed)
        )
        shape = (batch, m.n_kv_heads, context, m.head_dim)
        dtype = torch_dtype(self.dtype_name)
        return [
            tuple(
                torch.randn(shape, generator=generator, device=self.device, dtype=dtype)
                for _ in range(2)
            )  # type: ignore[misc]
            for _ in range(m.n_layers)
        ]

    def decode_inputs(
        self, batch: int, kv_cache: KVCache, *, seed: int = 0
    ) -> DecodeInputs:
        """Random queries (one per sequence and layer) ready for :meth:`decode_attention` over ``kv_cache``."""
        self._check_cache(kv_cache)
        batch = _args.positive_int("batch", batch)
        generator = torch.Generator(device=self.device).manual_seed(
            _args.non_negative_int("seed", seed)
        )
        m = self.config
        shape = (batch, m.n_heads, 1, m.head_dim)
        dtype = torch_dtype(self.dtype_name)
        queries = [
            torch.randn(shape, generator=generator, device=self.device, dtype=dtype)
            for _ in range(m.n_layers)
        ]
        return DecodeInputs(queries, list(kv_cache))

    @torch.no_grad()
    def decode_attention(self, inputs: DecodeInputs) -> torch.Tensor:
        """The attention half of a decode step: every layer's :meth:`Block.attention_core` over its cache.

        FLOP: ``4 * n_layers * q_dim * batch * cache_tokens``; bytes: the whole cache read once.
        """
        out = inputs.queries[0]
        blocks: list[Block] = list(self.blocks)  # type: ignore[arg-type]
        for block, q, (k, v) in zip(blocks, inputs.queries, inputs.cache):
            out = block.attention_core(q, k, v)
        return out

    @torch.no_grad()
    def decode_linear(self, batch: int | torch.Tensor) -> torch.Tensor:
        """The linear half of a decode step: every weight matmul of every block for ``batch`` tokens.

        ``batch`` is a count (hidden states are drawn at random) or a ``(batch, 1, d_model)`` tensor.
        FLOP: ``batch * helpers.llm.linear_flops_per_token``; bytes: all block weights once.
        """
        if isinstance(batch, torch.Tensor):
            x = batch
        else:
            batch = _args.positive_int("batch", batch)
            x = torch.randn(batch, 1, self.config.d_model).to(
                device=self.device, dtype=self.lm_head.weight.dtype
            )
        blocks: list[Block] = list(self.blocks)  # type: ignore[arg-type]
        for block in blocks:
            x = block.linear_parts(x)
        return x


def cache_nbytes(kv_cache: KVCache) -> int:
    """Bytes held by a KV cache (keys and values of every layer)."""
    return sum(t.numel() * t.element_size() for pair in kv_cache for t in pair)


def cache_tokens(kv_cache: KVCache) -> int:
    """Tokens per sequence held by a KV cache."""
    return int(kv_cache[0][0].shape[2])
