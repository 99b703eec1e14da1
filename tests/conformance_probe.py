"""Send requests through the suite's own path and report what came back, one JSON line.

Run in a subprocess (`python -m tests.conformance_probe SPEC_JSON`) because the gRPC
client switches grpcio to gevent for the whole process, as it does inside Locust.

For each cell the probe does what a Locust user does: `endpoints.prepare_endpoint` (the
pre-flight, the workload from `workloads/generic.py`, request bodies built by the
client), then `client.infer` for every prepared request, with the suite's own
`--validate-responses` checks. On top of those, an identity check: every output named
`<input>_OUT` must equal, element for element and in datatype, what the client sent as
`<input>` (the client's `prepare` is wrapped to remember the arrays it serialised).

SPEC_JSON: {"http": "host:port", "grpc": "host:port", "cells": [{"model": "echo_int8",
"protocol": "http|http_json|grpc", "input_data": ["f.json"] | [], "data_mode": "random",
"batch": "1,3", "shape": "VARIABLE:5", "validate": true, "ulps": 0}, ...]}
("ulps": floats may differ from what was sent by that many units in the last place.)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from locust.event import EventHook  # imports locust: gevent's monkey-patching, as in a real run

from loadtests.clients import Connections
from loadtests.clients.grpc import GrpcClient
from loadtests.clients.http import HttpClient
from loadtests.config.addresses import TritonTarget
from loadtests.config.settings import Settings
from loadtests.errors import StartupError
from loadtests.workloads import parse_batch_size, parse_shape_overrides
from loadtests.workloads.endpoints import prepare_endpoint
from loadtests.workloads.kinds import GENERIC

IDENTITY_SUFFIX = "_OUT"


def _recording(client_class):
    class Recording(client_class):
        """The suite's client, remembering the arrays behind each request body it builds."""

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.sent: dict[int, dict] = {}

        def prepare(self, model, inputs, endpoint, batch_size):
            wire = super().prepare(model, inputs, endpoint, batch_size)
            self.sent[id(wire)] = {name: array.copy() for name, array in inputs.items()}
            return wire

    return Recording


def _same(sent, received, ulps: int = 0) -> bool:
    if sent.dtype.kind == "O":
        as_bytes = [v if isinstance(v, bytes) else str(v).encode() for v in received.ravel()]
        return received.shape == sent.shape and as_bytes == list(sent.ravel())
    if received.dtype != sent.dtype or received.shape != sent.shape:
        return False
    if ulps and sent.dtype.kind == "f":
        return bool((np.abs(received - sent) <= ulps * np.spacing(np.abs(sent))).all())
    return bool((received == sent).all())


def run_cell(cell: dict, addresses: dict) -> dict:
    protocol = cell["protocol"]
    event = EventHook()
    failures: Counter = Counter()
    outcome = {"requests": 0, "failures": failures, "mismatches": [], "error": None, "checked": []}

    def count(exception=None, **_):
        outcome["requests"] += 1
        if exception is not None:
            failures[str(exception)] += 1

    event.add_listener(count)
    if protocol == "grpc":
        client = _recording(GrpcClient)(
            TritonTarget.parse("--triton-grpc", addresses["grpc"], "grpc"), 10.0, event, Connections()
        )
    else:
        client = _recording(HttpClient)(
            TritonTarget.parse("--triton-http", addresses["http"], "http"), 10.0, event, binary=protocol == "http"
        )
    settings = Settings(
        model=cell["model"],
        batch_size=parse_batch_size(cell.get("batch", "1")),
        shapes=parse_shape_overrides(cell.get("shape") or None),
        input_data=tuple(Path(p) for p in cell.get("input_data", [])),
        data_mode=cell.get("data_mode", "random"),
        http_json=protocol == "http_json",
        validate_responses=cell.get("validate", True),
    )
    try:
        endpoint = prepare_endpoint(GENERIC, client, cell["model"], settings)
    except StartupError as error:
        outcome["error"] = str(error)
        client.close()
        return outcome

    def identity(outputs, datatypes, request):
        if endpoint.validator is not None:
            endpoint.validator(outputs, datatypes, request)
        sent = client.sent[id(request.wire)]
        for name, array in sent.items():
            received = outputs.get(name + IDENTITY_SUFFIX)
            if received is None:
                continue
            outcome["checked"].append(name)
            if not _same(array, received, cell.get("ulps", 0)):
                outcome["mismatches"].append(name)

    for pool in endpoint.pools.values():
        for request in pool:
            client.infer(request, validate=identity)
    client.close()
    outcome["checked"] = sorted(set(outcome["checked"]))
    outcome["mismatches"] = sorted(set(outcome["mismatches"]))
    return outcome


def main(argv: list[str]) -> None:
    spec = json.loads(argv[0])
    results = [run_cell(cell, spec) for cell in spec["cells"]]
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
