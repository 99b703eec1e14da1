"""A BERT-style extractive-QA encoder as an ONNX graph (random weights).

Why random weights: the load tests measure serving, not accuracy. What matters is that
the graph has BERT's shapes, cost profile and input contract (real WordPiece ids,
segment ids, an attention mask), so `full` costs what a real BERT-base SQuAD model costs.

Contract (other code depends on it):
    inputs  input_ids, segment_ids, input_mask: INT32 [batch, seq], seq <= max_positions
    outputs start_logits, end_logits:           FP32  [batch, seq]
"""

from __future__ import annotations

import numpy as np
import onnx

from models.networks._graph import FLOAT, INT32, GraphBuilder, tensor
from models.networks.config import BertConfig

INPUT_NAMES = ("input_ids", "segment_ids", "input_mask")
OUTPUT_NAMES = ("start_logits", "end_logits")


def build_bert_qa(config: BertConfig) -> onnx.ModelProto:
    """The QA encoder described in the module docstring, weights ~ N(0, init_std^2)."""
    g = GraphBuilder(config.seed)
    h, std = config.hidden, config.init_std

    # Embeddings: word + position (rows 0..seq-1) + token type, then LayerNorm.
    word = g.op(
        "Gather",
        [g.normal("embeddings.word", (config.vocab, h), std), "input_ids"],
        "emb.word",
    )
    seq_len = g.op("Shape", ["input_ids"], "emb.seq_len", start=1, end=2)
    pos_table = g.normal("embeddings.position", (config.max_positions, h), std)
    zero = g.const([0], np.int64)
    position = g.op("Slice", [pos_table, zero, seq_len, zero], "emb.position")  # [seq, h]
    token_type = g.op(
        "Gather",
        [g.normal("embeddings.token_type", (config.type_vocab, h), std), "segment_ids"],
        "emb.type",
    )
    x = g.op("Add", [g.op("Add", [word, position], "emb.add_pos"), token_type], "emb.sum")
    x = g.layer_norm(x, h, "emb.ln")

    # Additive key mask, (1 - mask) * -10000, shaped [batch, 1, 1, seq] to broadcast over
    # heads and query positions: padded keys get ~zero attention weight.
    mask = g.op("Cast", ["input_mask"], "mask.float", to=FLOAT)
    mask = g.op("Sub", [g.const(1.0, np.float32), mask], "mask.inverted")
    mask = g.op("Mul", [mask, g.const(-10000.0, np.float32)], "mask.scaled")
    mask = g.op("Unsqueeze", [mask, g.const([1, 2], np.int64)], "mask.bias")

    for i in range(config.layers):
        x = _encoder_layer(g, x, mask, config, f"layer{i}")

    # QA head: Linear(h, 2), split the last axis into start / end logits.
    logits = g.linear(x, h, 2, "qa", std)
    start, end = g.op_n("Split", [logits, g.const([1, 1], np.int64)], "qa.split", 2, axis=-1)
    last = g.const([-1], np.int64)
    g.op("Squeeze", [start, last], OUTPUT_NAMES[0])
    g.op("Squeeze", [end, last], OUTPUT_NAMES[1])

    dims = ["batch", "seq"]
    return g.model(
        "bert_qa",
        [tensor(name, INT32, dims) for name in INPUT_NAMES],
        [tensor(name, FLOAT, dims) for name in OUTPUT_NAMES],
    )


def _encoder_layer(g: GraphBuilder, x: str, mask: str, config: BertConfig, name: str) -> str:
    """Post-LN transformer layer: x = LN(x + MHA(x)); x = LN(x + FFN(x))."""
    h, heads, std = config.hidden, config.heads, config.init_std
    head_dim = h // heads
    split_heads = g.const([0, 0, heads, head_dim], np.int64)  # 0 = keep that dim

    def project(kind: str, perm: list[int]) -> str:
        y = g.linear(x, h, h, f"{name}.attn.{kind}", std)
        y = g.op("Reshape", [y, split_heads], f"{name}.attn.{kind}.split")
        return g.op("Transpose", [y], f"{name}.attn.{kind}.heads", perm=perm)

    q = project("q", [0, 2, 1, 3])  # [b, heads, seq, d]
    k = project("k", [0, 2, 3, 1])  # [b, heads, d, seq]
    v = project("v", [0, 2, 1, 3])  # [b, heads, seq, d]

    scores = g.op("MatMul", [q, k], f"{name}.attn.scores")
    scores = g.op(
        "Mul",
        [scores, g.const(1.0 / np.sqrt(head_dim), np.float32)],
        f"{name}.attn.scaled",
    )
    scores = g.op("Add", [scores, mask], f"{name}.attn.masked")
    probs = g.op("Softmax", [scores], f"{name}.attn.probs", axis=-1)
    ctx = g.op("MatMul", [probs, v], f"{name}.attn.context")  # [b, heads, seq, d]
    ctx = g.op("Transpose", [ctx], f"{name}.attn.merge", perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.const([0, 0, h], np.int64)], f"{name}.attn.merged")
    attn = g.linear(ctx, h, h, f"{name}.attn.out", std)
    x = g.layer_norm(g.op("Add", [x, attn], f"{name}.attn.residual"), h, f"{name}.attn.ln")

    ff = g.gelu(g.linear(x, h, config.ffn, f"{name}.ffn.in", std), f"{name}.ffn.gelu")
    ff = g.linear(ff, config.ffn, h, f"{name}.ffn.out", std)
    return g.layer_norm(g.op("Add", [x, ff], f"{name}.ffn.residual"), h, f"{name}.ffn.ln")
