"""Simulated Locust workers for the master benchmark (bench/master_scale.py): many per process.

Each simulated worker is one ZeroMQ DEALER socket with its own client id, speaking Locust's
worker protocol as `locust.runners.WorkerRunner` does (msgpack `Message`s): `client_ready`
until the master's `ack`, a `heartbeat` every second, `spawning`/`spawning_complete` on
`spawn`, a `stats` report every 3 s, `client_stopped` on `stop`, and a final report on `quit`.

The reports carry what a real worker's would: Locust's own stats entries (`stats`,
`stats_total`, `errors`, `user_count`, `user_classes_count`) and, under the suite's key, the
drained `WindowRecorder` windows: 1-s windows per endpoint with real HDR histograms (the
suite's `EndpointStats.to_message()`), built once per process from realistic latencies
and re-stamped with the current window keys at send time. A report covers the windows since
the previous one, the first and last of them partial (as a real drain is), so each endpoint
gets about `rate x 3 s` requests per report.

With `--transport message` the windows leave in a separate custom message instead
(`register_message(..., concurrent=True)` on the master), the report keeping Locust's stats.

One process drives many sockets from one poll loop: no gevent, no greenlet per worker, no
histogram recorded per request at run time (templates), so the simulation's own CPU stays
small; it runs at a lower scheduling priority (nice 10) and the master's CPU is read from
the master's own /proc entry. At exit it writes what it sent (requests per endpoint, exact)
and the heartbeat round trips it saw, for the driver to compare with the master's summary.

    python -m bench.master_sim --master-port 5557 --workers 50 --prefix sim0 --out sim0.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import signal
import time
import uuid
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import zmq
from locust import __version__ as LOCUST_VERSION
from locust.rpc.protocol import Message
from locust.stats import RequestStats

from loadtests.clients.outcome import RequestOutcome
from loadtests.recording.histograms import EndpointStats

REPORT_INTERVAL_S = 3.0  # locust.runners.WORKER_REPORT_INTERVAL
HEARTBEAT_INTERVAL_S = 1.0  # locust.runners.HEARTBEAT_INTERVAL
CONNECT_RETRY_S = 5.0  # locust.runners.CONNECT_TIMEOUT
REPORT_KEY = "triton_loadtest"  # the suite's key in a worker report
WINDOWS_MESSAGE = "triton_loadtest_windows"  # the alternative transport's message type
SENT_KEY = "bench_sent_s"  # when the simulated worker sent the report (the master probe reads it)
# Templates for the fraction of a 1-s window a report covers (its first and last windows are partial).
FRACTIONS = (0.25, 0.5, 0.75, 1.0)
TEMPLATES_PER_FRACTION = 3  # distinct histograms per (endpoint, fraction): not one payload repeated

# The demo's two models over both protocols: the endpoints the master's user classes name.
# Median latency (ms) per endpoint: a small BERT and a ResNet on a GPU, gRPC a little faster.
ENDPOINTS = {
    "bert_qa_dynbatch [http]": ("bert_qa_dynbatch", "http", 4.0),
    "bert_qa_dynbatch [grpc]": ("bert_qa_dynbatch", "grpc", 3.6),
    "resnet50 [http]": ("resnet50", "http", 9.0),
    "resnet50 [grpc]": ("resnet50", "grpc", 8.2),
}
USER_CLASSES = ("BertQAHttpUser", "BertQAGrpcUser", "ResNetHttpUser", "ResNetGrpcUser")


def _latencies_ms(rng: np.random.Generator, median_ms: float, n: int) -> np.ndarray:
    """Log-normal around the median with a 1 % tail three times slower (queueing, GC)."""
    values = rng.lognormal(math.log(median_ms), 0.35, n)
    tail = rng.random(n) < 0.01
    values[tail] *= 3.0
    return values


@dataclass
class Template:
    """One endpoint's drained window (the suite's message) and the Locust stats entry alike."""

    message: dict
    requests: int


def build_templates(rate_per_endpoint: float, open_loop: bool, seed: int) -> dict[str, dict[float, list[Template]]]:
    """Per endpoint and covered fraction, a few windows recorded with the suite's own EndpointStats."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[float, list[Template]]] = {}
    for name, (model, protocol, median_ms) in ENDPOINTS.items():
        out[name] = {}
        for fraction in FRACTIONS:
            templates = []
            for _ in range(TEMPLATES_PER_FRACTION):
                n = max(1, round(rate_per_endpoint * fraction))
                stats = EndpointStats(name, model, protocol)
                batch = rng.choice((1, 2, 4, 8), n)
                for latency_ms, size in zip(_latencies_ms(rng, median_ms, n), batch, strict=True):
                    latency_us = float(latency_ms) * 1000.0
                    # Open loop records the latency from the actual send as well (a little shorter).
                    uncorrected = latency_us * 0.97 if open_loop else None
                    outcome = RequestOutcome(name, model, protocol, latency_us, int(size), None, uncorrected)
                    stats.record(outcome._replace(sent_bytes=2048, received_bytes=512))  # bodies of 2 KB and 512 B
                templates.append(Template(stats.to_message(), stats.requests))
            out[name][fraction] = templates
    return out


