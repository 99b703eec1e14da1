"""Encoded image files as they are (`--image-format jpeg|png`): one file per batch row.

For models that decode on the server. Two input contracts, NVIDIA's both:

- BYTES [1] (or [-1]): one element per image holding the whole file, as the demo ensemble
  `resnet50_jpeg` takes. A batch of 4 is a [4, 1] BYTES tensor.
- UINT8 [-1]: the file's bytes as the tensor itself, as python_backend's
  `examples/preprocessing` and dali_backend's ResNet-50 ensemble take (`max_batch_size` 256,
  their clients send shape [1, file length]). Triton's tensors are rectangular, so a batch
  of files of different lengths is one [batch, longest] tensor with each file followed by
  zeros (dali_backend's clients pad the same way); JPEG and PNG decoders stop at the file's
  end marker and never read the zeros.

Which files: those of `--image-dir` whose first bytes are the format's signature (never the
file name's extension), read once in the constructor and never re-encoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from loadtests.config.model_spec import ModelSpec, TensorSpec
from loadtests.config.settings import IMAGE_JPEG
from loadtests.errors import ModelMismatchError, PayloadError
from loadtests.workloads.batch_spec import SampleLayout, check_batch_size
from loadtests.workloads.images import DEFAULT_IMAGE_DIR

ENCODED_INPUT_HELP = (
    "one input that holds each image's file: BYTES [1] (one element per image, as the demo ensemble "
    "resnet50_jpeg takes) or UINT8 [-1] (the file's bytes, as NVIDIA's python_backend and DALI "
    "preprocessing examples take)"
)
# Each format's file signature (its first bytes): what a file is, whatever its name says.
SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "JPEG": (b"\xff\xd8\xff",),
    "PNG": (b"\x89PNG\r\n\x1a\n",),
    "GIF": (b"GIF87a", b"GIF89a"),
    "BMP": (b"BM",),
    "TIFF": (b"II*\x00", b"MM\x00*"),
}
RAW_CONTRACT = "UINT8 [-1]: each row the file's bytes, zero-padded to the longest file of its batch"
BYTES_CONTRACT = "BYTES: one element per image, the whole file"


def sniff_format(head: bytes) -> str:
    """The encoded format a file's first bytes announce ("JPEG", "PNG", ..., or "unknown").

    Example: sniff_format(b"\\xff\\xd8\\xff\\xe0") == "JPEG"
    """
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    return next((name for name, starts in SIGNATURES.items() if head.startswith(starts)), "unknown")


def select_encoded_files(image_format: str, image_dir: str | Path | None = None) -> list[Path]:
    """The files of `image_dir` (or that one file) in `image_format`, by signature, sorted by name;
    PayloadError (naming what was found) if there is none.

    Example: select_encoded_files("jpeg")[0].name == "Minduka_Present_Blue_Pack.jpg"
    """
    wanted = image_format.upper()
    path = Path(image_dir) if image_dir is not None else DEFAULT_IMAGE_DIR
    if path.is_file():
        found = _format_of(path)
        if found != wanted:
            raise PayloadError(
                f"{path} is not a {wanted} file (its first bytes say {found}): --image-format {image_format}"
            )
        return [path]
    if not path.is_dir():
        raise PayloadError(f"image directory {path} does not exist")
    formats = {file: _format_of(file) for file in sorted(path.iterdir()) if file.is_file()}
    selected = [file for file, found in formats.items() if found == wanted]
    if not selected:
        images = [f"{file.name} ({found})" for file, found in formats.items() if found != "unknown"]
        raise PayloadError(
            f"image directory {path} holds no {wanted} file (chosen by their first bytes, not their names) "
            f"for --image-format {image_format}; it holds {', '.join(images) or 'no image'}"
        )
    return selected


def _format_of(path: Path) -> str:
    with open(path, "rb") as file:
        return sniff_format(file.read(16))


@dataclass(frozen=True)
class EncodedInput:
    """The model input that takes encoded files, and which contract it follows.

    Example: EncodedInput.find(resnet50_jpeg).raw is False
    """

    tensor: TensorSpec
    sample: SampleLayout
    raw: bool  # UINT8 [-1], the file's bytes as the tensor; else one BYTES element per image

    @classmethod
    def find(cls, model: ModelSpec, image_format: str = IMAGE_JPEG) -> EncodedInput:
        """The model's one encoded-image input; ModelMismatchError otherwise."""
        described = ", ".join(f"{t.name} {t.datatype} {list(t.shape)}" for t in model.inputs)
        if len(model.inputs) != 1:
            raise ModelMismatchError(
                f"model {model.name!r} takes {described}: --image-format {image_format} sends encoded image "
                f"files and needs {ENCODED_INPUT_HELP}"
            )
        tensor = model.inputs[0]
        sample = SampleLayout.of(model, tensor, rank=1)
        if sample is not None and tensor.datatype == "BYTES" and sample.dims[0] in (1, -1):
            return cls(tensor, sample, raw=False)
        if sample is not None and tensor.datatype == "UINT8" and sample.dims[0] == -1:
            return cls(tensor, sample, raw=True)
        raise ModelMismatchError(
            f"model {model.name!r} takes {described}, not encoded images: --image-format {image_format} needs "
            f"{ENCODED_INPUT_HELP} (use --image-format tensor for this model)"
        )


class EncodedImageWorkload:
    """Batches of image files' bytes, for a model that decodes them itself.

    Example:
        >>> wl = EncodedImageWorkload(resnet50_jpeg)  # input "image" BYTES [1]
        >>> wl.make_batch(4, np.random.default_rng(0))["image"].shape
        (4, 1)
    """

    def __init__(self, model: ModelSpec, image_dir: str | Path | None = None, image_format: str = IMAGE_JPEG) -> None:
        self.model = model
        self.image_format = image_format
        self.input = EncodedInput.find(model, image_format)
        self.input_name = self.input.tensor.name
        self.files = select_encoded_files(image_format, image_dir)
        contents = [path.read_bytes() for path in self.files]
        # An object array of Python bytes is what the clients serialise as BYTES elements.
        self.encoded = np.empty((len(contents), 1), dtype=object)
        for row, content in enumerate(contents):
            self.encoded[row, 0] = content
        self.raw = [np.frombuffer(content, dtype=np.uint8) for content in contents]

    def make_batch(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """`batch_size` files drawn at random (with replacement), one per row."""
        check_batch_size(self.model, batch_size)
        idx = rng.integers(0, len(self.files), size=batch_size)
        if not self.input.raw:
            return {self.input_name: self.input.sample.stack(self.encoded[idx])}
        files = [self.raw[i] for i in idx]
        batch = np.zeros((batch_size, max(len(f) for f in files)), dtype=np.uint8)
        for row, content in enumerate(files):
            batch[row, : len(content)] = content
        return {self.input_name: self.input.sample.stack(batch)}

    def describe(self) -> dict:
        """What this workload sends, for config.json: format, input, contract, files."""
        tensor = self.input.tensor
        return {
            "image_format": self.image_format,
            "input": f"{tensor.name} {tensor.datatype} {list(tensor.shape)}",
            "contract": RAW_CONTRACT if self.input.raw else BYTES_CONTRACT,
            "files": [{"file": str(path), "bytes": path.stat().st_size} for path in self.files],
        }
