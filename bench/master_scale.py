"""How many workers one suite master merges: a real master, many simulated workers.

    python -m bench.master_scale                          # 10, 50, 200 and 500 workers
    python -m bench.master_scale --workers 3 --duration 5 # a quick check
    python -m bench.master_scale --transport message      # windows in their own message
    python -m bench.master_scale --workers 200 --profile  # py-spy on the master

For each worker count, a real suite master (`locust -f locustfile.py --master --headless`,
the demo's BERT and ResNet user classes over HTTP and gRPC: 4 endpoints) runs against a
local Triton, and simulated workers (bench/master_sim.py, many ZeroMQ sockets per process)
speak Locust's worker protocol to it and ship realistic windows (real HDR histograms,
1-s windows, every 3 s). A probe loaded beside the locustfile (bench/master_probe.py)
watches the master through Locust's events. Measured over the steady part of the run
(from two report intervals after the test starts to one second before it stops):

- master CPU: the master process's CPU seconds per wall second (/proc), 1.0 = one core;
- report latency: from a simulated worker stamping its report to the master having merged
  it (Locust's stats and the suite's windows), p50 and p99;
- window closing delay: from a window's end to its row in timeseries.csv (the master keeps
  a window open 8 s for late reports, so ~9 s is the floor);
- heartbeats: the round trip of a worker's heartbeat to the master's reply (p99, max), and
  workers the master marked missing (locust#2843: large payloads starve heartbeats);
- exact: the master's summary.json counts exactly the requests the workers reported.

Writes bench/master_results.md (and .json) and prints the table. The simulation runs at
nice 10 in a few processes; its CPU is shown beside the master's, never added to it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import psutil

from bench.master_sim import ENDPOINTS, USER_CLASSES
from loadtests.server import DEMO_REPOSITORY, LocalTriton

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
DEFAULT_LEVELS = (10, 50, 200, 500)
WORKERS_PER_PROCESS = 125  # simulated workers per simulator process (one poll loop each)
WARMUP_S = 8.0  # two report intervals: every worker has reported, windows have started closing
POLL_S = 0.2
GRACE_S = 8.0  # loadtests/recording/windows.py DEFAULT_GRACE_S: the floor of the closing delay
# A master still running this long after its -t has fallen behind for good (saturated).
FINISH_ALLOWANCE_S = 90.0
REPORT_INTERVAL_S = 3.0


@dataclass
class Level:
    """One worker count's measurements (times in ms unless named _s)."""

    workers: int
    transport: str
    endpoints: int
    reports_per_s: float
    kb_per_report: float
    master_cpu: float
    cpu_ms_per_report: float
    merged_per_s: float
    sim_cpu: float
    load_avg: float
    finished: bool
    report_p50_ms: float
    report_p99_ms: float
    report_max_ms: float
    close_delay_p50_s: float
    close_delay_max_s: float
    heartbeat_p99_ms: float
    heartbeat_max_ms: float
    loop_lag_max_ms: float
    missing_max: int
    workers_lost: int
    sent_requests: int
    merged_requests: int
    exit_code: int
    run_dir: str
    # Per endpoint, what the simulated workers reported and what summary.json says (requests, inferences).
    sent: dict[str, list[int]]
    merged: dict[str, list[int]]

    @property
    def exact(self) -> bool:
        return self.sent == self.merged


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _cpu_s(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
    except psutil.Error:
        return 0.0
    return times.user + times.system


class TimeseriesWatch:
    """When each window's rows appear in timeseries.csv, against when the window ended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.seen: dict[float, float] = {}  # window start (epoch s) -> when its rows appeared
        self.window_s = 1.0

    def poll(self) -> None:
        if not self.path.exists():
            return
        with open(self.path) as file:
            file.seek(self.offset)
            chunk = file.read()
        lines = chunk.split("\n")
        complete, rest = lines[:-1], lines[-1]
        self.offset += len(chunk) - len(rest)
        now = time.time()
        for line in complete:
            fields = line.split(",")
            if len(fields) < 2 or fields[0] == "time_s":
                continue
            try:
                start = datetime.fromisoformat(fields[1]).timestamp()
            except ValueError:
                continue
            self.seen.setdefault(start, now)

    def delays_s(self, until: float) -> list[float]:
        """Closing delays of the windows written while the run went on (not at its final close)."""
        return [seen - (start + self.window_s) for start, seen in self.seen.items() if seen <= until]


def run_level(
    workers: int,
    triton_options: list[str],
    duration_s: int,
    transport: str,
    rate_per_endpoint: float,
    open_loop: bool,
    work: Path,
    profile: bool = False,
) -> Level:
    """One master, `workers` simulated workers, `duration_s` of load; the measurements."""
    port = _free_port()
    tag = f"{transport}-{workers}"
    run_dir, probe_out = work / f"run-{tag}", work / f"probe-{tag}.json"
    users = workers * len(USER_CLASSES)
    master_command = [sys.executable, "-m", "locust", "-f", "locustfile.py,bench/master_probe.py", "--master"]
    master_command += ["--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--headless"]
    master_command += ["--only-summary", "--expect-workers", str(workers), "-u", str(users), "-r", str(users)]
    master_command += ["-t", f"{duration_s}s", *USER_CLASSES, *triton_options, "--run-dir", str(run_dir)]
    environment = {**os.environ, "BENCH_PROBE_OUT": str(probe_out), "BENCH_TRANSPORT": transport}
    master_log = (work / f"master-{tag}.log").open("w")
    master = subprocess.Popen(
        master_command, cwd=REPO_ROOT, env=environment, stdout=master_log, stderr=subprocess.STDOUT
    )
    sims, sim_outs, sim_logs = [], [], []
    processes = max(1, -(-workers // WORKERS_PER_PROCESS))
    for index in range(processes):
        count = workers // processes + (1 if index < workers % processes else 0)
        out = work / f"sim-{tag}-{index}.json"
        command = [sys.executable, "-m", "bench.master_sim", "--master-port", str(port), "--workers", str(count)]
        command += ["--prefix", f"sim{index}", "--rate-per-endpoint", f"{rate_per_endpoint:g}", "--seed", str(index)]
        command += ["--transport", transport, "--out", str(out), "--max-seconds", str(duration_s + 300)]
        command += ["--open-loop"] if open_loop else []
        log = (work / f"sim-{tag}-{index}.log").open("w")
        sim_logs.append(log)
        sims.append(subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT))
        sim_outs.append(out)
    master_process = psutil.Process(master.pid)
    sim_processes = [psutil.Process(p.pid) for p in sims]
    watch = TimeseriesWatch(run_dir / "timeseries.csv")
    started = None
    deadline = time.time() + 240
    while started is None and time.time() < deadline and master.poll() is None:
        if watch.path.exists():
            started = time.time()
        time.sleep(POLL_S)
    if started is None:
        master.kill()
        for sim in sims:
            sim.kill()
        for log in (master_log, *sim_logs):
            log.close()
        raise RuntimeError(f"the master never started the test: see {master_log.name}")
    begin, end = started + min(WARMUP_S, duration_s / 3), started + duration_s - 1.0
    marks: dict[str, tuple[float, float, float]] = {}
    spy = None
    load_avg = float("nan")
    give_up = started + duration_s + FINISH_ALLOWANCE_S
    while master.poll() is None:
        now = time.time()
        if now > give_up:  # a master that fell this far behind never catches up: saturated
            marks.setdefault("end", (now, _cpu_s(master_process), sum(_cpu_s(p) for p in sim_processes)))
            master.terminate()
            try:
                master.wait(timeout=15)
            except subprocess.TimeoutExpired:
                master.kill()
                master.wait()
            break
        if "begin" not in marks and now >= begin:
            marks["begin"] = (now, _cpu_s(master_process), sum(_cpu_s(p) for p in sim_processes))
            if profile:
                spy = _start_profile(master.pid, end - now, work / f"profile-{tag}.txt")
        if "end" not in marks and now >= end:
            marks["end"] = (now, _cpu_s(master_process), sum(_cpu_s(p) for p in sim_processes))
            load_avg = os.getloadavg()[0]
        watch.poll()
        time.sleep(POLL_S)
    watch.poll()
    master_log.close()
    for sim in sims:
        try:
            sim.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sim.terminate()
            try:
                sim.wait(timeout=20)
            except subprocess.TimeoutExpired:
                sim.kill()
                sim.wait()
    for log in sim_logs:
        log.close()
    if spy is not None:
        spy.wait(timeout=60)
    (t0, master0, sim0), (t1, master1, sim1) = marks["begin"], marks["end"]
    wall = t1 - t0
    sent: Counter = Counter()
    sent_inferences: Counter = Counter()
    reports = report_bytes = 0
    heartbeat_rtt: list[float] = []
    for out in sim_outs:
        if not out.exists():  # killed before it could write: what it sent is unknown
            sent["(unknown)"] += 1
            continue
        result = json.loads(out.read_text())
        sent.update(result["sent_requests"])
        sent_inferences.update(result["sent_inferences"])
        reports += result["reports"]
        report_bytes += result["report_bytes"]
        heartbeat_rtt += result["heartbeat_rtt_s"]
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"endpoints": []}
    merged = {e["name"]: [e["requests"], e["inferences"]] for e in summary["endpoints"]}
    # A master that never got to write its probe (saturated from the start) merged nothing we saw.
    empty = {"merged_at": [], "report_latency_s": [], "loop_lag_s": [], "missing": -1}
    probe = json.loads(probe_out.read_text()) if probe_out.exists() else empty
    merges = zip(probe["merged_at"], probe["report_latency_s"], strict=True)
    in_window = [(at, seconds) for at, seconds in merges if t0 <= at <= t1]
    latency = [seconds * 1000 for _, seconds in in_window]
    lag = [seconds * 1000 for seconds in probe["loop_lag_s"]]
    delays = watch.delays_s(until=started + duration_s)
    return Level(
        workers=workers,
        transport=transport,
        endpoints=len(ENDPOINTS),
        reports_per_s=round(workers / REPORT_INTERVAL_S, 1),
        kb_per_report=round(report_bytes / max(reports, 1) / 1024, 1),
        master_cpu=round((master1 - master0) / wall, 3),
        cpu_ms_per_report=round((master1 - master0) * 1000 / len(in_window), 3) if in_window else float("nan"),
        merged_per_s=round(len(in_window) / wall, 1),
        sim_cpu=round((sim1 - sim0) / wall, 3),
        load_avg=round(load_avg, 1),
        finished=summary_path.exists(),
        report_p50_ms=round(_percentile(latency, 50), 2),
        report_p99_ms=round(_percentile(latency, 99), 2),
        report_max_ms=round(max(latency, default=float("nan")), 2),
        close_delay_p50_s=round(statistics.median(delays), 2) if delays else float("nan"),
        close_delay_max_s=round(max(delays), 2) if delays else float("nan"),
        heartbeat_p99_ms=round(_percentile(heartbeat_rtt, 99) * 1000, 2),
        heartbeat_max_ms=round(max(heartbeat_rtt, default=float("nan")) * 1000, 2),
        loop_lag_max_ms=round(max(lag, default=float("nan")), 1),
        missing_max=int(probe["missing"]),
        workers_lost=len(summary.get("faults", {}).get("workers_lost", [])),
        sent_requests=sum(sent.values()),
        merged_requests=sum(merged.get(name, [0])[0] for name in ENDPOINTS),
        exit_code=master.returncode,
        run_dir=str(run_dir),
        sent={name: [sent[name], sent_inferences[name]] for name in sorted(sent)},
        merged=dict(sorted(merged.items())),
    )


def _start_profile(pid: int, seconds: float, out: Path) -> subprocess.Popen | None:
    """py-spy on the master for the steady part (collapsed stacks); None without py-spy."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        print("py-spy not found next to the interpreter: no profile", file=sys.stderr)
        return None
    command = [str(spy), "record", "--pid", str(pid), "--duration", str(max(1, int(seconds)))]
    command += ["--rate", "200", "--format", "raw", "--output", str(out), "--nonblocking"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def sizing(levels: list[Level]) -> tuple[float, float, int]:
    """Master CPU = fixed + cost x reports merged per second (least squares over the levels):
    the fixed part (Triton polling, closing windows, Locust's own loops) in cores, the cost of
    one worker report in ms, and the worker count at which the master needs one core."""
    points = [(level.merged_per_s, level.master_cpu) for level in levels if level.merged_per_s > 0 and level.finished]
    if len(points) < 2:
        return float("nan"), float("nan"), 0
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    cost = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx if sxx else float("nan")
    fixed = mean_y - cost * mean_x
    workers = int((1.0 - fixed) / cost * REPORT_INTERVAL_S) if cost > 0 else 0
    return fixed, cost * 1000, workers


def table(levels: list[Level]) -> str:
    header = (
        "| workers | transport | reports/s sent / merged | KB per report | master CPU (cores) | CPU ms per report "
        "| CPU needed (cores) | report latency p50 / p99 ms | window closing delay p50 / max s "
        "| heartbeat RTT p99 / max ms | missing / lost | exact | simulator CPU | load avg |"
    )
    rows = [header, "|" + " ---: |" * 14]
    for level in levels:
        needed = level.reports_per_s * level.cpu_ms_per_report / 1000
        exact = "yes" if level.exact else ("not finished" if not level.finished else "NO")
        rows.append(
            f"| {level.workers} | {level.transport} | {level.reports_per_s:g} / {level.merged_per_s:g} "
            f"| {level.kb_per_report:g} | {level.master_cpu:.2f} | {level.cpu_ms_per_report:.2f} | {needed:.2f} "
            f"| {level.report_p50_ms:g} / {level.report_p99_ms:g} "
            f"| {level.close_delay_p50_s:g} / {level.close_delay_max_s:g} "
            f"| {level.heartbeat_p99_ms:g} / {level.heartbeat_max_ms:g} | {level.missing_max} / {level.workers_lost} "
            f"| {exact} | {level.sim_cpu:.2f} | {level.load_avg:g} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default=",".join(map(str, DEFAULT_LEVELS)), help="comma-separated counts")
    parser.add_argument("--duration", type=int, default=40, help="seconds of load per count (default 40)")
    parser.add_argument("--transport", default="report", help="report, message, or both (comma-separated)")
    parser.add_argument("--rate-per-endpoint", type=float, default=500.0, help="requests/s per endpoint per worker")
    parser.add_argument("--open-loop", action="store_true", help="windows also carry the uncorrected histogram")
    parser.add_argument("--profile", action="store_true", help="py-spy the master (bench/ profile-*.txt kept)")
    parser.add_argument("--out", default=str(BENCH_DIR / "master_results"), help="writes OUT.md and OUT.json")
    parser.add_argument("--keep", action="store_true", help="keep the run directories and logs")
    parser.add_argument("--render", metavar="JSON", help="only print the table of an earlier OUT.json")
    args = parser.parse_args(argv)
    if args.render:
        rendered = [Level(**level) for level in json.loads(Path(args.render).read_text())]
        print(table(rendered))
        for transport in sorted({level.transport for level in rendered}):
            print(transport, sizing([level for level in rendered if level.transport == transport]))
        return 0
    counts = [int(c) for c in args.workers.split(",") if c]
    transports = [t for t in args.transport.split(",") if t]
    levels: list[Level] = []
    work = Path(tempfile.mkdtemp(prefix="master-scale-"))
    from models.build import ensure_built

    weights = ensure_built("tiny")
    triton = LocalTriton([DEMO_REPOSITORY], environment={"TRITON_LOADTEST_WEIGHTS_DIR": str(weights)})
    with triton:
        for count in counts:
            for transport in transports:
                level = run_level(
                    count,
                    triton.options,
                    args.duration,
                    transport,
                    args.rate_per_endpoint,
                    args.open_loop,
                    work,
                    profile=args.profile,
                )
                levels.append(level)
                print(table([level]).splitlines()[-1], flush=True)
    sizing_text = []
    for transport in transports:
        fixed, cost_ms, at_one_core = sizing([level for level in levels if level.transport == transport])
        sizing_text.append(
            f"{transport}: master CPU = {fixed:.3f} cores + {cost_ms:.2f} ms per worker report "
            f"({len(ENDPOINTS)} endpoints, {args.rate_per_endpoint:g} requests/s each, a report every "
            f"{REPORT_INTERVAL_S:g} s): one master core merges about {at_one_core} workers."
        )
    command = "python -m bench.master_scale " + " ".join(argv if argv is not None else sys.argv[1:])
    text = [
        f"Command: `{command.strip()}` ({args.duration} s per count, {len(ENDPOINTS)} endpoints, "
        f"{args.rate_per_endpoint:g} requests/s per endpoint per worker, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        "",
        table(levels),
        "",
        *sizing_text,
    ]
    Path(args.out + ".md").write_text("\n".join(text) + "\n")
    Path(args.out + ".json").write_text(json.dumps([asdict(level) for level in levels], indent=1) + "\n")
    print("\n".join(text))
    print(f"work files: {work}" if args.keep else "", end="")
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(level.exact and level.exit_code == 0 for level in levels) else 1


if __name__ == "__main__":
    raise SystemExit(main())
