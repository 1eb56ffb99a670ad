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

**A run that cannot be lost.** Each lab runs in its own process with a wall-clock cap (twice its
planned time, at least :data:`MIN_LAB_CAP_S`, never past the budget): a lab that hangs (a
stuck worker, a slow autotune) is killed with its kernel and named, and the next lab runs. The
results are packed again after every lab, so whatever finished is in ``DIR`` even if the
machine's command limit ends the job. Each lab prints where its outputs come from (the device
and, on a CPU, its cores) from the run itself, so a GPU run's pages name the GPU.

``run --dry-run`` does everything but the labs, on any machine: it checks that the notebook
machinery imports and that a kernel starts, and that kernel imports every module the labs import
(:func:`lab_imports`); it prints the plan and packs the labs as they are. The tests run it on the
CPU, once in a fresh virtual environment holding only what the H200 image and
``make gpu-wheels`` provide.
"""

from __future__ import annotations

import argparse
import ast
import datetime as _dt
import hashlib
import io
import json
import os
import platform
import re
import signal
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

MAX_FILES = 8
"""Most files a remote run may hand back (the device tool's limit)."""
MAX_FILE_BYTES = 16 * 2**20
"""Largest file a remote run may hand back, in bytes (16 MiB)."""
DEFAULT_BUDGET_S = 540.0
"""Seconds for the labs and the benchmark together: 10 minutes less a minute for start-up and packing."""
BENCHMARK_PLAN_S = 120.0
"""Seconds held back for ``benchmarks/run.py --skip-stages`` after the labs."""
MIN_LAB_CAP_S = 150.0
"""Shortest wall-clock cap of one lab (2.5 min): plans come from CPU runs with smaller sizes,
and a GPU adds cuDNN autotuning and graph captures."""
PACKED_PREFIXES = ("labs/", "benchmarks/results/")
"""The only places a packed run may write to when it is unpacked."""
_ARCHIVE = "gpu-labs.tar.gz"
_MANIFEST = "gpu-labs-manifest.json"
_LOG = "gpu-labs.log"


def lab_paths(toc: Path = ROOT / "_toc.yml") -> list[Path]:
    """The labs, in the book's order: the files of the ``_toc.yml`` part captioned ``Labs``.

    Read without PyPI's YAML parser (a GPU image may lack it): the part starts at its
    ``caption: Labs`` line and each ``file:`` line until the next ``caption:`` is a lab.
    """
    labs: list[Path] = []
    inside = False
    for line in toc.read_text().splitlines():
        caption = re.match(r"\s*-?\s*caption:\s*(.+?)\s*$", line)
        if caption:
            if inside:
                break
            inside = caption.group(1).strip("'\"") == "Labs"
            continue
        entry = re.match(r"\s*-?\s*file:\s*(\S+)\s*$", line)
        if inside and entry:
            labs.append(ROOT / f"{entry.group(1).strip(chr(39) + chr(34))}.ipynb")
    if not labs:
        raise KeyError(f"{toc} has no part captioned 'Labs'")
    return labs


def _code(cell: nbformat.NotebookNode) -> str:
    """A code cell's source without IPython magics and shell lines (``%pip``, ``!apt-get``)."""
    lines = cell.source.splitlines()
    return "\n".join("" if line.lstrip()[:1] in "%!" else line for line in lines)


def lab_imports(paths: Sequence[Path]) -> list[tuple[str, tuple[str, ...]]]:
    """Every ``import`` of the labs' code cells: ``(module, names)`` sorted, ``names`` empty for ``import m``.

    Imports inside an ``if "google.colab" in sys.modules:`` block (Colab's set-up) are left out.
    """
    found: dict[str, set[str]] = {}
    for path in paths:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code" or "google.colab" in cell.source:
                continue
            for node in ast.walk(ast.parse(_code(cell))):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        found.setdefault(alias.name, set())
                elif (
                    isinstance(node, ast.ImportFrom) and node.module and not node.level
                ):
                    found.setdefault(node.module, set()).update(
                        a.name for a in node.names
                    )
    return sorted((m, tuple(sorted(names))) for m, names in found.items())


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

_IMPORT_CHECK = """import importlib
failed = []
for module, names in {imports!r}:
    try:
        mod = importlib.import_module(module)
        for name in names:
            if not hasattr(mod, name):
                importlib.import_module(module + "." + name)
    except Exception as exc:
        failed.append(f"{{module}} {{names}}: {{type(exc).__name__}}: {{exc}}")
print("imports ok" if not failed else "imports FAILED:\\n" + "\\n".join(failed))
"""


def kernel_smoke_test(
    imports: Sequence[tuple[str, tuple[str, ...]]] = (),
) -> float:
    """Execute a small notebook in a fresh kernel that also imports ``imports``; return seconds.

    Raises ``RuntimeError`` if no kernel starts, or naming every import that fails.
    """
    from execute import execute

    cells = [*_SMOKE, _IMPORT_CHECK.format(imports=[tuple(i) for i in imports])]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in cells])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "smoke.ipynb"
        nbformat.write(nb, path)
        seconds = execute(path, timeout=300)
        done = nbformat.read(path, as_version=4).cells
    out = done[1].outputs
    if not out or out[0].get("text", "").strip() != "42":
        raise RuntimeError(f"the smoke-test kernel printed {out!r}, not 42")
    report = "".join(o.get("text", "") for o in done[2].outputs).strip()
    if report != "imports ok":
        raise RuntimeError(f"the labs' imports fail in this kernel: {report}")
    return seconds


