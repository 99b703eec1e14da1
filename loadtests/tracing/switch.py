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

logger = logging.getLogger(__name__)

TIMESTAMPS = ["TIMESTAMPS"]
# Traces per file: Triton writes a file per this many traces (and the rest when restored).
LOG_FREQUENCY = 1000
CHANGED = ("trace_level", "trace_rate", "trace_count", "log_frequency")


class TraceSwitch:
    """Turns Triton's tracing on for a run and back; `trace_file` is where it is read here."""

    def __init__(self, control: TritonControl, sample: TraceSample, trace_file: Path) -> None:
        self.control = control
        self.sample = sample
        self.trace_file = trace_file
        self.previous: dict[str, dict] = {}
        self.turned_on_at: float | None = None

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
        changes = {
            "trace_level": TIMESTAMPS,
            "trace_rate": str(self.sample.triton_rate),
            "trace_count": "-1",
            "log_frequency": str(LOG_FREQUENCY),
        }
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
            return [f"trace settings not restored: {error}"]
        for model, before in previous.items():
            follows_global = all(before.get(key) == default.get(key) for key in CHANGED)
            changes = {key: None if follows_global else before.get(key) for key in CHANGED}
            try:
                self.control.update_trace_setting(changes, model)
            except ServerError as error:
                problems.append(f"trace settings of {model} not restored: {error}")
        for problem in problems:
            logger.warning(problem)
        return problems
