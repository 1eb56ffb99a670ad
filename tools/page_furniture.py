"""Page furniture of the chapter notebooks: objectives box, drawn diagrams, hidden plumbing, prose without helper names.

usage: python tools/page_furniture.py [--check] [NOTEBOOK...]   (default: chapters/0*.ipynb)

Idempotent, and touches markdown cells and code cells' ``tags`` only (never code or outputs), so it
can be re-run after a merge that re-executed a notebook:

* inserts an "In this chapter" objectives box right after the title cell (once);
* inserts each chapter's drawn diagram (``chapters/figures/*.svg``, PNG beside it for the PDF) as a
  MyST ``{figure}`` with alt text and a caption, at a named place in the prose (once);
* tags ``hide-input`` on every code cell whose work is formatting prose or tables (it calls
  ``Markdown(f"...")``, ``markdown_table(`` or ``rows.append(``);
* rewrites sentences that named helper functions in the prose (the code cells show the calls).

A rewrite whose old text is no longer there (someone edited the sentence) is reported and skipped;
``--check`` exits 1 if anything would change or a rewrite or anchor was not found.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUMBING = re.compile(r"Markdown\(\s*f?[\"']|markdown_table\(|rows\.append\(")
HIDDEN = ("hide-input", "remove-input", "remove-cell", "hide-cell")
MARKER = "You will be able to"


def objectives(able: list[str], need: str) -> str:
    items = "\n".join(f"- {line}" for line in able)
    return (
        "```{admonition} In this chapter\n:class: tip\n"
        f"**You will be able to**\n\n{items}\n\n**You need:** {need}\n```"
    )


def figure(name: str, label: str, alt: str, caption: str) -> str:
    assert (ROOT / "chapters" / "figures" / f"{name}.svg").exists(), name
    assert (ROOT / "chapters" / "figures" / f"{name}.png").exists(), name
    # The HTML picks the SVG (the PDF the PNG); a tap on it opens the SVG at its natural size, where a
    # phone shows its text at full size (Sphinx copies every image into the site's _images/).
    return (
        f"```{{figure}} figures/{name}.*\n:alt: {alt}\n:name: {label}\n"
        f":target: ../_images/{name}.svg\n\n{caption}\n```"
    )


# Per chapter: objectives, figures (where, how), prose rewrites (old, new).
# A figure goes "after" the markdown cell that contains the anchor (as a new cell) or "before" the
# anchor text inside its cell.
CHAPTERS: dict[str, dict] = {
    "01_two_ceilings": dict(
        objectives=objectives(
            [
                "count the FLOP and bytes of an elementwise operation, a reduction and a matmul, and "
                "compute their arithmetic intensity;",
                "compute a GPU's ridge point from its datasheet and say whether an operation is "
                "compute-bound or memory-bound on it;",
                "estimate an operation's time as $\\max(F/P,\\ B/W) + t_0$ and tell when the fixed "
                "overhead $t_0$ is what you wait for;",
                "explain why weights are copied to device memory once and never streamed over PCIe.",
            ],
            "school algebra and a rough idea of what a GPU is; no earlier chapter.",
        ),
        figures=[
            (
                "after",
                "## What a GPU is made of",
                figure(
                    "ch01_gpu_memory_hierarchy",
                    "fig-ch01-hierarchy",
                    "Diagram of one GPU from fast to slow: one streaming multiprocessor (of 132 on an "
                    "H100 SXM) with tensor cores, CUDA cores, registers and shared memory; a 50 MiB L2 "
                    "shared by all SMs; 80 GiB of HBM at 3.35 TB/s; and the host across a PCIe 5.0 x16 "
                    "link of 63 GB/s per direction.",
                    "An SM and the memory hierarchy, e.g. an H100 SXM (sizes and rates from the book's "
                    "catalog). Each level down is larger and slower; a kernel's operands live in HBM, and "
                    "data crosses the PCIe link once, not once per kernel.",
                ),
            )
        ],
        rewrites=[
            (
                "The cell below uses the chapter's model, derived in the next\nsections, to predict both.",
                "The chapter's model, derived in the next\nsections, predicts both.",
            ),
            (
                "Both are published per device; the catalog in `helpers.hardware` holds\nthem with their sources.",
                "Both are published per device; the book's catalog holds them with their sources (see "
                "the\n[hardware appendix](../appendix/hardware.ipynb)).",
            ),
            (
                "The helpers compute each\ncost (`helpers.ops.elementwise_cost`, `reduction_cost`, `matmul_cost`):",
                "The table gives each\ncost for a few sizes:",
            ),
            (
                "Here it is for every accelerator\nin the catalog (`helpers.roofline.ridge_point`):",
                "Here it is for every accelerator\nin the catalog:",
            ),
            (
                ' (`helpers.roofline.bound`\nreports `"overhead"`).',
                ".",
            ),
            (
                " The size slider\nruns to $2^{32}$; a matmul side above $2^{16}$ or a linear batch above $2^{14}$ "
                "is an input error too. The calculator's code\nis `helpers.calculators.render_two_ceilings`; "
                "it calls `ops.op_cost` and\n`roofline.breakdown`.",
                "",
            ),
        ],
    ),
    "02_roofline": dict(
        objectives=objectives(
            [
                "draw a device's roofline from its peak FLOP/s and memory bandwidth, and read an "
                "operation's attainable throughput off it;",
                "correct a ridge point that mixes up dtypes or peaks (tensor-core fp16 against fp32, "
                "dense against sparse);",
                "place elementwise operations, linear layers and matmuls on a roofline and say what "
                "would make each faster;",
                "name what the roofline leaves out: tiles and waves, achievable peaks, dispatch "
                "overhead and the L2 cache.",
            ],
            "[Chapter 1](01_two_ceilings.ipynb): arithmetic intensity, the ridge point and the "
            "time model.",
        ),
        figures=[
            (
                "before",
                "Here is the\nroofline of the free Colab GPU",
                figure(
                    "ch02_roofline_anatomy",
                    "fig-ch02-anatomy",
                    "Diagram of a log-log roofline for an H100 SXM in bf16: a memory roof of slope one "
                    "at 3.35 TB/s meets a flat compute roof at 989 TFLOP/s at the ridge point, about 295 "
                    "FLOP per byte. A 4096 by 4096 linear layer at batch 1 sits low on the memory roof "
                    "at 0.3 % of peak; at batch 4096 it sits on the compute roof.",
                    "The anatomy of a roofline, e.g. an H100 SXM in dense bf16. Left of the ridge only "
                    "fewer bytes help; right of it only fewer FLOP or a faster unit. The points are a "
                    "4096 × 4096 linear layer at batch 1 and at batch 4096.",
                ),
            )
        ],
        rewrites=[
            (
                "This is the **attainable FLOP/s** at intensity $I$ (`helpers.roofline.attainable_flops`). It depends",
                "This is the **attainable FLOP/s** at intensity $I$. It depends",
            ),
            (
                "and the two meet at the **ridge point** $I^* = P/W$ (`helpers.roofline.ridge_point`). Here is the",
                "and the two meet at the **ridge point** $I^* = P/W$.\n\nHere is the",
            ),
            (
                "(`helpers.ops.linear_cost`; the batch is a lower-case $b$ because $B$ is the bytes)",
                "(the batch is a lower-case $b$ because $B$ is the bytes)",
            ),
            (
                " Its\ncode, `helpers.calculators.render_rooflines`, draws with `plots.roofline_plot` and marks the\n"
                "operations with `plots.mark_ops`.",
                "",
            ),
        ],
    ),
    "03_batching": dict(
        objectives=objectives(
            [
                "derive a linear layer's arithmetic intensity as a function of the batch, and when "
                "$I \\approx 2b/w_w$ holds;",
                "compute the critical batch at which a layer turns compute-bound, for fp16, fp32, "
                "int8 and fp8 weights;",
                "name the three regimes a batched layer passes through (overhead, memory, compute) and "
                "predict its latency and throughput in each;",
                "read a throughput–latency curve and choose a batch from it.",
            ],
            "Chapters [1](01_two_ceilings.ipynb) and [2](02_roofline.ipynb): the time model and the "
            "roofline.",
        ),
        figures=[
            (
                "before",
                "The **knee** is where the flat part of the time curve",
                figure(
                    "ch03_dispatch_timeline",
                    "fig-ch03-dispatch",
                    "Three timelines of a CPU lane above a GPU lane. With small kernels the GPU sits "
                    "idle between the CPU's 5 microsecond dispatches; with long kernels the CPU runs "
                    "ahead and the GPU never waits; four small kernels fused into one need a single "
                    "dispatch.",
                    "Where the overhead-bound regime comes from (schematic; 5 µs is the assumed $t_0$). "
                    "(1) Kernels shorter than their dispatch leave the GPU idle: the step takes the "
                    "CPU's time. (2) Long kernels hide the dispatch. (3) Fusing small kernels removes "
                    "dispatches.",
                ),
            )
        ],
        rewrites=[
            (
                "`helpers.ops.linear_cost` counts exactly this; the table compares the exact intensity with the\n"
                "approximation",
                "The table compares the exact intensity with the\napproximation",
            ),
            (
                "narrow ever to reach the ridge). `helpers.ops.critical_batch_size` computes both.",
                "narrow ever to reach the ridge). The table gives both.",
            ),
            (
                "passes through up to three regimes (`helpers.roofline.bound` names them):",
                "passes through up to three regimes:",
            ),
            (
                " Its code, `helpers.calculators.render_batched_layer`, calls `batching.linear_sweep` or\n"
                "`batching.mlp_sweep` and draws with `plots.draw_sweep`.",
                "",
            ),
        ],
    ),
    "04_convolutions": dict(
        objectives=objectives(
            [
                "write a convolution as an implicit GEMM and count its FLOP and bytes;",
                "explain how the number and size of filters, and the size of the feature map, set a "
                "convolution's intensity;",
                "find which ResNet-50 layers are memory-bound at batch 1, and at which batch each "
                "crosses the ridge;",
                "say what the layer model assumes (fusion, L2 hand-offs, per-kernel overhead) and how "
                "that moves its images per second.",
            ],
            "Chapters [1](01_two_ceilings.ipynb)–[3](03_batching.ipynb): the roofline and the "
            "critical batch of a linear layer.",
        ),
        figures=[
            (
                "before",
                '"Implicit" means the $\\mathsf{m} \\times \\mathsf{k}$ input matrix is never written',
                figure(
                    "ch04_implicit_gemm",
                    "fig-ch04-implicit-gemm",
                    "Diagram: a convolution of an N by C by H by W input with K filters of C by R by S "
                    "into an N by K by P by Q output, redrawn as a matrix multiply whose m = N P Q rows "
                    "are output pixels, whose n = K columns are filters and whose inner dimension is "
                    "k = C R S. Arrows map an input window to a row, a filter to a column and an output "
                    "pixel to an entry.",
                    "Implicit GEMM: each window of the input is a row of the patch matrix A "
                    "(m = N·P·Q rows, k = C·R·S columns), each filter a column of B (n = K), each output "
                    "pixel an entry of C = A B. A is never written to memory.",
                ),
            )
        ],
        rewrites=[
            (
                "`helpers.ops.conv2d_cost` counts exactly this; here it is for one 3 × 3 layer of\nResNet-50",
                "Here is that count for one 3 × 3 layer of\nResNet-50",
            ),
            (
                "`helpers.ops.resnet50_layers` lists the 54 layers of the\ncommon torchvision",
                "The book uses the 54 layers of the\ncommon torchvision",
            ),
            (
                " Its code, `helpers.calculators.render_resnet50`, draws\nwith `plots.draw_resnet50` and adds the "
                "overhead with `convnets.resnet50_step_time`.",
                "",
            ),
        ],
    ),
    "05_transformer_inference": dict(
        objectives=objectives(
            [
                "count a Llama-style model's parameters, FLOP per token and KV-cache bytes per token "
                "from its configuration;",
                "explain why prefill is compute-bound and decode memory-bound, and bound the time of "
                "a step of each;",
                "compute the largest decode batch that fits in a GPU's memory beside the weights;",
                "say how latent attention (MLA), mixture of experts and several query tokens per "
                "step change the arithmetic.",
            ],
            "Chapters [2](02_roofline.ipynb) and [3](03_batching.ipynb) (the roofline, the critical "
            "batch), and what a transformer's attention and MLP compute.",
        ),
        figures=[
            (
                "before",
                "Multi-head attention (MHA) keeps one KV head per query head",
                figure(
                    "ch05_kv_cache_layout",
                    "fig-ch05-kv-layout",
                    "Diagram of a KV cache for Llama-3-8B in bf16. One token stores a key and a value "
                    "for each of 8 KV heads of 128 values in each of 32 layers, 128 KiB in all. A "
                    "sequence's tokens are grouped into fixed-size blocks, and a block table maps each "
                    "block to a page anywhere in GPU memory, among other sequences' pages and free ones.",
                    "The layout of a KV cache, e.g. Llama-3-8B in bf16: layers × (K, V) × KV heads × "
                    "head size per token, stored in blocks of tokens that a block table maps to pages "
                    "of GPU memory (vLLM's paged cache; Mooncake's blocks hold 512 tokens).",
                ),
            )
        ],
        rewrites=[
            (
                "Every number comes from a model's published configuration and a datasheet; every formula "
                "lives in the book's helpers, `helpers.llm` (costs), `helpers.roofline` (the time bound) and "
                "`helpers.inference` (what this chapter adds: prefill and decode bounds, and the largest "
                "batch that fits).",
                "Every number comes from a model's published configuration and a datasheet, and every "
                "formula is one tested function of the book's helpers, called in the code cells.",
            ),
            (
                "and you have `helpers.llm.param_count`. Each model's shape",
                "and you have the model's parameter count. Each model's shape",
            ),
            (
                "The table computes both phases with `helpers.llm.prefill_cost` and `decode_cost`; the "
                "ridge points",
                "The table computes both phases; the ridge points",
            ),
            (
                " within about 1 % (`helpers.hardware.Accelerator.memory_capacity`);",
                " within about 1 %;",
            ),
            (
                " {footcite}`kwon2023vllm` (`helpers.inference.RESERVE`).",
                " {footcite}`kwon2023vllm`.",
            ),
            (
                "That is `helpers.inference.max_decode_batch` (and $(1-r)\\,C - M$, the bytes left for KV "
                "caches, is `helpers.inference.free_kv_bytes`). Set it beside the batch decode would need "
                "to become compute-bound, `helpers.inference.critical_decode_batch` (the batch",
                "Here $(1-r)\\,C - M$ is the memory left for KV caches. Set $b_{\\max}$ beside the batch "
                "decode would need to become compute-bound (the batch",
            ),
            (
                " barely move\n(`llm.decode_cost(..., query_tokens=s_q)`).",
                " barely move.",
            ),
            (
                " The calculator is `helpers.calculators.transformer_inference`; it only wires "
                "`helpers.inference` and `helpers.llm`, used above, to the controls.",
                "",
            ),
        ],
    ),
    "06_transfer_or_recompute": dict(
        objectives=objectives(
            [
                "derive the fetch-or-recompute inequality and its model constant $c$, for MHA and "
                "GQA models;",
                "check Mooncake's bandwidth threshold (its Eq. 1–2) and the source article's "
                "numbers against it;",
                "explain why a lone short prefill is memory-bound, and how batching changes the "
                "verdict;",
                "estimate a layer-by-layer overlapped fetch and the best split between fetching and "
                "recomputing.",
            ],
            "[Chapter 5](05_transformer_inference.ipynb) (prefill cost, KV bytes per token) and "
            "[Chapter 3](03_batching.ipynb) (batching).",
        ),
        figures=[
            (
                "after",
                "## Fetch *and* recompute",
                figure(
                    "ch06_fetch_or_recompute",
                    "fig-ch06-timelines",
                    "Four schematic timelines of one prefill, each with a link lane above a GPU lane: "
                    "recomputing the prefix then the new tokens; fetching the prefix's cache then "
                    "computing, a sum; fetching layer by layer while each layer computes as soon as its "
                    "cache arrives, about the longer of the two; and recomputing the head of the prefix "
                    "while its tail is fetched, then the new tokens.",
                    "Recompute against fetch, schematic. Fetching then computing adds the two times; "
                    "streaming the cache layer by layer overlaps them, so a fetch no slower than the "
                    "computation costs about one layer's worth; splitting the prefix runs the link and "
                    "the tensor cores at once.",
                ),
            )
        ],
        rewrites=[
            (
                "`helpers.kvcache.hidden_size_constant` computes $c$ from each published config",
                "The table computes $c$ from each published config",
            ),
            (
                "The table divides the full prefill FLOP of `helpers.llm.prefill_cost` (linear layers",
                "The table divides the full prefill FLOP (linear layers",
            ),
            (
                " by the prefix's KV bytes times $d$, `helpers.kvcache.hidden_size_constant(model, tokens=n)`:",
                " by the prefix's KV bytes times $d$:",
            ),
            (
                "`helpers.kvcache.reuse_bandwidth_threshold` evaluates the formula",
                "The table evaluates the formula",
            ),
            (
                ", and `helpers.kvcache.recompute_time` (a roofline bound) keeps that floor.",
                ", and the book's recompute time (a roofline bound) keeps that floor.",
            ),
            (
                "`helpers.inference.prefill_step` shows it for a 100-token",
                "The table shows it for a 100-token",
            ),
            (
                "`helpers.kvcache.recompute_window` finds that middle range; `helpers.kvcache.breakeven_tokens` "
                "returns the length from which fetching wins for good.",
                "The helpers find that middle range, and the length from which fetching wins for good.",
            ),
            (
                "The calculator compares the two times with `helpers.kvcache.breakeven`, and draws both "
                "against the prefix length. It is `helpers.calculators.transfer_or_recompute`: it recomputes",
                "The calculator compares the two times and draws both against the prefix length. It "
                "recomputes",
            ),
        ],
    ),
    "07_disaggregated_memory": dict(
        objectives=objectives(
            [
                "compute how many tokens of KV cache a memory of a given size holds for a given model;",
                "describe prefill/decode disaggregation and the parts of a Mooncake-style KV cache "
                "pool;",
                "read a hit-rate-against-capacity curve computed from a real trace with LRU stack "
                "distances, and size a pool from it;",
                "estimate the prefill compute that a pool's hits save.",
            ],
            "Chapters [5](05_transformer_inference.ipynb) and [6](06_transfer_or_recompute.ipynb) "
            "(KV bytes per token, fetch or recompute).",
        ),
        figures=[
            (
                "after",
                "## Split the phases, pool the cache",
                figure(
                    "ch07_mooncake_pool",
                    "fig-ch07-pool",
                    "Diagram of a Mooncake-style deployment: a Conductor scheduler assigns each request "
                    "to a node of a prefill pool and a node of a decode pool; the prefill node loads the "
                    "cached prefix from a KV cache pool made of every node's DRAM and SSD, reached over "
                    "RDMA through the Transfer Engine, computes the rest, stores the new blocks, and "
                    "streams the cache layer by layer to the decode node, which generates the tokens.",
                    "A Mooncake-style pool: separate prefill and decode "
                    "pools, a scheduler that weighs cached prefixes and load, and a KV cache pool in the "
                    "nodes' own DRAM and SSDs, moved by RDMA.",
                ),
            )
        ],
        rewrites=[
            (
                "replayed through a prefix cache simulator in `helpers.cachesim`.",
                "replayed through the book's prefix-cache simulator.",
            ),
            (
                "(05_transformer_inference.ipynb#memory-caps-the-decode-batch) (`helpers.inference.free_kv_bytes`),",
                "(05_transformer_inference.ipynb#memory-caps-the-decode-batch),",
            ),
            (
                " The calculator is `helpers.calculators.kv_pool`; it only wires `helpers.cachesim`, used "
                "above, to the controls.",
                "",
            ),
            (
                "a cited constant in `helpers.cachesim`, `helpers.kvcache` or `helpers.serving`, read from",
                "a cited constant in the book's helpers, read from",
            ),
        ],
    ),
    "08_attention_offload": dict(
        objectives=objectives(
            [
                "split a decode step into its attention and linear parts and compute each part's "
                "arithmetic intensity;",
                "explain why attention's intensity does not grow with the batch, and which devices "
                "suit it;",
                "price the traffic and the per-layer latency that attention offload adds;",
                "compare offload with an all-GPU deployment in tokens per second and, with your own "
                "prices, per dollar.",
            ],
            "Chapters [2](02_roofline.ipynb) and [5](05_transformer_inference.ipynb) (the roofline, "
            "decode cost, the memory cap on the batch).",
        ),
        figures=[
            (
                "before",
                "Separating the two parts puts a network between them",
                figure(
                    "ch08_attention_offload",
                    "fig-ch08-offload",
                    "Diagram of one layer of a decode step split across two kinds of device: compute "
                    "GPUs such as H100s run the QKV projection and send each sequence's query and new "
                    "key and value, 20 KiB for Llama-3-70B in bf16; memory devices such as H20s append "
                    "them to the cache and run attention, and send back the 16 KiB output; the compute "
                    "GPUs run the output projection and MLP, and the exchange repeats in all 80 layers.",
                    "Attention offload, one layer of a decode step (sizes per sequence for Llama-3-70B "
                    "in bf16): the weights stay on the compute GPUs, the KV cache on the memory "
                    "devices, and every layer crosses the link twice.",
                ),
            )
        ],
        rewrites=[
            (
                " `helpers.offload.decode_split`\nsplits one decode step of `helpers.llm.decode_cost` into its "
                "attention part and the rest",
                " The cell below splits one decode step into its attention part and the rest",
            ),
            (
                "`helpers.offload.offload_step_time` times the three parts with the roofline\n"
                "(`helpers.roofline.roofline_time`), each kind",
                "The model times the three parts with the roofline, each kind",
            ),
            (
                " The calculator is `helpers.calculators.attention_offload` (its default prices are\n"
                "`calculators.ILLUSTRATIVE_PRICE`); it only wires `helpers.offload` and `helpers.inference`,\n"
                "used above, to the controls.",
                "",
            ),
        ],
    ),
    "09_hybrid_strategies": dict(
        objectives=objectives(
            [
                "apply the fetch-or-recompute rule to each tier of a KV cache hierarchy (HBM, host "
                "DRAM, a remote pool, SSD);",
                "estimate a request's expected prefill time from per-tier hit fractions, serially and "
                "with layer-wise prefetch;",
                "say which tiers earn their place for a given trace and hardware;",
                "follow a step-by-step procedure from datasheets and measurements to a serving "
                "configuration.",
            ],
            "Chapters [5](05_transformer_inference.ipynb)–[7](07_disaggregated_memory.ipynb); "
            "[Chapter 8](08_attention_offload.ipynb) for one step of the procedure.",
        ),
        figures=[
            (
                "after",
                "## Motivation: where does a cached prefix live?",
                figure(
                    "ch09_tiered_cache",
                    "fig-ch09-tiers",
                    "Diagram of four cache tiers below eight H100s, each larger and slower: 100 GB of "
                    "HBM at 26.8 TB/s, 1.5 TB of host DRAM at 504 GB/s over eight PCIe 5.0 x16 links, "
                    "a 15 TB remote pool at 400 GB/s over eight 400 Gb/s ConnectX-7 ports, and 60 TB "
                    "of local SSD at 63 GB/s; capacities are assumed examples.",
                    "The chapter's example hierarchy for 8 × H100 (bandwidths from the book's catalog, "
                    "capacities assumed). Each tier is judged by the same rule: fetch a block only if "
                    "that beats recomputing it.",
                ),
            )
        ],
        rewrites=[
            (
                " `helpers.tiers.example_hierarchy`\nbuilds the hierarchy (`helpers.tiers.nvme_tier` the SSDs).",
                "",
            ),
            (
                "`helpers.cachesim` replays the open Mooncake conversation trace",
                "The book's cache simulator replays the open Mooncake conversation trace",
            ),
            (
                " The calculator is `helpers.calculators.kv_tiers`; it only wires `helpers.tiers` and\n"
                "`helpers.cachesim`, used above, to the controls.",
                "",
            ),
        ],
    ),
}


def _topic(stem: str) -> str:
    """A chapter's name without its number ("03_batching" -> "batching"): chapters get renumbered."""
    return re.sub(r"^\d+_", "", stem)


