"""The report's first line: what happened in the run, before any figure.

How many requests went out and how many failed (and as what), whether the run was healthy, and
whether its SLO gate passed. A reader who stops there knows whether the figures below describe
the server or only the few requests that got through.

    outcome(data)  # "Unhealthy: 12,831 of 13,020 requests failed (98.5 %, timeout 12,831) ..."
"""

from __future__ import annotations

from analysis.dataset import Dataset
from analysis.diagnosis import LIMITS
from loadtests.run_format.faults import fault_sentences

# Below the share of failures the diagnosis rule for failures fires from, a run is still called
# healthy ("but for a few failures").
FAILURE_SHARE = LIMITS.failure_share


def _percent(part: int, whole: int) -> str:
    """A share that never rounds a part up to the whole (99.96 % is "99.9 %", not "100.0 %").

    >>> _percent(38036, 38052), _percent(1, 3), _percent(5, 5)
    ('99.9 %', '33.3 %', '100 %')
    """
    if part == whole:
        return "100 %"
    return f"{min(part / whole * 100, 99.9):.1f} %"


def _classes(by_class: dict[str, int], top: int = 3) -> str:
    ranked = sorted(by_class.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name} {count:,}" for name, count in ranked[:top])


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
    succeeded = requests - failures
    share = failures / requests if requests else 0.0
    sent = f"{requests:,} requests in {duration:,.1f} s"
    failed = f"{_percent(failures, requests) if requests else ''}: {_classes(by_class)}"
    if not requests:
        text = f"No request was sent in {duration:,.1f} s: nothing was measured."
    elif not failures:
        text = f"Healthy: {sent}, none failed."
    elif share < FAILURE_SHARE:
        text = f"Healthy but for a few failures: {sent}, {failures:,} failed ({failed})."
    elif not succeeded:
        text = f"Failed: every one of {sent} failed ({_classes(by_class)}); no latency was measured."
    else:
        text = (
            f"Unhealthy: {failures:,} of {sent} failed ({failed}); the latencies below are "
            f"of the {succeeded:,} that succeeded."
        )
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
