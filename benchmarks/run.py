"""Benchmark this machine against the book's measurement tools and models: ``python benchmarks/run.py``.

Sections (each a function in :data:`SECTIONS`; add one by appending to that list):

1. ``measurement`` -- do :mod:`helpers.bench`'s memory bandwidth and matmul FLOP/s agree with an
   independent measurement (plain torch timed with ``torch.utils.benchmark.Timer``) of the same
   operation at the same large size? Target: ratio >= 0.95.
2. ``model_fidelity`` -- Lab 2's batch sweep: median and max relative error of the roofline-plus-overhead
   prediction against the measured step time, and where the knee lies. Targets: median <= 15 %, max <= 40 %.
3. ``fidelity`` -- the naive roofline against the second-order model (:mod:`helpers.calibration`) on
   held-out points of Lab 2's sweep and Lab 3's layers: each model's parameters are fitted on every other
   batch and its median and max |relative error| and the knee are reported on the rest. Targets for the
   second-order model: median <= 15 %, max <= 40 %, knee within 1.5x. ``python benchmarks/run.py fidelity``
   runs it alone and merges it into the machine's JSON under ``"fidelity"``.
4. ``make_test_stages`` -- how long each stage of ``make test`` takes (unit tests, strict nbval on the
   chapters, lax nbval on the labs, the book build). ``--skip-stages`` leaves it out.

Writes ``benchmarks/results/<machine>.json`` and ``.md`` and prints a summary. Every target is reported as
met or not met; nothing is tuned to pass. On a CPU torch runs on one thread, as the labs do (``--threads``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from helpers import (  # noqa: E402
    batching,
    bench,
    calibration,
    convnets,
    hardware,
    labtools,
    ops,
    roofline,
)
from helpers.formatting import format_si  # noqa: E402


@dataclass
class Target:
    """One pass/fail criterion: ``value`` compared with ``threshold`` by ``op`` (``">="`` or ``"<="``)."""

    name: str
    value: float
    op: str
    threshold: float
    unit: str = ""

    @property
    def met(self) -> bool:
        return (
            self.value >= self.threshold
            if self.op == ">="
            else self.value <= self.threshold
        )

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "met": self.met}

    def line(self) -> str:
        fmt = (lambda v: f"{v:.1%}") if self.unit == "%" else (lambda v: f"{v:.3f}")
        return f"{self.name}: {fmt(self.value)} (target {self.op} {fmt(self.threshold)}) -> {'MET' if self.met else 'NOT MET'}"


@dataclass
class SectionResult:
    """What a section reports: numbers for the JSON, Markdown for people, and its targets."""

    name: str
    title: str
    metrics: dict[str, Any] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    markdown: str = ""
    seconds: float = 0.0
    load_before: tuple[float, float, float] | None = None
    load_after: tuple[float, float, float] | None = None
    error: str | None = None


# --------------------------------------------------------------------------------------------------
# Section 1: helpers.bench against an independent measurement


def _timer_seconds(stmt: str, env: dict[str, Any], min_run_time: float) -> float:
    """Median seconds per run of ``stmt`` with torch.utils.benchmark.Timer (synchronises CUDA itself)."""
    from torch.utils import benchmark as tb

    return (
        tb.Timer(stmt=stmt, globals=env)
        .blocked_autorange(min_run_time=min_run_time)
        .median
    )


def section_measurement(args: argparse.Namespace) -> SectionResult:
    dev = bench.device()
    on_gpu = dev.type == "cuda"
    nbytes = (1 << 30) if on_gpu else (256 << 20)
    n = 8192 if on_gpu else 2048
    rounds = args.rounds
    res = SectionResult(
        "measurement", "helpers.bench against plain torch (torch.utils.benchmark.Timer)"
    )
    rows = []

    # Memory bandwidth: one copy of nbytes counts 2 * nbytes (read + write), in both methods.
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=dev).fill_(1.0)
    dst = torch.empty_like(src)
    helper, independent = [], []
    for _ in range(rounds):  # interleaved, so both methods see the same machine state
        helper.append(
            bench.measure_memory_bandwidth(nbytes=nbytes, repeats=10, dev=dev).value
        )
        independent.append(
            2.0
            * nbytes
            / _timer_seconds(
                "dst.copy_(src)", {"dst": dst, "src": src}, args.min_run_time
            )
        )
    del src, dst
    rows.append(
        (
            "memory bandwidth",
            "copy",
            f"{format_si(nbytes, 'B')} buffer",
            helper,
            independent,
            "B/s",
        )
    )

    for dtype in bench.supported_dtypes(dev):
        tdtype = bench.torch_dtype(dtype)
        a = torch.randn(n, n, device=dev).to(tdtype)
        b = torch.randn(n, n, device=dev).to(tdtype)
        helper, independent = [], []
        for _ in range(rounds):
            helper.append(
                bench.measure_matmul_flops(dtype, n=n, repeats=10, dev=dev).value
            )
            previous = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
            try:
                seconds = _timer_seconds("a @ b", {"a": a, "b": b}, args.min_run_time)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = previous
            independent.append(2.0 * n**3 / seconds)
        rows.append(
            (f"matmul {dtype}", "a @ b", f"n = {n}", helper, independent, "FLOP/s")
        )
        del a, b

    table = [
        "| quantity | operation | size | helpers.bench (best) | Timer (best) | ratio |",
        "|---|---|---|---:|---:|---:|",
    ]
    for label, op, size, helper, independent, unit in rows:
        ratio = max(helper) / max(independent)
        res.metrics[label] = {
            "operation": op,
            "size": size,
            "unit": unit,
            "helpers_bench": helper,
            "independent_timer": independent,
            "ratio_of_best": ratio,
            "ratio_of_medians": statistics.median(helper)
            / statistics.median(independent),
        }
        res.targets.append(Target(f"{label}: helpers.bench / Timer", ratio, ">=", 0.95))
        table.append(
            f"| {label} | `{op}` | {size} | {format_si(max(helper), unit)} | {format_si(max(independent), unit)} | {ratio:.3f} |"
        )
    res.markdown = (
        f"Both methods time the same operation on the same tensors, interleaved for {rounds} rounds; the table "
        "compares the best round of each (ratio of medians in the JSON). `helpers.bench` reports the median of "
        "10 timed calls after a warm-up; `torch.utils.benchmark.Timer.blocked_autorange` the median of blocks "
        f"run for at least {args.min_run_time} s.\n\n" + "\n".join(table)
    )
    return res


# --------------------------------------------------------------------------------------------------
# Section 2: fidelity of the batching model on Lab 2's sweep


def section_model_fidelity(args: argparse.Namespace) -> SectionResult:
    dev = bench.device()
    on_gpu = dev.type == "cuda"
    sizes = labtools.batch_sweep_sizes(on_gpu)
    dtype, batches = sizes.dtype, list(sizes.batches)
    acc = labtools.measured_ceilings(dtypes=(dtype,), dev=dev, tries=3)
    t0 = bench.measure_overhead(dev=dev).median
    res = SectionResult(
        "model_fidelity", "Batching model against Lab 2's measured sweep"
    )
    d_small, d_large = sizes.d_small, sizes.d_linear
    setups = {  # label: (module, input width, batch -> predicted BatchSweep, critical batch)
        "small linear": (
            labtools.make_linear(d_small, d_small, dtype, dev=dev),
            d_small,
            lambda b: batching.linear_sweep(
                b, d_small, d_small, acc, dtype=dtype, overhead=t0
            ),
            ops.critical_batch_size(acc, dtype=dtype, d_in=d_small, d_out=d_small),
        ),
        "large linear": (
            labtools.make_linear(d_large, d_large, dtype, dev=dev),
            d_large,
            lambda b: batching.linear_sweep(
                b, d_large, d_large, acc, dtype=dtype, overhead=t0
            ),
            ops.critical_batch_size(acc, dtype=dtype, d_in=d_large, d_out=d_large),
        ),
        "MLP": (
            labtools.make_mlp(sizes.d_model, sizes.d_ff, dtype, dev=dev),
            sizes.d_model,
            lambda b: batching.mlp_sweep(
                b, sizes.d_model, sizes.d_ff, acc, dtype=dtype, overhead=3 * t0
            ),
            roofline.crossing_batch(
                lambda b: ops.mlp_cost(b, sizes.d_model, sizes.d_ff, dtype=dtype),
                acc,
                dtype=dtype,
            ),
        ),
    }
    all_errors = []
    table = [
        "| computation | points | median abs. error | max abs. error | predicted crossing B* | predicted 90 % knee | measured 90 % knee |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, (module, d_in, predict, crossing) in setups.items():
        repeats = 10 if label == "small linear" else 3
        m = labtools.timed_sweep_past_knee(
            batches,
            labtools.batch_caller(module, d_in, dtype, dev=dev),
            max_value=16 * batches[-1],
            repeats=repeats,
            warmup=1,
            progress=False,
            dev=dev,
        )
        p = predict(m.values)
        cmp = labtools.Comparison(
            tuple(str(b) for b in m.values), p.seconds, m.seconds, "s", m.device
        )
        all_errors.extend(np.abs(cmp.relative_error).tolist())
        knee_meas = batching.measured_knee(m.values, m.seconds)
        knee_pred = batching.measured_knee(p.batch, p.seconds)
        res.metrics[label] = {
            "batches": m.values.tolist(),
            "measured_s": m.seconds.tolist(),
            "predicted_s": p.seconds.tolist(),
            "relative_error": cmp.relative_error.tolist(),
            "median_abs_error": cmp.median_abs_error,
            "max_abs_error": cmp.max_abs_error,
            "predicted_crossing_batch": crossing,
            "predicted_knee_90": knee_pred,
            "measured_knee_90": knee_meas,
            "knee_inside_sweep": bool(m.values[0] < knee_meas < m.values[-1]),
        }
        table.append(
            f"| {label} | {len(m.values)} | {cmp.median_abs_error:.0%} | {cmp.max_abs_error:.0%} | {crossing:.1f} | {knee_pred} | {knee_meas} |"
        )
        del module
    res.metrics["ceilings"] = {
        "dtype": dtype,
        "peak_flops": acc.flops(dtype),
        "memory_bandwidth": acc.memory_bandwidth,
        "overhead_s": t0,
    }
    res.metrics["sizes"] = asdict(sizes)
    median_all, max_all = float(np.median(all_errors)), float(np.max(all_errors))
    res.metrics["all_points"] = {
        "median_abs_error": median_all,
        "max_abs_error": max_all,
        "points": len(all_errors),
    }
    res.targets += [
        Target(
            "Lab 2 sweep, all points: median |relative error| of time",
            median_all,
            "<=",
            0.15,
            "%",
        ),
        Target(
            "Lab 2 sweep, all points: max |relative error| of time",
            max_all,
            "<=",
            0.40,
            "%",
        ),
    ]
    res.markdown = (
        f"Sizes as in Lab 2 (`labtools.batch_sweep_sizes`): {dtype}, small layer {sizes.d_small}, large layer "
        f"{sizes.d_linear}, MLP {sizes.d_model} -> {sizes.d_ff}, batches from 1 (doubled past {batches[-1]} while the "
        f"measured knee is the last point). Ceilings measured in the same run (best of 3): "
        f"{format_si(acc.flops(dtype), 'FLOP/s')}, {format_si(acc.memory_bandwidth, 'B/s')}, overhead {format_si(t0, 's')}. "
        "Relative error = (predicted - measured) / measured.\n\n"
        + "\n".join(table)
        + f"\n\nAll {len(all_errors)} points: median |error| {median_all:.0%}, max {max_all:.0%}."
    )
    return res


# --------------------------------------------------------------------------------------------------
# Section 3: naive roofline against the second-order model, on held-out points


def _sweep_seconds(
    batches: list[int], make: Callable[[int], Callable[[], Any]], dev: Any
) -> list[float]:
    """Seconds per call at each batch: on a GPU the labs' CUDA-event median of 3; on a CPU the least thread CPU time of 3.

    On a CPU shared with other jobs, wall-clock time counts the time the OS gives them; the calling
    thread's CPU time (``time.thread_time``; torch runs on this one thread) does not, so it is the
    time the work itself took. The least of 3 drops calls disturbed by cache or bandwidth contention.
    """
    if dev.type == "cuda":
        sweep = labtools.timed_sweep(
            batches, make, repeats=3, warmup=1, progress=False, dev=dev
        )
        return sweep.seconds.tolist()
    out = []
    for b in batches:
        call = make(b)
        call()
        samples = []
        for _ in range(3):
            start = time.thread_time()
            call()
            samples.append(time.thread_time() - start)
        out.append(min(samples))
    return out


def _fidelity_points(args: argparse.Namespace) -> dict[str, Any]:
    """Measure Lab 2's sweep (and a 16-bit one) and Lab 3's layers; return computations of Points."""
    dev = bench.device()
    on_gpu = dev.type == "cuda"
    sizes = labtools.batch_sweep_sizes(on_gpu)
    dtype = sizes.dtype
    t_d = bench.torch_dtype
    comps: dict[str, Any] = {}

    def linear_points(label, module, d_in, d_out, batches, dt, calls, mlp_ff=None):
        seconds = _sweep_seconds(
            batches, labtools.batch_caller(module, d_in, dt, dev=dev), dev
        )
        pts = []
        for b, t in zip(batches, seconds):
            if mlp_ff is None:
                cost = ops.linear_cost(b, d_in, d_out, dtype=dt)
                weights = ops.linear_weight_bytes(d_in, d_out, dtype=dt)
            else:
                cost = ops.mlp_cost(b, d_in, mlp_ff, dtype=dt)
                weights = 2 * ops.linear_weight_bytes(d_in, mlp_ff, dtype=dt)
            pts.append(
                calibration.Point(
                    cost.flops, cost.bytes, b, mlp_ff or d_out, calls, float(t), weights
                )
            )
        comps[label] = {"dtype": dt, "batches": list(batches), "points": pts}

    batches = list(sizes.batches)
    linear_points(
        "small linear",
        labtools.make_linear(sizes.d_small, sizes.d_small, dtype, dev=dev),
        sizes.d_small,
        sizes.d_small,
        batches,
        dtype,
        1,
    )
    linear_points(
        "large linear",
        labtools.make_linear(sizes.d_linear, sizes.d_linear, dtype, dev=dev),
        sizes.d_linear,
        sizes.d_linear,
        batches,
        dtype,
        1,
    )
    linear_points(
        "MLP",
        labtools.make_mlp(sizes.d_model, sizes.d_ff, dtype, dev=dev),
        sizes.d_model,
        sizes.d_model,
        batches,
        dtype,
        3,
        mlp_ff=sizes.d_ff,
    )
    # a 16-bit sweep: fp16 on a GPU is the main sweep already; a CPU runs bf16, sized to its speed
    if not on_gpu:
        half_batches = [1, 2, 4, 8, 16, 32]
        linear_points(
            "bf16 linear",
            labtools.make_linear(2048, 2048, "bf16", dev=dev),
            2048,
            2048,
            half_batches,
            "bf16",
            1,
        )
    # Lab 3's distinct convolution shapes
    image, conv_batches = (224, [1, 2, 4, 8, 16, 32]) if on_gpu else (112, [1, 2, 4])
    seen, convs = set(), []
    for layer in ops.resnet50_layers(1, image_size=image, dtype=dtype):
        key = (layer.c_in, layer.c_out, layer.kernel, layer.stride, layer.in_size)
        if layer.kind == "conv" and key not in seen:
            seen.add(key)
            convs.append(layer)
    for layer in convs:
        conv = torch.nn.Conv2d(
            layer.c_in,
            layer.c_out,
            layer.kernel,
            layer.stride,
            padding=layer.kernel // 2,
            bias=False,
            device=dev,
            dtype=t_d(dtype),
        ).requires_grad_(False)
        if on_gpu:
            conv = conv.to(memory_format=torch.channels_last)

        def make(batch, conv=conv, layer=layer):
            x = torch.randn(
                batch,
                layer.c_in,
                layer.in_size,
                layer.in_size,
                device=dev,
                dtype=t_d(dtype),
            )
            if on_gpu:
                x = x.to(memory_format=torch.channels_last)
            return lambda: conv(x)

        seconds = _sweep_seconds(conv_batches, make, dev)
        pts = []
        for b, t in zip(conv_batches, seconds):
            cost = convnets.layer_cost(layer, b, dtype=dtype)
            rows = b * layer.out_size * layer.out_size
            filters = layer.c_out * layer.c_in * layer.kernel**2
            pts.append(
                calibration.Point(
                    cost.flops,
                    cost.bytes,
                    rows,
                    layer.c_out,
                    1,
                    float(t),
                    float(filters * hardware.dtype_bytes(dtype)),
                )
            )
        comps[f"conv {layer.name}"] = {
            "dtype": dtype,
            "batches": list(conv_batches),
            "points": pts,
        }
    return comps


def _knee_ratio(
    batches: list[int], measured: np.ndarray, predicted: np.ndarray
) -> float:
    a = batching.measured_knee(np.array(batches), measured)
    b = batching.measured_knee(np.array(batches), predicted)
    return float(max(a / b, b / a))


def section_fidelity(args: argparse.Namespace) -> SectionResult:
    dev = bench.device()
    on_gpu = dev.type == "cuda"
    catalog = hardware.from_device_name(bench.device_name(dev)) if on_gpu else None
    if on_gpu:
        torch.backends.cudnn.benchmark = True
    comps = _fidelity_points(args)
    res = SectionResult(
        "fidelity",
        "Naive roofline against the second-order model, on held-out points",
    )
    dtypes = sorted({c["dtype"] for c in comps.values()})
    errors: dict[str, list[float]] = {"naive": [], "second_order": []}
    knees: dict[str, dict[str, float]] = {"naive": {}, "second_order": {}}
    fitted: dict[str, Any] = {}
    per_comp: dict[str, Any] = {}
    for dt in dtypes:
        group = {k: c for k, c in comps.items() if c["dtype"] == dt}
        train, test = [], []
        for label, c in group.items():
            fit_i, held_i = calibration.alternate_split(len(c["points"]))
            train += [c["points"][i] for i in fit_i]
            test += [(label, i) for i in held_i]
        for model in ("naive", "second_order"):
            kwargs = {"acc": catalog, "tile_cols": 128 if catalog else 1}
            params = calibration.fit(train, model=model, **kwargs)
            fitted[f"{dt} {model}"] = asdict(params)
            for label, c in group.items():
                pred = calibration.predict(c["points"], params, model=model, **kwargs)
                rel = calibration.relative_errors(pred, c["points"])
                held = [i for lab, i in test if lab == label]
                errors[model] += np.abs(rel[held]).tolist()
                entry = per_comp.setdefault(
                    label,
                    {
                        "dtype": dt,
                        "batches": c["batches"],
                        "measured_s": [p.seconds for p in c["points"]],
                        "held_out_batches": [c["batches"][i] for i in held],
                    },
                )
                entry[f"{model}_predicted_s"] = pred.tolist()
                entry[f"{model}_held_out_rel_error"] = rel[held].tolist()
                if not label.startswith("conv") and len(c["batches"]) >= 5:
                    measured = np.array(entry["measured_s"])
                    ratio = _knee_ratio(c["batches"], measured, pred)
                    knees[model][label] = ratio
                    entry[f"{model}_knee_ratio"] = ratio
                    entry["measured_knee_90"] = batching.measured_knee(
                        np.array(c["batches"]), measured
                    )
                    entry[f"{model}_knee_90"] = batching.measured_knee(
                        np.array(c["batches"]), pred
                    )
    summary = {
        model: {
            "median_abs_err": float(np.median(errors[model])),
            "max_abs_err": float(np.max(errors[model])),
            "held_out_points": len(errors[model]),
            "worst_knee_ratio": max(knees[model].values()) if knees[model] else None,
        }
        for model in errors
    }
    res.metrics = {
        "summary": summary,
        "fitted_params": fitted,
        "computations": per_comp,
    }
    so = summary["second_order"]
    res.targets += [
        Target(
            "second-order, held out: median |relative error|",
            so["median_abs_err"],
            "<=",
            0.15,
            "%",
        ),
        Target(
            "second-order, held out: max |relative error|",
            so["max_abs_err"],
            "<=",
            0.40,
            "%",
        ),
    ]
    if so["worst_knee_ratio"] is not None:
        res.targets.append(
            Target(
                "second-order: worst knee ratio (measured/model)",
                so["worst_knee_ratio"],
                "<=",
                1.5,
            )
        )
    table = [
        "| model | held-out points | median abs. error | max abs. error | worst knee ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    for model, v in summary.items():
        knee = "—" if v["worst_knee_ratio"] is None else f"{v['worst_knee_ratio']:.2f}"
        table.append(
            f"| {model} | {v['held_out_points']} | {v['median_abs_err']:.0%} | {v['max_abs_err']:.0%} | {knee} |"
        )
    params_rows = [
        "| dtype, model | peak FLOP/s | bandwidth B/s | overhead per call | overlap | row tile | weight passes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, p in fitted.items():
        params_rows.append(
            f"| {key} | {format_si(p['peak'], 'FLOP/s')} | {format_si(p['bandwidth'], 'B/s')} | "
            f"{format_si(p['overhead'], 's')} | {p['overlap']:.1f} | {p['tile_rows']} | {p['pack_passes']:.1f} |"
        )
    res.markdown = (
        "Computations: Lab 2's three (`labtools.batch_sweep_sizes`), a 16-bit linear layer on a CPU "
        "(bf16, 2048 wide, batches 1-32), and each distinct convolution shape of Lab 3. Each model's "
        "parameters are fitted (`calibration.fit`, one set per dtype) on every other batch of every "
        "computation and its error is reported on the others (`calibration.alternate_split`, fixed "
        "in advance). Knee ratio: max(measured/model, model/measured) of the 90 % knees "
        "(`batching.measured_knee`) of Lab 2's sweeps.\n\n"
        + "\n".join(table)
        + "\n\nFitted parameters:\n\n"
        + "\n".join(params_rows)
    )
    return res


# --------------------------------------------------------------------------------------------------
# Section 4: how long each stage of `make test` takes


def _stage_commands(book_dir: str) -> list[tuple[str, list[str]]]:
    py = str(ROOT / ".venv" / "bin" / "python")
    nbval = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return [
        ("unit tests", [py, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"]),
        (
            "nbval chapters + appendix (strict)",
            nbval
            + [
                "--nbval",
                "--nbval-sanitize-with",
                "tests/nbval_sanitize.cfg",
                "--nbval-current-env",
                "chapters",
                "appendix",
            ],
        ),
        ("nbval labs (lax)", nbval + ["--nbval-lax", "--nbval-current-env", "labs"]),
        (
            "book build",
            [
                str(ROOT / ".venv" / "bin" / "jupyter-book"),
                "build",
                ".",
                "-n",
                "-W",
                "--keep-going",
                "--path-output",
                book_dir,
            ],
        ),
    ]


def section_make_test_stages(args: argparse.Namespace) -> SectionResult:
    res = SectionResult("make_test_stages", "How long each `make test` stage takes")
    env = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "MOONCAKE_TRACES": os.environ.get(
            "MOONCAKE_TRACES",
            str((ROOT / ".." / "shared" / "data" / "mooncake-traces").resolve()),
        ),
    }
    table = [
        "| stage | seconds | exit code | last line of output |",
        "|---|---:|---:|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="bench-book-") as book_dir:
        for label, cmd in _stage_commands(book_dir):
            start = time.perf_counter()
            try:
                proc = subprocess.run(
                    cmd,
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=args.stage_timeout,
                )
                code, out = proc.returncode, (proc.stdout + proc.stderr)
            except subprocess.TimeoutExpired as exc:
                code, out = "timeout", str(exc.stdout or "")
            seconds = time.perf_counter() - start
            out = re.sub(r"\x1b\[[0-9;]*m", "", out)  # colour codes
            lines = [
                l.strip()
                for l in out.splitlines()
                if l.strip() and "WARNING | Kernel is running over TCP" not in l
            ]
            last = lines[-1] if lines else ""
            problems = [
                l
                for l in lines
                if l.startswith(("FAILED", "ERROR"))
                or ": WARNING:" in l
                or ": ERROR:" in l
            ]
            res.metrics[label] = {
                "command": " ".join(cmd),
                "seconds": seconds,
                "exit_code": code,
                "last_line": last[:300],
                "failures_and_warnings": problems[:50],
                "n_failures_and_warnings": len(problems),
            }
            summary = (
                last
                if code == 0
                else f"{len(problems)} failure/warning lines; last: {last}"
            )
            table.append(
                f"| {label} | {seconds:.0f} | {code} | {summary[:160].replace('|', '/')} |"
            )
    res.metrics["total_seconds"] = sum(
        v["seconds"] for v in res.metrics.values() if isinstance(v, dict)
    )
    res.markdown = (
        "Commands as in the Makefile's `test-unit`, `test-notebooks` and `test-book` (the book is built into "
        "a temporary folder), run one after the other in this process's environment. A non-zero exit code "
        "is reported, not hidden; the JSON lists the first 50 failure and warning lines of each stage.\n\n"
        + "\n".join(table)
        + f"\n\nTotal: {res.metrics['total_seconds']:.0f} s."
    )
    return res


# --------------------------------------------------------------------------------------------------
# Section 4: KV-cache transfer, torch.distributed against a plain socket (benchmarks/kv_transfer.py)


def section_kv_transfer(args: argparse.Namespace) -> SectionResult:
    from benchmarks.kv_transfer import run_section

    out = run_section(rounds=args.rounds)
    return SectionResult(
        "kv_transfer",
        out["title"],
        out["metrics"],
        [Target(*t) for t in out["targets"]],
        out["markdown"],
    )


# --------------------------------------------------------------------------------------------------
# Section 5: replaying the Mooncake traces (benchmarks/trace_replay.py)


def section_trace_replay(args: argparse.Namespace) -> SectionResult:
    from benchmarks.trace_replay import run_section

    out = run_section(rounds=args.rounds)
    return SectionResult(
        "trace_replay",
        out["title"],
        out["metrics"],
        [Target(*t) for t in out["targets"]],
        out["markdown"],
    )


SECTIONS: list[tuple[str, Callable[[argparse.Namespace], SectionResult]]] = [
    ("measurement", section_measurement),
    ("model_fidelity", section_model_fidelity),
    ("fidelity", section_fidelity),
    ("kv_transfer", section_kv_transfer),
    ("trace_replay", section_trace_replay),
    ("make_test_stages", section_make_test_stages),
]
"""Every section, in order. A new section is a function ``args -> SectionResult`` appended here."""


# --------------------------------------------------------------------------------------------------


def machine_slug() -> str:
    """File name for this machine's results: the GPU model, or ``cpu-<model>-<n>cpus``."""
    if torch.cuda.is_available():
        raw = torch.cuda.get_device_name(0)
    else:
        raw = f"cpu-{bench.cpu_name()}-{os.cpu_count()}cpus"
    slug = re.sub(r"\((r|tm)\)", "", raw.lower())
    slug = re.sub(r"[^a-z0-9]+", "-", slug).strip("-")
    return slug or socket.gethostname()


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _merge_earlier(path: Path, results: list[SectionResult]) -> list[SectionResult]:
    """This run's sections, preceded by the sections of an earlier run's JSON that this run did not repeat."""
    if not path.exists():
        return results
    done = {r.name for r in results}
    kept = []
    for sec in json.loads(path.read_text()).get("sections", []):
        if sec["name"] in done:
            continue
        targets = [
            Target(**{k: v for k, v in t.items() if k != "met"})
            for t in sec.get("targets", [])
        ]
        fields = {k: v for k, v in sec.items() if k != "targets"}
        kept.append(SectionResult(**fields, targets=targets))
    return kept + results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--skip-stages",
        action="store_true",
        help="leave out the make-test stage timings (quick run)",
    )
    parser.add_argument(
        "only",
        nargs="*",
        help="sections to run, as positional names (e.g. `fidelity`); same as --sections",
    )
    parser.add_argument(
        "--sections",
        nargs="*",
        help=f"run only these sections (default all): {[n for n, _ in SECTIONS]}",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads on a CPU (default 1, as in the labs)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="interleaved rounds per comparison in 'measurement'",
    )
    parser.add_argument(
        "--min-run-time",
        type=float,
        default=1.0,
        help="seconds per Timer.blocked_autorange",
    )
    parser.add_argument(
        "--stage-timeout",
        type=float,
        default=3600.0,
        help="seconds before a make-test stage is stopped",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "benchmarks" / "results",
        help="folder for the result files",
    )
    args = parser.parse_args(argv)
    args.sections = (args.sections or []) + args.only
    unknown = set(args.sections) - {n for n, _ in SECTIONS}
    if unknown:
        parser.error(
            f"unknown sections {sorted(unknown)}; choose from {[n for n, _ in SECTIONS]}"
        )

    if not torch.cuda.is_available():
        torch.set_num_threads(args.threads or 1)
    chosen = [
        (n, f)
        for n, f in SECTIONS
        if (not args.sections or n in args.sections)
        and not (args.skip_stages and n == "make_test_stages")
    ]
    print(bench.describe_device(), flush=True)
    results: list[SectionResult] = []
    for name, fn in chosen:
        print(f"\n== {name} ...", flush=True)
        load_before, start = os.getloadavg(), time.perf_counter()
        try:
            result = fn(args)
        except (
            Exception
        ) as exc:  # a failing section is reported, not fatal to the others
            result = SectionResult(name, name, error=f"{type(exc).__name__}: {exc}")
        result.seconds, result.load_before, result.load_after = (
            time.perf_counter() - start,
            load_before,
            os.getloadavg(),
        )
        results.append(result)
        print(result.error or result.markdown, flush=True)
        for target in result.targets:
            print("  " + target.line(), flush=True)

    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    meta = {
        "date": now,
        "hostname": socket.gethostname(),
        "device": bench.device_name(),
        "describe_device": bench.describe_device(),
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "argv": sys.argv[1:],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    slug = machine_slug()
    results = _merge_earlier(args.out / f"{slug}.json", results)
    payload = {
        "meta": meta,
        "sections": [
            {**asdict(r), "targets": [t.as_dict() for t in r.targets]} for r in results
        ],
    }
    fidelity = next((r for r in results if r.name == "fidelity" and not r.error), None)
    if fidelity is not None:
        payload["fidelity"] = fidelity.metrics["summary"]
    (args.out / f"{slug}.json").write_text(
        json.dumps(payload, indent=2, default=float) + "\n"
    )
    md = [
        f"# Benchmark: {meta['device']}",
        "",
        f"{now}, commit `{meta['git_commit'][:10]}`, torch {meta['torch']} ({meta['torch_threads']} thread(s)), "
        f"{meta['cpu_count']} CPUs, host `{meta['hostname']}`. Command: `python benchmarks/run.py {' '.join(meta['argv'])}`.",
        "",
        "```",
        meta["describe_device"],
        "```",
        "",
        "## Targets",
        "",
    ]
    md += ["| section | target | value | threshold | met |", "|---|---|---:|---:|---|"]
    for r in results:
        for t in r.targets:
            show = (lambda v: f"{v:.1%}") if t.unit == "%" else (lambda v: f"{v:.3f}")
            label = t.name.replace("|", "\\|")  # a literal | would end the table cell
            md.append(
                f"| {r.name} | {label} | {show(t.value)} | {t.op} {show(t.threshold)} | {'yes' if t.met else '**no**'} |"
            )
    for r in results:
        md += [
            "",
            f"## {r.title}",
            "",
            f"Took {r.seconds:.0f} s; load average (1 min) {r.load_before[0]:.1f} before, {r.load_after[0]:.1f} after "
            f"on {meta['cpu_count']} CPUs.",
            "",
        ]
        md.append(f"**Error:** `{r.error}`" if r.error else r.markdown)
    (args.out / f"{slug}.md").write_text("\n".join(md) + "\n")

    print(f"\nwrote {args.out / (slug + '.json')} and .md")
    met = [t.met for r in results for t in r.targets]
    print(
        f"targets met: {sum(met)} of {len(met)}; sections with errors: {sum(r.error is not None for r in results)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