def spec_for(path: Path) -> dict | None:
    """This chapter's furniture, found by its name without the number, or None."""
    return next(
        (v for k, v in CHAPTERS.items() if _topic(k) == _topic(path.stem)), None
    )


def _cell_id(path: Path, purpose: str) -> str:
    return hashlib.sha1(f"{path.stem}:{purpose}".encode()).hexdigest()[:8]


def _markdown_cell(path: Path, purpose: str, text: str) -> dict:
    lines = text.split("\n")
    source = [line + "\n" for line in lines[:-1]] + [lines[-1]]
    return {
        "cell_type": "markdown",
        "id": _cell_id(path, purpose),
        "metadata": {},
        "source": source,
    }


def _without_figures(text: str) -> str:
    """The text as it reads with the inserted figure blocks taken out (to recognise a rewrite already done)."""
    return re.sub(r"```\{figure\}.*?\n```(\n\n|$)", "", text, flags=re.S)


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _set_source(cell: dict, text: str) -> None:
    lines = text.split("\n")
    cell["source"] = [line + "\n" for line in lines[:-1]] + (
        [lines[-1]] if lines[-1] else []
    )


def furnish(path: Path) -> tuple[list[str], list[str]]:
    """Apply this chapter's furniture to ``path``; return (changes, problems)."""
    spec = spec_for(path)
    assert spec is not None, path
    nb = json.loads(path.read_text())
    cells = nb["cells"]
    changes: list[str] = []
    problems: list[str] = []
    everything = "\n".join(_source(c) for c in cells)
    done = "\n".join(_without_figures(_source(c)) for c in cells)

    if MARKER not in everything:
        cells.insert(1, _markdown_cell(path, "objectives", spec["objectives"]))
        changes.append("objectives box")

    for old, new in spec["rewrites"]:
        hits = [c for c in cells if c["cell_type"] == "markdown" and old in _source(c)]
        if len(hits) == 1:
            _set_source(hits[0], _source(hits[0]).replace(old, new))
            changes.append(f"rewrite: {old[:50]!r}")
        elif not hits and (not new or new in done):
            pass  # already done
        else:
            problems.append(f"rewrite not applied ({len(hits)} matches): {old[:70]!r}")

    for where, anchor, text in spec["figures"]:
        name = re.search(r"figures/(\S+)\.\*", text).group(1)
        if any(f"figures/{name}." in _source(c) for c in cells):
            continue
        hits = [
            i
            for i, c in enumerate(cells)
            if c["cell_type"] == "markdown" and anchor in _source(c)
        ]
        if len(hits) != 1:
            problems.append(
                f"figure {name}: anchor found {len(hits)} times: {anchor[:60]!r}"
            )
            continue
        i = hits[0]
        if where == "after":
            cells.insert(i + 1, _markdown_cell(path, name, text))
        else:
            src = _source(cells[i])
            at = src.index(anchor)
            if not src[:at].endswith("\n\n"):  # a figure is a block of its own
                problems.append(
                    f"figure {name}: anchor does not start a paragraph: {anchor[:60]!r}"
                )
                continue
            _set_source(cells[i], src[:at] + f"{text}\n\n" + src[at:])
        changes.append(f"figure {name}")

    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code" or not PLUMBING.search(_source(cell)):
            continue
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if not any(t in tags for t in HIDDEN):
            tags.append("hide-input")
            changes.append(f"hide-input on cell {i}")

    if changes:
        path.write_text(
            json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        )
    return changes, problems


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv[1:] if not a.startswith("--")] or sorted(
        (ROOT / "chapters").glob("*.ipynb")
    )
    bad = 0
    for path in paths:
        if spec_for(path) is None:
            print(
                f"{path.name}: no furniture configured (add it to CHAPTERS)",
                file=sys.stderr,
            )
            continue
        original = path.read_text()
        changes, problems = furnish(path)
        if check and changes:
            path.write_text(original)
        for line in changes:
            print(f"{path.name}: {line}")
        for line in problems:
            print(f"{path.name}: PROBLEM: {line}", file=sys.stderr)
        bad += bool(problems) or (check and bool(changes))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
