"""A Triton Python model that decodes encoded image files and returns each one's size.

Written by tests/system/workloads/test_encoded_images.py into a temporary model repository (never into
models/test_repository: every Python model is a stub process at each session's start). The
config's one input is BYTES [1] (an element per image) or UINT8 [-1] (the file's bytes, rows
zero-padded to the longest file of the batch), batching or not; its parameter "expected" is
JSON {"format": "JPEG", "sizes": [[width, height], ...]}. A row that does not decode, or
decodes to another format or to a size not listed, fails its request: a wrong payload is a
counted failure, not a silent success. Output SIZE: INT32 [2], width and height per row.
"""

import io
import json

import numpy as np
import triton_python_backend_utils as pb_utils
from PIL import Image


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.batching = int(config.get("max_batch_size", 0)) > 0
        self.input_name = config["input"][0]["name"]
        expected = json.loads(config["parameters"]["expected"]["string_value"])
        self.format = expected["format"]
        self.sizes = {tuple(size) for size in expected["sizes"]}

    def execute(self, requests):
        return [self._answer(request) for request in requests]

    def _answer(self, request):
        array = pb_utils.get_input_tensor_by_name(request, self.input_name).as_numpy()
        # A non-batching model's tensor is one sample: give it the batch dim the loop expects.
        rows = array if self.batching else array[np.newaxis]
        try:
            sizes = np.array([self._decode(row) for row in rows], dtype=np.int32)
        except ValueError as error:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(str(error)))
        return pb_utils.InferenceResponse([pb_utils.Tensor("SIZE", sizes if self.batching else sizes[0])])

    def _decode(self, row):
        data = row[0] if row.dtype == np.object_ else row.tobytes()
        try:
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                found, size = image.format, image.size
        except Exception as error:  # Pillow raises several types for a bad file
            raise ValueError(f"cannot decode image of {len(data)} bytes: {error}") from None
        if found != self.format or size not in self.sizes:
            raise ValueError(
                f"decoded a {found} of {size[0]}x{size[1]}, expected a {self.format} of {sorted(self.sizes)}"
            )
        return size
