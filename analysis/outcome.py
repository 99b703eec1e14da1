"""The report's first line: what happened in the run, before any figure.

How many requests went out and how many failed (and as what), whether the run was healthy, and
whether its SLO gate passed. A reader who stops there knows whether the figures below describe
the server or only the few requests that got through. The sentence on the counts is
loadtests/run_format/outcome.py's (the web UI's health line says it while the test runs).

    outcome(data)  # "Unhealthy: 12,831 of 13,020 requests failed (98.5 %, timeout 12,831) ..."
"""

from __future__ import annotations

from analysis.dataset import Dataset
from loadtests.run_format.faults import fault_sentences
from loadtests.run_format.outcome import counts_sentence


def outcome(data: Dataset) -> str | None:
    """One sentence for a run directory (None for other sources: they hold no counts of failures)."""
    if data.run is None or not data.endpoints:
        return None
    requests = sum(endpoint.requests for endpoint in data.endpoints)
    failures = sum(endpoint.failures for endpoint in data.endpoints)
    duration = max(endpoint.duration_s for endpoint in data.endpoints)
    by_class: dict[str, int] = {}
    for endpoint in data.endpoints:
        for name, count in endpoint.failures_by_class.items():
            by_class[name] = by_class.get(name, 0) + count
    text = counts_sentence(requests, failures, by_class, duration)
    faults = fault_sentences(data.run.faults) if data.run.faults else []
    if faults:
        text += f" {len(faults)} fault(s) around the measurement (Findings)."
    gate = _slo(data)
    return f"{text} {gate}" if gate else text


def _slo(data: Dataset) -> str:
    verdicts = data.run.slo if data.run is not None else []
    if not verdicts:
        return ""
    missed = [verdict["clause"] for verdict in verdicts if not verdict.get("passed")]
    if not missed:
        return f"SLO gate passed ({len(verdicts)} clause(s))."
    return f"SLO gate failed: {', '.join(missed)}."
