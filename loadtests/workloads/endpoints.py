"""Pre-flight and payload pools: everything that happens before the first timed request.

An endpoint is one (workload, protocol, model) a user class sends to. Preparing it
checks, in order, that the server is live, the model is ready, the batch SPEC fits the
model, and the workload's tensors fit the model's inputs; then it builds a pool of
request bodies for every batch size in the SPEC, so a request at run time only picks one.
Any failure is a StartupError with one line a user can act on.
"""

from __future__ import annotations

import difflib
import logging
import math
from dataclasses import dataclass

import numpy as np

from loadtests.clients import PreparedRequest, TritonClient
from loadtests.clients.base import Validator
from loadtests.clients.control import answers_http1
from loadtests.clients.control_grpc import open_control
from loadtests.clients.generate import generate_refusal
from loadtests.config.batch_size import UniformSource
from loadtests.config.model_spec import TRITON_TO_NUMPY, ModelSpec
from loadtests.config.settings import Settings
from loadtests.errors import ModelMismatchError, ServerError
from loadtests.workloads import BatchSizeSpec, Workload
from loadtests.workloads.kinds import WorkloadKind
from loadtests.workloads.validation import make_validator

logger = logging.getLogger(__name__)
PROTOCOL_NAMES = {"http": "HTTP", "grpc": "gRPC"}
# A model not found: at most this many of the models Triton has are named in the error line.
MODELS_SHOWN = 12
# Distinct request bodies kept per batch size, within a memory budget per endpoint.
POOL_PER_BATCH_SIZE = 8
POOL_BUDGET_BYTES = 128 * 2**20
POOL_SEED = 20240321
# Datatypes Triton's HTTP endpoint refuses in JSON tensors (binary only).
JSON_REFUSED_DATATYPES = ("FP16", "BF16")


def check_inputs_fit(model: ModelSpec, inputs: dict[str, np.ndarray], batch_size: int) -> None:
    """The payload's names, dtypes and fixed dims against the model's inputs."""
    expected = {spec.name for spec in model.inputs}
    unknown = sorted(set(inputs) - expected)
    if unknown:
        raise ModelMismatchError(
            f"input {unknown[0]!r} is not an input of model '{model.name}' (its inputs: {', '.join(sorted(expected))})"
        )
    missing = sorted(expected - set(inputs))
    if missing:
        raise ModelMismatchError(f"the payload has no data for input {missing[0]!r} of model '{model.name}'")
    for spec in model.inputs:
        array = inputs[spec.name]
        if array.dtype != spec.numpy_dtype and not (spec.datatype == "BYTES" and array.dtype.kind in "OS"):
            raise ModelMismatchError(
                f"input '{spec.name}' of model '{model.name}' is {spec.datatype}, the payload is {array.dtype}"
            )
        shape = array.shape[1:] if model.batches else array.shape
        if model.batches and array.shape[0] != batch_size:
            raise ModelMismatchError(f"input '{spec.name}': batch of {array.shape[0]} rows, expected {batch_size}")
        if not spec.accepts(shape):
            raise ModelMismatchError(
                f"input '{spec.name}' of model '{model.name}' has shape {list(spec.shape)}, "
                f"the payload's is {list(shape)}"
            )


@dataclass(frozen=True)
class Endpoint:
    """A prepared target: model spec, batch sizes, and request bodies built before timing.

    Example: request = endpoint.pick(rng); client.infer(request, endpoint.validator)
    """

    name: str
    kind: WorkloadKind
    protocol: str
    model: ModelSpec
    batch_sizes: BatchSizeSpec
    pools: dict[int, tuple[PreparedRequest, ...]]
    validator: Validator | None
    # What the requests carry, for config.json (image workloads: format, input, files); None: not said.
    payload: dict | None = None

    @property
    def streams(self) -> bool:
        """Its requests are streamed (a decoupled model: clients/grpc_stream.py, clients/http_stream.py)."""
        return self.model.decoupled

    def pick(self, rng: UniformSource) -> PreparedRequest:
        pool = self.pools[self.batch_sizes.sample(rng)]
        # Runs once per request: rng.random(), not choice/integers (several times dearer). Users
        # pass a random.Random: numpy's Generator takes a lock per draw, gevent's Python lock in
        # a Locust process (1.6-3.3 µs a draw against 0.3).
        return pool[int(rng.random() * len(pool))] if len(pool) > 1 else pool[0]


