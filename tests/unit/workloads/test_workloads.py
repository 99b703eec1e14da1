"""Unit tests of loadtests.workloads: pure functions, no server."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from loadtests.config.model_spec import ModelSpec
from loadtests.errors import ModelMismatchError, PayloadError, SpecError
from loadtests.workloads import (
    BatchSizeSpec,
    BertQAWorkload,
    GenericWorkload,
    ImageWorkload,
    Workload,
    check_batch_size,
    default_vocab_file,
    load_qa_examples,
    parse_batch_size,
    parse_input_map,
    parse_shape_overrides,
)
from loadtests.workloads.bert_qa import DEFAULT_PAYLOAD, _doc_spans
from loadtests.workloads.generic import suggested_shapes
from loadtests.workloads.images import IMAGENET_MEAN, IMAGENET_STD

REPO = Path(__file__).resolve().parents[3]
CLS, SEP = 101, 102


def make_model(inputs: list[tuple[str, str, list[int]]], max_batch_size: int = 8, name: str = "m") -> ModelSpec:
    """A ModelSpec from JSON shaped like Triton's /v2/models/<m> and /config answers."""
    batch_dim = [-1] if max_batch_size else []
    metadata = {
        "name": name,
        "versions": ["1"],
        "platform": "python",
        "inputs": [{"name": n, "datatype": dt, "shape": batch_dim + list(shape)} for n, dt, shape in inputs],
        "outputs": [{"name": "out", "datatype": "FP32", "shape": [*batch_dim, 2]}],
    }
    return ModelSpec.from_triton(metadata, {"name": name, "max_batch_size": max_batch_size})


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- batch SPEC --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sizes"),
    [
        ("8", (8,)),
        ("1,2,4,8", (1, 2, 4, 8)),
        (" 1, 2 ,4 ", (1, 2, 4)),
        ("1-16", tuple(range(1, 17))),
        ("4-4", (4,)),
        ("1:0.7,8:0.3", (1, 8)),
    ],
)
def test_batch_spec_valid_forms(text, sizes):
    spec = parse_batch_size(text)
    assert spec.sizes == sizes
    assert spec.max == max(sizes)
    assert spec.text == text.strip()
    assert sum(spec.probabilities) == pytest.approx(1.0)
    assert all(spec.sample(rng(i)) in sizes for i in range(20))


def test_batch_spec_weights_are_normalised():
    assert parse_batch_size("1:7,8:3").probabilities == pytest.approx((0.7, 0.3))
    assert parse_batch_size("1:0.7,8:0.3").mean == pytest.approx(0.7 + 2.4)


def test_batch_spec_fixed_always_returns_the_size():
    spec = BatchSizeSpec.parse("8")
    assert spec.is_fixed
    assert {spec.sample(rng()) for _ in range(100)} == {8}


def test_batch_spec_weighted_distribution_matches_weights():
    spec, g = parse_batch_size("1:0.7,4:0.2,8:0.1"), rng(42)
    draws = np.array([spec.sample(g) for _ in range(20_000)])
    for size, weight in ((1, 0.7), (4, 0.2), (8, 0.1)):
        assert (draws == size).mean() == pytest.approx(weight, abs=0.015)


def test_batch_spec_uniform_choice_and_range_distributions():
    g = rng(7)
    choice = np.array([parse_batch_size("1,2,4,8").sample(g) for _ in range(20_000)])
    for size in (1, 2, 4, 8):
        assert (choice == size).mean() == pytest.approx(0.25, abs=0.015)
    spec = parse_batch_size("1-16")
    draws = np.array([spec.sample(g) for _ in range(20_000)])
    assert draws.min() == 1 and draws.max() == 16
    assert draws.mean() == pytest.approx(8.5, abs=0.15)


