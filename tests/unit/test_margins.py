"""The measurement tier's bound checks record their margins, and `python -m tests.margins` tables them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT
from tests.margins import main, read_margins
from tests.measurement.conftest import MARGINS_FILE, headroom, limits

CHECKS = """
def test_inside(bound):
    bound("p99 (us)", 80_000, at_most=100_000)
    bound("rate (rps)", 205, near=200, rel=0.05)

def test_outside(bound):
    bound("rate (rps)", 212, near=200, within=10)
"""


def test_headroom_against_one_bound_and_between_two():
    assert headroom(80, None, 100) == pytest.approx(0.2)
    assert headroom(120, 100, None) == pytest.approx(0.2)
    assert headroom(205, *limits(200, 0.05, None, None, None)) == pytest.approx(0.5)
    assert headroom(200, 190, 210) == pytest.approx(1.0)
    assert headroom(212, 190, 210) == pytest.approx(-0.2)
    assert limits(200, 0.05, 20, None, None) == (180, 220)  # the larger allowance


def test_a_run_records_every_check_and_the_table_puts_the_failed_one_first(tmp_path, capsys):
    (tmp_path / "test_checks.py").write_text(CHECKS)
    runs = tmp_path / "runs"
    runs.mkdir()
    for index in (1, 2):
        # JUnit XML as make test writes it: the checks must not disturb it (xunit2 refuses test properties).
        command = [sys.executable, "-m", "pytest", "-q", "-p", "tests.measurement.conftest", "-p", "no:cacheprovider"]
        command += ["-W", "error", str(tmp_path / "test_checks.py"), f"--junitxml={tmp_path / 'junit.xml'}"]
        env = {**os.environ, MARGINS_FILE: str(runs / f"run-{index}.jsonl")}
        result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, env=env)
        assert result.returncode == 1 and "1 failed, 1 passed" in result.stdout, result.stdout[-2000:]
    margins = read_margins(sorted(runs.glob("*.jsonl")))
    counts = {(test.split("::")[-1], check): len(records) for (test, check), records in margins.items()}
    assert counts == {
        ("test_inside", "p99 (us)"): 2,
        ("test_inside", "rate (rps)"): 2,
        ("test_outside", "rate (rps)"): 2,
    }
    assert main(["--table", str(runs)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| test_checks")]
    assert [row.split(" | ")[1:5] for row in rows] == [  # least headroom first: the failed check
        ["rate (rps)", "190 to 210", "212", "-20.0%"],
        ["p99 (us)", "<= 1e+05", "8e+04", "20.0%"],
        ["rate (rps)", "190 to 210", "205", "50.0%"],
    ]


def test_no_margins_is_an_error(tmp_path, capsys):
    assert main(["--table", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: no margins recorded in ")


def test_a_failed_run_fails_the_command_after_its_table(tmp_path, capsys):
    """`make bench-measurement` reports every check's margin, and exits 1 when a run failed."""
    (tmp_path / "test_checks.py").write_text(CHECKS)
    tier = ["-p", "tests.measurement.conftest", str(tmp_path / "test_checks.py")]
    assert main(["--runs", "1", "--out", str(tmp_path / "runs")], tier=tier) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert "run 1: 1 failed, 1 passed" in out and "| test_checks.py::test_outside | rate (rps) |" in out, out
    # Why it failed is kept, not lost with the run: pytest's output of each run, named in the error.
    log = tmp_path / "runs" / "run-1.log"
    assert "FAILED" in log.read_text() and "test_outside" in log.read_text()
    assert captured.err.strip() == f"error: a run failed: its pytest output is in {log}", captured.err
