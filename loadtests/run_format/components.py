"""Components of Latency from a client latency and Triton's per-request breakdown (pure, no pandas).

perf_analyzer stacks a request's mean latency as client send/recv + network, server queue,
compute input, compute infer, compute output; the first part is what the client measured
that Triton did not (the mean minus Triton's queue and compute; Triton's own overhead of a
few µs lands there too, as in perf_analyzer's "Network+Server Send/Recv").

Open-loop latency is timed from each request's intended send time. perf_analyzer times from
the actual send, so the network part starts from the uncorrected mean, and the rest (time
requests were due but not yet sent) is its own part, the client wait. One function, so the
reports and the sweep's perf_analyzer-format CSV split a level the same way.

    network_us, wait_us = client_parts(level["latency_us"], server, level.get("latency_uncorrected_us"))
"""

from __future__ import annotations

SERVER_PARTS = ("queue_us", "compute_input_us", "compute_infer_us", "compute_output_us")


def client_parts(
    latency: dict, server: dict | None, uncorrected: dict | None = None
) -> tuple[float | None, float | None]:
    """(network + server send/recv, client wait) in µs; None where it cannot be known
    (no server numbers; a closed-loop run has no client wait). Never negative: a client mean
    below Triton's own time is clock noise, not a cost."""
    sent_mean = float(latency["mean"])
    wait = None
    if uncorrected and uncorrected.get("mean"):
        sent_mean = float(uncorrected["mean"])
        wait = max(0.0, float(latency["mean"]) - sent_mean)
    if not server or not server.get("requests"):
        return None, wait
    in_server = sum(float(server.get(key, 0.0)) for key in SERVER_PARTS)
    return max(0.0, sent_mean - in_server), wait
