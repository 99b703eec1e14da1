"""Reverses UTF-8 strings: BYTES in, BYTES out, batched per execute() call."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        texts = [pb_utils.get_input_tensor_by_name(r, "text").as_numpy() for r in requests]
        sizes = [len(t) for t in texts]
        batch = np.concatenate(texts)
        flipped = np.array(
            [[item.decode("utf-8")[::-1].encode("utf-8") for item in row] for row in batch],
            dtype=object,
        )
        parts = np.split(flipped, np.cumsum(sizes)[:-1])
        return [pb_utils.InferenceResponse([pb_utils.Tensor("reversed", part)]) for part in parts]
