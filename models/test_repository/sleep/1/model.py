"""Sleeps `sleep_ms` per execution, then echoes its input: a server of known latency."""

import json
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"]).get("parameters", {})
        self.sleep_s = float(params["sleep_ms"]["string_value"]) / 1000.0

    def execute(self, requests):
        time.sleep(self.sleep_s)
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", data)]))
        return responses
