"""Triton's addresses, parsed once when the options are read into a `TritonTarget`.

tritonclient takes "host:port" without a scheme: given "http://host:port", its HTTP client
raises in its constructor (and its destructor then prints a traceback), and its gRPC client
fails on a name lookup of "grpc://host". Refusing a wrong scheme up front gives one clear line.

An option holds one or several HOST:PORT entries (several Triton replicas), with an optional
scheme that applies to every entry: https:// (grpcs://) for TLS, http:// (grpc://) dropped.

    target = TritonTarget.parse("--triton-grpc", "grpcs://a:1, b:2", "grpc")
    target.replicas == (("a", 1), ("b", 2)); target.tls is True
    target.text == "grpcs://a:1,b:2"          # as Settings and config.json spell it
    target.authorities == ("a:1", "b:2")      # the replicas as the recording names them
    target.control_address_of("b:2") == "grpcs://b:2"
"""

from __future__ import annotations

from dataclasses import dataclass

from loadtests.errors import SpecError

MAX_PORT = 65535
# How often DNS names among the replicas are resolved again (seconds): new pods join within
# about this long (loadtests/clients/replicas.py).
RESOLVE_EVERY_S = 30.0
PROTOCOLS = ("http", "grpc")
# TLS schemes (issue 16): every reader of a target (clients, control plane, metrics) speaks TLS.
SECURE_SCHEMES = {"http": "https", "grpc": "grpcs"}


def split_address(option: str, text: str) -> tuple[str, int]:
    """(host, port) of a HOST:PORT option value; raises SpecError naming the option."""
    scheme, separator, rest = text.partition("://")
    if separator:
        raise SpecError(f"{option} '{text}': write HOST:PORT without '{scheme}://' (e.g. {rest or '127.0.0.1:8000'})")
    host, _, port = text.rpartition(":")
    if not host or not port:
        raise SpecError(f"{option} '{text}' is not HOST:PORT (e.g. 127.0.0.1:8000)")
    if not port.isdigit() or not 1 <= int(port) <= MAX_PORT:
        raise SpecError(f"{option} '{text}': port '{port}' is not a number from 1 to {MAX_PORT}")
    return host, int(port)


def _replica_list(option: str, text: str) -> tuple[tuple[str, int], ...]:
    """The (host, port) pairs of one or several comma-separated HOST:PORT entries. Raises
    SpecError naming the option for an empty entry, a malformed one, or one written twice
    (it would get twice the load of the others)."""
    entries = tuple(entry.strip() for entry in text.split(","))
    if not all(entries):
        raise SpecError(f"{option} '{text}': an empty entry (write HOST:PORT[,HOST:PORT...])")
    seen: set[str] = set()
    for entry in entries:
        split_address(option, entry)
        if entry in seen:
            raise SpecError(f"{option} '{text}': {entry} is listed twice")
        seen.add(entry)
    return tuple(split_address(option, entry) for entry in entries)


@dataclass(frozen=True, slots=True)
class TritonTarget:
    """One of Triton's endpoints as an option names it: its protocol, TLS or not, its replicas
    as (host, port) pairs in the order written, and how often names among them are resolved
    again. Built by `parse`, once, when the options are read.

        TritonTarget.parse("--triton-http", "http://127.0.0.1:8000", "http").text == "127.0.0.1:8000"
    """

    protocol: str
    replicas: tuple[tuple[str, int], ...]
    tls: bool = False
    resolve_every_s: float = RESOLVE_EVERY_S

    @classmethod
    def parse(cls, option: str, text: str, protocol: str) -> TritonTarget:
        """An --triton-http/--triton-grpc/--triton-metrics value (`protocol` "http" for the
        metrics); raises SpecError naming the option.

            TritonTarget.parse("--triton-grpc", "grpcs://triton.example:443/", "grpc").text
            == "grpcs://triton.example:443"
        """
        scheme, separator, rest = text.partition("://")
        if not separator:
            return cls(protocol, _replica_list(option, text))
        secure = SECURE_SCHEMES[protocol]
        if scheme.lower() not in (protocol, secure):
            raise SpecError(f"{option} '{text}': the scheme is {protocol}:// or {secure}://, not {scheme}://")
        return cls(protocol, _replica_list(option, rest.rstrip("/")), tls=scheme.lower() == secure)

    @property
    def authorities(self) -> tuple[str, ...]:
        """The replicas as HOST:PORT, as written: the names the recording and the logs use."""
        return tuple(f"{host}:{port}" for host, port in self.replicas)

    @property
    def first(self) -> str:
        """The first replica's HOST:PORT: the control plane's address."""
        host, port = self.replicas[0]
        return f"{host}:{port}"

    @property
    def text(self) -> str:
        """The option's value normalised: 'a:1,b:2', or 'https://a:1,b:2' ('grpcs://...') for TLS."""
        replicas = ",".join(self.authorities)
        return f"{SECURE_SCHEMES[self.protocol]}://{replicas}" if self.tls else replicas

    @property
    def scheme(self) -> str:
        """The scheme a reader of this target speaks: http, https, grpc or grpcs."""
        return SECURE_SCHEMES[self.protocol] if self.tls else self.protocol

    def control_address_of(self, authority: str) -> str:
        """One replica as the control-plane readers (and server_stats.json) name it: HTTP's
        HOST:PORT (https://HOST:PORT), gRPC's grpc://HOST:PORT (grpcs://HOST:PORT)."""
        return authority if self.scheme == "http" else f"{self.scheme}://{authority}"

    @property
    def control_address(self) -> str:
        """The whole target as control_address_of names one replica: 'grpc://a:1,b:2'."""
        return self.control_address_of(",".join(self.authorities))

    def only(self, replica: tuple[str, int]) -> TritonTarget:
        """The same target with one (host, port) replica (a replica's own client)."""
        return TritonTarget(self.protocol, (replica,), self.tls, self.resolve_every_s)

    def __str__(self) -> str:
        return self.text
