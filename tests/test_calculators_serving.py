"""Tests of :mod:`helpers.calculators`: the calculators of Chapters 6 to 11.

Intent: each calculator renders its chapter's default (the static figure and summary the book
shows), follows its controls, and answers bad input with an "Input error" message rather than a
traceback; its dropdowns list the catalogs, so a GPU or a model added there appears in it. The
harness is :class:`helpers.widgets.Calculator` (``update()`` renders with the controls' values and
returns the summary). The trace calculators run on the bundled 16-request sample.
"""

from __future__ import annotations

import ipywidgets as widgets
import pytest

from helpers import cachesim, hardware, inference, kvcache, llm, traces
from helpers import calculators as cs

ERROR = "**Input error:**"


def _summary(calc, **values):
    for name, value in values.items():
        calc.controls[name].value = value
    return calc.update()


@pytest.fixture(scope="module")
def tiny():
    return traces.load_trace("tiny")


# ---------------------------------------------------------------------------
# Chapter 6
# ---------------------------------------------------------------------------


def test_transformer_inference_default():
    """Llama-3-8B on one H100, batch 32 at 4,096 tokens: 0.9 x 80 GiB less 16.1 GB of weights holds
    114 sequences of 4,097 x 128 KiB; the step is memory-bound; the figure has its twin axis once."""
    calc = cs.transformer_inference()
    summary = calc.update()
    assert "**Largest batch that fits** (10 % reserve): 114." in summary
    assert inference.max_decode_batch("llama-3-8b", 4096, "H100") == 114
    assert "(memory-bound)" in summary and "128 KiB/token" in summary
    calc.update()
    assert len(calc.fig.axes) == 2  # redrawing removes the previous twin axis


def test_transformer_inference_says_what_does_not_fit():
    """Llama-3-70B's 141 GB of weights do not fit one A100; 355 fit on 8 x H100, so 400 is too many."""
    calc = cs.transformer_inference()
    assert "The weights alone (141 GB) do not fit" in _summary(
        calc, model="llama-3-70b", acc="A100 SXM4 80GB"
    )
    summary = _summary(calc, acc="H100 SXM", n_gpus=8, batch=400)
    assert (
        "fits** (10 % reserve): 355." in summary
        and "A batch of 400 does not fit" in summary
    )


def test_transformer_inference_bad_dtype_is_a_message():
    """A T4 has no bf16 peak: the summary names the dtype instead of raising."""
    summary = _summary(cs.transformer_inference(), acc="T4", dtype="bf16")
    assert summary.startswith(ERROR) and "bf16" in summary


def test_dropdowns_enumerate_the_catalogs():
    """Every accelerator, link and model of the catalogs is offered, in catalog order."""
    accelerators = [a.name for a in hardware.accelerators()]
    models = [m.name for m in llm.models()]
    calc = cs.transformer_inference()
    assert list(calc.controls["acc"].options) == accelerators
    assert list(calc.controls["model"].options) == models
    calc = cs.transfer_or_recompute()
    assert list(calc.controls["link"].options) == [
        link.name for link in hardware.links()
    ]
    calc = cs.attention_offload()
    assert (
        list(calc.controls["compute"].options)
        == accelerators
        == list(calc.controls["memory"].options)
    )


# ---------------------------------------------------------------------------
# Chapter 7
# ---------------------------------------------------------------------------


def test_transfer_or_recompute_default():
    """Llama-2-7B, 4,096 tokens, one A100 at 70 % MFU against one 100 GbE NIC: fetching 2.15 GB at
    12.5 GB/s (172 ms) beats recomputing (263 ms)."""
    summary = cs.transfer_or_recompute().update()
    result = kvcache.breakeven("llama-2-7b", 4096, "A100", "100gbe", mfu=0.7)
    assert result.verdict == "transfer"
    assert summary.startswith(
        "**Transfer** is 1.5x faster for a 4,096-token prefix (bf16)"
    )
    assert "fetch 172 ms" in summary and "2.15 GB of KV cache" in summary


def test_transfer_or_recompute_window_at_peak():
    """One H100 at peak behind 100 GbE: recomputing wins only between 95 and 108,895 tokens
    (Chapter 7's figure), and fetching for good from 108,896."""
    summary = _summary(cs.transfer_or_recompute(), acc="H100 SXM", mfu=1.0)
    assert "recomputing is faster for prefixes of 95 to 108,895 tokens" in summary
    assert "fetching wins for good from 108,896 tokens" in summary


