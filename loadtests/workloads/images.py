"""Image-classification inputs (ResNet-style): real images, ImageNet preprocessing.

Each image is decoded and preprocessed once, in the constructor: resize the short side
(bilinear), centre-crop to the model's height x width, scale to [0, 1] and normalise
with the ImageNet mean/std, lay out CHW or HWC as the model's input shape says.
UINT8 inputs get the cropped 0-255 pixels as they are (the model normalises).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from loadtests.config.model_spec import ModelSpec, TensorSpec
from loadtests.config.settings import IMAGE_TENSOR
from loadtests.errors import ModelMismatchError, PayloadError
from loadtests.workloads.batch_spec import SampleLayout, check_batch_size
from loadtests.workloads.payload_files import payloads_dir

DEFAULT_IMAGE_DIR = payloads_dir() / "images"
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm"})

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
RESIZE_SHORT_SIDE = 256  # pixels, for a 224 crop; larger crops keep the 256:224 ratio
CROP_RATIO = 256 / 224
DEFAULT_SIZE = 224  # pixels, for a model whose height or width is variable (-1)
SUPPORTED_TYPES = ("FP32", "FP16", "FP64", "UINT8")
EXPECTED_SHAPE_HELP = "[3, H, W] (NCHW) or [H, W, 3] (NHWC) per image, FP32, FP16 or UINT8"


@dataclass(frozen=True)
class ImageInput:
    """The model input that takes images, and how it lays them out.

    Example: ImageInput.find(model).layout == "NCHW"
    """

    tensor: TensorSpec
    sample: SampleLayout
    layout: str  # "NCHW" or "NHWC" (N being the batch dim the client adds)
    height: int
    width: int

    @classmethod
    def find(cls, model: ModelSpec, input_name: str | None = None) -> ImageInput:
        """The model's one image-like input (or `input_name`); ModelMismatchError if none."""
        if input_name is not None:
            try:
                candidates = [model.input(input_name)]
            except KeyError:
                names = ", ".join(t.name for t in model.inputs)
                raise ModelMismatchError(
                    f"model {model.name!r} has no input {input_name!r} (its inputs: {names})"
                ) from None
        else:
            candidates = list(model.inputs)
        found = [f for f in (cls._detect(model, t) for t in candidates) if f is not None]
        described = ", ".join(f"{t.name} {t.datatype} {list(t.shape)}" for t in candidates)
        if not found:
            raise ModelMismatchError(
                f"model {model.name!r} has no image input ({described}): expected {EXPECTED_SHAPE_HELP}"
            )
        if len(found) > 1:
            raise ModelMismatchError(
                f"model {model.name!r} has several image-like inputs ({described}): "
                "name the one to fill with input_name"
            )
        image = found[0]
        others = [t.name for t in model.inputs if t.name != image.tensor.name]
        if others:
            raise ModelMismatchError(
                f"model {model.name!r} also takes {', '.join(others)}, which image "
                "workloads cannot fill: use the generic Triton user classes"
            )
        return image

    @classmethod
    def _detect(cls, model: ModelSpec, tensor: TensorSpec) -> ImageInput | None:
        if tensor.datatype not in SUPPORTED_TYPES:
            return None
        sample = SampleLayout.of(model, tensor, rank=3)
        if sample is None:
            return None
        dims = sample.dims
        if dims[0] == 3:
            layout, hw = "NCHW", dims[1:]
        elif dims[2] == 3:
            layout, hw = "NHWC", dims[:2]
        else:
            return None
        height, width = (d if d > 0 else DEFAULT_SIZE for d in hw)
        return cls(tensor, sample, layout, height, width)


def list_images(image_dir: str | Path | None = None) -> list[Path]:
    """The image files in `image_dir` (or that file itself), sorted by name."""
    path = Path(image_dir) if image_dir is not None else DEFAULT_IMAGE_DIR
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise PayloadError(f"image directory {path} does not exist")
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise PayloadError(f"image directory {path} holds no images ({', '.join(sorted(IMAGE_SUFFIXES))})")
    return files


