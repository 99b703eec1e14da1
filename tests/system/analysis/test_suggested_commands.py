"""Every command the diagnosis suggests runs as pasted, against a real Triton.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/analysis/test_suggested_commands.py.
"""

from __future__ import annotations

import shlex
import sys

import pytest

from tests.helpers import run_cli
from tests.unit.analysis.test_suggested_commands import COMMANDS

TARGET = ("--triton-http", "--triton-grpc", "--triton-metrics")
SHORT = {
    "sweep": ["--measurement-interval", "300", "--max-trials", "3", "--stability-percentage", "100"],
    "capacity": ["--probe-time", "1", "--measurement-interval", "300", "--max-trials", "3", "--precision", "100"],
}
# The exit codes each command may end with besides 0 (the module's docstring says why).
VERDICTS = {"locust": {1}, "sweep": {1, 5}, "capacity": {1, 3}, "tune": {2}}
# Commands whose point is to end the failures their run had: they must end with 0.
MENDS = {"diagnosis/random_ids:failures"}  # zeros instead of random ids: BERT answers every request


def as_run_here(command: str, triton, run_dir) -> tuple[str, list[str]]:
    """The command's kind and its words, on the session Triton, shortened (module docstring)."""
    words = shlex.split(command)
    for index, word in enumerate(words[:-1]):
        if word in TARGET:
            words[index + 1] = {
                "--triton-http": triton.http_address,
                "--triton-grpc": triton.grpc_address,
                "--triton-metrics": triton.metrics_address,
            }[word]
    if words[0] == "locust":
        words[words.index("-t") + 1] = "2s"
        return "locust", [sys.executable, "-m", *words, "--run-dir", str(run_dir)]
    kind = words[3]
    if "--concurrency" in words:
        start, _end, step = words[words.index("--concurrency") + 1].split(":")
        words[words.index("--concurrency") + 1] = f"{start}:{start}:{step}"  # its first level
    out = ["--out", str(run_dir)] if kind == "tune" else ["--run-dir", str(run_dir)]
    return kind, [sys.executable, *words[1:], *SHORT.get(kind, []), *out]


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[where for where, _ in COMMANDS])
def test_a_suggested_command_runs_as_pasted(triton, tmp_path, where, command):
    kind, argv = as_run_here(command, triton, tmp_path / "run")
    result = run_cli(argv[1:], timeout=240)
    output = result.stdout[-2000:] + result.stderr[-3000:]
    assert result.returncode == 0 or result.returncode in VERDICTS[kind], (where, argv, output)
    assert result.returncode == 0 or where not in MENDS, (where, argv, output)
    if kind == "tune":
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("error: ") and "explicit" in line, line
    elif result.returncode == 2:
        pytest.fail(f"refused: {output}")
