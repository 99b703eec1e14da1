"""What the clients of one process share: gRPC connection pools and the replicas of each address.

Owned by the process (`loadtests.run.process.SuiteProcess.connections`) and handed to every
client through `open_client`, never kept in a module: two Environments in one interpreter
(tests, the web UI's restarts) each get their own.

    connections = Connections()
    pool = connections.grpc_pool(("10.4.0.7", 8001), users_per_connection=6)
    chooser = connections.chooser(settings.triton_grpc, "round-robin")   # a client's next replica
"""

from __future__ import annotations

from loadtests.clients.grpc_pool import ConnectionPool
from loadtests.clients.grpc_tls import ALPN_H2
from loadtests.clients.replicas import PIN_USER, ROUND_ROBIN, ReplicaChooser, ReplicaSet
from loadtests.clients.trace_ids import TraceIds
from loadtests.config.addresses import TritonTarget
from loadtests.config.security import ConnectionSecurity

CONNECT_TIMEOUT_S = 5.0


class Connections:
    """One process's gRPC pools (one per replica address and `--grpc-connections` policy) and
    replica sets (one per target's replicas)."""

    def __init__(self) -> None:
        self._pools: dict[tuple[tuple[str, int], int, ConnectionSecurity | None], ConnectionPool] = {}
        self._replicas: dict[tuple[tuple[str, int], ...], ReplicaSet] = {}
        # --trace-sample: the ids this process's requests carry (clients/trace_ids.py).
        self.trace_ids = TraceIds()

    def grpc_pool(
        self, replica: tuple[str, int], users_per_connection: int, tls: ConnectionSecurity | None = None
    ) -> ConnectionPool:
        """The pool of one (host, port) replica; `tls` (grpcs://): every connection's handshake uses it."""
        key = (replica, users_per_connection, tls)
        if key not in self._pools:
            context = tls.context(ALPN_H2) if tls is not None else None
            self._pools[key] = ConnectionPool(replica, users_per_connection, CONNECT_TIMEOUT_S, context)
        return self._pools[key]

    def replicas(self, target: TritonTarget) -> ReplicaSet:
        """The replicas of a target (resolved once per process, then every `target.resolve_every_s`)."""
        if target.replicas not in self._replicas:
            self._replicas[target.replicas] = ReplicaSet(target)
        return self._replicas[target.replicas]

    def chooser(self, target: TritonTarget, balance: str = ROUND_ROBIN) -> ReplicaChooser:
        """A new client's replica choice (`--balance`); numbered when it first sends (replicas.py)."""
        return ReplicaChooser(self.replicas(target), pinned=balance == PIN_USER)
