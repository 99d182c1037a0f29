"""Variables of ``construct`` named by what they are (codegen/statements.py)."""

from __future__ import annotations

import numpy as np
from onnx import helper

from tests.helpers import assert_matches, make_model

F32 = np.float32


def _attention_with_own_projections(shared: bool):
    """q, k and v each projected twice (CvT: a convolution, then a linear layer), or, with
    ``shared``, all three from one value (what a block input holds in BERT)."""
    nodes, weights = [], {}
    rng = np.random.default_rng(4)
    for role in ("q", "k", "v"):
        weights[f"w_{role}0"] = rng.standard_normal((8, 8)).astype(F32)
        weights[f"w_{role}"] = rng.standard_normal((8, 8)).astype(F32)
        source = "x"
        if not shared:
            nodes.append(
                helper.make_node(
                    "MatMul", ["x", f"w_{role}0"], [f"pre_{role}"], name=f"/attn/conv_{role}/MatMul"
                )
            )
            source = f"pre_{role}"
        nodes += [
            helper.make_node(
                "MatMul", [source, f"w_{role}"], [f"lin_{role}"], name=f"/attn/proj_{role}/MatMul"
            ),
            helper.make_node(
                "Reshape", [f"lin_{role}", "heads"], [f"split_{role}"], name=f"/attn/Reshape_{role}"
            ),
            helper.make_node(
                "Transpose",
                [f"split_{role}"],
                [f"{role}h"],
                name=f"/attn/Transpose_{role}",
                perm=[0, 2, 1, 3],
            ),
        ]
    nodes += [
        helper.make_node("Transpose", ["kh"], ["kt"], name="/attn/Transpose_kt", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["qh", "kt"], ["scores"], name="/attn/MatMul"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="/attn/Mul"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="/attn/Softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "vh"], ["context"], name="/attn/MatMul_1"),
        helper.make_node(
            "Transpose", ["context"], ["merged"], name="/attn/Transpose", perm=[0, 2, 1, 3]
        ),
        helper.make_node("Reshape", ["merged", "flat"], ["y"], name="/attn/Reshape"),
    ]
    weights["heads"] = np.array([1, 6, 2, 4], np.int64)
    weights["flat"] = np.array([1, 6, 8], np.int64)
    weights["scale"] = np.array(0.5, F32)
    return make_model(nodes, [("x", F32, [1, 6, 8])], [("y", F32, [1, 6, 8])], weights)


def test_values_projected_to_q_k_and_v_by_their_own_layers_are_query_key_and_value(tmp_path):
    feeds = {"x": np.random.default_rng(5).standard_normal((1, 6, 8)).astype(F32)}
    result = assert_matches(_attention_with_own_projections(shared=False), tmp_path, feeds)
    code = result.script_path.read_text()
    assert "query = self.conv_q(" in code and "self.proj_q(query)" in code, code
    assert "key = self.conv_k(" in code and "value = self.conv_v(" in code, code


def test_a_value_projected_to_all_three_keeps_its_name(tmp_path):
    feeds = {"x": np.random.default_rng(5).standard_normal((1, 6, 8)).astype(F32)}
    result = assert_matches(_attention_with_own_projections(shared=True), tmp_path, feeds)
    code = result.script_path.read_text()
    assert "query" not in code.split("def construct")[1], code


def test_a_query_and_key_normalized_after_their_rotary_embedding_stay_q_and_k(tmp_path):
    """HunYuan normalizes the query and key after turning them: q and k from the projection
    on, one chain each (``q = self.query_layernorm(q)``), numbers onnxruntime's at two shapes."""
    from pathlib import Path

    import onnx

    from tests.helpers import assert_runs_like_onnxruntime, convert_fully

    fixture = Path(__file__).parent.parent / "fixtures" / "tiny_hunyuan_torchscript.onnx"
    model = onnx.load(fixture)
    result = convert_fully(model, tmp_path, shape=["input_ids=1,5"])
    code = result.script_path.read_text()
    assert "q, k = apply_rotary_pos_emb(q, k, cos, sin" in code, code
    assert "q = self.query_layernorm(q)" in code and "k = self.key_layernorm(k)" in code
    for batch, seq in (1, 5), (2, 7):
        ids = np.random.default_rng(seq).integers(1, 32, (batch, seq))
        assert_runs_like_onnxruntime(model, result, {"input_ids": ids})
