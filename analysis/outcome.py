"""The report's first line: what happened in the run, before any figure.

How many requests went out and how many failed (and as what), whether the run was healthy, and
whether its SLO gate passed. A reader who stops there knows whether the figures below describe
the server or only the few requests that got through. The sentence on the counts is
loadtests/run_format/outcome.py's (the web UI's health line says it while the test runs).

    outcome(data)  # "Unhealthy: 12,831 of 13,020 requests failed (98.5 %, timeout 12,831) ..."
    first_screen(data)  # [the outcome, the first headline, the first diagnosis with its next step]

`first_screen` is what the report says first (analysis/report.py draws the same items), printed
by `python -m analysis first-screen DIR`: the web UI's health line, during a run (on the run so
far) and after it.
"""

from __future__ import annotations

from analysis.dataset import Dataset
from analysis.diagnosis import RULE_TITLES, Diagnosis, diagnose, headlines
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


# What the report says where no rule found a limit (the diagnosis section's sentence).
NO_LIMIT = "No rule found a limit in this run: none of the conditions in docs/reference/reports.md#diagnosis held."


def first_screen(data: Dataset) -> list[str]:
    """The report's first screen as lines: its outcome, its first headline, and its first
    diagnosis with the next step (or that no rule found a limit)."""
    screen = [line for line in [outcome(data), *headlines(data)[:1]] if line]
    found = [item for item in diagnose(data) if isinstance(item, Diagnosis)]
    if not found:
        return [*screen, NO_LIMIT]
    first = found[0]
    return [*screen, f"{RULE_TITLES[first.rule]}: {first.model}, {first.where}. Next: {first.next_step}."]


def _slo(data: Dataset) -> str:
    verdicts = data.run.slo if data.run is not None else []
    if not verdicts:
        return ""
    missed = [verdict["clause"] for verdict in verdicts if not verdict.get("passed")]
    if not missed:
        return f"SLO gate passed ({len(verdicts)} clause(s))."
    return f"SLO gate failed: {', '.join(missed)}."
