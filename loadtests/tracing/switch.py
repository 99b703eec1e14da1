"""Triton's tracing for one run: where its trace file is read, on for the models under test, restored after.

The trace file can only be set when Triton starts (`--trace-config triton,file=PATH`; the
suite's local Triton has one, tracing OFF); the level, rate, count and log frequency change
at run time through `/v2/models/<m>/trace/setting`. A model whose settings were the global
ones before the run gets its own cleared afterwards (it follows the global ones again);
others get their previous values back. Restoring also makes Triton write the traces it still
holds (checked on the bundled tritonserver), so a large log frequency loses nothing.

    switch = TraceSwitch.locate(settings)      # at init: SpecError when the file cannot be read here
    switch.turn_on(["identity"])               # at test start
    switch.restore()                           # at the end, Ctrl-C included
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from loadtests.clients.control import TritonControl
from loadtests.config.settings import Settings
from loadtests.config.trace_sample import TraceSample
from loadtests.errors import ServerError, SpecError
from loadtests.tracing.receiver import OtlpReceiver
from loadtests.tracing.triton_file import trace_files

logger = logging.getLogger(__name__)

TIMESTAMPS = ["TIMESTAMPS"]
# Traces per file: Triton writes a file per this many traces (and the rest when restored).
LOG_FREQUENCY = 1000
CHANGED = ("trace_level", "trace_rate", "trace_count", "log_frequency")
# OpenTelemetry mode: no log frequency. Triton traces every request with a sampled traceparent
# whatever its rate; a rate of 0 would trace only those, but the trace API refuses it ("sample
# rate must be non-zero"), so one in a billion: in effect only the ones the client sampled.
OTEL_CHANGED = ("trace_level", "trace_rate", "trace_count")
OTEL_RATE = 1_000_000_000
# Triton answered when tracing was turned on (before any load), so no answer at the end means it
# stopped during the run: the bundled tritonserver crashes under tracing (docs/guides/tracing.md).
GONE = (
    "Triton could not be reached when the traced run ended ({error}): it stopped or crashed during the run, "
    "so the traces it still held are lost and its trace settings are not restored (a restarted Triton has its "
    "start-up ones); the bundled tritonserver crashes under tracing now and then (docs/guides/tracing.md)"
)


class TraceSwitch:
    """Turns Triton's tracing on for a run and back; `trace_file` is where it is read here."""

    def __init__(
        self, control: TritonControl, sample: TraceSample, trace_file: Path | None, receiver: OtlpReceiver | None = None
    ) -> None:
        self.control = control
        self.sample = sample
        self.trace_file = trace_file
        self.receiver = receiver  # OpenTelemetry mode: the suite's OTLP receiver (else None)
        self.changed = OTEL_CHANGED if receiver is not None else CHANGED
        self.previous: dict[str, dict] = {}
        self.turned_on_at: float | None = None
        # Triton's trace files when the run began: the run's are the ones written after.
        self.files_before: dict[Path, float] = {}

    @property
    def where(self) -> str:
        """Where the traces come from: the file, or the receiver's address."""
        return f"OTLP receiver {self.receiver.address}" if self.receiver is not None else str(self.trace_file)

    @classmethod
    def locate(cls, settings: Settings) -> TraceSwitch:
        """Raise SpecError (one line) when the trace file cannot be read on this machine."""
        target = settings.triton_http
        control = TritonControl(target.control_address_of(target.first), security=settings.security)
        try:
            current = control.trace_setting()
        except ServerError as error:
            raise SpecError(f"--trace-sample: Triton's trace settings could not be read: {error}") from None
        mode = current.get("trace_mode", "triton")
        if settings.trace_receiver:
            if mode != "opentelemetry":
                raise SpecError(
                    f"--trace-receiver: Triton traces in '{mode}' mode, not to a receiver (start it with "
                    f"--trace-config mode=opentelemetry --trace-config opentelemetry,url={settings.trace_receiver}"
                    "/v1/traces)"
                )
            return cls(control, settings.trace_sample, None, listen(settings.trace_receiver))
        if mode != "triton":
            raise SpecError(
                f"--trace-sample: Triton traces in '{mode}' mode; the suite reads the 'triton' mode's file "
                "(start Triton with --trace-config triton,file=PATH)"
            )
        named = str(current.get("trace_file") or "")
        if settings.trace_file is None and not named:
            raise SpecError("--trace-sample: Triton has no trace file (start it with --trace-config triton,file=PATH)")
        path = settings.trace_file or Path(named)
        if not path.parent.is_dir():
            raise SpecError(
                f"--trace-sample: Triton's trace file {path} cannot be read on this machine (no directory "
                f"{path.parent}); give --trace-file with the path where it is readable here"
            )
        return cls(control, settings.trace_sample, path)

    def turn_on(self, models: list[str]) -> None:
        """Each model traced at the run's rate, its previous settings kept; raises ServerError."""
        self.turned_on_at = time.time()
        if self.trace_file is not None:
            self.files_before = trace_files(self.trace_file)
        changes = {
            "trace_level": TIMESTAMPS,
            "trace_rate": str(self.sample.triton_rate),
            "trace_count": "-1",
            "log_frequency": str(LOG_FREQUENCY),
        }
        if self.receiver is not None:
            self.receiver.clear()
            changes = {"trace_level": TIMESTAMPS, "trace_rate": str(OTEL_RATE), "trace_count": "-1"}
        for model in models:
            if model in self.previous:
                continue
            self.previous[model] = self.control.trace_setting(model)
            self.control.update_trace_setting(changes, model)

    def restore(self) -> list[str]:
        """Every model's settings as before the run; one line per model that could not be restored."""
        problems = []
        previous, self.previous = self.previous, {}
        try:
            default = self.control.trace_setting() if previous else {}
        except ServerError as error:
            problem = GONE.format(error=error)
            logger.warning(problem)
            return [problem]
        for model, before in previous.items():
            follows_global = all(before.get(key) == default.get(key) for key in self.changed)
            changes = {key: None if follows_global else before.get(key) for key in self.changed}
            try:
                self.control.update_trace_setting(changes, model)
            except ServerError as error:
                problems.append(f"trace settings of {model} not restored: {error}")
        for problem in problems:
            logger.warning(problem)
        return problems


def listen(address: str) -> OtlpReceiver:
    """The suite's OTLP receiver on HOST:PORT, listening; raises SpecError (one line)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise SpecError(f"--trace-receiver '{address}' is not HOST:PORT")
    receiver = OtlpReceiver(host, int(port))
    try:
        receiver.start()
    except OSError as error:
        raise SpecError(f"--trace-receiver {address}: cannot listen there ({error})") from None
    return receiver