@pytest.mark.parametrize("text", ["0", "-3", "4-2", "1:0", "a", "1,,2", "1:0.5,2", "", "1:-1", "2,2", "1.5", "1:x"])
def test_batch_spec_malformed_raises_spec_error(text):
    with pytest.raises(SpecError) as info:
        parse_batch_size(text)
    message = str(info.value)
    assert repr(text) in message
    assert "1-16" in message and "1:0.7,8:0.3" in message  # the accepted forms
    assert "\n" not in message


def test_batch_spec_check_against_max_batch_size():
    model = make_model([("x", "FP32", [4])], max_batch_size=8)
    parse_batch_size("1-8").check_against(model)
    with pytest.raises(ModelMismatchError, match=r"max_batch_size 8"):
        parse_batch_size("1,16").check_against(model)


def test_batch_spec_check_against_non_batching_model():
    model = make_model([("x", "FP32", [4])], max_batch_size=0, name="x")
    parse_batch_size("1").check_against(model)
    for text in ("2", "1,2", "1-4", "1:0.5,2:0.5"):
        with pytest.raises(ModelMismatchError) as info:
            parse_batch_size(text).check_against(model)
        assert str(info.value) == "model 'x' does not batch (max_batch_size 0): use --batch-size 1"


def test_check_batch_size():
    check_batch_size(make_model([("x", "FP32", [4])]), 8)
    with pytest.raises(ModelMismatchError):
        check_batch_size(make_model([("x", "FP32", [4])]), 9)
    with pytest.raises(ModelMismatchError, match="does not batch"):
        check_batch_size(make_model([("x", "FP32", [4])], max_batch_size=0), 2)


# --- BERT QA -------------------------------------------------------------------------

NVIDIA_INPUTS = [("input_ids", "INT32", [-1]), ("segment_ids", "INT32", [-1]), ("input_mask", "INT32", [-1])]
HF_INPUTS = [("input_ids", "INT64", [-1]), ("token_type_ids", "INT64", [-1]), ("attention_mask", "INT64", [-1])]


@pytest.fixture(scope="module")
def bert384():
    return BertQAWorkload(make_model(NVIDIA_INPUTS, name="bert_qa"), seq_len=384)


def test_payload_file_is_valid_and_varied():
    examples = load_qa_examples()
    assert len(examples) >= 60
    assert len({e.id for e in examples}) == len(examples)
    assert all(e.answer and e.answer in e.context for e in examples)
    words = [len(e.context.split()) for e in examples]
    assert min(words) < 30 and max(words) > 400


def test_bert_features_layout(bert384):
    wl = bert384
    assert wl.input_ids.shape == (wl.num_features, 384)
    for i in range(wl.num_features):
        ids, seg, mask, n = wl.input_ids[i], wl.segment_ids[i], wl.input_mask[i], wl.lengths[i]
        seps = np.flatnonzero(ids == SEP)
        assert ids[0] == CLS
        assert len(seps) == 2 and seps[1] == n - 1
        assert (seg[: seps[0] + 1] == 0).all()  # [CLS] question [SEP]
        assert (seg[seps[0] + 1 : n] == 1).all()  # context [SEP]
        assert (mask[:n] == 1).all() and (mask[n:] == 0).all()
        assert (ids[n:] == 0).all() and (seg[n:] == 0).all()  # padding


def test_bert_make_batch_shapes_and_dtypes(bert384):
    batch = bert384.make_batch(8, rng())
    assert set(batch) == {"input_ids", "segment_ids", "input_mask"}
    for array in batch.values():
        assert array.shape == (8, 384) and array.dtype == np.int32 and array.flags.c_contiguous
    assert isinstance(bert384, Workload)


