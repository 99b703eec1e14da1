"""HOST:PORT addresses of Triton's endpoints, checked when the options are read.

tritonclient takes "host:port" without a scheme: given "http://host:port", its HTTP client
raises in its constructor (and its destructor then prints a traceback), and its gRPC client
fails on a name lookup of "grpc://host". Refusing the form up front gives one clear line.

    check_address("--triton-http", "127.0.0.1:8000") == "127.0.0.1:8000"
"""

from __future__ import annotations

from loadtests.errors import SpecError

MAX_PORT = 65535


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


# TLS schemes (issue 16): the address keeps its scheme when it has one of these, so that every
# reader of it (clients, control plane, metrics) knows to speak TLS; a plain scheme is dropped.
SECURE_SCHEMES = {"http": "https", "grpc": "grpcs"}


def check_endpoint(option: str, text: str, protocol: str) -> str:
    """A --triton-http/--triton-grpc/--triton-metrics value normalised: "host:port", or
    "https://host:port" ("grpcs://host:port") for TLS; raises SpecError naming the option.

        check_endpoint("--triton-grpc", "grpcs://triton.example:443", "grpc") == "grpcs://triton.example:443"
        check_endpoint("--triton-http", "http://127.0.0.1:8000", "http") == "127.0.0.1:8000"
    """
    scheme, separator, rest = text.partition("://")
    if not separator:
        return check_address_list(option, text)
    secure = SECURE_SCHEMES[protocol]
    if scheme.lower() not in (protocol, secure):
        raise SpecError(f"{option} '{text}': the scheme is {protocol}:// or {secure}://, not {scheme}://")
    rest = check_address_list(option, rest.rstrip("/"))  # the scheme applies to every replica listed
    return f"{secure}://{rest}" if scheme.lower() == secure else rest


def endpoint_tls(address: str) -> tuple[str, bool]:
    """("host:port", TLS or not) of an address check_endpoint returned."""
    scheme, separator, rest = address.partition("://")
    return (rest, scheme in SECURE_SCHEMES.values()) if separator else (address, False)


def check_address(option: str, text: str) -> str:
    """The address itself, once split_address accepts it."""
    split_address(option, text)
    return text


def address_list(text: str) -> tuple[str, ...]:
    """The entries of a comma-separated address option, as written: 'a:1, b:2' -> ('a:1', 'b:2')."""
    return tuple(entry.strip() for entry in text.split(","))


def check_address_list(option: str, text: str) -> str:
    """One or several HOST:PORT entries, comma-separated (several Triton replicas); returns
    them normalised ('a:1,b:2'). Raises SpecError naming the option for an empty entry, a
    malformed one, or one written twice (it would get twice the load of the others).

        check_address_list("--triton-grpc", "10.0.0.1:8001, 10.0.0.2:8001") == "10.0.0.1:8001,10.0.0.2:8001"
    """
    entries = address_list(text)
    if not all(entries):
        raise SpecError(f"{option} '{text}': an empty entry (write HOST:PORT[,HOST:PORT...])")
    seen: set[str] = set()
    for entry in entries:
        split_address(option, entry)
        if entry in seen:
            raise SpecError(f"{option} '{text}': {entry} is listed twice")
        seen.add(entry)
    return ",".join(entries)
