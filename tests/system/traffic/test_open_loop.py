"""Open-loop traffic against the real local Triton, where no host's speed changes the outcome: a
rate beyond what any machine sends is late and dropped, and counted as such.

The rates it delivers, the stall closed loop hides and the rate's split over workers and classes
are measured against a known truth in tests/measurement/test_open_loop.py (`make
bench-measurement`); the schedules with a fake clock in tests/unit/traffic/test_open_loop.py.
"""

from __future__ import annotations

from tests.helpers import LocustRun, run_against_triton


def open_loop_run(triton, tmp_path, user_classes, model, users, run_time, *options) -> LocustRun:
    """One of this file's runs: `model` with 16-value inputs, Triton's count of it watched;
    user_classes one name or several, space-separated."""
    options = ("--model", model, "--shape", "INPUT0:16", *options)
    classes = user_classes.split()
    return run_against_triton(
        triton, tmp_path / "run", classes, list(options), models=(model,), users=users, run_time=run_time
    )


def test_late_and_dropped_beyond_what_the_machine_can_send(triton, tmp_path):
    run = open_loop_run(
        triton, tmp_path, "TritonHttpUser", "identity", 4, "4s", "--traffic", "constant", "--rate", "20000",
        "--max-in-flight", "2", "--drop-when-saturated",
    )  # fmt: skip
    result = run.result
    summary = run.summary
    served = run.served()
    (endpoint,) = summary["endpoints"]
    assert endpoint["dropped"] > 0 and endpoint["late"] > 0, endpoint
    assert served == endpoint["requests"]  # dropped requests were never sent
    # Never more due requests than the schedule holds (sent late or dropped, not invented).
    assert endpoint["requests"] + endpoint["dropped"] <= 20000 * endpoint["duration_s"] * 1.01
    assert "could not keep up" in result.stdout + result.stderr
