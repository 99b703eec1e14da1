"""Load shapes: pure profiles against a fake clock, --shape-args errors, tick() with a fake
runner, the web UI's shape selection, and headless runs against the local Triton."""

from __future__ import annotations

import argparse
import json
import math
from types import SimpleNamespace

import gevent
import pytest
from locust.event import Events

from loadtests.errors import SpecError
from loadtests.events import SuiteEvents
from loadtests.options import shapes as arguments
from loadtests.options.reading import settings_from as settings_from_options
from loadtests.options.shapes import SHAPE_KEYS, parse_shape_args
from loadtests.run import shapes as install
from loadtests.traffic.profiles import RATE, USERS, Ramp, Sine, read_trace, spike, staircase
from loadtests.traffic.shape import RampShape, SineShape, SpikeShape, StepsShape, TraceShape
from loadtests.traffic.shape_args import build_profile
from loadtests.traffic.steps import Step, steps_json


# -- pure profiles ------------------------------------------------------------------------
def test_steps_profile_holds_each_target_for_step_s():
    profile = staircase([1, 2, 4, 8], step_s=30)
    assert [profile.target_at(t) for t in (0, 29.9, 30, 61, 119.9)] == [1, 1, 2, 4, 8]
    assert profile.target_at(120) is None
    assert profile.steps() == [Step(i, 30 * i, 30 * (i + 1), v) for i, v in enumerate([1, 2, 4, 8])]
    assert profile.end_s == 120


def test_steps_from_start_step_count():
    args = parse_shape_args("steps", "start=2,step=3,count=3,step_s=5")
    assert args["targets"] == [2, 5, 8]
    assert build_profile("steps", args).target_at(12) == 8
    down = parse_shape_args("steps", "start=8,step=-2,count=4,step_s=5")
    assert down["targets"] == [8, 6, 4, 2]


def test_ramp_is_linear_then_holds():
    profile = Ramp(start=2, end=12, duration_s=10, hold_s=5, segments=2)
    assert profile.target_at(0) == 2
    assert profile.target_at(5) == pytest.approx(7)
    assert profile.target_at(9.9) == pytest.approx(11.9)
    assert profile.target_at(10) == profile.target_at(14.9) == 12
    assert profile.target_at(15) is None
    assert profile.steps() == [Step(0, 0, 5, 7), Step(1, 5, 10, 12), Step(2, 10, 15, 12)]
    assert Ramp(10, 0, duration_s=4).target_at(1) == pytest.approx(7.5)  # ramps down too


def test_spike_goes_up_and_back():
    profile = spike(baseline=2, peak=10, at_s=5, spike_s=3, duration_s=12)
    assert [profile.target_at(t) for t in (0, 4.9, 5, 7.9, 8, 11.9)] == [2, 2, 10, 10, 2, 2]
    assert profile.target_at(12) is None
    assert profile.steps() == [Step(0, 0, 5, 2), Step(1, 5, 8, 10), Step(2, 8, 12, 2)]
    # A spike at the start or end has no empty segment.
    assert [s.target for s in spike(1, 5, at_s=0, spike_s=2, duration_s=4).steps()] == [5, 1]
    assert [s.target for s in spike(1, 5, at_s=2, spike_s=2, duration_s=4).steps()] == [1, 5]


def test_sine_follows_the_curve_clamped_at_zero():
    profile = Sine(baseline=10, amplitude=6, period_s=60, duration_s=150)
    assert profile.target_at(0) == pytest.approx(10)
    assert profile.target_at(15) == pytest.approx(16)
    assert profile.target_at(45) == pytest.approx(4)
    assert profile.target_at(150) is None
    assert profile.steps() == [Step(0, 0, 60, 10), Step(1, 60, 120, 10), Step(2, 120, 150, 10)]
    clamped = Sine(baseline=1, amplitude=5, period_s=40)
    assert clamped.target_at(30) == 0
    assert clamped.end_s == 40  # one period by default
    assert min(clamped.target_at(t) for t in range(40)) == 0