def _pool_count(sample_bytes: int, sizes: int, entries: int = 0, batch_size: int = 1) -> int:
    """Bodies per batch size: a few distinct ones, or enough to send every entry of an
    --input-data file once (as perf_analyzer steps through them all), within the budget."""
    wanted = max(POOL_PER_BATCH_SIZE, math.ceil(entries / batch_size))
    return max(1, min(wanted, POOL_BUDGET_BYTES // max(1, sample_bytes * sizes)))


def fetch_model(client: TritonClient, name: str) -> ModelSpec:
    """Server live, model ready (on every replica), metadata and config: or one line saying which is not."""
    _check_live_and_ready(client, name)
    for replica in client.replica_clients():
        try:
            _check_live_and_ready(replica, name)
        finally:
            replica.close()
    metadata, config = client.model_metadata_and_config(name)
    spec = ModelSpec.from_triton(metadata, config)
    unsupported = [t for t in spec.inputs if t.datatype not in TRITON_TO_NUMPY]
    if unsupported:
        raise ModelMismatchError(
            f"input '{unsupported[0].name}' of model '{name}' is {unsupported[0].datatype}, which the suite "
            f"cannot generate or send (supported: {', '.join(TRITON_TO_NUMPY)})"
        )
    return spec


def _check_live_and_ready(client: TritonClient, name: str) -> None:
    where = f"Triton at {client.scheme}{client.address} over {PROTOCOL_NAMES[client.protocol]}"
    try:
        live = client.server_live()
    except Exception as error:  # tritonclient raises assorted socket and gRPC errors here
        raise ServerError(f"cannot reach {where}: {_reason(error)}{_http_port_hint(client)}") from None
    if not live:
        raise ServerError(f"{where} is not live")
    try:
        ready = client.model_ready(name)
    except Exception as error:
        raise ServerError(f"cannot ask {where} about model '{name}': {_reason(error)}") from None
    if not ready:
        raise ServerError(f"model '{name}' is not ready on {where}: {_model_hint(client, name)}")


def _http_port_hint(client: TritonClient) -> str:
    """For a gRPC address that is an HTTP port (it answers HTTP/1.1): say so."""
    if client.protocol != "grpc" or not answers_http1(client.address):
        return ""
    return (
        f"; {client.address} answers HTTP/1.1: it is an HTTP port, probably Triton's (8000 by default); "
        "give --triton-grpc Triton's gRPC port (8001 by default)"
    )


def _model_hint(client: TritonClient, name: str) -> str:
    """Why a model is not ready, from Triton's repository index: a did-you-mean and the models it has."""
    try:
        index = open_control(client.target, security=getattr(client, "security", None)).repository_index()
    except ServerError:
        return "unknown, or failed to load"
    entries = {entry.get("name", ""): entry for entry in index}
    if name in entries:
        entry = entries[name]
        return (
            f"Triton has it {entry.get('state') or 'not loaded'}{': ' + entry['reason'] if entry.get('reason') else ''}"
        )
    ready = sorted(n for n, entry in entries.items() if entry.get("state") == "READY")
    close = difflib.get_close_matches(name, sorted(entries), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    shown = ", ".join(ready[:MODELS_SHOWN]) + (
        f" and {len(ready) - MODELS_SHOWN} more" if len(ready) > MODELS_SHOWN else ""
    )
    return f"Triton has no such model; {hint}its ready models: {shown or 'none'}"


def _reason(error: Exception) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:200]


def _check_json_datatypes(model: ModelSpec) -> None:
    """Triton answers every JSON request with FP16 (or BF16) tensors with HTTP 400
    ("receiving FP16 data via JSON is not supported"): refuse before the load."""
    for kind, tensors in (("input", model.inputs), ("output", model.outputs)):
        for tensor in tensors:
            if tensor.datatype in JSON_REFUSED_DATATYPES:
                raise ModelMismatchError(
                    f"{kind} '{tensor.name}' of model '{model.name}' is {tensor.datatype}, which Triton "
                    "does not accept as JSON: drop --http-json (binary tensors)"
                )


def _check_streams(kind: WorkloadKind, client: TritonClient, model: ModelSpec, settings: Settings) -> None:
    """A decoupled model answers a request with any number of responses (none included), which
    Triton streams over gRPC (ModelStreamInfer) and over HTTP (generate_stream, whose JSON
    carries only some models' inputs: clients/generate.py)."""
    decoupled = f"model '{model.name}' is decoupled (model_transaction_policy {{ decoupled: true }})"
    if not kind.streams_decoupled:
        raise ModelMismatchError(
            f"{decoupled}: it cannot be load-tested with the {kind.name} workload; TritonGrpcUser and "
            "TritonHttpUser stream it"
        )
    if settings.trace_sample is not None:
        raise ModelMismatchError(
            f"--trace-sample: {decoupled}: its streamed requests carry no trace id, so Triton's traces could "
            "not be joined to them; trace a model that is not decoupled, or leave out --trace-sample"
        )
    if client.protocol == "http":
        reason = generate_refusal(model, settings.batch_size.sizes)
        if reason is not None:
            raise ModelMismatchError(
                f"{decoupled} and HTTP streams it through generate_stream, which cannot carry its requests: "
                f"{reason}; TritonGrpcUser streams it (ModelStreamInfer)"
            )


def _batch_and_expected(workload: Workload, size: int, rng: np.random.Generator) -> tuple[dict, dict | None]:
    """A batch, and the expected outputs an --input-data file's validation_data gives for it."""
    with_expected = getattr(workload, "make_batch_and_expected", None)  # GenericWorkload's
    if with_expected is not None:
        return with_expected(size, rng)
    return workload.make_batch(size, rng), None


def prepare_endpoint(kind: WorkloadKind, client: TritonClient, model_name: str, settings: Settings) -> Endpoint:
    """Pre-flight one endpoint and build its request pools (the client is used, not closed)."""
    return build_endpoint(kind, client, fetch_model(client, model_name), settings)


def build_endpoint(kind: WorkloadKind, client: TritonClient, model: ModelSpec, settings: Settings) -> Endpoint:
    """The checks against a fetched model, then the request pools (the client is used, not closed)."""
    if client.protocol == "http" and not getattr(client, "binary", True):
        _check_json_datatypes(model)
    if model.decoupled:
        _check_streams(kind, client, model, settings)
    kind.check_model(model, settings)
    name = f"{model.name} [{client.protocol}]"
    if kind.build is None:
        # Requests built one by one while the load runs (a sequence's carry its ID, flags and
        # value), each response checked by the kind (a running sum), --validate-responses or not.
        return Endpoint(name, kind, client.protocol, model, settings.batch_size, {}, kind.validate)
    settings.batch_size.check_against(model)
    workload = kind.build(model, settings)
    rng = np.random.default_rng(POOL_SEED)
    pools: dict[int, tuple[PreparedRequest, ...]] = {}
    for size in settings.batch_size.sizes:
        first = _batch_and_expected(workload, size, rng)
        check_inputs_fit(model, first[0], size)
        entries = len(getattr(workload, "entries", ()))  # an --input-data file's
        count = _pool_count(sum(a.nbytes for a in first[0].values()), len(settings.batch_size.sizes), entries, size)
        if count * size < entries:
            logger.warning(
                "--input-data: %d entries, of which the first %d fit the %d MiB request pool at batch size %d; "
                "the rest are not sent",
                entries,
                count * size,
                POOL_BUDGET_BYTES // 2**20,
                size,
            )
        samples = [first] + [_batch_and_expected(workload, size, rng) for _ in range(count - 1)]
        pools[size] = tuple(
            PreparedRequest(
                endpoint=name,
                model=model.name,
                batch_size=size,
                wire=(wire := client.prepare(model, inputs, name, size)),
                seq_len=kind.seq_len(inputs),
                expected=expected,
                request_bytes=client.wire_bytes(wire),
            )
            for inputs, expected in samples
        )
    validator = make_validator(model, kind.validate) if settings.validate_responses else None
    describe = getattr(workload, "describe", None)  # what image requests carry, for config.json
    payload = describe() if describe is not None else None
    return Endpoint(name, kind, client.protocol, model, settings.batch_size, pools, validator, payload)
