"""`make gpu-labs` (tools/gpu_labs.py): the plan, the packing that carries results back, a CPU dry run."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_labs  # noqa: E402


def _timed_cell(start: str, end: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("pass")
    cell.metadata["execution"] = {
        "iopub.execute_input": start,
        "shell.execute_reply": end,
    }
    return cell


def test_labs_are_the_toc_labs_in_order():
    labs = gpu_labs.lab_paths()
    assert labs[0].name == "lab1_roofline.ipynb"
    assert [p.name for p in labs] == sorted(p.name for p in labs)
    assert all(p.exists() for p in labs)


def test_recorded_seconds_spans_first_start_to_last_reply():
    nb = nbformat.v4.new_notebook(
        cells=[
            _timed_cell("2026-01-01T00:00:01.000000Z", "2026-01-01T00:00:02.000000Z"),
            nbformat.v4.new_markdown_cell("prose"),
            _timed_cell("2026-01-01T00:00:02.500000Z", "2026-01-01T00:00:04.500000Z"),
        ]
    )
    assert gpu_labs.recorded_seconds(nb) == pytest.approx(3.5)
    assert gpu_labs.recorded_seconds(nbformat.v4.new_notebook()) is None


def test_every_committed_lab_records_its_run_time():
    for path in gpu_labs.lab_paths():
        seconds = gpu_labs.recorded_seconds(nbformat.read(path, as_version=4))
        assert seconds is not None and 0 < seconds < 600, path.name


def test_plan_keeps_order_and_skips_what_does_not_fit():
    a, b, c = Path("a"), Path("b"), Path("c")
    plan = gpu_labs.make_plan([(a, 100), (b, 300), (c, 50)], 300, benchmark_s=120)
    assert [p for p, _ in plan.run] == [a, c]
    assert [p for p, _ in plan.skipped] == [b]
    assert plan.planned_s == 270
    with pytest.raises(ValueError, match="budget_s"):
        gpu_labs.make_plan([], 0)
    with pytest.raises(ValueError, match="benchmark_s"):
        gpu_labs.make_plan([], 10, benchmark_s=-1)


def test_pack_splits_and_unpack_restores_bytes(tmp_path):
    files = gpu_labs.lab_paths()[:3]
    out = tmp_path / "out"
    written = gpu_labs.pack(
        files, out, meta={"device": "test"}, log="log\n", max_file_bytes=150_000
    )
    parts = [p for p in written if ".part" in p.name]
    assert len(parts) >= 2 and all(p.stat().st_size <= 150_000 for p in parts)
    assert len(written) <= gpu_labs.MAX_FILES
    dest = tmp_path / "dest"
    names = gpu_labs.unpack(out, dest)
    assert names == [str(p.relative_to(ROOT)) for p in files]
    for path in files:
        assert (dest / path.relative_to(ROOT)).read_bytes() == path.read_bytes()


def test_pack_refuses_more_files_than_allowed(tmp_path):
    with pytest.raises(ValueError, match="max_files"):
        gpu_labs.pack(
            gpu_labs.lab_paths(),
            tmp_path,
            meta={},
            log="",
            max_files=3,
            max_file_bytes=10_000,
        )


def test_unpack_rejects_a_corrupt_part(tmp_path):
    gpu_labs.pack(gpu_labs.lab_paths()[:1], tmp_path, meta={}, log="")
    part = tmp_path / "gpu-labs.tar.gz.part00"
    data = bytearray(part.read_bytes())
    data[100] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="sha256"):
        gpu_labs.unpack(tmp_path, tmp_path / "dest")


def test_unpack_writes_nowhere_but_labs_and_results(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("helpers/__init__.py")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    data = buffer.getvalue()
    (tmp_path / "gpu-labs.tar.gz.part00").write_bytes(data)
    import hashlib

    manifest = {
        "parts": [
            {
                "name": "gpu-labs.tar.gz.part00",
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        ]
    }
    (tmp_path / "gpu-labs-manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="refusing"):
        gpu_labs.unpack(tmp_path, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_cpu_dry_run_starts_a_kernel_plans_and_packs(tmp_path, capsys):
    """What `make gpu-labs` does on a GPU, less the labs: it must work before a GPU is lent."""
    assert gpu_labs.main(["run", "--dry-run", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "kernel smoke test" in printed and "plan:" in printed
    assert (
        "self-test (exit status 0)" in printed
        and "GPU seconds: estimate, NVIDIA H200" in printed
    )
    assert "predicted against measured" in printed  # the closing table
    files = list(tmp_path.iterdir())
    assert len(files) <= gpu_labs.MAX_FILES
    assert all(f.stat().st_size <= gpu_labs.MAX_FILE_BYTES for f in files)
    manifest = json.loads((tmp_path / "gpu-labs-manifest.json").read_text())
    assert manifest["dry_run"] is True
    labs = [str(p.relative_to(ROOT)) for p in gpu_labs.lab_paths()]
    # Every lab is either packed or named as skipped (it did not fit the budget), in book order.
    assert sorted(manifest["files"] + manifest["skipped"]) == sorted(labs)
    assert manifest["files"] == [lab for lab in labs if lab in manifest["files"]]
    assert manifest["files"] == labs and manifest["skipped"] == []  # all 7 (L4-1)


def test_plan_is_the_dry_run():
    """`tools/gpu_labs.py plan` is `run --dry-run` (the documented command)."""
    import subprocess

    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "gpu_labs.py"),
            "plan",
            "--labs",
            "labs/lab1_roofline.ipynb",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "dry run: labs/lab1_roofline.ipynb not executed" in out.stdout


def test_run_without_cuda_refuses_unless_dry(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert gpu_labs.main(["run", "--out", ""]) == 2
    assert "no CUDA device" in capsys.readouterr().out


def test_lab_paths_need_no_yaml(monkeypatch):
    """The toc is read without PyYAML, which a bare GPU image may lack (J1)."""
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` would now fail
    import importlib

    fresh = importlib.reload(gpu_labs)
    assert [p.name for p in fresh.lab_paths()] == [p.name for p in gpu_labs.lab_paths()]
    assert len(fresh.lab_paths()) == 7


def test_lab_imports_list_what_the_labs_need():
    """Every lab's imports are found (so the dry run checks them), Colab's set-up cells left out."""
    imports = dict(gpu_labs.lab_imports(gpu_labs.lab_paths()))
    for module in (
        "torch",
        "numpy",
        "matplotlib.pyplot",
        "tqdm.auto",
        "IPython.display",
    ):
        assert module in imports
    assert {"bench", "labtools", "plots", "kvpool"} <= set(imports["helpers"])
    assert not any(m.startswith("google") for m in imports)


def test_a_missing_import_fails_the_smoke_test():
    with pytest.raises(RuntimeError, match="no_such_module_xyz"):
        gpu_labs.kernel_smoke_test([("no_such_module_xyz", ())])


def test_lab_cap_is_twice_the_plan_within_the_budget():
    """A 100 s lab gets 200 s; a 5 s lab the minimum cap; no lab more than the budget left."""
    assert gpu_labs.lab_cap_s(100, 500) == 200
    assert gpu_labs.lab_cap_s(5, 500) == gpu_labs.MIN_LAB_CAP_S
    assert gpu_labs.lab_cap_s(100, 150) == 150


def test_a_lab_past_its_cap_is_killed_with_its_kernel_and_saved(tmp_path):
    """L4-8, L4-10: at the cap the kernel (its own session) dies too, and what ran is saved."""
    import os
    import time

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("import os\nprint(os.getpid())"),
            nbformat.v4.new_code_cell("import time\ntime.sleep(120)"),
        ]
    )
    path = tmp_path / "slow.ipynb"
    nbformat.write(nb, path)
    started = time.monotonic()
    # a cap long enough for a kernel to start on a loaded 2-core machine, far below the sleep
    with pytest.raises(TimeoutError, match="cap of 30 s"):
        gpu_labs.execute_capped(path, 30)
    assert time.monotonic() - started < 30 + gpu_labs.TERM_GRACE_S + 20
    saved = nbformat.read(path, as_version=4)
    kernel_pid = int(saved.cells[0].outputs[0]["text"])
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.kill(kernel_pid, 0)


def test_a_failing_lab_is_saved_with_its_error(tmp_path):
    """L4-10: the failing cell's error and the outputs before it stay in the notebook."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("print('Predicted against measured: 3 % off')"),
            nbformat.v4.new_code_cell("assert 1 == 2, 'a check failed'"),
            nbformat.v4.new_code_cell("print('never')"),
        ]
    )
    path = tmp_path / "bad.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(RuntimeError, match="a check failed"):
        gpu_labs.execute_capped(path, 120)
    saved = nbformat.read(path, as_version=4)
    assert saved.cells[1].outputs[0]["output_type"] == "error"
    assert gpu_labs.prediction_lines(saved) == ["Predicted against measured: 3 % off"]


