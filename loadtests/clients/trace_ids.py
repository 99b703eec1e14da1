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


class TraceIds:
    """One process's request ids: "<6 hex of this process><10 hex counter>"."""

    def __init__(self, prefix: str | None = None) -> None:
        self.prefix = prefix or secrets.token_hex(PREFIX_WIDTH // 2)
        self._counter = itertools.count(1)

    def next(self) -> bytes:
        return f"{self.prefix}{next(self._counter):010x}".encode("ascii")


def split_at_placeholder(data: bytes) -> tuple[bytes, bytes]:
    """The bytes before and after the placeholder's first occurrence (the request's id field
    comes before any tensor data in both protocols' encodings)."""
    head, found, tail = data.partition(PLACEHOLDER.encode("ascii"))
    if not found:
        raise ValueError("the request has no trace id placeholder")
    return head, tail
