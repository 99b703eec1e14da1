"""What a run shows while it runs: the Prometheus endpoint and the web UI's exact tab."""

from __future__ import annotations

from argparse import Namespace

import pytest

from loadtests.errors import SpecError
from loadtests.options.table import apply_form


def test_web_form_values_take_the_type_of_the_option_they_set():
    options = Namespace(model="", request_timeout=30.0, window=1.0, doc_stride=128, http_json=False, vocab=None)
    form = {"model": "identity", "request_timeout": "2.5", "doc_stride": "64", "http_json": "true", "vocab": "v.txt"}
    apply_form(options, {**form, "user_count": "3", "host": "http://elsewhere", "not_an_option": "x"})
    assert vars(options) == {
        "model": "identity",
        "request_timeout": 2.5,
        "window": 1.0,
        "doc_stride": 64,
        "http_json": True,
        "vocab": "v.txt",
    }
    with pytest.raises(SpecError, match="--doc-stride 'many' is not a int"):
        apply_form(options, {"doc_stride": "many"})
    # A repeatable option given on the command line (a list): the form's text, split at commas
    # as Locust's /swarm does, so the pre-flight checks what the run will use.
    options = Namespace(header=["X-A: env:A", "X-B: env:B"])
    apply_form(options, {"header": "X-C: 1,X-D: 2"})
    assert options.header == ["X-C: 1", "X-D: 2"]
