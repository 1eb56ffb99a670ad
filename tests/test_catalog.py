"""The catalogs are the one place to add a GPU or a model.

``helpers/__init__.py`` promises: adding a GPU is one entry in
``hardware._ACCELERATORS`` (its ``torch_names`` let the labs recognise it);
adding a model is one entry in ``llm._MODELS``; every table, dropdown and
chapter enumerates those catalogs. These tests add a made-up accelerator and
a made-up model and follow them through every code path that enumerates a
catalog, and check that the real entries are complete (a published size for
every model; torch device names for every accelerator are in
tests/test_hardware.py).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from types import MappingProxyType

import pytest

import helpers
from helpers import dispatch, hardware, inference, labtools, llm
from helpers.hardware import GIB, TERA

FAKE_ACC = hardware.Accelerator(
    name="Test GPU X1",
    peak_flops={"fp32": 50 * TERA, "fp16": 400 * TERA, "bf16": 400 * TERA},
    memory_bandwidth=2e12,
    memory_capacity=64 * GIB,
    source="https://example.org/x1-datasheet",
    notes="A made-up accelerator: the catalog test adds it to check that one entry is all a new GPU needs.",
    aliases=("x1",),
    torch_names=(r"\bx1\b",),
    generation="Xeno",
)
FAKE_MODEL = llm.ModelConfig(
    "test-model-2.7b",
    24,
    3072,
    24,
    8,
    128,
    8192,
    50_000,
    source="https://huggingface.co/example/test-model-2.7b/blob/main/config.json",
    nominal_params=2.7e9,
)
"""24 layers, d 3072, 24 heads and 8 KV heads of 128, SwiGLU 8192, vocabulary 50,000.

