"""The sequence models of tests/system/workloads/test_sequence_matrix.py, written into a temporary repository.

Fourteen running-sum models cover the axes a sequence model varies on in Triton's model
configuration (docs/user_guide/model_configuration.md, "Sequence Batcher"): the input datatype
(the suite's SEQUENCE_DATATYPES), max_batch_size 0 or > 0, the `direct` or `oldest` strategy,
and every CORRID data_type Triton allows (TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32,
TYPE_STRING), each CORRID type batching and not; the START/END/READY controls rotate through
the int32, fp32 and bool kinds. The first eight cover every pair of datatype x max_batch_size
x strategy x {UINT64, STRING}; the six after them give the other CORRID types both batching
modes (not the full product: every model instance is a Python stub process).

A 32-bit CORRID (UINT32, INT32) gets only the low 32 bits of the 64-bit correlation ID the
client sends, so the models keep their sums per CORRID value as Triton hands it to them: two
sequences whose IDs differ only above bit 31 share a sum there.

Each model returns the sum of the INPUT values of its sequence so far, in INPUT's datatype,
kept per correlation ID (the CORRID control, an integer or a string). A START resets the sum,
and a request Triton marks not READY (the `direct` strategy's padding of empty slots) gets 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SequenceModel:
    datatype: str
    max_batch_size: int
    strategy: str
    corrid: str  # the CORRID control's data_type
    controls: str  # how START/END/READY are given: int32, fp32 or bool

    @property
    def name(self) -> str:
        return f"seq_{self.datatype.lower()}_b{self.max_batch_size}_{self.strategy}_{self.corrid.lower()}"


# A pairwise covering of datatype x max_batch_size x strategy x CORRID type.
MODELS = (
    SequenceModel("INT32", 0, "direct", "UINT64", "int32"),
    SequenceModel("INT32", 4, "oldest", "STRING", "bool"),
    SequenceModel("INT64", 0, "oldest", "UINT64", "fp32"),
    SequenceModel("INT64", 4, "direct", "STRING", "int32"),
    SequenceModel("UINT32", 0, "direct", "STRING", "bool"),
    SequenceModel("UINT32", 4, "oldest", "UINT64", "fp32"),
    SequenceModel("UINT64", 0, "oldest", "STRING", "int32"),
    SequenceModel("UINT64", 4, "direct", "UINT64", "bool"),
    # The other CORRID types, batching and not.
    SequenceModel("INT32", 4, "oldest", "UINT32", "int32"),
    SequenceModel("INT64", 0, "direct", "UINT32", "bool"),
    SequenceModel("UINT32", 4, "direct", "INT32", "fp32"),
    SequenceModel("UINT64", 0, "oldest", "INT32", "int32"),
    SequenceModel("INT64", 4, "oldest", "INT64", "fp32"),
    SequenceModel("UINT32", 0, "direct", "INT64", "bool"),
)
# The accumulator of the multi-worker test: a 32-bit CORRID, batching, `oldest` (sequences interleave).
UINT32_ACCUMULATOR = MODELS[8]

_FALSE_TRUE = {
    "int32": "int32_false_true: [ 0, 1 ]",
    "fp32": "fp32_false_true: [ 0, 1 ]",
    "bool": "bool_false_true: [ false, true ]",
}
_STRATEGY = {
    # direct: one slot per sequence (max_batch_size slots, or one when the model does not batch).
    "direct": "direct { }",
    # oldest: more candidate sequences than the tests' users, so none waits in the backlog long.
    "oldest": "oldest { max_candidate_sequences: 16 max_queue_delay_microseconds: 0 }",
}

MODEL_PY = '''"""A running sum per correlation ID (tests/sequence_matrix.py writes this model)."""

import numpy as np
import triton_python_backend_utils as pb_utils


def _value(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().flat[0]


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            total = 0
            if bool(_value(request, "READY")):
                corrid = _value(request, "CORRID")  # bytes for a TYPE_STRING CORRID, else an integer
                key = corrid.decode() if isinstance(corrid, bytes) else int(corrid)
                total = (0 if bool(_value(request, "START")) else self.sums.get(key, 0)) + int(values.sum())
                if bool(_value(request, "END")):
                    self.sums.pop(key, None)
                else:
                    self.sums[key] = total
            out = np.full(values.shape, total, values.dtype)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", out)]))
        return responses
'''


def config_text(model: SequenceModel) -> str:
    kind = _FALSE_TRUE[model.controls]
    controls = "\n".join(
        f'    {{ name: "{name}" control [ {{ kind: CONTROL_SEQUENCE_{name} {kind} }} ] }},'
        for name in ("START", "END", "READY")
    )
    return f"""name: "{model.name}"
backend: "python"
max_batch_size: {model.max_batch_size}
input [ {{ name: "INPUT" data_type: TYPE_{model.datatype} dims: [ 1 ] }} ]
output [ {{ name: "SUM" data_type: TYPE_{model.datatype} dims: [ 1 ] }} ]
sequence_batching {{
  max_sequence_idle_microseconds: 5000000
  {_STRATEGY[model.strategy]}
  control_input [
{controls}
    {{ name: "CORRID" control [ {{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_{model.corrid} }} ] }}
  ]
}}
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""


def write_repository(parent: Path) -> Path:
    """A model repository holding MODELS alone."""
    repository = parent / "sequence_matrix"
    for model in MODELS:
        version = repository / model.name / "1"
        version.mkdir(parents=True)
        (version / "model.py").write_text(MODEL_PY)
        (repository / model.name / "config.pbtxt").write_text(config_text(model))
    return repository
