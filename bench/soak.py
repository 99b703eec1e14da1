"""A long distributed run at the highest request rate: worker and master memory, run directory size.

    .venv/bin/python bench/soak.py [--duration 600] [--users 8]

One master and one worker (separate processes) with TritonHttpUser on the `identity`
test model of a local Triton; samples both processes' RSS every 10 s and prints them
with the run's totals and the run directory's size. Issue 4 asked for this figure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from loadtests.server import TEST_REPOSITORY, LocalTriton, TritonPorts  # noqa: E402

SAMPLE_EVERY_S = 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=600, help="seconds (default 600)")
    parser.add_argument("--users", type=int, default=8, help="users (default 8)")
    args = parser.parse_args()
    locust = [sys.executable, "-m", "locust", "-f", str(REPO_ROOT / "locustfile.py")]  # master and worker apart
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp, LocalTriton([TEST_REPOSITORY]) as triton:
        run_dir, port = Path(tmp) / "run", TritonPorts.free().http
        logs = Path(tmp)
        master = subprocess.Popen(
            [*locust, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--headless"]
            + ["--expect-workers", "1", "-u", str(args.users), "-r", str(args.users), "-t", f"{args.duration}s"]
            + ["TritonHttpUser", "--model", "identity", *triton.options]
            + ["--run-dir", str(run_dir), "--only-summary"],
            cwd=REPO_ROOT,
            stdout=(logs / "master.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        time.sleep(1)
        worker = subprocess.Popen(
            [*locust, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port), "TritonHttpUser"],
            cwd=REPO_ROOT,
            stdout=(logs / "worker.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        samples = []
        start = time.time()
        while master.poll() is None:
            try:
                rss = [psutil.Process(p.pid).memory_info().rss // 2**20 for p in (worker, master)]
            except psutil.NoSuchProcess:
                break
            samples.append((round(time.time() - start), *rss))
            time.sleep(SAMPLE_EVERY_S)
        worker.wait(timeout=60)
        summary = json.loads((run_dir / "summary.json").read_text())
        (endpoint,) = summary["endpoints"]
        print("t_s worker_rss_MiB master_rss_MiB")
        for sample in samples:
            print(*sample)
        latency = endpoint["latency_us"]
        print(
            f"requests {endpoint['requests']}, {endpoint['throughput_rps']:.0f} req/s, "
            f"p50 {latency['p50']:.0f} us, p99 {latency['p99']:.0f} us, load generator {summary['load_generator']}"
        )
        print(subprocess.run(["du", "-ah", str(run_dir)], capture_output=True, text=True).stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
