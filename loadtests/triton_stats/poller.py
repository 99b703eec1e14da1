"""Triton's statistics for the models under test, snapshotted every few seconds during a run.

The arithmetic on two snapshots, the running sums over a run and the files are in
statistics.py; this module only takes the snapshots (through loadtests.clients.control) and hands each on.

The address is Triton's HTTP one, or grpc://HOST:PORT for a target reached over gRPC only
(loadtests/clients/control_grpc.py reads the same statistics there).

Several replicas (`--triton-http A,B` or a name resolving to several, re-resolved every
30 s by loadtests.clients.replicas): every snapshot asks each replica, and keeps each one's
entries under "<version>@<address>" keys (statistics.py sums them per model). A replica
that does not answer is an error in `errors` (the snapshot goes on with the others) and its
previous entries are carried forward, so its next answer is not counted from zero.

Triton's side of a run: /stats snapshots and Prometheus samples, polled on the master.

Read on the master (or the single process) only, never by every worker: one poller per
run, whatever the worker count.

Where Triton's statistics are read: its HTTP address, or its gRPC one for a target reached
over gRPC only. Chosen in pre-flight, before any load, by asking for the run's models.

- `--triton-grpc` given and `--triton-http` left at its default: gRPC first (a user who
  points the suite at their Triton's gRPC port has not said where its HTTP port is);
- otherwise HTTP first; when it does not answer, gRPC (a warning says so);
- neither answers: one error line saying what to type, exit 2, nothing sent.

    target = statistics_address(settings, ["identity"])   # settings.triton_http, or its triton_grpc
    target.control_address                                  # "127.0.0.1:8000" or "grpc://10.0.0.5:8001"

What the run was measured against: Triton's server metadata and each model's metadata and config.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gevent

from loadtests.clients.control import DEFAULT_TIMEOUT_S
from loadtests.clients.control_grpc import open_control
from loadtests.clients.replicas import ReplicaSet
from loadtests.config.addresses import TritonTarget
from loadtests.config.security import ConnectionSecurity
from loadtests.config.settings import DEFAULT_GRPC_TARGET, DEFAULT_HTTP_TARGET, Settings
from loadtests.errors import ServerError
from loadtests.run_format.ensembles import composing_models
from loadtests.triton_stats import statistics as server_stats
from loadtests.triton_stats.metrics import MetricsPoller
from loadtests.triton_stats.sampler import DEFAULT_INTERVAL_S, PeriodicSampler
from loadtests.triton_stats.statistics import (
    CLIENT_LATENCY_GRID_S,
    Interval,
    ModelDelta,
    ServerStatsLog,
    SnapshotSeries,
    StatsSnapshot,
    server_stats_document,
)

if TYPE_CHECKING:
    from loadtests.recording.histograms import EndpointStats


def take_snapshot(
    target: TritonTarget,
    models: list[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    clock: Callable[[], float] = time.time,
    security: ConnectionSecurity | None = None,
) -> StatsSnapshot:
    """The models' raw statistics at the target's first replica, stamped with the time the
    answers arrived.

    All models or none (ServerError): a snapshot missing a model would make the next delta
    count that model's whole history.
    """
    asked_s = clock()
    stats = open_control(target, timeout_s=timeout_s, security=security).statistics(models)
    return StatsSnapshot(clock(), stats, asked_s)


def take_replica_snapshot(
    replicas: ReplicaSet,
    models: list[str],
    previous: StatsSnapshot | None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    clock: Callable[[], float] = time.time,
    security: ConnectionSecurity | None = None,
) -> tuple[StatsSnapshot, list[str]]:
    """Every current replica's statistics in one snapshot, and the errors of those that did not
    answer (their last entries carried forward). ServerError when none answered."""
    merged: dict[str, dict] = {model: {} for model in models}
    errors = []
    addresses = replicas.current()
    for address in addresses:
        replica = replicas.target.only(replicas.endpoint(address))
        try:
            stats = open_control(replica, timeout_s=timeout_s, security=security).statistics(models)
        except ServerError as error:
            errors.append(str(error))
            stats = _last_entries(previous, address)
        for model, raw in stats.items():
            merged[model].update({server_stats.replica_key(version, address): entry for version, entry in raw.items()})
    if len(errors) == len(addresses):
        raise ServerError("; ".join(errors))
    return StatsSnapshot(clock(), merged), errors


def _last_entries(previous: StatsSnapshot | None, address: str) -> dict[str, dict]:
    if previous is None:
        return {}
    return server_stats.replica_view(previous, address).models


def client_answers(endpoints: dict[str, EndpointStats]) -> dict[str, list[int]]:
    """A window's successes per model (its endpoints summed), faster than each bound of
    statistics.CLIENT_LATENCY_GRID_S."""
    bounds_us = [bound * 1e6 for bound in CLIENT_LATENCY_GRID_S]
    answers: dict[str, list[int]] = {}
    for stats in endpoints.values():
        counts = stats.successes_faster_than(bounds_us)
        model = answers.setdefault(stats.model, [0] * len(bounds_us))
        for index, count in enumerate(counts):
            model[index] += count
    return answers


class ServerStatsPoller:
    """Snapshots Triton's statistics for the models under test every `interval_s` during a run.

    Runs in a gevent greenlet (Locust's loop): start() at test start, stop() at test end.
    Memory: a snapshot is 5-14 KB of Python objects per model (more with each batch size
    Triton has executed; measured in bench/performance-log.md), and none is kept: each
    is folded into running sums (`series`, statistics.SnapshotSeries), streamed to
    `stream_to`'s JSON-lines files when given (statistics.ServerStatsLog), handed to
    `on_snapshot`, and dropped. A run of any length holds the same few snapshots' worth. A
    sweep that needs the server's counters at chosen moments keeps its own snapshots
    (levels/boundary_snapshots.py).

    Example:
        poller = ServerStatsPoller(settings.triton_http, ["resnet50"], interval_s=5.0, stream_to=run_dir)
        poller.start()
        ...  # the load
        poller.stop()
        poller.total_delta()["resnet50"].compute_infer_us  # 850.2
        json.dump(poller.to_json(), open(run_dir / "server_stats.json", "w")); poller.close()
    """

    def __init__(
        self,
        target: TritonTarget,
        models: list[str],
        interval_s: float = DEFAULT_INTERVAL_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
        before_tick: Callable[[], None] | None = None,
        security: ConnectionSecurity | None = None,
        stream_to: Path | None = None,
        on_snapshot: Callable[[StatsSnapshot], None] | None = None,
    ) -> None:
        self.target = target
        self.http_address = target.control_address  # as server_stats.json names it
        # Several addresses (or a name with several): one snapshot asks every replica.
        self._replicas = ReplicaSet(target)
        self.security = security
        self.models = list(models)
        # Read at every snapshot: the end of a run shortens it (ServerWatch.stop).
        self.timeout_s = timeout_s
        self.series = SnapshotSeries()
        self.stream_to = stream_to
        self._log: ServerStatsLog | None = None
        # Called with every snapshot taken (periodic, on demand, the last): the suite's
        # server_snapshot_taken event.
        self.on_snapshot = on_snapshot
        self._sampler = PeriodicSampler(self._take, interval_s, clock, before_tick)

    def _take(self) -> None:
        if self._replicas.single:  # plain version keys: a one-server run's file as it always was
            self._keep(take_snapshot(self.target, self.models, self.timeout_s, self._sampler.clock, self.security))
            return
        snapshot, errors = take_replica_snapshot(
            self._replicas, self.models, self.series.last, self.timeout_s, self._sampler.clock, self.security
        )
        self._keep(snapshot)
        for error in errors:
            self._sampler.record_error(error)

    def client_window(self, start_s: float, end_s: float, endpoints: dict[str, EndpointStats]) -> None:
        """A closed window of the client's (the run's window_closed): what shows a restart that
        Triton's counters do not (statistics.SnapshotSeries.client_window)."""
        self.series.client_window(start_s, end_s, client_answers(endpoints))

    def _keep(self, snapshot: StatsSnapshot) -> None:
        """Folded into the sums, streamed, announced; then only the series' last holds it."""
        last, failed_s = self.series.last, self._sampler.last_error_s
        interval = self.series.add(
            snapshot, unreachable=last is not None and failed_s is not None and failed_s > last.time_s
        )
        if self._log is not None:
            self._log.write(snapshot, interval)
        if self.on_snapshot is not None:
            self.on_snapshot(snapshot)

    @property
    def interval_s(self) -> float:
        return self._sampler.interval_s

    @property
    def errors(self) -> list[dict[str, Any]]:
        """[{"time_s": ..., "error": "GET http://...: ..."}] for every snapshot that failed."""
        return self._sampler.errors

    @property
    def running(self) -> bool:
        return self._sampler.running

    def start(self) -> None:
        """Opens the streamed files (with `stream_to`), takes the first snapshot now and starts
        the periodic greenlet; never raises for an unreachable server (see errors): check
        reachability before the load, e.g. with TritonControl.statistics."""
        if self.stream_to is not None and self._log is None:
            self._log = ServerStatsLog(self.stream_to)
        self._sampler.start()

    def stop(self) -> None:
        """Stops the greenlet and takes the final snapshot (every client window is in by then:
        the spans still waiting for them are judged)."""
        self._sampler.stop()
        self.series.settle()

    def close(self) -> None:
        """Closes the streamed files (after stop); idempotent."""
        if self._log is not None:
            self._log.close()
            self._log = None

    def snapshot_soon(self) -> None:
        """An extra snapshot taken in a greenlet of its own (a load shape's step boundary);
        stop() waits for it before the last one."""
        self._sampler.sample_soon()

    def snapshot_now(self) -> StatsSnapshot | None:
        """An extra snapshot (e.g. at a sweep step's boundary); None if it failed (see errors)."""
        count = self.series.count
        self._sampler.sample_now()
        return self.series.last if self.series.count > count else None

    @property
    def last_interval(self) -> Interval | None:
        """(start_s, end_s, {model: ModelDelta}) between the last two snapshots; None before two."""
        return self.series.last_interval

    def total_delta(self) -> dict[str, ModelDelta]:
        """First snapshot to last, restart-safe (see server_stats_series.SnapshotSeries)."""
        return self.series.total_delta()

    def replica_deltas(self) -> dict[str, dict[str, ModelDelta]]:
        """Per replica address, first snapshot to last ({} for one server)."""
        return self.series.replica_deltas()

    def restarts(self) -> list[dict[str, Any]]:
        return list(self.series.restarts)

    def to_json(self) -> dict:
        """The content of server_stats.json."""
        return server_stats_document(
            self.http_address,
            self.models,
            self.interval_s,
            self.series,
            self.errors,
            self._sampler.errors_dropped,
            streamed=self.stream_to is not None,
        )


