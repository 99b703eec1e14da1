"""Decoupled: answers each request with `responses` responses on a fixed timetable, then
the final flag alone (an empty response flagged final). Other models of the test repository
link to this file and pick a behaviour with their parameters.

Parameters (config.pbtxt, string values):
  responses     data responses per request (default 1)
  first_ms      from the request's arrival in execute() to its first response (default 0)
  gap_ms        between consecutive responses (default 0)
  empty_every   every k-th request the model receives sends no data response, only the
                final flag (0: never)
  fail_every    every k-th request sends `fail_after` responses, then an error (0: never)
  fail_after    data responses before the error (default 1)
  inline        1: execute() sends each request's responses itself and returns after its
                final flag, so one instance serves one request at a time and the others
                wait in Triton's queue (0, the default: a thread per request)

Responses are sent from a thread per request, so requests overlap (one instance serves
many at once), unless `inline`; each request's timetable is kept against the monotonic
clock from its own start: a late wake-up does not shift the responses after it.
"""

import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def _param(params, key, default):
    return float(params[key]["string_value"]) if key in params else default


class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"]).get("parameters", {})
        self.responses = int(_param(params, "responses", 1))
        self.first_s = _param(params, "first_ms", 0.0) / 1000.0
        self.gap_s = _param(params, "gap_ms", 0.0) / 1000.0
        self.empty_every = int(_param(params, "empty_every", 0))
        self.fail_every = int(_param(params, "fail_every", 0))
        self.fail_after = int(_param(params, "fail_after", 1))
        self.inline = bool(_param(params, "inline", 0))
        self.lock = threading.Lock()
        self.received = 0
        self.threads = set()

    def execute(self, requests):
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            with self.lock:
                self.received += 1
                number = self.received
            empty = self.empty_every and number % self.empty_every == 0
            fail = self.fail_every and number % self.fail_every == 0
            count = 0 if empty else (self.fail_after if fail else self.responses)
            args = (request.get_response_sender(), np.array(data), count, bool(fail))
            if self.inline:
                self._respond(*args)
                continue
            thread = threading.Thread(target=self._respond, args=args, daemon=True)
            with self.lock:
                self.threads.add(thread)
            thread.start()
        return None

    def _respond(self, sender, data, count, fail):
        start = time.monotonic()
        try:
            for index in range(count):
                delay = start + self.first_s + index * self.gap_s - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", data)]))
            if fail:
                error = pb_utils.TritonError(f"failed after {count} responses (fail_every {self.fail_every})")
                sender.send(pb_utils.InferenceResponse(error=error), flags=FINAL)
            else:
                sender.send(flags=FINAL)
        finally:
            with self.lock:
                self.threads.discard(threading.current_thread())

    def finalize(self):
        with self.lock:
            threads = list(self.threads)
        for thread in threads:
            thread.join(timeout=5)
