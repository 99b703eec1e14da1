"""The suite's event spine: the moments of a run, as typed and documented Locust `EventHook`s.

Locust's own `Events` carry what Locust knows (a request, a test start, a worker report);
these carry what the suite adds on top (a run directory, a load-shape step, a closed window,
a server snapshot, a new open-loop target). One `SuiteEvents` exists per Locust
`Environment`; the run wiring (`loadtests/run/`) creates it and hands it to every part that
takes part in a run: load shapes, the sweep and capacity shapes, the web UI tab, the
Prometheus exporter, the SLO gate. A part that wants to know something listens; a part
that has something to say fires. Nothing else is shared, and nothing is module-level state.

Listeners are called in the order they were added, synchronously, on the firing greenlet
(as Locust's own events are): keep them short, and never block on the network in one.

Each hook's docstring lists its keyword arguments, like Locust's `locust.event.Events`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locust.event import EventHook


@dataclass(frozen=True)
class RunStarted:
    """What a part needs to know about the run that has just begun (master or single process)."""

    path: Path  # the run directory
    started_at: float  # epoch seconds: the run directory's clock starts here
    window_s: float  # length of one recording window
    models: tuple[str, ...] = ()
    # Takes Triton's statistics right now and returns the snapshot (None if Triton did not
    # answer). For parts that need the server's counters at an exact moment (a sweep level's
    # boundary); the regular polling needs nothing from anyone.
    snapshot_now: Any = field(default=None, compare=False, repr=False)
    # The server-side delta between two snapshots, per model (what summary.json's `server` holds).
    server_delta: Any = field(default=None, compare=False, repr=False)


class SuiteEvents:
    """The suite's events for one Environment. Every attribute is an `EventHook`."""

    run_started: EventHook
    """
    Fired on the master or single process when a run begins: its directory exists, its
    server watch is polling, no window has closed yet.

    :param run: a `RunStarted`
    """

    run_stopping: EventHook
    """
    Fired on the master or single process when the users have been told to stop (the end of
    `-t`, a shape's end, Ctrl-C, the web UI's stop button): the run's measured time ends here,
    though in-flight requests and workers' last reports are still being collected.

    :param stopped_at: epoch seconds
    """

    run_finished: EventHook
    """
    Fired on the master or single process once per run, after `summary.json` is written
    complete (the last moment a part may add a file to the run directory).

    :param path: the run directory (`pathlib.Path`)
    :param summary: the summary as written (a dict)
    """

    step_started: EventHook
    """
    Fired by a load shape when one of its steps (a target held for a while) begins.

    :param step: a `loadtests.traffic` `Step` (index, start time, target, kind)
    """

    target_rate_changed: EventHook
    """
    Fired by a rate shape (or at test start from `--rate`) when the open-loop target across
    all workers changes. The rate distribution listener shares it among the processes with users.

    :param rate: requests per second, over all workers
    """

    window_closed: EventHook
    """
    Fired on the master or single process when a recording window is final (every report
    that could hold it is in) and has been written out.

    :param start_s: the window's start, epoch seconds
    :param end_s: its end
    :param endpoints: the merged values per endpoint name (`recording` `EndpointStats`; read only)
    """

    server_snapshot_taken: EventHook
    """
    Fired whenever Triton's statistics were read (regular polling, a step boundary, an
    on-demand `snapshot_now`).

    :param snapshot: the snapshot (`recording` server statistics; read only)
    """

    def __init__(self) -> None:
        for name in self.__annotations__:
            setattr(self, name, EventHook())