Parameters by hand: per layer q and o 2 * 3072^2 = 18,874,368, k and v 2 * 3072 * 1024 = 6,291,456,
MLP 3 * 3072 * 8192 = 75,497,472, norms 2 * 3072 = 6,144 -> 100,669,440; 24 layers 2,416,066,560;
embeddings and lm_head 2 * 50,000 * 3072 = 307,200,000; final norm 3,072 -> 2,723,269,632 (2.7 B).
"""

TORCH_FREE = [
    m.name.removeprefix("helpers.")
    for m in pkgutil.walk_packages(helpers.__path__, "helpers.")
    if m.name != "helpers.tinygpt"
]
"""Every helpers module that imports without torch (tinygpt builds torch modules at import)."""


@pytest.fixture
def extended_catalog(monkeypatch):
    """The catalogs with FAKE_ACC and FAKE_MODEL appended, built the way the modules build them."""
    accelerators = hardware._ACCELERATORS + (FAKE_ACC,)
    monkeypatch.setattr(hardware, "_ACCELERATORS", accelerators)
    monkeypatch.setattr(
        hardware, "_ACC_INDEX", hardware._index(accelerators, "accelerator")
    )
    monkeypatch.setattr(
        llm, "_MODELS", MappingProxyType({**llm._MODELS, FAKE_MODEL.name: FAKE_MODEL})
    )


def test_fake_model_counts_by_hand():
    """The made-up model's parameters are the hand count in FAKE_MODEL's docstring."""
    assert llm.param_count(FAKE_MODEL) == 2_723_269_632


def test_a_new_accelerator_reaches_every_enumeration(extended_catalog):
    """One catalog entry makes the GPU known to look-ups, torch names, the appendix tables and the labs.

    Its appendix row: 400 TFLOP/s bf16 over 2 TB/s is a ridge of 200 FLOP/byte; 64 GiB of memory.
    """
    assert hardware.accelerators()[-1] is FAKE_ACC
    assert (
        hardware.get_accelerator("X1")
        is hardware.get_accelerator("test gpu x1")
        is FAKE_ACC
    )
    with pytest.raises(
        KeyError, match="Test GPU X1"
    ):  # the error lists the choices, the new one included
        hardware.get_accelerator("no such gpu")
    assert hardware.from_device_name("NVIDIA X1") is FAKE_ACC
    text = hardware.catalog_markdown()
    rows = [line for line in text.splitlines() if line.startswith("| Test GPU X1 |")]
    assert len(rows) == 3
    assert (
        "| 400.0 |" in rows[0]
        and "| 2,000 | 64 | 200 |" in rows[1]
        and FAKE_ACC.source in rows[1]
    )
    assert rows[2] == "| Test GPU X1 | Xeno | not published | not published |"
    assert f"- **Test GPU X1:** {FAKE_ACC.notes}" in hardware.catalog_notes_markdown()
    assert labtools.rate_bounds("NVIDIA X1", "bf16") == pytest.approx(
        (1.05 * 400e12, 1.05 * 2e12)
    )
    # a generation nobody has measured prices its kernels with the measured reference floor
    assert dispatch.kernel_floor("X1") == dispatch.KERNEL_FLOOR_S["Ampere"]


def test_a_new_model_reaches_every_enumeration(extended_catalog):
    """One catalog entry makes the model known by name and servable on every accelerator, the new one too."""
    assert llm.models()[-1] is FAKE_MODEL
    assert llm.get_model("Test Model 2.7B") is FAKE_MODEL
    with pytest.raises(KeyError, match="test-model-2.7b"):
        llm.get_model("no such model")
    for acc in hardware.accelerators():
        dtype = acc.half_dtype
        assert (
            inference.decode_step_time(FAKE_MODEL.name, 1024, acc.name, dtype=dtype) > 0
        )
        assert (
            inference.max_decode_batch(FAKE_MODEL.name, 1024, acc.name, dtype=dtype)
            >= 0
        )
    for model in llm.models():
        assert inference.prefill_time(model.name, 1024, "X1") > 0
        assert inference.max_decode_batch(model.name, 1024, "X1", n_gpus=8) >= 0


@pytest.mark.parametrize("module_name", TORCH_FREE)
def test_every_function_that_lists_a_catalog_lists_the_new_entries(
    extended_catalog, module_name
):
    """Any argument-free helper whose code enumerates ``accelerators()`` or ``models()`` (a dropdown's
    choices, a table) returns the new GPU and model too: nothing keeps a second list of names."""
    module = importlib.import_module(f"helpers.{module_name}")
    for name, func in inspect.getmembers(module, inspect.isfunction):
        if func.__module__ != module.__name__ or name == "main":
            continue  # a command's entry point reads sys.argv, not the catalog alone
        source = inspect.getsource(func)
        lists_accelerators = (
            re.search(r"\baccelerators\(\)", source)
            and "def accelerators" not in source
        )
        lists_models = re.search(r"\bmodels\(\)", source) and "def models" not in source
        required = [
            p
            for p in inspect.signature(func).parameters.values()
            if p.default is p.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        if (lists_accelerators or lists_models) and not required:
            shown = str(func())
            if lists_accelerators:
                assert FAKE_ACC.name in shown, (
                    f"{module_name}.{name} misses a new accelerator"
                )
            if lists_models:
                assert FAKE_MODEL.name in shown, (
                    f"{module_name}.{name} misses a new model"
                )


def test_every_catalog_model_has_its_nominal_size():
    """Each model names its size ("llama-2-7b": 7e9) in nominal_params, and param_count is within 10 % of it.

    Published counts: Llama-2-7B 6.74 B (3.7 % under 7), 13B 13.02 B, 70B 68.98 B (1.5 % under),
    Llama-3-8B 8.03 B, Llama-3-70B 70.55 B (tests/test_llm.py derives each by hand).
    """
    for model in llm.models():
        assert model.nominal_params is not None, model.name
        # the size a name ends with ("-405b"), or the total before an active size ("-235b-a22b")
        size = re.search(r"-(\d+(?:\.\d+)?)b(?:-a\d+b)?$", model.name)
        assert size is None or float(size.group(1)) * 1e9 == model.nominal_params, (
            model.name
        )
        assert abs(llm.param_count(model) / model.nominal_params - 1) < 0.10, model.name


def test_every_catalog_accelerator_has_torch_names_and_a_half_dtype():
    """Every GPU can be recognised by the labs (torch_names) and has a 16-bit peak for the serving chapters."""
    for acc in hardware.accelerators():
        assert acc.torch_names, acc.name
        for pattern in acc.torch_names:
            re.compile(pattern)
        assert acc.half_dtype in ("bf16", "fp16"), acc.name


PUBLISHED_SIZES = {
    # name: (total, active) in parameters, from each model's card
    "llama-3.1-405b": (405e9, None),  # Meta: 405 B
    "qwen3-235b-a22b": (235e9, 22e9),  # Qwen: 235 B total, 22 B activated
    "llama-4-maverick-17b-128e": (400e9, 17e9),  # Meta: 17 B active, 400 B total
    "gpt-oss-120b": (116.8e9, 5.1e9),  # OpenAI model card: 116.8 B, 5.1 B active
    "gpt-oss-20b": (20.9e9, 3.6e9),  # OpenAI model card: 20.9 B, 3.6 B active
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_SIZES))
def test_new_models_count_to_their_published_sizes(name):
    """The config.json shapes reproduce each card's total (and active) size within 5 %:
    a wrong width, layer count or expert count would miss by far more."""
    total, active = PUBLISHED_SIZES[name]
    model = llm.get_model(name)
    assert llm.param_count(model) == pytest.approx(total, rel=0.05)
    if active is not None:
        assert llm.active_param_count(model) == pytest.approx(active, rel=0.05)
        assert model.moe is not None and model.notes


def test_every_model_has_a_display_name_spelled_as_published():
    """R4-9: tables print "Llama-2-7B", not the look-up key "llama-2-7b"; the key is the
    display name lower-cased, so a reader can type what the table shows."""
    for model in llm.models():
        assert model.display_name != model.name or model.name.startswith("gpt-oss")
        assert model.display_name.lower() == model.name
        assert llm.get_model(model.display_name) is model
    assert FAKE_MODEL.display_name == FAKE_MODEL.name  # defaults to the key
    with pytest.raises(TypeError, match="display_name"):
        llm.ModelConfig("x", 1, 8, 1, 1, 8, 8, 8, display_name=3)  # type: ignore[arg-type]


def test_models_the_catalog_cannot_fully_represent_say_so():
    """gpt-oss alternates sliding-window and full attention; Llama 4 chunks its attention and
    interleaves MoE layers: their notes say what the arithmetic assumes instead."""
    for name in ("gpt-oss-120b", "gpt-oss-20b"):
        assert "sliding" in llm.get_model(name).notes
    maverick = llm.get_model("llama-4-maverick-17b-128e")
    assert "chunk" in maverick.notes and "interleave" in maverick.notes
    assert maverick.n_moe_layers == 24
