"""A decoupled model's requests streamed on the suite's own HTTP/2 wire (clients/grpc_stream.py)
and, the tests against Triton, over HTTP through generate_stream (clients/http_stream.py; what
only HTTP does is in test_http_stream.py), against the session's Triton and the test
repository's decoupled models (models/test_repository): their timetables come from their config
parameters, read from Triton, never written here."""

from __future__ import annotations

import pytest

from loadtests.clients.grpc_frames import MESSAGE_PREFIX, CallFailure, timed_messages
from loadtests.clients.outcome import TimedChunks


def test_messages_are_timed_by_the_frame_that_completes_them():
    """No server: DATA payloads as the hub appends them, a message split over frames and two in one."""
    framed = [MESSAGE_PREFIX.pack(0, len(body)) + body for body in (b"first", b"second", b"third")]
    stream = framed[0] + framed[1] + framed[2]
    cuts = [3, len(framed[0]) + 4, len(stream)]  # message 1 ends in frame 2; messages 2 and 3 in frame 3
    chunks = TimedChunks()
    for begin, end in zip([0, *cuts], cuts, strict=False):
        chunks.append(stream[begin:end])
    assert chunks.times == sorted(chunks.times) and len(chunks.times) == 3
    assert timed_messages(chunks) == [
        (b"first", chunks.times[1]),
        (b"second", chunks.times[2]),
        (b"third", chunks.times[2]),
    ]
    short = TimedChunks()
    short.append(framed[0][:-1])
    with pytest.raises(CallFailure) as cut:
        timed_messages(short)
    assert cut.value.kind == "protocol" and "cut short" in cut.value.detail
    compressed = TimedChunks()
    compressed.append(MESSAGE_PREFIX.pack(1, 1) + b"x")
    with pytest.raises(CallFailure) as packed:
        timed_messages(compressed)
    assert "compressed" in packed.value.detail
