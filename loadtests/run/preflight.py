"""Pre-flight: every check that can refuse a run, before any load is sent.

- at init, on a master or single process: the options, the load shape, --traffic and --rate,
  --slo, the outputs and (headless or --autostart) every selected class's endpoint against
  the real server, and where Triton's statistics are read (HTTP, or gRPC for a gRPC-only
  target): bad input exits with code 2;
- at test_start, on every process: the options again (workers receive them only now, the
  web UI may have changed them); a failure stops the test with exit code 2;
- a test started from the web UI: the same checks on the form's values, answered in the form.

Pre-flight of the run's outputs: the run directory, the --junit file and --upload's URL must be writable.

Checked at init (headless) and again at test_start (the web UI may have changed them), before
any load: otherwise a run measures for its whole -t and then loses everything it measured to
a FileExistsError in finalisation.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from loadtests.config.settings import Settings
from loadtests.errors import SpecError, StartupError
from loadtests.options.table import apply_form
from loadtests.recording.run_dir import RUNS_ROOT, used_run_dir_error
from loadtests.run import slo_gate
from loadtests.run.process import SuiteProcess
from loadtests.run.sequence_run import check_sequence_endpoints, planned_size
from loadtests.run_format.output_paths import directory_problem, file_problem
from loadtests.run_format.storage import check_destination
from loadtests.tracing.switch import TraceSwitch
from loadtests.triton_stats.poller import statistics_address


class Preflight:
    """The checks of the options and the target (see the module docstring)."""

    def __init__(self, process: SuiteProcess) -> None:
        self.process = process

    def reload(self) -> Settings:
        """The settings re-read from the options (raises SpecError)."""
        return self.process.reload_settings()

    def register(self) -> None:
        # First of the suite's test_start listeners: the others skip a rejected test.
        self.process.environment.events.test_start.add_listener(self.on_test_start)

    def at_init(self, install_shape) -> None:
        """Master or single process: `install_shape()` selects --load-shape; exits 2 on bad input."""
        process = self.process
        try:
            settings = self.reload()
            self.check_user_classes_named()
            install_shape()
            self.check_traffic()
            self.check_slo(settings)  # exit 2 before any load
            check_outputs(settings, settings.junit)  # before, not after, the load
            if settings.starts_at_once:
                # (Tests started from the web UI get a new directory each instead.)
                used = used_run_dir_error(settings.run_dir)
                if used is not None:
                    raise used
                process.endpoints.prepare_all()
                slo_gate.check_streamed(settings, process.endpoints.names(), process.endpoints.streamed())
                # Sequence models with a 32-bit CORRID: do the planned workers and users fit?
                check_sequence_endpoints(list(process.endpoints.prepared.values()), planned_size(process))
                self.choose_statistics_address()
                self.locate_traces()
        except StartupError as error:
            print(f"error: {error}", file=sys.stderr, flush=True)
            sys.exit(error.exit_code)

    def check_user_classes_named(self) -> None:
        """A headless run of the suite's locustfile names its user class: without one Locust
        starts every class of the locustfile, and each fails on a model it was not meant for
        (a locustfile of classes with tasks of their own runs them all, as Locust does); raises SpecError."""
        settings = self.process.settings
        found = getattr(self.process.environment, "available_user_classes", None) or {}
        available = sorted(found)
        workloads = [cls for cls in found.values() if getattr(cls, "runs_workload", False)]
        if settings.starts_at_once and not settings.user_classes and len(workloads) > 1:
            raise SpecError(
                "name a user class, e.g. locust -f locustfile.py --headless -u 4 -t 1m TritonHttpUser --model NAME "
                f"(the classes: {', '.join(available)})"
            )

    def check_slo(self, settings: Settings) -> None:
        """--slo against the run's endpoints (own tasks name theirs as they run); raises SpecError."""
        endpoints = self.process.endpoints
        slo_gate.validate(settings, endpoints.names(), named_as_they_run=bool(endpoints.own_tasks()))

    def check_traffic(self) -> None:
        """Open-loop traffic needs a rate: --rate, or a load shape with kind=rate; raises SpecError."""
        settings = self.process.settings
        shape = self.process.environment.shape_class
        kind = getattr(shape, "target_kind", None)  # the suite's shapes say what their target is
        if kind is not None:
            if settings.open_loop and kind != "rate":
                raise SpecError(
                    f"--traffic {settings.traffic} with --load-shape {shape.name}: the shape sets the rate, "
                    "add kind=rate to --shape-args"
                )
        elif settings.open_loop and settings.rate <= 0:
            raise SpecError(f"--traffic {settings.traffic} needs --rate (requests/s) or a load shape with kind=rate")
        own = [cls.__name__ for cls in self.process.endpoints.own_tasks()]
        if settings.open_loop and settings.drop_when_saturated and own:
            raise SpecError(
                f"--drop-when-saturated drops the built-in workload's requests; the own tasks of {', '.join(own)} "
                "start on the schedule and go out late when every user is busy: leave it out, or add users"
            )

    def on_test_start(self, **_kwargs) -> None:
        process = self.process
        process.rejected = None
        try:
            settings = self.reload()
            self.check_slo(settings)  # the web UI may have changed --slo
            if process.role.records_run:
                self.check_traffic()  # ... or --traffic and --rate
                check_outputs(settings, settings.junit)
        except StartupError as error:
            process.rejected = error
            process.fail_startup(error)

    def check_web_start(self, form: Mapping[str, str], classes: Callable[[Settings], list[type]]) -> None:
        """A test about to start from the web UI: the headless pre-flight on its form's options
        and on the user classes it will run (`classes(settings)`, the form's choice); raises
        StartupError."""
        apply_form(self.process.environment.parsed_options, form)
        settings = self.reload()
        self.choose_user_classes(classes)
        self.check_traffic()
        self.check_slo(settings)
        self.process.endpoints.prepare_all()
        slo_gate.check_streamed(settings, self.process.endpoints.names(), self.process.endpoints.streamed())
        self.choose_statistics_address()
        self.locate_traces()

    def choose_user_classes(self, classes: Callable[[Settings], list[type]]) -> None:
        """The user classes the next test runs, `classes(settings)` (the web UI's choice)."""
        self.process.select_user_classes(classes(self.process.settings))

    def choose_statistics_address(self) -> None:
        """Where the run reads Triton's statistics (HTTP, or gRPC for a gRPC-only target),
        asked now, before any load; raises ServerError when no address answers."""
        process = self.process
        process.statistics_address = statistics_address(process.settings, process.endpoints.models())

    def locate_traces(self) -> None:
        """--trace-sample: where Triton's trace file is read here (raises SpecError when it cannot be)."""
        settings = self.process.settings
        existing = self.process.trace_switch
        receiver = existing.receiver if existing is not None else None
        if receiver is not None and receiver.address == settings.trace_receiver:
            return  # a second test of the web UI: the receiver already listens
        if receiver is not None:
            receiver.stop()
        self.process.trace_switch = TraceSwitch.locate(settings) if settings.trace_sample is not None else None


def check_outputs(settings: Settings, junit: str = "") -> None:
    """Raise SpecError naming the first output option that cannot be written."""
    if settings.run_dir is not None:
        problem = directory_problem(settings.run_dir)
        where = f"--run-dir {settings.run_dir}"
    else:  # runs/<UTC time>-<classes>, created at test start
        problem = directory_problem(RUNS_ROOT)
        where = f"{Path(RUNS_ROOT).resolve()} (where runs go without --run-dir)"
    if problem:
        raise SpecError(f"{where}: {problem}")
    junit = junit.strip()
    problem = file_problem(junit) if junit else None
    if problem:
        raise SpecError(f"--junit {junit}: {problem}")
    if settings.upload:
        check_destination("--upload", settings.upload)  # writes and removes a marker object
