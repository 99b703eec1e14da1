"""Encoded-image payloads without a server: which files a format sends, and how each input
contract lays them out (loadtests/workloads/encoded_images.py).

The contracts are NVIDIA's: a BYTES element per image (the demo ensemble `resnet50_jpeg`), or
the file's raw bytes as UINT8 [-1] (python_backend's examples/preprocessing and dali_backend's
ResNet-50 ensemble, `max_batch_size` 256, the client sending shape [1, file length]).
tests/system/workloads/test_encoded_images.py sends them to models that decode them on a real Triton.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from loadtests.config.model_spec import ModelSpec, TensorSpec
from loadtests.errors import ModelMismatchError, PayloadError
from loadtests.workloads import EncodedImageWorkload
from loadtests.workloads.images import DEFAULT_IMAGE_DIR

JPEG_START = b"\xff\xd8\xff"
PNG_START = b"\x89PNG\r\n\x1a\n"


def _model(datatype: str, dims: tuple[int, ...], max_batch_size: int = 8) -> ModelSpec:
    image = TensorSpec("IMAGE", datatype, dims)
    return ModelSpec("decoder", "1", "python", max_batch_size, (image,), (TensorSpec("SIZE", "INT32", (2,)),))


def _rows(workload: EncodedImageWorkload, batch_size: int, draws: int = 20) -> list[bytes]:
    """The encoded files of `draws` batches, one bytes object per row (padding included)."""
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(draws):
        array = workload.make_batch(batch_size, rng)[workload.input_name]
        if workload.model.batches:
            rows += [row[0] if array.dtype == object else row.tobytes() for row in array]
        else:
            rows.append(array[0] if array.dtype == object else array.tobytes())
    return rows


def test_jpeg_format_sends_jpeg_files_only():
    """The default directory holds PNGs too: --image-format jpeg must not send them."""
    rows = _rows(EncodedImageWorkload(_model("BYTES", (1,))), 4)
    assert all(row.startswith(JPEG_START) for row in rows), {row[:8] for row in rows}
    # Every JPEG of the directory is drawn, not only one of them.
    jpegs = {p.read_bytes() for p in DEFAULT_IMAGE_DIR.iterdir() if p.read_bytes().startswith(JPEG_START)}
    assert len(jpegs) >= 2
    assert set(rows) == jpegs


def test_png_format_sends_png_files_only():
    workload = EncodedImageWorkload(_model("BYTES", (1,)), image_format="png")
    rows = _rows(workload, 4)
    assert rows and all(row.startswith(PNG_START) for row in rows)
    assert {path.suffix for path in workload.files} == {".png"}


def test_files_are_chosen_by_their_bytes_not_their_names(tmp_path):
    """A PNG named .jpg is not sent as a JPEG, a JPEG named .png is; a directory with no JPEG
    is refused with its files' formats named."""
    (tmp_path / "photo.jpg").write_bytes((DEFAULT_IMAGE_DIR / "logo2.png").read_bytes())
    (tmp_path / "logo.png").write_bytes((DEFAULT_IMAGE_DIR / "grace_hopper.jpg").read_bytes())
    workload = EncodedImageWorkload(_model("BYTES", (1,)), image_dir=tmp_path)
    assert [path.name for path in workload.files] == ["logo.png"]

    (tmp_path / "logo.png").unlink()
    with pytest.raises(PayloadError, match=r"holds no JPEG file.*photo\.jpg \(PNG\)"):
        EncodedImageWorkload(_model("BYTES", (1,)), image_dir=tmp_path)
    with pytest.raises(PayloadError, match="is not a JPEG file"):
        EncodedImageWorkload(_model("BYTES", (1,)), image_dir=tmp_path / "photo.jpg")


def test_uint8_rows_hold_the_raw_file_padded_with_zeros_to_the_longest_of_the_batch():
    """UINT8 [-1]: a batch is one rectangular [batch, length] tensor, so each file is followed
    by zeros up to the longest file of its batch (as dali_backend's clients pad); batch 1 is
    the file exactly."""
    workload = EncodedImageWorkload(_model("UINT8", (-1,)))
    files = {path.read_bytes() for path in workload.files}
    rng = np.random.default_rng(1)
    for batch_size in (1, 4):
        for _ in range(10):
            array = workload.make_batch(batch_size, rng)["IMAGE"]
            assert array.dtype == np.uint8 and array.ndim == 2 and array.shape[0] == batch_size
            rows = [row.tobytes() for row in array]
            originals = [next(f for f in files if row.startswith(f)) for row in rows]
            assert array.shape[1] == max(len(f) for f in originals)
            for row, original in zip(rows, originals, strict=True):
                assert set(row[len(original) :]) <= {0}
            if batch_size == 1:
                assert rows[0] in files


def test_non_batching_models_get_the_bare_sample():
    raw = EncodedImageWorkload(_model("UINT8", (-1,), max_batch_size=0))
    array = raw.make_batch(1, np.random.default_rng(0))["IMAGE"]
    assert array.ndim == 1 and array.tobytes() in {p.read_bytes() for p in raw.files}
    encoded = EncodedImageWorkload(_model("BYTES", (1,), max_batch_size=0))
    assert encoded.make_batch(1, np.random.default_rng(0))["IMAGE"].shape == (1,)


@pytest.mark.parametrize(
    ("datatype", "dims"),
    [("FP32", (3, 224, 224)), ("UINT8", (3,)), ("UINT8", (-1, -1)), ("BYTES", (2,)), ("INT8", (-1,))],
)
def test_other_inputs_are_refused_naming_both_contracts(datatype, dims):
    with pytest.raises(ModelMismatchError, match=r"BYTES .*\[1\].*UINT8 \[-1\]"):
        EncodedImageWorkload(_model(datatype, dims))


def test_describe_names_format_contract_and_files():
    workload = EncodedImageWorkload(_model("UINT8", (-1,)))
    described = workload.describe()
    assert described["image_format"] == "jpeg"
    assert described["input"] == "IMAGE UINT8 [-1]"
    assert "zero" in described["contract"]
    assert [entry["file"] for entry in described["files"]] == [str(path) for path in workload.files]
    assert [entry["bytes"] for entry in described["files"]] == [path.stat().st_size for path in workload.files]


def test_tensor_workload_describes_its_preprocessed_files():
    from loadtests.workloads import ImageWorkload

    image = TensorSpec("input", "FP32", (3, 224, 224))
    workload = ImageWorkload(ModelSpec("resnet", "1", "onnx", 8, (image,), ()))
    described = workload.describe()
    assert described["image_format"] == "tensor"
    assert described["input"] == "input FP32 [3, 224, 224]"
    assert {Path(entry["file"]).suffix for entry in described["files"]} == {".jpg", ".png"}
