"""Glue between the suite's events and the load shapes' OLD interface. DROP AT MERGE.

Until loadtests/traffic/ speaks the event spine (`install_shape(environment, web_ui, events,
settings)`, shapes firing step_started / target_rate_changed, the sweep listening to
run_started / window_closed; helper "traffic", issue 13), this adapts the old one:
`install_shape(..., on_step)`, the `set_rate_target` module global and `attach_run(run)`.
Everything here goes once that branch is merged; nothing else in loadtests/run/ knows it.
"""

from __future__ import annotations

from types import SimpleNamespace

from loadtests.run.lifecycle import RunLifecycle
from loadtests.run.process import SuiteProcess
from loadtests.traffic import shapes as traffic_shapes


class LegacyShapes:
    """Old-interface shapes on the suite's events (master or single process)."""

    def __init__(self, process: SuiteProcess, lifecycle: RunLifecycle) -> None:
        self.process = process
        self.lifecycle = lifecycle
        self._window_observers: list = []

    def register(self) -> None:
        self.process.events.run_started.add_listener(self.on_run_started)
        self.process.events.window_closed.add_listener(self.on_window_closed)

    def install_shape(self, web_ui) -> None:
        """--load-shape at init (after the settings were read); raises SpecError."""
        events = self.process.events
        traffic_shapes.install_shape(
            self.process.environment, web_ui, on_step=lambda step: events.step_started.fire(step=step)
        )

    def bind_rate_target(self) -> None:
        """After every re-read of the settings (the pre-flight calls it), as the old runtime did."""
        events = self.process.events

        def fire(rate: float) -> None:
            events.target_rate_changed.fire(rate=rate)

        traffic_shapes.set_rate_target = fire if self.process.settings.open_loop else None

    def on_run_started(self, run, **_kwargs) -> None:
        shape = self.process.environment.shape_class
        attach = getattr(shape, "attach_run", None)
        active = self.lifecycle.active
        if attach is None or active is None:
            return
        self._window_observers = []
        aggregator = SimpleNamespace(window_s=run.window_s, observers=self._window_observers)
        attach(SimpleNamespace(aggregator=aggregator, server=active.server, directory=active.directory))

    def on_window_closed(self, start_s: float, end_s: float, endpoints: dict, **_kwargs) -> None:
        for observer in self._window_observers:
            observer(start_s, end_s - start_s, endpoints)
