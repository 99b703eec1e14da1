"""What happened to a run's requests, in one sentence: the report's first line and the web UI's
health line while the test runs.

How many requests went out and how many failed (and as what), and whether that is healthy: below
FAILURE_SHARE failed it is "healthy but for a few failures", the share from which the report's
diagnosis names the failures (analysis/diagnosis.py's limit is this one).

    counts_sentence(13020, 12831, {"timeout": 12831}, 60.0)
    # "Unhealthy: 12,831 of 13,020 requests in 60.0 s failed (98.5 %: timeout 12,831); ..."
"""

from __future__ import annotations

# The share of failed requests from which a run is unhealthy and the diagnosis names them.
FAILURE_SHARE = 0.01


def percent(part: int, whole: int) -> str:
    """A share that never rounds a part up to the whole (99.96 % is "99.9 %", not "100.0 %").

    >>> percent(38036, 38052), percent(1, 3), percent(5, 5)
    ('99.9 %', '33.3 %', '100 %')
    """
    if part == whole:
        return "100 %"
    return f"{min(part / whole * 100, 99.9):.1f} %"


def classes_text(by_class: dict[str, int], top: int = 3) -> str:
    """The most frequent failure classes with their counts: "timeout 12,831, overload 3"."""
    ranked = sorted(by_class.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name} {count:,}" for name, count in ranked[:top])


def counts_sentence(requests: int, failures: int, by_class: dict[str, int], duration_s: float) -> str:
    """The outcome of `requests` sent in `duration_s`, `failures` of them failed (`by_class`).

    >>> counts_sentence(820, 0, {}, 9.1)
    'Healthy: 820 requests in 9.1 s, none failed.'
    >>> counts_sentence(1000, 2, {"timeout": 2}, 10.0)
    'Healthy but for a few failures: 1,000 requests in 10.0 s, 2 failed (0.2 %: timeout 2).'
    """
    succeeded = requests - failures
    share = failures / requests if requests else 0.0
    sent = f"{requests:,} requests in {duration_s:,.1f} s"
    failed = f"{percent(failures, requests) if requests else ''}: {classes_text(by_class)}"
    if not requests:
        return f"No request was sent in {duration_s:,.1f} s: nothing was measured."
    if not failures:
        return f"Healthy: {sent}, none failed."
    if share < FAILURE_SHARE:
        return f"Healthy but for a few failures: {sent}, {failures:,} failed ({failed})."
    if not succeeded:
        return f"Failed: every one of {sent} failed ({classes_text(by_class)}); no latency was measured."
    return (
        f"Unhealthy: {failures:,} of {sent} failed ({failed}); the latencies below are "
        f"of the {succeeded:,} that succeeded."
    )
