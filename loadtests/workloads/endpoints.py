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
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from loadtests.clients import PreparedRequest, TritonClient
from loadtests.clients.base import Validator
from loadtests.clients.control import answers_http1
from loadtests.clients.control_grpc import open_control
from loadtests.config.batch_size import UniformSource
from loadtests.config.model_spec import TRITON_TO_NUMPY, ModelSpec
from loadtests.config.settings import (
    DEFAULT_BERT_MODEL,
    DEFAULT_RESNET_JPEG_MODEL,
    DEFAULT_RESNET_MODEL,
    ENCODED_IMAGE_FORMATS,
    Settings,
)
from loadtests.errors import ModelMismatchError, ServerError
from loadtests.workloads import (
    BatchSizeSpec,
    BertQAWorkload,
    EncodedImageWorkload,
    GenericWorkload,
    ImageWorkload,
    Workload,
)
from loadtests.workloads.validation import make_validator

WORKLOAD_KINDS = ("bert_qa", "resnet", "generic", "sequence")
# Integer datatypes a sequence user's running sum can be sent in (one value per request).
SEQUENCE_DATATYPES = ("INT32", "INT64", "UINT32", "UINT64")
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


def model_name_for(kind: str, settings: Settings, kinds_in_run: Iterable[str]) -> str:
    """Which model a workload targets: --model alone, or --bert-model/--resnet-model when mixed."""
    kinds = set(kinds_in_run)
    if kind in ("generic", "sequence"):
        if not settings.model:
            raise ModelMismatchError(
                f"{kind} Triton users need --model NAME" + (" (or --mix MODEL:WEIGHT,...)" if kind == "generic" else "")
            )
        return settings.model
    own = settings.bert_model if kind == "bert_qa" else settings.resnet_model
    if own:
        return own
    if settings.model and kinds == {kind}:
        return settings.model
    if kind == "bert_qa":
        return DEFAULT_BERT_MODEL
    return DEFAULT_RESNET_JPEG_MODEL if settings.image_format in ENCODED_IMAGE_FORMATS else DEFAULT_RESNET_MODEL


def build_workload(kind: str, model: ModelSpec, settings: Settings) -> Workload:
    if kind == "bert_qa":
        return BertQAWorkload(
            model,
            seq_len=settings.seq_len,
            doc_stride=settings.doc_stride,
            vocab_file=settings.vocab,
            input_map=settings.input_map or None,
        )
    if kind == "resnet" and settings.image_format in ENCODED_IMAGE_FORMATS:
        return EncodedImageWorkload(model, image_dir=settings.image_dir, image_format=settings.image_format)
    if kind == "resnet":
        return ImageWorkload(model, image_dir=settings.image_dir)
    if kind == "generic":
        return GenericWorkload(
            model,
            shape_overrides=settings.shapes or None,
            data_mode=settings.data_mode,
            input_data_file=settings.input_data,
        )
    raise ValueError(f"unknown workload kind {kind!r}")


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
    kind: str
    protocol: str
    model: ModelSpec
    batch_sizes: BatchSizeSpec
    pools: dict[int, tuple[PreparedRequest, ...]]
    validator: Validator | None
    # What the requests carry, for config.json (image workloads: format, input, files); None: not said.
    payload: dict | None = None

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


def _seq_len(kind: str, inputs: dict[str, np.ndarray]) -> int | None:
    if kind != "bert_qa":
        return None
    first = next(iter(inputs.values()))
    return int(first.shape[-1])


def fetch_model(client: TritonClient, name: str) -> ModelSpec:
    """Server live, model ready (on every replica), metadata and config: or one line saying which is not."""
    _check_live_and_ready(client, name)
    for replica in client.replica_clients():
        try:
            _check_live_and_ready(replica, name)
        finally:
            replica.close()
    metadata, config = client.model_metadata_and_config(name)
    if (config.get("model_transaction_policy") or {}).get("decoupled"):
        # A decoupled model may answer one request with any number of responses (or none),
        # which Triton serves over gRPC streaming only; the suite times one response per request.
        raise ModelMismatchError(
            f"model '{name}' is decoupled (model_transaction_policy {{ decoupled: true }}): "
            "the suite sends one request and times one response, so it does not load-test decoupled models"
        )
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