def test_transfer_or_recompute_uses_the_devices_16_bit_format():
    """The default T4 case of a reader: no bf16, so the calculator recomputes in fp16, no error."""
    summary = _summary(cs.transfer_or_recompute(), acc="T4")
    assert not summary.startswith(ERROR) and "(fp16)" in summary


def test_transfer_or_recompute_notes_weights_that_do_not_fit():
    """Llama-3-70B's weights do not fit one L4: the summary says the recompute time is hypothetical."""
    summary = _summary(cs.transfer_or_recompute(), model="llama-3-70b", acc="L4")
    assert "do not fit on these GPUs" in summary


def test_transfer_or_recompute_bad_prefix_is_a_message():
    """A prefix of 0 tokens names the parameter."""
    calc = cs.transfer_or_recompute()
    calc.controls["tokens"] = widgets.IntText(value=0)
    summary = calc.update()
    assert summary.startswith(ERROR) and "tokens" in summary


# ---------------------------------------------------------------------------
# Chapter 9
# ---------------------------------------------------------------------------


def test_kv_pool_default(tiny):
    """The pool's hit rate and ceiling are the trace's curve at 2 TB of Llama-3-70B tokens and at
    infinity; 512-token blocks."""
    calc = cs.kv_pool({"tiny": tiny})
    summary = calc.update()
    capacity = 2e12 / llm.kv_cache_bytes_per_token("llama-3-70b")
    hit, ceiling = cachesim.hit_rate_curve(tiny, [capacity, float("inf")])
    assert (
        f"**Hit rate {hit:.1%}**" in summary and f"(ceiling {ceiling:.1%})" in summary
    )
    assert "blocks of 512" in summary and f"{capacity / 1e6:,.2f} M tokens" in summary
    assert list(calc.controls["block_tokens"].options) == [512, 1024, 2048, 4096]


def test_kv_pool_fp8_holds_twice_the_tokens(tiny):
    """An fp8 cache is half the bytes per token: the same pool holds twice the tokens."""
    calc = cs.kv_pool({"tiny": tiny})
    capacity = 2e12 / llm.kv_cache_bytes_per_token("llama-3-70b", dtype="fp8")
    assert f"{capacity / 1e6:,.2f} M tokens" in _summary(
        calc, kv_dtype="fp8", block_tokens=1024
    )
    assert "blocks of 1024" in calc.summary


def test_kv_pool_bad_inputs_are_messages(tiny):
    """An empty pool names the pool size; a trace that is not loaded names the trace."""
    summary = _summary(cs.kv_pool({"tiny": tiny}), pool_tb=0.0)
    assert summary.startswith(ERROR) and "pool size" in summary
    fig_ax = cs.kv_pool({"tiny": tiny}).axes
    with pytest.raises(KeyError, match="trace"):
        cs.render_kv_pool(
            fig_ax,
            "llama-3-70b",
            "bf16",
            "conversation",
            2.0,
            512,
            traces={"tiny": tiny},
        )


# ---------------------------------------------------------------------------
# Chapter 10
# ---------------------------------------------------------------------------


def test_attention_offload_default():
    """The baseline's batch is the book's one largest batch, 355; eight H20s hold 552 sequences.

    Eight H20s hold no weights (attention only): 0.9 x 8 x 96 GiB = 742.17 GB for KV caches of
    4,097 tokens x 327,680 B (Llama-3-70B: 2 x 80 layers x 8 KV heads x 128 x 2 bytes)
    = 1.3425 GB each: 742.17 / 1.3425 = 552.8, so 552 sequences."""
    summary = cs.attention_offload().update()
    assert "**Baseline** 8 × H100 SXM: batch 355" in summary
    assert "8 × H20: batch 552" in summary
    assert (
        inference.max_decode_batch(
            "llama-3-70b", 4096, "H20", n_gpus=8, holds_weights=False
        )
        == 552
    )


def test_attention_offload_says_when_it_cannot_win():
    """32 L4s: attention at their aggregate bandwidth is the slowest part; a negative break-even price."""
    summary = _summary(cs.attention_offload(), memory="L4", n_memory=32)
    assert "cannot win even with free memory devices" in summary


