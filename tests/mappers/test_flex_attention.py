"""FlexAttention (ai.onnx.preview): score_mod and prob_mod subgraphs become cells; equal to onnx's
reference evaluator with grouped-query heads, float16 inputs and a causal score_mod."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from mindconverter import convert
from mindconverter.check.network import run_mindspore

FLOAT = TensorProto.FLOAT


def _causal_score_mod() -> onnx.GraphProto:
    """Scores where the key comes after the query become -inf (shapes read at run time)."""
    consts = {
        "two": np.array(2, np.int64),
        "three": np.array(3, np.int64),
        "zero": np.array(0, np.int64),
        "one": np.array(1, np.int64),
        "column": np.array([-1, 1], np.int64),
        "row": np.array([1, -1], np.int64),
        "neg_inf": np.array(-np.inf, np.float32),
    }
    nodes = [
        helper.make_node("Shape", ["scores"], ["shape"]),
        helper.make_node("Gather", ["shape", "two"], ["queries"], axis=0),
        helper.make_node("Gather", ["shape", "three"], ["keys"], axis=0),
        helper.make_node("Range", ["zero", "queries", "one"], ["q_range"]),
        helper.make_node("Range", ["zero", "keys", "one"], ["k_range"]),
        helper.make_node("Reshape", ["q_range", "column"], ["q_index"]),
        helper.make_node("Reshape", ["k_range", "row"], ["k_index"]),
        helper.make_node("GreaterOrEqual", ["q_index", "k_index"], ["allowed"]),
        helper.make_node("Where", ["allowed", "scores", "neg_inf"], ["masked"]),
    ]
    return helper.make_graph(
        nodes,
        "causal",
        [helper.make_tensor_value_info("scores", FLOAT, ["B", "H", "L", "S"])],
        [helper.make_tensor_value_info("masked", FLOAT, ["B", "H", "L", "S"])],
        [onnx.numpy_helper.from_array(v, k) for k, v in consts.items()],
    )


def _halve() -> onnx.GraphProto:
    return helper.make_graph(
        [helper.make_node("Mul", ["probs", "half"], ["halved"])],
        "halve",
        [helper.make_tensor_value_info("probs", FLOAT, ["B", "H", "L", "S"])],
        [helper.make_tensor_value_info("halved", FLOAT, ["B", "H", "L", "S"])],
        [onnx.numpy_helper.from_array(np.array(0.5, np.float32), "half")],
    )


def _model(dtype, q_heads, kv_heads, mods) -> onnx.ModelProto:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node(
        "FlexAttention", ["Q", "K", "V"], ["Y"], domain="ai.onnx.preview", **mods
    )
    graph = helper.make_graph(
        [node],
        "flex",
        [
            helper.make_tensor_value_info("Q", elem, [2, q_heads, 4, 8]),
            helper.make_tensor_value_info("K", elem, [2, kv_heads, 5, 8]),
            helper.make_tensor_value_info("V", elem, [2, kv_heads, 5, 6]),
        ],
        [helper.make_tensor_value_info("Y", elem, None)],
    )
    opsets = [helper.make_opsetid("", 23), helper.make_opsetid("ai.onnx.preview", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model


@pytest.mark.parametrize(
    "dtype, q_heads, kv_heads, mods, tolerance",
    [
        (np.float32, 4, 2, {"score_mod": _causal_score_mod()}, 1e-5),
        (np.float32, 2, 2, {"prob_mod": _halve(), "scale": 0.3}, 1e-5),
        (np.float16, 2, 1, {}, 2e-3),
    ],
)
def test_flex_attention_equals_the_reference(dtype, q_heads, kv_heads, mods, tolerance, tmp_path):
    model = _model(dtype, q_heads, kv_heads, mods)
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert result.unconverted == []
    rng = np.random.default_rng(0)
    feeds = {
        "Q": rng.standard_normal((2, q_heads, 4, 8)).astype(dtype),
        "K": rng.standard_normal((2, kv_heads, 5, 8)).astype(dtype),
        "V": rng.standard_normal((2, kv_heads, 5, 6)).astype(dtype),
    }
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    text = result.script_path.read_text()
    assert ("class ScoreMod(nn.Cell):" in text) == ("score_mod" in mods)
    assert ("class ProbMod(nn.Cell):" in text) == ("prob_mod" in mods)
