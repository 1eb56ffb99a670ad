"""Validate every lab and the benchmark on one CUDA machine in one call: ``make gpu-labs`` (at most 8 min on an H200).

``python tools/gpu_labs.py run`` does, in order, inside :data:`DEFAULT_BUDGET_S`:

1. **A self-test of the GPU timing paths** (``selftest``, its own process, capped): a small
   convolution timed by ``bench.time_amortized(graph=True)`` must report CUDA-graph replay, a
   large matmul must time the same by events and by graph, the GPU's floor per kernel is measured
   (a replayed graph of tiny adds), the profiler must classify a conv + batch norm + ReLU, and a
   trace of one ResNet bottleneck must hold GPU kernels. A failing self-test is printed first.
2. **The labs**, each executed in place in its own process (``execute-one``) under a wall-clock
   cap. The plan and the caps come from this GPU's own times (:data:`GPU_SECONDS_FILE`: the
   last measured seconds per lab on this device, else the review's H200 estimates, labelled so;
   never the committed CPU run). Labs that use no GPU (:data:`CPU_ONLY_LABS`, Lab 7) run beside
   the GPU labs on cores of their own. A lab that fails or reaches its cap is still saved with
   every output it produced (the failing cell's error included), and at the cap the lab's whole
   process tree (the kernel, its workers, a Mooncake master in its own session) is stopped.
3. **The benchmark** (``benchmarks/run.py --skip-stages``) in the time left, if at least
   :data:`BENCHMARK_MIN_S`.
4. **A closing table**: each lab's planned against measured seconds, its status, and the lines
   in which the lab compares its model's predictions with its measurements ("Predicted against
   measured ..."). The measured seconds are written back to :data:`GPU_SECONDS_FILE`.

``PYTHONPATH`` is set to the repository for every child process, so ``import helpers`` works
whatever the shell exported. With ``--out DIR`` (``$OUT`` when set) the results are packed into
``DIR`` after every lab as at most :data:`MAX_FILES` files of at most :data:`MAX_FILE_BYTES`
each (a split ``.tar.gz``, a manifest with sha256 sums, the log), to be copied back and unpacked
here with ``python tools/gpu_labs.py unpack DIR``.

``run --dry-run`` (also ``plan``) does everything but the GPU work, on any machine: it starts a
kernel that imports every module the labs import (:func:`lab_imports`), runs the self-test's
CPU part, prints the plan for ``--device`` (default :data:`DEFAULT_PLAN_DEVICE`) and packs the
labs as they are. The tests run it on the CPU.
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

WHEEL_SITE = Path(tempfile.gettempdir()) / "gpu-labs-site"
"""Where the wheels carried in ``.whl`` (``make gpu-wheels``) are installed for a run."""
_installed: list[str] = []


def _install_wheels(folder: Path = ROOT / ".whl") -> str | None:
    """pip-install ``folder``'s wheels into :data:`WHEEL_SITE` once; an error message, or None."""
    wheels = sorted(folder.glob("*.whl"))
    if not wheels or _installed:
        return None
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    command += ["--no-compile", "--target", str(WHEEL_SITE), *map(str, wheels)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        return f"installing .whl failed: {proc.stderr.strip()[-500:]}"
    _installed.extend(w.name for w in wheels)
    if str(WHEEL_SITE) not in sys.path:
        sys.path.insert(0, str(WHEEL_SITE))
    return None


try:  # a bare GPU image lacks the notebook packages: take them from the carried wheels
    import nbformat  # noqa: E402
except ImportError:
    _install_wheels()
    import nbformat  # noqa: E402

MAX_FILES = 8
"""Most files a remote run may hand back (the device tool's limit)."""
MAX_FILE_BYTES = 16 * 2**20
"""Largest file a remote run may hand back, in bytes (16 MiB)."""
DEFAULT_BUDGET_S = 480.0
"""Seconds for the self-test, the labs and the benchmark together: one 8-minute call."""
SELFTEST_PLAN_S = 40.0
"""Seconds planned for the self-test (capped at :data:`SELFTEST_CAP_S`)."""
SELFTEST_CAP_S = 120.0
"""Wall-clock cap of the self-test."""
BENCHMARK_PLAN_S = 45.0
"""Seconds held back for ``benchmarks/run.py --skip-stages`` after the labs."""
BENCHMARK_MIN_S = 45.0
"""The benchmark runs only if at least this many seconds of the budget are left."""
MIN_LAB_CAP_S = 60.0
"""Shortest wall-clock cap of one lab: a lab gets twice its planned GPU seconds, at least this."""
TERM_GRACE_S = 10.0
"""Seconds a capped lab has, after SIGTERM, to save its notebook before its process tree is killed."""
GPU_SECONDS_FILE = ROOT / "tools" / "gpu_lab_seconds.json"
"""Seconds each lab takes per GPU: measured by the last ``make gpu-labs`` on that GPU, or estimated."""
DEFAULT_PLAN_DEVICE = "NVIDIA H200"
"""The GPU whose times plan a dry run, and stand in for a GPU with no entry of its own."""
CPU_ONLY_LABS = ("lab7_kv_pool",)
"""Labs that measure only the CPU: they run beside the GPU labs, on cores of their own."""
PREDICTION_PREFIX = "Predicted against measured"
"""How a lab's output line comparing its model with its measurements begins (the closing table reads them)."""
PACKED_PREFIXES = ("labs/", "benchmarks/results/", "tools/gpu_lab_seconds.json")
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


def gpu_seconds(
    device: str, *, path: Path = GPU_SECONDS_FILE
) -> dict[str, tuple[float, str]]:
    """``{lab stem: (seconds, how known)}`` for ``device``: its own entry, else :data:`DEFAULT_PLAN_DEVICE`'s.

    "How known" is the entry's ``kind`` (``"measured"`` by a ``make gpu-labs`` run, or
    ``"estimate"``) and the device it is for, e.g. ``"estimate, NVIDIA H200"``.
    """
    data = json.loads(path.read_text())
    devices = data["devices"]
    chosen = device if device in devices else DEFAULT_PLAN_DEVICE
    return {
        stem: (float(entry["seconds"]), f"{entry['kind']}, {chosen}")
        for stem, entry in devices[chosen].items()
    }


def record_gpu_seconds(
    device: str, measured: dict[str, float], *, path: Path = GPU_SECONDS_FILE
) -> None:
    """Write the seconds each lab took on ``device`` into ``path`` (kind ``"measured"``), for the next plan."""
    data = json.loads(path.read_text())
    entry = data["devices"].setdefault(device, {})
    today = _dt.date.today().isoformat()
    for stem, seconds in measured.items():
        entry[stem] = {"seconds": round(seconds, 1), "kind": "measured", "date": today}
    path.write_text(json.dumps(data, indent=2) + "\n")


@dataclass(frozen=True)
class Plan:
    """Which labs run inside the budget: ``run`` (one after another), ``beside`` (CPU-only, in
    parallel with them) and ``skipped`` hold (path, planned seconds)."""

    run: tuple[tuple[Path, float], ...]
    skipped: tuple[tuple[Path, float], ...]
    budget_s: float
    benchmark_s: float
    beside: tuple[tuple[Path, float], ...] = ()
    selftest_s: float = 0.0
    source: str = "planned seconds"

    @property
    def planned_s(self) -> float:
        """Seconds the self-test, the labs run one after another and the benchmark are planned to take."""
        return self.selftest_s + sum(s for _, s in self.run) + self.benchmark_s

    def describe(self) -> str:
        lines = [
            f"plan: self-test + {len(self.run)} lab(s) + benchmark, {self.planned_s:.0f} s "
            f"planned of a {self.budget_s:.0f} s budget ({self.source})"
        ]
        lines += [f"  run     {p.relative_to(ROOT)}  ~{s:.0f} s" for p, s in self.run]
        lines += [
            f"  beside  {p.relative_to(ROOT)}  ~{s:.0f} s (CPU only, on its own cores)"
            for p, s in self.beside
        ]
        lines += [
            f"  SKIP    {p.relative_to(ROOT)}  ~{s:.0f} s (does not fit)"
            for p, s in self.skipped
        ]
        return "\n".join(lines)


def make_plan(
    planned: Sequence[tuple[Path, float]],
    budget_s: float,
    *,
    benchmark_s: float = BENCHMARK_PLAN_S,
    beside: Sequence[tuple[Path, float]] = (),
    selftest_s: float = 0.0,
    source: str = "planned seconds",
) -> Plan:
    """Keep labs in order while their planned seconds fit in ``budget_s`` less the self-test and ``benchmark_s``.

    A ``beside`` lab (CPU only) runs in parallel with the others, so it needs only to fit the
    budget after the self-test on its own.
    """
    if budget_s <= 0:
        raise ValueError(f"budget_s must be positive, got {budget_s}")
    if benchmark_s < 0:
        raise ValueError(f"benchmark_s must be >= 0, got {benchmark_s}")
    if selftest_s < 0:
        raise ValueError(f"selftest_s must be >= 0, got {selftest_s}")
    left = budget_s - selftest_s - benchmark_s
    run: list[tuple[Path, float]] = []
    skipped: list[tuple[Path, float]] = []
    for path, seconds in planned:
        (run if seconds <= left else skipped).append((path, seconds))
        if seconds <= left:
            left -= seconds
    fits = [(p, s) for p, s in beside if s <= budget_s - selftest_s]
    skipped += [(p, s) for p, s in beside if s > budget_s - selftest_s]
    return Plan(
        tuple(run),
        tuple(skipped),
        budget_s,
        benchmark_s,
        tuple(fits),
        selftest_s,
        source,
    )


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


def _child_env() -> dict[str, str]:
    """This environment with the repository first on ``PYTHONPATH`` (so every kernel imports these helpers)."""
    env = dict(os.environ)
    old = env.get("PYTHONPATH", "")
    parts = [str(ROOT)] + [p for p in old.split(os.pathsep) if p and p != str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), read from ``/proc``; empty elsewhere.

    A kernel runs in a session of its own, and a Mooncake master in another, so a process-group
    kill misses them (L4-8); their parentage still leads back to the lab's process.
    """
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kill_tree(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def execute_capped(
    path: Path, cap_s: float, *, cores: Sequence[int] | None = None
) -> float:
    """Execute ``path`` in place in a child process (``execute-one``), stopped after ``cap_s`` seconds.

    The notebook is saved whatever happens: a failing cell keeps its error, and at the cap the
    child gets SIGTERM and :data:`TERM_GRACE_S` seconds to save what ran; then the child and every
    process below it (kernel, workers, a master in its own session) are killed. ``cores`` pins the
    child (and so its kernel) to those CPUs. Returns the seconds it took; raises ``TimeoutError``
    past the cap and ``RuntimeError`` with the error's last lines if a cell failed.
    """
    start = time.perf_counter()
    pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "execute-one", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_child_env(),
        start_new_session=True,
        preexec_fn=pin,
    )
    try:
        output, _ = proc.communicate(timeout=cap_s)
    except subprocess.TimeoutExpired:
        tree = descendants(proc.pid)
        proc.send_signal(
            signal.SIGTERM
        )  # execute-one saves the notebook, stops its kernel
        try:
            proc.communicate(timeout=TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        _kill_tree([proc.pid, *tree, *descendants(proc.pid)], signal.SIGKILL)
        proc.communicate()
        raise TimeoutError(
            f"stopped after its cap of {cap_s:.0f} s (saved with the outputs of the cells that ran)"
        ) from None
    if proc.returncode != 0:
        raise RuntimeError(output.strip()[-1500:])
    return time.perf_counter() - start


class _Stopped(Exception):
    """Raised in ``execute-one`` by SIGTERM: the lab reached its cap."""


def execute_one(path: Path, *, timeout: int = 600) -> int:
    """Execute ``path`` in place and save it even if a cell fails or SIGTERM arrives; 0 if every cell ran.

    The saved notebook holds every output produced, the failing cell's error included, so a
    failed GPU run can be read afterwards (L4-10); the commit step refuses notebooks with errors.
    """
    from execute import drop_progress_bars
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    def stop(signum: int, frame: object) -> None:
        raise _Stopped()

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    signal.signal(signal.SIGTERM, stop)
    status = 0
    try:
        client.execute()
    except CellExecutionError as exc:
        print(str(exc)[-1500:])
        status = 1
    except _Stopped:
        print(f"{path.name}: stopped at its cap; saving the cells that ran")
        status = 3
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        km = getattr(client, "km", None)
        if km is not None:
            try:
                km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - the kernel may be gone already
                pass
        nb.metadata.pop("widgets", None)
        drop_progress_bars(nb)
        nbformat.write(nb, path)
    return status


def prediction_lines(nb: nbformat.NotebookNode) -> list[str]:
    """The lines of a lab's outputs that begin with :data:`PREDICTION_PREFIX` (its model against its measurements)."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts = [out.get("text", "")]
            data = out.get("data", {})
            texts += [data.get("text/markdown", ""), data.get("text/plain", "")]
            for text in texts:
                if isinstance(text, list):
                    text = "".join(text)
                for line in str(text).splitlines():
                    line = line.strip().strip("*").strip()
                    if line.startswith(PREDICTION_PREFIX) and line not in found:
                        found.append(line)
    return found


def closing_table(rows: Sequence[tuple[str, float, str, float | None, str]]) -> str:
    """The run's last table: lab, planned and measured seconds, status, and its prediction lines."""
    from helpers.formatting import markdown_table

    body = []
    for path, planned, status, measured, _note in rows:
        lines = prediction_lines(nbformat.read(ROOT / path, as_version=4))
        body.append(
            [
                path,
                f"{planned:.0f}",
                "-" if measured is None else f"{measured:.0f}",
                status,
                "; ".join(lines) if lines else "(no prediction line in its outputs)",
            ]
        )
    return markdown_table(
        ["lab", "planned s", "measured s", "status", "predicted against measured"],
        body,
        align="lrrll",
    )


SELFTEST = ROOT / "tools" / "gpu_selftest.py"


def run_selftest(cap_s: float = SELFTEST_CAP_S) -> tuple[int, str]:
    """Run :data:`SELFTEST` in its own process under ``cap_s``; return its exit status and output."""
    try:
        proc = subprocess.run(
            [sys.executable, str(SELFTEST)],
            cwd=ROOT,
            timeout=cap_s,
            capture_output=True,
            text=True,
            env=_child_env(),
        )
    except subprocess.TimeoutExpired:
        return 124, f"self-test stopped after {cap_s:.0f} s"
    text = "\n".join(
        line
        for line in (proc.stdout + proc.stderr).splitlines()
        if not line.startswith("USDT")
    )
    return proc.returncode, text


def use_carried_wheels(folder: Path = ROOT / ".whl") -> list[str]:
    """Install the wheels in ``folder`` into :data:`WHEEL_SITE` and put it on ``PYTHONPATH``; return what was done.

    A bare GPU image lacks the notebook packages; ``make gpu-wheels`` downloads them here into
    ``.whl``, which the device call carries. Their Mooncake traces (``.whl/mooncake-traces``)
    become ``MOONCAKE_TRACES`` unless it is set. Nothing happens without ``.whl``; a failed
    install is reported, not raised (the smoke test then names what is missing).
    """
    done: list[str] = []
    if any(folder.glob("*.whl")):
        error = _install_wheels(folder)
        if error:
            done.append(f"warning: {error}")
        else:
            old = os.environ.get("PYTHONPATH", "")
            parts = [str(WHEEL_SITE)] + [p for p in old.split(os.pathsep) if p]
            os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
            done.append(
                f"carried wheels on PYTHONPATH from {WHEEL_SITE}: {len(_installed)}"
            )
    traces = folder / "mooncake-traces"
    if traces.is_dir() and not os.environ.get("MOONCAKE_TRACES"):
        os.environ["MOONCAKE_TRACES"] = str(traces)
        done.append(f"MOONCAKE_TRACES={traces}")
    return done


def _spare_cores() -> tuple[list[int] | None, list[int] | None]:
    """(cores for the GPU labs, cores for the CPU-only labs): a quarter (at least 2) set aside on 8+ cores."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except AttributeError:
        return None, None
    if len(cores) < 8:
        return None, None
    spare = max(2, len(cores) // 4)
    return cores[:-spare], cores[-spare:]


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

    if not args.dry_run:
        for line in use_carried_wheels():
            say(line)
    # L4-9: every child (kernels, self-test, benchmark) imports this checkout's helpers
    os.environ["PYTHONPATH"] = _child_env()["PYTHONPATH"]
    start = time.perf_counter()
    device, has_cuda = _device()
    say(f"device: {device}")
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    say(f"python {platform.python_version()} ({sys.executable}); PYTHONPATH={ROOT}")
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
    status, text = run_selftest()
    say(f"self-test (exit status {status}):\n{text}")

    gpu_name = device.split(" (")[0] if has_cuda else args.device
    times = gpu_seconds(gpu_name)
    planned: list[tuple[Path, float]] = []
    beside: list[tuple[Path, float]] = []
    for path in labs:
        seconds, _ = times.get(path.stem, (180.0, "no entry"))
        (beside if path.stem in CPU_ONLY_LABS else planned).append((path, seconds))
    kinds = sorted({times[p.stem][1] for p in labs if p.stem in times})
    plan = make_plan(
        planned,
        args.budget_s,
        beside=beside,
        selftest_s=time.perf_counter() - start,
        source="GPU seconds: " + "; ".join(kinds),
    )
    say(plan.describe())

    written: list[Path] = []
    failed: list[str] = []
    rows: list[tuple[str, float, str, float | None, str]] = []
    measured: dict[str, float] = {}

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
        rank = {p: i for i, p in enumerate(labs)}
        files = sorted(written, key=lambda p: rank.get(p, len(rank)))  # book order
        for f in pack(files, out, meta=meta, log="\n".join(log) + "\n"):
            if final:
                print(f"packed {f} ({f.stat().st_size} bytes)")

    def one(path: Path, seconds: float, cap: float, cores: list[int] | None) -> None:
        name = str(path.relative_to(ROOT))
        try:
            took = execute_capped(path, cap, cores=cores)
            say(
                f"{name}: executed in {took:.1f} s (planned {seconds:.0f} s) on {device}"
            )
            rows.append((name, seconds, "ok", took, ""))
            measured[path.stem] = took
        except (TimeoutError, RuntimeError) as exc:
            say(f"{name}: FAILED ({type(exc).__name__}: {exc}); saved with its errors")
            failed.append(name)
            rows.append((name, seconds, f"FAILED ({type(exc).__name__})", None, ""))
        written.append(path)

    import threading

    main_cores, side_cores = _spare_cores()
    side_threads = []
    for path, seconds in plan.beside:
        if args.dry_run:
            say(f"dry run: {path.relative_to(ROOT)} not executed (would run beside)")
            written.append(path)
            rows.append((str(path.relative_to(ROOT)), seconds, "dry run", None, ""))
            continue
        left = args.budget_s - (time.perf_counter() - start)
        thread = threading.Thread(
            target=one, args=(path, seconds, lab_cap_s(seconds, left), side_cores)
        )
        thread.start()
        side_threads.append(thread)

    for path, seconds in plan.run:
        name = str(path.relative_to(ROOT))
        if args.dry_run:
            say(f"dry run: {name} not executed")
            written.append(path)
            rows.append((name, seconds, "dry run", None, ""))
            continue
        left = args.budget_s - BENCHMARK_PLAN_S - (time.perf_counter() - start)
        if left < 10:
            say(f"{name}: not started, the budget is spent")
            failed.append(name)
            rows.append((name, seconds, "not started", None, ""))
            continue
        # One failing or hanging lab must not lose the others' results: report it and go on.
        one(path, seconds, lab_cap_s(seconds, left), main_cores)
        pack_now(
            final=False
        )  # what finished so far is in OUT even if the job is cut off
    for thread in side_threads:
        thread.join()

    bench_started = time.time()
    left = args.budget_s - (time.perf_counter() - start)
    if args.dry_run:
        say("dry run: benchmarks/run.py not run")
    elif left < BENCHMARK_MIN_S:
        say(f"benchmark skipped: {left:.0f} s left of the budget")
    else:
        try:
            proc = subprocess.run(
                [sys.executable, "benchmarks/run.py", "--skip-stages"],
                cwd=ROOT,
                timeout=left,
                capture_output=True,
                text=True,
                env=_child_env(),
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
    if measured and has_cuda and not args.dry_run:
        record_gpu_seconds(gpu_name, measured)
        written.append(GPU_SECONDS_FILE)
    order = {str(p.relative_to(ROOT)): i for i, p in enumerate(labs)}
    rows.sort(key=lambda r: order.get(r[0], len(order)))
    say("\n" + closing_table(rows))
    say(f"total {time.perf_counter() - start:.0f} s")
    pack_now(final=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="self-test, the labs and the benchmark")
    p_plan = sub.add_parser("plan", help="the same as run --dry-run")
    for p in (p_run, p_plan):
        p.add_argument(
            "--dry-run", action="store_true", help="plan and pack, run no lab"
        )
        p.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S)
        p.add_argument("--out", default=os.environ.get("OUT") or None)
        p.add_argument(
            "--labs", nargs="*", help="these labs only (paths from the root)"
        )
        p.add_argument(
            "--device",
            default=DEFAULT_PLAN_DEVICE,
            help="the GPU whose seconds plan a dry run",
        )
    p_one = sub.add_parser(
        "execute-one", help="execute one notebook, saved even if it fails"
    )
    p_one.add_argument("notebook", type=Path)
    p_unpack = sub.add_parser("unpack", help="check and extract a packed run")
    p_unpack.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "unpack":
        for name in unpack(args.folder):
            print(f"unpacked {name}")
        return 0
    if args.command == "execute-one":
        return execute_one(args.notebook)
    if args.command == "plan":
        args.dry_run = True
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