def test_bert_long_context_is_split_with_stride(bert384):
    wl = bert384
    counts = np.bincount(wl.feature_example)
    assert counts.max() > 1  # some contexts exceed 384 tokens
    first = int(np.flatnonzero(counts > 1)[0])
    rows = np.flatnonzero(wl.feature_example == first)
    docs = []
    for r in rows[:2]:
        ids = wl.input_ids[r, : wl.lengths[r]]
        docs.append(ids[np.flatnonzero(ids == SEP)[0] + 1 : -1])
    # The second window starts doc_stride tokens after the first: they overlap.
    overlap = len(docs[0]) - wl.doc_stride
    assert overlap > 0
    np.testing.assert_array_equal(docs[0][wl.doc_stride :], docs[1][:overlap])


def test_doc_spans_follow_run_squad():
    assert _doc_spans(10, 20, 5) == [(0, 10)]
    assert _doc_spans(500, 300, 128) == [(0, 300), (128, 300), (256, 244)]


def test_bert_answer_positions_point_at_the_answer(bert384):
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(str(default_vocab_file()), lowercase=True)
    wl, checked = bert384, 0
    for i in np.flatnonzero(wl.start_positions > 0):
        answer = wl.examples[wl.feature_example[i]].answer
        span = wl.input_ids[i, wl.start_positions[i] : wl.end_positions[i] + 1].tolist()
        assert tokenizer.decode(span).replace(" ", "") == answer.lower().replace(" ", "")
        checked += 1
    assert checked >= 60


def test_bert_seq_len_128_gives_more_shorter_features(bert384):
    wl = BertQAWorkload(make_model(NVIDIA_INPUTS), seq_len=128)
    assert wl.num_features > bert384.num_features
    assert wl.make_batch(4, rng())["input_ids"].shape == (4, 128)
    assert wl.lengths.max() <= 128


def test_bert_variable_length_pads_to_longest_in_batch():
    wl = BertQAWorkload(make_model(NVIDIA_INPUTS), seq_len="variable")
    short, long_ = int(np.argmin(wl.lengths)), int(np.argmax(wl.lengths))
    assert wl.features([short])["input_ids"].shape == (1, wl.lengths[short])
    batch = wl.features([short, long_])
    assert batch["input_ids"].shape == (2, wl.lengths[long_])
    assert batch["input_mask"][0].sum() == wl.lengths[short]
    widths = {wl.make_batch(2, rng(s))["input_ids"].shape[1] for s in range(20)}
    assert len(widths) > 1 and max(widths) <= 384


def test_bert_hugging_face_names_and_int64():
    batch = BertQAWorkload(make_model(HF_INPUTS), seq_len=128).make_batch(2, rng())
    assert set(batch) == {"input_ids", "token_type_ids", "attention_mask"}
    assert all(a.dtype == np.int64 and a.shape == (2, 128) for a in batch.values())


def test_bert_two_input_model_without_segments():
    model = make_model([("input_ids", "INT64", [-1]), ("attention_mask", "INT64", [-1])])
    assert set(BertQAWorkload(model, seq_len=128).make_batch(1, rng())) == {"input_ids", "attention_mask"}


def test_bert_input_map_overrides_names():
    model = make_model([("input__0", "INT32", [-1]), ("input__1", "INT32", [-1]), ("input__2", "INT32", [-1])])
    with pytest.raises(ModelMismatchError) as info:
        BertQAWorkload(model, seq_len=128)
    assert "input__0" in str(info.value) and "--input-map" in str(info.value)
    mapping = parse_input_map("ids=input__0,segments=input__1,mask=input__2")
    wl = BertQAWorkload(model, seq_len=128, input_map=mapping)
    batch = wl.features([0, 1])
    np.testing.assert_array_equal(batch["input__0"], wl.input_ids[[0, 1]])
    np.testing.assert_array_equal(batch["input__1"], wl.segment_ids[[0, 1]])
    np.testing.assert_array_equal(batch["input__2"], wl.input_mask[[0, 1]])


def test_bert_input_map_wins_over_known_names():
    model = make_model(NVIDIA_INPUTS)
    wl = BertQAWorkload(model, seq_len=128, input_map={"segments": "input_mask", "mask": "segment_ids"})
    batch = wl.features([0])
    np.testing.assert_array_equal(batch["input_mask"], wl.segment_ids[[0]])


