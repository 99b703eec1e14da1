"""Put a model's original configuration back after tune, however tune ends.

    how = restore_original(api, "my_model", original_config)   # "reloaded from the repository"

Steps, each only if the one before did not give back the original (compared as Triton reports
it, GET v2/models/<m>/config):
1. load without override: Triton rereads the model directory (on Triton 2.51 it does nothing
   after a load with an override, finding the files unchanged);
2. unload, wait until it is gone, load without override: the repository's config.pbtxt;
3. load with the original JSON as override: the model had been loaded with an override before
   tune began (its config.pbtxt differs from what it ran), so only that JSON gives it back.
Raises RepositoryError, naming what it ran with, if none of them did.
"""

from __future__ import annotations

import signal
from typing import Any

from loadtests.tuning.repository_api import RepositoryApi, RepositoryError


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
