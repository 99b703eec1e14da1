"""Load shapes: pure profiles against a fake clock, --shape-args errors, tick() with a fake runner, the
web UI's shape selection, and headless runs against the local Triton.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/traffic/test_shapes.py.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from loadtests.traffic.shape import LOOKAHEAD_S
from tests.helpers import on_a_steady_load_generator, run_against_triton
from tests.slow_statistics import SlowStatisticsProxy


# -- headless runs against the local Triton -------------------------------------------------
def run_shape(triton, tmp_path: Path, shape: str, shape_args: str):
    """A run whose --load-shape sets the users and the end: (the process, (time_s, users) per window)."""
    options = ["--model", "identity", "--window", "1", "--load-shape", shape, "--shape-args", shape_args]
    run = run_against_triton(triton, tmp_path / shape, ["TritonHttpUser"], options, run_time=None, timeout=120)
    result, run_dir = run.result, run.run_dir
    with (run_dir / "timeseries.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert rows, result.stderr[-3000:]
    users = [(float(row["time_s"]), int(row["users"])) for row in rows]
    return result, users


def phases(users, counts: set[int]) -> list[int]:
    """The user counts the windows went through, in order, each run of windows counted once;
    a window that closed mid-change (a count not in `counts`) is left out."""
    seen = [count for _, count in users if count in counts]
    return [count for index, count in enumerate(seen) if index == 0 or seen[index - 1] != count]


def test_steps_shape_end_to_end(triton, tmp_path):
    result, users = run_shape(triton, tmp_path, "steps", "targets=1;3,step_s=3,spawn_rate=20")
    assert "Shape test updating to 3 users" in result.stderr
    record = json.loads((tmp_path / "steps" / "steps.json").read_text())
    assert record["shape"] == "steps" and record["kind"] == "users"
    assert [step["target"] for step in record["steps"]] == [1, 3], record
    assert record["steps"][1]["start_s"] == pytest.approx(3, abs=1.0), record  # as planned
    # Locust asks the shape once a second, later on a busy machine (the step was once seen at
    # 4.6 s): the windows must go 1 then 3 users, in that order.
    assert phases(users, {1, 3}) == [1, 3], users
    assert record["steps"][-1]["end_s"] - record["steps"][0]["start_s"] >= 6 - LOOKAHEAD_S - 0.01, record


SLOW_SETUP = """
import gevent
from locust import events


@events.test_start.add_listener
def load_a_dataset(**_kwargs):
    gevent.sleep(3)  # a user's own setup at the start of the test (a dataset to load, say)
"""


def test_a_slow_test_start_neither_cuts_the_first_step_nor_starts_the_run_twice(triton, tmp_path):
    # Locust ticks the shape while test_start still runs (single process: in the spawning
    # greenlet). The shape's clock ran from its first tick, so a step began before the first
    # users existed, and its start() killed the greenlet mid-test_start: the run began again
    # in a second directory (seen in CI: Triton's statistics slow to answer on a busy machine).
    setup = tmp_path / "slow_setup.py"
    setup.write_text(SLOW_SETUP)
    options = ["--model", "identity", "--window", "1", "--load-shape", "steps", "--shape-args", "targets=1;2,step_s=3"]
    run = run_against_triton(
        triton,
        tmp_path / "run",
        ["TritonHttpUser"],
        options,
        models=("identity",),
        run_time=None,
        timeout=120,
        locustfile=f"locustfile.py,{setup}",
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run", "slow_setup.py"]  # one run directory
    record = json.loads((run.run_dir / "steps.json").read_text())
    starts = [step["start_s"] for step in record["steps"]]
    assert [step["target"] for step in record["steps"]] == [1, 2], record
    # Each step held its 3 s from the run's start (Locust ticks about once a second).
    assert starts[1] - starts[0] == pytest.approx(3, abs=1.0), record
    with (run.run_dir / "timeseries.csv").open() as file:
        users = [(float(row["time_s"]), int(row["users"])) for row in csv.DictReader(file)]
    assert phases(users, {1, 2}) == [1, 2], users
    assert sum(count == 1 for _, count in users) >= 2, users  # the first step was not cut
    (endpoint,) = run.summary["endpoints"]
    assert endpoint["requests"] == run.served() > 0, endpoint


def test_a_step_does_not_wait_for_tritons_statistics(triton, tmp_path):
    # Each step's boundary reads Triton's statistics, from inside the shape's tick: with Triton
    # slow to answer, the step's users came as late as the answer (2.6 s late in a CI-like run).
    proxy = SlowStatisticsProxy(triton.http_address)
    try:
        target = ["--triton-http", proxy.address, "--triton-grpc", triton.grpc_address]
        options = [
            "--model",
            "identity",
            "--window",
            "1",
            "--load-shape",
            "steps",
            "--shape-args",
            "targets=1;3,step_s=4",
        ]

        def run(run_dir: Path) -> None:
            run_against_triton(triton, run_dir, ["TritonGrpcUser"], options, run_time=None, timeout=120, target=target)

        run_dir = on_a_steady_load_generator(run, tmp_path / "run")
    finally:
        proxy.close()
    steps = json.loads((run_dir / "steps.json").read_text())["steps"]
    with (run_dir / "timeseries.csv").open() as file:
        users = [(float(row["time_s"]), int(row["users"])) for row in csv.DictReader(file)]
    # The second step's users run from its start: every window that begins half a second after
    # it (and ends before its end) holds its 3 users (before the fix they came 2 s late).
    second = steps[1]
    inside = [count for t, count in users if second["start_s"] + 0.5 <= t and t + 1 <= second["end_s"]]
    assert inside and set(inside) == {3}, (steps, users)


def test_spike_shape_end_to_end(triton, tmp_path):
    shape_args = "baseline=1,peak=4,at_s=3,spike_s=3,duration_s=9,spawn_rate=20"
    _result, users = run_shape(triton, tmp_path, "spike", shape_args)
    # Locust asks the shape once a second, later on a busy machine (the spike's 4 users were
    # once seen from 5.6 s, not 3): the windows must go 1, 4, 1 users, in that order.
    assert phases(users, {1, 4}) == [1, 4, 1], users
    # The shape ended the run (no -t: the process exited by itself), at the tick nearest its 9 s
    # (LOOKAHEAD_S) or later on a busy host. How soon the last window follows depends on the
    # host too (one 3-shard run: 2.2 s after), so neither is bounded above here.
    steps = json.loads((tmp_path / "spike" / "steps.json").read_text())["steps"]
    assert steps[-1]["end_s"] - steps[0]["start_s"] >= 9 - LOOKAHEAD_S - 0.01, steps