@pytest.mark.parametrize("text", ["ids", "ids=a,ids=b", "tokens=a", "ids=", "=a"])
def test_parse_input_map_malformed(text):
    with pytest.raises(SpecError, match="--input-map"):
        parse_input_map(text)


def test_bert_input_map_unknown_name():
    with pytest.raises(ModelMismatchError, match="no input 'nope'"):
        BertQAWorkload(make_model(NVIDIA_INPUTS), input_map={"ids": "nope"})


def test_bert_unmappable_model_lists_inputs_and_roles():
    model = make_model([("image", "FP32", [3, 224, 224])], name="resnet")
    with pytest.raises(ModelMismatchError) as info:
        BertQAWorkload(model)
    message = str(info.value)
    assert "image" in message and "ids" in message and "segments" in message and "mask" in message


def test_bert_fixed_sequence_dim_must_match_seq_len():
    model = make_model([(n, dt, [384]) for n, dt, _ in NVIDIA_INPUTS])
    assert BertQAWorkload(model, seq_len=384).make_batch(2, rng())["input_ids"].shape == (2, 384)
    for seq_len in (128, None):
        with pytest.raises(ModelMismatchError, match="--seq-len 384"):
            BertQAWorkload(model, seq_len=seq_len)


def test_bert_float_inputs_rejected():
    model = make_model([("input_ids", "FP32", [-1])])
    with pytest.raises(ModelMismatchError, match="INT32 or INT64"):
        BertQAWorkload(model)


def test_bert_non_batching_model():
    model = make_model([(n, dt, [1, 384]) for n, dt, _ in NVIDIA_INPUTS], max_batch_size=0)
    wl = BertQAWorkload(model, seq_len=384)
    assert wl.make_batch(1, rng())["input_ids"].shape == (1, 384)
    with pytest.raises(ModelMismatchError, match="does not batch"):
        wl.make_batch(2, rng())


def test_bert_custom_payload_tokens(tmp_path):
    payload = tmp_path / "qa.jsonl"
    payload.write_text(json.dumps({"id": "a", "question": "Who wrote it?", "context": "Ada wrote it."}) + "\n\n")
    wl = BertQAWorkload(make_model(NVIDIA_INPUTS), seq_len=16, payload_file=payload)
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(str(default_vocab_file()), lowercase=True)
    expected = tokenizer.encode("Who wrote it?", "Ada wrote it.").ids  # [CLS] q [SEP] c [SEP]
    assert wl.num_features == 1
    assert wl.input_ids[0, : wl.lengths[0]].tolist() == expected
    assert wl.segment_ids[0, : wl.lengths[0]].tolist() == tokenizer.encode("Who wrote it?", "Ada wrote it.").type_ids


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("not json\n", "not JSON"),
        ('{"question": "q"}\n', "context"),
        ('{"question": "q", "context": "abc", "answer": "zzz"}\n', "substring"),
        ("", "no question"),
    ],
)
def test_bert_bad_payload(tmp_path, content, match):
    payload = tmp_path / "qa.jsonl"
    payload.write_text(content)
    with pytest.raises(PayloadError, match=match):
        BertQAWorkload(make_model(NVIDIA_INPUTS), payload_file=payload)


def test_bert_missing_files(tmp_path):
    with pytest.raises(PayloadError, match="cannot read"):
        BertQAWorkload(make_model(NVIDIA_INPUTS), payload_file=tmp_path / "nope.jsonl")
    with pytest.raises(PayloadError, match="--vocab"):
        BertQAWorkload(make_model(NVIDIA_INPUTS), vocab_file=tmp_path / "vocab.txt")
    assert DEFAULT_PAYLOAD.is_file()