# The last snapshot and scrape at the end of a run wait at most this long each: a frozen or
# dead Triton must not hold up the end of the run (the failure is recorded in the errors).
END_SCRAPE_TIMEOUT_S = 1.0


class ServerWatch:
    """Starts both pollers at test start; at the end writes their files and returns the breakdown.

    Example:
        watch = ServerWatch(settings.triton_http, settings.triton_metrics, ["bert_qa"], interval_s=5.0)
        watch.start(); ...; summary["server"] = watch.stop(run_directory)
    """

    def __init__(
        self,
        stats_target: TritonTarget,
        metrics_target: TritonTarget,
        models: list[str],
        interval_s: float,
        before_tick: Callable[[], None] | None = None,
        metrics_csv: Path | None = None,
        security: ConnectionSecurity | None = None,
        stats_dir: Path | None = None,
        on_snapshot: Callable[[StatsSnapshot], None] | None = None,
    ) -> None:
        # Streamed to the run directory as taken (server_snapshots.jsonl, server_intervals.jsonl).
        self.stats = ServerStatsPoller(
            stats_target,
            models,
            interval_s=interval_s,
            before_tick=before_tick,
            security=security,
            stream_to=stats_dir,
            on_snapshot=on_snapshot,
        )
        # Streamed to the run directory as scraped (server_metrics.csv), not held in memory.
        self.metrics = MetricsPoller(
            metrics_target, interval_s=interval_s, before_tick=before_tick, csv_path=metrics_csv, security=security
        )

    def start(self) -> None:
        self.stats.start()
        self.metrics.start()

    def stop(self, directory) -> dict:
        """Final snapshots, server_stats.json (the streamed files closed) and server_metrics.csv;
        returns summary.json's `server`."""
        self.stats.timeout_s = min(self.stats.timeout_s, END_SCRAPE_TIMEOUT_S)
        self.metrics.timeout_s = min(self.metrics.timeout_s, END_SCRAPE_TIMEOUT_S)
        # Both last scrapes at once: against a frozen server, the end waits one deadline, not two.
        gevent.joinall([gevent.spawn(self.stats.stop), gevent.spawn(self.metrics.stop)], raise_error=True)
        directory.write_json("server_stats.json", self.stats.to_json())
        self.stats.close()
        self.metrics.write_csv(directory.path / "server_metrics.csv")
        return {model: delta.to_json() for model, delta in sorted(self.stats.total_delta().items())}

    def replicas(self) -> dict[str, dict]:
        """summary.json's `server_replicas`: {address: {model: breakdown}} when several replicas
        answered (each replica's own statistics; `server` is their sum per model), else {}."""
        deltas = self.stats.replica_deltas()
        if len(deltas) < 2:
            return {}
        return {
            address: {model: delta.to_json() for model, delta in sorted(models.items())}
            for address, models in deltas.items()
        }


