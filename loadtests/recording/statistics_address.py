"""Where Triton's statistics are read: its HTTP address, or its gRPC one for a target reached
over gRPC only. Chosen in pre-flight, before any load, by asking for the run's models.

- `--triton-grpc` given and `--triton-http` left at its default: gRPC first (a user who
  points the suite at their Triton's gRPC port has not said where its HTTP port is);
- otherwise HTTP first; when it does not answer, gRPC (a warning says so);
- neither answers: one error line saying what to type, exit 2, nothing sent.

    address = statistics_address(settings, ["identity"])   # "127.0.0.1:8000" or "grpc://10.0.0.5:8001"
"""

from __future__ import annotations

import logging

from loadtests.addresses import address_list, endpoint_tls
from loadtests.clients.control import DEFAULT_TIMEOUT_S
from loadtests.clients.control_grpc import open_control
from loadtests.errors import ServerError
from loadtests.settings import DEFAULT_TRITON_GRPC, DEFAULT_TRITON_HTTP, Settings

logger = logging.getLogger(__name__)


def grpc_statistics_address(triton_grpc: str) -> str:
    """--triton-grpc as the statistics reader's address: grpc://HOST:PORT (grpcs:// kept)."""
    return triton_grpc if triton_grpc.startswith("grpcs://") else f"grpc://{triton_grpc}"


def candidates(settings: Settings) -> list[str]:
    """The statistics addresses to try, in order (see the module docstring)."""
    grpc = grpc_statistics_address(settings.triton_grpc)
    only_grpc = settings.triton_http == DEFAULT_TRITON_HTTP and settings.triton_grpc != DEFAULT_TRITON_GRPC
    return [grpc, settings.triton_http] if only_grpc else [settings.triton_http, grpc]


def first_replica(address: str) -> str:
    """The first address of a list, its scheme kept: 'grpc://a:1,b:2' -> 'grpc://a:1'."""
    authority, _tls = endpoint_tls(address)
    scheme, separator, _rest = address.partition("://")
    return f"{scheme}://" * bool(separator) + address_list(authority)[0]


def statistics_address(settings: Settings, models: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> str:
    """The first candidate whose Triton answers the models' statistics; raises ServerError."""
    errors = []
    for address in candidates(settings):
        try:
            open_control(first_replica(address), timeout_s=timeout_s, security=settings.security).statistics(models)
        except ServerError as error:
            errors.append(str(error))
            continue
        if errors:
            logger.warning("Triton's statistics are read at %s instead: %s", address, errors[0])
        return address
    raise ServerError(
        f"cannot read Triton's statistics of {', '.join(models)} (the server-side numbers): "
        f"{'; '.join(errors)}; give --triton-http HOST:PORT (Triton's HTTP port, 8000 by default) or "
        "--triton-grpc HOST:PORT (its gRPC port, 8001) of the Triton that serves them (a server that "
        "restricts its statistics API, e.g. behind a token, takes --header 'NAME: env:VAR')"
    )