@pytest.mark.parametrize("seq_len", [0, 8, "abc"])
def test_bert_bad_seq_len(seq_len):
    with pytest.raises(SpecError, match="--seq-len"):
        BertQAWorkload(make_model(NVIDIA_INPUTS), seq_len=seq_len)


# --- images ---------------------------------------------------------------------------

LOW = (0 - IMAGENET_MEAN) / IMAGENET_STD
HIGH = (1 - IMAGENET_MEAN) / IMAGENET_STD


def test_images_nchw_fp32_normalised():
    wl = ImageWorkload(make_model([("input", "FP32", [3, 224, 224])]))
    assert wl.layout == "NCHW" and len(wl.files) >= 3
    batch = wl.make_batch(4, rng())["input"]
    assert batch.shape == (4, 3, 224, 224) and batch.dtype == np.float32
    for c in range(3):
        assert LOW[c] - 1e-5 <= batch[:, c].min() and batch[:, c].max() <= HIGH[c] + 1e-5
    assert batch.std() > 0.3  # real pictures, not a constant
    assert isinstance(wl, Workload)


def test_images_nhwc_fp16_and_uint8_agree():
    fp16 = ImageWorkload(make_model([("x", "FP16", [224, 224, 3])]))
    u8 = ImageWorkload(make_model([("x", "UINT8", [224, 224, 3])]))
    assert fp16.layout == u8.layout == "NHWC"
    a, b = fp16.make_batch(2, rng(1))["x"], u8.make_batch(2, rng(1))["x"]
    assert a.shape == b.shape == (2, 224, 224, 3)
    assert a.dtype == np.float16 and b.dtype == np.uint8
    assert b.max() > 200 and b.min() < 50  # 0-255, not normalised
    np.testing.assert_allclose(a, (b / 255.0 - IMAGENET_MEAN) / IMAGENET_STD, atol=0.01)


def test_images_solid_colour_exact_values(tmp_path):
    Image.new("RGB", (400, 300), (255, 0, 128)).save(tmp_path / "solid.png")
    wl = ImageWorkload(make_model([("input", "FP32", [3, 224, 224])]), image_dir=tmp_path)
    pixel = wl.make_batch(1, rng())["input"][0, :, 100, 100]
    np.testing.assert_allclose(pixel, (np.array([1.0, 0.0, 128 / 255]) - IMAGENET_MEAN) / IMAGENET_STD, rtol=1e-5)


def test_images_transparent_png_becomes_white(tmp_path):
    Image.new("RGBA", (64, 64), (0, 0, 0, 0)).save(tmp_path / "clear.png")
    wl = ImageWorkload(make_model([("x", "UINT8", [3, 224, 224])]), image_dir=tmp_path)
    assert (wl.samples == 255).all()


def test_images_variable_size_and_non_square(tmp_path):
    assert ImageWorkload(make_model([("x", "FP32", [3, -1, -1])])).make_batch(1, rng())["x"].shape == (1, 3, 224, 224)
    wl = ImageWorkload(make_model([("x", "FP32", [320, 288, 3])]))
    assert wl.make_batch(1, rng())["x"].shape == (1, 320, 288, 3)


def test_images_non_batching_model():
    wl = ImageWorkload(make_model([("x", "FP32", [1, 3, 224, 224])], max_batch_size=0))
    assert wl.make_batch(1, rng())["x"].shape == (1, 3, 224, 224)
    bare = ImageWorkload(make_model([("x", "FP32", [3, 224, 224])], max_batch_size=0))
    assert bare.make_batch(1, rng())["x"].shape == (3, 224, 224)


def test_images_model_without_image_input():
    with pytest.raises(ModelMismatchError, match=r"\[3, H, W\]"):
        ImageWorkload(make_model([("input_ids", "INT32", [-1])]))
    with pytest.raises(ModelMismatchError, match="no input"):
        ImageWorkload(make_model([("x", "FP32", [3, 224, 224])]), input_name="y")


