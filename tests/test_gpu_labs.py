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
    files = list(tmp_path.iterdir())
    assert len(files) <= gpu_labs.MAX_FILES
    assert all(f.stat().st_size <= gpu_labs.MAX_FILE_BYTES for f in files)
    manifest = json.loads((tmp_path / "gpu-labs-manifest.json").read_text())
    assert manifest["dry_run"] is True
    labs = [str(p.relative_to(ROOT)) for p in gpu_labs.lab_paths()]
    # Every lab is either packed or named as skipped (it did not fit the budget), in book order.
    assert sorted(manifest["files"] + manifest["skipped"]) == sorted(labs)
    assert manifest["files"] == [lab for lab in labs if lab in manifest["files"]]
    assert manifest["files"], "at least one lab fits the budget"


def test_run_without_cuda_refuses_unless_dry(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert gpu_labs.main(["run", "--out", ""]) == 2
    assert "no CUDA device" in capsys.readouterr().out
