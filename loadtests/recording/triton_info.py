"""What the run was measured against: Triton's server metadata and each model's metadata and config.

Read over plain HTTP (urllib: it works in plain Python and under gevent's monkey-patching).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import quote

TIMEOUT_S = 5.0


def get_json(http_address: str, path: str, timeout_s: float = TIMEOUT_S) -> dict:
    with urllib.request.urlopen(f"http://{http_address}{path}", timeout=timeout_s) as response:
        return json.loads(response.read())


def fetch_triton_info(http_address: str, models: list[str]) -> dict:
    """{"server": /v2, "models": {m: {"metadata": ..., "config": ...}}}; errors recorded, not raised.

    Example: fetch_triton_info("127.0.0.1:8000", ["bert_qa"])["models"]["bert_qa"]["config"]["max_batch_size"]
    """
    info: dict = {"http": http_address, "models": {}}
    try:
        info["server"] = get_json(http_address, "/v2")
    except (urllib.error.URLError, OSError, ValueError) as error:
        info["error"] = f"server metadata: {error}"
    for model in models:
        entry: dict = {}
        try:
            entry["metadata"] = get_json(http_address, f"/v2/models/{quote(model)}")
            entry["config"] = get_json(http_address, f"/v2/models/{quote(model)}/config")
        except (urllib.error.URLError, OSError, ValueError) as error:
            entry["error"] = str(error)
        info["models"][model] = entry
    return info
