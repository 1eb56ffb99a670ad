"""Reuse a cached prefix in a real model (TinyGPT): prefill only the uncached suffix.

A prompt whose first ``h`` tokens already have a KV cache needs only its last
``n - h`` tokens computed. The same idea over a whole trace, request by
request through a tier hierarchy, is :func:`helpers.tiers.replay_prefill`
(it lived here until the torch half and the trace half were split).

* :func:`prefill_with_prefix` runs a :class:`~helpers.tinygpt.TinyGPT` on the
  uncached suffix of a prompt, given the KV cache of its prefix, and returns
  what :meth:`~helpers.tinygpt.TinyGPT.prefill` of the whole prompt returns
  (same logits, same cache, up to rounding). :func:`prefix_of_cache` cuts the
  cache of a prefix out of a longer cache (the keys and values of the first
  ``h`` positions depend on those positions only, so they *are* the prefix's
  cache). Torch is imported lazily.

Units: seconds, tokens, bytes.

References
----------
Qin et al. (2025), "Mooncake: Trading More Storage for Less Computation", FAST'25.
Mattson et al. (1970), "Evaluation techniques for storage hierarchies", IBM Systems Journal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _args
from ._moved import forwarder

if TYPE_CHECKING:  # pragma: no cover
    from .tinygpt import KVCache, TinyGPT


# ---------------------------------------------------------------------------
# A real model: prefill only the uncached suffix
# ---------------------------------------------------------------------------


def _check_model(model: object) -> TinyGPT:
    from .tinygpt import TinyGPT

    if not isinstance(model, TinyGPT):
        raise TypeError(
            f"model must be a helpers.tinygpt.TinyGPT, got {type(model).__name__}"
        )
    return model


def _check_cache(name: str, model: TinyGPT, cache: object) -> KVCache:
    import torch

    n_layers = model.config.n_layers
    if not isinstance(cache, (list, tuple)) or len(cache) != n_layers:
        raise ValueError(
            f"{name} must be a list of {n_layers} (keys, values) pairs, one per layer"
        )
    shape = None
    for i, pair in enumerate(cache):
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or not all(isinstance(t, torch.Tensor) for t in pair)
        ):
            raise TypeError(f"{name}[{i}] must be a (keys, values) pair of tensors")
        k, v = pair
        if k.ndim != 4 or k.shape != v.shape:
            raise ValueError(
                f"{name}[{i}]: keys and values must have the same shape (batch, n_kv_heads, tokens, head_dim)"
            )
        if k.shape[1] != model.config.n_kv_heads or k.shape[3] != model.config.head_dim:
            raise ValueError(
                f"{name}[{i}] has {k.shape[1]} KV heads of {k.shape[3]}; the model has "
                f"{model.config.n_kv_heads} of {model.config.head_dim}"
            )
        if shape is None:
            shape = k.shape
        elif k.shape != shape:
            raise ValueError(
                f"{name}: every layer must hold the same batch and tokens, layer {i} differs"
            )
    return list(cache)


def prefix_of_cache(cache: KVCache, tokens: int) -> KVCache:
    """The KV cache of the first ``tokens`` positions of a longer cache (views, no copy).

    Causal attention makes the keys and values of position ``i`` depend on
    positions ``0..i`` only, so the first ``tokens`` positions of the cache of
    a prompt are exactly the cache of its first ``tokens`` tokens.

    Parameters
    ----------
    cache : list of (keys, values)
        Per layer, tensors of shape ``(batch, n_kv_heads, length, head_dim)``.
    tokens : int
        Positions to keep, ``1 <= tokens <= length``.
    """
    import torch

    tokens = _args.positive_int("tokens", tokens)
    if not isinstance(cache, (list, tuple)) or not cache:
        raise ValueError("cache must be a non-empty list of (keys, values) pairs")
    if not all(
        isinstance(p, (list, tuple))
        and len(p) == 2
        and all(isinstance(t, torch.Tensor) and t.ndim == 4 for t in p)
        for p in cache
    ):
        raise TypeError("cache must hold (keys, values) pairs of 4-d tensors")
    length = int(cache[0][0].shape[2])
    if tokens > length:
        raise ValueError(
            f"tokens ({tokens}) must not exceed the cache's {length} positions"
        )
    return [(k[:, :, :tokens], v[:, :, :tokens]) for k, v in cache]


def prefill_with_prefix(
    model: TinyGPT, suffix: Any, prefix_cache: KVCache
) -> tuple[Any, KVCache]:
    """Prefill the uncached suffix of prompts whose prefix's KV cache is given.

    Runs every block of ``model`` on the ``s`` suffix tokens, at positions
    ``h .. h + s - 1`` (rotary embeddings continue after the prefix), each
    suffix token attending causally to the ``h`` cached positions and to the
    suffix tokens before it. The work is the suffix's weight matmuls and
    ``s * (h + s)`` query-key pairs per head (TinyGPT computes the masked
    rectangle), instead of ``(h + s) ** 2`` for the whole prompt.

    Parameters
    ----------
    model : TinyGPT
    suffix : torch.Tensor of int
        Token ids, shape ``(batch, s)`` with ``s >= 1`` (or ``(s,)`` for one sequence).
    prefix_cache : list of (keys, values)
        The prefix's cache, e.g. from ``model.prefill(prefix)`` or
        :func:`prefix_of_cache`; its batch must match ``suffix``'s.

    Returns
    -------
    logits : torch.Tensor, shape (batch, vocab)
        Logits of the last position, as :meth:`helpers.tinygpt.TinyGPT.prefill` of the whole prompt returns them.
    cache : list of (keys, values)
        The whole prompt's cache (prefix then suffix).
    """
    import torch

    model = _check_model(model)
    if not isinstance(suffix, torch.Tensor):
        raise TypeError(
            f"suffix must be a torch.Tensor of token ids, got {type(suffix).__name__}"
        )
    if suffix.ndim == 1:
        suffix = suffix[None, :]
    if suffix.ndim != 2 or suffix.shape[1] < 1:
        raise ValueError(
            f"suffix must have shape (batch, tokens) with tokens >= 1, got {tuple(suffix.shape)}"
        )
    if suffix.dtype.is_floating_point or suffix.dtype == torch.bool:
        raise TypeError(f"suffix must hold integer token ids, got dtype {suffix.dtype}")
    cache = _check_cache("prefix_cache", model, prefix_cache)
    if cache[0][0].shape[0] != suffix.shape[0]:
        raise ValueError(
            f"prefix_cache holds {cache[0][0].shape[0]} sequences but suffix has {suffix.shape[0]}"
        )
    device = model.device
    with torch.no_grad():
        x = model.embed(suffix.to(device))
        grown = []
        for block, (k, v) in zip(model.blocks, cache):
            x, layer_cache = block(x, (k.to(device), v.to(device)))
            grown.append(layer_cache)
        logits = model.lm_head(model.norm(x[:, -1:, :]))[:, 0, :]
    return logits, grown


__all__ = [
    "prefill_with_prefix",
    "prefix_of_cache",
]

__getattr__ = forwarder(__name__)
