"""Every request of the suite's users, recorded in the current window's exact histograms."""

from __future__ import annotations

from loadtests.run.process import SuiteProcess


class RequestRecording:
    """Locust's `request` event -> this process's WindowRecorder (processes with users)."""

    def __init__(self, process: SuiteProcess) -> None:
        self.process = process

    def register(self) -> None:
        self.process.environment.events.request.add_listener(self.on_request)

    def on_request(
        self, request_type, name, response_time, response_length=0, exception=None, context=None, **_kwargs
    ) -> None:
        endpoint = (context or {}).get("endpoint")
        if endpoint is None:
            return  # not one of ours
        process = self.process
        if exception is None and response_time > process.slowest_ms:
            process.slowest_ms = response_time
        process.recorder.record(
            endpoint,
            name,
            request_type,
            response_time * 1000.0,
            context.get("batch_size", 1),
            str(exception) if exception is not None else None,
            context.get("uncorrected_us"),
            context.get("late", False),
            context.get("request_bytes", 0),
            response_length or 0,
            context.get("sequence_started", False),
            context.get("sequence_outcome"),
            context.get("replica"),
        )
