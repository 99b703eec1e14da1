"""ResNet users sending encoded images (`--image-format jpeg`) to the demo ensemble resnet50_jpeg.

Against the session's real Triton (the demo repository holds the ensemble: resnet50_preprocess
then resnet50). Each run's counts must equal Triton's for the ensemble and for each composing
model, the run directory must hold each composing model's breakdown, and the payload bytes
per request must be the image files' (not a 602 KB FP32 tensor's).
"""

from __future__ import annotations

import pytest

from analysis.__main__ import main as analysis_main
from loadtests.workloads.encoded_images import select_encoded_files
from loadtests.workloads.images import list_images
from tests.helpers import model_stats, read_summary, run_locust, triton_options

ENSEMBLE = "resnet50_jpeg"
COMPOSING = ("resnet50_preprocess", "resnet50")
BATCH_SPEC = "1:0.5,4:0.5"  # batch 1 and a BYTES batch of 4 in the same run
# BYTES elements travel with a 4-byte length prefix; the rest of a request body is the JSON
# header (HTTP) or the protobuf fields (gRPC): a few hundred bytes per request at most.
REQUEST_OVERHEAD_MAX = 600


def _run(triton, tmp_path, user_class: str, extra: list[str]) -> tuple[dict, dict[str, dict]]:
    """One short run; returns summary.json and Triton's count deltas per model."""
    models = (ENSEMBLE, *COMPOSING)
    before = {model: model_stats(triton.http_address, model) for model in models}
    run_dir = tmp_path / user_class
    result = run_locust(
        [user_class],
        [*triton_options(triton), *extra, "--validate-responses", "--run-dir", str(run_dir)],
        users=2,
        run_time="4s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    after = {model: model_stats(triton.http_address, model) for model in models}
    deltas = {m: {key: after[m][key] - before[m][key] for key in after[m]} for m in models}
    return read_summary(run_dir), deltas


@pytest.fixture(scope="module")
def jpeg_runs(triton, tmp_path_factory):
    root = tmp_path_factory.mktemp("jpeg")
    options = ["--image-format", "jpeg", "--batch-size", BATCH_SPEC]
    return {
        protocol: (root / f"ResNet{protocol}User", *_run(triton, root, f"ResNet{protocol}User", options))
        for protocol in ("Http", "Grpc")
    }


@pytest.mark.parametrize("protocol", ["Http", "Grpc"])
def test_jpeg_counts_equal_triton_per_composing_model(jpeg_runs, protocol):
    _, summary, deltas = jpeg_runs[protocol]
    (endpoint,) = summary["endpoints"]
    assert endpoint["model"] == ENSEMBLE
    assert endpoint["failures"] == 0, endpoint["failures_by_class"]
    assert endpoint["requests"] > 5
    assert endpoint["inferences"] > endpoint["requests"]  # batches of 4 were sent too
    # The ensemble and each composing model: the client's counts are Triton's.
    for model in (ENSEMBLE, *COMPOSING):
        assert deltas[model]["requests"] == endpoint["requests"], model
        assert deltas[model]["inferences"] == endpoint["inferences"], model
    # summary.json's server breakdown holds every composing model, with Triton's counts.
    server = summary["server"]
    for model in (ENSEMBLE, *COMPOSING):
        assert server[model]["requests"] == deltas[model]["requests"], model
        assert server[model]["inferences"] == deltas[model]["inferences"], model
    assert server["resnet50_preprocess"]["compute_infer_us"] > 0


@pytest.mark.parametrize("protocol", ["Http", "Grpc"])
def test_jpeg_payload_is_the_image_files(jpeg_runs, protocol):
    _, summary, _ = jpeg_runs[protocol]
    (endpoint,) = summary["endpoints"]
    sizes = [path.stat().st_size for path in select_encoded_files("jpeg")]
    per_request = endpoint["bytes_sent_per_request"]
    assert per_request == pytest.approx(endpoint["bytes_sent"] / endpoint["requests"], abs=0.1)
    per_inference = endpoint["bytes_sent"] / endpoint["inferences"]
    assert min(sizes) <= per_inference <= max(sizes) + REQUEST_OVERHEAD_MAX
    # 1000 FP32 probabilities per image come back.
    assert endpoint["bytes_received"] / endpoint["inferences"] >= 4000
    assert endpoint["bytes_received_per_request"] == pytest.approx(
        endpoint["bytes_received"] / endpoint["requests"], abs=0.1
    )


def test_report_and_compare_show_payload_bytes_and_composing_models(jpeg_runs, triton, tmp_path, capsys):
    jpeg_dir, _, _ = jpeg_runs["Http"]
    tensor_summary, _ = _run(triton, tmp_path, "ResNetHttpUser", ["--batch-size", BATCH_SPEC])
    tensor_dir = tmp_path / "ResNetHttpUser"
    (tensor_endpoint,) = tensor_summary["endpoints"]
    # A preprocessed 3x224x224 FP32 image is 602,112 bytes.
    assert tensor_endpoint["bytes_sent"] / tensor_endpoint["inferences"] >= 3 * 224 * 224 * 4

    assert analysis_main(["report", str(jpeg_dir)]) == 0
    report = (jpeg_dir / "report.md").read_text()
    assert "request bytes/req" in report
    for model in COMPOSING:
        assert f"{model} (step of {ENSEMBLE}" in report

    out = tmp_path / "compare"
    assert analysis_main(["compare", str(tensor_dir), str(jpeg_dir), "--labels", "tensor,jpeg", "--out", str(out)]) == 0
    capsys.readouterr()
    markdown = (out / "compare.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in markdown.splitlines() if line.startswith("|")}
    assert "request bytes/req" in rows and "response bytes/req" in rows
    tensor_bytes = round(tensor_endpoint["bytes_sent_per_request"])
    assert f"{tensor_bytes:,}" in rows["request bytes/req"]
    # The server breakdown per model of both runs: the jpeg run's composing models are there.
    assert "resnet50_preprocess (step of resnet50_jpeg" in markdown


def test_ensemble_classifies_each_file_as_resnet50_does_the_client_tensor(triton):
    """The server's preprocessing is the tensor clients': same probabilities, bit for bit, for
    every demo image (JPEG and PNG, transparency included); a file that does not decode fails
    its request with Triton's error, not the server."""
    import numpy as np
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    from loadtests.workloads.images import image_tensor

    files = list_images()
    encoded = np.array([[path.read_bytes()] for path in files], dtype=object)
    tensors = np.stack([image_tensor(path) for path in files])
    client = httpclient.InferenceServerClient(triton.http_address)
    try:
        image = httpclient.InferInput("image", list(encoded.shape), "BYTES")
        image.set_data_from_numpy(encoded)
        from_bytes = client.infer(ENSEMBLE, [image]).as_numpy("probabilities")
        tensor = httpclient.InferInput("input", list(tensors.shape), "FP32")
        tensor.set_data_from_numpy(tensors)
        from_tensor = client.infer("resnet50", [tensor]).as_numpy("probabilities")
        np.testing.assert_array_equal(from_bytes, from_tensor)

        garbage = httpclient.InferInput("image", [1, 1], "BYTES")
        garbage.set_data_from_numpy(np.array([[b"not an image"]], dtype=object))
        with pytest.raises(InferenceServerException, match="cannot decode image"):
            client.infer(ENSEMBLE, [garbage])
        assert client.is_model_ready("resnet50_preprocess")
    finally:
        client.close()
