"""The report names the requests that ended during the test's stop (summary.json's
`ended_during_stop`), and says whether the run's max latency is theirs; it stays silent when
none did, and on run directories recorded before the key existed."""

from __future__ import annotations

import json

import pytest

from analysis.dataset import load
from analysis.findings import findings
from analysis.report import write_report
from tests.recorded_runs import recorded

SAID = "ended during the test's stop"


@pytest.fixture
def run(tmp_path):
    """A copy of a recorded run (one endpoint, closed loop), from before the key existed."""
    return recorded("diagnosis", "jpeg", tmp_path)


def with_stop(run, **during) -> dict:
    """The run's summary.json with its endpoint's ended_during_stop set; returns that endpoint."""
    summary = json.loads((run / "summary.json").read_text())
    (endpoint,) = summary["endpoints"]
    endpoint["ended_during_stop"] = during
    (run / "summary.json").write_text(json.dumps(summary))
    return endpoint


def said(run) -> list[str]:
    return [line for line in findings(load(run)) if SAID in line]


def test_silent_on_an_older_run_and_when_no_request_ended_during_the_stop(run):
    (endpoint,) = json.loads((run / "summary.json").read_text())["endpoints"]
    assert "ended_during_stop" not in endpoint  # the recording predates it
    assert load(run).endpoints[0].ended_during_stop is None
    assert said(run) == []
    with_stop(run, requests=0, failures=0, max_us=None)
    assert said(run) == []


def test_named_with_the_slowest_and_the_failures_among_them(run):
    endpoint = with_stop(run, requests=4, failures=1, max_us=12_345.0)
    assert endpoint["latency_us"]["max"] != 12_345.0
    assert said(run) == [
        f"{endpoint['name']}: 4 requests ended during the test's stop (in flight when it stopped, they ended in the "
        "stop grace), 1 of them failed; the slowest took 12.345 ms. They are counted in every figure."
    ]


def test_a_max_that_came_during_the_stop_is_said_to_be_the_runs_max_in_the_report(run, tmp_path):
    top = json.loads((run / "summary.json").read_text())["endpoints"][0]["latency_us"]["max"]
    endpoint = with_stop(run, requests=1, failures=0, max_us=top)
    (line,) = said(run)
    assert line.startswith(f"{endpoint['name']}: 1 request ended during the test's stop ("), line
    assert f"; the slowest took {top / 1000:,.3f} ms, which is the run's max latency (it came as the test " in line
    write_report(run, tmp_path / "report")
    assert f"- {line}" in (tmp_path / "report" / "report.md").read_text()


def test_only_cut_requests_have_no_slowest(run):
    endpoint = with_stop(run, requests=2, failures=2, max_us=None)
    assert said(run) == [
        f"{endpoint['name']}: 2 requests ended during the test's stop (in flight when it stopped, they ended in the "
        "stop grace), 2 of them failed. They are counted in every figure."
    ]
