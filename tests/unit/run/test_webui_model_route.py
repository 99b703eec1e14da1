"""The web form's Model suggestions (loadtests/run/webui_models.py) without a browser: the route's
answer over HTTP and over gRPC alike, against the session's Triton, and none without a Triton."""

from __future__ import annotations

from flask import Flask

from loadtests.config.settings import Settings
from loadtests.run.webui_models import ROUTE, ModelSuggestions
from loadtests.server import TritonPorts
from tests.helpers import grpc_target, http_target


def answer(settings: Settings) -> list[dict[str, str]]:
    app = Flask(__name__)
    ModelSuggestions(lambda: settings).install(app)
    response = app.test_client().get(ROUTE)
    assert response.status_code == 200
    return response.get_json()["models"]


def test_no_triton_no_suggestions_and_no_error():
    with TritonPorts.held() as nobody:
        settings = Settings(
            triton_http=http_target(f"127.0.0.1:{nobody.http}"), triton_grpc=grpc_target(f"127.0.0.1:{nobody.grpc}")
        )
        assert answer(settings) == []
