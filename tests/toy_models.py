"""A toy transformer the tests share, small enough to count by hand (see test_llm.py)."""

from __future__ import annotations

from helpers.llm import ModelConfig

TINY = ModelConfig(
    "tiny",
    n_layers=2,
    d_model=8,
    n_heads=2,
    n_kv_heads=1,
    head_dim=4,
    d_ff=16,
    vocab_size=10,
)
"""1,352 parameters (2,704 bf16 bytes), 32 bytes of bf16 KV per token: test_llm.py counts them by hand."""
