"""A ResNet-50-style image classifier as an ONNX graph (random weights, BN folded).

Why random weights: the load tests measure serving, not accuracy; `full` has ResNet-50's
exact topology and parameter count (~25.6 M) so it costs what the real model costs.
BatchNorm is folded into conv biases, as an inference export would do.

Contract (other code depends on it):
    input  input:         FP32 [batch, 3, 224, 224] (NCHW)
    output probabilities: FP32 [batch, num_classes] (softmax over classes)
"""

from __future__ import annotations

import onnx

from models.networks._graph import FLOAT, GraphBuilder, tensor
from models.networks.config import ResNetConfig

INPUT_NAME = "input"
OUTPUT_NAME = "probabilities"
IMAGE_SIZE = 224


def build_resnet(config: ResNetConfig) -> onnx.ModelProto:
    """Stem, bottleneck stages, global average pool, FC, softmax (see module docstring)."""
    g = GraphBuilder(config.seed)

    # Stem: conv 7x7/2 + ReLU + maxpool 3x3/2: 224 -> 112 -> 56.
    x = g.op(
        "Relu",
        [g.conv(INPUT_NAME, 3, config.base_width, 7, "stem.conv", stride=2)],
        "stem.relu",
    )
    x = g.op(
        "MaxPool",
        [x],
        "stem.pool",
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
    )

    channels = config.base_width
    for stage, n_blocks in enumerate(config.blocks):
        width = config.base_width * 2**stage
        for block in range(n_blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            x = _bottleneck(g, x, channels, width, stride, config, f"stage{stage + 1}.block{block}")
            channels = width * config.expansion

    x = g.op("GlobalAveragePool", [x], "head.pool")  # [b, c, 1, 1]
    x = g.op("Flatten", [x], "head.flatten", axis=1)
    x = g.linear(x, channels, config.num_classes, "head.fc", std=config.fc_std)
    g.op("Softmax", [x], OUTPUT_NAME, axis=1)

    return g.model(
        "resnet50",
        [tensor(INPUT_NAME, FLOAT, ["batch", 3, IMAGE_SIZE, IMAGE_SIZE])],
        [tensor(OUTPUT_NAME, FLOAT, ["batch", config.num_classes])],
    )


def _bottleneck(
    g: GraphBuilder,
    x: str,
    c_in: int,
    width: int,
    stride: int,
    config: ResNetConfig,
    name: str,
) -> str:
    """relu(branch(x) + shortcut(x)); branch = 1x1 -> 3x3 (stride) -> 1x1, as in ResNet v1.5."""
    c_out = width * config.expansion
    y = g.op("Relu", [g.conv(x, c_in, width, 1, f"{name}.conv1")], f"{name}.relu1")
    y = g.op(
        "Relu",
        [g.conv(y, width, width, 3, f"{name}.conv2", stride=stride)],
        f"{name}.relu2",
    )
    y = g.conv(y, width, c_out, 1, f"{name}.conv3", gain=config.residual_gain)
    # Projection shortcut whenever the shape changes (first block of every stage).
    shortcut = x
    if stride != 1 or c_in != c_out:
        shortcut = g.conv(x, c_in, c_out, 1, f"{name}.shortcut", stride=stride)
    return g.op("Relu", [g.op("Add", [y, shortcut], f"{name}.add")], f"{name}.relu")
