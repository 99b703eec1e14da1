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
The calls go through the suite's one control-plane reader (loadtests/clients/control.py);
every method raises RepositoryError (one line) when Triton refuses or cannot be reached.

Checked against Triton 2.51 here: a load without a body after a load with an override keeps
the override (Triton finds the repository unchanged and does nothing), so `restore_original` unloads
first. Unload returns before the model is gone (the index shows UNLOADING), hence
`wait_unloaded`.

Put a model's original configuration back after tune, however tune ends.

    how = restore_original(api, "my_model", original_config)   # "reloaded from the repository"

Steps, each only if the one before did not give back the original (compared as Triton reports
it, GET v2/models/<m>/config):
1. load without override: Triton rereads the model directory (on Triton 2.51 it does nothing
   after a load with an override, finding the files unchanged);
2. unload, wait until it is gone, load without override: the repository's config.pbtxt;
3. load with the original JSON as override: the model had been loaded with an override before
   tune began (its config.pbtxt differs from what it ran), so only that JSON gives it back.
Raises RepositoryError, naming what it ran with, if none of them did.

A model configuration as config.pbtxt, the protobuf text format Triton reads.

    text = config_pbtxt(api.config("my_model"))   # 'name: "my_model"\nmax_batch_size: 8\n...'

Triton's JSON form of a config is protobuf's JSON mapping of model_config.proto, so protobuf
itself converts it: parsed into tritonclient's generated `ModelConfig` message and printed in
text format. Fields at their default value are left out, as in a hand-written config.pbtxt; a
message that is present but empty stays (`dynamic_batching { }` turns the batcher on).
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from loadtests.clients.control import TritonControl, base_url
from loadtests.config.security import ConnectionSecurity
from loadtests.errors import ServerError

DEFAULT_TIMEOUT_S = 300.0  # a load runs the model's initialisation (and warm-up) before answering
READ_TIMEOUT_S = 10.0
UNLOAD_POLL_S = 0.1
DEFAULT_UNLOAD_WAIT_S = 60.0
# What Triton answers a load or unload when its model control mode is NONE or POLL
# (ModelRepositoryManager::LoadUnloadModel checks this before doing anything).
NOT_EXPLICIT_MESSAGE = "explicit model load / unload is not allowed"
RESTRICTED_MESSAGE = "This API is restricted"


class RepositoryError(ServerError):
    """Triton refused a repository call or could not be reached; the message is one line."""


class RepositoryApi:
    """Load, unload, index and read model configurations on one Triton (HOST:PORT of its HTTP),
    through the suite's one reader of Triton's control plane (clients/control.py)."""

    def __init__(
        self, http_address: str, timeout_s: float = DEFAULT_TIMEOUT_S, security: ConnectionSecurity | None = None
    ) -> None:
        self.base = base_url(http_address)
        self.timeout_s = timeout_s
        # Reads are short; a load has its own, long timeout (Triton answers once the model is up).
        # `security`: TLS files and headers (--ssl-*, --header), as the runs against it use them.
        self.control = TritonControl(http_address, timeout_s=min(timeout_s, READ_TIMEOUT_S), security=security)

    # -- the documented API ----------------------------------------------------------------------
    def load(self, model: str, config: dict[str, Any] | None) -> None:
        """Load or reload `model`; with `config`, Triton uses it instead of the model's config.pbtxt."""
        with _one_line():
            self.control.load(model, config, timeout_s=self.timeout_s)

    def unload(self, model: str) -> None:
        """Ask Triton to unload `model` (it answers before the model is gone: see wait_unloaded)."""
        with _one_line():
            self.control.unload(model)

    def index(self) -> list[dict[str, str]]:
        """Every model in the repositories, loaded or not: name, version, state, reason."""
        with _one_line():
            return list(self.control.repository_index())

    def config(self, model: str) -> dict[str, Any]:
        """The configuration Triton runs `model` with (its JSON form of model_config.proto)."""
        with _one_line():
            return dict(self.control.model_config(model))

    # -- built on it -----------------------------------------------------------------------------
    def ready(self, model: str) -> bool:
        try:
            return self.control.model_ready(model)
        except ServerError:
            return False

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


@contextmanager
def _one_line() -> Iterator[None]:
    """The control plane's ServerError as this module's RepositoryError (same one-line message)."""
    try:
        yield
    except RepositoryError:
        raise
    except ServerError as error:
        raise RepositoryError(str(error)) from None


def _same(api: RepositoryApi, model: str, original: dict[str, Any]) -> bool:
    try:
        return api.config(model) == original
    except RepositoryError:
        return False


def restore_original(api: RepositoryApi, model: str, original: dict[str, Any]) -> str:
    """Load `model` back to `original`; returns how it was done. Ctrl-C is held off meanwhile."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave a variant loaded
    try:
        api.load(model, None)
        if _same(api, model, original):
            return "reloaded from the repository"
        api.unload(model)
        api.wait_unloaded(model)
        api.load(model, None)
        if _same(api, model, original):
            return "unloaded and loaded from the repository"
        api.load(model, original)
        if _same(api, model, original):
            return "loaded with the original configuration as override (the repository's config.pbtxt differs)"
        raise RepositoryError(f"{model} did not come back to its original configuration")
    finally:
        signal.signal(signal.SIGINT, previous)


class PbtxtError(ValueError):
    """The JSON has a field this tritonclient's model_config.proto does not know."""


def config_pbtxt(config: dict[str, Any]) -> str:
    """Triton's JSON of a model config -> config.pbtxt text; raises PbtxtError."""
    try:
        message = json_format.ParseDict(config, model_config_pb2.ModelConfig())
    except json_format.ParseError as error:
        raise PbtxtError(f"not a ModelConfig this tritonclient knows: {error}") from None
    return text_format.MessageToString(message)


def parse_pbtxt(text: str) -> dict[str, Any]:
    """config.pbtxt text -> the JSON form (defaults left out), for comparing configs."""
    message = text_format.Parse(text, model_config_pb2.ModelConfig())
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def normalised(config: dict[str, Any]) -> dict[str, Any]:
    """Triton's JSON with fields at their default left out (what parse_pbtxt returns)."""
    message = json_format.ParseDict(config, model_config_pb2.ModelConfig())
    return json_format.MessageToDict(message, preserving_proto_field_name=True)
