"""Part II's figure and label helpers: names as published, and the decode sweep drawn from given numbers."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from helpers import figures_part2, inference, llm  # noqa: E402


def test_model_label_is_the_published_spelling():
    assert figures_part2.model_label("llama-3-70b") == "Llama-3-70B"
    assert figures_part2.model_label(llm.get_model("deepseek-v3")) == "DeepSeek-V3"
    assert all(figures_part2.model_label(m) for m in llm.models())


def test_decode_batch_sweep_draws_every_series():
    batches = [1, 2, 4]
    steps = [
        inference.decode_step("llama-2-7b", 1000, "a100", batch=b) for b in batches
    ]
    fig = figures_part2.decode_batch_sweep(batches, steps, {1: 0.01}, 4, title="t")
    ax, rate = fig.axes
    assert len(ax.get_lines()) == 5  # bound, memory, compute, measured, fit line
    assert len(rate.get_lines()) == 1  # tokens/s
    assert ax.get_title() == "t"


def test_decode_batch_sweep_rejects_mismatched_lengths():
    step = inference.decode_step("llama-2-7b", 1000, "a100")
    with pytest.raises(ValueError, match="steps"):
        figures_part2.decode_batch_sweep([1, 2], [step], {}, 1, title="t")
