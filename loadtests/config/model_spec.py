"""A model's interface as the workloads need it, independent of protocol.

Built from the JSON that Triton's HTTP endpoints return for
`/v2/models/<m>` (metadata) and `/v2/models/<m>/config` (config).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Config parameter (string_value) of a sequence model: the longest sequence it accepts.
MAX_SEQUENCE_LENGTH = "max_sequence_length"
# The CORRID control data_type of a sequence model that takes string correlation IDs.
CORRID_STRING = "TYPE_STRING"
# Triton datatype name -> numpy dtype. BYTES tensors are numpy object arrays of bytes.
TRITON_TO_NUMPY: dict[str, np.dtype] = {
    "BOOL": np.dtype(bool),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(object),
}


@dataclass(frozen=True)
class TensorSpec:
    """One input or output. `shape` excludes the batch dimension; -1 marks a variable dim.

    Example: TensorSpec("input_ids", "INT32", (-1,))
    """

    name: str
    datatype: str
    shape: tuple[int, ...]

    @property
    def numpy_dtype(self) -> np.dtype:
        return TRITON_TO_NUMPY[self.datatype]

    def accepts(self, shape: tuple[int, ...]) -> bool:
        """Whether an actual per-sample shape (no batch dim) fits this tensor's; -1 matches any size.

        Example: TensorSpec("x", "FP32", (-1, 3)).accepts((7, 3)) is True
        """
        return len(shape) == len(self.shape) and all(
            want < 0 or got == want for got, want in zip(shape, self.shape, strict=True)
        )


@dataclass(frozen=True)
class ModelSpec:
    """Name, batching limit and tensors of one model.

    `max_batch_size == 0` means the model does not batch: its tensors' shapes are
    the full request shapes, and a client may not add a batch dimension.
    `max_sequence_length`: the longest token sequence a sequence model takes, when its config
    declares one (`parameters { key: "max_sequence_length" ... }`), as the demo BERT models do.

    Example: ModelSpec.from_triton(metadata_json, config_json)
    """

    name: str
    version: str
    platform: str
    max_batch_size: int
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    max_sequence_length: int | None = None
    # The config has `sequence_batching`: requests need a correlation ID and start/end flags.
    sequence_batching: bool = False
    # The data_type of its CORRID control ("TYPE_UINT64", "TYPE_STRING", ...), if it has one.
    correlation_id_type: str | None = None
    # `model_transaction_policy { decoupled: true }`: any number of responses per request,
    # streamed (clients/grpc_stream.py, and over HTTP clients/http_stream.py's generate_stream).
    decoupled: bool = False

    @property
    def batches(self) -> bool:
        return self.max_batch_size > 0

    @property
    def string_correlation_ids(self) -> bool:
        """Whether its CORRID control is TYPE_STRING (requests must carry string correlation IDs)."""
        return self.correlation_id_type == CORRID_STRING

    def input(self, name: str) -> TensorSpec:
        for spec in self.inputs:
            if spec.name == name:
                return spec
        raise KeyError(name)

    @classmethod
    def from_triton(cls, metadata: dict, config: dict) -> ModelSpec:
        """From the HTTP metadata and config JSON (gRPC's `as_json=True` works too)."""
        max_batch = int(config.get("max_batch_size", 0) or 0)

        def tensors(entries: list[dict]) -> tuple[TensorSpec, ...]:
            out = []
            for entry in entries:
                shape = tuple(int(d) for d in entry["shape"])
                # Metadata shapes of batching models start with the batch dim (-1).
                if max_batch > 0 and shape:
                    shape = shape[1:]
                out.append(TensorSpec(entry["name"], entry["datatype"], shape))
            return tuple(out)

        versions = metadata.get("versions") or [""]
        return cls(
            name=metadata["name"],
            version=str(versions[-1]),
            platform=metadata.get("platform", ""),
            max_batch_size=max_batch,
            inputs=tensors(metadata.get("inputs", [])),
            outputs=tensors(metadata.get("outputs", [])),
            max_sequence_length=_int_parameter(config, MAX_SEQUENCE_LENGTH),
            sequence_batching=bool(config.get("sequence_batching")),
            correlation_id_type=_correlation_id_type(config),
            decoupled=bool((config.get("model_transaction_policy") or {}).get("decoupled")),
        )


def _correlation_id_type(config: dict) -> str | None:
    """The data_type of the CORRID control of a sequence model's config, or None."""
    for control_input in (config.get("sequence_batching") or {}).get("control_input") or []:
        for control in control_input.get("control") or []:
            if control.get("kind") == "CONTROL_SEQUENCE_CORRID":
                return control.get("data_type") or None
    return None


def _int_parameter(config: dict, key: str) -> int | None:
    """A positive integer from the config's `parameters` map, or None (absent or not a number)."""
    value = ((config.get("parameters") or {}).get(key) or {}).get("string_value", "")
    return int(value) if str(value).strip().isdigit() and int(value) > 0 else None
