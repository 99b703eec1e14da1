"""The only package that knows tritonclient and the wire: one module per protocol.

client = open_client("grpc", settings, environment.events.request)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadtests.clients.base import PreparedRequest, RequestFailure, TritonClient

if TYPE_CHECKING:
    from loadtests.settings import Settings

PROTOCOLS = ("http", "grpc")


def open_client(protocol: str, settings: Settings, request_event) -> TritonClient:
    """A new connection for one user (tritonclient connections are not shared between greenlets)."""
    if protocol == "http":
        from loadtests.clients.http import HttpClient

        return HttpClient(
            settings.triton_http,
            settings.request_timeout_s,
            request_event,
            binary=not settings.http_json,
            security=settings.security,
        )
    if protocol == "grpc":
        from loadtests.clients.grpc import GrpcClient

        return GrpcClient(
            settings.triton_grpc,
            settings.request_timeout_s,
            request_event,
            users_per_connection=settings.grpc_users_per_connection,
            security=settings.security,
        )
    raise ValueError(f"unknown protocol {protocol!r}")


__all__ = ["PROTOCOLS", "PreparedRequest", "RequestFailure", "TritonClient", "open_client"]