def build_locust_entries(rate_per_endpoint: float, seed: int) -> tuple[dict[str, dict], dict]:
    """Locust's own stats of one report (3 s) per endpoint, serialised as a worker does."""
    rng = np.random.default_rng(seed + 1)
    stats = RequestStats()
    n = max(1, round(rate_per_endpoint * REPORT_INTERVAL_S))
    for model, protocol, median_ms in ENDPOINTS.values():
        for latency_ms in _latencies_ms(rng, median_ms, n):
            stats.log_request(protocol, model, float(latency_ms), 512)
    entries = {f"{e['name']} [{e['method']}]": e for e in stats.serialize_stats()}
    by_endpoint = {name: entries[f"{model} [{protocol}]"] for name, (model, protocol, _) in ENDPOINTS.items()}
    return by_endpoint, stats.total.get_stripped_report()


@dataclass
class SimWorker:
    """One simulated worker: its socket, its state, and what it has sent."""

    client_id: str
    socket: zmq.Socket
    next_heartbeat: float
    next_report: float
    last_report: float
    state: str = "ready"
    acked: bool = False
    next_ready: float = 0.0
    # After a stop, a worker tells the master it is ready again once its stop timeout is over.
    ready_again_at: float | None = None
    user_classes_count: dict[str, int] = field(default_factory=dict)
    heartbeats_out: deque = field(default_factory=deque)
    quit: bool = False
    # Its final report is sent: its users have stopped, so later reports carry no windows.
    final_sent: bool = False

    def send(self, kind: str, data) -> None:
        self.socket.send(Message(kind, data, self.client_id).serialize(), zmq.NOBLOCK)


