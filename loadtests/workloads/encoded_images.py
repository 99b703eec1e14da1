"""Encoded image files as they are (`--image-format jpeg`): one file's bytes per batch row.

For models that decode on the server, such as the demo ensemble `resnet50_jpeg`: the model
takes one BYTES input of one element per sample (dims [1], or [-1]), and each element is a
whole image file (JPEG, PNG, ...), read once in the constructor and never re-encoded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from loadtests.errors import ModelMismatchError
from loadtests.model_spec import ModelSpec
from loadtests.workloads.batch_spec import SampleLayout, check_batch_size
from loadtests.workloads.images import list_images

ENCODED_INPUT_HELP = "one BYTES input of one element per image (dims [1]), as the demo ensemble resnet50_jpeg takes"


def find_encoded_input(model: ModelSpec) -> tuple[str, SampleLayout]:
    """The model's one BYTES input of one element per sample; ModelMismatchError otherwise.

    Example: find_encoded_input(resnet50_jpeg)[0] == "image"
    """
    described = ", ".join(f"{t.name} {t.datatype} {list(t.shape)}" for t in model.inputs)
    if len(model.inputs) != 1:
        raise ModelMismatchError(
            f"model {model.name!r} takes {described}: --image-format jpeg sends encoded image files "
            f"and needs {ENCODED_INPUT_HELP}"
        )
    tensor = model.inputs[0]
    sample = SampleLayout.of(model, tensor, rank=1)
    if tensor.datatype != "BYTES" or sample is None or sample.dims[0] not in (1, -1):
        raise ModelMismatchError(
            f"model {model.name!r} takes {described}, not encoded images: --image-format jpeg needs "
            f"{ENCODED_INPUT_HELP} (use --image-format tensor for this model)"
        )
    return tensor.name, sample


class EncodedImageWorkload:
    """Batches of image files' bytes, for a model that decodes them itself.

    Example:
        >>> wl = EncodedImageWorkload(resnet50_jpeg)  # input "image" BYTES [1]
        >>> wl.make_batch(4, np.random.default_rng(0))["image"].shape
        (4, 1)
    """

    def __init__(self, model: ModelSpec, image_dir: str | Path | None = None) -> None:
        self.model = model
        self.input_name, self.sample = find_encoded_input(model)
        self.files = list_images(image_dir)
        # An object array of Python bytes is what tritonclient serialises as BYTES elements.
        self.encoded = np.empty((len(self.files), 1), dtype=object)
        for row, path in enumerate(self.files):
            self.encoded[row, 0] = path.read_bytes()

    def make_batch(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """`batch_size` files drawn at random (with replacement), one per row."""
        check_batch_size(self.model, batch_size)
        idx = rng.integers(0, len(self.files), size=batch_size)
        return {self.input_name: self.sample.stack(self.encoded[idx])}
