"""Load and latency per Triton replica (runs against several `--triton-http/--triton-grpc`
addresses, or a headless Service): the tables of the report's "Per replica" section and the
finding when the replicas are imbalanced.

Thresholds, and why:
- load: a replica whose share of an endpoint's requests is more than 10 % away from the even
  share (1/N). Round robin per request gives every replica the same count to within one
  request per client (tests/unit/clients/test_replicas.py asserts 10 %), so more than that means the load
  was not spread: users pinned unevenly (`--balance pin-user` with few users), a replica that
  refused connections for a while, or one that joined late (DNS re-resolved every 30 s);
- latency: a replica whose mean latency is more than 25 % above the replicas' median. Equal
  replicas under equal load differ by a few percent; a quarter is a slower node, GPU or
  placement (or a replica still warming up), not noise.
"""

from __future__ import annotations

import statistics

from analysis.run import SavedRun

LOAD_IMBALANCE = 0.10
LATENCY_IMBALANCE = 0.25
# An endpoint with fewer requests per replica says nothing about balance.
MIN_REQUESTS_PER_REPLICA = 20

CLIENT_HEADERS = ["endpoint", "replica", "requests", "share", "failures", "mean latency (ms)"]
SERVER_HEADERS = ["replica", "model", "requests", "executions", "avg batch", "queue (ms)", "compute infer (ms)"]


def client_rows(run: SavedRun) -> list[list[str]]:
    rows = []
    for endpoint in run.endpoints.values():
        for replica, counts in sorted(endpoint.replicas.items()):
            share = counts["requests"] / endpoint.requests if endpoint.requests else 0.0
            rows.append(
                [
                    endpoint.name,
                    replica,
                    f"{counts['requests']:,}",
                    f"{share:.1%}",
                    f"{counts['failures']:,}",
                    f"{counts['mean_latency_us'] / 1000:,.3f}",
                ]
            )
    return rows


def server_rows(run: SavedRun) -> list[list[str]]:
    rows = []
    for replica, models in sorted(run.server_replicas.items()):
        for model, delta in sorted(models.items()):
            rows.append(
                [
                    replica,
                    model,
                    f"{delta['requests']:,}",
                    f"{delta['executions']:,}",
                    f"{delta['avg_batch']:.2f}",
                    f"{delta['queue_us'] / 1000:,.3f}",
                    f"{delta['compute_infer_us'] / 1000:,.3f}",
                ]
            )
    return rows


def imbalance_findings(run: SavedRun | None) -> list[str]:
    """One sentence per endpoint whose load or latency is uneven across replicas."""
    out: list[str] = []
    for endpoint in run.endpoints.values() if run is not None else []:
        replicas = endpoint.replicas
        if len(replicas) < 2 or endpoint.requests < MIN_REQUESTS_PER_REPLICA * len(replicas):
            continue
        even = endpoint.requests / len(replicas)
        uneven = {r: c["requests"] for r, c in replicas.items() if abs(c["requests"] - even) > LOAD_IMBALANCE * even}
        if uneven:
            shares = ", ".join(f"{r} {n / endpoint.requests:.1%}" for r, n in sorted(uneven.items()))
            out.append(
                f"{endpoint.name}: requests are imbalanced across {len(replicas)} replicas ({shares}; even is "
                f"{1 / len(replicas):.1%}, flagged beyond ±{LOAD_IMBALANCE:.0%} of it)."
            )
        means = {r: c["mean_latency_us"] for r, c in replicas.items() if c["requests"] > c["failures"]}
        if len(means) >= 2:
            median = statistics.median(means.values())
            slow = {r: m for r, m in means.items() if median > 0 and m > (1 + LATENCY_IMBALANCE) * median}
            if slow:
                listed = ", ".join(f"{r} {m / 1000:,.3f} ms" for r, m in sorted(slow.items()))
                out.append(
                    f"{endpoint.name}: mean latency is imbalanced across replicas ({listed} against a median of "
                    f"{median / 1000:,.3f} ms; flagged beyond +{LATENCY_IMBALANCE:.0%})."
                )
    return out
