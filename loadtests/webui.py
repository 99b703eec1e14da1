"""A "Triton (exact)" tab in Locust's web UI: exact percentiles per endpoint, live.

Uses Locust's documented extension points: `extended_tabs` / `extended_tables` in the
web UI's template arguments, and an `extended_stats` entry added to the
/stats/requests response the UI polls. The rows come from the same merged numbers
that the run directory is written from, so what an interactive user sees is what the
report will show.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from flask import request

from loadtests.recording.live import LiveSnapshot

TAB_KEY = "triton-exact"
COLUMNS = (
    ("endpoint", "Endpoint"),
    ("requests", "Requests"),
    ("failures", "Failures"),
    ("late", "Late (open loop)"),
    ("dropped", "Dropped"),
    ("inferences", "Inferences"),
    ("infer_per_s", "Infer/s (last window)"),
    ("p50_ms", "p50 ms"),
    ("p90_ms", "p90 ms"),
    ("p99_ms", "p99 ms"),
    ("max_ms", "max ms"),
    ("avg_batch", "Server avg batch"),
    ("queue_ms", "Server queue ms"),
    ("compute_infer_ms", "Server compute infer ms"),
)


def install(web_ui, snapshot: Callable[[], LiveSnapshot]) -> None:
    web_ui.template_args["extended_tabs"] = [{"title": "Triton (exact)", "key": TAB_KEY}]
    web_ui.template_args["extended_tables"] = [
        {"key": TAB_KEY, "structure": [{"key": key, "title": title} for key, title in COLUMNS]}
    ]

    @web_ui.app.after_request
    def _add_exact_stats(response):
        if request.path != "/stats/requests" or not response.is_json:
            return response
        payload = response.get_json()
        payload["extended_stats"] = [{"key": TAB_KEY, "data": snapshot().table_rows()}]
        response.set_data(json.dumps(payload))
        return response
