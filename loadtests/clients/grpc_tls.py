"""TLS for the gRPC connection (`grpcs://`), as a memory BIO between HTTP/2 frames and the socket.

`grpc_wire.Connection` reads its socket in the hub (an I/O watcher on the raw non-blocking
socket) and writes from greenlets, so a TLS socket object does not fit: a gevent SSLSocket
waits (switches to the hub) when a record is incomplete, which the hub itself cannot do, and
decrypted bytes can sit in its buffer with nothing left to read on the descriptor. Here the
ciphertext stays plain bytes on the same socket: `decrypt` takes what the watcher read and
returns every whole record's plaintext (possibly nothing yet), `encrypt` turns frames into
records before they are written. The handshake runs once, in `open`, on the gevent socket,
and must agree on HTTP/2 through ALPN (gRPC servers, Triton's included, require it).

    tls = TlsSession.connect(gevent_socket, context, "triton.example", timeout_s=5)
    sock.sendall(tls.encrypt(frames)); frames_in = tls.decrypt(sock.recv(65536))
"""

from __future__ import annotations

import ssl
import time

from loadtests.clients.control import tls_reason
from loadtests.clients.grpc_frames import CallFailure

READ_CHUNK = 256 * 1024
ALPN_H2 = ("h2",)


class TlsClosed(ConnectionResetError):
    """The server ended the TLS session (close_notify)."""


class TlsSession:
    """One client TLS session over memory BIOs (see the module docstring)."""

    def __init__(self, context: ssl.SSLContext, host: str) -> None:
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_hostname=host)

    @classmethod
    def connect(cls, sock, context: ssl.SSLContext, host: str, timeout_s: float) -> TlsSession:
        """The handshake on a connected gevent socket; raises CallFailure("connection refused")
        naming the reason (a wrong CA, a refused client certificate, no h2), the socket closed."""
        try:
            return cls._handshake(sock, cls(context, host), timeout_s)
        except (OSError, ssl.SSLError) as error:
            sock.close()
            reason = tls_reason(error) if isinstance(error, ssl.SSLError) else f"{type(error).__name__}: {error}"
            raise CallFailure("connection refused", f"TLS handshake failed: {reason}") from None

    @staticmethod
    def _handshake(sock, session: TlsSession, timeout_s: float) -> TlsSession:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                session._tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(session._outgoing.read())
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                data = sock.recv(READ_CHUNK)
                if not data:
                    raise TlsClosed("connection closed during the TLS handshake") from None
                session._incoming.write(data)
        sock.sendall(session._outgoing.read())
        sock.settimeout(None)
        if session._tls.selected_alpn_protocol() != "h2":
            raise ssl.SSLError("the server did not agree to HTTP/2 (ALPN h2), which gRPC needs")
        return session

    def encrypt(self, data: bytes) -> bytes:
        self._tls.write(data)
        return self._outgoing.read()

    def decrypt(self, data: bytes) -> bytes | None:
        """The plaintext of every complete record so far (None: none yet); raises CallFailure."""
        self._incoming.write(data)
        chunks = []
        while True:
            try:
                chunk = self._tls.read(READ_CHUNK)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                raise CallFailure("connection reset", "TLS session closed by the server") from None
            except ssl.SSLError as error:
                raise CallFailure("connection reset", f"TLS: {tls_reason(error)}") from None
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks) or None
