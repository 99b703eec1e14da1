"""The client half of a trace: every request that carried a trace id, as the client timed it.

Triton chooses which requests it traces (one in `trace_rate`), so the client keeps them all
while --trace-sample is on (a tuple per request, about 0.3 µs): which ones were traced is
known only when Triton's file is read, after the run. Workers ship theirs with each report
to the master (run/shipping.py), which joins them with the file.

    log = ClientTraces()
    log.record(outcome, time.time())
    records = log.drain()   # [(trace_id, endpoint, model, protocol, replica, latency_us, failed, end_s), ...]
"""

from __future__ import annotations

from loadtests.clients.outcome import RequestOutcome

# The fields of one record, in order (a worker ships them as lists).
FIELDS = ("trace_id", "endpoint", "model", "protocol", "replica", "latency_us", "failed", "end_s")


class ClientTraces:
    """This process's traced requests since the last drain."""

    def __init__(self) -> None:
        self._records: list[tuple] = []

    def record(self, outcome: RequestOutcome, end_s: float) -> None:
        self._records.append(
            (
                outcome.trace_id,
                outcome.endpoint,
                outcome.model,
                outcome.protocol,
                outcome.replica,
                outcome.latency_us,
                outcome.failure is not None,
                end_s,
            )
        )

    def drain(self) -> list[tuple]:
        records, self._records = self._records, []
        return records
