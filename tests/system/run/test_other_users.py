"""Users that are not the suite's, beside a suite user: what they report through Locust's
request event is in summary.json as endpoints of their own (Locust's counts, no Triton side),
and their own `host` is left alone."""

from __future__ import annotations

import textwrap

from tests.helpers import locust_request_counts, run_against_triton

LOCUSTFILE = """
import time

import numpy as np
from locust import User, constant, events, task
from locust.contrib.fasthttp import FastHttpUser

from loadtests import TritonHttpUser


class Suite(TritonHttpUser):
    wait_time = constant(0.02)

    @task
    def ask(self):
        self.client.infer("identity", {{"INPUT0": np.ones((1, 16), np.float32)}})


class Scraper(FastHttpUser):
    # Another server than the suite's (Triton's metrics port): its host must stay its own.
    host = "http://{metrics}"
    wait_time = constant(0.05)

    @task
    def scrape(self):
        self.client.get("/metrics")


class Reporter(User):
    # A user with a client of its own, reporting through Locust's request event.
    wait_time = constant(0.05)

    @task
    def report(self):
        events.request.fire(request_type="custom", name="probe", response_time=1.5, response_length=3,
                            exception=None, context={{}})
"""


def test_other_users_requests_are_endpoints_of_their_own_and_keep_their_host(triton, tmp_path):
    """Before: summary.json left both other users out (only 'identity [http]'), and the suite's
    environment.host sent the scraper to Triton's HTTP port (every /metrics request a 404)."""
    locustfile = tmp_path / "mine.py"
    locustfile.write_text(textwrap.dedent(LOCUSTFILE.format(metrics=triton.metrics_address)))
    csv = tmp_path / "locust"
    run = run_against_triton(
        triton,
        tmp_path / "run",
        [],
        ["--csv", str(csv)],
        models=("identity",),
        users=3,
        run_time="3s",
        locustfile=str(locustfile),
    )
    endpoints = {e["name"]: e for e in run.summary["endpoints"]}
    assert sorted(endpoints) == ["GET /metrics", "custom probe", "identity [http]"]
    locust = locust_request_counts(csv)
    assert endpoints["GET /metrics"]["requests"] == locust[("GET", "/metrics")] > 0
    assert endpoints["custom probe"]["requests"] == locust[("custom", "probe")] > 0
    assert all(e["failures"] == 0 for e in endpoints.values()), endpoints
    assert endpoints["identity [http]"]["requests"] == run.served("identity")
    # No Triton side for the others: the server section is the model's only.
    assert sorted(run.summary["server"]) == ["identity"]
    # The report judges the model, not the other users' endpoints (no model, no Triton side).
    from analysis.dataset import load
    from analysis.diagnosis import diagnose
    from analysis.tables import model_rows

    data = load(run.run_dir)
    assert [row[0] for row in model_rows(data)[1]] == ["identity"]
    judged = " ".join(str(item) for item in diagnose(data))
    assert "GET /metrics" not in judged and "custom probe" not in judged
