"""Echoes INPUT0, but rejects a request with any negative value as an invalid argument.

A server-side failure on demand: HTTP 400 / gRPC INVALID_ARGUMENT for chosen requests.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            if (data < 0).any():
                error = pb_utils.TritonError("negative input rejected", pb_utils.TritonError.INVALID_ARG)
                responses.append(pb_utils.InferenceResponse(error=error))
            else:
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", np.array(data))]))
        return responses
