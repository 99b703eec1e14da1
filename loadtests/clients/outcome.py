"""One request's outcome: built once by the client where the request ends, passed whole to
the recording (and, for a streamed answer, its pieces timed as they arrive: `TimedChunks`).

The client fires Locust's `request` event with it as the event's `context` (Locust's own
statistics read the event's other arguments and leave the context alone); the suite's
listener (`run/requests.py`) hands it to the process's `WindowRecorder.record`, which holds
it in its endpoint's window (`EndpointStats.hold`). Nothing is unpacked on the way.

A NamedTuple: immutable, no per-instance dict, about 0.3 µs to build on this machine (a
frozen dataclass with slots took 1.2 µs: its __init__ sets each field through
object.__setattr__). It is on every request's path.

    outcome = RequestOutcome("identity [grpc]", "identity", "grpc", latency_us=850.2, batch_size=4)
    recorder.record(outcome)                 # process side; outcome.failure is None: a success
"""

from __future__ import annotations

import itertools
import time
from typing import NamedTuple


class StreamTimings(NamedTuple):
    """A streamed request's responses (a decoupled model: over gRPC clients/grpc_stream.py, over
    HTTP clients/http_stream.py), on the same clock as its latency: from the intended send in
    open loop, else from the send.

    StreamTimings(first_us=10_250.0, gaps_us=(20_010.0, 19_990.0), final_us=50_400.0, responses=3)
    """

    first_us: float | None  # to the first response with outputs (None: the request had none)
    gaps_us: tuple[float, ...]  # between consecutive responses with outputs
    final_us: float  # to the response flagged final (triton_final_response)
    responses: int  # responses with outputs (the empty final one not counted)

    @classmethod
    def of(cls, origin_ns: int, data_ns: list[int], final_ns: int) -> StreamTimings:
        """From the perf_counter_ns of the origin, of each response with outputs and of the final one."""
        return cls(
            (data_ns[0] - origin_ns) / 1e3 if data_ns else None,
            tuple((later - earlier) / 1e3 for earlier, later in itertools.pairwise(data_ns)),
            (final_ns - origin_ns) / 1e3,
            len(data_ns),
        )


class RequestOutcome(NamedTuple):
    """How one request ended, as the recording counts it."""

    endpoint: str  # the endpoint's name, e.g. "identity [grpc]" (a window's key)
    model: str
    protocol: str  # "http" or "grpc"
    # From the intended send time in open loop (corrected for coordinated omission), else from the send.
    latency_us: float
    batch_size: int = 1
    failure: str | None = None  # its stable name and detail (docs/reference/failures.md); None: a success
    uncorrected_us: float | None = None  # open loop only: from the actual send
    late: bool = False  # open loop only: sent more than LATE_NS after its intended time
    sent_bytes: int = 0  # the request body on the wire
    received_bytes: int = 0  # the response body
    sequence_started: bool = False  # sequence users: this request started a sequence
    sequence_outcome: str | None = None  # and how its sequence ended, on its last request
    replica: str | None = None  # the replica's HOST:PORT (several Triton replicas)
    stream: StreamTimings | None = None  # a streamed request's responses (decoupled models)
    trace_id: bytes | None = None  # --trace-sample: the request's id, as Triton's trace repeats it


class TimedChunks(list):
    """A streamed answer's pieces (gRPC: a call's DATA payloads, grpc_protocol.StreamState.chunks;
    HTTP: a chunked body's chunks, http_protocol.ResponseParser), each with the perf_counter_ns
    it was parsed at: in the hub as the bytes are read, before any greenlet runs. These times
    become the request's `StreamTimings`. A unary call keeps a plain list, so its frames cost
    nothing more.

        chunks = TimedChunks(); chunks.append(b"data: {}\n\n"); chunks.times  # [1234567890]
    """

    __slots__ = ("times",)

    def __init__(self) -> None:
        super().__init__()
        self.times: list[int] = []

    def append(self, piece: bytes) -> None:
        list.append(self, piece)
        self.times.append(time.perf_counter_ns())
