"""A decoupled model's requests over HTTP, through Triton's generate_stream (clients/http_stream.py),
what only HTTP does: against the session's Triton (the timetables, empty and failing streams and
the deadline, for both protocols, are in test_grpc_stream.py), a batching model and a refusal;
against a scripted HTTP/1.1 server for what Triton does not do on demand (events held back by a
known time, a connection cut mid-stream, a stall, a body ending mid-event)."""

from __future__ import annotations

import time

import pytest
from locust.event import EventHook

from loadtests.clients import Connections
from loadtests.clients.base import PreparedRequest
from loadtests.clients.http import HttpWire
from loadtests.clients.http_stream import HttpStreamClient
from loadtests.clients.http_wire import build_request
from tests.helpers import http_target
from tests.unit.clients.test_http_wire import read_request, scripted_connections


def _client(address: str, timeout_s: float, fired: list) -> HttpStreamClient:
    event = EventHook()
    event.add_listener(lambda **kwargs: fired.append(kwargs))
    return HttpStreamClient(http_target(address), timeout_s, event, connections=Connections())


# -- a scripted server ----------------------------------------------------------------------
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"
EVENT = b'data: {"OUTPUT0":[1.0,2.0,3.0,4.0],"model_name":"m","model_version":"1"}\n\n'
# How long the scripted server holds between chunks. The checks compare the events' times with
# each other and with these holds, not with a bound of their own: a first event timed under half
# a 0.1-s hold failed once at 189 ms when the test ran at nice 19 beside three busy shards.
HELD_S = 0.3


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _scripted(*scripts, timeout_s: float = 2.0, requests: int = 1):
    fired: list = []
    with scripted_connections(*scripts) as port:
        client = _client(f"127.0.0.1:{port}", timeout_s, fired)
        path = "/v2/models/m/generate_stream"
        wire = HttpWire(path, b"{}", {}, build_request(f"127.0.0.1:{port}", path, b"{}", {}))
        request = PreparedRequest("m [http]", "m", 1, wire)
        failures = [client.infer(request) for _ in range(requests)]
        client.close()
    return failures, [event["context"] for event in fired]


def test_each_event_is_timed_when_it_arrives_not_when_the_body_ends():
    def held(conn):
        for _ in range(2):  # the same keep-alive connection serves the next request
            read_request(conn)
            conn.sendall(HEAD + chunk(EVENT))
            time.sleep(HELD_S)
            conn.sendall(chunk(EVENT[:20]))  # an event split over two chunks
            time.sleep(HELD_S)
            conn.sendall(chunk(EVENT[20:]) + b"0\r\n\r\n")

    failures, outcomes = _scripted(held, requests=2)
    assert failures == [None, None]
    for outcome in outcomes:
        timings = outcome.stream
        assert timings.responses == 2
        # The first event is timed when it arrives: a hold or more before the body ends (a timer at
        # the body's end would put the two together).
        assert timings.first_us <= timings.final_us - HELD_S * 1e6, timings
        # The second event is completed by the chunk sent after two holds, the body's end with it.
        assert timings.first_us + timings.gaps_us[0] >= 2 * HELD_S * 1e6, timings
        assert timings.final_us >= timings.first_us + timings.gaps_us[0]


@pytest.mark.parametrize(("events", "name"), [(1, "stream broken: connection reset"), (0, "connection reset")])
def test_a_stream_cut_mid_way_is_a_counted_failure(events, name):
    """The server had the request once it answered an event: a cut after it is 'stream broken'."""

    def cut(conn):
        read_request(conn)
        conn.sendall(HEAD + chunk(EVENT) * events)
        time.sleep(0.05)

    failures, outcomes = _scripted(cut)
    assert [failure.name for failure in failures] == [name]
    assert outcomes[0].failure.startswith(name) and outcomes[0].stream is None


def test_a_stall_after_a_response_is_a_timeout_at_the_deadline():
    def stall(conn):
        read_request(conn)
        conn.sendall(HEAD + chunk(EVENT))
        time.sleep(1.5)

    failures, outcomes = _scripted(stall, timeout_s=0.5)
    assert [failure.name for failure in failures] == ["timeout"]
    assert 0.5e6 <= outcomes[0].latency_us < 1.0e6  # at the deadline, not when the server gave up


def test_a_body_ending_inside_an_event_is_a_bad_response():
    def short(conn):
        read_request(conn)
        conn.sendall(HEAD + chunk(EVENT) + chunk(b'data: {"OUTPUT0":') + b"0\r\n\r\n")
        time.sleep(0.3)

    failures, _ = _scripted(short)
    assert [failure.name for failure in failures] == ["bad response"]
    assert "inside an event" in failures[0].detail
