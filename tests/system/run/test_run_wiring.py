"""The run wiring in process: a real Locust runner against the local Triton, the suite's events
observed from outside, as a load shape or a plugin would.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/run/test_run_wiring.py.
"""

from __future__ import annotations

import json
import time

import gevent

from loadtests.run import install, process_of
from loadtests.run.role import Role
from tests.helpers import model_stats, triton_options


def local_environment(argv: list[str], user_classes: tuple[str, ...]):
    """What `locust -f locustfile.py --headless ARGV CLASSES` sets up, through the suite's init."""
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
    from locust.env import Environment
    from locust.event import Events

    from loadtests.options import table as suite_options
    from loadtests.workloads import users

    parser = get_empty_argument_parser(add_help=False, default_config_files=[])
    parser.prog = "locust"
    setup_parser_arguments(parser)
    suite_options.add_arguments(parser)
    options = parser.parse_args(["-f", "locustfile.py", "--headless", *argv])
    events = Events()
    install(events)
    # The suite locustfile's concrete twins (importing it would set the suite up on Locust's global events).
    classes = [type(name, (getattr(users, name),), {}) for name in user_classes]
    environment = Environment(user_classes=classes, parsed_options=options, events=events)
    runner = environment.create_local_runner()
    events.init.fire(environment=environment, runner=runner, web_ui=None)
    return environment, runner


def test_summary_is_written_once_complete_then_run_finished(triton, tmp_path):
    """run_finished carries summary.json as written, SLO verdicts and merged totals included
    (before, the SLO gate re-read summary.json and rewrote it after the run had 'finished');
    the events arrive in order, windows before the end, and the counts are Triton's."""
    run_dir, junit = tmp_path / "run", tmp_path / "slo.xml"
    argv = [*triton_options(triton, server_stats_interval=0.5), "--model", "identity", "--run-dir", str(run_dir)]
    argv += ["--slo", "fail_ratio<0.5,rps>0", "--junit", str(junit)]
    before = model_stats(triton.http_address, "identity")["requests"]
    environment, runner = local_environment(argv, ("TritonHttpUser",))
    process = process_of(environment)
    assert process.role is Role.LOCAL
    seen: list[tuple[str, dict]] = []
    process.events.run_started.add_listener(lambda run, **_: seen.append(("run_started", {"path": run.path})))
    process.events.window_closed.add_listener(lambda **kw: seen.append(("window_closed", kw)))
    process.events.run_stopping.add_listener(lambda stopped_at, **_: seen.append(("run_stopping", {})))
    snapshots = []  # every statistics snapshot: periodic, and the last at the end
    process.events.server_snapshot_taken.add_listener(lambda snapshot, **_: snapshots.append(snapshot))

    def on_finished(path, summary, **_kwargs) -> None:
        on_disk = json.loads((path / "summary.json").read_text())
        finished = {"summary": summary, "on_disk": on_disk, "junit": junit.exists(), "n": len(snapshots)}
        seen.append(("run_finished", finished))

    process.events.run_finished.add_listener(on_finished)
    try:
        runner.start(2, spawn_rate=10)
        gevent.sleep(2.5)
        # Two periodic snapshots besides the first: a busy host can take longer than 2.5 s to
        # get there (a 3-shard make test saw only one).
        deadline = time.monotonic() + 30
        while len(snapshots) < 3 and time.monotonic() < deadline:
            gevent.sleep(0.1)
        runner.stop()
    finally:
        runner.quit()
    names = [name for name, _ in seen]
    assert names[0] == "run_started" and seen[0][1]["path"] == run_dir
    # Windows close while the run goes and, the last ones, at its end: after run_stopping,
    # before run_finished (whose summary covers them all).
    assert names.count("run_stopping") == names.count("run_finished") == 1
    assert names[-1] == "run_finished", names
    stopping = names.index("run_stopping")
    assert "window_closed" in names[1:stopping] and set(names[stopping + 1 : -1]) <= {"window_closed"}
    finished = seen[-1][1]
    assert finished["summary"] == finished["on_disk"]  # written once, complete
    assert not finished["junit"]  # the JUnit file comes after run_finished
    summary = finished["summary"]
    assert [verdict["passed"] for verdict in summary["slo"]] == [True, True]
    served = model_stats(triton.http_address, "identity")["requests"] - before
    assert summary["overall"]["requests"] == served > 0
    assert json.loads((run_dir / "summary.json").read_text()) == summary  # nothing rewrote it after
    assert junit.exists()
    # server_snapshot_taken: every snapshot the run streamed, periodic ones included, all before
    # run_finished; the streamed intervals add up to summary.json's server side, Triton's count.
    assert finished["n"] == len(snapshots) >= 4  # the start, periodic ones every 0.5 s, the end
    streamed = [json.loads(line) for line in (run_dir / "server_snapshots.jsonl").read_text().splitlines()]
    assert [snapshot.time_s for snapshot in snapshots] == [line["time_s"] for line in streamed]
    assert json.loads((run_dir / "server_stats.json").read_text())["snapshot_count"] == len(streamed)
    intervals = [json.loads(line) for line in (run_dir / "server_intervals.jsonl").read_text().splitlines()]
    assert len(intervals) == len(streamed) - 1
    assert sum(interval["models"]["identity"]["requests"] for interval in intervals) == served
    assert summary["server"]["identity"]["requests"] == served
