"""Workloads: what each request sends, as numpy arrays keyed by model input name.

Pure functions of (model spec, batch size, rng): no tritonclient, no Locust. Heavy
work (tokenising, decoding images, reading JSON) happens once, in the constructors;
`make_batch` only picks and stacks precomputed rows.

Example:
    >>> spec = parse_batch_size("1:0.7,8:0.3")
    >>> spec.check_against(model)
    >>> workload = BertQAWorkload(model, seq_len=384)
    >>> rng = np.random.default_rng(0)
    >>> inputs = workload.make_batch(spec.sample(rng), rng)
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from loadtests.config.batch_size import BatchSizeSpec, parse_batch_size
from loadtests.workloads.batch_spec import check_batch_size
from loadtests.workloads.bert_qa import (
    BertQAWorkload,
    QAExample,
    default_vocab_file,
    load_qa_examples,
    map_bert_inputs,
    parse_input_map,
)
from loadtests.workloads.encoded_images import EncodedImageWorkload
from loadtests.workloads.generic import GenericWorkload, parse_shape_overrides
from loadtests.workloads.images import ImageInput, ImageWorkload, preprocess_image
from loadtests.workloads.input_data import load_input_data


@runtime_checkable
class Workload(Protocol):
    """Anything that makes the input tensors of one request.

    `make_batch` returns {input name: array}; for a batching model each array's first
    dim is `batch_size`, for a non-batching model (batch_size 1) the arrays have the
    model's own shapes.
    """

    def make_batch(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]: ...


__all__ = [
    "BatchSizeSpec",
    "BertQAWorkload",
    "EncodedImageWorkload",
    "GenericWorkload",
    "ImageInput",
    "ImageWorkload",
    "QAExample",
    "Workload",
    "check_batch_size",
    "default_vocab_file",
    "load_input_data",
    "load_qa_examples",
    "map_bert_inputs",
    "parse_batch_size",
    "parse_input_map",
    "parse_shape_overrides",
    "preprocess_image",
]