def _batch_and_expected(workload: Workload, size: int, rng: np.random.Generator) -> tuple[dict, dict | None]:
    """A batch, and the expected outputs an --input-data file's validation_data gives for it."""
    if isinstance(workload, GenericWorkload):
        return workload.make_batch_and_expected(size, rng)
    return workload.make_batch(size, rng), None


def check_sequence_model(model: ModelSpec, settings: Settings) -> None:
    """What a sequence user needs (loadtests/workloads/sequences.py): a model with sequence batching and
    one integer input and one output (a running sum), closed-loop traffic, batch size 1."""
    if not model.sequence_batching:
        raise ModelMismatchError(
            f"model '{model.name}' has no sequence_batching in its config: sequence users send correlation IDs "
            "and start/end flags only to sequence models"
        )
    if len(model.inputs) != 1 or len(model.outputs) != 1 or model.inputs[0].datatype not in SEQUENCE_DATATYPES:
        raise ModelMismatchError(
            f"model '{model.name}' is not an accumulator: sequence users send one integer per request "
            f"({'/'.join(SEQUENCE_DATATYPES)} input of shape [1]) and check one output against the running sum"
        )
    if model.string_correlation_ids:
        # Measured on the bundled Triton: a numeric ID is copied as 8 raw bytes into the string
        # tensor and every request is refused as malformed; string IDs (tritonclient's own too)
        # fail its check of the control tensor ("unexpected number of string elements 2").
        raise ModelMismatchError(
            f"model '{model.name}' takes string correlation IDs (its CORRID control is TYPE_STRING), "
            "and sequence users send integer IDs: give it a TYPE_UINT64, TYPE_INT64, TYPE_UINT32 or TYPE_INT32 CORRID"
        )
    if not model.inputs[0].accepts((1,)):
        raise ModelMismatchError(f"input '{model.inputs[0].name}' of model '{model.name}' does not take shape [1]")
    if settings.open_loop:
        raise ModelMismatchError(
            "sequence users run closed loop (each request waits for the previous one of its sequence): "
            "drop --traffic/--rate"
        )
    if settings.batch_size.sizes != (1,):
        raise ModelMismatchError("sequence users send batch size 1 (one step of one sequence per request)")


def prepare_endpoint(kind: str, client: TritonClient, model_name: str, settings: Settings) -> Endpoint:
    """Pre-flight one endpoint and build its request pools (the client is used, not closed)."""
    return build_endpoint(kind, client, fetch_model(client, model_name), settings)


def build_endpoint(kind: str, client: TritonClient, model: ModelSpec, settings: Settings) -> Endpoint:
    """The checks against a fetched model, then the request pools (the client is used, not closed)."""
    if client.protocol == "http" and not getattr(client, "binary", True):
        _check_json_datatypes(model)
    if kind == "sequence":
        # Sequence requests are built one by one (each carries its ID, flags and value).
        check_sequence_model(model, settings)
        name = f"{model.name} [{client.protocol}]"
        return Endpoint(name, kind, client.protocol, model, settings.batch_size, {}, None)
    settings.batch_size.check_against(model)
    workload = build_workload(kind, model, settings)
    rng = np.random.default_rng(POOL_SEED)
    name = f"{model.name} [{client.protocol}]"
    pools: dict[int, tuple[PreparedRequest, ...]] = {}
    for size in settings.batch_size.sizes:
        first = _batch_and_expected(workload, size, rng)
        check_inputs_fit(model, first[0], size)
        entries = len(workload.entries) if isinstance(workload, GenericWorkload) else 0
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
                seq_len=_seq_len(kind, inputs),
                expected=expected,
                request_bytes=client.wire_bytes(wire),
            )
            for inputs, expected in samples
        )
    validator = make_validator(kind, model) if settings.validate_responses else None
    payload = workload.describe() if isinstance(workload, EncodedImageWorkload | ImageWorkload) else None
    return Endpoint(name, kind, client.protocol, model, settings.batch_size, pools, validator, payload)
