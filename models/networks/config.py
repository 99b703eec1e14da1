"""Network sizes as frozen dataclasses, free of onnx/numpy imports.

Why separate: `models.build` compares these against a build stamp before deciding to
build; that check should not pay for importing onnx.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BertConfig:
    """Sizes of the BERT QA encoder. Defaults are BERT-base uncased."""

    layers: int = 12
    hidden: int = 768
    heads: int = 12
    ffn: int = 3072
    vocab: int = 30522
    max_positions: int = 512
    type_vocab: int = 2
    init_std: float = 0.02
    seed: int = 0

    def __post_init__(self) -> None:
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not divisible by heads {self.heads}")


@dataclass(frozen=True)
class ResNetConfig:
    """Depth and width of the ResNet. Defaults are ResNet-50 (blocks 3/4/6/3, width 64)."""

    blocks: tuple[int, ...] = (3, 4, 6, 3)
    base_width: int = 64
    expansion: int = 4
    num_classes: int = 1000
    # Gain on each residual branch's last conv: keeps the residual stream's variance
    # from compounding block after block, so random-weight logits stay moderate.
    residual_gain: float = 0.1
    fc_std: float = 0.01
    seed: int = 0
