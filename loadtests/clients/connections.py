"""What the clients of one process share: gRPC connection pools and the replicas of each address.

Owned by the process (`loadtests.run.process.SuiteProcess.connections`) and handed to every
client through `open_client`, never kept in a module: two Environments in one interpreter
(tests, the web UI's restarts) each get their own.

    connections = Connections()
    pool = connections.grpc_pool("10.4.0.7:8001", users_per_connection=6)
    chooser = connections.chooser("triton-headless:8001", "round-robin")   # a client's next replica
"""

from __future__ import annotations

from loadtests.clients.grpc_pool import ConnectionPool
from loadtests.clients.grpc_tls import ALPN_H2
from loadtests.clients.replicas import PIN_USER, RESOLVE_EVERY_S, ROUND_ROBIN, ReplicaChooser, ReplicaSet
from loadtests.config.security import ConnectionSecurity

CONNECT_TIMEOUT_S = 5.0


class Connections:
    """One process's gRPC pools (one per replica address and `--grpc-connections` policy) and
    replica sets (one per address option text)."""

    def __init__(self, resolve_every_s: float = RESOLVE_EVERY_S) -> None:
        self.resolve_every_s = resolve_every_s
        self._pools: dict[tuple[str, int, ConnectionSecurity | None], ConnectionPool] = {}
        self._replicas: dict[str, ReplicaSet] = {}

    def grpc_pool(
        self, address: str, users_per_connection: int, tls: ConnectionSecurity | None = None
    ) -> ConnectionPool:
        """The pool of one replica address; `tls` (grpcs://): every connection's handshake uses it."""
        key = (address, users_per_connection, tls)
        if key not in self._pools:
            context = tls.context(ALPN_H2) if tls is not None else None
            self._pools[key] = ConnectionPool(address, users_per_connection, CONNECT_TIMEOUT_S, context)
        return self._pools[key]

    def replicas(self, text: str) -> ReplicaSet:
        """The replicas of an address option (resolved once per process, then every 30 s)."""
        if text not in self._replicas:
            self._replicas[text] = ReplicaSet(text, self.resolve_every_s)
        return self._replicas[text]

    def chooser(self, text: str, balance: str = ROUND_ROBIN) -> ReplicaChooser:
        """A new client's replica choice (`--balance`); numbered when it first sends (replicas.py)."""
        return ReplicaChooser(self.replicas(text), pinned=balance == PIN_USER)
