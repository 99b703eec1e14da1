"""A running sum per sequence: SUM = the INPUT values of this sequence so far.

The correlation ID and the start/end flags arrive as control inputs (config.pbtxt). A START
resets the sequence's sum, so two clients that share a correlation ID corrupt each other's
sums: the sequence user's check then fails with "sequence state".
"""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

# Sums of sequences that never sent END (Triton released them as idle) are dropped after this.
FORGET_AFTER_S = 60.0


def _flag(request, name):
    return bool(pb_utils.get_input_tensor_by_name(request, name).as_numpy().flat[0])


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}  # correlation ID -> (sum, last seen, monotonic s)
        self.next_sweep = time.monotonic() + FORGET_AFTER_S

    def execute(self, requests):
        now = time.monotonic()
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy().reshape(-1)
            if not _flag(request, "READY"):
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", np.zeros((1, 1), np.int32))]))
                continue
            corrid = int(pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy().flat[0])
            previous = 0 if _flag(request, "START") else self.sums.get(corrid, (0, now))[0]
            total = previous + int(value.sum())
            if _flag(request, "END"):
                self.sums.pop(corrid, None)
            else:
                self.sums[corrid] = (total, now)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", np.array([[total]], np.int32))]))
        if now >= self.next_sweep:
            self.sums = {key: entry for key, entry in self.sums.items() if now - entry[1] < FORGET_AFTER_S}
            self.next_sweep = now + FORGET_AFTER_S
        return responses
