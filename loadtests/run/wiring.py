"""Which listeners a process gets: decided once at init, from its role.

                 LOCAL  MASTER  WORKER
Preflight          x      x       x     (init checks: LOCAL and MASTER)
StopGrace          x      x       x
RequestRecording   x              x
WorkerShipping                    x
LocalSender        x              x
RateDistribution   x      x
RunLifecycle       x      x
MasterReceiving           x
LiveViews          x      x
SequenceRunSize    x      x       x     (test_start: LOCAL, MASTER; the master's message: WORKER)
"""

from __future__ import annotations

from locust.env import Environment

from loadtests.recording.histogram_merge import return_freed_histograms_to_os
from loadtests.recording.locust_csv import register_final_csv
from loadtests.run.lifecycle import RunLifecycle
from loadtests.run.live import LiveViews
from loadtests.run.open_loop import LocalSender, RateDistribution
from loadtests.run.preflight import Preflight
from loadtests.run.process import SuiteProcess, attach_process
from loadtests.run.requests import RequestRecording
from loadtests.run.role import Role
from loadtests.run.sequence_run import SequenceRunSize
from loadtests.run.shapes import install_shape
from loadtests.run.shipping import MasterReceiving, WorkerShipping
from loadtests.run.stopping import StopGrace, route_sigint_to_main_greenlet


def wire(environment: Environment, web_ui=None) -> SuiteProcess:
    """At Locust's init: the process object and its role's listeners; exits 2 on bad input."""
    process = attach_process(environment)
    route_sigint_to_main_greenlet()  # Ctrl-C never lands mid-way through the recording
    if process.role is Role.MASTER:
        # Only the master: it sends no requests, while a process that does would mmap and
        # fault in every large request or response buffer (recording/histogram_merge.py).
        return_freed_histograms_to_os()
    register_final_csv(environment, lambda: process.settings)
    if process.role is Role.WORKER:
        _wire_worker(process)
    else:
        _wire_recording_process(process, web_ui)
    return process


def _wire_worker(process: SuiteProcess) -> None:
    Preflight(process).register()
    SequenceRunSize(process).register()
    grace = StopGrace(process)
    grace.register()
    RequestRecording(process).register()
    LocalSender(process, None).register()  # before shipping: in-flight requests are in at test_stop
    WorkerShipping(process, grace).register()


def _wire_recording_process(process: SuiteProcess, web_ui) -> None:
    grace = StopGrace(process)
    rates = RateDistribution(process)
    lifecycle = RunLifecycle(process, grace, rates.current_rate)
    preflight = Preflight(process)
    preflight.register()
    SequenceRunSize(process).register()
    grace.register()
    if process.role is Role.LOCAL:
        RequestRecording(process).register()
    rates.register()
    if process.role is Role.LOCAL:
        LocalSender(process, rates).register()
    lifecycle.register()
    if process.role is Role.MASTER:
        MasterReceiving(process, lambda: lifecycle.active).register()
    live = LiveViews(process, lifecycle)
    live.register()
    if process.environment.parsed_options is None:
        return  # an Environment made in code without options: nothing to check or serve
    preflight.at_init(lambda: install_shape(process.environment, web_ui, process.events, lambda: process.settings))
    grace.at_init()
    live.install(web_ui, preflight)
    lifecycle.take_run_time()  # after install_shape: a load shape keeps its own clock
