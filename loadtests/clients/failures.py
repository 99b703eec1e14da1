"""What a failed request is called: one vocabulary for HTTP and gRPC.

A failure's name is what Locust's failure table, `summary.json`'s `failures_by_class` and the
reports show. A server's answer is named "<class>: <protocol code>" ("overloaded (queue full):
HTTP 503", "overloaded (queue full): gRPC UNAVAILABLE"), so the same event has the same class on
both protocols and the code says what the wire carried; what the client saw itself has a bare
name ("timeout", "connection refused"). The server's full message goes in the failure's
`detail`, logged once per name.

    class                       HTTP status          gRPC status                         backs off
    overloaded (queue full)     503 + Triton's       UNAVAILABLE + "Exceeds maximum          no
                                "Exceeds maximum     queue size"
                                queue size"
    overloaded (queue timeout)  503 + "Request       UNAVAILABLE + "Request timeout          no
                                timeout expired"     expired"
    overloaded                  429                  RESOURCE_EXHAUSTED                      no
    unavailable                 502, 503 (other)     UNAVAILABLE (other), REFUSED_STREAM     yes
    server stopping             400/404 "unknown     NOT_FOUND "unknown model",              yes
                                model"               CANCELLED (by the server)
    timeout                     408, 504; the        DEADLINE_EXCEEDED (named "timeout":     no
                                client's deadline    the client's own deadline)
    invalid request             other 4xx            INVALID_ARGUMENT, NOT_FOUND (other),    no
                                                     FAILED_PRECONDITION, OUT_OF_RANGE,
                                                     UNIMPLEMENTED, ALREADY_EXISTS
    access denied               401, 403             UNAUTHENTICATED, PERMISSION_DENIED      no
    server error                500, other 5xx       INTERNAL, UNKNOWN, DATA_LOSS, ABORTED   no
    connection refused          TCP connect or TLS handshake failed (nothing reached a server)  yes
    connection reset            the connection closed or broke under the request            yes
    connection error            any other socket error                                      yes
    bad response                a response the protocol does not allow                      no
    stream broken               a streamed request's connection broke or was reset after    yes
                                its first response (the server had the request)
    interrupted                 the run stopped while the request was in flight             no
    validation: <what>          the response arrived but is wrong (--validate-responses)    no

"Backs off": a closed-loop user pauses before its next request (1 ms doubling to 100 ms, reset by
any other outcome) and the replica is set aside for a moment (replicas.py): a server that is not
there or is going away is measured, not hammered. Overload is never backed off: it is what a
capacity search or a spike is looking for, and both protocols must meet it at the same rate.

A streamed request (a decoupled model, clients/grpc_stream.py and http_stream.py) can also fail
inside its stream: Triton sends a response carrying `error_message` (gRPC) or an `error` event
(HTTP generate_stream, after its 200) instead of a status. It is classed by its message like any
answer, with the code "gRPC stream error" / "HTTP stream error" (before any response) or
"... stream error after responses" (the model failed mid-stream).

Triton answers a full queue before counting the request (its statistics and
`nv_inference_request_failure` do not count "queue full"), but counts a queue timeout as a
failed request (reason REJECTED): `counted_by_triton` says which, for reconciling the client's
counts with Triton's. docs/reference/failures.md is the user's copy of this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class FailureClass:
    """A kind of failure: what happened, whether the user backs off, whether Triton counted it.

    `sent`: the request's bytes left the host (a refused connection sent none).
    `counted_by_triton`: Triton's model statistics count the request (success or fail).
    """

    name: str
    backs_off: bool
    sent: bool = True
    counted_by_triton: bool = True


QUEUE_FULL = FailureClass("overloaded (queue full)", backs_off=False, counted_by_triton=False)
QUEUE_TIMEOUT = FailureClass("overloaded (queue timeout)", backs_off=False)
OVERLOADED = FailureClass("overloaded", backs_off=False, counted_by_triton=False)
UNAVAILABLE = FailureClass("unavailable", backs_off=True, counted_by_triton=False)
SERVER_STOPPING = FailureClass("server stopping", backs_off=True, counted_by_triton=False)
TIMEOUT = FailureClass("timeout", backs_off=False)
INVALID_REQUEST = FailureClass("invalid request", backs_off=False)
ACCESS_DENIED = FailureClass("access denied", backs_off=False, counted_by_triton=False)
SERVER_ERROR = FailureClass("server error", backs_off=False)
CONNECTION_REFUSED = FailureClass("connection refused", backs_off=True, sent=False, counted_by_triton=False)
CONNECTION_RESET = FailureClass("connection reset", backs_off=True, sent=False, counted_by_triton=False)
CONNECTION_ERROR = FailureClass("connection error", backs_off=True, sent=False, counted_by_triton=False)
BAD_RESPONSE = FailureClass("bad response", backs_off=False)
STREAM_BROKEN = FailureClass("stream broken", backs_off=True)
INTERRUPTED = FailureClass("interrupted", backs_off=False)
VALIDATION = FailureClass("validation", backs_off=False)
SEQUENCE_STATE = FailureClass("sequence state", backs_off=False)

CLASSES = MappingProxyType(
    {
        c.name: c
        for c in (
            QUEUE_FULL,
            QUEUE_TIMEOUT,
            OVERLOADED,
            UNAVAILABLE,
            SERVER_STOPPING,
            TIMEOUT,
            INVALID_REQUEST,
            ACCESS_DENIED,
            SERVER_ERROR,
            CONNECTION_REFUSED,
            CONNECTION_RESET,
            CONNECTION_ERROR,
            BAD_RESPONSE,
            STREAM_BROKEN,
            INTERRUPTED,
            VALIDATION,
            SEQUENCE_STATE,
        )
    }
)

# Triton's own words for its overload answers (the same text over HTTP and gRPC).
QUEUE_FULL_MESSAGE = "exceeds maximum queue size"
QUEUE_TIMEOUT_MESSAGE = "request timeout expired"
# A model Triton does not have (any more): "Request for unknown model: 'm' is not found" (HTTP
# 404) or "... has no available versions" (gRPC NOT_FOUND, once Triton has begun to stop).
UNKNOWN_MODEL_MESSAGE = "unknown model"


class RequestFailure(Exception):
    """A failed request, named for Locust's failure table.

    `str(failure)` is the stable, low-cardinality name (see the module's table); the server's
    full message goes in `detail` and is logged once per name. `failure_class` says what it
    means for back-off and reconciliation.

    Example: RequestFailure("invalid request: HTTP 400", detail="inference request batch-size must be <= 16")
    """

    def __init__(self, name: str, detail: str = "", failure_class: FailureClass | None = None, code: str = "") -> None:
        super().__init__(name)
        self.name = name
        self.detail = detail
        self.failure_class = failure_class or class_of(name)
        self.code = code  # the server's status ("HTTP 503", "gRPC UNAVAILABLE") when a server answered


def class_of(name: str) -> FailureClass:
    """The class of a failure name, as recorded ("overloaded (queue full): HTTP 503" ->
    QUEUE_FULL); names the suite never writes are server errors."""
    head = name.split(":", 1)[0]
    return CLASSES.get(head, SERVER_ERROR)


def backs_off(name: str) -> bool:
    return class_of(name).backs_off


def sent(name: str) -> bool:
    """Whether a request that failed so put its bytes on the wire."""
    return class_of(name).sent


def counted_by_triton(name: str) -> bool:
    return class_of(name).counted_by_triton


def _server_answer(failure_class: FailureClass, code: str, message: str) -> RequestFailure:
    return RequestFailure(f"{failure_class.name}: {code}", message, failure_class, code)


def _overload(message: str) -> FailureClass | None:
    lowered = message.lower()
    if QUEUE_FULL_MESSAGE in lowered:
        return QUEUE_FULL
    if QUEUE_TIMEOUT_MESSAGE in lowered:
        return QUEUE_TIMEOUT
    return None


def http_failure(status: int, message: str) -> RequestFailure:
    """A non-200 HTTP answer to an inference request, classed by status and Triton's message.

    Example: http_failure(503, "Exceeds maximum queue size").name == "overloaded (queue full): HTTP 503"
    """
    return _server_answer(_http_class(status, message), f"HTTP {status}", message)


def _http_class(status: int, message: str) -> FailureClass:
    if status == 503:
        return _overload(message) or UNAVAILABLE
    if status == 429:
        return _overload(message) or OVERLOADED
    if status == 502:
        return UNAVAILABLE
    if status in (408, 504):
        return TIMEOUT
    if status in (400, 404) and UNKNOWN_MODEL_MESSAGE in message.lower():
        # Pre-flight found the model: mid-run, Triton unloaded it (it does so when it stops).
        return SERVER_STOPPING
    if status in (401, 403):
        return ACCESS_DENIED
    if 400 <= status < 500:
        return INVALID_REQUEST
    return SERVER_ERROR


_GRPC_CLASSES = MappingProxyType(
    {
        "CANCELLED": SERVER_STOPPING,  # the suite never reports its own cancels: the server cancelled
        "UNKNOWN": SERVER_ERROR,
        "INVALID_ARGUMENT": INVALID_REQUEST,
        "DEADLINE_EXCEEDED": TIMEOUT,
        "NOT_FOUND": INVALID_REQUEST,
        "ALREADY_EXISTS": INVALID_REQUEST,
        "PERMISSION_DENIED": ACCESS_DENIED,
        "RESOURCE_EXHAUSTED": OVERLOADED,
        "FAILED_PRECONDITION": INVALID_REQUEST,
        "ABORTED": SERVER_ERROR,
        "OUT_OF_RANGE": INVALID_REQUEST,
        "UNIMPLEMENTED": INVALID_REQUEST,
        "INTERNAL": SERVER_ERROR,
        "UNAVAILABLE": UNAVAILABLE,
        "DATA_LOSS": SERVER_ERROR,
        "UNAUTHENTICATED": ACCESS_DENIED,
    }
)


def grpc_failure(status: str, message: str) -> RequestFailure:
    """A gRPC status (its name, "UNAVAILABLE") other than OK, classed by code and Triton's message.

    Example: grpc_failure("UNAVAILABLE", "Exceeds maximum queue size").name
    == "overloaded (queue full): gRPC UNAVAILABLE"
    """
    failure_class = _GRPC_CLASSES.get(status, SERVER_ERROR)
    if failure_class is TIMEOUT:
        # The server enforces the call's own deadline (grpc-timeout): the same event as the
        # client's timer firing first, so the same name.
        return RequestFailure(TIMEOUT.name, message, TIMEOUT, f"gRPC {status}")
    if status in ("UNAVAILABLE", "RESOURCE_EXHAUSTED"):
        failure_class = _overload(message) or failure_class
    elif status == "NOT_FOUND" and UNKNOWN_MODEL_MESSAGE in message.lower():
        failure_class = SERVER_STOPPING
    return _server_answer(failure_class, f"gRPC {status}", message)


def stream_error(message: str, responses: int, protocol: str = "gRPC") -> RequestFailure:
    """An error inside a streamed request's stream (gRPC's `error_message`, an HTTP
    generate_stream error event), after `responses` responses.

    Example: stream_error("failed after 1 responses", 1).name == "server error: gRPC stream error after responses"
    """
    failure_class = _overload(message) or SERVER_ERROR
    if UNKNOWN_MODEL_MESSAGE in message.lower():
        failure_class = SERVER_STOPPING
    code = f"{protocol} stream error after responses" if responses else f"{protocol} stream error"
    return _server_answer(failure_class, code, message)


def stream_ended(
    final_ns: int | None, start_ns: int, timeout_ns: int, broken: RequestFailure | None, responded: bool
) -> RequestFailure | None:
    """The failure of a streamed request whose responses were all well-formed, if it had one:
    its final response after the deadline (which runs from the actual send, as for a unary
    request), no final response, or its connection failing under it (`broken`): after a response
    (the server had the request) a lost connection is "stream broken: <what the wire said>"."""
    if final_ns is not None:
        if final_ns - start_ns > timeout_ns:
            return RequestFailure(TIMEOUT.name, f"final response after {(final_ns - start_ns) / 1e6:.1f} ms")
        return None
    if broken is None:
        return RequestFailure(BAD_RESPONSE.name, "the stream ended without the final response")
    if responded and broken.failure_class.name in ("connection reset", "unavailable", "server stopping"):
        return RequestFailure(f"{STREAM_BROKEN.name}: {broken.name}", broken.detail, STREAM_BROKEN)
    return broken


def connection_failure(error: OSError) -> RequestFailure:
    """Name a socket-level failure the same way for both protocols."""
    if isinstance(error, ConnectionRefusedError):
        return RequestFailure(CONNECTION_REFUSED.name, str(error))
    if isinstance(error, ConnectionResetError | BrokenPipeError | ConnectionAbortedError):
        return RequestFailure(CONNECTION_RESET.name, str(error))
    if isinstance(error, TimeoutError):
        return RequestFailure(TIMEOUT.name, str(error))
    return RequestFailure(CONNECTION_ERROR.name, str(error))