@pytest.mark.parametrize(
    "values, match",
    [
        ({"n_compute": 1}, "n_compute"),
        ({"memory": "L4", "n_memory": 1, "context": 100_000}, "n_memory"),
        ({"price_compute": 0.0}, "price"),
    ],
)
def test_attention_offload_bad_inputs_are_messages(values, match):
    """Weights that do not fit, a cache that does not fit, and a free compute GPU are named."""
    summary = _summary(cs.attention_offload(), **values)
    assert summary.startswith(ERROR) and match in summary


# ---------------------------------------------------------------------------
# Chapter 11
# ---------------------------------------------------------------------------


def test_kv_tiers_default(tiny):
    """The bundled trace through Chapter 11's hierarchy: four tiers and the miss, a verdict per chunk."""
    sd = cachesim.stack_distances(tiny)
    calc = cs.kv_tiers(sd, 2048)
    summary = calc.update()
    assert summary.startswith("Trace tiny, share of prompt tokens each tier serves:")
    assert "| tier | HBM | host DRAM | remote pool | local SSD | miss |" in summary
    assert "Prompt of 2,048 tokens" in summary and "recomputing everything" in summary
    assert calc.controls["prompt_tokens"].value == 2048


def test_kv_tiers_follows_its_controls(tiny):
    """With 1 GB of HBM the bundled trace spills into host DRAM. At the default host bandwidth,
    Mooncake's 128 GB/s, the serial prefill takes 12 ms and layer-wise prefetch hides the fetch
    (10 ms); at eight PCIe 5.0 links' line rate (504 GB/s) the serial prefill is 10 ms, at eight
    100 GbE NICs' 100 GB/s 13 ms, while prefetch still hides it."""
    calc = cs.kv_tiers(cachesim.stack_distances(tiny), 2048)
    assert calc.controls["dram_gbs"].value == 128
    small_hbm = _summary(calc, hbm_gb=1.0)
    assert "| hit share | 27.3% | 46.0% |" in small_hbm
    assert "**12 ms** serial, **10 ms** with layer-wise prefetch" in small_hbm
    line_rate = _summary(calc, dram_gbs=504.0)
    assert "**10 ms** serial, **10 ms** with layer-wise prefetch" in line_rate
    slow_link = _summary(calc, dram_gbs=100.0)
    assert "**13 ms** serial, **10 ms** with layer-wise prefetch" in slow_link


def test_kv_tiers_capacities_must_grow(tiny):
    """DRAM no larger than HBM is rejected with a message naming the tiers."""
    summary = _summary(
        cs.kv_tiers(cachesim.stack_distances(tiny), 2048), hbm_gb=1000.0, dram_tb=0.5
    )
    assert summary.startswith(ERROR) and "dram_bytes" in summary


def test_plain_log_ticks_labels_plain_numbers():
    """Log axes show 4, 6, 10, 20 rather than powers of ten."""
    calc = cs.transformer_inference()
    calc.update()
    formatter = calc.axes.yaxis.get_major_formatter()
    assert formatter(20.0, 0) == "20"


def test_transformer_inference_sets_published_steps_beside_the_bound():
    """Llama-2-7B fp16 on one A100 at LMDeploy's mean context (128 + 2,048 // 2 = 1,152 tokens):
    the four published steps (batch 1, 16, 32, 64) are drawn, and batch 16's 15 ms is quoted
    with its source (lmdeploy_a100_fp16). Where nothing is published, nothing is drawn or quoted."""
    calc = cs.transformer_inference()
    summary = _summary(
        calc,
        model="llama-2-7b",
        acc="A100 SXM4 80GB",
        dtype="fp16",
        context=1152,
        batch=16,
    )
    assert "**Published** at batch 16: 15 ms per step" in summary
    assert "128 -> 2,048 tokens" in summary and "lmdeploy" in summary.lower()
    squares = [line for line in calc.axes.lines if line.get_marker() == "s"]
    assert len(squares) == 1
    assert {1, 16, 32, 64} <= set(squares[0].get_xdata())
    assert "**Published**" not in _summary(calc, batch=17)
    bare = cs.transformer_inference()
    assert "**Published**" not in bare.update()
    assert not [line for line in bare.axes.lines if line.get_marker() == "s"]
