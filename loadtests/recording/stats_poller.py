"""Triton's statistics for the models under test, snapshotted every few seconds during a run.

The arithmetic on two snapshots is in server_stats.py, the running sums over a run in
server_stats_series.py, the files in server_stats_file.py; this module only takes the
snapshots (through loadtests.clients.control) and hands each on.

The address is Triton's HTTP one, or grpc://HOST:PORT for a target reached over gRPC only
(loadtests/clients/control_grpc.py reads the same statistics there).

Several replicas (`--triton-http A,B` or a name resolving to several, re-resolved every
30 s by loadtests.clients.replicas): every snapshot asks each replica, and keeps each one's
entries under "<version>@<address>" keys (server_stats.py sums them per model). A replica
that does not answer is an error in `errors` (the snapshot goes on with the others) and its
previous entries are carried forward, so its next answer is not counted from zero.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loadtests.addresses import endpoint_tls
from loadtests.clients.control import DEFAULT_TIMEOUT_S
from loadtests.clients.control_grpc import open_control
from loadtests.clients.replicas import ReplicaSet
from loadtests.connection_security import ConnectionSecurity
from loadtests.errors import ServerError
from loadtests.recording import server_stats
from loadtests.recording.sampler import DEFAULT_INTERVAL_S, PeriodicSampler
from loadtests.recording.server_stats import ModelDelta, StatsSnapshot
from loadtests.recording.server_stats_file import ServerStatsLog, server_stats_document
from loadtests.recording.server_stats_series import Interval, SnapshotSeries


def take_snapshot(
    http_address: str,
    models: list[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    clock: Callable[[], float] = time.time,
    security: ConnectionSecurity | None = None,
) -> StatsSnapshot:
    """The models' raw statistics, stamped with the time the answers arrived.

    All models or none (ServerError): a snapshot missing a model would make the next delta
    count that model's whole history.
    """
    stats = open_control(http_address, timeout_s=timeout_s, security=security).statistics(models)
    return StatsSnapshot(clock(), stats)


def take_replica_snapshot(
    addresses: tuple[str, ...],
    models: list[str],
    previous: StatsSnapshot | None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    clock: Callable[[], float] = time.time,
    security: ConnectionSecurity | None = None,
    scheme: str = "",
) -> tuple[StatsSnapshot, list[str]]:
    """Every replica's statistics in one snapshot, and the errors of those that did not answer
    (their last entries carried forward). ServerError when none answered."""
    merged: dict[str, dict] = {model: {} for model in models}
    errors = []
    for address in addresses:
        try:
            stats = open_control(scheme + address, timeout_s=timeout_s, security=security).statistics(models)
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


class ServerStatsPoller:
    """Snapshots Triton's statistics for the models under test every `interval_s` during a run.

    Runs in a gevent greenlet (Locust's loop): start() at test start, stop() at test end.
    Memory: a snapshot is 5-14 KB of Python objects per model (more with each batch size
    Triton has executed; measured in docs/performance.md), and none is kept: each is folded into running sums
    (`series`, server_stats_series.py), streamed to `stream_to`'s JSON-lines files when given
    (server_stats_file.py), handed to `on_snapshot`, and dropped. A run of any length holds
    the same few snapshots' worth. A sweep that needs the server's counters at chosen moments
    keeps its own snapshots (traffic/boundary_snapshots.py).

    Example:
        poller = ServerStatsPoller("localhost:8000", ["resnet50"], interval_s=5.0, stream_to=run_dir)
        poller.start()
        ...  # the load
        poller.stop()
        poller.total_delta()["resnet50"].compute_infer_us  # 850.2
        json.dump(poller.to_json(), open(run_dir / "server_stats.json", "w")); poller.close()
    """

    def __init__(
        self,
        http_address: str,
        models: list[str],
        interval_s: float = DEFAULT_INTERVAL_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
        before_tick: Callable[[], None] | None = None,
        security: ConnectionSecurity | None = None,
        stream_to: Path | None = None,
        on_snapshot: Callable[[StatsSnapshot], None] | None = None,
    ) -> None:
        self.http_address = http_address
        # Several addresses (or a name with several): one snapshot asks every replica.
        # The scheme (https://, grpc://, grpcs://) applies to every replica.
        authority, _tls = endpoint_tls(http_address)
        scheme, separator, _rest = http_address.partition("://")
        self._scheme = f"{scheme}://" if separator else ""
        self._replicas = ReplicaSet(authority)
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
            self._keep(
                take_snapshot(self.http_address, self.models, self.timeout_s, self._sampler.clock, self.security)
            )
            return
        addresses = self._replicas.current()
        snapshot, errors = take_replica_snapshot(
            addresses, self.models, self.series.last, self.timeout_s, self._sampler.clock, self.security, self._scheme
        )
        self._keep(snapshot)
        for error in errors:
            self._sampler.record_error(error)

    def _keep(self, snapshot: StatsSnapshot) -> None:
        """Folded into the sums, streamed, announced; then only the series' last holds it."""
        interval = self.series.add(snapshot)
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
        """Stops the greenlet and takes the final snapshot."""
        self._sampler.stop()

    def close(self) -> None:
        """Closes the streamed files (after stop); idempotent."""
        if self._log is not None:
            self._log.close()
            self._log = None

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
