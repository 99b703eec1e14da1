"""Encoded images sent the ways NVIDIA's examples send them, to models that decode them.

The contracts (read from NVIDIA's sources, see docs/guides/ensembles.md): a BYTES [1] element per
image (the demo ensemble `resnet50_jpeg`), and the file's raw bytes as UINT8 [-1]
(python_backend's examples/preprocessing, dali_backend's ResNet-50 ensemble). Each is served
here by a decoding model (tests/image_decoder_model.py), batching (dynamic batching, up to 8)
and not, in a temporary repository on a Triton of this module's own. The decoder fails any
request with a row that is not one of the expected files' format and decoded size, so a wrong
payload (a PNG in a JPEG run, a padded row that no longer decodes) is a counted failure.

The matrix: HTTP and gRPC in each run, contract x batching, batch sizes 1 and 4 in the same
run; every endpoint's requests and inferences must add up to Triton's counts of the model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from loadtests.server import LocalTriton
from loadtests.workloads.encoded_images import select_encoded_files
from tests.helpers import THROWAWAY_STOP_S, model_stats, read_summary, run_locust

DECODER_SOURCE = Path(__file__).parents[2] / "image_decoder_model.py"
MAX_BATCH_SIZE = 8
# model -> (input datatype, dims, max_batch_size, image format)
MODELS = {
    "decode_bytes": ("TYPE_STRING", "[ 1 ]", MAX_BATCH_SIZE, "jpeg"),
    "decode_raw": ("TYPE_UINT8", "[ -1 ]", MAX_BATCH_SIZE, "jpeg"),
    "decode_bytes_unbatched": ("TYPE_STRING", "[ 1 ]", 0, "jpeg"),
    "decode_raw_unbatched": ("TYPE_UINT8", "[ -1 ]", 0, "jpeg"),
    "decode_raw_png": ("TYPE_UINT8", "[ -1 ]", MAX_BATCH_SIZE, "png"),
}
BATCHING_SPEC = "1:0.5,4:0.5"


def _size(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        return image.size


def _expected(image_format: str) -> dict:
    """What the decoder accepts: the format and the decoded sizes of the files the suite picks."""
    return {"format": image_format.upper(), "sizes": [_size(path) for path in select_encoded_files(image_format)]}


def _config(name: str, datatype: str, dims: str, max_batch_size: int, image_format: str) -> str:
    batching = "dynamic_batching { }\n" if max_batch_size else ""
    expected = json.dumps(json.dumps(_expected(image_format)))  # a pbtxt string literal
    return (
        f'name: "{name}"\nbackend: "python"\nmax_batch_size: {max_batch_size}\n'
        f'input [ {{ name: "IMAGE" data_type: {datatype} dims: {dims} }} ]\n'
        f'output [ {{ name: "SIZE" data_type: TYPE_INT32 dims: [ 2 ] }} ]\n'
        f"instance_group [ {{ count: 1 kind: KIND_CPU }} ]\n{batching}"
        f'parameters {{ key: "expected" value: {{ string_value: {expected} }} }}\n'
    )


def write_repository(repository: Path) -> Path:
    """The decoding models in `repository` (docs/guides/ensembles.md serves them to measure the contracts:
    `python -c "from pathlib import Path; from tests.system.workloads.test_encoded_images import write_repository as w;
    w(Path('/tmp/decoders'))"`, then `python -m loadtests serve --model-repository /tmp/decoders`)."""
    for name, contract in MODELS.items():
        (repository / name / "1").mkdir(parents=True)
        (repository / name / "1" / "model.py").write_text(DECODER_SOURCE.read_text())
        (repository / name / "config.pbtxt").write_text(_config(name, *contract))
    return repository


@pytest.fixture(scope="module")
def decoding_triton(tmp_path_factory):
    """A Triton serving only the decoding models (Python stubs: kept out of the session's Triton)."""
    repository = write_repository(tmp_path_factory.mktemp("decoders"))
    with LocalTriton(
        [repository],
        log_file=tmp_path_factory.mktemp("decoding_triton-log") / "triton.log",
        stop_timeout_s=THROWAWAY_STOP_S,
    ) as triton:
        yield triton


def _run(triton, run_dir: Path, model: str) -> tuple[dict, dict, dict]:
    """One run of both protocols against `model`: summary.json, config.json, Triton's count deltas."""
    _, _, max_batch_size, image_format = MODELS[model]
    before = model_stats(triton.http_address, model)
    result = run_locust(
        ["ResNetHttpUser", "ResNetGrpcUser"],
        [*triton.options, "--model", model, "--image-format", image_format, "--validate-responses"]
        + ["--batch-size", BATCHING_SPEC if max_batch_size else "1", "--run-dir", str(run_dir)],
        users=4,
        run_time="3s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    after = model_stats(triton.http_address, model)
    config = json.loads((run_dir / "config.json").read_text())
    return read_summary(run_dir), config, {key: after[key] - before[key] for key in after}


@pytest.mark.parametrize("model", list(MODELS))
def test_every_request_decodes_and_counts_equal_triton(decoding_triton, tmp_path, model):
    datatype, _, max_batch_size, image_format = MODELS[model]
    summary, config, delta = _run(decoding_triton, tmp_path / model, model)
    endpoints = {endpoint["protocol"]: endpoint for endpoint in summary["endpoints"]}
    assert set(endpoints) == {"http", "grpc"}
    for endpoint in endpoints.values():
        assert endpoint["failures"] == 0, endpoint["failures_by_class"]
        assert endpoint["requests"] > 0
        sizes = {"1", "4"} if max_batch_size else {"1"}
        assert set(endpoint["requested_batch_sizes"]) == sizes
    # Every request the suite counted is one Triton counted, every image one inference.
    assert sum(e["requests"] for e in endpoints.values()) == delta["requests"]
    assert sum(e["inferences"] for e in endpoints.values()) == delta["inferences"]
    # config.json says what was sent: the format's files, by signature, and the contract.
    files = [str(path) for path in select_encoded_files(image_format)]
    for endpoint in endpoints.values():
        payload = config["payloads"][endpoint["name"]]
        assert payload["image_format"] == image_format
        assert [entry["file"] for entry in payload["files"]] == files
        assert payload["input"].startswith("IMAGE " + ("UINT8" if datatype == "TYPE_UINT8" else "BYTES"))


def test_decoded_sizes_are_the_files_and_a_wrong_payload_fails(decoding_triton):
    """Row by row, the decoder's sizes are those of the files the rows hold (padding included);
    a PNG sent to the JPEG model and a cut file fail with the decoder's message."""
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    from loadtests.config.model_spec import ModelSpec
    from loadtests.workloads import EncodedImageWorkload

    client = httpclient.InferenceServerClient(decoding_triton.http_address)
    try:
        spec = ModelSpec.from_triton(client.get_model_metadata("decode_raw"), client.get_model_config("decode_raw"))
        workload = EncodedImageWorkload(spec)
        files = {path.read_bytes(): _size(path) for path in workload.files}
        batch = workload.make_batch(4, np.random.default_rng(3))["IMAGE"]
        tensor = httpclient.InferInput("IMAGE", list(batch.shape), "UINT8")
        tensor.set_data_from_numpy(batch)
        sizes = client.infer("decode_raw", [tensor]).as_numpy("SIZE")
        rows = [row.tobytes() for row in batch]
        assert len({len(file) for file in files if any(row.startswith(file) for row in rows)}) > 1  # padded
        for row, size in zip(rows, sizes, strict=True):
            assert tuple(size) == next(files[f] for f in files if row.startswith(f))

        png = np.frombuffer(select_encoded_files("png")[0].read_bytes(), dtype=np.uint8)[np.newaxis]
        cut = batch[:1, : len(rows[0]) // 2]
        for wrong, message in ((png, "decoded a PNG"), (cut, "cannot decode")):
            tensor = httpclient.InferInput("IMAGE", list(wrong.shape), "UINT8")
            tensor.set_data_from_numpy(np.ascontiguousarray(wrong))
            with pytest.raises(InferenceServerException, match=message):
                client.infer("decode_raw", [tensor])
    finally:
        client.close()
