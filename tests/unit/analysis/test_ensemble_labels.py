"""A composing model is named one way in every report table: "MODEL (step of ENSEMBLE)"."""

from __future__ import annotations

from analysis import tables
from loadtests.run_format.ensembles import ensemble_of

ENSEMBLE = "pipeline"
STEPS = ("preprocess", "classify")
# config.json's triton "models", as the load test records an ensemble and its composing models.
MODELS = {
    ENSEMBLE: {
        "config": {
            "platform": "ensemble",
            "ensemble_scheduling": {"step": [{"model_name": step} for step in STEPS]},
        }
    },
    **{step: {"part_of": [ENSEMBLE], "config": {"backend": "python"}} for step in STEPS},
}
SERVER = {model: {"requests": 10, "executions": 10} for model in MODELS}


def test_the_model_table_and_the_server_table_name_a_composing_model_alike():
    server_names = [row[0] for row in tables.server_rows(SERVER, ensemble_of(MODELS))]
    for step in STEPS:
        label = tables.model_label(step, MODELS)
        assert label == f"{step} (step of {ENSEMBLE})"
        assert label in server_names, server_names
    # The ensemble first, then its steps in step order.
    assert server_names[0].startswith(ENSEMBLE) and server_names[1:] == [f"{s} (step of {ENSEMBLE})" for s in STEPS]
