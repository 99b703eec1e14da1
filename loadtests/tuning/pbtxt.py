"""A model configuration as config.pbtxt, the protobuf text format Triton reads.

    text = config_pbtxt(api.config("my_model"))   # 'name: "my_model"\\nmax_batch_size: 8\\n...'

Triton's JSON form of a config is protobuf's JSON mapping of model_config.proto, so protobuf
itself converts it: parsed into tritonclient's generated `ModelConfig` message and printed in
text format. Fields at their default value are left out, as in a hand-written config.pbtxt; a
message that is present but empty stays (`dynamic_batching { }` turns the batcher on).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2


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
