"""A long distributed run: worker and master memory, run directory size, and faults on the way.

    .venv/bin/python bench/soak.py [--duration 600] [--users 8] [--workers 1] [--rate R]
    .venv/bin/python bench/soak.py --duration 1800 --workers 2 --rate 500 \
        --restart-triton-at 600,1200 --kill-worker-at 900

One master and N workers (separate processes) with TritonHttpUser on the `identity` test
model of a local Triton, closed loop (or open loop at --rate requests/s); samples every
process's RSS every 10 s and prints them with the run's totals, its faults, the reconciliation
with Triton's own counts (over every server lifetime) and the run directory's size. Faults
on demand: Triton killed (SIGKILL) and started again on the same ports, a worker killed.
"""

from __future__ import annotations

import argparse
import json
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


def _times(text: str) -> list[int]:
    return sorted(int(t) for t in text.split(",") if t)


def _restart(triton: LocalTriton) -> LocalTriton:
    fresh = LocalTriton(triton.model_repositories, ports=triton.ports)
    for _ in range(60):
        try:
            fresh.start()
            return fresh
        except Exception:
            time.sleep(0.5)
    raise RuntimeError("Triton did not come back")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=600, help="seconds (default 600)")
    parser.add_argument("--users", type=int, default=8, help="users (default 8)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--rate", type=float, default=0.0, help="open loop at this many requests/s (default closed)")
    parser.add_argument("--restart-triton-at", default="", help="seconds into the run, comma-separated")
    parser.add_argument("--kill-worker-at", default="", help="seconds into the run, comma-separated")
    args = parser.parse_args()
    locust = [sys.executable, "-m", "locust", "-f", str(REPO_ROOT / "locustfile.py")]  # master and worker apart
    traffic = ["--traffic", "constant", "--rate", f"{args.rate:g}"] if args.rate else []
    restarts, kills = _times(args.restart_triton_at), _times(args.kill_worker_at)
    triton = LocalTriton([TEST_REPOSITORY])
    triton.start()
    counted = 0  # Triton's count over the server lifetimes that ended
    before = model_stats(triton.http_address, "identity")["requests"]
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        run_dir, port = Path(tmp) / "run", TritonPorts.free().http
        logs = Path(tmp)
        master = subprocess.Popen(
            [*locust, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--headless"]
            + ["--expect-workers", str(args.workers), "-u", str(args.users), "-r", str(args.users)]
            + ["-t", f"{args.duration}s", "TritonHttpUser", "--model", "identity", *triton.options, *traffic]
            + ["--run-dir", str(run_dir), "--only-summary", "--server-stats-interval", "2"],
            cwd=REPO_ROOT,
            stdout=(logs / "master.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        time.sleep(1)
        workers = [
            subprocess.Popen(
                [*locust, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port), "TritonHttpUser"],
                cwd=REPO_ROOT,
                stdout=(logs / f"worker{i}.log").open("w"),
                stderr=subprocess.STDOUT,
            )
            for i in range(args.workers)
        ]
        while not (run_dir / "config.json").exists():
            time.sleep(0.1)
        samples, events = [], []
        start = time.time()
        while master.poll() is None:
            now = time.time() - start
            if restarts and now >= restarts[0]:
                restarts.pop(0)
                counted += model_stats(triton.http_address, "identity")["requests"] - before
                _signal_group(triton.process.pid, signal.SIGKILL)
                triton.process.wait()
                triton = _restart(triton)
                before = 0
                events.append(f"{now:.0f} s: Triton killed, back after {time.time() - start - now:.1f} s")
            if kills and now >= kills[0]:
                kills.pop(0)
                victim = next(w for w in workers if w.poll() is None)
                victim.kill()
                events.append(f"{now:.0f} s: worker {victim.pid} killed")
            if not samples or now - samples[-1][0] >= SAMPLE_EVERY_S:
                rss = []
                for process in (master, *workers):
                    try:
                        rss.append(psutil.Process(process.pid).memory_info().rss // 2**20)
                    except psutil.NoSuchProcess:
                        rss.append(None)
                samples.append((round(now), *rss))
            time.sleep(0.5)
        end = time.time() - start
        for worker in workers:
            if worker.poll() is None:
                worker.wait(timeout=60)
        counted += model_stats(triton.http_address, "identity")["requests"] - before
        triton.stop()
        summary = json.loads((run_dir / "summary.json").read_text())
        (endpoint,) = summary["endpoints"]
        print("t_s master_rss_MiB " + " ".join(f"worker{i}_rss_MiB" for i in range(args.workers)))
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
