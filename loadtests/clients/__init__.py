"""The only package that knows tritonclient and the wire: one module per protocol.

client = open_client("grpc", settings, environment.events.request, process.connections)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadtests.clients.base import PreparedRequest, RequestFailure, TritonClient
from loadtests.clients.connections import Connections

if TYPE_CHECKING:
    from loadtests.config.settings import Settings

PROTOCOLS = ("http", "grpc")
# open_client's names for the clients that stream each request (a decoupled model's endpoint:
# grpc_stream.py, http_stream.py's generate_stream); they report as "grpc" and "http".
GRPC_STREAM = "grpc-stream"
HTTP_STREAM = "http-stream"
STREAMING = {"grpc": GRPC_STREAM, "http": HTTP_STREAM}


def open_client(protocol: str, settings: Settings, request_event, connections: Connections) -> TritonClient:
    """A new client for one user (a client is never shared between greenlets); `connections`
    are its process's (gRPC pools and the replicas of each address, see connections.py)."""
    if protocol in ("http", HTTP_STREAM):
        from loadtests.clients.http import HttpClient
        from loadtests.clients.http_stream import HttpStreamClient

        client = (HttpStreamClient if protocol == HTTP_STREAM else HttpClient)(
            settings.triton_http,
            settings.request_timeout_s,
            request_event,
            binary=not settings.http_json,
            connections=connections,
            balance=settings.balance,
            security=settings.security,
        )
    elif protocol in ("grpc", GRPC_STREAM):
        from loadtests.clients.grpc import GrpcClient
        from loadtests.clients.grpc_stream import GrpcStreamClient

        client = (GrpcStreamClient if protocol == GRPC_STREAM else GrpcClient)(
            settings.triton_grpc,
            settings.request_timeout_s,
            request_event,
            connections,
            users_per_connection=settings.grpc_users_per_connection,
            balance=settings.balance,
            security=settings.security,
        )
    else:
        raise ValueError(f"unknown protocol {protocol!r}")
    if settings.trace_sample is not None:  # requests carry an id Triton's trace repeats
        client.trace_ids = connections.trace_ids
        # A receiver: Triton in OpenTelemetry mode traces the requests the client samples.
        otlp = bool(settings.trace_receiver)
        connections.trace_ids.configure(settings.trace_sample.triton_rate if otlp else 1, in_header=otlp)
    return client


__all__ = [
    "GRPC_STREAM",
    "HTTP_STREAM",
    "PROTOCOLS",
    "STREAMING",
    "Connections",
    "PreparedRequest",
    "RequestFailure",
    "TritonClient",
    "open_client",
]
