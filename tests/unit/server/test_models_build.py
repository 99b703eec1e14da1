"""The demo-model builder: files load, honour the model contracts, and are reproducible.

Only the `tiny` preset is built here (into a temporary directory); `full` takes tens of
seconds and hundreds of MB and is exercised by hand (see models/build.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from models.build import (
    BERT_FILE,
    PRESETS,
    RESNET_FILE,
    STAMP_FILE,
    build,
    ensure_built,
    is_up_to_date,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
BERT_INPUTS = ("input_ids", "segment_ids", "input_mask")
VOCAB = 30522


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build("tiny", tmp_path_factory.mktemp("tiny"), log=lambda _: None)


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def bert(tiny_dir: Path) -> ort.InferenceSession:
    return _session(tiny_dir / BERT_FILE)


@pytest.fixture(scope="module")
def resnet(tiny_dir: Path) -> ort.InferenceSession:
    return _session(tiny_dir / RESNET_FILE)


def _bert_feed(batch: int, seq: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random token ids, two segments, and per-row padding of different lengths."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, VOCAB, (batch, seq), dtype=np.int32)
    segments = np.zeros((batch, seq), dtype=np.int32)
    segments[:, seq // 3 :] = 1
    mask = np.ones((batch, seq), dtype=np.int32)
    for row in range(batch):
        mask[row, seq - (row * seq) // 4 :] = 0  # row 0 unpadded, later rows padded more
    return {"input_ids": ids, "segment_ids": segments, "input_mask": mask}


def _images(batch: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, 3, 224, 224), dtype=np.float32)


def test_files_pass_the_onnx_checker(tiny_dir: Path) -> None:
    for name in (BERT_FILE, RESNET_FILE):
        onnx.checker.check_model(onnx.load(str(tiny_dir / name)), full_check=True)


def test_bert_signature(bert: ort.InferenceSession) -> None:
    assert [(i.name, i.type, i.shape) for i in bert.get_inputs()] == [
        (name, "tensor(int32)", ["batch", "seq"]) for name in BERT_INPUTS
    ]
    assert [(o.name, o.type, o.shape) for o in bert.get_outputs()] == [
        ("start_logits", "tensor(float)", ["batch", "seq"]),
        ("end_logits", "tensor(float)", ["batch", "seq"]),
    ]


def test_resnet_signature(resnet: ort.InferenceSession) -> None:
    assert [(i.name, i.type, i.shape) for i in resnet.get_inputs()] == [
        ("input", "tensor(float)", ["batch", 3, 224, 224])
    ]
    assert [(o.name, o.type, o.shape) for o in resnet.get_outputs()] == [
        ("probabilities", "tensor(float)", ["batch", 1000])
    ]


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("seq", [128, 384])
def test_bert_outputs(bert: ort.InferenceSession, batch: int, seq: int) -> None:
    start, end = bert.run(None, _bert_feed(batch, seq))
    for logits in (start, end):
        assert logits.dtype == np.float32
        assert logits.shape == (batch, seq)
        assert np.isfinite(logits).all()
    assert not np.allclose(start, end)


def test_bert_accepts_max_positions(bert: ort.InferenceSession) -> None:
    start, _ = bert.run(None, _bert_feed(1, 512))
    assert start.shape == (1, 512)


@pytest.mark.parametrize("batch", [1, 3])
def test_resnet_outputs(resnet: ort.InferenceSession, batch: int) -> None:
    (probs,) = resnet.run(None, {"input": _images(batch)})
    assert probs.dtype == np.float32
    assert probs.shape == (batch, 1000)
    assert np.isfinite(probs).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    # Random weights must not saturate the softmax into a one-hot.
    assert probs.max() < 0.5


def test_bert_ignores_masked_out_tokens(bert: ort.InferenceSession) -> None:
    feed = _bert_feed(1, 128)
    feed["input_mask"][:, 100:] = 0
    start, end = bert.run(None, feed)

    changed = {k: v.copy() for k, v in feed.items()}
    changed["input_ids"][:, 100:] = np.arange(28, dtype=np.int32) + 1000
    start2, end2 = bert.run(None, changed)
    np.testing.assert_allclose(start2[:, :100], start[:, :100], atol=1e-5)
    np.testing.assert_allclose(end2[:, :100], end[:, :100], atol=1e-5)

    unmasked = {k: v.copy() for k, v in feed.items()}
    unmasked["input_mask"][:] = 1
    start3, _ = bert.run(None, unmasked)
    assert not np.allclose(start3[:, :100], start[:, :100], atol=1e-4)


def test_bert_uses_segment_ids(bert: ort.InferenceSession) -> None:
    feed = _bert_feed(1, 128)
    start, _ = bert.run(None, feed)
    start2, _ = bert.run(None, feed | {"segment_ids": np.zeros_like(feed["segment_ids"])})
    assert not np.allclose(start, start2, atol=1e-4)


@pytest.mark.parametrize("seq", [128, 384])
def test_bert_batch_rows_match_single_requests(bert: ort.InferenceSession, seq: int) -> None:
    """Triton concatenates requests into one batch: each row must not see the others."""
    feed = _bert_feed(3, seq)
    batched = bert.run(None, feed)
    for row in range(3):
        alone = bert.run(None, {k: v[row : row + 1] for k, v in feed.items()})
        for got, want in zip(batched, alone, strict=True):
            np.testing.assert_allclose(got[row : row + 1], want, atol=1e-4)


def test_resnet_batch_rows_match_single_requests(resnet: ort.InferenceSession) -> None:
    images = _images(3)
    (batched,) = resnet.run(None, {"input": images})
    for row in range(3):
        (alone,) = resnet.run(None, {"input": images[row : row + 1]})
        np.testing.assert_allclose(batched[row : row + 1], alone, atol=1e-4)


def test_same_seed_gives_identical_bytes(tiny_dir: Path, tmp_path: Path) -> None:
    again = build("tiny", tmp_path, force=True, log=lambda _: None)
    for name in (BERT_FILE, RESNET_FILE):
        assert (again / name).read_bytes() == (tiny_dir / name).read_bytes()


def test_rebuild_is_skipped_when_up_to_date(tmp_path: Path) -> None:
    messages: list[str] = []
    build("tiny", tmp_path, log=messages.append)
    stamp = json.loads((tmp_path / STAMP_FILE).read_text())
    assert stamp["preset"] == "tiny"
    assert stamp["params"]["bert"]["hidden"] == PRESETS["tiny"].bert.hidden
    mtime = (tmp_path / BERT_FILE).stat().st_mtime_ns

    messages.clear()
    assert build("tiny", tmp_path, log=messages.append) == tmp_path
    assert len(messages) == 1 and "up to date" in messages[0]
    assert ensure_built("tiny", tmp_path) == tmp_path
    assert (tmp_path / BERT_FILE).stat().st_mtime_ns == mtime

    # A stamp from another builder version, or a truncated file, forces a rebuild.
    stamp["builder_version"] = -1
    (tmp_path / STAMP_FILE).write_text(json.dumps(stamp))
    assert not is_up_to_date("tiny", tmp_path)
    build("tiny", tmp_path, log=lambda _: None)
    assert is_up_to_date("tiny", tmp_path)
    (tmp_path / RESNET_FILE).write_bytes(b"truncated")
    assert not is_up_to_date("tiny", tmp_path)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "models.build", *args],
        check=False,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_builds_then_reports_up_to_date(tmp_path: Path) -> None:
    first = _cli("--preset", "tiny", "--out", str(tmp_path))
    assert first.returncode == 0, first.stderr
    assert "built" in first.stdout
    second = _cli("--preset", "tiny", "--out", str(tmp_path))
    assert second.returncode == 0, second.stderr
    assert "up to date" in second.stdout
    forced = _cli("--preset", "tiny", "--out", str(tmp_path), "--force")
    assert "built" in forced.stdout


def test_cli_rejects_unknown_preset(tmp_path: Path) -> None:
    result = _cli("--preset", "huge", "--out", str(tmp_path))
    assert result.returncode == 2
    assert "invalid choice" in result.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("model", ["bert_qa", "bert_qa_dynbatch"])
def test_bert_configs_declare_the_position_table_as_max_sequence_length(model):
    """Their dims say [-1]; pre-flight reads this parameter to refuse a --seq-len the network cannot take."""
    import re

    config = (REPO_ROOT / "models" / "repository" / model / "config.pbtxt").read_text()
    declared = re.search(r'key: "max_sequence_length" value: \{ string_value: "(\d+)" \}', config)
    assert declared is not None, config
    assert {preset.bert.max_positions for preset in PRESETS.values()} == {int(declared.group(1))}