def test_gpu_seconds_plan_from_the_gpu_not_the_cpu_run(tmp_path):
    """L4-1: the plan reads the GPU's seconds (an unknown GPU gets the H200's), and a run writes
    its measured seconds back for the next plan."""
    times = gpu_labs.gpu_seconds("NVIDIA H200")
    labs = gpu_labs.lab_paths()
    assert {p.stem for p in labs} <= set(times)
    assert gpu_labs.gpu_seconds("NVIDIA B200") == times
    copy = tmp_path / "seconds.json"
    copy.write_text(gpu_labs.GPU_SECONDS_FILE.read_text())
    gpu_labs.record_gpu_seconds("NVIDIA B200", {"lab1_roofline": 12.34}, path=copy)
    again = gpu_labs.gpu_seconds("NVIDIA B200", path=copy)
    assert again["lab1_roofline"] == (12.3, "measured, NVIDIA B200")


def test_the_h200_plan_runs_all_seven_labs_in_eight_minutes():
    """L4-1: every lab fits (Lab 7 beside the GPU labs), with the benchmark's share held back."""
    times = gpu_labs.gpu_seconds("NVIDIA H200")
    labs = gpu_labs.lab_paths()
    serial = [
        (p, times[p.stem][0]) for p in labs if p.stem not in gpu_labs.CPU_ONLY_LABS
    ]
    beside = [(p, times[p.stem][0]) for p in labs if p.stem in gpu_labs.CPU_ONLY_LABS]
    plan = gpu_labs.make_plan(
        serial,
        gpu_labs.DEFAULT_BUDGET_S,
        beside=beside,
        selftest_s=gpu_labs.SELFTEST_PLAN_S,
    )
    assert plan.skipped == () and len(plan.run) + len(plan.beside) == 7
    assert plan.planned_s <= gpu_labs.DEFAULT_BUDGET_S <= 480
    assert "beside  labs/lab7_kv_pool.ipynb" in plan.describe()


