"""Issue 25's findings, tried as a new user would: each typed command, its exit code, its one
`error:` line, and the numbers it promises (checked against Triton's own statistics).

Runs against the session's real Triton (tests/conftest.py); every number asserted is derived
from Triton's counters or from summary.json, never typed in.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# Imported when collected, before any test file imports ssl (selenium's urllib3): importing
# locust patches the standard library for gevent, and ssl patched after its import recurses.
from loadtests.__main__ import build_parser, main
from loadtests.commands.option_list import suite_parser
from loadtests.config.settings import Settings
from loadtests.errors import ServerError
from loadtests.server import TritonPorts
from loadtests.triton_stats.poller import statistics_address
from tests.helpers import (
    grpc_target,
    http_target,
    run_cli,
)
from tests.unit.run.test_bad_input import assert_one_error

MODEL = "identity"


# -- 2. an options listing a person can read --------------------------------------------------------
def test_options_command_lists_every_option_by_task():
    result = run_cli(["-m", "loadtests", "options"], timeout=60)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    headings = ["Workload", "Target", "Traffic", "Measurement and outputs", "Gates", "Distributed"]
    positions = [re.search(rf"^{h}: ", text, re.M) for h in headings]
    assert all(positions), [h for h, p in zip(headings, positions, strict=True) if not p]
    assert [p.start() for p in positions] == sorted(p.start() for p in positions)
    for action in suite_parser()._actions:
        if not action.option_strings:
            continue
        lines = [line for line in text.splitlines() if line.startswith(f"  {action.option_strings[-1]} ")]
        assert len(lines) == 1, (action.option_strings, lines)
        assert action.env_var in lines[0] and "default" in lines[0], lines[0]
    assert "python -m loadtests options" in Path("README.md").read_text()


# -- 6. perf_analyzer's spellings in sweep ------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--concurrency-range", "1:4"], ("concurrency", "1:4")),
        (["--request-rate-range", "10:20:10"], ("request_rate", "10:20:10")),
        (["--latency-threshold", "50"], ("latency_limit", 50.0)),
        (["-m", MODEL], ("model", MODEL)),
    ],
)
def test_sweep_takes_perf_analyzer_spellings(argv, expected):
    base = ["sweep", "--model", MODEL, "--concurrency", "1:2"] if argv[0] in ("--latency-threshold",) else ["sweep"]
    if argv[0] == "-m":
        base = ["sweep", "--concurrency", "1:2"]
    if argv[0].endswith("-range"):
        base = ["sweep", "--model", MODEL]
    args, extra = build_parser().parse_known_args([*base, *argv])
    assert extra == []
    assert getattr(args, expected[0]) == expected[1]


def test_sweep_percentile_other_than_the_judged_one_is_one_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["sweep", "--model", MODEL, "--concurrency-range", "1:2", "--percentile", "99"])
    assert_one_error(exited.value.code, capsys.readouterr().err, "--percentile")


# -- 9. docs: the stale lines -----------------------------------------------------------------
def test_docs_no_longer_say_open_loop_shapes_do_not_exist():
    assert "does not exist yet" not in Path("docs/reference/users.md").read_text()


def test_time_s_has_one_meaning_per_file_in_the_docs():
    text = Path("docs/reference/run-directory.md").read_text()
    assert re.search(r"server_metrics\.csv.*Unix", text, re.S)
    assert re.search(r"timeseries\.csv.*since the start", text, re.S)


def test_no_statistics_address_answers_is_one_error_naming_both_options():
    with TritonPorts.held() as closed:
        http, grpc = f"127.0.0.1:{closed.http}", f"127.0.0.1:{closed.grpc}"
        settings = Settings(triton_http=http_target(http), triton_grpc=grpc_target(grpc))
        with pytest.raises(ServerError) as refused:
            statistics_address(settings, [MODEL], timeout_s=2.0)
    message = str(refused.value)
    assert "\n" not in message and "--triton-http HOST:PORT" in message and "--triton-grpc HOST:PORT" in message