def test_trace_replays_rows_step_wise(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("time_s,users\n# warm-up\n0,1\n\n2.5,4\n7,2\n")
    profile = read_trace(path, hold_s=3)
    assert profile.kind == USERS
    assert [profile.target_at(t) for t in (0, 2.4, 2.5, 6.9, 7, 9.9)] == [1, 1, 4, 4, 2, 2]
    assert profile.target_at(10) is None
    assert profile.steps() == [Step(0, 0, 2.5, 1), Step(1, 2.5, 7, 4), Step(2, 7, 10, 2)]
    # Without a hold, the last row marks the end.
    assert read_trace(path).end_s == 7
    assert read_trace(path).target_at(7) is None


def test_trace_rate_header_scale_and_late_first_row(tmp_path):
    path = tmp_path / "rates.csv"
    path.write_text("Time_s, Rate\n5,100\n10,250.5\n")
    args = parse_shape_args("trace", f"file={path},scale=2,hold_s=1")
    assert args["kind"] == RATE
    profile = build_profile("trace", args)
    assert profile.target_at(0) == 0  # before the first row: no load
    assert profile.target_at(5) == 200
    assert profile.target_at(10.5) == 501


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty file"),
        ("time,users\n0,1\n", "header 'time,users' is not time_s,users or time_s,rate"),
        ("time_s,users,extra\n0,1,2\n", "is not time_s,users or time_s,rate"),
        ("time_s,users\n", "no rows after the header"),
        ("time_s,users\n0,1\n5,2\n3,4\n", "line 4: time_s 3 is not after the previous row's 5"),
        ("time_s,users\n0,1\n0,2\n", "line 3: time_s 0 is not after"),
        ("time_s,rate\n0,x\n", "line 2: '0,x' is not two numbers"),
        ("time_s,rate\n0,-1\n", "line 2: time_s and rate must be finite and >= 0"),
        ("time_s,rate\n0\n", "line 2: expected 2 columns"),
    ],
)
def test_trace_errors_are_one_line(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(SpecError) as error:
        parse_shape_args("trace", f"file={path}")
    assert message in str(error.value)
    assert str(path) in str(error.value)
    assert "\n" not in str(error.value)


def test_trace_missing_file(tmp_path):
    with pytest.raises(SpecError, match=r"^--shape-args for trace: .*nope\.csv: no such file$"):
        parse_shape_args("trace", f"file={tmp_path / 'nope.csv'}")


def test_steps_json_clips_the_last_step():
    steps = [Step(0, 0, 3, 1), Step(1, 3, 6, 3)]
    assert steps_json(steps) == [
        {"index": 0, "start_s": 0.0, "end_s": 3.0, "target": 1.0},
        {"index": 1, "start_s": 3.0, "end_s": 6.0, "target": 3.0},
    ]
    assert steps_json(steps, end_s=4.25)[1]["end_s"] == 4.25
    json.dumps(steps_json(steps))


# -- --shape-args -------------------------------------------------------------------------
def test_parse_fills_defaults():
    assert parse_shape_args("steps", "targets=1;2;4") == {"targets": [1, 2, 4], "step_s": 30.0, "kind": USERS}
    assert parse_shape_args("RampShape", " end=8 , duration_s=4 ") == {
        "end": 8.0,
        "duration_s": 4.0,
        "kind": USERS,
        "start": 0.0,
        "hold_s": 0.0,
        "segments": 1,
    }
    assert parse_shape_args("sine", "baseline=4,amplitude=2,period_s=10")["duration_s"] == 10
    rate = parse_shape_args("spike", "kind=rate,baseline=10,peak=50,at_s=2,spike_s=1,duration_s=5,users=8")
    assert rate["kind"] == RATE and rate["users"] == 8


@pytest.mark.parametrize(
    ("shape", "text", "problem"),
    [
        ("steps", "targets=1;2,colour=red", "unknown key 'colour'"),
        ("steps", "targets=", "targets='' is empty"),
        ("steps", "", "missing targets="),
        ("steps", "targets=1;two", "targets='1;two' must be numbers >= 0"),
        ("steps", "targets=1;2,step_s=-3", "step_s='-3' must be positive"),
        ("steps", "targets=1;2,step_s=0", "step_s='0' must be positive"),
        ("steps", "targets=1,start=1", "either targets= or start=,step=,count="),
        ("steps", "start=1,step=1", "missing count="),
        ("steps", "start=1,step=-1,count=3", "goes below 0"),
        ("steps", "targets=1,targets=2", "targets is given twice"),
        ("steps", "targets=1,users=4", "users= applies to kind=rate only"),
        ("steps", "targets=1;2,kind=qps", "kind='qps' must be one of users, rate"),
        ("steps", "targets 1", "'targets 1' is not key=value"),
        ("ramp", "end=ten,duration_s=5", "end='ten' is not a number"),
        ("ramp", "end=10,duration_s=-5", "duration_s='-5' must be positive"),
        ("ramp", "end=10,duration_s=5,hold_s=-1", "hold_s='-1' must be >= 0"),
        ("ramp", "end=10,duration_s=5,segments=1.5", "segments='1.5' is not a whole number"),
        ("ramp", "end=10", "missing duration_s="),
        ("spike", "baseline=1,peak=5,at_s=3,spike_s=5,duration_s=6", "at_s + spike_s must not exceed duration_s"),
        ("sine", "baseline=1", "missing amplitude=, period_s="),
        ("sine", "baseline=1,amplitude=1,period_s=inf", "period_s='inf' is not a finite number"),
        ("trace", "kind=rate,file=x.csv", "unknown key 'kind'"),
        ("trace", "", "missing file="),
    ],
)
def test_bad_shape_args_name_the_shape_key_and_accepted_keys(shape, text, problem):
    with pytest.raises(SpecError) as error:
        parse_shape_args(shape, text)
    message = str(error.value)
    assert message.startswith(f"--shape-args for {shape}: ")
    assert problem in message
    assert f"(accepted keys: {', '.join(SHAPE_KEYS[shape])})" in message
    assert "\n" not in message


def test_unknown_shape_name():
    with pytest.raises(SpecError, match="--load-shape 'zigzag' is not one of: steps, ramp, spike, sine, trace, sweep"):
        parse_shape_args("zigzag", "")


# -- the Locust shapes, with a fake runner and clock ---------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def make_shape(cls, shape_args: str, run_time=None, num_users=1, traffic="closed"):
    options = argparse.Namespace(shape_args=shape_args, run_time=run_time, num_users=num_users, traffic=traffic)
    shape = cls(SuiteEvents(), lambda: settings_from_options(options))
    environment = SimpleNamespace(parsed_options=options, process_exit_code=None, events=Events())
    shape.runner = SimpleNamespace(environment=environment, user_count=0)
    shape.get_run_time = clock = FakeClock()
    return shape, clock


def fired(hook) -> list:
    """Every value a spine event is fired with (its one keyword argument)."""
    values: list = []
    hook.add_listener(lambda **kwargs: values.extend(kwargs.values()))
    return values


def install_shape(environment, web_ui=None):
    """The shapes installed as the suite's run wiring does, on a spine of their own."""
    return install.install_shape(
        environment, web_ui, SuiteEvents(), lambda: settings_from_options(environment.parsed_options)
    )


def run_ticks(shape, clock, times, test_start_s: float = 0.0):
    """Tick at each time as Locust would, the runner reaching each returned user count; Locust's
    test_start, fired by the first tick's start(), is over `test_start_s` later."""
    ticks = []
    test_start_over = None
    for t in times:
        if test_start_over is not None and t >= test_start_over:
            clock.t, test_start_over = test_start_over, None
            shape.runner.environment.events.test_start.fire(environment=shape.runner.environment)
            shape.runner.user_count = ticks[0][0]  # the first target's users start
        clock.t = t
        tick = shape.tick()
        ticks.append(tick)
        if tick is not None and len(ticks) == 1:
            test_start_over = t + test_start_s
        if tick is not None and test_start_over is None:
            shape.runner.user_count = tick[0]
    return ticks


def locust_ticks(seconds: int, phase_s: float = 0.002):
    """Tick times as a local runner has them: about once a second, a little after each second."""
    return [k + phase_s for k in range(seconds)]


def test_steps_shape_ticks_and_records_steps():
    shape, clock = make_shape(StepsShape, "targets=1;3;2,step_s=3")
    started = fired(shape.events.step_started)
    ticks = run_ticks(shape, clock, locust_ticks(10))
    # Default spawn rate: the whole change within a second; unchanged while the target holds.
    assert ticks == [(1, 1.0)] * 3 + [(3, 2.0)] * 3 + [(2, 1.0)] * 3 + [None]
    assert [s.index for s in shape.passed_steps] == [0, 1, 2]
    assert started == shape.passed_steps
    assert shape.target_kind == USERS
    record = shape.record()
    assert record["shape"] == "steps" and record["kind"] == USERS and record["args"]["step_s"] == 3
    assert [(s["start_s"], s["end_s"], s["target"]) for s in record["steps"]] == [(0, 3, 1), (3, 6, 3), (6, 9, 2)]


def test_the_profile_starts_when_test_start_is_over_holding_the_first_target_till_then():
    # Single process: test_start runs in the greenlet that spawns the users, and Locust ticks
    # the shape meanwhile. Here it takes 4.5 s; steps of 3 s must still each hold 3 s of users.
    shape, clock = make_shape(StepsShape, "targets=1;3,step_s=3")
    started = fired(shape.events.step_started)
    ticks = run_ticks(shape, clock, locust_ticks(11), test_start_s=4.5)
    # While it runs: the first tick again and again (Locust calls start() only on a change).
    assert ticks[:5] == [(1, 1.0)] * 5
    # From 4.5 s the profile runs: 1 user until 7.5 s, 3 until 10.5 s, each change at the
    # tick nearest to it (7.002 s and 10.002 s).
    assert ticks[5:] == [(1, 1.0)] * 2 + [(3, 2.0)] * 3 + [None]
    assert [step.index for step in started] == [0, 1]


def test_changes_happen_at_the_nearest_tick():
    # A distributed master restarts the shape's clock (reset_time, from the shape's own
    # greenlet) at test_start, just after the first tick: later ticks fall just before
    # whole seconds. It is the same run: the steps are not passed twice.
    shape, clock = make_shape(StepsShape, "targets=1;3,step_s=3")
    started = fired(shape.events.step_started)
    assert run_ticks(shape, clock, [0.0])[0][0] == 1
    shape.runner.environment.events.test_start.fire(environment=shape.runner.environment)  # in start()
    shape.runner.shape_greenlet = gevent.getcurrent()
    shape.reset_time()
    users = [t[0] if t else None for t in run_ticks(shape, clock, [k - 0.02 for k in range(1, 7)])]
    assert users == [1, 1, 3, 3, 3, None]
    assert [s.index for s in shape.passed_steps] == [0, 1]
    assert [s.index for s in started] == [0, 1]
    # A change between ticks happens at the tick nearest to it.
    shape, clock = make_shape(StepsShape, "targets=1;3,step_s=2.4")
    assert [t[0] for t in run_ticks(shape, clock, locust_ticks(4))] == [1, 1, 3, 3]


def test_options_are_read_once_per_run():
    shape, clock = make_shape(StepsShape, "targets=2,step_s=10")
    assert shape.tick() == (2, 2.0)
    shape.runner.environment.parsed_options.shape_args = "targets=5,step_s=10"
    clock.t = 1
    assert shape.tick() == (2, 2.0)  # same run: parsed on the first tick only
    shape.reset_time()  # Locust's start_shape: a new run (the web UI may have changed the args)
    shape.get_run_time = clock
    assert shape.passed_steps == []
    assert shape.tick()[0] == 5


def test_spawn_rate_arg_and_skipped_steps():
    shape, clock = make_shape(StepsShape, "targets=1;2;3;4,step_s=0.5,spawn_rate=7")
    assert run_ticks(shape, clock, [0, 1]) == [(1, 7.0), (4, 7.0)]  # the first tick: the first target
    # Steps shorter than a tick are still recorded as passed.
    assert [s.index for s in shape.passed_steps] == [0, 1, 2, 3]


def test_spike_shape_users():
    shape, clock = make_shape(SpikeShape, "baseline=1,peak=4,at_s=2,spike_s=2,duration_s=6")
    ticks = run_ticks(shape, clock, locust_ticks(7))
    assert [t[0] if t else None for t in ticks] == [1, 1, 4, 4, 1, 1, None]
    assert [t[1] for t in ticks if t] == [1.0, 1.0, 3.0, 3.0, 3.0, 3.0]


def test_ramp_and_sine_shapes_round_users():
    ramp, clock = make_shape(RampShape, "start=0,end=10,duration_s=10")
    # After the first tick, half a tick ahead: the target at t + 0.5.
    assert [t[0] if t else None for t in run_ticks(ramp, clock, [0, 1.0, 1.2, 9.4, 9.6])] == [0, 2, 2, 10, None]
    sine, clock = make_shape(SineShape, "baseline=2,amplitude=4,period_s=8")
    users = [t[0] for t in run_ticks(sine, clock, [0] + [k - 0.5 for k in range(1, 8)])]
    expected = [max(0, math.floor(2 + 4 * math.sin(2 * math.pi * t / 8) + 0.5)) for t in range(8)]
    assert users == expected == [2, 5, 6, 5, 2, 0, 0, 0]
    assert len(sine.passed_steps) == 1


def test_run_time_ends_a_shape_early():
    shape, clock = make_shape(StepsShape, "targets=1;2,step_s=30", run_time=40)
    assert run_ticks(shape, clock, [0, 39.0, 40]) == [(1, 1.0), (2, 1.0), None]


def test_trace_shape_from_csv(tmp_path):
    path = tmp_path / "users.csv"
    path.write_text("time_s,users\n0,2\n3,5\n6,0\n")
    shape, clock = make_shape(TraceShape, f"file={path}")
    ticks = run_ticks(shape, clock, locust_ticks(7))
    assert [t[0] if t else None for t in ticks] == [2, 2, 2, 5, 5, 5, None]
    assert [s.target for s in shape.passed_steps] == [2, 5]


def test_rate_target_goes_to_the_hook(tmp_path):
    shape, clock = make_shape(StepsShape, "kind=rate,targets=50;100,step_s=2,users=6", traffic="constant")
    rates = fired(shape.events.target_rate_changed)
    assert run_ticks(shape, clock, locust_ticks(5)) == [(6, 6.0)] * 4 + [None]
    assert rates == [50, 100]  # once per change
    assert shape.target_kind == RATE

    path = tmp_path / "rates.csv"
    path.write_text("time_s,rate\n0,10\n1,20\n")
    trace, clock = make_shape(TraceShape, f"file={path},hold_s=1", num_users=3, traffic="constant")  # users from -u
    rates = fired(trace.events.target_rate_changed)
    assert run_ticks(trace, clock, locust_ticks(3)) == [(3, 3.0), (3, 3.0), None]
    assert rates[-2:] == [10, 20]


def test_rate_shape_without_open_loop_stops_with_an_error():
    shape, _clock = make_shape(StepsShape, "kind=rate,targets=50")
    assert shape.tick() is None
    assert shape.runner.environment.process_exit_code == 2


def test_bad_args_in_a_web_ui_run_stop_the_shape():
    shape, _clock = make_shape(StepsShape, "targets=")
    assert shape.tick() is None
    assert shape.runner.environment.process_exit_code == 2


def test_on_step_failure_does_not_stop_the_shape():
    shape, clock = make_shape(StepsShape, "targets=1;2,step_s=1")

    def broken(step, **_kwargs):
        raise OSError("disk full")

    shape.events.step_started.add_listener(broken)
    assert run_ticks(shape, clock, locust_ticks(2)) == [(1, 1.0), (2, 1.0)]


def test_record_lines_up_with_the_run_directory():
    shape, clock = make_shape(StepsShape, "targets=1;2,step_s=10")
    run_ticks(shape, clock, [0])
    record = shape.record(relative_to=shape.started_at - 0.25, final=True)
    # Shifted onto the run directory's clock; the current step clipped at now.
    assert record["steps"][0]["start_s"] == 0.25
    assert 0.25 <= record["steps"][0]["end_s"] < 5
    json.dumps(record)


# -- selection at init and in the web UI ----------------------------------------------------
def locust_parser():
    from locust.argument_parser import get_parser

    parser = get_parser()
    arguments.add_arguments(parser)
    arguments.add_arguments(parser)  # idempotent: the lead's options.py and install() may both call it
    return parser


def locust_options(argv: list[str]) -> argparse.Namespace:
    return locust_parser().parse_args(argv)


def test_options_have_help_env_vars_and_show_in_the_web_ui(monkeypatch):
    parser = locust_parser()
    web_ui_fields = parser.args_included_in_web_ui  # Locust's web UI form lists these
    assert web_ui_fields["load_shape"].choices == (
        "none",
        "steps",
        "ramp",
        "spike",
        "sine",
        "trace",
        "sweep",
        "capacity",
    )
    assert "LOCUST_SHAPE_ARGS" in web_ui_fields["shape_args"].help
    assert locust_options([]).load_shape == "none"
    monkeypatch.setenv("LOCUST_LOAD_SHAPE", "ramp")
    monkeypatch.setenv("LOCUST_SHAPE_ARGS", "end=4,duration_s=2")
    options = locust_options([])
    assert (options.load_shape, options.shape_args) == ("ramp", "end=4,duration_s=2")


def make_environment(argv: list[str]):
    from locust import User, constant, task
    from locust.env import Environment
    from locust.event import Events

    class IdleUser(User):
        wait_time = constant(0.5)

        @task
        def idle(self):
            pass

    environment = Environment(user_classes=[IdleUser], events=Events(), parsed_options=locust_options(argv))
    environment.create_local_runner()
    return environment


def test_install_selects_by_name_or_leaves_plain_runs_alone():
    plain = make_environment(["-u", "3"])
    assert install_shape(plain) is None
    assert plain.shape_class is None
    assert set(plain.available_shape_classes) == {
        "StepsShape",
        "RampShape",
        "SpikeShape",
        "SineShape",
        "TraceShape",
        "SweepShape",  # loadtests/levels/sweep_shape.py (tests/levels/test_sweep.py)
        "CapacityShape",  # loadtests/levels/capacity_shape.py (tests/traffic/test_capacity*.py)
    }

    chosen = make_environment(
        ["--load-shape", "spike", "--shape-args", "baseline=1,peak=2,at_s=1,spike_s=1,duration_s=3"]
    )
    shape = install_shape(chosen)
    assert isinstance(shape, SpikeShape) and chosen.shape_class is shape
    assert shape.runner is chosen.runner
    assert install_shape(chosen) is shape  # idempotent

    bad = make_environment(["--load-shape", "steps", "--shape-args", "targets=1,bogus=2"])
    with pytest.raises(SpecError, match="unknown key 'bogus'"):
        install_shape(bad)


def test_web_ui_selects_the_shape_by_name(monkeypatch):
    monkeypatch.setattr("sys.argv", ["locust"])  # the web UI re-parses the command line for its form
    environment = make_environment([])
    web_ui = environment.create_web_ui("127.0.0.1", 0, delayed_start=True)
    install_shape(environment, web_ui)
    client = web_ui.app.test_client()
    form = {"user_count": "2", "spawn_rate": "2", "host": "", "load_shape": "steps", "shape_args": "targets=1;2"}
    try:
        response = client.post("/swarm", data=form).get_json()
        assert response["success"], response
        assert "StepsShape" in response["message"]
        assert isinstance(environment.shape_class, StepsShape)
        environment.runner.stop()

        response = client.post("/swarm", data={**form, "shape_args": "targets=1,x=2"}).get_json()
        assert not response["success"]
        assert "--shape-args for steps: unknown key 'x'" in response["message"]

        response = client.post("/swarm", data={**form, "load_shape": "none"}).get_json()
        assert response["success"] and response["message"] == "Swarming started"
        assert environment.shape_class is None
    finally:
        environment.runner.quit()