def test_results_are_packed_after_every_lab(tmp_path, monkeypatch):
    """A lab that hangs is named as failed and still packed; the labs before it are packed before the next starts (J14)."""
    labs = gpu_labs.lab_paths()[:3]
    calls = []

    def fake_execute(path, cap, *, cores=None):
        calls.append((path.name, cap))
        if path == labs[1]:
            raise TimeoutError(f"stopped after its cap of {cap:.0f} s")
        if path == labs[2]:  # the first lab is in OUT before the third starts
            manifest = json.loads((tmp_path / "gpu-labs-manifest.json").read_text())
            # the hung lab is packed too, saved with what ran (L4-10), and named as failed
            assert manifest["files"] == [str(p.relative_to(ROOT)) for p in labs[:2]]
            assert manifest["failed"] == [str(labs[1].relative_to(ROOT))]
            assert manifest["complete"] is False
        return 1.0

    class Done:
        returncode, stdout, stderr = 0, "benchmark ok", ""

    monkeypatch.setattr(gpu_labs, "_device", lambda: ("Fake GPU", True))
    monkeypatch.setattr(gpu_labs, "kernel_smoke_test", lambda imports=(): 0.1)
    monkeypatch.setattr(gpu_labs, "execute_capped", fake_execute)
    monkeypatch.setattr(gpu_labs, "run_selftest", lambda cap_s=0: (0, "PASS  fake"))
    recorded = []
    monkeypatch.setattr(
        gpu_labs,
        "record_gpu_seconds",
        lambda device, seconds: recorded.append((device, seconds)),
    )
    monkeypatch.setattr(gpu_labs.subprocess, "run", lambda *a, **k: Done())
    args = ["run", "--out", str(tmp_path), "--labs"] + [
        str(p.relative_to(ROOT)) for p in labs
    ]
    assert gpu_labs.main(args) == 0
    assert [name for name, _ in calls] == [p.name for p in labs]
    assert all(cap >= gpu_labs.MIN_LAB_CAP_S for _, cap in calls)
    manifest = json.loads((tmp_path / "gpu-labs-manifest.json").read_text())
    assert manifest["complete"] is True
    assert manifest["failed"] == [str(labs[1].relative_to(ROOT))]
    assert manifest["files"] == [str(p.relative_to(ROOT)) for p in labs] + [
        "tools/gpu_lab_seconds.json"
    ]
    # the measured seconds of the labs that finished plan the next run on this GPU (L4-1)
    assert recorded == [("Fake GPU", {labs[0].stem: 1.0, labs[2].stem: 1.0})]