def test_images_model_with_extra_inputs():
    model = make_model([("x", "FP32", [3, 224, 224]), ("scale", "FP32", [1])])
    with pytest.raises(ModelMismatchError, match="scale"):
        ImageWorkload(model)


def test_images_bad_directories(tmp_path):
    model = make_model([("x", "FP32", [3, 224, 224])])
    with pytest.raises(PayloadError, match="does not exist"):
        ImageWorkload(model, image_dir=tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("no images here")
    with pytest.raises(PayloadError, match="no images"):
        ImageWorkload(model, image_dir=tmp_path)
    (tmp_path / "broken.jpg").write_bytes(b"not a jpeg at all")
    with pytest.raises(PayloadError, match=r"broken\.jpg"):
        ImageWorkload(model, image_dir=tmp_path)


# --- generic --------------------------------------------------------------------------


def test_generic_random_dtypes_and_ranges():
    model = make_model(
        [
            ("i32", "INT32", [4]),
            ("u8", "UINT8", [2, 2]),
            ("f32", "FP32", [3]),
            ("f16", "FP16", [3]),
            ("flag", "BOOL", [5]),
            ("text", "BYTES", [2]),
        ]
    )
    batch = GenericWorkload(model).make_batch(8, rng())
    assert batch["i32"].shape == (8, 4) and batch["i32"].dtype == np.int32
    assert batch["i32"].min() >= 0 and batch["i32"].max() < 100
    assert batch["u8"].shape == (8, 2, 2) and batch["u8"].dtype == np.uint8
    assert batch["f32"].dtype == np.float32 and ((batch["f32"] >= 0) & (batch["f32"] < 1)).all()
    assert batch["f16"].dtype == np.float16
    assert batch["flag"].dtype == np.bool_
    text = batch["text"]
    assert text.shape == (8, 2) and text.dtype == object
    assert all(isinstance(v, bytes) and 0 < len(v) <= 16 for v in text.ravel())


def test_generic_zero_mode():
    model = make_model([("x", "FP32", [3]), ("s", "BYTES", [1])])
    batch = GenericWorkload(model, data_mode="zero").make_batch(2, rng())
    assert (batch["x"] == 0).all() and batch["x"].shape == (2, 3)
    assert batch["s"].shape == (2, 1)
    with pytest.raises(SpecError):
        GenericWorkload(model, data_mode="ones")


def test_generic_variable_dims_need_shape_override():
    model = make_model([("tokens", "INT64", [-1]), ("fixed", "FP32", [2])])
    with pytest.raises(ModelMismatchError) as info:
        GenericWorkload(model)
    assert "'tokens'" in str(info.value) and "--shape tokens:" in str(info.value)
    batch = GenericWorkload(model, parse_shape_overrides("tokens:7")).make_batch(3, rng())
    assert batch["tokens"].shape == (3, 7) and batch["fixed"].shape == (3, 2)


def test_parse_shape_overrides():
    assert parse_shape_overrides("a:1,2 b:3") == {"a": (1, 2), "b": (3,)}
    assert parse_shape_overrides(["a:1,2", "b:3"]) == {"a": (1, 2), "b": (3,)}
    assert parse_shape_overrides("input:0:3,4") == {"input:0": (3, 4)}
    assert parse_shape_overrides(None) == {}
    for bad in ("a", "a:", "a:0", "a:1,,2", ":3", "a:x"):
        with pytest.raises(SpecError, match="--shape"):
            parse_shape_overrides(bad)


def test_the_refusal_and_the_web_form_suggest_one_shape_that_the_workload_accepts():
    """What the refusal of a variable input says to pass is `suggested_shapes`' item for it (the
    web form's Shape field, loadtests/run/webui_models.py), and the whole value builds a batch."""
    model = make_model([("tokens", "INT64", [-1]), ("fixed", "FP32", [2]), ("grid", "FP32", [3, -1])])
    value = suggested_shapes(model)
    assert value == "tokens:16 grid:3,16"
    for item in value.split():
        others = " ".join(other for other in value.split() if other != item)
        with pytest.raises(ModelMismatchError) as info:
            GenericWorkload(model, parse_shape_overrides(others))
        assert f"pass --shape {item} (batch dim excluded)" in str(info.value)
    # None given: every variable input named at once, in one value to paste (not one per refusal).
    with pytest.raises(ModelMismatchError) as info:
        GenericWorkload(model, {})
    assert "inputs 'tokens' [-1], 'grid' [3, -1] have a variable shape" in str(info.value)
    assert f'pass --shape "{value}" (batch dim excluded)' in str(info.value)
    # A scalar input (no dims once the batch dim is left out) beside a variable one: the refusal
    # names the variable one, not a ValueError from an empty shape.
    with pytest.raises(ModelMismatchError, match="pass --shape tokens:16 "):
        GenericWorkload(make_model([("flag", "BOOL", []), ("tokens", "INT64", [-1])]), {})
    batch = GenericWorkload(model, parse_shape_overrides(value)).make_batch(2, rng())
    assert batch["tokens"].shape == (2, 16) and batch["grid"].shape == (2, 3, 16)
    assert suggested_shapes(make_model([("fixed", "FP32", [2])])) == ""


def test_generic_override_must_fit_model():
    model = make_model([("x", "FP32", [3, -1])])
    with pytest.raises(ModelMismatchError, match="no input 'y'"):
        GenericWorkload(model, {"y": (1,)})
    with pytest.raises(ModelMismatchError, match="does not fit"):
        GenericWorkload(model, {"x": (4, 5)})


def test_generic_non_batching_model():
    model = make_model([("x", "INT32", [2, 3])], max_batch_size=0)
    wl = GenericWorkload(model)
    assert wl.make_batch(1, rng())["x"].shape == (2, 3)
    with pytest.raises(ModelMismatchError):
        wl.make_batch(2, rng())


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps({"data": data}))
    return path


