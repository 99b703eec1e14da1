"""A Triton Python-backend model that turns encoded image files into ResNet input tensors.

The first step of the demo ensemble `resnet50_jpeg`: each request carries one encoded image
(JPEG, PNG, ... anything Pillow decodes) per batch row as a BYTES element; each comes back as
a 3x224x224 FP32 tensor, decoded, resized, centre-cropped and ImageNet-normalised by the same
function the suite's tensor clients use before a test (`loadtests.workloads.images.image_tensor`),
so `resnet50` sees the same numbers whichever way the image travelled.

A file that does not decode fails its own request only.
"""

from __future__ import annotations

import json

import numpy as np
import triton_python_backend_utils as pb_utils

from loadtests.workloads.images import image_tensor


class ImagePreprocessModel:
    """Python-backend model class; model.py re-exports it as TritonPythonModel."""

    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        self.input_name = config["input"][0]["name"]
        output = config["output"][0]
        self.output_name = output["name"]
        self.channels, self.height, self.width = (int(d) for d in output["dims"])

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            encoded = pb_utils.get_input_tensor_by_name(request, self.input_name).as_numpy()
            try:
                # One row per batch element; the row's single element is the file's bytes.
                rows = [image_tensor(bytes(row.reshape(-1)[0]), self.height, self.width) for row in encoded]
                tensor = pb_utils.Tensor(self.output_name, np.stack(rows))
                responses.append(pb_utils.InferenceResponse(output_tensors=[tensor]))
            except Exception as error:  # a bad image fails its request, not the batch
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(error))))
        return responses
