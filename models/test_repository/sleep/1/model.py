"""Sleeps `sleep_ms` per execution, then echoes its input: a server of known latency.

With `stall_ms` and `stall_every_s`, one execution every `stall_every_s` seconds (from
the model's first execution) sleeps `stall_ms` longer: a server that is fast but stalls
now and then, which closed-loop clients hide (coordinated omission) and open-loop
clients expose. Other models of the test repository link to this file.
"""

import json
import time

import triton_python_backend_utils as pb_utils

STALL_SLACK_S = 0.1


def _param(params, key, default):
    return float(params[key]["string_value"]) if key in params else default


class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"]).get("parameters", {})
        self.sleep_s = _param(params, "sleep_ms", 0.0) / 1000.0
        self.stall_s = _param(params, "stall_ms", 0.0) / 1000.0
        self.stall_every_s = _param(params, "stall_every_s", 0.0)
        self.next_stall = None

    def _stall_due(self):
        # Stalls sit on a fixed grid (first execution + k * stall_every_s). One missed while
        # the model was idle is skipped, not made up at the next request: otherwise every
        # test would begin with a stall, and a 10-s run could see three instead of two.
        if not self.stall_s or not self.stall_every_s:
            return False
        now = time.monotonic()
        if self.next_stall is None:
            self.next_stall = now + self.stall_every_s
            return False
        if now < self.next_stall:
            return False
        due = now - self.next_stall < STALL_SLACK_S
        while self.next_stall <= now:
            self.next_stall += self.stall_every_s
        return due

    def execute(self, requests):
        time.sleep(self.sleep_s + (self.stall_s if self._stall_due() else 0.0))
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", data)]))
        return responses
