"""The suite in Locust's web UI: a "Triton (exact)" tab, start-up errors in the form, no Host field.

- The tab uses Locust's documented extension points: `extended_tabs` / `extended_tables`
  in the web UI's template arguments, and an `extended_stats` entry added to the
  /stats/requests response the UI polls. The rows come from the same merged numbers that
  the run directory is written from, so what an interactive user sees is what the report
  will show; after STOP they keep the finished test's numbers until the next one starts.
- Start (POST /swarm) first runs the headless pre-flight on the form's options: a bad
  option or an unknown model answers `success: false` with the `error:` line, which
  Locust's form shows in red under its fields, and no test starts.
- A literal --header value is never in the page (loadtests/webui_secrets.py); a Start
  with the form as shown sends the real headers, and a header typed there keeps the commas
  of its value (`Accept: a,b` is one header, as on the command line).
- Locust's "Host" field sets HTTP users' base URL, which the suite's users do not read
  (they use --triton-http/--triton-grpc): the field is hidden, and the header's "Host"
  shows the Triton address(es) the classes load instead (the run wiring's environment.host).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from flask import Response, jsonify, request
from locust.runners import STATE_RUNNING, STATE_SPAWNING
from werkzeug.datastructures import ImmutableMultiDict

from loadtests import webui_form
from loadtests.errors import StartupError
from loadtests.recording.live import LiveSnapshot
from loadtests.webui_secrets import HeaderRedaction

TAB_KEY = "triton-exact"
COLUMNS = (
    ("endpoint", "Endpoint"),
    ("requests", "Requests"),
    ("failures", "Failures"),
    ("late", "Late (open loop)"),
    ("dropped", "Dropped"),
    ("inferences", "Inferences"),
    ("infer_per_s", "Infer/s (now / run)"),
    ("p50_ms", "p50 ms"),
    ("p90_ms", "p90 ms"),
    ("p95_ms", "p95 ms"),
    ("p99_ms", "p99 ms"),
    ("p99_interval_ms", "p99 95 % interval ms"),
    ("max_ms", "max ms"),
    ("mean_ms", "mean ms"),
    ("avg_batch", "Server avg batch"),
    ("queue_ms", "Server queue ms"),
    ("compute_infer_ms", "Server compute infer ms"),
    ("run_dir", "Run directory"),
)


# Locust's form draws every field as an MUI TextField; the Host one is hidden by its input's name.
HIDE_HOST_FIELD = '<style>.MuiFormControl-root:has(input[name="host"]) { display: none; }</style>'


def install(web_ui, snapshot: Callable[[], LiveSnapshot], check_start: Callable[[Mapping[str, str]], None]) -> None:
    """Add the tab, the start-up check and the hidden Host field to Locust's web UI.

    `check_start(form)` takes the form's option values and runs the headless pre-flight on
    them (raises StartupError; the run wiring's `Preflight.check_web_start`).
    """
    environment = web_ui.environment
    redaction = HeaderRedaction(environment.parsed_options)
    redaction.install(web_ui.app)
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

    @web_ui.app.after_request
    def _hide_host_field(response: Response) -> Response:
        is_page = (request.endpoint or "").endswith("index") and response.mimetype == "text/html"
        if is_page and not response.direct_passthrough:
            page = response.get_data(as_text=True)
            page = page.replace("</head>", f"{HIDE_HOST_FIELD}{webui_form.HEAD}</head>", 1)
            response.set_data(page.replace("</body>", f"{webui_form.body_script()}</body>", 1))  # order, labels
        return response

    @web_ui.app.before_request
    def _check_start():
        # Locust answers "Swarming started" and reports a failing test_start only in its log;
        # the same checks as a headless run, here, put the error in the form instead.
        if request.method != "POST" or not request.path.endswith("/swarm"):
            return None
        # Locust and the pre-flight below both read request.form: --header is taken out of it
        # and set on the options (the real values, or the typed text split as the command line would).
        request.form = redaction.take_headers(request.form)
        # The hidden Host field only echoes the header's label (the run wiring's environment.host):
        # Locust would copy it into --host, which the suite reads as -H (--triton-http).
        request.form = ImmutableMultiDict([(k, v) for k, v in request.form.items(multi=True) if k != "host"])
        runner = environment.runner
        if runner is not None and runner.state in (STATE_SPAWNING, STATE_RUNNING):
            return None  # "Edit" of a running test: only users and spawn rate change
        try:
            check_start(request.form)
        except StartupError as error:
            return jsonify({"success": False, "message": f"error: {error}", "host": environment.host})
        return None
