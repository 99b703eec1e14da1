"""Identity for every input: each input `X` comes back as output `X_OUT`, same datatype,
shape and bytes. The conformance models (models/conformance.py) all run this class."""

import triton_python_backend_utils as pb_utils

OUTPUT_SUFFIX = "_OUT"


class EchoModel:
    def initialize(self, args):
        import json

        config = json.loads(args["model_config"])
        self.inputs = [entry["name"] for entry in config["input"]]

    def execute(self, requests):
        responses = []
        for request in requests:
            outputs = []
            for name in self.inputs:
                tensor = pb_utils.get_input_tensor_by_name(request, name)
                # as_numpy() keeps the datatype (BYTES stays an object array of bytes).
                outputs.append(pb_utils.Tensor(name + OUTPUT_SUFFIX, tensor.as_numpy()))
            responses.append(pb_utils.InferenceResponse(outputs))
        return responses
