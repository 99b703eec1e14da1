"""`--validate-responses`: check each response against the model's metadata.

Every output named in the metadata must be present, with the metadata's datatype,
the request's batch dimension and the fixed dims; outputs that an --input-data file's
`validation_data` gives must equal it; then per workload: ResNet probabilities are
finite and sum to 1, QA start/end logits have one value per token.
A mismatch is a request failure named "validation: <what>", with a stable <what>.
"""

from __future__ import annotations

import numpy as np

from loadtests.clients import PreparedRequest, RequestFailure
from loadtests.clients.base import Validator
from loadtests.config.model_spec import ModelSpec

PROBABILITY_SUM_TOLERANCE = 1e-3
QA_LOGIT_OUTPUTS = ("start_logits", "end_logits")


def _fail(what: str, detail: str) -> RequestFailure:
    return RequestFailure(f"validation: {what}", detail)


def check_outputs(model: ModelSpec, outputs: dict[str, np.ndarray], datatypes: dict[str, str], batch: int) -> None:
    for spec in model.outputs:
        if spec.name not in outputs:
            raise _fail(f"missing output {spec.name}", f"response has {sorted(outputs)}")
        if datatypes.get(spec.name) != spec.datatype:
            raise _fail(f"{spec.name} datatype", f"got {datatypes.get(spec.name)}, metadata says {spec.datatype}")
        array = outputs[spec.name]
        shape = array.shape[1:] if model.batches else array.shape
        if model.batches and (array.ndim == 0 or array.shape[0] != batch):
            raise _fail(f"{spec.name} batch dimension", f"shape {array.shape} for a batch of {batch}")
        if not spec.accepts(shape):
            raise _fail(f"{spec.name} shape", f"got {shape}, metadata says {spec.shape}")


def check_probabilities(outputs: dict[str, np.ndarray], datatypes: dict[str, str], request: PreparedRequest) -> None:
    """An image classifier's outputs: finite, and those named like probabilities sum to 1 per row."""
    for name, array in outputs.items():
        if array.dtype.kind != "f":
            continue
        if not np.isfinite(array).all():
            raise _fail(f"{name} not finite", "NaN or infinity in the output")
        # Outputs named like probabilities must be a distribution per row; logits need not be.
        if "prob" in name.lower() or "softmax" in name.lower():
            sums = array.reshape(array.shape[0], -1).sum(axis=1)
            if not np.allclose(sums, 1.0, atol=PROBABILITY_SUM_TOLERANCE):
                raise _fail(f"{name} do not sum to 1", f"row sums {sums[:4]}")


def check_qa_logits(outputs: dict[str, np.ndarray], datatypes: dict[str, str], request: PreparedRequest) -> None:
    """A question-answering model's start/end logits: one finite value per token of the request."""
    seq_len = request.seq_len
    for name in QA_LOGIT_OUTPUTS:
        array = outputs.get(name)
        if array is None or seq_len is None:
            continue
        if array.shape[-1] != seq_len:
            raise _fail(f"{name} not one per token", f"{array.shape[-1]} values for {seq_len} tokens")
        if not np.isfinite(array).all():
            raise _fail(f"{name} not finite", "NaN or infinity in the output")


def check_expected(model: ModelSpec, outputs: dict[str, np.ndarray], request: PreparedRequest) -> None:
    """Outputs against an --input-data file's `validation_data`, sample by sample, exactly
    (perf_analyzer compares the bytes)."""
    for name, samples in (request.expected or {}).items():
        array = outputs.get(name)
        if array is None:
            raise _fail(f"missing output {name}", f"response has {sorted(outputs)}")
        rows = list(array) if model.batches else [array]
        for index, (row, want) in enumerate(zip(rows, samples, strict=True)):
            got = np.asarray(row).ravel()
            if got.dtype.kind == "O":
                got = np.array([v if isinstance(v, bytes) else str(v).encode() for v in got], dtype=object)
            if got.shape != want.shape or not (got == want).all():
                raise _fail(
                    f"{name} differs from validation_data",
                    f"sample {index} of the batch: got {got[:8]}, validation_data says {want[:8]}",
                )


def no_own_checks(outputs: dict[str, np.ndarray], datatypes: dict[str, str], request: PreparedRequest) -> None:
    """A workload kind whose responses have nothing to check beyond the metadata (the generic users)."""


def make_validator(model: ModelSpec, own_checks: Validator) -> Validator:
    """The checks for one endpoint: the metadata's, `validation_data`'s, then its workload kind's
    (`WorkloadKind.validate`). Example: make_validator(spec, RESNET.validate)(outputs, datatypes, request)."""

    def validate(outputs: dict[str, np.ndarray], datatypes: dict[str, str], request: PreparedRequest) -> None:
        check_outputs(model, outputs, datatypes, request.batch_size)
        check_expected(model, outputs, request)
        own_checks(outputs, datatypes, request)

    return validate