class Simulation:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.random = random.Random(args.seed)
        self.templates = build_templates(args.rate_per_endpoint, args.open_loop, args.seed)
        self.locust_entries, self.locust_total = build_locust_entries(args.rate_per_endpoint, args.seed)
        self.context = zmq.Context()
        self.poller = zmq.Poller()
        self.workers: list[SimWorker] = []
        self.sent_requests = dict.fromkeys(ENDPOINTS, 0)
        self.sent_inferences = dict.fromkeys(ENDPOINTS, 0)
        self.reports = 0
        self.report_bytes = 0
        self.heartbeat_rtt_s: list[float] = []
        self.heartbeats_sent = 0
        self.heartbeats_unanswered = 0
        now = time.time()
        for index in range(args.workers):
            socket = self.context.socket(zmq.DEALER)
            client_id = f"{args.prefix}-{index}_{uuid.uuid4().hex}"
            socket.setsockopt(zmq.IDENTITY, client_id.encode())
            socket.setsockopt(zmq.LINGER, 2000)
            socket.connect(f"tcp://{args.master_host}:{args.master_port}")
            self.poller.register(socket, zmq.POLLIN)
            # Workers start at different moments, so their reports spread over the interval.
            phase = self.random.uniform(0, REPORT_INTERVAL_S)
            worker = SimWorker(client_id, socket, now + self.random.uniform(0, 1), now + phase, now)
            self.workers.append(worker)
        self.by_socket = {w.socket: w for w in self.workers}

    # -- what a worker sends -------------------------------------------------------------
    def windows(self, start: float, end: float) -> list[dict]:
        """The windows a drain at `end` holds since the drain at `start` (every endpoint in each)."""
        out = []
        for key in range(math.floor(start), math.floor(end) + 1):
            covered = min(end, key + 1) - max(start, key)
            if covered <= 0:
                continue
            fraction = min(FRACTIONS, key=lambda f: abs(f - covered))
            for name, by_fraction in self.templates.items():
                template = self.random.choice(by_fraction[fraction])
                out.append({"window": key, **template.message})
                self.sent_requests[name] += template.requests
                self.sent_inferences[name] += template.message["inferences"]
        return out

    def report(self, worker: SimWorker, now: float, final: bool = False) -> None:
        recording = worker.state in ("running", "stopped") or final
        windows = self.windows(worker.last_report, now) if recording and not worker.final_sent else []
        worker.last_report = now
        stats = []
        requests = {name: 0 for name in ENDPOINTS}
        for message in windows:
            requests[message["name"]] += message["requests"]
        for name, entry in self.locust_entries.items():
            if requests[name]:
                stats.append({**entry, "num_requests": requests[name], "last_request_timestamp": now})
        total = {**self.locust_total, "num_requests": sum(requests.values()), "last_request_timestamp": now}
        users = sum(worker.user_classes_count.values())
        data = {
            "stats": stats,
            "stats_total": total,
            "errors": {},
            "user_classes_count": worker.user_classes_count,
            "user_count": users,
        }
        suite = {"windows": windows, "cpu_s": 0.2 * REPORT_INTERVAL_S, "throttle": None, "final": final}
        if self.args.transport == "message" and windows:
            suite[SENT_KEY] = time.time()
            payload = Message(WINDOWS_MESSAGE, suite, worker.client_id).serialize()
            worker.socket.send(payload, zmq.NOBLOCK)
            self.report_bytes += len(payload)
            data[REPORT_KEY] = {"windows": [], "cpu_s": 0.0, "throttle": None, "final": final}
        else:
            data[REPORT_KEY] = suite
        data[SENT_KEY] = time.time()
        payload = Message("stats", data, worker.client_id).serialize()
        worker.socket.send(payload, zmq.NOBLOCK)
        self.report_bytes += len(payload)
        self.reports += 1

    def final_report(self, worker: SimWorker, now: float) -> None:
        """The suite's last report at a worker's stop: Locust's "stats" report, its final flag set
        (run/shipping.py); the windows since the last report once, with the user count."""
        if worker.state == "running":
            worker.state = "stopped"
        if worker.state == "stopped":
            self.report(worker, now, final=True)
        worker.final_sent = True

    def heartbeat(self, worker: SimWorker, now: float) -> None:
        cpu = 20.0  # what a healthy worker pod reports (percent)
        worker.send("heartbeat", {"state": worker.state, "current_cpu_usage": cpu, "current_memory_usage": 200e6})
        worker.heartbeats_out.append(now)
        self.heartbeats_sent += 1

    # -- what the master sends -----------------------------------------------------------
    def handle(self, worker: SimWorker, message: Message, now: float) -> None:
        match message.type:
            case "ack":
                worker.acked = True
            case "heartbeat":
                if worker.heartbeats_out:
                    self.heartbeat_rtt_s.append(now - worker.heartbeats_out.popleft())
            case "spawn":
                worker.send("spawning", None)
                was_running = worker.state == "running"
                worker.user_classes_count = dict(message.data["user_classes_count"])
                if not was_running:
                    worker.last_report = now  # a drain at test start has nothing older
                    worker.final_sent = False
                worker.state = "running"
                users = sum(worker.user_classes_count.values())
                worker.send("spawning_complete", {"user_classes_count": worker.user_classes_count, "user_count": users})
            case "stop":
                worker.state = "stopped"
                self.report(worker, now, final=True)
                worker.user_classes_count = {}
                worker.send("client_stopped", None)
                worker.state = "ready"
                worker.ready_again_at = now + float(self.args.stop_timeout)
            case "triton_loadtest_stop":
                # The suite's stop (loadtests/run/shipping.py): users stop, the final report goes
                # at once, as a real worker's test_stop sends it.
                self.final_report(worker, now)
            case "quit":
                if worker.state == "running":
                    worker.state = "stopped"
                self.report(worker, now, final=True)
                worker.quit = True
            case _:
                pass  # the suite's rate messages (open loop) and the like: nothing to do here

    def run(self) -> None:
        deadline = time.time() + self.args.max_seconds
        for worker in self.workers:
            worker.send("client_ready", LOCUST_VERSION)
            worker.next_ready = time.time() + CONNECT_RETRY_S
        while time.time() < deadline and not all(w.quit for w in self.workers):
            for socket, _ in self.poller.poll(timeout=50):
                worker = self.by_socket[socket]
                while True:
                    try:
                        frame = socket.recv(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self.handle(worker, Message.unserialize(frame), time.time())
            now = time.time()
            for worker in self.workers:
                if worker.quit:
                    continue
                if not worker.acked and now >= worker.next_ready:
                    worker.send("client_ready", LOCUST_VERSION)  # the master may not be up yet
                    worker.next_ready = now + CONNECT_RETRY_S
                if worker.ready_again_at is not None and now >= worker.ready_again_at:
                    worker.send("client_ready", LOCUST_VERSION)
                    worker.ready_again_at = None
                if now >= worker.next_heartbeat:
                    self.heartbeat(worker, now)
                    worker.next_heartbeat += HEARTBEAT_INTERVAL_S
                if now >= worker.next_report:
                    if worker.state == "running":
                        self.report(worker, now)
                    worker.next_report += REPORT_INTERVAL_S

    def result(self) -> dict:
        unanswered = sum(len(w.heartbeats_out) for w in self.workers)
        return {
            "workers": len(self.workers),
            "sent_requests": self.sent_requests,
            "sent_inferences": self.sent_inferences,
            "reports": self.reports,
            "report_bytes": self.report_bytes,
            "heartbeats_sent": self.heartbeats_sent,
            "heartbeats_unanswered": unanswered,
            "heartbeat_rtt_s": self.heartbeat_rtt_s,
            "cpu_s": time.process_time(),
            "quit_by_master": all(w.quit for w in self.workers),
        }

    def close(self) -> None:
        for worker in self.workers:
            worker.socket.close(linger=2000)
        self.context.term()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--master-host", default="127.0.0.1")
    parser.add_argument("--master-port", type=int, required=True)
    parser.add_argument("--workers", type=int, required=True, help="simulated workers in this process")
    parser.add_argument("--prefix", default="sim", help="client id prefix (unique per process)")
    parser.add_argument("--rate-per-endpoint", type=float, default=500.0, help="requests/s per endpoint per worker")
    parser.add_argument("--open-loop", action="store_true", help="windows carry the uncorrected histogram too")
    parser.add_argument("--transport", choices=("report", "message"), default="report")
    parser.add_argument("--stop-timeout", type=float, default=2.0)
    parser.add_argument("--max-seconds", type=float, default=600.0, help="give up after this long")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--nice", type=int, default=10, help="lower priority than the master (default 10)")
    parser.add_argument("--out", required=True, help="JSON file: what was sent")
    args = parser.parse_args(argv)
    if args.nice:
        os.nice(args.nice)

    def on_term(*_args) -> None:
        raise KeyboardInterrupt  # end the poll loop, still write what was sent

    signal.signal(signal.SIGTERM, on_term)
    simulation = Simulation(args)
    with contextlib.suppress(KeyboardInterrupt):
        simulation.run()
    with open(args.out, "w") as out:
        json.dump(simulation.result(), out)
    simulation.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
