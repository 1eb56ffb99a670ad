"""The scoreboard (#35 item 7): the book's model beside NVIDIA AIConfigurator and MLSys·im on the same points.

Two steps, two environments, one committed file (``helpers/data/published/scoreboard.csv``):

* ``tools`` runs in ``.venv-scoreboard`` (``make scoreboard`` creates it from
  ``requirements-scoreboard.txt``; never the book's ``.venv``): it reads the
  validating points of the engine kinds straight from the published CSVs,
  asks each tool for each point it can price, offline, and writes every
  prediction, or "not covered" with the reason, and the tools' versions;
* ``book`` runs in the book's ``.venv``: it adds the book's constant-free
  prediction and the point's role from :mod:`helpers.validation`, so
  ``tests/test_scoreboard.py`` can check that the committed column is the
  current model's (it fails when the model changes and nobody re-ran this).

Usage (``make scoreboard`` runs the three in this order)::

    .venv/bin/python tools/scoreboard.py book               # marks the validating points
    .venv-scoreboard/bin/python tools/scoreboard.py tools   # slow: about 20 minutes
    .venv/bin/python tools/scoreboard.py book               # the book's column again (seconds)

How each tool is asked (its defaults otherwise; nothing is tuned to the
published values):

* **AIConfigurator** ``cli_estimate`` (aggregated serving, TensorRT-LLM
  performance tables of the GPU's system): a batch the source states is used
  as is (a static batch, the clients of a TTFT point); a full-load point takes
  the largest of batches 1024, 256, 64 and 16 that fits in memory (no error,
  no KV-capacity warning). Models: the Llama 3.1 configurations it
  ships (same shapes as the catalog's Llama-3-8B/70B and Llama-3.1-405B);
  others need a download from Hugging Face, unreachable here.
* **MLSys·im** (one accelerator per model: tensor parallelism not covered):
  ``ContinuousBatchingModel`` at up to 2,048 sequences (TensorRT-LLM's
  default ``max_batch_size``) for a full-load point, ``ServingModel`` at the
  stated batch for a static batch and for TTFT; its default efficiency (0.5).
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "helpers" / "data" / "published"
OUT = DATA / "scoreboard.csv"
KINDS = ("serving", "ttft", "attention")
COLUMNS = (
    "kind",
    "gpu",
    "label",
    "source_url",
    "source_locator",
    "published",
    "unit",
    "book",
    "book_role",
    "aiconfigurator",
    "aiconfigurator_note",
    "mlsysim",
    "mlsysim_note",
    "versions",
)

AIC_SYSTEMS = {
    "H100 SXM": "h100_sxm",
    "H200 SXM": "h200_sxm",
    "B200 SXM": "b200_sxm",
    "GB200 (per GPU)": "gb200",
    "A100 SXM4 80GB": "a100_sxm",
}
AIC_MODELS = {
    "llama-3-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B",
}
AIC_GEMM = {"fp8": "fp8", "fp4": "nvfp4", "fp16": "bfloat16", "bf16": "bfloat16"}
AIC_BATCHES = (1024, 256, 64, 16)

MLSYSIM_HARDWARE = {
    "H100 SXM": "H100",
    "H200 SXM": "H200",
    "B200 SXM": "B200",
    "A100 SXM4 80GB": "A100",
}
MLSYSIM_MODELS = {
    "llama-3-8b": "Llama3_8B",
    "llama-3-70b": "Llama3_70B",
    "llama-3.1-405b": "Llama3_405B",
    "llama-2-7b": "Llama2_7B",
    "llama-2-70b": "Llama2_70B",
}
MLSYSIM_MAX_BATCH = 2048


def _points() -> list[dict[str, str]]:
    rows = []
    for kind in KINDS:
        with (DATA / f"{kind}.csv").open(newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                row["kind"] = kind
                rows.append(row)
    return rows


def _key(row: dict[str, str]) -> tuple[str, str, str]:
    return (row["kind"], row["source_url"], row["source_locator"])


def _int(row: dict[str, str], column: str) -> int | None:
    text = row.get(column, "")
    return int(text) if text else None


# --- AIConfigurator ------------------------------------------------------------------


def _aic(row: dict[str, str]) -> tuple[float, str, str]:
    """(prediction in the point's SI unit, note, backend version); NaN and the reason if not covered."""
    if row["kind"] == "attention":
        return (
            math.nan,
            "not covered: no system data for this GPU, no kernel-level query",
            "",
        )
    system = AIC_SYSTEMS.get(row["gpu"])
    if system is None:
        return math.nan, f"not covered: no {row['gpu']} system data", ""
    model = AIC_MODELS.get(row["model"])
    if model is None:
        return (
            math.nan,
            f"not covered: no offline config for {row['model']} (Hugging Face unreachable)",
            "",
        )
    if row.get("ep", "1") == "":
        return math.nan, "not covered: expert-parallel size not stated", ""
    from aiconfigurator.cli.api import cli_estimate

    tp = int(row["tp"])
    common = dict(
        backend_name="trtllm",
        isl=int(row["input_len"]),
        osl=max(int(row["output_len"]), 2),
        tp_size=tp,
        gemm_quant_mode=AIC_GEMM.get(row["precision"], "bfloat16"),
        kvcache_quant_mode="fp8" if row.get("kv_precision") == "fp8" else "bfloat16",
    )
    fixed = _int(row, "requests") or _int(row, "concurrency")
    try:
        if row["kind"] == "ttft":
            r = cli_estimate(model, system, batch_size=fixed or 1, **common)
            return r.ttft * 1e-3, "TTFT of the aggregated estimate", r.backend_version
        if fixed is not None:
            r = cli_estimate(model, system, batch_size=fixed, **common)
            best, version, note = (
                r.tokens_per_second,
                r.backend_version,
                f"batch {fixed}",
            )
        else:
            best, version, note, errors = math.nan, "", "", []
            for (
                batch
            ) in AIC_BATCHES:  # largest first: full load is the largest batch that fits
                try:
                    r = cli_estimate(model, system, batch_size=batch, **common)
                except Exception as err:  # noqa: BLE001 (a batch that fails does not fit)
                    errors.append(f"batch {batch}: {type(err).__name__}")
                    continue
                version = r.backend_version
                if r.kv_cache_warning:
                    errors.append(f"batch {batch}: KV capacity warning")
                    continue
                best, note = (
                    r.tokens_per_second,
                    f"largest batch of {AIC_BATCHES} that fits: {batch}",
                )
                break
            if math.isnan(best):
                return (
                    math.nan,
                    f"not covered: no batch fits in memory ({'; '.join(errors)})",
                    version,
                )
    except Exception as err:  # noqa: BLE001 (a tool's failure is recorded, not raised)
        return math.nan, f"not covered: {type(err).__name__}: {str(err)[:120]}", ""
    if row["quantity"] == "output_throughput_per_gpu":
        best /= tp
    return best, note, version


# --- MLSys·im ------------------------------------------------------------------------


def _mlsysim(row: dict[str, str]) -> tuple[float, str]:
    if row["kind"] == "attention":
        return math.nan, "not covered: no attention-kernel model for this GPU"
    hw_name = MLSYSIM_HARDWARE.get(row["gpu"])
    if hw_name is None:
        return math.nan, f"not covered: no {row['gpu']} in its hardware registry"
    model_name = MLSYSIM_MODELS.get(row["model"])
    if model_name is None:
        return math.nan, f"not covered: no {row['model']} in its model registry"
    if int(row["tp"]) > 1:
        return (
            math.nan,
            "not covered: its serving models price one accelerator (no tensor parallelism)",
        )
    precision = row["precision"]
    if precision == "fp4":
        return math.nan, "not covered: no fp4 precision"
    import mlsysim
    from mlsysim import solvers

    hw = getattr(mlsysim.Hardware.Cloud, hw_name)
    model = getattr(mlsysim.Models.Language, model_name)
    isl, osl = int(row["input_len"]), int(row["output_len"])
    fixed = _int(row, "requests") or _int(row, "concurrency")
    try:
        if row["kind"] == "ttft":
            r = solvers.ServingModel().solve(
                model, hw, seq_len=isl, batch_size=fixed or 1, precision=precision
            )
            return float(r.ttft.to("s").magnitude), "ServingModel TTFT"
        if fixed is not None:
            r = solvers.ServingModel().solve(
                model, hw, seq_len=isl + osl, batch_size=fixed, precision=precision
            )
            seconds = float(r.ttft.to("s").magnitude) + (osl - 1) * float(
                r.itl.to("s").magnitude
            )
            return fixed * osl / seconds, f"ServingModel, batch {fixed}"
        r = solvers.ContinuousBatchingModel().solve(
            model,
            hw,
            max_seq_len=isl + osl,
            mean_request_tokens=isl + osl / 2,
            max_batch_size=MLSYSIM_MAX_BATCH,
            precision=precision,
        )
        if not r.feasible:
            return math.nan, "not covered: infeasible (memory wall)"
        return float(
            r.throughput_tokens_per_sec
        ), f"ContinuousBatchingModel, {r.max_active_requests} active"
    except Exception as err:  # noqa: BLE001
        return math.nan, f"not covered: {type(err).__name__}: {str(err)[:120]}"


def run_tools(
    rows: list[dict[str, str]],
    book: dict[tuple[str, str, str], dict[str, str]],
    *,
    only_missing: bool = False,
) -> list[dict[str, str]]:
    """Both tools' predictions for every point the book validates (``book``: the book step's rows).

    ``only_missing`` asks the tools only about validating points not yet asked
    (a point the book began to validate since the last run).
    """
    import importlib.metadata as md

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    aic_version = md.version("aiconfigurator")
    mls_version = md.version("mlsysim")
    out = []
    for i, row in enumerate(rows, 1):
        mine = dict(book[_key(row)])
        earlier = mine.get("aiconfigurator_note", "") + mine.get("mlsysim_note", "")
        if (
            only_missing
            and mine["book_role"] == "validation"
            and "not run" not in earlier
        ):
            out.append(mine)  # computed by an earlier run of this version
            continue
        if mine["book_role"] != "validation":
            aic, aic_note, db = (
                math.nan,
                "not run: not a validating point of the book",
                "",
            )
            mls, mls_note = math.nan, "not run: not a validating point of the book"
        else:
            aic, aic_note, db = _aic(row)
            mls, mls_note = _mlsysim(row)
        print(
            f"[{i}/{len(rows)}] {row['kind']} {row['gpu']} {row['source_locator'][:60]}: "
            f"aic {aic:.4g} mlsysim {mls:.4g}",
            file=sys.stderr,
        )
        mine.update(
            {
                "aiconfigurator": "" if math.isnan(aic) else f"{aic:.6g}",
                "aiconfigurator_note": aic_note,
                "mlsysim": "" if math.isnan(mls) else f"{mls:.6g}",
                "mlsysim_note": mls_note,
                "versions": f"aiconfigurator {aic_version}"
                + (f" (trtllm tables {db})" if db else "")
                + f"; mlsysim {mls_version}",
            }
        )
        out.append(mine)
        # written after every point, so an interrupted run keeps what it computed
        done = {_key(r) for r in out}
        _write(out + [dict(book[_key(r)]) for r in rows if _key(r) not in done])
    return out


def run_book(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Fill the book's constant-free prediction, each point's role and the published value (the book's venv)."""
    sys.path.insert(0, str(ROOT))
    from helpers import validation

    book = {}
    for kind in KINDS:
        for c in validation.compare(kind):  # type: ignore[arg-type]
            book[(kind, c.point.source, c.point.locator)] = c
    out = []
    for row in rows:
        c = book[_key(row)]
        row = dict(row)
        row["label"] = c.point.label
        row["published"] = f"{c.point.value:.9g}"
        row["unit"] = c.point.unit
        row["book"] = "" if math.isnan(c.constant_free) else f"{c.constant_free:.9g}"
        row["book_role"] = c.role
        out.append(row)
    return out


def _write(rows: list[dict[str, str]]) -> None:
    with OUT.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=("tools", "book"))
    parser.add_argument(
        "--only-missing",
        action="store_true",
        help="tools step: ask only about validating points no run has asked about yet",
    )
    args = parser.parse_args(argv)
    if args.step == "book":
        previous: dict[tuple[str, str, str], dict[str, str]] = {}
        if OUT.exists():
            with OUT.open(newline="", encoding="utf-8") as f:
                previous = {_key(r): r for r in csv.DictReader(f)}
        rows = []
        for row in _points():
            old = previous.get(_key(row), {})
            rows.append(
                {c: old.get(c, "") for c in COLUMNS}
                | {
                    "kind": row["kind"],
                    "gpu": row["gpu"],
                    "source_url": row["source_url"],
                    "source_locator": row["source_locator"],
                }
            )
        _write(run_book(rows))
    else:
        if not OUT.exists():
            parser.error(
                "run the book step first: it marks the points the book validates"
            )
        with OUT.open(newline="", encoding="utf-8") as f:
            roles = {_key(r): r for r in csv.DictReader(f)}
        points = _points()
        _write(run_tools(points, roles, only_missing=args.only_missing))
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
