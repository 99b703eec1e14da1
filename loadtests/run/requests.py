"""Every request of the suite's users, recorded in the current window's exact histograms."""

from __future__ import annotations

import time

from loadtests.clients.outcome import RequestOutcome
from loadtests.run.process import SuiteProcess


class RequestRecording:
    """Locust's `request` event -> this process's WindowRecorder (processes with users): the
    client's RequestOutcome, the event's context, recorded whole; from Locust's test_stopping
    (the stop began here) to the next test_start, labelled as ended during the stop."""

    def __init__(self, process: SuiteProcess) -> None:
        self.process = process

    def register(self) -> None:
        events = self.process.environment.events
        events.request.add_listener(self.on_request)
        events.test_start.add_listener(lambda **_kwargs: self.process.recorder.test_started())
        events.test_stopping.add_listener(lambda **_kwargs: self.process.recorder.stop_began())

    def on_request(
        self, request_type, name, response_time, response_length=0, exception=None, context=None, **_kwargs
    ) -> None:
        # Every argument Locust passes is named: **_kwargs stays empty (no dict built per request).
        if context.__class__ is not RequestOutcome:
            self.process.recorder.record(other_request(request_type, name, response_time, response_length, exception))
            return
        process = self.process
        if exception is None and response_time > process.slowest_ms:
            process.slowest_ms = response_time
        process.recorder.record(context)
        if context.trace_id is not None:
            process.traces.record(context, time.time())


def other_request(request_type: str, name: str, response_time: float, length: int, exception) -> RequestOutcome:
    """A request another user reported (a FastHttpUser's, a client of the user's own): an
    endpoint "<type> <name>" of its own, as Locust's table names its row, with no model (so no
    Triton side); a failure is named by its exception's type (few names, as the suite's)."""
    failure = None if exception is None else type(exception).__name__
    return RequestOutcome(
        f"{request_type} {name}",
        "",
        str(request_type),
        (response_time or 0) * 1000,
        1,
        failure,
        None,
        False,
        0,
        length or 0,
    )
