"""Run every lab and the benchmark on a CUDA machine, and carry the results back: ``make gpu-labs``.

``python tools/gpu_labs.py run`` executes the labs of ``_toc.yml`` in place (their committed outputs
become this GPU's), then ``benchmarks/run.py --skip-stages``, inside a time budget (default 540 s,
so that the whole job fits in 10 minutes on one GPU with start-up). The plan comes from the labs'
own last run: each executed notebook records when each cell started and finished, so the time a
lab took on the machine that last ran it (a 2-core CPU, for the committed labs) is read from the
notebook itself. A lab whose planned time no longer fits the budget left is skipped and named.

With ``--out DIR`` (``make gpu-labs`` passes ``$OUT`` when it is set) everything the run wrote,
the executed labs and the benchmark's result files, is packed into ``DIR`` as at most
:data:`MAX_FILES` files of at most :data:`MAX_FILE_BYTES` each (a split ``.tar.gz``, a manifest
with sha256 sums, the log), so a remote GPU machine's results can be copied back and unpacked
here with ``python tools/gpu_labs.py unpack DIR`` (which checks every sum) and committed.

``run --dry-run`` does everything but the labs, on any machine: it checks that the notebook
machinery imports and that a kernel starts (by executing a two-cell notebook), prints the plan,
and packs the labs as they are. The tests run it on the CPU.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402
import yaml  # noqa: E402

MAX_FILES = 8
"""Most files a remote run may hand back (the device tool's limit)."""
MAX_FILE_BYTES = 16 * 2**20
"""Largest file a remote run may hand back, in bytes (16 MiB)."""
DEFAULT_BUDGET_S = 540.0
"""Seconds for the labs and the benchmark together: 10 minutes less a minute for start-up and packing."""
BENCHMARK_PLAN_S = 120.0
"""Seconds held back for ``benchmarks/run.py --skip-stages`` after the labs."""
PACKED_PREFIXES = ("labs/", "benchmarks/results/")
"""The only places a packed run may write to when it is unpacked."""
_ARCHIVE = "gpu-labs.tar.gz"
_MANIFEST = "gpu-labs-manifest.json"
_LOG = "gpu-labs.log"


def lab_paths(toc: Path = ROOT / "_toc.yml") -> list[Path]:
    """The labs, in the book's order: the files of the ``_toc.yml`` part captioned ``Labs``."""
    parts = yaml.safe_load(toc.read_text())["parts"]
    labs = [p for p in parts if p.get("caption") == "Labs"]
    if not labs:
        raise KeyError(f"{toc} has no part captioned 'Labs'")
    return [ROOT / f"{c['file']}.ipynb" for c in labs[0]["chapters"]]


def recorded_seconds(nb: nbformat.NotebookNode) -> float | None:
    """Seconds the notebook's last execution took, from its cells' timing metadata (None if absent)."""
    starts, ends = [], []
    for cell in nb.cells:
        timing = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            starts.append(_dt.datetime.fromisoformat(timing["iopub.execute_input"]))
            ends.append(_dt.datetime.fromisoformat(timing["shell.execute_reply"]))
    if not starts:
        return None
    return (max(ends) - min(starts)).total_seconds()


@dataclass(frozen=True)
class Plan:
    """Which labs run inside the budget: ``run`` and ``skipped`` hold (path, planned seconds)."""

    run: tuple[tuple[Path, float], ...]
    skipped: tuple[tuple[Path, float], ...]
    budget_s: float
    benchmark_s: float

    @property
    def planned_s(self) -> float:
        """Seconds the chosen labs and the benchmark are planned to take."""
        return sum(s for _, s in self.run) + self.benchmark_s

    def describe(self) -> str:
        lines = [
            f"plan: {len(self.run)} lab(s) + benchmark, {self.planned_s:.0f} s planned "
            f"of a {self.budget_s:.0f} s budget (planned from each lab's last recorded run)"
        ]
        lines += [f"  run   {p.relative_to(ROOT)}  ~{s:.0f} s" for p, s in self.run]
        lines += [
            f"  SKIP  {p.relative_to(ROOT)}  ~{s:.0f} s (does not fit)"
            for p, s in self.skipped
        ]
        return "\n".join(lines)


def make_plan(
    planned: Sequence[tuple[Path, float]],
    budget_s: float,
    *,
    benchmark_s: float = BENCHMARK_PLAN_S,
) -> Plan:
    """Keep labs in order while their planned seconds fit in ``budget_s`` less ``benchmark_s``."""
    if budget_s <= 0:
        raise ValueError(f"budget_s must be positive, got {budget_s}")
    if benchmark_s < 0:
        raise ValueError(f"benchmark_s must be >= 0, got {benchmark_s}")
    left = budget_s - benchmark_s
    run, skipped = [], []
    for path, seconds in planned:
        (run if seconds <= left else skipped).append((path, seconds))
        if seconds <= left:
            left -= seconds
    return Plan(tuple(run), tuple(skipped), budget_s, benchmark_s)


def pack(
    files: Sequence[Path],
    out: Path,
    *,
    meta: dict,
    log: str,
    max_files: int = MAX_FILES,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> list[Path]:
    """Write ``files`` (inside the repository) to ``out`` as a split archive, manifest and log.

    Returns the files written. Raises ValueError if they would need more than ``max_files`` files.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in files:
            tar.add(path, arcname=str(path.resolve().relative_to(ROOT)))
    data = buffer.getvalue()
    chunks = [
        data[i : i + max_file_bytes] for i in range(0, len(data), max_file_bytes)
    ] or [b""]
    if len(chunks) + 2 > max_files:
        raise ValueError(
            f"the results need {len(chunks)} archive parts of {max_file_bytes} bytes plus a "
            f"manifest and a log, more than max_files={max_files}"
        )
    out.mkdir(parents=True, exist_ok=True)
    written = []
    parts = []
    for i, chunk in enumerate(chunks):
        part = out / f"{_ARCHIVE}.part{i:02d}"
        part.write_bytes(chunk)
        parts.append({"name": part.name, "sha256": hashlib.sha256(chunk).hexdigest()})
        written.append(part)
    manifest = {
        **meta,
        "files": [str(p.resolve().relative_to(ROOT)) for p in files],
        "parts": parts,
    }
    (out / _MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    (out / _LOG).write_text(log)
    return [*written, out / _MANIFEST, out / _LOG]


def unpack(folder: Path, dest: Path = ROOT) -> list[str]:
    """Check the parts in ``folder`` against their manifest and extract them into ``dest``."""
    manifest = json.loads((folder / _MANIFEST).read_text())
    data = b""
    for part in manifest["parts"]:
        chunk = (folder / part["name"]).read_bytes()
        if hashlib.sha256(chunk).hexdigest() != part["sha256"]:
            raise ValueError(f"{part['name']}: sha256 does not match the manifest")
        data += chunk
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            if (
                not (m.isfile() and m.name.startswith(PACKED_PREFIXES))
                or ".." in m.name
            ):
                raise ValueError(
                    f"{m.name}: not a file under {PACKED_PREFIXES}; refusing to unpack"
                )
        tar.extractall(dest, members=members, filter="data")
    return [m.name for m in members]


_SMOKE = ["x = 6 * 7", "print(x)"]


def kernel_smoke_test() -> float:
    """Execute a two-cell notebook in a fresh kernel; return seconds. Raises if no kernel starts."""
    from execute import execute

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in _SMOKE])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "smoke.ipynb"
        nbformat.write(nb, path)
        seconds = execute(path, timeout=120)
        out = nbformat.read(path, as_version=4).cells[1].outputs
    if not out or out[0].get("text", "").strip() != "42":
        raise RuntimeError(f"the smoke-test kernel printed {out!r}, not 42")
    return seconds


def _device() -> tuple[str, bool]:
    import torch

    if torch.cuda.is_available():
        return (
            f"{torch.cuda.get_device_name(0)} (torch {torch.__version__}, CUDA {torch.version.cuda})",
            True,
        )
    return f"CPU only (torch {torch.__version__})", False


def run(args: argparse.Namespace) -> int:
    log: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        log.append(line)

    start = time.perf_counter()
    device, has_cuda = _device()
    say(f"device: {device}")
    if not has_cuda and not args.dry_run:
        say(
            "no CUDA device: `make gpu-labs` runs on a GPU machine (use --dry-run here)"
        )
        return 2
    say(f"kernel smoke test: {kernel_smoke_test():.1f} s")

    labs = [ROOT / p for p in args.labs] if args.labs else lab_paths()
    planned = []
    for path in labs:
        seconds = recorded_seconds(nbformat.read(path, as_version=4))
        planned.append((path, seconds if seconds is not None else 180.0))
    plan = make_plan(planned, args.budget_s)
    say(plan.describe())

    from execute import execute

    written: list[Path] = []
    for path, _ in plan.run:
        name = path.relative_to(ROOT)
        if args.dry_run:
            say(f"dry run: {name} not executed")
        else:
            # One failing lab must not lose the others' results: report it and go on.
            try:
                say(f"{name}: executed in {execute(path):.1f} s on {device}")
            except Exception as exc:
                say(f"{name}: FAILED ({type(exc).__name__}: {exc}); outputs not saved")
                continue
        written.append(path)

    bench_started = time.time()
    if args.dry_run:
        say("dry run: benchmarks/run.py not run")
    else:
        left = max(args.budget_s - (time.perf_counter() - start), 30.0)
        try:
            proc = subprocess.run(
                [sys.executable, "benchmarks/run.py", "--skip-stages"],
                cwd=ROOT,
                timeout=left,
                capture_output=True,
                text=True,
            )
            say(proc.stdout[-4000:] + proc.stderr[-2000:])
            say(f"benchmark exit status {proc.returncode}")
        except subprocess.TimeoutExpired:
            say(f"benchmark stopped after {left:.0f} s (over budget)")
    results = ROOT / "benchmarks" / "results"
    written += [
        p
        for p in sorted(results.glob("*"))
        if p.suffix in {".json", ".md"} and p.stat().st_mtime >= bench_started - 1
    ]
    say(f"total {time.perf_counter() - start:.0f} s")

    if args.out:
        meta = {
            "device": device,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "dry_run": args.dry_run,
            "skipped": [str(p.relative_to(ROOT)) for p, _ in plan.skipped],
        }
        for f in pack(written, Path(args.out), meta=meta, log="\n".join(log) + "\n"):
            print(f"packed {f} ({f.stat().st_size} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="execute the labs and the benchmark")
    p_run.add_argument(
        "--dry-run", action="store_true", help="plan and pack, run no lab"
    )
    p_run.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S)
    p_run.add_argument("--out", default=os.environ.get("OUT") or None)
    p_run.add_argument(
        "--labs", nargs="*", help="these labs only (paths from the root)"
    )
    p_unpack = sub.add_parser("unpack", help="check and extract a packed run")
    p_unpack.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "unpack":
        for name in unpack(args.folder):
            print(f"unpacked {name}")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