# What the H200 image documents besides torch and numpy that the labs' imports reach (its package
# list as read on 2026-11-17, /work/.library/device/KINDS.md "Python packages already there"):
# matplotlib and its dependencies, tqdm, and the six of GPU_IMAGE_HAS. Nothing else is installed.
IMAGE_PACKAGES = [
    "matplotlib",
    "tqdm",
    "attrs",
    "packaging",
    "psutil",
    "pygments",
    "python-dateutil",
    "typing-extensions",
]


def _makefile_list(name: str) -> list[str]:
    text = (ROOT / "Makefile").read_text()
    line = next(l for l in text.splitlines() if l.startswith(f"{name} :="))
    return line.split(":=", 1)[1].split()


@pytest.mark.slow
def test_dry_run_in_a_fresh_venv_like_the_gpu_image(tmp_path):
    """The dry run, in a venv holding only torch, numpy, the image's packages and make gpu-wheels' pins.

    No system site packages: a module the labs import that neither the image nor the carried
    wheels provide fails the smoke test here (J1, J2), not on the GPU machine. torch is the
    CPU wheel this machine already installed (pip takes it from its cache or find-links).
    """
    import subprocess

    import torch

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    packages = [
        f"torch=={torch.__version__}",
        "numpy",
        *IMAGE_PACKAGES,
        *_makefile_list("GPU_WHEEL_PINS"),
    ]
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-compile",
            "--disable-pip-version-check",
            *packages,
        ],
        check=True,
        timeout=600,
    )
    env = {
        k: v for k, v in __import__("os").environ.items() if not k.startswith("PYTHON")
    }
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [
            str(python),
            "tools/gpu_labs.py",
            "run",
            "--dry-run",
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "imports of the labs" in proc.stdout


def test_carried_traces_become_mooncake_traces_unless_set(tmp_path, monkeypatch):
    """`make gpu-wheels` carries the traces in .whl/mooncake-traces; the run points Lab 6 at them."""
    assert gpu_labs.use_carried_wheels(tmp_path / "none") == []
    (tmp_path / "mooncake-traces").mkdir()
    monkeypatch.delenv("MOONCAKE_TRACES", raising=False)
    assert gpu_labs.use_carried_wheels(tmp_path) == [
        f"MOONCAKE_TRACES={tmp_path / 'mooncake-traces'}"
    ]
    monkeypatch.setenv("MOONCAKE_TRACES", "/elsewhere")
    assert gpu_labs.use_carried_wheels(tmp_path) == []
