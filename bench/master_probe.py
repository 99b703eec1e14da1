"""A probe loaded beside the suite's locustfile on the benchmarked master (bench/master_scale.py).

    locust -f locustfile.py,bench/master_probe.py --master ...

It adds no user class and changes nothing the master does; it only watches, through Locust's
public events, and writes what it saw to $BENCH_PROBE_OUT at quit:
- report latency: for each worker report, now minus the time the simulated worker stamped
  in it (`bench_sent_s`), taken after every other `worker_report` listener has run (Locust's
  own stats and the suite's merge: this listener is added at `init`, after both);
- event-loop lag: how late a 100 ms sleep wakes up (what also delays heartbeat replies);
- workers in state `missing` (no heartbeat for 3 s), the most seen at once.

With BENCH_TRANSPORT=message it also registers the suite's windows as their own message
(`register_message(..., concurrent=True)`), the alternative transport under test.
"""

from __future__ import annotations

import json
import os
import time

import gevent
from locust import events
from locust.runners import STATE_MISSING, MasterRunner

SENT_KEY = "bench_sent_s"
WINDOWS_MESSAGE = "triton_loadtest_windows"
LAG_PROBE_S = 0.1
WRITE_EVERY_S = 5.0


@events.init.add_listener
def _install_probe(environment, **_kwargs) -> None:
    runner = environment.runner
    out = os.environ.get("BENCH_PROBE_OUT")
    if not isinstance(runner, MasterRunner) or not out:
        return
    # Per merged report: when it was merged (Unix s) and how long after the worker sent it.
    seen: dict[str, list] = {"merged_at": [], "report_latency_s": [], "loop_lag_s": [], "missing": [0]}

    def merged(sent: float) -> None:
        now = time.time()
        seen["merged_at"].append(now)
        seen["report_latency_s"].append(now - sent)

    def on_worker_report(client_id, data, **_kw) -> None:
        sent = data.get(SENT_KEY)
        if sent is not None and data.get("triton_loadtest", {}).get("windows"):
            merged(sent)

    environment.events.worker_report.add_listener(on_worker_report)

    if os.environ.get("BENCH_TRANSPORT") == "message":

        def on_windows(environment, msg, **_kw) -> None:
            # The suite's merge, through the same listener a worker report reaches.
            environment.events.worker_report.fire(client_id=msg.node_id, data={"triton_loadtest": msg.data})
            merged(msg.data[SENT_KEY])

        runner.register_message(WINDOWS_MESSAGE, on_windows, concurrent=True)

    def write() -> None:
        with open(out + ".tmp", "w") as file:
            json.dump({**seen, "missing": max(seen["missing"])}, file)
        os.replace(out + ".tmp", out)

    def watch() -> None:
        last_write = time.monotonic()
        while True:
            before = time.monotonic()
            gevent.sleep(LAG_PROBE_S)
            seen["loop_lag_s"].append(time.monotonic() - before - LAG_PROBE_S)
            missing = sum(1 for client in runner.clients.values() if client.state == STATE_MISSING)
            seen["missing"].append(missing)
            if time.monotonic() - last_write > WRITE_EVERY_S:  # a master that never ends still tells
                write()
                last_write = time.monotonic()

    watcher = gevent.spawn(watch)

    @environment.events.quit.add_listener
    def _write(**_kw) -> None:
        watcher.kill(block=False)
        write()
