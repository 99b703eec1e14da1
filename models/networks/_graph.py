"""A tiny ONNX graph builder shared by the network definitions.

Why: both networks repeat the same chores (register a weight, name a node's output,
emit a linear layer or a LayerNorm). Doing them in one place keeps the network files
readable and guarantees the same naming and draw order everywhere, which is what makes
the serialized models byte-identical for a fixed seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Opset 17 brings LayerNormalization; IR version 8 is what ONNX 1.12 wrote for it,
# old enough for any onnxruntime that understands opset 17.
OPSET = 17
IR_VERSION = 8
PRODUCER = "triton-loadtest models.build"


class GraphBuilder:
    """Accumulates nodes and initializers; `model()` turns them into a ModelProto.

    Every random weight is drawn from the builder's own `np.random.default_rng(seed)`
    in call order, so the same sequence of calls gives the same weights.

    Example:
        g = GraphBuilder(seed=0)
        y = g.linear("x", 4, 2, "y")  # the last op's name becomes the output name
        model = g.model("demo", [tensor("x", FLOAT, ["batch", 4])],
                        [tensor(y, FLOAT, ["batch", 2])])
    """

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._consts: dict[tuple[str, bytes, tuple[int, ...]], str] = {}
        self._counter = 0

    # -- names and tensors -------------------------------------------------------

    def _fresh(self, hint: str) -> str:
        """A graph-unique tensor name derived from `hint`."""
        name = hint
        while name in self._names:
            self._counter += 1
            name = f"{hint}_{self._counter}"
        self._names.add(name)
        return name

    def initializer(self, name: str, array: np.ndarray) -> str:
        """Register `array` as a weight; returns its (unique) tensor name."""
        name = self._fresh(name)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def normal(self, name: str, shape: Sequence[int], std: float) -> str:
        """A float32 weight drawn from N(0, std^2); drawn in float32 to halve peak memory."""
        array = self.rng.standard_normal(tuple(shape), dtype=np.float32)
        array *= np.float32(std)
        return self.initializer(name, array)

    def zeros(self, name: str, shape: Sequence[int]) -> str:
        return self.initializer(name, np.zeros(tuple(shape), dtype=np.float32))

    def ones(self, name: str, shape: Sequence[int]) -> str:
        return self.initializer(name, np.ones(tuple(shape), dtype=np.float32))

    def const(self, value: float | Sequence[float], dtype: type) -> str:
        """A small constant initializer (deduplicated), e.g. a reshape target or a scale."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.tobytes(), array.shape)
        if key not in self._consts:
            self._consts[key] = self.initializer("const", array)
        return self._consts[key]

    # -- nodes -------------------------------------------------------------------

    def op(self, op_type: str, inputs: Sequence[str], name: str, **attrs) -> str:
        """Append a one-output node; returns the output's name (`name` if still free)."""
        return self.op_n(op_type, inputs, name, 1, **attrs)[0]

    def op_n(self, op_type: str, inputs: Sequence[str], name: str, n_out: int, **attrs) -> list[str]:
        """Append a node with `n_out` outputs (e.g. Split); returns their names."""
        node_name = self._fresh(name)
        outputs = [node_name]
        outputs += [self._fresh(f"{name}_{i}") for i in range(1, n_out)]
        node = helper.make_node(op_type, list(inputs), outputs, name=node_name, **attrs)
        self.nodes.append(node)
        return outputs

    # -- layers ------------------------------------------------------------------

    def linear(self, x: str, d_in: int, d_out: int, name: str, std: float = 0.02) -> str:
        """y = x @ W + b over the last axis (W ~ N(0, std^2), b = 0); works on any rank."""
        w = self.normal(f"{name}.weight", (d_in, d_out), std)
        b = self.zeros(f"{name}.bias", (d_out,))
        return self.op("Add", [self.op("MatMul", [x, w], f"{name}.matmul"), b], name)

    def layer_norm(self, x: str, dim: int, name: str, eps: float = 1e-12) -> str:
        """LayerNormalization over the last axis with gamma = 1, beta = 0."""
        gamma = self.ones(f"{name}.gamma", (dim,))
        beta = self.zeros(f"{name}.beta", (dim,))
        return self.op("LayerNormalization", [x, gamma, beta], name, axis=-1, epsilon=eps)

    def gelu(self, x: str, name: str) -> str:
        """Exact GELU, 0.5 * x * (1 + erf(x / sqrt(2))), as BERT uses it."""
        scaled = self.op("Div", [x, self.const(np.sqrt(2.0), np.float32)], f"{name}.div")
        erf1 = self.op(
            "Add",
            [self.op("Erf", [scaled], f"{name}.erf"), self.const(1.0, np.float32)],
            f"{name}.add",
        )
        half_x = self.op("Mul", [x, self.const(0.5, np.float32)], f"{name}.half")
        return self.op("Mul", [half_x, erf1], name)

    def conv(
        self,
        x: str,
        c_in: int,
        c_out: int,
        kernel: int,
        name: str,
        stride: int = 1,
        gain: float = 1.0,
    ) -> str:
        """Conv2d with bias (BatchNorm folded in), He-normal weights times `gain`, 'same'-style padding."""
        std = gain * np.sqrt(2.0 / (c_in * kernel * kernel))
        w = self.normal(f"{name}.weight", (c_out, c_in, kernel, kernel), std)
        b = self.zeros(f"{name}.bias", (c_out,))
        pad = kernel // 2
        return self.op(
            "Conv",
            [x, w, b],
            name,
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            pads=[pad, pad, pad, pad],
        )

    # -- graph I/O and model -----------------------------------------------------

    def model(
        self,
        graph_name: str,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
    ) -> onnx.ModelProto:
        """Assemble the ModelProto (no timestamps or host data, so bytes are reproducible).

        Output names must be tensors some op produced; pick them via that op's `name`.
        """
        produced = {out for node in self.nodes for out in node.output}
        missing = [o.name for o in outputs if o.name not in produced]
        if missing:
            raise ValueError(f"graph outputs {missing} are not produced by any node")
        graph = helper.make_graph(self.nodes, graph_name, list(inputs), list(outputs), self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name=PRODUCER,
            ir_version=IR_VERSION,
        )
        return model


def tensor(name: str, elem_type: int, shape: Sequence[int | str]) -> onnx.ValueInfoProto:
    """A graph input/output declaration; strings in `shape` are symbolic (dynamic) dims."""
    return helper.make_tensor_value_info(name, elem_type, list(shape))


FLOAT = TensorProto.FLOAT
INT32 = TensorProto.INT32
INT64 = TensorProto.INT64