def lab_cap_s(planned_s: float, left_s: float) -> float:
    """Wall-clock cap of one lab: twice its planned seconds, at least :data:`MIN_LAB_CAP_S`, at most ``left_s``."""
    return max(1.0, min(max(2.0 * planned_s, MIN_LAB_CAP_S), left_s))


def execute_capped(path: Path, cap_s: float) -> float:
    """Execute ``path`` in place in a child process killed (with its kernel) after ``cap_s`` seconds.

    Returns the seconds it took; raises ``TimeoutError`` past the cap (the notebook is left as
    it was) and ``RuntimeError`` with the error's last lines if the lab failed.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "execute.py"), str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the kernel goes with it
    )
    try:
        output, _ = proc.communicate(timeout=cap_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise TimeoutError(f"stopped after its cap of {cap_s:.0f} s") from None
    if proc.returncode != 0:
        raise RuntimeError(output.strip()[-1500:])
    return time.perf_counter() - start


def _wheel_python_tags(folder: Path = ROOT / ".whl") -> set[str]:
    return {
        m.group(1)
        for w in folder.glob("*.whl")
        if (m := re.search(r"-(cp3\d+)-", w.name))
    }


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
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    say(f"python {platform.python_version()} ({sys.executable})")
    tags = _wheel_python_tags()
    if tags and here not in tags:
        say(
            f"warning: .whl holds {sorted(tags)} wheels but this Python is {here}: run "
            f"`make gpu-wheels GPU_PY_VERSION={sys.version_info.major}.{sys.version_info.minor}`"
        )
    if not has_cuda and not args.dry_run:
        say(
            "no CUDA device: `make gpu-labs` runs on a GPU machine (use --dry-run here)"
        )
        return 2
    labs = [ROOT / p for p in args.labs] if args.labs else lab_paths()
    imports = lab_imports(labs)
    say(
        f"kernel smoke test, {len(imports)} imports of the labs: {kernel_smoke_test(imports):.1f} s"
    )

    planned = []
    for path in labs:
        seconds = recorded_seconds(nbformat.read(path, as_version=4))
        planned.append((path, seconds if seconds is not None else 180.0))
    plan = make_plan(planned, args.budget_s)
    say(plan.describe())

    written: list[Path] = []
    failed: list[str] = []

    def pack_now(final: bool) -> None:
        if not args.out:
            return
        meta = {
            "device": device,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "dry_run": args.dry_run,
            "complete": final,
            "skipped": [str(p.relative_to(ROOT)) for p, _ in plan.skipped],
            "failed": failed,
        }
        out = Path(args.out)
        for stale in out.glob(f"{_ARCHIVE}.part*"):
            stale.unlink()
        for f in pack(written, out, meta=meta, log="\n".join(log) + "\n"):
            if final:
                print(f"packed {f} ({f.stat().st_size} bytes)")

    for path, seconds in plan.run:
        name = path.relative_to(ROOT)
        if args.dry_run:
            say(f"dry run: {name} not executed")
            written.append(path)
            continue
        left = args.budget_s - BENCHMARK_PLAN_S - (time.perf_counter() - start)
        if left < 10:
            say(f"{name}: not started, the budget is spent")
            failed.append(str(name))
            continue
        cap = lab_cap_s(seconds, left)
        # One failing or hanging lab must not lose the others' results: report it and go on.
        try:
            say(f"{name}: executed in {execute_capped(path, cap):.1f} s on {device}")
            written.append(path)
        except (TimeoutError, RuntimeError) as exc:
            say(f"{name}: FAILED ({type(exc).__name__}: {exc}); outputs not saved")
            failed.append(str(name))
        pack_now(
            final=False
        )  # what finished so far is in OUT even if the job is cut off

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
    pack_now(final=True)
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
