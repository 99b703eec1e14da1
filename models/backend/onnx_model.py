"""A Triton Python-backend model that runs one ONNX network with onnxruntime on CPU.

Why one shared class: `bert_qa`, `bert_qa_dynbatch` and `resnet50` differ only in
their config.pbtxt (batching, instances, warm-up) and in which network they load.

It really batches (seed 002): the requests of one `execute` call are concatenated
along the batch dimension, run as one inference, and split back per request.
Requests whose non-batch shapes differ (e.g. BERT sequence lengths) cannot be
concatenated, so they are grouped by shape and each group runs once.

Config parameters (config.pbtxt `parameters`):
    network           file stem under the weights directory, e.g. "bert_qa"
    intra_op_threads  onnxruntime threads per instance (default 1: one core per instance)

The weights directory is $TRITON_LOADTEST_WEIGHTS_DIR (set by `python -m loadtests serve
--preset`), else models/weights/tiny next to this file's package.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils

DEFAULT_WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "weights" / "tiny"


def _parameters(config: dict) -> dict[str, str]:
    return {key: value["string_value"] for key, value in config.get("parameters", {}).items()}


class OnnxBatchingModel:
    """Python-backend model class; model.py re-exports it as TritonPythonModel."""

    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        params = _parameters(config)
        weights_dir = Path(os.environ.get("TRITON_LOADTEST_WEIGHTS_DIR") or DEFAULT_WEIGHTS_DIR)
        path = weights_dir / f"{params['network']}.onnx"
        if not path.exists():
            raise pb_utils.TritonModelException(
                f"{path} not found: build the demo weights with 'python -m models.build --preset tiny'"
            )
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(params.get("intra_op_threads", "1"))
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names = [tensor["name"] for tensor in config["input"]]
        self.output_names = [tensor["name"] for tensor in config["output"]]

    def execute(self, requests: list) -> list:
        responses: list = [None] * len(requests)
        groups: dict[tuple, list[int]] = {}
        inputs_per_request = []
        for index, request in enumerate(requests):
            arrays = [pb_utils.get_input_tensor_by_name(request, name).as_numpy() for name in self.input_names]
            inputs_per_request.append(arrays)
            groups.setdefault(tuple(a.shape[1:] for a in arrays), []).append(index)
        for indices in groups.values():
            try:
                self._run_group(indices, inputs_per_request, responses)
            except Exception as error:  # one bad group must not fail the others
                for index in indices:
                    responses[index] = pb_utils.InferenceResponse(error=pb_utils.TritonError(str(error)))
        return responses

    def _run_group(self, indices: list[int], inputs_per_request: list, responses: list) -> None:
        feed = {
            name: np.concatenate([inputs_per_request[i][position] for i in indices])
            for position, name in enumerate(self.input_names)
        }
        outputs = self.session.run(self.output_names, feed)
        sizes = [len(inputs_per_request[i][0]) for i in indices]
        bounds = np.cumsum(sizes)[:-1]
        per_output = [np.split(output, bounds) for output in outputs]
        for position, index in enumerate(indices):
            tensors = [
                pb_utils.Tensor(name, np.ascontiguousarray(parts[position]))
                for name, parts in zip(self.output_names, per_output, strict=False)
            ]
            responses[index] = pb_utils.InferenceResponse(output_tensors=tensors)

    def finalize(self) -> None:
        self.session = None
