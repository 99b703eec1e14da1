"""Triton's statistics for the models under test, snapshotted every few seconds during a run.

The arithmetic on the snapshots is in server_stats.py, the file in server_stats_file.py;
this module only takes them (through loadtests.clients.control) and keeps them.

Several replicas (`--triton-http A,B` or a name resolving to several, re-resolved every
30 s by loadtests.clients.replicas): every snapshot asks each replica, and keeps each one's
entries under "<version>@<address>" keys (server_stats.py sums them per model). A replica
that does not answer is an error in `errors` (the snapshot goes on with the others) and its
previous entries are carried forward, so its next answer is not counted from zero.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from loadtests.addresses import endpoint_tls
from loadtests.clients.control import DEFAULT_TIMEOUT_S, TritonControl
from loadtests.clients.replicas import ReplicaSet
from loadtests.connection_security import ConnectionSecurity
from loadtests.errors import ServerError
from loadtests.recording import server_stats
from loadtests.recording.sampler import DEFAULT_INTERVAL_S, PeriodicSampler
from loadtests.recording.server_stats import ModelDelta, StatsSnapshot
from loadtests.recording.server_stats_file import server_stats_document


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
    stats = TritonControl(http_address, timeout_s=timeout_s, security=security).statistics(models)
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
            stats = TritonControl(scheme + address, timeout_s=timeout_s, security=security).statistics(models)
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
    return server_stats.replica_snapshots([previous], address)[0].models


class ServerStatsPoller:
    """Snapshots Triton's statistics for the models under test every `interval_s` during a run.

    Runs in a gevent greenlet (Locust's loop): start() at test start, stop() at test end.
    Memory: one raw entry per model per snapshot, about 7 KB as Python objects (1 KB of
    JSON; more with each distinct batch size seen), so a one-hour run at 5 s keeps about
    5 MB per model. They are all kept on purpose: server_stats.json holds every snapshot and
    interval, and a sweep asks for the delta between any two moments of the run.

    Example:
        poller = ServerStatsPoller("localhost:8000", ["resnet50"], interval_s=5.0)
        poller.start()
        ...  # the load
        poller.stop()
        poller.total_delta()["resnet50"].compute_infer_us  # 850.2
        json.dump(poller.to_json(), open("server_stats.json", "w"))
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
    ) -> None:
        self.http_address = http_address
        # Several addresses (or a name with several): one snapshot asks every replica.
        authority, tls = endpoint_tls(http_address)  # https://: every replica speaks TLS
        self._scheme = "https://" if tls else ""
        self._replicas = ReplicaSet(authority)
        self.security = security
        self.models = list(models)
        # Read at every snapshot: the end of a run shortens it (ServerWatch.stop).
        self.timeout_s = timeout_s
        self.snapshots: list[StatsSnapshot] = []
        self._sampler = PeriodicSampler(self._take, interval_s, clock, before_tick)

    def _take(self) -> None:
        if self._replicas.single:  # plain version keys: a one-server run's file as it always was
            self.snapshots.append(
                take_snapshot(self.http_address, self.models, self.timeout_s, self._sampler.clock, self.security)
            )
            return
        previous = self.snapshots[-1] if self.snapshots else None
        addresses = self._replicas.current()
        snapshot, errors = take_replica_snapshot(
            addresses, self.models, previous, self.timeout_s, self._sampler.clock, self.security, self._scheme
        )
        self.snapshots.append(snapshot)
        for error in errors:
            self._sampler.record_error(error)

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
        """Takes the first snapshot now and starts the periodic greenlet; never raises for an
        unreachable server (see errors): check reachability before the load, e.g. with
        TritonControl.statistics."""
        self._sampler.start()

    def stop(self) -> None:
        """Stops the greenlet and takes the final snapshot."""
        self._sampler.stop()

    def snapshot_now(self) -> StatsSnapshot | None:
        """An extra snapshot (e.g. at a sweep step's boundary); None if it failed (see errors)."""
        count = len(self.snapshots)
        self._sampler.sample_now()
        return self.snapshots[-1] if len(self.snapshots) > count else None

    def nearest_snapshot(self, time_s: float) -> StatsSnapshot | None:
        return server_stats.nearest_snapshot(self.snapshots, time_s)

    def delta_between(self, t0: float, t1: float) -> dict[str, ModelDelta]:
        """The delta between the snapshots nearest to t0 and t1 (Unix seconds); {} before any snapshot."""
        if t1 < t0:
            raise ValueError(f"t1 ({t1}) is before t0 ({t0})")
        before, after = self.nearest_snapshot(t0), self.nearest_snapshot(t1)
        if before is None or after is None:
            return {}
        return server_stats.compute_delta(before, after)

    def total_delta(self) -> dict[str, ModelDelta]:
        """First snapshot to last, restart-safe (see server_stats.total_delta)."""
        return server_stats.total_delta(self.snapshots)

    def replica_deltas(self) -> dict[str, dict[str, ModelDelta]]:
        """Per replica address, first snapshot to last ({} for one server)."""
        return server_stats.replica_deltas(self.snapshots)

    def restarts(self) -> list[dict[str, Any]]:
        return server_stats.restarts(self.snapshots)

    def interval_deltas(self) -> list[tuple[float, float, dict[str, ModelDelta]]]:
        return server_stats.interval_deltas(self.snapshots)

    def to_json(self) -> dict:
        """The content of server_stats.json."""
        return server_stats_document(
            self.http_address,
            self.models,
            self.interval_s,
            self.snapshots,
            self.errors,
            self._sampler.errors_dropped,
        )
