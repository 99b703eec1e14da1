"""The run wiring: the suite's listeners on one Locust Environment and its `SuiteEvents`.

`install(events)` (from the locustfile) only registers two listeners on Locust's events:
the suite's options on the parser, and, at init, `wiring.wire(environment, web_ui)`, which
creates the process object (`process.py`: the settings, recorder, prepared endpoints of
`endpoint_cache.py`, the open-loop sender; its role, local, master or worker: `role.py`) and
registers the small listener classes of the process's role (`wiring.py` has the table):

    preflight.py     bad input (options, outputs, endpoints) exits 2 before any load
    stopping.py      how long stopping users may finish their request; Ctrl-C routing
    requests.py      every request into the current window's histograms
    shipping.py      worker -> master windows, on Locust's worker reports
    open_loop.py     the open-loop target rate shared out; the local sender
    lifecycle.py     a run's directory, server watch, windows and end (finish.py); the run
                     being recorded (active_run.py); --upload's copy at the end (upload.py)
    shapes.py        the load shapes put into Locust's Environment (--load-shape, the web UI)
    sequence_run.py  the run's size for the sequence users' correlation IDs
    live.py          the live views (live_snapshot.py): the web UI tab (webui.py), its charts
                     and health line (live_series.py, webui_charts.py, live_diagnosis.py), the report it links
                     (webui_report.py) and the Prometheus exporter (exporter.py)
    webui_models.py  the web form's Model suggestions: Triton's ready models, each one's --shape
    slo_gate.py      --slo and --junit at the end of a run
    baseline_gate.py --baseline and --gate at the end of a run
"""

from __future__ import annotations

import gevent

from loadtests.options import table as options
from loadtests.run.lifecycle import count_test_start
from loadtests.run.process import SuiteProcess, process_of
from loadtests.run.wiring import wire

__all__ = ["SuiteProcess", "install", "process_of"]


# Set on Locust's events once the suite is registered on them.
INSTALLED = "triton_loadtest_installed"


def install(events) -> None:
    """Register the suite on Locust's events (importing `loadtests`' user classes does; a second
    call, from a second locustfile say, changes nothing)."""
    if getattr(events, INSTALLED, False):
        return
    setattr(events, INSTALLED, True)
    events.init_command_line_parser.add_listener(_add_options)
    events.init.add_listener(_on_init)
    # At import, before a locustfile's own listeners: the lifecycle tells a test stopped inside
    # test_start (a slow listener) from a web UI that quits without ever starting one.
    events.test_start.add_listener(count_test_start)


def _add_options(parser, **_kwargs) -> None:
    options.add_arguments(parser)
    options.bind_loopback_by_default(parser)
    options.check_user_class_names(parser)


def _on_init(environment, web_ui=None, **_kwargs) -> None:
    wire(environment, web_ui)
    # Locust sets -t's timer right after init, from the gevent loop's clock, which moves only when
    # the loop runs: it stood still through the imports and the pre-flight (0.8 s here; over 2 s on
    # a busy host, and a 2-s run then ended before its users had sent a request).
    gevent.get_hub().loop.update_now()
