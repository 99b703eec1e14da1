"""The web form's Model suggestions (loadtests/run/webui_models.py) without a browser: the route's
answer over HTTP and over gRPC alike, against the session's Triton, and none without a Triton.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/run/test_webui_model_route.py.
"""

from __future__ import annotations

from loadtests.config.settings import Settings
from tests.helpers import grpc_target, http_target
from tests.unit.run.test_webui_model_route import answer


def test_the_ready_models_and_their_shapes_are_the_same_over_http_and_grpc(triton):
    ready = sorted({entry["name"] for entry in triton.control().repository_index(ready=True)})
    over_http = answer(Settings(triton_http=http_target(triton.http_address)))
    # --triton-grpc given and --triton-http left at its default: read over gRPC (as the statistics are).
    over_grpc = answer(Settings(triton_grpc=grpc_target(triton.grpc_address)))
    assert over_http == over_grpc and [model["name"] for model in over_http] == ready
    shapes = {model["name"]: model["shape"] for model in over_http}
    assert shapes["bert_qa_dynbatch"] == "input_ids:16 segment_ids:16 input_mask:16"
    assert shapes["sleep"] == "INPUT0:16" and shapes["identity"] == ""