def test_generic_input_data_round_robin(tmp_path):
    model = make_model([("INPUT0", "INT32", [4]), ("INPUT1", "FP32", [2])])
    data = [{"INPUT0": [i] * 4, "INPUT1": [i / 10, i / 10]} for i in range(3)]
    wl = GenericWorkload(model, input_data_file=write_json(tmp_path / "d.json", data))
    assert wl.uses_input_data
    firsts = [wl.make_batch(2, rng())["INPUT0"][:, 0].tolist() for _ in range(3)]
    assert firsts == [[0, 1], [2, 0], [1, 2]]  # consecutive entries, wrapping round
    one = wl.make_batch(1, rng())
    assert one["INPUT0"].dtype == np.int32 and one["INPUT1"].dtype == np.float32
    np.testing.assert_allclose(one["INPUT1"], [[0.0, 0.0]])


def test_generic_input_data_content_shape_and_b64(tmp_path):
    model = make_model([("INPUT", "FP32", [-1, -1]), ("TEXT", "BYTES", [-1])])
    raw = np.arange(6, dtype="<f4")
    strings = [b"hi", b"there"]
    packed = b"".join(struct.pack("<I", len(s)) + s for s in strings)
    data = [
        {
            "INPUT": {"content": list(range(6)), "shape": [2, 3]},
            "TEXT": {"content": ["hi", "there"], "shape": [2]},
        },
        {
            "INPUT": {"content": {"b64": base64.b64encode(raw.tobytes()).decode()}, "shape": [2, 3]},
            "TEXT": {"b64": base64.b64encode(packed).decode(), "shape": [2]},
        },
    ]
    wl = GenericWorkload(model, input_data_file=write_json(tmp_path / "d.json", data))
    batch = wl.make_batch(2, rng())
    np.testing.assert_array_equal(batch["INPUT"], np.stack([raw.reshape(2, 3)] * 2))
    assert batch["TEXT"].tolist() == [strings, strings]


