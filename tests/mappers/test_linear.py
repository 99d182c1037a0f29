"""Gemm, MatMul and Einsum against onnxruntime."""

from __future__ import annotations

import pytest

from tests.helpers import assert_matches, single_op_model
from tests.mappers.builders import F, model_of, randn


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize(
    "alpha, beta, c_shape",
    [(1.0, 1.0, (5,)), (0.5, 2.0, (5,)), (1.0, 1.0, (3, 5)), (1.0, 1.0, None)],
)
def test_gemm(tmp_path, trans_a, trans_b, alpha, beta, c_shape):
    a_shape = (4, 3) if trans_a else (3, 4)
    b = randn(5, 4) if trans_b else randn(4, 5)
    inits = {"B": b}
    if c_shape:
        inits["C"] = randn(*c_shape)
    model = single_op_model(
        "Gemm",
        {"a": a_shape},
        initializers=inits,
        transA=trans_a,
        transB=trans_b,
        alpha=alpha,
        beta=beta,
    )
    assert_matches(model, tmp_path)


def test_gemm_runtime_b(tmp_path):
    model = single_op_model("Gemm", {"a": (3, 4), "b": (5, 4)}, transB=1)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "a_shape, b_shape", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 3, 4), None)]
)
def test_matmul(tmp_path, a_shape, b_shape):
    if b_shape:
        model = single_op_model("MatMul", {"a": a_shape}, initializers={"B": randn(*b_shape)})
    else:
        model = single_op_model("MatMul", {"a": a_shape, "b": (2, 4, 6)})
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("bhid,bhjd->bhij", [(1, 2, 3, 4), (1, 2, 5, 4)]),
        ("ij->ji", [(2, 3)]),
        ("ij->", [(2, 3)]),
        ("i,j->ij", [(3,), (4,)]),
        ("...ij,...jk", [(2, 2, 3), (2, 3, 4)]),
        ("ij,ij->i", [(3, 4), (3, 4)]),
        ("ijk,k->ij", [(2, 3, 4), (4,)]),
        ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]),
        ("abc,bd->ad", [(2, 3, 4), (3, 5)]),
        ("bhld,lrd->bhlr", [(2, 3, 4, 5), (4, 6, 5)]),  # relative position scores
        ("bhld,lrd->bhrl", [(2, 3, 4, 5), (4, 6, 5)]),
        ("bhld,ld->bhl", [(2, 3, 4, 5), (4, 5)]),
        ("bhld,lrd->blhr", [(2, 3, 4, 5), (4, 6, 5)]),
    ],
)
def test_einsum(tmp_path, equation, shapes):
    inputs = [(f"x{i}", F, s) for i, s in enumerate(shapes)]
    model = model_of("Einsum", inputs, [("y", F, None)], opset=12, equation=equation)
    assert_matches(model, tmp_path)


def test_relative_position_scores_are_one_broadcast_product(tmp_path):
    """``"bhld,lrd->bhlr"`` (Wav2Vec2-BERT's and Conformer's relative position scores): the
    query's batch and head axes broadcast over one matmul, no reshape of a reshape."""
    shapes = [(2, 3, 4, 5), (4, 6, 5)]
    inputs = [(f"x{i}", F, s) for i, s in enumerate(shapes)]
    model = model_of("Einsum", inputs, [("y", F, None)], opset=12, equation="bhld,lrd->bhlr")
    code = assert_matches(model, tmp_path).script_path.read_text()
    body = code[code.index("def construct") :]
    assert "reshape" not in body and body.count("ops.matmul(") == 1, body
    assert "ops.unsqueeze(x0, -2)" in body, body


def test_a_gemm_weight_of_another_dtype_leaves_a_placeholder(tmp_path):
    """An invalid model (mutated) whose int32 weight became an nn.Dense weight: the script could
    not load its own checkpoint."""
    import numpy as np
    import onnx

    from mindconverter import convert
    from mindconverter.check.network import build_network

    inits = {"B": np.ones((4, 3), np.int32), "C": randn(4)}
    model = single_op_model("Gemm", {"a": (2, 3)}, initializers=inits, transB=1)
    onnx.save(model, str(tmp_path / "m.onnx"))
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert [site.op_type for site in result.unconverted] == ["Gemm"]
    build_network(result.script_path, result.checkpoint_path)


def test_a_weight_stored_in_out_becomes_a_dense_layer(tmp_path):
    # GPT-2's Conv1D: PyTorch stores the weight as [in, out] and the exporter reads it directly
    # as Gemm's B; nn.Dense holds it as [out, in], the weight map records the transpose
    import json

    weight, bias = randn(4, 6), randn(6)
    model = single_op_model(
        "Gemm",
        {"a": (3, 4)},
        initializers={"attn.c_attn.weight": weight, "attn.c_attn.bias": bias},
    )
    model.producer_name = "pytorch"
    result = assert_matches(model, tmp_path)
    assert "nn.Dense(in_channels=4, out_channels=6)" in result.script_path.read_text()
    rows = json.loads(result.weight_map_path.read_text())["model"]
    row = next(r for r in rows if r["source_weight"]["name"] == "attn.c_attn.weight")
    assert row["transform"] == "transpose(1, 0)"
    assert row["converted_weight"]["shape"] == [6, 4]
