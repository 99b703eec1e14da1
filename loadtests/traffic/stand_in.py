"""What the shapes read from the options, until the suite's one `Settings` object carries it.

The run wiring hands every shape a `settings()` callable (re-read at each test start: the
web UI can change options). The attribute names here are the ones that `Settings` provides;
`settings_from_options` is the single place in traffic that reads Locust's parsed options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loadtests.traffic.constants import CLOSED_LOOP, NO_SHAPE

DEFAULT_WINDOW_S = 1.0


@dataclass(frozen=True)
class ShapeSettings:
    """The options a shape reads (a subset of the suite's `Settings`, same names)."""

    load_shape: str = NO_SHAPE
    shape_args: str = ""
    num_users: int | None = None
    spawn_rate: float | None = None
    run_time_s: float | None = None
    window_s: float = DEFAULT_WINDOW_S
    traffic: str = CLOSED_LOOP
    rate: float = 0.0

    @property
    def open_loop(self) -> bool:
        return self.traffic != CLOSED_LOOP


def settings_from_options(options: Any) -> ShapeSettings:  # replaced by Settings at merge
    """The shapes' settings from Locust's parsed options (None: the defaults)."""

    def given(name: str) -> Any:
        return getattr(options, name, None) if options is not None else None

    run_time = given("run_time")
    return ShapeSettings(
        load_shape=str(given("load_shape") or NO_SHAPE),
        shape_args=str(given("shape_args") or ""),
        num_users=int(given("num_users")) if given("num_users") else None,
        spawn_rate=float(given("spawn_rate")) if given("spawn_rate") else None,
        run_time_s=float(run_time) if run_time else None,
        window_s=float(given("window") or DEFAULT_WINDOW_S),
        traffic=str(given("traffic") or CLOSED_LOOP),
        rate=float(given("rate") or 0.0),
    )
