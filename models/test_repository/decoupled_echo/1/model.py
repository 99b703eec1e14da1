"""Decoupled: answers each request with two responses (the input twice), then the final flag."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            for _ in range(2):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", np.array(data))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
