"""Which Triton replica a request goes to (`--triton-http/--triton-grpc` lists, `--balance`).

An address option holds one or several HOST:PORT entries. An entry whose host is a DNS
name that resolves to several IPv4 addresses (a Kubernetes headless Service: one A record
per ready pod) stands for that many replicas; a name with one address stays the name.
Names are resolved again every `RESOLVE_EVERY_S` (30 s), on the next request after that,
so pods the autoscaler adds start taking load within about 30 s, and pods that left stop
being chosen. A failed lookup keeps the previous list (a DNS hiccup must not empty it).

A replica that refuses or resets a connection (a pod that died, a Triton stopped) is left out
of the choice for `DOWN_FOR_S` (1 s), then tried again: its outage is a short burst of
"connection refused"/"connection reset" failures (one per client that tries it, about once a
second), and the load goes on to the others meanwhile. Only when every replica is down do
requests go to down ones (and fail, counted). Timeouts do not count: a replica that is slow
under load is measured, not avoided.

Why the client balances at all: an HTTP keep-alive connection and an HTTP/2 (gRPC)
connection are pinned to one pod for their whole life behind a ClusterIP Service, so the
Service's own balancing only acts when connections open (docs/guides/gke.md).

    replicas = ReplicaSet(settings.triton_grpc)          # "triton-headless:8001": resolves to 3 pods
    replicas.current()   # ('10.4.0.7:8001', '10.4.1.9:8001', '10.4.2.3:8001')
    chooser = ReplicaChooser(replicas, pinned=False, start=1)
    chooser.next()       # '10.4.2.3:8001', then '10.4.0.7:8001', ... (round robin)
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable

from loadtests.config.addresses import RESOLVE_EVERY_S, TritonTarget
from loadtests.config.settings import BALANCE_POLICIES, PIN_USER, ROUND_ROBIN

# How long a replica that refused a connection is skipped before it is tried again (seconds).
DOWN_FOR_S = 1.0

Resolver = Callable[[str, int], list[str]]

__all__ = [
    "BALANCE_POLICIES",
    "DOWN_FOR_S",
    "PIN_USER",
    "RESOLVE_EVERY_S",
    "ROUND_ROBIN",
    "ReplicaChooser",
    "ReplicaSet",
]


def resolve_ipv4(host: str, port: int) -> list[str]:
    """The distinct addresses a name resolves to, IPv4 first, sorted (DNS servers rotate the
    order of A records: sorted, the replicas keep their order between lookups); raises OSError.

    IPv6 only when the name has no IPv4 address: 'localhost' resolves to both 127.0.0.1 and
    ::1, which are one server, not two replicas."""
    for family in (socket.AF_INET, socket.AF_UNSPEC):
        try:
            infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
        except socket.gaierror:
            if family == socket.AF_UNSPEC:
                raise
            continue
        return sorted({info[4][0] for info in infos}, key=ipaddress.ip_address)
    return []


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class ReplicaSet:
    """The replicas of one target, resolved now and every `target.resolve_every_s`. Replicas
    are named by their HOST:PORT (what the recording counts per replica); `endpoint` gives a
    name's (host, port) pair, as parsed or as resolved."""

    def __init__(
        self,
        target: TritonTarget,
        resolver: Resolver = resolve_ipv4,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self.entries = target.authorities
        self.resolve_every_s = target.resolve_every_s
        self._resolver = resolver
        self._clock = clock
        self._endpoints: dict[str, tuple[str, int]] = dict(zip(self.entries, target.replicas, strict=True))
        self._names = [entry for entry, (host, _port) in self._endpoints.items() if not _is_ip(host)]
        self._addresses: tuple[str, ...] = self.entries
        # What each DNS name stood for at its last successful lookup.
        self._resolved: dict[str, tuple[str, ...]] = {}
        self._next_resolve = 0.0
        self._down_until: dict[str, float] = {}
        self._turns = 0
        self.current()

    def take_turn(self) -> int:
        """The next client's number (0, 1, 2, ...): where its round robin starts, or its pin."""
        self._turns += 1
        return self._turns - 1

    def mark_down(self, replica: str, for_s: float = DOWN_FOR_S) -> None:
        """`replica` refused or reset a connection: skip it for a while."""
        self._down_until[replica] = self._clock() + for_s

    def up(self) -> tuple[str, ...]:
        """The current replicas not marked down (all of them when every one is down)."""
        addresses = self.current()
        if not self._down_until:
            return addresses
        now = self._clock()
        for replica, until in list(self._down_until.items()):
            if until <= now:
                del self._down_until[replica]
        live = tuple(a for a in addresses if a not in self._down_until)
        return live or addresses

    @property
    def single(self) -> bool:
        """One IP address, never more: no name to resolve into several replicas later."""
        return len(self.entries) == 1 and not self._names

    @property
    def first(self) -> str:
        """The first entry as written: the control plane's address and the Host/:authority header."""
        return self.entries[0]

    def current(self) -> tuple[str, ...]:
        """The replicas' HOST:PORT addresses now (resolving the names again when due)."""
        if self._names and self._clock() >= self._next_resolve:
            # Set before the lookup: other greenlets calling meanwhile use the old list.
            self._next_resolve = self._clock() + self.resolve_every_s
            self._addresses = self._resolve()
        return self._addresses

    def endpoint(self, replica: str) -> tuple[str, int]:
        """The (host, port) of a replica `current()` named."""
        return self._endpoints[replica]

    def _resolve(self) -> tuple[str, ...]:
        for entry in self._names:
            host, port = self._endpoints[entry]
            try:
                found = self._resolver(host, port)
            except OSError:
                continue  # keep what it stood for (at first the name: the connection then fails)
            if len(found) > 1:
                self._resolved[entry] = tuple(f"{ip}:{port}" for ip in found)
                self._endpoints.update((f"{ip}:{port}", (ip, port)) for ip in found)
            elif found:
                self._resolved[entry] = (entry,)  # one address: keep the name itself
        return tuple(dict.fromkeys(a for entry in self.entries for a in self._resolved.get(entry, (entry,))))


class ReplicaChooser:
    """One client's choice of replica for each request.

    Clients are numbered per address option in the order they first send or connect (a
    pre-flight client, which only asks the control plane, takes no number), unless `start`
    gives the number. Round robin (`pinned=False`): the next replica on every request,
    starting after replica `number` (clients start at consecutive replicas, so the replicas
    share the load from the first request). Pinned (`--balance pin-user`): always replica
    `number` modulo the count (users connect in on_start, so users are spread round robin in
    the order they start); when that replica leaves the DNS answer or is down, the user moves
    to another one that is up.
    """

    def __init__(self, replicas: ReplicaSet, pinned: bool, start: int | None = None) -> None:
        self.replicas = replicas
        self.pinned = pinned
        self._turn = start
        self._pin: str | None = None

    def next(self) -> str:
        if self._turn is None:
            self._turn = self.replicas.take_turn()
        addresses = self.replicas.up()
        if self.pinned:
            if self._pin not in addresses:
                self._pin = addresses[self._turn % len(addresses)]
            return self._pin
        self._turn += 1
        return addresses[self._turn % len(addresses)]

    def failed(self, replica: str) -> None:
        """A connection-level failure at `replica` (see the module docstring)."""
        self.replicas.mark_down(replica)

    def targets(self) -> tuple[str, ...]:
        """The replicas this client will send to (to connect them before the first timed request)."""
        return (self.next(),) if self.pinned else self.replicas.current()
