"""--upload URL (issue 16, item 5): the finished run directory copied through fsspec, complete, also
after Ctrl-C; an unwritable destination refused before any load; `python -m analysis` reading runs
from the same URLs.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/refusals/run/test_upload.py.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import fsspec
import pytest

from analysis.__main__ import main as analysis_main
from loadtests.run.upload import copy_run
from tests.helpers import interrupt_locust, read_summary, run_cli, run_locust, triton_options


def files_of(root: Path) -> dict[str, bytes]:
    """Every file under `root`, by relative path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def uploaded_run(triton, tmp_path_factory):
    """One short headless run with --upload file://...: (run directory, bucket directory, result)."""
    tmp = tmp_path_factory.mktemp("upload")
    run_dir, bucket = tmp / "run", tmp / "bucket"
    options = [*triton_options(triton), "--model", "identity", "--run-dir", str(run_dir)]
    result = run_locust(["TritonHttpUser"], [*options, "--upload", f"file://{bucket}/runs"], run_time="3s")
    return run_dir, bucket, result


def test_upload_file_url_copies_the_complete_run_directory(uploaded_run):
    run_dir, bucket, result = uploaded_run
    assert result.returncode == 0, result.stderr[-2000:]
    copy = bucket / "runs" / run_dir.name
    assert f"Uploaded: file://{bucket}/runs/{run_dir.name}" in result.stdout
    original = files_of(run_dir)
    assert {"config.json", "summary.json", "timeseries.csv", "server_stats.json"} <= set(original)
    assert files_of(copy) == original  # same file list, same bytes
    # The write probe left nothing behind.
    assert sorted(p.name for p in (bucket / "runs").iterdir()) == [run_dir.name]


def test_memory_url_copy_is_complete_and_analysis_reads_it(uploaded_run, tmp_path, capsys):
    run_dir, _, _ = uploaded_run
    bucket = f"memory://bucket-{uuid.uuid4().hex}/runs"
    assert copy_run(run_dir, bucket) == f"{bucket}/{run_dir.name}"
    memory = fsspec.filesystem("memory")
    root = bucket.removeprefix("memory://")
    copied = {path.removeprefix(f"/{root}/{run_dir.name}/"): memory.cat_file(path) for path in memory.find(root)}
    assert copied == files_of(run_dir)
    out = tmp_path / "report"
    assert analysis_main(["report", f"{bucket}/{run_dir.name}", "--out", str(out)]) == 0
    assert (out / "report.html").stat().st_size > 0
    assert analysis_main(["check", f"{bucket}/{run_dir.name}", "--slo", "failures<1"]) == 0


def test_analysis_reads_a_file_url_and_refuses_a_missing_one(uploaded_run, tmp_path):
    run_dir, bucket, _ = uploaded_run
    url = f"file://{bucket}/runs/{run_dir.name}"
    result = run_cli(
        ["-m", "analysis", "compare", url, str(run_dir), "--labels", "bucket,local"] + ["--out", str(tmp_path / "cmp")]
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "cmp" / "compare.html").exists()
    missing = run_cli(["-m", "analysis", "report", f"file://{bucket}/runs/nothing-here"])
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [f"error: file://{bucket}/runs/nothing-here: no files there"]


def test_upload_after_sigint_is_complete(triton, tmp_path):
    run_dir, bucket = tmp_path / "run", tmp_path / "bucket"
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless", "-u", "2", "-t", "60s"]
    command += ["TritonHttpUser", *triton_options(triton), "--model", "identity", "--run-dir", str(run_dir)]
    command += ["--upload", f"file://{bucket}"]
    interrupt_locust(command, run_dir)
    assert read_summary(run_dir)["endpoints"][0]["requests"] > 0
    assert files_of(bucket / run_dir.name) == files_of(run_dir)
