"""A long distributed run: worker and master memory, run directory size, and faults on the way.

    .venv/bin/python bench/soak.py [--duration 600] [--users 8] [--workers 1] [--rate R]
    .venv/bin/python bench/soak.py --duration 1800 --workers 2 --rate 500 \
        --restart-triton-at 600,1200 --kill-worker-at 900

One master and N workers (separate processes) with TritonHttpUser on the `identity` test
model of a local Triton, closed loop (or open loop at --rate requests/s); samples every
process's RSS every 10 s and prints them with the run's totals, its faults, the reconciliation
with Triton's own counts (over every server lifetime) and the run directory's size. Faults
on demand: Triton killed (SIGKILL) and started again on the same ports, a worker killed.

Memory verdict: each process's RSS growth from its first sample to its last (a killed
worker's last is its last alive) against GROWTH_LIMIT_MB; the exit code is 1 if one grew
more. The bench row beside it: each process's RSS slope in MB/hour (least squares over the
samples after WARM_UP_S) and the statistics snapshots taken. A long run compressed:
`--server-stats-interval 0.1` takes 50 times the snapshots of the default 5 s, so 10 minutes
poll as much as 8 hours do. `--trace-memory DIR` runs the master under
bench/traced_locustfile.py (tracemalloc diffs of what grew, see there). However the soak ends
(done, failed, Ctrl-C, SIGTERM), the master, the workers and Triton are stopped: nothing is
left running.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from loadtests.server import TEST_REPOSITORY, LocalTriton, TritonPorts  # noqa: E402
from loadtests.server.launcher import _signal_group  # noqa: E402
from tests.helpers import model_stats  # noqa: E402

SAMPLE_EVERY_S = 10
# Samples before this (interpreter, imports, pools and first-use caches filling up) are left
# out of the slope: it is the growth of a run that goes on that a soak must bound.
WARM_UP_S = 60
GROWTH_LIMIT_MB = 50  # issue 12: master and worker RSS growth over a 30-min soak
STOP_WAIT_S = 10


def _times(text: str) -> list[int]:
    return sorted(int(t) for t in text.split(",") if t)


def _restart(triton: LocalTriton) -> LocalTriton:
    # Next to the first log when it is kept (--logs); a default log went with the old server's workdir.
    log_file = triton.log_file.with_name(f"{triton.log_file.stem}.restarted{triton.log_file.suffix}")
    if not log_file.parent.exists():
        log_file = None
    fresh = LocalTriton(triton.model_repositories, ports=triton.ports, log_file=log_file)
    for _ in range(60):
        try:
            fresh.start()
            return fresh
        except Exception:
            time.sleep(0.5)
    raise RuntimeError("Triton did not come back")


def _requests(triton: LocalTriton) -> int | None:
    """Triton's request count of the model under test; None when it does not answer."""
    try:
        return model_stats(triton.http_address, "identity")["requests"]
    except Exception:  # refused, reset, timed out: whatever a dead server gives
        return None


def _rss_mb(process: subprocess.Popen) -> float | None:
    if process.poll() is not None:
        return None  # ended (an exited child not yet reaped reads as 0 MB)
    try:
        rss = psutil.Process(process.pid).memory_info().rss
    except psutil.NoSuchProcess:
        return None
    return round(rss / 1e6, 1) if rss else None  # 0 while it exits: no sample


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after STOP_WAIT_S: a Locust process that ignores the first still ends."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _raise_on_sigterm(signum: int, _frame: object) -> None:
    # As Ctrl-C does: the `finally` of main() then stops every process the soak started.
    raise KeyboardInterrupt(f"signal {signum}")


def memory_verdict(names: list[str], samples: list[tuple]) -> tuple[list[str], bool]:
    """Per process, RSS at its first and last sample (MB) and the growth; True if all under the limit."""
    lines, ok = [], True
    for column, name in enumerate(names, start=1):
        alive = [(sample[0], sample[column]) for sample in samples if sample[column] is not None]
        if not alive:
            lines.append(f"{name}: no sample")
            continue
        (t0, first), (t1, last) = alive[0], alive[-1]
        growth = last - first
        ok = ok and growth < GROWTH_LIMIT_MB
        lines.append(
            f"{name}: RSS {first:.1f} MB at {t0} s -> {last:.1f} MB at {t1} s: {growth:+.1f} MB "
            f"({'under' if growth < GROWTH_LIMIT_MB else 'OVER'} the {GROWTH_LIMIT_MB} MB limit)"
        )
    return lines, ok


