"""Matrix-product Einsums written as MatMul: the equations recognised, and an attention written
with ``torch.einsum`` (CvT) read as attention and still computing onnxruntime's numbers at two
sizes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from mindconverter.passes.einsum_products import product_form
from tests.helpers import assert_runs_like_onnxruntime, convert_fully, make_model


@pytest.mark.parametrize(
    ("equation", "form"),
    [
        ("bhlk,bhtk->bhlt", "a @ b.T"),
        ("bhlt,bhtv->bhlv", "a @ b"),
        ("ik,kj->ij", "a @ b"),
        ("ik,jk->ij", "a @ b.T"),
        ("...ik,...jk->...ij", "a @ b.T"),
        (" b i d , b j d -> b i j ", "a @ b.T"),
    ],
)
def test_matrix_products_are_recognised(equation, form):
    assert product_form(equation) == form


@pytest.mark.parametrize(
    "equation",
    [
        "bhlk,bhkt->bhtl",  # the product transposed
        "bhlk,hbtk->bhlt",  # batch letters in another order
        "bhlk,bhtk->blht",  # batch letters moved in the result
        "bhlk,btk->bhlt",  # a broadcast batch
        "bhlk,bhlk->bhll",  # a diagonal
        "bhlk,bhtk->bhl",  # a sum over t
        "bhlk,bhtk,bhtv->bhlv",  # three operands
        "blk,bkt",  # implicit output
        "bhlk,bhtk->bhtl",  # b @ a.T
        "bhkk,bhkt->bhkt",  # a repeated letter
    ],
)
def test_other_equations_stay_einsums(equation):
    assert product_form(equation) is None


def _einsum_attention():
    """softmax(einsum(q, k) * scale) then einsum with v, as CvT writes its attention."""
    nodes = [
        helper.make_node("Einsum", ["q", "k"], ["scores"], equation="bhlk,bhtk->bhlt"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
        helper.make_node("Einsum", ["probs", "v"], ["context"], equation="bhlt,bhtv->bhlv"),
    ]
    heads = [
        ("q", np.float32, ["b", 2, "s", 8]),
        ("k", np.float32, ["b", 2, "t", 8]),
        ("v", np.float32, ["b", 2, "t", 8]),
    ]
    scale = {"scale": np.array(8**-0.5, np.float32)}
    return make_model(nodes, heads, [("context", np.float32, ["b", 2, "s", 8])], scale)


@pytest.mark.slow
def test_an_einsum_attention_is_written_as_attention(tmp_path):
    model = _einsum_attention()
    result = convert_fully(model, tmp_path, shape=["q=1,2,5,8", "k=1,2,3,8", "v=1,2,3,8"])
    code = result.script_path.read_text()
    assert "einsum" not in code and "scores = ops.matmul(q, k.swapaxes(-1, -2))" in code, code
    assert "probs = ops.softmax(scores, axis=-1)" in code, code
    rng = np.random.default_rng(3)
    for batch, s, t in (1, 5, 3), (2, 4, 7):
        feeds = {
            "q": rng.standard_normal((batch, 2, s, 8), np.float32),
            "k": rng.standard_normal((batch, 2, t, 8), np.float32),
            "v": rng.standard_normal((batch, 2, t, 8), np.float32),
        }
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


def test_an_equation_that_is_not_utf8_is_left_alone():
    """A hostile model's equation bytes are read with replacements, never raised on."""
    from mindconverter.graph import Graph
    from mindconverter.mappers import default_registry
    from mindconverter.passes.context import PassContext
    from mindconverter.passes.einsum_products import run

    node = helper.make_node("Einsum", ["a", "b"], ["c"])
    node.attribute.append(helper.make_attribute("equation", b"ik,\xff\xfe->ij"))
    model = make_model(
        [node], [("a", np.float32, [2, 3]), ("b", np.float32, [3, 4])], [("c", np.float32, None)]
    )
    assert run(Graph(model), PassContext(registry=default_registry())) is False
