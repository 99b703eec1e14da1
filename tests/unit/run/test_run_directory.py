"""The run directory from real runs: complete, exact, the same single-process and distributed."""

from __future__ import annotations

from loadtests.recording.run_dir import free_run_dir


def test_a_used_run_dir_is_followed_by_numbered_siblings(tmp_path):
    run_dir = tmp_path / "run"
    assert free_run_dir(run_dir) == run_dir  # absent
    run_dir.mkdir()
    (run_dir / "lost+found").mkdir()
    assert free_run_dir(run_dir) == run_dir  # empty of any run
    (run_dir / "config.json").write_text("{}")
    assert free_run_dir(run_dir) == tmp_path / "run-2"
    (tmp_path / "run-2" / "hdr").mkdir(parents=True)
    assert free_run_dir(run_dir) == tmp_path / "run-3"