def rss_slopes(names: list[str], samples: list[tuple]) -> list[str]:
    """Per process, the least-squares RSS slope in MB/hour over its samples after WARM_UP_S."""
    lines = []
    for column, name in enumerate(names, start=1):
        points = [(s[0], s[column]) for s in samples if s[column] is not None and s[0] >= WARM_UP_S]
        if len(points) < 3:
            lines.append(f"{name}: too few samples after {WARM_UP_S} s for a slope")
            continue
        mean_t = sum(t for t, _ in points) / len(points)
        mean_mb = sum(mb for _, mb in points) / len(points)
        spread = sum((t - mean_t) ** 2 for t, _ in points)
        slope = sum((t - mean_t) * (mb - mean_mb) for t, mb in points) / spread  # MB per second
        lines.append(f"{name}: RSS slope {slope * 3600:+.1f} MB/hour ({points[0][0]}-{points[-1][0]} s)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=600, help="seconds (default 600)")
    parser.add_argument("--users", type=int, default=8, help="users (default 8)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--rate", type=float, default=0.0, help="open loop at this many requests/s (default closed)")
    parser.add_argument("--restart-triton-at", default="", help="seconds into the run, comma-separated")
    parser.add_argument("--kill-worker-at", default="", help="seconds into the run, comma-separated")
    parser.add_argument("--server-stats-interval", type=float, default=2.0, help="seconds (default 2)")
    parser.add_argument("--trace-memory", metavar="DIR", help="trace the master's allocations into DIR")
    parser.add_argument("--trace-at", default="120,600", help="seconds of the tracing snapshots (default 120,600)")
    parser.add_argument("--logs", metavar="DIR", help="keep the processes' logs and the run directory in DIR")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    processes: list[subprocess.Popen] = []
    tritons: list[LocalTriton] = []  # the first and every restarted one
    try:
        if args.logs:
            Path(args.logs).mkdir(parents=True, exist_ok=True)
        log_file = Path(args.logs) / "triton.log" if args.logs else None
        tritons.append(LocalTriton([TEST_REPOSITORY], log_file=log_file))
        tritons[0].start()
        return _soak(args, tritons, processes)
    except KeyboardInterrupt:
        print("soak interrupted: stopping the master, the workers and Triton", file=sys.stderr)
        return 130
    finally:
        for process in processes:  # master first: it ends the run; then the workers
            _stop(process)
        for triton in tritons:
            triton.stop()  # a stopped one: nothing to do


def _soak(args: argparse.Namespace, tritons: list[LocalTriton], processes: list[subprocess.Popen]) -> int:
    """The run itself; every process (and Triton) it starts goes into `processes` (`tritons`) at
    once, for main() to stop."""
    triton = tritons[0]
    locustfile = "bench/traced_locustfile.py" if args.trace_memory else "locustfile.py"
    master_env = dict(os.environ)
    if args.trace_memory:
        master_env.update(TRACE_MEMORY_DIR=str(Path(args.trace_memory).resolve()), TRACE_MEMORY_AT=args.trace_at)
    locust = [sys.executable, "-m", "locust"]
    traffic = ["--traffic", "constant", "--rate", f"{args.rate:g}"] if args.rate else []
    restarts, kills = _times(args.restart_triton_at), _times(args.kill_worker_at)
    counted = 0  # Triton's count over the server lifetimes that ended
    before = last_seen = model_stats(triton.http_address, "identity")["requests"]
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        if args.logs:
            tmp = Path(args.logs)
            tmp.mkdir(parents=True, exist_ok=True)
        run_dir, port = Path(tmp) / "run", TritonPorts.free().http
        logs = Path(tmp)
        master = subprocess.Popen(
            [*locust, "-f", str(REPO_ROOT / locustfile), "--master", "--master-bind-host", "127.0.0.1"]
            + ["--master-bind-port", str(port), "--headless"]
            + ["--expect-workers", str(args.workers), "-u", str(args.users), "-r", str(args.users)]
            + ["-t", f"{args.duration}s", "TritonHttpUser", "--model", "identity", *triton.options, *traffic]
            + ["--run-dir", str(run_dir), "--only-summary"]
            + ["--server-stats-interval", f"{args.server_stats_interval:g}"],
            cwd=REPO_ROOT,
            env=master_env,
            stdout=(logs / "master.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        processes.append(master)
        time.sleep(1)
        workers = []
        for i in range(args.workers):
            workers.append(
                subprocess.Popen(
                    [*locust, "-f", str(REPO_ROOT / "locustfile.py"), "--worker", "--master-host", "127.0.0.1"]
                    + ["--master-port", str(port), "TritonHttpUser"],
                    cwd=REPO_ROOT,
                    stdout=(logs / f"worker{i}.log").open("w"),
                    stderr=subprocess.STDOUT,
                )
            )
            processes.append(workers[-1])
        while not (run_dir / "config.json").exists():
            if master.poll() is not None:
                print((logs / "master.log").read_text()[-3000:], file=sys.stderr)
                raise RuntimeError(f"the master exited with {master.returncode} before the run started")
            time.sleep(0.1)
        samples, events = [], []
        start = time.time()
        while master.poll() is None:
            now = time.time() - start
            died = triton.process.poll() is not None  # killed from outside: restarted too, and said
            if died or (restarts and now >= restarts[0]):
                if not died:
                    restarts.pop(0)
                seen = _requests(triton)
                counted += (seen if seen is not None else last_seen) - before
                if not died:
                    _signal_group(triton.process.pid, signal.SIGKILL)
                triton.process.wait()
                triton.stop()  # its stubs and shared memory
                triton = _restart(triton)
                tritons.append(triton)
                before = last_seen = 0
                what = "found dead (not by the soak; its count since the last sample is lost)" if died else "killed"
                events.append(f"{now:.0f} s: Triton {what}, back after {time.time() - start - now:.1f} s")
            if kills and now >= kills[0]:
                kills.pop(0)
                victim = next(w for w in workers if w.poll() is None)
                victim.kill()
                events.append(f"{now:.0f} s: worker {victim.pid} killed")
            if not samples or now - samples[-1][0] >= SAMPLE_EVERY_S:
                samples.append((round(now), *(_rss_mb(process) for process in (master, *workers))))
                seen = _requests(triton)
                last_seen = seen if seen is not None else last_seen
            time.sleep(0.5)
        end = time.time() - start
        for worker in workers:
            if worker.poll() is None:
                worker.wait(timeout=60)
        seen = _requests(triton)
        counted += (seen if seen is not None else last_seen) - before
        summary = json.loads((run_dir / "summary.json").read_text())
        (endpoint,) = summary["endpoints"]
        names = ["master"] + [f"worker{i}" for i in range(args.workers)]
        print("t_s " + " ".join(f"{name}_rss_MB" for name in names))
        for sample in samples:
            print(*sample)
        print(*events, sep="\n")
        latency = endpoint["latency_us"]
        faults = summary.get("faults", {})
        estimate = sum(faults.get("unreported_requests_estimate", {}).values())
        print(
            f"ended {end - args.duration:+.1f} s after -t; requests {endpoint['requests']} "
            f"(failures {endpoint['failures_by_class']}), {endpoint['throughput_rps']:.0f} req/s, "
            f"p50 {latency['p50']:.0f} us, p99 {latency['p99']:.0f} us, load generator {summary['load_generator']}"
        )
        print(
            f"Triton counted {counted} over every lifetime; "
            f"the run's server section {summary['server']['identity']['requests']}; "
            f"client successes {endpoint['requests'] - endpoint['failures']} + lost-worker estimate {estimate}"
        )
        print("faults:", json.dumps(faults))
        print(subprocess.run(["du", "-sh", str(run_dir)], capture_output=True, text=True).stdout)
        stats = json.loads((run_dir / "server_stats.json").read_text())
        count = stats.get("snapshot_count", len(stats.get("snapshots", [])))  # older runs held the list
        print(f"statistics snapshots: {count} ({count / max(end, 1e-9):.1f}/s)")
        print(*rss_slopes(names, samples), sep="\n")
        lines, ok = memory_verdict(names, samples)
        print(*lines, sep="\n")
        print(f"memory: {'PASS' if ok else 'FAIL'} (growth limit {GROWTH_LIMIT_MB} MB per process)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
