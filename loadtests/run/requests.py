"""Every request of the suite's users, recorded in the current window's exact histograms."""

from __future__ import annotations

import time

from loadtests.clients.outcome import RequestOutcome
from loadtests.run.process import SuiteProcess


class RequestRecording:
    """Locust's `request` event -> this process's WindowRecorder (processes with users): the
    client's RequestOutcome, the event's context, recorded whole."""

    def __init__(self, process: SuiteProcess) -> None:
        self.process = process

    def register(self) -> None:
        self.process.environment.events.request.add_listener(self.on_request)

    def on_request(
        self, request_type, name, response_time, response_length=0, exception=None, context=None, **_kwargs
    ) -> None:
        # Every argument Locust passes is named: **_kwargs stays empty (no dict built per request).
        if context.__class__ is not RequestOutcome:
            return  # not one of ours
        process = self.process
        if exception is None and response_time > process.slowest_ms:
            process.slowest_ms = response_time
        process.recorder.record(context)
        if context.trace_id is not None:
            process.traces.record(context, time.time())
