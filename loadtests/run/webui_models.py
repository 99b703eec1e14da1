"""The web form's Model suggestions: the models Triton has ready, each with the --shape it needs.

    GET /triton-models    {"models": [{"name": "bert_qa_dynbatch",
                                       "shape": "input_ids:16 segment_ids:16 input_mask:16"},
                                      {"name": "identity", "shape": ""}, ...]}

The page asks each time it loads (webui.py's body script binds the names to the Model field as
a `<datalist>` and, for the model chosen there, fills an empty Shape field): a Triton started
after the UI, or a model loaded since, shows after a reload. The models are Triton's repository
index of ready models, read where the suite reads its statistics (`triton_stats.poller.candidates`:
the form's --triton-http, or --triton-grpc for a target reached over gRPC only). A model's
`shape` is what the suite's refusal of a variable input without --shape suggests
(`workloads.generic.suggested_shapes`, the one rule), "" when no input has a variable dim.
Nothing answers: an empty list and no error (START's pre-flight says what is wrong).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, jsonify

from loadtests.clients.control_grpc import open_control
from loadtests.config.model_spec import ModelSpec
from loadtests.config.settings import Settings
from loadtests.errors import ServerError
from loadtests.triton_stats.poller import candidates
from loadtests.workloads.generic import suggested_shapes

logger = logging.getLogger(__name__)

ROUTE = "/triton-models"
# Each call to Triton: the page waits for the answer in the background, never START.
TIMEOUT_S = 3.0


class ModelSuggestions:
    """Answers the page's question: which models the form's Triton has ready, and their --shape."""

    def __init__(self, settings: Callable[[], Settings]) -> None:
        self.settings = settings  # the process's current settings (the last START's form included)

    def install(self, app: Flask, auth=lambda view: view) -> None:
        """Add the route to Locust's web app (`auth`: Locust's login check, when --web-login is on)."""

        @app.route(ROUTE)
        @auth
        def _models() -> Response:
            return jsonify({"models": self.ready_models()})

    def ready_models(self) -> list[dict[str, str]]:
        """[{"name", "shape"}] by name, from the first candidate address that answers; [] if none does."""
        settings = self.settings()
        for target in candidates(settings):
            control = open_control(target, timeout_s=TIMEOUT_S, security=settings.security)
            try:
                names = sorted({entry["name"] for entry in control.repository_index(ready=True)})
            except ServerError as error:
                logger.debug("no model suggestions from %s: %s", target.control_address, error)
                continue
            return [{"name": name, "shape": _shape(control, name)} for name in names]
        return []


def _shape(control: Any, model: str) -> str:
    """The --shape the refusal would suggest for `model` ("" if none, or if Triton no longer describes it)."""
    try:
        return suggested_shapes(ModelSpec.from_triton(control.model_metadata(model), control.model_config(model)))
    except ServerError:  # unloaded since the index was read
        return ""
