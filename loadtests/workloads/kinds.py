"""The one table of workload kinds: what each user class sends, and everything that depends on it.

A kind (`bert_qa`, `resnet`, `generic`, `sequence`) is a `WorkloadKind`: the Settings fields
it reads, how its model is named, its payload builder, its checks of a response and of a model
before the load, and its two user classes (HTTP, gRPC). The user classes carry their kind
(`TritonUser.kind`); pre-flight (endpoints.py), validation, --mix, sequence runs and the sweep
command ask the kind they are handed, never its name.

To add a kind: its workload module (a `make_batch(batch_size, rng)` class), its entry here,
and its two leaf classes in users.py (`kind = THE_KIND`, `protocol = "http"` / `"grpc"`).

    KINDS["resnet"].user_classes["grpc"]  # "ResNetGrpcUser"
    RESNET.build(model, settings).make_batch(4, rng)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from loadtests.clients.base import Validator
from loadtests.config.model_spec import ModelSpec
from loadtests.config.settings import (
    DEFAULT_BERT_MODEL,
    DEFAULT_RESNET_JPEG_MODEL,
    DEFAULT_RESNET_MODEL,
    ENCODED_IMAGE_FORMATS,
    Settings,
)
from loadtests.errors import ModelMismatchError
from loadtests.workloads import BertQAWorkload, EncodedImageWorkload, GenericWorkload, ImageWorkload, Workload
from loadtests.workloads.bert_qa import tokens_per_request
from loadtests.workloads.sequences import check_running_sum, check_sequence_model
from loadtests.workloads.validation import check_probabilities, check_qa_logits, no_own_checks

# What a kind may say about a request's inputs (the token count of a BERT request), for its checks.
SeqLen = Callable[[dict[str, np.ndarray]], int | None]


def no_model_checks(model: ModelSpec, settings: Settings) -> None:
    """A kind whose models need nothing beyond the common pre-flight (its workload checks the inputs)."""


def no_seq_len(inputs: dict[str, np.ndarray]) -> None:
    return None


@dataclass(frozen=True, eq=False)
class WorkloadKind:
    """One workload kind (compared by identity: each is one object of the table).

    Example: GENERIC.model_name(Settings(model="identity"), [GENERIC]) == "identity"
    """

    name: str
    # protocol -> its user class's name in users.py: {"http": "BertQAHttpUser", "grpc": "BertQAGrpcUser"}
    user_classes: Mapping[str, str]
    # The Settings fields its model name and payloads read (besides the common --batch-size etc.).
    options: tuple[str, ...]
    # The request bodies of one model, built before the load; None: requests are built one by
    # one while the load runs (sequences: each carries its ID, flags and value).
    build: Callable[[ModelSpec, Settings], Workload] | None
    # Its own checks of a response: --validate-responses adds them to the metadata's; a kind
    # without a builder checks every response with them (a sequence's running sum).
    validate: Validator
    # Its own checks of a fetched model, after the common ones (raise ModelMismatchError).
    check_model: Callable[[ModelSpec, Settings], None] = no_model_checks
    # Its own model option when classes of several kinds run together (--bert-model); None: --model only.
    own_model: Callable[[Settings], str] | None = None
    # The model it targets when none is named; None: it needs --model.
    default_model: Callable[[Settings], str] | None = None
    seq_len: SeqLen = no_seq_len
    takes_mix: bool = False  # --mix drives its users
    correlation_ids: bool = False  # its requests carry sequence IDs (run/sequence_run.py sizes them)
    in_sweeps: bool = True  # one of the sweep command's --user-class choices
    demo_models: tuple[str, ...] = ()  # the demo repository's models its payloads fit (sweep picks the kind)
    # A decoupled model's requests may be streamed, over gRPC or HTTP (False: each must be answered once).
    streams_decoupled: bool = True

    def model_name(self, settings: Settings, kinds_in_run: Iterable[WorkloadKind]) -> str:
        """Its model: its own option, else --model when it runs alone (or needs it), else its
        default; raises ModelMismatchError when it needs --model and none was given."""
        own = self.own_model(settings) if self.own_model is not None else ""
        if own:
            return own
        if settings.model and (self.default_model is None or set(kinds_in_run) == {self}):
            return settings.model
        if self.default_model is None:
            mix = " (or --mix MODEL:WEIGHT,...)" if self.takes_mix else ""
            raise ModelMismatchError(f"{self.name} Triton users need --model NAME{mix}")
        return self.default_model(settings)


def _bert_qa_workload(model: ModelSpec, settings: Settings) -> Workload:
    return BertQAWorkload(
        model,
        seq_len=settings.seq_len,
        doc_stride=settings.doc_stride,
        vocab_file=settings.vocab,
        input_map=settings.input_map or None,
    )


def _image_workload(model: ModelSpec, settings: Settings) -> Workload:
    if settings.image_format in ENCODED_IMAGE_FORMATS:
        return EncodedImageWorkload(model, image_dir=settings.image_dir, image_format=settings.image_format)
    return ImageWorkload(model, image_dir=settings.image_dir)


def _generic_workload(model: ModelSpec, settings: Settings) -> Workload:
    return GenericWorkload(
        model,
        shape_overrides=settings.shapes or None,
        data_mode=settings.data_mode,
        input_data_file=settings.input_data,
    )


def _resnet_default(settings: Settings) -> str:
    return DEFAULT_RESNET_JPEG_MODEL if settings.image_format in ENCODED_IMAGE_FORMATS else DEFAULT_RESNET_MODEL


BERT_QA = WorkloadKind(
    name="bert_qa",
    user_classes=MappingProxyType({"http": "BertQAHttpUser", "grpc": "BertQAGrpcUser"}),
    options=("bert_model", "seq_len", "doc_stride", "vocab", "input_map"),
    build=_bert_qa_workload,
    validate=check_qa_logits,
    own_model=lambda settings: settings.bert_model,
    default_model=lambda settings: DEFAULT_BERT_MODEL,
    seq_len=tokens_per_request,
    demo_models=("bert_qa", "bert_qa_dynbatch"),
)
RESNET = WorkloadKind(
    name="resnet",
    user_classes=MappingProxyType({"http": "ResNetHttpUser", "grpc": "ResNetGrpcUser"}),
    options=("resnet_model", "image_dir", "image_format"),
    build=_image_workload,
    validate=check_probabilities,
    own_model=lambda settings: settings.resnet_model,
    default_model=_resnet_default,
    demo_models=(DEFAULT_RESNET_MODEL,),
)
GENERIC = WorkloadKind(
    name="generic",
    user_classes=MappingProxyType({"http": "TritonHttpUser", "grpc": "TritonGrpcUser"}),
    options=("model", "mix", "shapes", "data_mode", "input_data"),
    build=_generic_workload,
    validate=no_own_checks,
    takes_mix=True,
)
SEQUENCE = WorkloadKind(
    name="sequence",
    user_classes=MappingProxyType({"http": "TritonSequenceHttpUser", "grpc": "TritonSequenceGrpcUser"}),
    options=("model", "sequence_length"),
    build=None,
    validate=check_running_sum,
    check_model=check_sequence_model,
    correlation_ids=True,
    in_sweeps=False,
    streams_decoupled=False,
)

KINDS: Mapping[str, WorkloadKind] = MappingProxyType({kind.name: kind for kind in (BERT_QA, RESNET, GENERIC, SEQUENCE)})
# The kind a --mix drives (models described by their metadata or --input-data files).
MIX_KIND = next(kind for kind in KINDS.values() if kind.takes_mix)


def kind_for_model(model: str) -> WorkloadKind:
    """The kind whose payloads fit a model: a demo model's own kind, any other model the generic one.

    >>> kind_for_model("resnet50").name, kind_for_model("sleep").name
    ('resnet', 'generic')
    """
    return next((kind for kind in KINDS.values() if model in kind.demo_models), GENERIC)


def user_class_names() -> list[str]:
    """Every kind's user class names, the table's order (the web form's Workload choices).

    >>> user_class_names()[:2]
    ['BertQAHttpUser', 'BertQAGrpcUser']
    """
    return [name for kind in KINDS.values() for name in kind.user_classes.values()]


# The class a test started from the web UI runs when none is named: BERT-QA over HTTP on the demo's bert_qa.
DEFAULT_USER_CLASS = BERT_QA.user_classes["http"]


def sweep_user_classes() -> dict[str, str]:
    """The sweep command's --user-class choices: class name -> protocol, the table's order."""
    return {name: protocol for kind in KINDS.values() if kind.in_sweeps for protocol, name in kind.user_classes.items()}
