"""Test support for TLS (issue 16, item 2): a throw-away PKI made with the openssl CLI, and a
TLS-terminating proxy that checks a required header on every request.

Triton's HTTP endpoint has no TLS, so HTTPS is tested through `TlsProxy(mode="http")` in front
of it; gRPC through `TlsProxy(mode="grpc")` (ALPN h2, request headers decoded with HPACK) in
front of Triton's plain gRPC port. The proxy is a test fixture, not a product: threads, one
upstream connection per client connection, nothing but what the assertions need.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from hpack import Decoder

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


@dataclass(frozen=True)
class Pki:
    """A CA, a server certificate for 127.0.0.1/localhost, a client certificate, and an unrelated CA."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(directory: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=directory)  # fmt: skip


def _signed(directory: Path, name: str, ca: str, extensions: str) -> None:
    (directory / f"{name}.ext").write_text(extensions)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
             "-out", f"{name}.csr", cwd=directory)  # fmt: skip
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=directory)  # fmt: skip


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    _ca(directory, "test-ca")
    _ca(directory, "other-ca")
    _signed(directory, "server", "test-ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _signed(directory, "client", "test-ca", "extendedKeyUsage=clientAuth\n")
    return Pki(
        ca=directory / "test-ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        other_ca=directory / "other-ca.pem",
    )


@dataclass
class ProxyCounts:
    """What the proxy saw: requests (HTTP) or streams (gRPC) with and without the header."""

    with_header: int = 0
    without_header: int = 0
    handshakes_failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, ok: bool) -> None:
        with self.lock:
            if ok:
                self.with_header += 1
            else:
                self.without_header += 1


class TlsProxy:
    """TLS on 127.0.0.1:<port> in front of `upstream` ("host:port"), requiring `header` (name, value).

    mode "http": requests without the header get 403 and are not forwarded. mode "grpc": ALPN h2;
    streams are counted with or without the header (and forwarded either way).
    `client_ca` requires a client certificate signed by it (mutual TLS).
    """

    def __init__(self, upstream: str, pki: Pki, header: tuple[str, str], mode: str, client_ca: Path | None = None):
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.header = (header[0].lower(), header[1])
        self.mode = mode
        self.counts = ProxyCounts()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(pki.server_cert, pki.server_key)
        if mode == "grpc":
            self.context.set_alpn_protocols(["h2"])
        if client_ca is not None:
            self.context.verify_mode = ssl.CERT_REQUIRED
            self.context.load_verify_locations(client_ca)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            client = self.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            with self.counts.lock:
                self.counts.handshakes_failed += 1
            raw.close()
            return
        upstream = socket.create_connection(self.upstream)
        parser = _HttpRequests(self) if self.mode == "http" else _Http2Headers(self)
        try:
            # One thread per connection and select(): an SSL socket must not be read and
            # written from two threads at once.
            while True:
                readable = [client] if client.pending() else select.select([client, upstream], [], [], 30)[0]
                if not readable:
                    return
                if upstream in readable:
                    data = upstream.recv(65536)
                    if not data:
                        return
                    client.sendall(data)
                if client in readable:
                    data = client.recv(65536)
                    forward = parser.feed(data) if data else None
                    if forward is None:
                        if data:  # refused: a 403, then close
                            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        return
                    upstream.sendall(forward)
        except (OSError, ValueError):
            pass
        finally:
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.close()


class _HttpRequests:
    """HTTP/1.1 requests from the client: complete ones are checked and forwarded."""

    def __init__(self, proxy: TlsProxy) -> None:
        self.proxy, self.buffer = proxy, b""

    def feed(self, data: bytes) -> bytes | None:
        self.buffer += data
        out = b""
        while b"\r\n\r\n" in self.buffer:
            head, _, rest = self.buffer.partition(b"\r\n\r\n")
            fields = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in head.decode("latin-1").split("\r\n")[1:])
            }
            length = int(fields.get("content-length", "0"))
            if len(rest) < length:
                break
            ok = fields.get(self.proxy.header[0]) == self.proxy.header[1]
            self.proxy.counts.add(ok)
            if not ok:
                return None
            out += head + b"\r\n\r\n" + rest[:length]
            self.buffer = rest[length:]
        return out


class _Http2Headers:
    """HTTP/2 frames from the client, forwarded as they are; each request's headers decoded and checked."""

    def __init__(self, proxy: TlsProxy) -> None:
        self.proxy, self.buffer, self.decoder, self.block = proxy, b"", Decoder(), b""
        self.preface_seen = False

    def feed(self, data: bytes) -> bytes:
        self.buffer += data
        if not self.preface_seen:
            if len(self.buffer) < len(H2_PREFACE):
                return b""
            self.preface_seen, self.buffer = True, self.buffer[len(H2_PREFACE) :]
            return H2_PREFACE + self.feed(b"")
        out = b""
        while len(self.buffer) >= 9:
            length = int.from_bytes(self.buffer[:3], "big")
            if len(self.buffer) < 9 + length:
                break
            frame_type, flags = self.buffer[3], self.buffer[4]
            payload = self.buffer[9 : 9 + length]
            out += self.buffer[: 9 + length]
            self.buffer = self.buffer[9 + length :]
            self._frame(frame_type, flags, payload)
        return out

    def _frame(self, frame_type: int, flags: int, payload: bytes) -> None:
        if frame_type == 0x1:  # HEADERS
            if flags & 0x8:  # PADDED
                payload = payload[1 : len(payload) - payload[0]]
            if flags & 0x20:  # PRIORITY
                payload = payload[5:]
            self.block = payload
        elif frame_type == 0x9:  # CONTINUATION
            self.block += payload
        else:
            return
        if flags & 0x4:  # END_HEADERS
            headers = dict(self.decoder.decode(self.block, raw=False))
            self.proxy.counts.add(headers.get(self.proxy.header[0]) == self.proxy.header[1])
