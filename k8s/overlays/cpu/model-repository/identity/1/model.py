"""Echoes INPUT0 as OUTPUT0; batches the requests of one execute() call into one array op."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        arrays = [pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() for r in requests]
        batch = np.concatenate(arrays)
        parts = np.split(batch.copy(), np.cumsum([len(a) for a in arrays])[:-1])
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", p)]) for p in parts]
