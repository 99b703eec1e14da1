"""Triton's model repository extension over HTTP: the only code of `tune` that changes a server.

    api = RepositoryApi("127.0.0.1:8000")
    api.require_model_control()              # ServerError unless --model-control-mode=explicit
    original = api.config("my_model")        # the model's configuration, as Triton's JSON
    api.load("my_model", {**original, "max_batch_size": 8})   # reload with a config override
    api.load("my_model", None)               # load from the repository's own config.pbtxt
    api.unload("my_model")
    api.index()                              # [{"name": ..., "version": ..., "state": ...}, ...]

The wire (docs/protocol/extension_model_repository.md in triton-inference-server/server):
`POST v2/repository/models/<m>/load` with an optional body `{"parameters": {"config": "<model
config as a JSON string>"}}` (with it, Triton loads that configuration instead of the one in the
model directory), `POST .../unload`, `POST v2/repository/index`, `GET v2/models/<m>/config`.
Every method raises RepositoryError (one line) when Triton refuses or cannot be reached.

Checked against Triton 2.51 here: a load without a body after a load with an override keeps
the override (Triton finds the repository unchanged and does nothing), so `restore.py` unloads
first. Unload returns before the model is gone (the index shows UNLOADING), hence
`wait_unloaded`.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any

from loadtests.errors import ServerError

DEFAULT_TIMEOUT_S = 300.0  # a load runs the model's initialisation (and warm-up) before answering
UNLOAD_POLL_S = 0.1
DEFAULT_UNLOAD_WAIT_S = 60.0
# What Triton answers a load or unload when its model control mode is NONE or POLL
# (ModelRepositoryManager::LoadUnloadModel checks this before doing anything).
NOT_EXPLICIT_MESSAGE = "explicit model load / unload is not allowed"
RESTRICTED_MESSAGE = "This API is restricted"


class RepositoryError(ServerError):
    """Triton refused a repository call or could not be reached; the message is one line."""


class RepositoryApi:
    """Load, unload, index and read model configurations on one Triton (HOST:PORT of its HTTP)."""

    def __init__(self, http_address: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.base = f"http://{http_address}"
        self.timeout_s = timeout_s

    # -- the wire --------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        request = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise RepositoryError(_error_text(error)) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise RepositoryError(f"cannot reach Triton at {self.base}: {reason}") from None
        return json.loads(text) if text.strip() else None

    @staticmethod
    def _model_path(model: str) -> str:
        return urllib.parse.quote(model, safe="")

    # -- the documented API ----------------------------------------------------------------------
    def load(self, model: str, config: dict[str, Any] | None) -> None:
        """Load or reload `model`; with `config`, Triton uses it instead of the model's config.pbtxt."""
        body = {"parameters": {"config": json.dumps(config)}} if config is not None else None
        self._call("POST", f"/v2/repository/models/{self._model_path(model)}/load", body)

    def unload(self, model: str) -> None:
        """Ask Triton to unload `model` (it answers before the model is gone: see wait_unloaded)."""
        self._call("POST", f"/v2/repository/models/{self._model_path(model)}/unload")

    def index(self) -> list[dict[str, str]]:
        """Every model in the repositories, loaded or not: name, version, state, reason."""
        return list(self._call("POST", "/v2/repository/index", {}) or [])

    def config(self, model: str) -> dict[str, Any]:
        """The configuration Triton runs `model` with (its JSON form of model_config.proto)."""
        return dict(self._call("GET", f"/v2/models/{self._model_path(model)}/config"))

    # -- built on it -----------------------------------------------------------------------------
    def ready(self, model: str) -> bool:
        try:
            self._call("GET", f"/v2/models/{self._model_path(model)}/ready")
        except RepositoryError:
            return False
        return True

    def state(self, model: str) -> str | None:
        """The model's state in the index (READY, UNLOADING, UNAVAILABLE, ...), None if not listed."""
        states = [entry.get("state", "") for entry in self.index() if entry.get("name") == model]
        return states[0] if states else None

    def wait_unloaded(self, model: str, timeout_s: float = DEFAULT_UNLOAD_WAIT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while self.state(model) in ("READY", "UNLOADING", "LOADING"):
            if time.monotonic() > deadline:
                raise RepositoryError(f"model {model!r} was still loaded {timeout_s:g} s after the unload")
            time.sleep(UNLOAD_POLL_S)

    def require_model_control(self) -> None:
        """RepositoryError unless Triton accepts load/unload requests (--model-control-mode=explicit).

        The check unloads a model name that is in no repository: in explicit mode Triton answers
        200 and nothing changes; in NONE and POLL mode it answers "explicit model load / unload
        is not allowed ..." before looking at the name; with the repository API restricted
        (--http-restricted-api) it answers "This API is restricted". No model is touched.
        """
        names = {entry.get("name") for entry in self.index()}
        probe = f"triton-loadtest-probe-{uuid.uuid4().hex[:12]}"
        while probe in names:  # pragma: no cover - a repository with this exact name
            probe = f"triton-loadtest-probe-{uuid.uuid4().hex[:12]}"
        try:
            self.unload(probe)
        except RepositoryError as error:
            text = str(error)
            if NOT_EXPLICIT_MESSAGE in text:
                raise RepositoryError(
                    f"Triton at {self.base} does not accept model loads ({text}): "
                    "start it with --model-control-mode=explicit (python -m loadtests serve --model-control explicit)"
                ) from None
            if RESTRICTED_MESSAGE in text:
                raise RepositoryError(f"Triton at {self.base} restricts its model repository API: {text}") from None
            raise


def _error_text(error: urllib.error.HTTPError) -> str:
    raw = error.read().decode(errors="replace")
    try:
        message = json.loads(raw).get("error", raw)
    except (ValueError, AttributeError):
        message = raw
    return " ".join(str(message).split()) or f"HTTP {error.code}"