def test_generic_input_data_uses_shape_override_for_flat_lists(tmp_path):
    model = make_model([("x", "INT64", [-1])])
    path = write_json(tmp_path / "d.json", [{"x": [1, 2, 3]}])
    with pytest.raises(PayloadError, match=r"data\[0\] input 'x'.*--shape"):
        GenericWorkload(model, input_data_file=path)
    assert GenericWorkload(model, {"x": (3,)}, input_data_file=path).make_batch(2, rng())["x"].shape == (2, 3)


def test_generic_input_data_errors(tmp_path):
    model = make_model([("INPUT0", "INT32", [4]), ("INPUT1", "INT32", [2])])
    with pytest.raises(PayloadError, match="no such file"):
        GenericWorkload(model, input_data_file=tmp_path / "missing.json")

    missing = write_json(tmp_path / "missing_input.json", [{"INPUT0": [1] * 4, "INPUT1": [1, 2]}, {"INPUT0": [1] * 4}])
    with pytest.raises(PayloadError, match=r"data\[1\]: no data for input 'INPUT1'"):
        GenericWorkload(model, input_data_file=missing)

    wrong = write_json(tmp_path / "wrong.json", [{"INPUT0": [1, 2, 3], "INPUT1": [1, 2]}])
    with pytest.raises(PayloadError, match=r"data\[0\] input 'INPUT0': 3 elements, but shape \[4\] needs 4"):
        GenericWorkload(model, input_data_file=wrong)

    unknown = write_json(tmp_path / "unknown.json", [{"INPUT0": [1] * 4, "INPUT1": [1, 2], "EXTRA": [1]}])
    with pytest.raises(PayloadError, match="'EXTRA' is not an input"):
        GenericWorkload(model, input_data_file=unknown)

    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(PayloadError, match="not JSON"):
        GenericWorkload(model, input_data_file=tmp_path / "bad.json")

    bad_b64 = write_json(tmp_path / "b64.json", [{"INPUT0": {"b64": "AAAA"}, "INPUT1": [1, 2]}])
    with pytest.raises(PayloadError, match="INPUT0"):  # 3 bytes: not whole INT32 elements
        GenericWorkload(model, input_data_file=bad_b64)


def test_generic_input_data_non_batching_model(tmp_path):
    model = make_model([("x", "INT32", [2, 2])], max_batch_size=0)
    wl = GenericWorkload(model, input_data_file=write_json(tmp_path / "d.json", [{"x": [1, 2, 3, 4]}]))
    np.testing.assert_array_equal(wl.make_batch(1, rng())["x"], [[1, 2], [3, 4]])


def test_generic_input_data_mixed_shapes_cannot_batch(tmp_path):
    model = make_model([("x", "INT32", [-1])])
    data = [{"x": {"content": [1, 2], "shape": [2]}}, {"x": {"content": [1, 2, 3], "shape": [3]}}]
    wl = GenericWorkload(model, input_data_file=write_json(tmp_path / "d.json", data))
    assert wl.make_batch(1, rng())["x"].shape == (1, 2)
    assert wl.make_batch(1, rng())["x"].shape == (1, 3)
    with pytest.raises(PayloadError, match="share a shape"):
        wl.make_batch(2, rng())


# --- package ---------------------------------------------------------------------------


def test_workloads_import_neither_tritonclient_nor_locust():
    code = (
        "import sys, loadtests.workloads; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('tritonclient', 'locust', 'gevent')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_tensor_spec_accepts_shapes_with_wildcards():
    from loadtests.config.model_spec import TensorSpec

    spec = TensorSpec("x", "FP32", (-1, 3))
    assert spec.accepts((7, 3)) and spec.accepts((1, 3))
    assert not spec.accepts((7, 4))
    assert not spec.accepts((7,)) and not spec.accepts((7, 3, 1))
