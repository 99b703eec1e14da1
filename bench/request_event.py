"""`python -m bench.request_event`: what one request costs after the wire, in µs.

Times, per request and in this process (no server involved), the layers every request
goes through once its response is in:
- `locust`: Locust's `request` event with only Locust's own statistics listener;
- `record`: the suite's exact recording alone (`WindowRecorder.record` of a client's
  `RequestOutcome`: window lookup,
  counters, the latency held for the window's drain, whose fold into the HDR histogram is
  included, every FOLD_EVERY_BENCH requests), and beside it `EndpointStats.record`, hdrh's
  `record_value` per request (how the recorder recorded before batching);
- `listener`: the suite's request listener (`run/requests.py`'s `RequestRecording`) beside
  Locust's statistics listener on one event;
- `report`: `TritonClient._report` end to end (its RequestOutcome, event, both listeners),
  closed loop and open loop (coordinated-omission correction).
Prints a Markdown table; numbers vary with the machine, compare them within one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from types import SimpleNamespace

from locust.env import Environment
from locust.event import Events

from loadtests.clients.base import PreparedRequest, TritonClient
from loadtests.clients.outcome import RequestOutcome
from loadtests.config.addresses import TritonTarget
from loadtests.recording.histograms import EndpointStats
from loadtests.recording.windows import WindowRecorder
from loadtests.run.requests import RequestRecording

# Requests per drain of the recorder: 2,000 requests/s and a drain a second.
FOLD_EVERY_BENCH = 2000
# One successful request, as a client reports it (the request event's context).
OUTCOME = RequestOutcome("identity [grpc]", "identity", "grpc", 250.0, 1, None, None, False, 96, 64)


class _Client(TritonClient):
    """Only the reporting half of a client: the abstract wire methods are never called."""

    protocol = "grpc"
    server_live = model_ready = model_metadata_and_config = warm = prepare = wire_bytes = None
    _send = _response_length = _decode = close = None


_Client.__abstractmethods__ = frozenset()


def per_call_us(function, count: int) -> float:
    best = float("inf")
    for _ in range(3):  # the best of three, in CPU time: the machine is shared
        start = time.process_time_ns()
        for _ in range(count):
            function()
        best = min(best, (time.process_time_ns() - start) / count / 1e3)
    return best


def held_record(recorder: WindowRecorder):
    """One request into the recorder; every FOLD_EVERY_BENCH requests, the fold a drain does."""
    calls = [0]

    def record() -> None:
        recorder.record(OUTCOME)
        calls[0] += 1
        if calls[0] % FOLD_EVERY_BENCH == 0:
            for window in recorder.pending.values():
                for stats in window.values():
                    stats.fold()

    return record


def environment_with_locust_stats() -> Environment:
    environment = Environment(user_classes=[], events=Events())
    environment.create_local_runner()  # registers Locust's statistics listener on the request event
    return environment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.request_event", description=__doc__)
    parser.add_argument("--count", type=int, default=50_000)
    args = parser.parse_args(argv)

    request = PreparedRequest("identity [grpc]", "identity", 1, b"", request_bytes=96)
    recorder = WindowRecorder()

    # The suite's own listener, on a stand-in for the process (it reads only these two).
    recording = RequestRecording(SimpleNamespace(recorder=recorder, slowest_ms=0.0))

    locust_only = environment_with_locust_stats()
    full = environment_with_locust_stats()
    full.events.request.add_listener(recording.on_request)
    client = _Client(TritonTarget.parse("--triton-grpc", "127.0.0.1:1", "grpc"), 10.0, full.events.request)

    def fire(environment):
        return lambda: environment.events.request.fire(
            request_type="grpc",
            name="identity",
            response_time=0.25,
            response_length=64,
            exception=None,
            context=OUTCOME,
        )

    one_by_one = EndpointStats("identity [grpc]", "identity", "grpc")
    now = time.perf_counter_ns
    rows = {
        "locust (Locust's statistics only)": per_call_us(fire(locust_only), args.count),
        "record (WindowRecorder.record, held and folded)": per_call_us(held_record(recorder), args.count),
        "record one by one (EndpointStats.record, hdrh per request)": per_call_us(
            lambda: one_by_one.record(OUTCOME), args.count
        ),
        "listener (Locust's statistics + the suite's)": per_call_us(fire(full), args.count),
        "report, closed loop (TritonClient._report)": per_call_us(
            lambda: client._report(request, now() - 250_000, now(), None, 64, None), args.count
        ),
        "report, open loop": per_call_us(
            lambda: client._report(request, now() - 250_000, now(), now() - 300_000, 64, None), args.count
        ),
    }
    print("| layer | µs per request |\n| --- | ---: |")
    for name, value in rows.items():
        print(f"| {name} | {value:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
