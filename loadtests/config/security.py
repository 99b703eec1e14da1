"""How the suite's connections to Triton authenticate: TLS files and extra request headers.

One frozen `ConnectionSecurity` per run (`Settings.security`), handed to every client and to
the control-plane reader, so inference requests, pre-flight, statistics and metrics all
use the same CA, client certificate and headers.

    security = ConnectionSecurity(tls=TlsFiles(ca=Path("ca.pem")), headers=(("authorization", "Bearer x"),))
    security.context(alpn=("h2",))      # an ssl.SSLContext, built once per ALPN list

Header values come from the environment or a file so that a token is never an option's text
(options are written to config.json and shown in Locust's web UI):

    parse_header("Authorization: env:TRITON_TOKEN")       # the variable's value
    parse_header("X-Api-Key: file:/var/run/secrets/key")  # the file's content, trailing newline cut
    parse_header("X-Route: canary")                       # a literal (redacted in config.json)
    redact_header("X-Api-Key: abc")                       # "X-Api-Key: <redacted>"
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from loadtests.errors import SpecError

ENV_PREFIX = "env:"
FILE_PREFIX = "file:"
REDACTED = "<redacted>"
# RFC 9110's token characters: anything else would break the HTTP request we frame ourselves.
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Headers the clients write themselves (framing, gRPC's own), or that HTTP/2 forbids.
RESERVED_HEADERS = frozenset(
    {"host", "content-length", "content-type", "transfer-encoding", "connection", "te", "upgrade", "keep-alive"}
)


@dataclass(frozen=True)
class TlsFiles:
    """--ssl-ca, --ssl-cert, --ssl-key and --ssl-insecure (for testing only: no verification)."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    insecure: bool = False


@dataclass(frozen=True)
class ConnectionSecurity:
    """TLS files and headers (lower-cased names, resolved values) for every connection to Triton."""

    tls: TlsFiles = field(default_factory=TlsFiles)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # values may be tokens: never in a repr

    def context(self, alpn: tuple[str, ...] = (), context_class: type[ssl.SSLContext] | None = None) -> ssl.SSLContext:
        """The client SSLContext, built once per (ALPN list, class): loading a CA bundle costs
        milliseconds. `context_class` gevent.ssl.SSLContext gives cooperative sockets from
        wrap_socket whether or not the process is monkey-patched."""
        key = (alpn, context_class)
        if key not in self._contexts:
            self._contexts[key] = client_context(self.tls, alpn, context_class or ssl.SSLContext)
        return self._contexts[key]

    @cached_property
    def _contexts(self) -> dict[tuple, ssl.SSLContext]:
        return {}


def client_context(
    tls: TlsFiles, alpn: tuple[str, ...] = (), context_class: type[ssl.SSLContext] = ssl.SSLContext
) -> ssl.SSLContext:
    """An SSLContext for the given files; raises SpecError naming the option whose file is bad."""
    context = context_class(ssl.PROTOCOL_TLS_CLIENT)  # verifies the certificate and the host name
    if tls.ca is None:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if tls.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if tls.ca is not None:
        try:
            context.load_verify_locations(cafile=str(tls.ca))
        except (OSError, ssl.SSLError) as error:
            raise SpecError(f"--ssl-ca {tls.ca}: {_ssl_reason(error)}") from None
    if tls.key is not None and tls.cert is None:
        raise SpecError("--ssl-key needs --ssl-cert (the client certificate it belongs to)")
    if tls.cert is not None:
        try:
            context.load_cert_chain(str(tls.cert), str(tls.key) if tls.key else None)
        except (OSError, ssl.SSLError) as error:
            raise SpecError(f"--ssl-cert {tls.cert}: {_ssl_reason(error)}") from None
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context


def _ssl_reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or str(error)
    return " ".join(str(reason).split())


def parse_header(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """("name" lower-cased, value) of a --header "Name: value"; raises SpecError (never showing a value)."""
    name, separator, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not separator or not HEADER_NAME.match(name):
        raise SpecError(f"--header '{redact_header(text)}' is not 'Name: value' (e.g. 'Authorization: env:TOKEN')")
    lowered = name.lower()
    if lowered in RESERVED_HEADERS or lowered.startswith("grpc-"):
        raise SpecError(f"--header {name}: the client sets this header itself")
    value = _resolve(name, value, os.environ if environ is None else environ)
    if "\r" in value or "\n" in value or "\0" in value:
        raise SpecError(f"--header {name}: the value holds a line break or NUL")
    return lowered, value


def _resolve(name: str, value: str, environ: Mapping[str, str]) -> str:
    if value.startswith(ENV_PREFIX):
        variable = value[len(ENV_PREFIX) :]
        if variable not in environ:
            raise SpecError(f"--header {name}: environment variable {variable} is not set")
        return environ[variable]
    if value.startswith(FILE_PREFIX):
        path = Path(value[len(FILE_PREFIX) :]).expanduser()
        try:
            return path.read_text().rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as error:
            raise SpecError(f"--header {name}: cannot read {path} ({type(error).__name__})") from None
    return value


def redact_header(text: str) -> str:
    """A --header as it may be written or shown: references kept, a literal value replaced."""
    name, separator, value = str(text).partition(":")
    value = value.strip()
    if not separator or value.startswith((ENV_PREFIX, FILE_PREFIX)):
        return str(text) if separator else REDACTED
    return f"{name.strip()}: {REDACTED}"