def preprocess_image(path: str | Path, image: ImageInput) -> np.ndarray:
    """One image as the model's sample tensor (no batch dim).

    Example: preprocess_image("payloads/images/grace_hopper.jpg", ImageInput.find(model)).shape == (3, 224, 224)
    """
    return image_tensor(path, image.height, image.width, image.tensor.numpy_dtype, image.layout)


def image_tensor(
    source: str | Path | bytes,
    height: int = DEFAULT_SIZE,
    width: int = DEFAULT_SIZE,
    dtype: np.dtype | type = np.float32,
    layout: str = "NCHW",
) -> np.ndarray:
    """An image file (a path, or its encoded bytes) as one sample tensor, no batch dim.

    The one preprocessing both sides share: the tensor clients run it before the test, and
    the demo ensemble's `resnet50_preprocess` runs it on the server for the bytes it gets,
    so a tensor run and a JPEG run feed `resnet50` the same numbers.

    Example: image_tensor(Path("payloads/images/grace_hopper.jpg").read_bytes()).shape == (3, 224, 224)
    """
    from PIL import Image, UnidentifiedImageError

    name = "the image bytes" if isinstance(source, bytes) else str(source)
    try:
        with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as img:
            img.load()
            rgb = _to_rgb(img)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise PayloadError(f"cannot decode image {name}: {exc}") from None

    short_side = max(RESIZE_SHORT_SIDE, math.ceil(max(height, width) * CROP_RATIO))
    scale = short_side / min(rgb.size)
    new_w = max(width, round(rgb.width * scale))
    new_h = max(height, round(rgb.height * scale))
    rgb = rgb.resize((new_w, new_h), Image.Resampling.BILINEAR)
    left, top = (new_w - width) // 2, (new_h - height) // 2
    pixels = np.asarray(rgb.crop((left, top, left + width, top + height)))  # HWC uint8

    if np.dtype(dtype) == np.uint8:
        array = pixels
    else:
        array = ((pixels.astype(np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).astype(dtype)
    if layout == "NCHW":
        array = array.transpose(2, 0, 1)
    return np.ascontiguousarray(array)


def _to_rgb(img):
    from PIL import Image

    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        # Transparent pixels would otherwise turn black (or random) on convert("RGB").
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img.convert("RGB")


class ImageWorkload:
    """Batches of real, preprocessed images for an image-classification model.

    Example:
        >>> wl = ImageWorkload(resnet_model)  # input [3, 224, 224] FP32
        >>> wl.make_batch(4, np.random.default_rng(0))["input"].shape
        (4, 3, 224, 224)
    """

    def __init__(
        self,
        model: ModelSpec,
        image_dir: str | Path | None = None,
        input_name: str | None = None,
    ) -> None:
        self.model = model
        self.image = ImageInput.find(model, input_name)
        self.input_name = self.image.tensor.name
        self.layout = self.image.layout
        self.files = list_images(image_dir)
        # One row per image, so that make_batch is a single fancy-index copy.
        self.samples = np.stack([preprocess_image(f, self.image) for f in self.files])

    def make_batch(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """`batch_size` images drawn at random (with replacement)."""
        check_batch_size(self.model, batch_size)
        idx = rng.integers(0, len(self.files), size=batch_size)
        return {self.input_name: self.image.sample.stack(self.samples[idx])}

    def describe(self) -> dict:
        """What this workload sends, for config.json: preprocessed tensors of these files."""
        tensor = self.image.tensor
        return {
            "image_format": IMAGE_TENSOR,
            "input": f"{tensor.name} {tensor.datatype} {list(tensor.shape)}",
            "contract": f"{self.layout} {self.image.height}x{self.image.width}, preprocessed by the client",
            "files": [{"file": str(path), "bytes": path.stat().st_size} for path in self.files],
        }
