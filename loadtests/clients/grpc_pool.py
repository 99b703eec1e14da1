"""Which gRPC connection a user's calls go on (`--grpc-connections`): users share connections
up to a limit, and a connection that broke or is going away is reopened on next use, by one
user while the slot's others wait for it; the replaced one closes once its calls have ended.

Example:
    pool = ConnectionPool(("127.0.0.1", 8001), users_per_connection=6)
    call = prepare_call("127.0.0.1:8001", "/inference.GRPCInferenceService/ModelInfer", message, timeout_s=10)
    reply = pool.connection(pool.slot_for_new_user()).unary(call, timeout_s=10)  # raises CallFailure
"""

from __future__ import annotations

import ssl

from gevent.lock import Semaphore

from loadtests.clients.grpc_wire import Connection


class ConnectionPool:
    """Which connection a user's calls go on: `users_per_connection` users share one
    (1: a connection per user; 0: one for the whole process)."""

    def __init__(
        self,
        replica: tuple[str, int],
        users_per_connection: int,
        connect_timeout_s: float = 5.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.tls = tls  # grpcs://: the context every connection's handshake uses
        self.host, self.port = replica
        self.users_per_connection = users_per_connection
        self.connect_timeout_s = connect_timeout_s
        self._slots: list[Connection | None] = []
        self._users: list[int] = []
        self._opening: list[Semaphore] = []  # one opener per slot

    def slot_for_new_user(self) -> int:
        """The slot a new user is given: the first with room, else a new one."""
        limit = self.users_per_connection
        for slot, count in enumerate(self._users):
            if limit == 0 or count < limit:
                self._users[slot] += 1
                return slot
        self._slots.append(None)
        self._users.append(1)
        self._opening.append(Semaphore())
        return len(self._slots) - 1

    def release(self, slot: int) -> None:
        self._users[slot] -= 1
        if self._users[slot] == 0 and self._slots[slot] is not None:
            self._slots[slot].retire()
            self._slots[slot] = None

    def connection(self, slot: int) -> Connection:
        """The slot's connection, opened (again) if it is closed or going away."""
        connection = self._slots[slot]
        if connection is not None and connection.usable:
            return connection
        with self._opening[slot]:  # users arriving meanwhile wait for this opener's connection
            connection = self._slots[slot]
            if connection is None or not connection.usable:
                if connection is not None:
                    connection.retire()
                connection = Connection(self.host, self.port, self.connect_timeout_s, self.tls)
                connection.open()  # raises CallFailure: the next call tries again
                self._slots[slot] = connection
        return connection
