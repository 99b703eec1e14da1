"""The gRPC client's own HTTP/2 transport against the real Triton: connection sharing,
messages larger than HTTP/2's default windows, deadlines, and the --grpc-connections option.

The probes run in a gevent-patched subprocess, as Locust runs the clients.
"""

from __future__ import annotations

import pytest

from loadtests.errors import SpecError
from loadtests.options.reading import parse_grpc_connections


def test_grpc_connections_option():
    assert [parse_grpc_connections(text) for text in ("per-user", "per-process", "6", "1")] == [1, 0, 6, 1]
    for bad in ("0", "-2", "all", ""):
        with pytest.raises(SpecError, match="--grpc-connections"):
            parse_grpc_connections(bad)