logger = logging.getLogger(__name__)


def candidates(settings: Settings) -> list[TritonTarget]:
    """The statistics targets to try, in order (see the module docstring)."""
    http, grpc = settings.triton_http, settings.triton_grpc
    only_grpc = http == DEFAULT_HTTP_TARGET and grpc != DEFAULT_GRPC_TARGET
    return [grpc, http] if only_grpc else [http, grpc]


def statistics_address(settings: Settings, models: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> TritonTarget:
    """The first candidate whose Triton answers the models' statistics; raises ServerError."""
    errors = []
    for target in candidates(settings):
        try:
            open_control(target, timeout_s=timeout_s, security=settings.security).statistics(models)
        except ServerError as error:
            errors.append(str(error))
            continue
        if errors:
            logger.warning("Triton's statistics are read at %s instead: %s", target.control_address, errors[0])
        return target
    raise ServerError(
        f"cannot read Triton's statistics of {', '.join(models)} (the server-side numbers): "
        f"{'; '.join(errors)}; give --triton-http HOST:PORT (Triton's HTTP port, 8000 by default) or "
        "--triton-grpc HOST:PORT (its gRPC port, 8001) of the Triton that serves them (a server that "
        "restricts its statistics API, e.g. behind a token, takes --header 'NAME: env:VAR')"
    )


def fetch_triton_info(
    target: TritonTarget,
    models: list[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    security: ConnectionSecurity | None = None,
) -> dict:
    """{"server": /v2, "models": {m: {"metadata": ..., "config": ...}}}; errors recorded, not raised.

    The models of the run, then the composing models of its ensembles (their configs'
    `ensemble_scheduling` steps, recursively), each marked with the ensembles it serves
    (`"part_of": ["bert_ensemble"]`): Triton runs and counts every step's model on its own,
    so the server-side breakdown watches them too (`watched_models`).

    Asks the target's first replica (replicas serve the same models).

    Example: fetch_triton_info(settings.triton_http, ["bert_qa"])["models"]["bert_qa"]["config"]["max_batch_size"]
    """
    control = open_control(target, timeout_s=timeout_s, security=security)  # over HTTP or gRPC
    info: dict = {"http": target.control_address_of(target.first), "models": {}}
    try:
        info["server"] = control.server_metadata()
    except ServerError as error:
        info["error"] = f"server metadata: {error}"
    pending = [(model, None) for model in models]
    while pending:
        model, ensemble = pending.pop(0)
        if model in info["models"]:
            _mark_part_of(info["models"][model], ensemble)
            continue
        entry: dict = {}
        _mark_part_of(entry, ensemble)
        try:
            entry["metadata"] = control.model_metadata(model)
            entry["config"] = control.model_config(model)
        except ServerError as error:
            entry["error"] = str(error)
        info["models"][model] = entry
        pending.extend((step, model) for step in composing_models(entry.get("config") or {}))
    return info


def ready_models(target: TritonTarget, security: ConnectionSecurity | None = None) -> list[str]:
    """The models Triton has ready (its repository index); none when it does not answer."""
    try:
        index = open_control(target, security=security).repository_index()
    except ServerError:
        return []
    return sorted(entry["name"] for entry in index if entry.get("state") == "READY")


def watched_models(info: dict) -> list[str]:
    """Every model of `fetch_triton_info`'s answer: the run's and its ensembles' composing models."""
    return list(info["models"])


def _mark_part_of(entry: dict, ensemble: str | None) -> None:
    if ensemble is not None and ensemble not in entry.setdefault("part_of", []):
        entry["part_of"].append(ensemble)
