"""The end of a run (master or single process): summary.json written once, complete.

Every window closed, the run's totals merged once (recording's RunTotals: each endpoint, each
model, the whole run), Triton's last snapshot taken, the faults found, the --slo verdicts
computed, then summary.json written; run_finished fired; the console
table printed; the JUnit file and exit code 3 (loadtests/run/slo_gate.py); --upload's copy last.
"""

from __future__ import annotations

import contextlib
import io
import json
import time

from loadtests.clients.failures import counted_by_triton
from loadtests.config.settings import Settings
from loadtests.recording.console import print_exact_summary, print_faults, report_hint
from loadtests.recording.histograms import EndpointStats, RunTotals
from loadtests.run import baseline_gate, slo_gate
from loadtests.run.active_run import ActiveRun
from loadtests.run.process import SuiteProcess
from loadtests.run.upload import upload_run
from loadtests.run_format.files import STEPS_JSON
from loadtests.run_format.summary import mix_block
from loadtests.tracing.join import closing_note, join_run
from loadtests.tracing.switch import TraceSwitch
from loadtests.triton_stats.poller import fetch_triton_info


def finish_run(process: SuiteProcess, run: ActiveRun) -> None:
    """Close, compute, write summary.json once, fire run_finished, print, gate."""
    settings = process.settings
    run.aggregator.close_windows(final=True, end_s=run.directory.stopped_at or time.time())
    totals = RunTotals.of(run.aggregator.totals)  # merged once: the summary, the gate and the console read these
    server = run.server.stop(run.directory)
    if run.keep_models is not None:  # every ready model was watched: keep the ones the run used
        named = {model for model in totals.models if model} - run.keep_models
        # Their metadata and config for the report, as pre-flight's (their ensembles' steps too).
        info = fetch_triton_info(run.server.stats.target, sorted(named), security=settings.security)
        run.directory.add_models(info)
        used = run.keep_models.union(info["models"])
        server = {model: delta for model, delta in server.items() if model in used}
    extra: dict = {"late_worker_windows": run.aggregator.late_messages} if run.aggregator.late_messages else {}
    replicas = run.server.replicas()
    if replicas:
        extra["server_replicas"] = replicas
    extra["faults"] = faults = run.faults.to_json(
        run.server.stats.restarts(),
        run.server.stats.errors,
        # Like with like: what reached Triton on both sides (its successes and failures; the
        # client's requests but those refused before any server answered).
        {model: delta["requests"] + delta["failed_requests"] for model, delta in server.items()},
        {model: triton_counted(stats) for model, stats in totals.models.items()},
    )
    if settings.mix is not None:
        sent = {model: stats.requests for model, stats in totals.models.items()}
        extra["mix"] = mix_block(settings.mix.text, settings.mix.weights, sent)
    if process.trace_switch is not None:
        extra["traces"] = join_traces(process.trace_switch, run)
    shape = process.environment.shape_class
    summary = run.directory.summary(
        totals,
        run.cpu_s,
        server=server,
        extra=extra,
        traffic=traffic_json(settings, shape),
        throttle=run.throttle,
        workers=len(run.workers_reported),
    )
    results = slo_gate.add_verdicts(summary, totals, settings)
    path = run.directory.write_summary(summary)
    process.events.run_finished.fire(path=path, summary=summary)
    run.directory.close()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):  # printed after Locust's own table (HeldConsole)
        print(f"Run directory: {path}")
        if not is_sweep(shape):  # a sweep's per-level table follows; a whole-run row would mix its levels
            print_exact_summary(summary["endpoints"], open_loop=settings.open_loop)
        print_faults(faults)
        if "traces" in extra:
            print(closing_note(extra["traces"]))
        slo_gate.report(process.environment, settings, results)  # the table, --junit, exit code 3
        baseline_gate.judge(process.environment, settings, path)  # --baseline --gate: exit code 3
        print(report_hint(path))
    process.console.write(text.getvalue())
    upload_run(process.environment, settings.upload, path)  # last: the directory is complete


def join_traces(switch: TraceSwitch, run: ActiveRun) -> dict:
    """--trace-sample: Triton's settings restored, its traces joined (traces.csv), summary.json's "traces"."""
    path = run.directory.path
    steps = json.loads((path / STEPS_JSON).read_text()).get("steps", []) if (path / STEPS_JSON).is_file() else []
    return join_run(switch, run.client_traces, path, run.directory.started_at, steps)


def is_sweep(shape) -> bool:
    """A sweep's load shape (its levels are judged and tabled one by one by the sweep command)."""
    return getattr(shape, "name", None) == "sweep"


def traffic_json(settings: Settings, shape) -> dict:
    """summary.json's "traffic": what pattern the run used."""
    if not settings.open_loop:
        return {"mode": "closed"}
    rate_shape = getattr(shape, "profile", None) is not None
    return {
        "mode": settings.traffic,
        "rate": None if rate_shape else settings.rate,
        "rate_shape": shape.name if rate_shape else None,
        "max_in_flight": settings.max_in_flight,
        "drop_when_saturated": settings.drop_when_saturated,
        **({"burstiness": settings.burstiness} if settings.burstiness is not None else {}),
    }


def triton_counted(stats: EndpointStats) -> int:
    """A model's (or endpoint's) requests that Triton's statistics count: failures Triton never
    counted left out (refused connections, a full queue, ...)."""
    return stats.requests - sum(n for name, n in stats.failures.items() if not counted_by_triton(name))
