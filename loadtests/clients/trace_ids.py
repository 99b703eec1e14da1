"""Request ids for Triton's traces: what lets a Triton trace be joined to the client's timing.

Triton writes a request's `id` (HTTP's JSON `"id"`, gRPC's `ModelInferRequest.id`) into its
trace as `request_id`. Triton picks which requests it traces (one in `trace_rate`), so with
--trace-sample every request carries an id: 16 characters, the process's own 6 hex digits and
a 10-hex-digit counter. Requests are bytes built before the test, so they are built once with
a placeholder of the same width and split around it (`split_at_placeholder`); each send joins
the two halves around the next id (one concatenation, no re-encoding, lengths unchanged).

    ids = TraceIds()
    head, tail = split_at_placeholder(request_bytes)
    wire = head + ids.next() + tail
"""

from __future__ import annotations

import itertools
import secrets

ID_WIDTH = 16
PREFIX_WIDTH = 6
# Built into a request where its id will go: 16 characters, valid in JSON and protobuf.
PLACEHOLDER = "TLTRACEIDHOLDER0"


# OpenTelemetry mode: the W3C trace context a traced request carries (version 00, sampled);
# the trace id is 16 zeros and the request's id, the parent span id fixed (never all zeros).
TRACEPARENT_HEADER = "traceparent"
TRACEPARENT = "00-0000000000000000{}-0000000000000001-01"


class TraceIds:
    """One process's request ids: "<6 hex of this process><10 hex counter>".

    Triton's trace file (`in_header` False): every request carries one in its `id`, Triton
    picks the traced ones. OpenTelemetry (`in_header` True): the client picks one request in
    `every` and only that one carries a `traceparent` header (Triton then traces exactly those).
    """

    def __init__(self, prefix: str | None = None) -> None:
        self.prefix = prefix or secrets.token_hex(PREFIX_WIDTH // 2)
        self._counter = itertools.count(1)
        self._requests = itertools.count(0)
        self.every = 1
        self.in_header = False

    def configure(self, every: int, in_header: bool) -> None:
        self.every, self.in_header = max(1, every), in_header

    def next(self) -> bytes | None:
        """The next request's id, or None when the client does not sample it."""
        if self.every > 1 and next(self._requests) % self.every:
            return None
        return f"{self.prefix}{next(self._counter):010x}".encode("ascii")

    def stamp(self, traced: tuple[bytes, bytes]) -> tuple[bytes | None, bytes | None]:
        """The next request's id and its bytes with the id between `traced`'s halves (the body
        or the header block, split at the placeholder once before the test); (None, None) when
        the client does not sample this request. Both protocols' clients send what this gives."""
        trace_id = self.next()
        if trace_id is None:
            return None, None
        return trace_id, traced[0] + trace_id + traced[1]


def split_at_placeholder(data: bytes) -> tuple[bytes, bytes]:
    """The bytes before and after the placeholder's first occurrence (the request's id field
    comes before any tensor data in both protocols' encodings)."""
    head, found, tail = data.partition(PLACEHOLDER.encode("ascii"))
    if not found:
        raise ValueError("the request has no trace id placeholder")
    return head, tail
