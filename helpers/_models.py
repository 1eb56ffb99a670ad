"""The model catalog of :mod:`helpers.llm`: one published ``config.json`` per model.

The shapes (:class:`ModelConfig`, :class:`LatentAttention`,
:class:`MixtureOfExperts`) and the catalog ``_MODELS`` live here, apart from
the arithmetic that prices them (:mod:`helpers.llm`), as the accelerator
catalog (:mod:`helpers._accelerators`) lives apart from :mod:`helpers.hardware`.
:mod:`helpers.llm` re-exports all of them; look models up with
:func:`helpers.llm.get_model` and list them with :func:`helpers.llm.models`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as _field
from types import MappingProxyType

from . import _args


@dataclass(frozen=True)
class LatentAttention:
    """Multi-head latent attention (MLA) shapes, as in DeepSeek-V3's ``config.json``.

    Attributes
    ----------
    kv_lora_rank : int
        Width of the compressed KV latent ``c_KV`` cached per token and layer.
    qk_rope_head_dim : int
        Width of the rotary key part, shared by all heads and cached beside the latent.
    qk_nope_head_dim : int
        Per-head width of the non-rotary query/key part (decompressed from the latent).
    v_head_dim : int
        Per-head width of the values (decompressed from the latent).
    q_lora_rank : int
        Width of the compressed query (0: queries projected directly from ``d_model``).
    """

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int = 0

    def __post_init__(self) -> None:
        for name in (
            "kv_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "v_head_dim",
        ):
            _args.positive_int(name, getattr(self, name))
        _args.non_negative_int("q_lora_rank", self.q_lora_rank)


@dataclass(frozen=True)
class MixtureOfExperts:
    """Mixture-of-experts MLP shapes, as in DeepSeek-V3's ``config.json``.

    Attributes
    ----------
    n_routed : int
        Routed experts per MoE layer (``n_routed_experts``).
    top_k : int
        Routed experts each token uses (``num_experts_per_tok``).
    d_ff_expert : int
        Hidden width of one expert's gated MLP (``moe_intermediate_size``).
    n_shared : int
        Experts every token uses (``n_shared_experts``).
    first_dense_layers : int
        Leading layers with a dense MLP of width ``ModelConfig.d_ff``
        instead (``first_k_dense_replace``).
    n_groups, topk_groups : int
        Group-limited routing (``n_group``, ``topk_group``): the routed
        experts form ``n_groups`` equal groups and each token picks its
        ``top_k`` experts inside the ``topk_groups`` best groups. DeepSeek-V3
        uses 8 and 4, so that a token's hidden state reaches at most 4 of the
        servers holding the groups (V3 report, arXiv:2412.19437, sections
        2.1.2 and 3.2.2). ``1, 1`` (the default): no limit.
    """

    n_routed: int
    top_k: int
    d_ff_expert: int
    n_shared: int = 0
    first_dense_layers: int = 0
    n_groups: int = 1
    topk_groups: int = 1

    def __post_init__(self) -> None:
        for name in ("n_routed", "top_k", "d_ff_expert"):
            _args.positive_int(name, getattr(self, name))
        _args.non_negative_int("n_shared", self.n_shared)
        _args.non_negative_int("first_dense_layers", self.first_dense_layers)
        if self.top_k > self.n_routed:
            raise ValueError(
                f"top_k ({self.top_k}) must not exceed n_routed ({self.n_routed})"
            )
        _args.positive_int("n_groups", self.n_groups)
        _args.positive_int("topk_groups", self.topk_groups)
        if self.n_routed % self.n_groups:
            raise ValueError(
                f"n_groups ({self.n_groups}) must divide n_routed ({self.n_routed})"
            )
        if self.topk_groups > self.n_groups:
            raise ValueError(
                f"topk_groups ({self.topk_groups}) must not exceed n_groups ({self.n_groups})"
            )
        if self.top_k > self.topk_groups * self.n_routed // self.n_groups:
            raise ValueError(
                f"top_k ({self.top_k}) must fit in topk_groups ({self.topk_groups}) groups"
            )


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
        which :func:`param_count` should round to; for a mixture of experts
        whose name gives its *active* size (Llama-4-Maverick-17B-128E), the
        published total; ``None`` if it has none.
    mla : LatentAttention or None
        Multi-head latent attention instead of MHA/GQA (``head_dim`` is then
        the query-key head width, ``qk_nope_head_dim + qk_rope_head_dim``).
    moe : MixtureOfExperts or None
        Mixture-of-experts MLP in all but ``moe.first_dense_layers`` layers.
    display_name : str
        How the book prints the model ("Llama-2-7B"; ``name`` is the look-up
        key, "llama-2-7b"). Defaults to ``name``.
    notes : str
        What the published configuration holds that these fields cannot
        represent (sliding-window or chunked attention layers, interleaved
        MoE layers, biases), and what the arithmetic assumes instead.
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
    mla: LatentAttention | None = _field(default=None, kw_only=True)
    moe: MixtureOfExperts | None = _field(default=None, kw_only=True)
    display_name: str = _field(default="", kw_only=True)
    notes: str = _field(default="", kw_only=True)

    def __post_init__(self) -> None:
        _args.name("name", self.name)
        for text in ("display_name", "notes"):
            if not isinstance(getattr(self, text), str):
                raise TypeError(f"{text} must be a str, got {getattr(self, text)!r}")
        if not self.display_name.strip():
            object.__setattr__(self, "display_name", self.name)
        _args.boolean("gated_mlp", self.gated_mlp)
        _args.boolean("tied_embeddings", self.tied_embeddings)
        if self.nominal_params is not None:
            _args.positive("nominal_params", self.nominal_params)
        for field in (
            "n_layers",
            "d_model",
            "n_heads",
            "n_kv_heads",
            "head_dim",
            "d_ff",
            "vocab_size",
        ):
            _args.positive_int(field, getattr(self, field))
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})"
            )
        if self.mla is not None and not isinstance(self.mla, LatentAttention):
            raise TypeError(f"mla must be a LatentAttention, got {self.mla!r}")
        if self.moe is not None:
            if not isinstance(self.moe, MixtureOfExperts):
                raise TypeError(f"moe must be a MixtureOfExperts, got {self.moe!r}")
            if self.moe.first_dense_layers > self.n_layers:
                raise ValueError(
                    f"moe.first_dense_layers ({self.moe.first_dense_layers}) exceeds n_layers ({self.n_layers})"
                )

    @property
    def attention_kind(self) -> str:
        """``"MHA"``, ``"GQA"``, ``"MQA"`` or ``"MLA"``."""
        if self.mla is not None:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def kv_elements_per_layer(self) -> int:
        """Elements of KV cache one token adds in one layer.

        ``2 * kv_dim`` (a key and a value per KV head); with MLA, the latent
        and the rotary key, ``kv_lora_rank + qk_rope_head_dim`` (576 for
        DeepSeek-V3, against 2,048 for Llama-3-70B's GQA-8).
        """
        if self.mla is not None:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return 2 * self.kv_dim

    def attention_flops_per_pair(self, *, absorbed: bool = False) -> float:
        """FLOP of one query-key pair in one layer: its score and its weighted value.

        MHA/GQA: ``4 * q_dim`` (2 FLOP per multiply-accumulate, every query head).
        MLA computes it in one of two ways:

        * materialised (``absorbed=False``, how prefills run): keys and values
          are decompressed per head, ``2 h (qk_nope + qk_rope) + 2 h v_head``;
        * absorbed (``absorbed=True``, how decode kernels such as FlashMLA
          run): the up-projections are folded into the query and the output,
          so each head scores the cached latent and rotary key directly and
          weights the latent, ``2 h (kv_lora + qk_rope) + 2 h kv_lora``
          (278,528 for DeepSeek-V3). The folded projections are the same
          weights, so the linear FLOP per token do not change.

        ``absorbed`` has no effect on MHA/GQA.
        """
        _args.boolean("absorbed", absorbed)
        a = self.mla
        if a is None:
            return 4.0 * self.q_dim
        h = self.n_heads
        if absorbed:
            return (
                2.0 * h * (a.kv_lora_rank + a.qk_rope_head_dim)
                + 2.0 * h * a.kv_lora_rank
            )
        return (
            2.0 * h * (a.qk_nope_head_dim + a.qk_rope_head_dim) + 2.0 * h * a.v_head_dim
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
        With MLA: the query down- and up-projections (or one ``d x h*qk``
        matrix when ``q_lora_rank`` is 0), the KV down-projection to
        ``kv_lora + qk_rope``, the up-projection from the latent to every
        head's non-rotary key and value, and ``W_O`` (``h * v_head x d``).
        """
        a = self.mla
        d = self.d_model
        if a is None:
            return 2 * d * self.q_dim + 2 * d * self.kv_dim
        h = self.n_heads
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        q = d * h * qk if a.q_lora_rank == 0 else a.q_lora_rank * (d + h * qk)
        kv = d * (a.kv_lora_rank + a.qk_rope_head_dim)
        kv += a.kv_lora_rank * h * (a.qk_nope_head_dim + a.v_head_dim)
        return q + kv + h * a.v_head_dim * d

    def mlp_weights(self) -> int:
        """Weights of one dense MLP: ``3 * d * d_ff`` if gated (gate, up, down), else ``2 * d * d_ff``."""
        return (3 if self.gated_mlp else 2) * self.d_model * self.d_ff

    def expert_weights(self) -> int:
        """Weights of one expert of a MoE layer (a gated MLP of width ``moe.d_ff_expert``); 0 without MoE."""
        if self.moe is None:
            return 0
        return (3 if self.gated_mlp else 2) * self.d_model * self.moe.d_ff_expert

    @property
    def n_moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (0 for a dense model)."""
        return 0 if self.moe is None else self.n_layers - self.moe.first_dense_layers

    def _extra_norms(self) -> int:
        """Norm weights inside one block besides its two RMSNorms (MLA's latent norms)."""
        a = self.mla
        return 0 if a is None else a.kv_lora_rank + a.q_lora_rank

    def _router_weights(self) -> int:
        """One MoE layer's router: a ``d x n_routed`` matrix and a bias per expert."""
        return 0 if self.moe is None else (self.d_model + 1) * self.moe.n_routed

    def layer_weights(self) -> int:
        """Weights of one transformer block's matmuls (attention + MLP), excluding norms.

        Dense models only: the blocks of a MoE model differ (see
        :meth:`block_weights` and :meth:`active_block_weights`).
        """
        if self.moe is not None:
            raise ValueError(
                f"{self.name} is a mixture of experts: its blocks differ; use block_weights() "
                "or active_block_weights()"
            )
        return self.attention_weights() + self.mlp_weights()

    def _blocks(self, experts_per_moe_layer: float) -> float:
        """Matmul weights of all blocks when each MoE layer holds ``experts_per_moe_layer`` experts."""
        if self.moe is None:
            return float(
                self.n_layers * (self.attention_weights() + self.mlp_weights())
            )
        dense = self.moe.first_dense_layers
        moe_layer = (
            self._router_weights() + experts_per_moe_layer * self.expert_weights()
        )
        return (
            self.n_layers * self.attention_weights()
            + dense * self.mlp_weights()
            + self.n_moe_layers * moe_layer
        )

    def block_weights(self) -> int:
        """Matmul weights of all blocks (every expert counted), excluding norms."""
        n = 0 if self.moe is None else self.moe.n_routed + self.moe.n_shared
        return int(self._blocks(n))

    def active_block_weights(self) -> int:
        """Matmul weights of all blocks that one token uses: ``top_k + n_shared`` experts per MoE layer."""
        n = 0 if self.moe is None else self.moe.top_k + self.moe.n_shared
        return int(self._blocks(n))


def _hf(repo: str) -> str:
    return f"https://huggingface.co/{repo}/blob/main/config.json"


_GPT_OSS_NOTES = (
    "Every layer is MoE (experts of width 2,880, 4 per token, no shared expert; the "
    "experts ship in MXFP4, the rest in bf16: weight_dtype prices all weights in one "
    "dtype). Not represented: layer_types alternates sliding-window attention "
    "(sliding_window 128) and full attention, so half the layers keep only 128 "
    "tokens of KV and attend to at most 128 keys, and the catalog prices every layer "
    "as full attention (over-counting KV bytes and attention FLOP by up to 2x at long "
    "context); the biases of attention, router and experts, and the per-head "
    "attention sinks (all under 0.1 % of the parameters)."
)

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
                display_name="Llama-2-7B",
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
                display_name="Llama-2-13B",
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
                display_name="Llama-2-70B",
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
                display_name="Llama-3-8B",
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
                display_name="Llama-3-70B",
            ),
            ModelConfig(
                "deepseek-v3",
                61,
                7168,
                128,
                128,
                192,  # qk_nope_head_dim + qk_rope_head_dim
                18432,  # the dense MLP of the first three layers
                129280,
                source=_hf("deepseek-ai/DeepSeek-V3")
                + "; DeepSeek-AI (2024), DeepSeek-V3 Technical Report, arXiv:2412.19437",
                nominal_params=671e9,
                display_name="DeepSeek-V3",
                mla=LatentAttention(
                    kv_lora_rank=512,
                    qk_rope_head_dim=64,
                    qk_nope_head_dim=128,
                    v_head_dim=128,
                    q_lora_rank=1536,
                ),
                moe=MixtureOfExperts(
                    n_routed=256,
                    top_k=8,
                    d_ff_expert=2048,
                    n_shared=1,
                    first_dense_layers=3,
                    n_groups=8,
                    topk_groups=4,
                ),
            ),
            ModelConfig(
                "llama-3.1-405b",
                126,
                16384,
                128,
                8,
                128,
                53248,
                128256,
                source=_hf("meta-llama/Llama-3.1-405B"),
                nominal_params=405e9,
                display_name="Llama-3.1-405B",
            ),
            ModelConfig(
                "qwen3-235b-a22b",
                94,
                4096,
                64,
                4,
                128,  # head_dim: 64 heads x 128 = 8,192 query width on a 4,096-wide model
                12288,  # intermediate_size; unused: every layer's MLP is a MoE
                151936,
                source=_hf("Qwen/Qwen3-235B-A22B"),
                nominal_params=235e9,
                display_name="Qwen3-235B-A22B",
                moe=MixtureOfExperts(n_routed=128, top_k=8, d_ff_expert=1536),
                notes=(
                    "Every layer is MoE (decoder_sparse_step 1, no mlp_only_layers), "
                    "128 experts, 8 per token, no shared expert. Not represented: "
                    "the per-head RMSNorm of queries and keys (q_norm, k_norm: 256 "
                    "weights a layer) and the router's missing bias (counted as one "
                    "per expert): under 0.01 % of the parameters."
                ),
            ),
            ModelConfig(
                "llama-4-maverick-17b-128e",
                48,
                5120,
                40,
                8,
                128,
                16384,  # intermediate_size_mlp: the dense layers' MLP
                202048,
                source=_hf("meta-llama/Llama-4-Maverick-17B-128E") + " (text_config)",
                nominal_params=400e9,
                display_name="Llama-4-Maverick-17B-128E",
                moe=MixtureOfExperts(
                    n_routed=128,
                    top_k=1,
                    d_ff_expert=8192,
                    n_shared=1,
                    first_dense_layers=24,
                ),
                notes=(
                    "17 B active of 400 B total (Meta's model card). "
                    "interleave_moe_layer_step 2: every second layer is MoE (128 "
                    "routed experts of width 8,192, one per token, plus one shared), "
                    "the other 24 dense (width 16,384); the catalog counts the 24 "
                    "dense layers as first_dense_layers, which is right for every "
                    "count and price (they depend on how many, not where). Not "
                    "represented: chunked local attention (attention_chunk_size "
                    "8,192) in three of every four layers, so beyond 8,192 tokens "
                    "the model over-counts their attention FLOP and KV bytes; the "
                    "vision encoder."
                ),
            ),
            ModelConfig(
                "gpt-oss-120b",
                36,
                2880,
                64,
                8,
                64,  # head_dim: 64 heads x 64 = 4,096 query width on a 2,880-wide model
                2880,  # intermediate_size = each expert's width; no dense layer
                201088,
                source=_hf("openai/gpt-oss-120b"),
                nominal_params=120e9,
                display_name="gpt-oss-120b",
                moe=MixtureOfExperts(n_routed=128, top_k=4, d_ff_expert=2880),
                notes=_GPT_OSS_NOTES
                + " OpenAI's model card: 116.8 B total, 5.1 B active.",
            ),
            ModelConfig(
                "gpt-oss-20b",
                24,
                2880,
                64,
                8,
                64,
                2880,
                201088,
                source=_hf("openai/gpt-oss-20b"),
                nominal_params=20e9,
                display_name="gpt-oss-20b",
                moe=MixtureOfExperts(n_routed=32, top_k=4, d_ff_expert=2880),
                notes=_GPT_OSS_NOTES
                + " OpenAI's model card: 20.9 B total, 3.6 B active.",
            ),
        )
    }
)
