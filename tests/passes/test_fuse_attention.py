"""Fusing scaled dot-product attention in each exporter's spelling, checked by numbers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from mindconverter.passes.fuse_attention import FUSED_OP, fuse_attention
from mindconverter.passes.pipeline import PIPELINE, run_passes
from tests.helpers import assert_runs_like_onnxruntime, convert_fully, make_model
from tests.passes.passes_util import graph_and_context

F32 = np.float32
HEADS, HEAD_DIM = 2, 4


def _const(name, value, dtype=F32):
    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype), name)
    )


def _guarded(probs: str, out: str, v: str) -> list:
    """The dynamo exporter's NaN guard: fully masked rows give zeros."""
    return [
        helper.make_node("IsNaN", [probs], ["nan"]),
        _const("zero", 0.0),
        helper.make_node("Where", ["nan", "zero", probs], ["probs_safe"]),
        helper.make_node("MatMul", ["probs_safe", v], [out]),
    ]


def torchscript_attention(guard: bool = False, keep_mask: bool = False):
    """q (B, H, S, D); the key (B, T, H, D) transposed to (B, H, D, T); sqrt(scale) on each side;
    a float mask added (``keep_mask``: made from a boolean one by ``where(keep, 0, -inf)``, as
    scaled_dot_product_attention exports); softmax; times v."""
    root = math.sqrt(1.0 / math.sqrt(HEAD_DIM))
    nodes = [
        _const("no_bias", 0.0),
        _const("minus_inf", -np.inf),
        helper.make_node("Where", ["keep", "no_bias", "minus_inf"], ["mask"]),
    ] if keep_mask else []  # fmt: skip
    nodes += [
        helper.make_node("Transpose", ["k_bthd"], ["kt"], perm=[0, 2, 3, 1]),
        _const("rq", root),
        _const("rk", root),
        helper.make_node("Mul", ["q", "rq"], ["qs"]),
        helper.make_node("Mul", ["kt", "rk"], ["kts"]),
        helper.make_node("MatMul", ["qs", "kts"], ["scores"]),
        helper.make_node("Add", ["scores", "mask"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    nodes += _guarded("probs", "out", "v") if guard else [
        helper.make_node("MatMul", ["probs", "v"], ["out"])
    ]  # fmt: skip
    return make_model(
        nodes,
        [
            ("q", F32, ["b", HEADS, "s", HEAD_DIM]),
            ("k_bthd", F32, ["b", "s", HEADS, HEAD_DIM]),
            ("v", F32, ["b", HEADS, "s", HEAD_DIM]),
            ("keep", np.bool_, ["b", 1, 1, "s"]) if keep_mask else ("mask", F32, ["b", 1, 1, "s"]),
        ],
        [("out", F32, None)],
        opset=14,
    )


def dynamo_attention(seq: int = 5):
    """The key transposed through Reshape(-1, T, D) / Transpose(0, 2, 1) / Reshape, both sides
    scaled, a boolean mask made additive by Where, the NaN guard."""
    nodes = [
        _const("flat", [-1, seq, HEAD_DIM], np.int64),
        _const("back", [1, HEADS, HEAD_DIM, seq], np.int64),
        helper.make_node("Reshape", ["k", "flat"], ["k3"]),
        helper.make_node("Transpose", ["k3"], ["k3t"], perm=[0, 2, 1]),
        helper.make_node("Reshape", ["k3t", "back"], ["kt"]),
        _const("half", 1.0 / math.sqrt(math.sqrt(HEAD_DIM))),
        helper.make_node("Mul", ["q", "half"], ["qs"]),
        helper.make_node("Mul", ["kt", "half"], ["kts"]),
        _const("allowed_bias", 0.0),
        _const("masked_bias", np.finfo(F32).min),
        helper.make_node("Where", ["keep", "allowed_bias", "masked_bias"], ["bias"]),
        helper.make_node("MatMul", ["qs", "kts"], ["scores"]),
        helper.make_node("Add", ["scores", "bias"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        *_guarded("probs", "out", "v"),
    ]
    return make_model(
        nodes,
        [
            ("q", F32, [1, HEADS, seq, HEAD_DIM]),
            ("k", F32, [1, HEADS, seq, HEAD_DIM]),
            ("v", F32, [1, HEADS, seq, HEAD_DIM]),
            ("keep", np.bool_, [1, 1, seq, seq]),
        ],
        [("out", F32, None)],
        opset=18,
    )


def grouped_query_attention(groups: int = 2, kv_heads: int = 2, past: int = 3):
    """Llama's attention: a key/value cache concatenated, repeat_kv, Div by sqrt(D), a causal
    bias and an ALiBi-style bias added one after the other."""
    heads = kv_heads * groups
    nodes = [
        helper.make_node("Concat", ["past_k", "k_new"], ["k"], axis=2),
        helper.make_node("Concat", ["past_v", "v_new"], ["v"], axis=2),
    ]
    for name in ("k", "v"):
        nodes += [
            _const(f"{name}_axis", [2], np.int64),
            helper.make_node("Unsqueeze", [name, f"{name}_axis"], [f"{name}_u"]),
            helper.make_node("Shape", [f"{name}_u"], [f"{name}_shape"]),
            _const(f"{name}_groups", [1, 1, groups, 1, 1], np.int64),
            helper.make_node("Mul", [f"{name}_shape", f"{name}_groups"], [f"{name}_wide"]),
            helper.make_node("Expand", [f"{name}_u", f"{name}_wide"], [f"{name}_e"]),
            _const(f"{name}_merged", [0, heads, -1, HEAD_DIM], np.int64),
            helper.make_node("Reshape", [f"{name}_e", f"{name}_merged"], [f"{name}_rep"]),
        ]
    nodes += [
        helper.make_node("Transpose", ["k_rep"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        _const("root", math.sqrt(HEAD_DIM)),
        helper.make_node("Div", ["scores", "root"], ["scaled"]),
        helper.make_node("Add", ["scaled", "causal"], ["biased"]),
        helper.make_node("Add", ["alibi", "biased"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=3),
        helper.make_node("MatMul", ["probs", "v_rep"], ["out"]),
    ]
    return make_model(
        nodes,
        [
            ("q", F32, ["b", heads, "s", HEAD_DIM]),
            ("k_new", F32, ["b", kv_heads, "s", HEAD_DIM]),
            ("v_new", F32, ["b", kv_heads, "s", HEAD_DIM]),
            ("past_k", F32, ["b", kv_heads, past, HEAD_DIM]),
            ("past_v", F32, ["b", kv_heads, past, HEAD_DIM]),
            ("causal", F32, [1, 1, "s", "t"]),
            ("alibi", F32, [1, heads, 1, "t"]),
        ],
        [("out", F32, None)],
    )


def dynamo_grouped_attention(groups: int = 2, kv_heads: int = 2):
    """Qwen2/Gemma through dynamo at dynamic sizes: repeat_kv, then the key transposed through
    Reshape(-1, T, D) / Transpose / Reshape with both targets cut from the repeated key's
    Shape (so the repeated key has a second reader, for its sizes only)."""
    model = grouped_query_attention(groups, kv_heads)
    graph = model.graph
    nodes = [n for n in graph.node if n.op_type not in ("Transpose", "MatMul", "Div", "Add")]
    nodes = [n for n in nodes if n.op_type not in ("Softmax",)]
    spans = {"bh": (0, 2), "t": (2, 3), "d": (3, 4), "td": (2, 4)}
    for name, (start, end) in spans.items():
        nodes += [
            _const(f"{name}_start", [start], np.int64),
            _const(f"{name}_end", [end], np.int64),
            helper.make_node("Slice", ["k_sizes", f"{name}_start", f"{name}_end"], [name]),
        ]
    nodes = [helper.make_node("Shape", ["k_rep"], ["k_sizes"]), *nodes]
    nodes += [
        _const("minus_one", [-1], np.int64),
        helper.make_node("Concat", ["minus_one", "td"], ["flat"], axis=0),
        helper.make_node("Concat", ["bh", "d", "t"], ["back"], axis=0),
        helper.make_node("Reshape", ["k_rep", "flat"], ["k3"]),
        helper.make_node("Transpose", ["k3"], ["k3t"], perm=[0, 2, 1]),
        helper.make_node("Reshape", ["k3t", "back"], ["kt"]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Div", ["scores", "root"], ["scaled"]),  # root: sqrt(D), kept above
        helper.make_node("Add", ["scaled", "causal"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v_rep"], ["out"]),
    ]
    inputs = [i for i in graph.input if i.name != "alibi"]
    built = helper.make_graph(nodes, "dynamo_gqa", inputs, graph.output, graph.initializer)
    return helper.make_model(built, opset_imports=model.opset_import, ir_version=model.ir_version)


def _fused(model, shapes):
    graph, context = graph_and_context(model, shapes=[(None, s) for s in shapes])
    before = [step.name for step in PIPELINE].index("fuse scaled dot-product attention")
    run_passes(graph, context, PIPELINE[:before])
    count = fuse_attention(graph)
    return count, [n for n in graph.model.graph.node if n.op_type == FUSED_OP]


def _attr(node, name):
    return next(helper.get_attribute_value(a) for a in node.attribute if a.name == name)


def _feeds(model, sizes: dict, seed: int = 0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in model.graph.input:
        shape = [d.dim_value or sizes[d.dim_param] for d in inp.type.tensor_type.shape.dim]
        if inp.type.tensor_type.elem_type == helper.np_dtype_to_tensor_dtype(np.dtype(np.bool_)):
            feeds[inp.name] = rng.random(shape) > 0.3
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(F32)
    return feeds


def test_torchscript_spelling_is_fused_with_its_split_scale():
    count, (node,) = _fused(
        torchscript_attention(), [(1, 2, 3, 4), (1, 3, 2, 4), (1, 2, 3, 4), (1, 1, 1, 3)]
    )
    assert count == 1
    assert _attr(node, "scale") == pytest.approx(1.0 / math.sqrt(HEAD_DIM))
    assert _attr(node, "kv_groups") == 1
    assert len(node.input) == 4


def test_dynamo_spelling_is_fused_through_its_reshaped_key_transpose():
    count, (node,) = _fused(dynamo_attention(), [])
    assert count == 1
    assert list(node.input[:3]) == ["q", "k", "v"]
    assert _attr(node, "masked_rows") == 0  # finfo.min never makes a row all -inf


def test_grouped_query_attention_undoes_repeat_kv_and_sums_the_biases():
    shapes = [(1, 4, 2, 4), (1, 2, 2, 4), (1, 2, 2, 4), (1, 2, 3, 4), (1, 2, 3, 4)]
    shapes += [(1, 1, 2, 5), (1, 4, 1, 5)]
    count, (node,) = _fused(grouped_query_attention(), shapes)
    assert count == 1
    assert _attr(node, "kv_groups") == 2
    assert _attr(node, "scale") == pytest.approx(0.5)


def test_scores_read_elsewhere_are_left_alone():
    model = torchscript_attention()
    model.graph.output.append(helper.make_tensor_value_info("scores", 1, None))
    count, _ = _fused(model, [(1, 2, 3, 4), (1, 3, 2, 4), (1, 2, 3, 4), (1, 1, 1, 3)])
    assert count == 0


def _matches_at(model, tmp_path, size_sets, **convert_kwargs):
    result = convert_fully(model, tmp_path, **convert_kwargs)
    script = result.script_path.read_text()
    assert "swapaxes(-1, -2)" in script and "ops.softmax" in script
    for seed, sizes in enumerate(size_sets):
        feeds = _feeds(model, sizes, seed)
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)
    return script


@pytest.mark.slow
def test_torchscript_spelling_runs_like_onnxruntime_at_two_shapes(tmp_path):
    model = torchscript_attention()
    shape = ["2,2,3,4", "2,3,2,4", "2,2,3,4", "2,1,1,3"]
    _matches_at(model, tmp_path, [{"b": 2, "s": 3}, {"b": 3, "s": 6}], shape=shape)


@pytest.mark.slow
def test_fully_masked_rows_give_zeros_like_the_guarded_export(tmp_path):
    """A -inf mask over a whole row: onnxruntime's guard gives zeros, and the other rows stay
    right although MindSpore's softmax zeroes a whole tensor holding such a row."""
    model = torchscript_attention(guard=True)
    shape = ["2,2,3,4", "2,3,2,4", "2,2,3,4", "2,1,1,3"]
    result = convert_fully(model, tmp_path, shape=shape)
    assert "masked_rows" in result.script_path.read_text()
    for batch, seq in (2, 3), (3, 5):
        feeds = _feeds(model, {"b": batch, "s": seq})
        mask = np.zeros((batch, 1, 1, seq), F32)
        mask[0] = -np.inf
        mask[1:, ..., -1] = -np.inf
        feeds["mask"] = mask
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_a_boolean_mask_is_read_as_it_is(tmp_path):
    """``where(keep, 0, -inf)`` before guarded attention: the script hands ``keep`` to
    masked_softmax (no conversion line per attention), and fully masked rows still give zeros."""
    model = torchscript_attention(guard=True, keep_mask=True)
    shape = ["2,2,3,4", "2,3,2,4", "2,2,3,4", "2,1,1,3"]
    result = convert_fully(model, tmp_path, shape=shape)
    script = result.script_path.read_text()
    construct = script[script.index("    def construct(") :]
    assert "masked_softmax(scores, keep)" in construct and "ops.where" not in construct
    for batch, seq in (2, 3), (3, 5):
        feeds = _feeds(model, {"b": batch, "s": seq})
        keep = np.ones((batch, 1, 1, seq), bool)
        keep[0] = False
        keep[1:, ..., -1] = False
        feeds["keep"] = keep
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_dynamo_spelling_runs_like_onnxruntime(tmp_path):
    model = dynamo_attention()
    result = convert_fully(model, tmp_path)
    assert_runs_like_onnxruntime(model, result, _feeds(model, {}), atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_grouped_query_attention_runs_like_onnxruntime_at_two_shapes(tmp_path):
    model = grouped_query_attention()
    shape = ["1,4,2,4", "1,2,2,4", "1,2,2,4", "1,2,3,4", "1,2,3,4", "1,1,2,5", "1,4,1,5"]
    script = _matches_at(model, tmp_path, [{"b": 1, "s": 2, "t": 5}, {"b": 2, "s": 4, "t": 7}],
                         shape=shape)  # fmt: skip
    assert "ops.repeat_interleave" in script


def flat_heads_attention(axis: int = -1):
    """Heads folded into the batch (``bmm`` on (B*H, S, D)), no scale, no mask."""
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=axis),
        helper.make_node("MatMul", ["probs", "v"], ["out"]),
    ]
    inputs = [(name, F32, [4, 3, HEAD_DIM]) for name in ("q", "k", "v")]
    return make_model(nodes, inputs, [("out", F32, None)])


def test_heads_folded_into_the_batch_are_fused():
    count, (node,) = _fused(flat_heads_attention(), [])
    assert count == 1 and _attr(node, "scale") == 1.0 and len(node.input) == 3


def test_softmax_over_another_axis_is_no_attention():
    count, _ = _fused(flat_heads_attention(axis=1), [])
    assert count == 0


@pytest.mark.slow
def test_heads_folded_into_the_batch_run_like_onnxruntime(tmp_path):
    model = flat_heads_attention()
    result = convert_fully(model, tmp_path)
    assert "/ math.sqrt" not in result.script_path.read_text()
    assert_runs_like_onnxruntime(model, result, _feeds(model, {}), atol=1e-5, rtol=1e-4)


def merged_repeat_attention(groups: int = 2, kv_heads: int = 2, seq: int = 3):
    """The dynamo exporter at static sizes: repeat_kv's Reshape merged into the key's
    Reshape(-1, T, D) / Transpose / Reshape, the value repeated as usual."""
    heads = kv_heads * groups
    wide = np.array([1, kv_heads, groups, seq, HEAD_DIM], np.int64)
    nodes = []
    for name in ("k", "v"):
        nodes += [
            _const(f"{name}_axis", [2], np.int64),
            helper.make_node("Unsqueeze", [name, f"{name}_axis"], [f"{name}_u"]),
            _const(f"{name}_wide", wide, np.int64),
            helper.make_node("Expand", [f"{name}_u", f"{name}_wide"], [f"{name}_e"]),
        ]
    nodes += [
        _const("flat", [heads, seq, HEAD_DIM], np.int64),
        helper.make_node("Reshape", ["k_e", "flat"], ["k3"]),
        helper.make_node("Transpose", ["k3"], ["k3t"], perm=[0, 2, 1]),
        _const("back", [1, heads, HEAD_DIM, seq], np.int64),
        helper.make_node("Reshape", ["k3t", "back"], ["kt"]),
        _const("v_shape", [1, heads, seq, HEAD_DIM], np.int64),
        helper.make_node("Reshape", ["v_e", "v_shape"], ["v_rep"]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v_rep"], ["out"]),
    ]
    inputs = [("q", F32, [1, heads, seq, HEAD_DIM])]
    inputs += [(name, F32, [1, kv_heads, seq, HEAD_DIM]) for name in ("k", "v")]
    return make_model(nodes, inputs, [("out", F32, None)], opset=18)


def test_repeat_kv_merged_into_the_key_transpose_is_undone():
    count, (node,) = _fused(merged_repeat_attention(), [])
    assert count == 1 and _attr(node, "kv_groups") == 2
    assert list(node.input) == ["q", "k", "v"]


@pytest.mark.slow
def test_repeat_kv_merged_into_the_key_transpose_runs_like_onnxruntime(tmp_path):
    model = merged_repeat_attention()
    result = convert_fully(model, tmp_path)
    assert "ops.repeat_interleave" in result.script_path.read_text()
    assert_runs_like_onnxruntime(model, result, _feeds(model, {}), atol=1e-5, rtol=1e-4)


def test_softmax_below_opset_13_defaults_to_axis_1():
    model = flat_heads_attention()
    del model.graph.node[2].attribute[:]  # Softmax-11 without axis: flattened from axis 1
    model.opset_import[0].version = 11
    count, _ = _fused(model, [])
    assert count == 0


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_bloom_attention_with_heads_folded_into_the_batch_is_fused(exporter):
    """BLOOM's ``baddbmm``: (B*H, S, T) scores plus ALiBi, unfolded to (B, H, S, T) before the
    mask; the fused node reads q, k, v before their folds and the ALiBi bias and the mask as
    two biases."""
    model = onnx.load(FIXTURES / f"tiny_bloom_{exporter}.onnx")
    count, (node,) = _fused(model, [(2, 5), (2, 5)])
    assert count == 1
    assert len(node.input) == 5
    assert _attr(node, "scale") == pytest.approx(1.0 / math.sqrt(8))


@pytest.mark.slow
def test_bloom_attention_runs_like_onnxruntime_at_two_shapes(tmp_path):
    model = onnx.load(FIXTURES / "tiny_bloom_torchscript.onnx")
    result = convert_fully(model, tmp_path, shape=["input_ids=2,5", "attention_mask=2,5"])
    script = result.script_path.read_text()
    assert script.count("swapaxes(-1, -2)") == 1 and "alibi" in script
    rng = np.random.default_rng(3)
    for batch, seq in (2, 5), (3, 7):
        mask = np.ones((batch, seq), np.int64)
        mask[0, :2] = 0  # left padding
        feeds = {"input_ids": rng.integers(0, 40, (batch, seq)), "attention_mask": mask}
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_a_zero_bias_beside_a_mask_is_dropped_alone(tmp_path):
    """Two biases stay two inputs of the fused node; the tidy pass drops the one of zeros (a
    model that masks nothing there) and keeps the mask."""
    nodes = [
        _const("scale", 1.0 / math.sqrt(HEAD_DIM)),
        _const("zeros", np.zeros((1, 1, 1, 3))),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Add", ["scaled", "zeros"], ["plain"]),
        helper.make_node("Add", ["plain", "mask"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["out"]),
    ]
    inputs = [(name, F32, ["b", HEADS, 3, HEAD_DIM]) for name in ("q", "k", "v")]
    model = make_model(nodes, [*inputs, ("mask", F32, ["b", 1, 1, 3])], [("out", F32, None)])
    result = convert_fully(model, tmp_path, shape=["2,2,3,4"] * 3 + ["2,1,1,3"])
    assert "mask" in result.script_path.read_text()
    for batch in (2, 3):
        feeds = _feeds(model, {"b": batch}, seed=batch)
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


def test_repeat_kv_whose_sizes_feed_the_key_transpose_is_undone():
    """The repeated key is also read by a Shape whose sizes only build the key transpose's
    targets; those go with the transpose, so repeat_kv is undone (``kv_groups``)."""
    shapes = [(1, 4, 2, 4), (1, 2, 2, 4), (1, 2, 2, 4), (1, 2, 3, 4), (1, 2, 3, 4), (1, 1, 2, 5)]
    count, (node,) = _fused(dynamo_grouped_attention(), shapes)
    assert count == 1
    assert _attr(node, "kv_groups") == 2


@pytest.mark.slow
def test_repeat_kv_whose_sizes_feed_the_key_transpose_runs_like_onnxruntime(tmp_path):
    model = dynamo_grouped_attention()
    shape = ["1,4,2,4", "1,2,2,4", "1,2,2,4", "1,2,3,4", "1,2,3,4", "1,1,2,5"]
    script = _matches_at(model, tmp_path, [{"b": 1, "s": 2, "t": 5}, {"b": 2, "s": 4, "t": 7}],
                         shape=shape)  # fmt: skip
    assert "ops.repeat_interleave" in script and "ops.broadcast_to" not in script


def where_masked_attention(masked_fill: bool = False):
    """GPT-Neo: unscaled scores, ``where(causal, scores, finfo.min)``, then a padding bias;
    with ``masked_fill``, MPT's ``scores.masked_fill(mask, finfo.min)``: the fill where the
    mask is true (``causal`` then marks the positions not to attend)."""
    branches = ["fill", "scores"] if masked_fill else ["scores", "fill"]
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        _const("fill", np.finfo(F32).min),
        helper.make_node("Where", ["causal", *branches], ["masked"]),
        helper.make_node("Add", ["masked", "padding"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["out"]),
    ]
    spec = ["b", HEADS, "s", HEAD_DIM]
    return make_model(
        nodes,
        [
            ("q", F32, spec),
            ("k", F32, spec),
            ("v", F32, spec),
            ("causal", np.bool_, [1, 1, "s", "s"]),
            ("padding", F32, ["b", 1, 1, "s"]),
        ],
        [("out", F32, None)],
    )


@pytest.mark.parametrize("masked_fill", [False, True])
def test_scores_masked_by_where_are_fused_with_the_mask_as_a_bias(masked_fill):
    shapes = [(1, HEADS, 3, HEAD_DIM)] * 3 + [(1, 1, 3, 3), (1, 1, 1, 3)]
    count, (node,) = _fused(where_masked_attention(masked_fill), shapes)
    assert count == 1 and len(node.input) == 5  # q, k, v and two biases


@pytest.mark.slow
@pytest.mark.parametrize("masked_fill", [False, True])
def test_scores_masked_by_where_run_like_onnxruntime_at_two_shapes(tmp_path, masked_fill):
    model = where_masked_attention(masked_fill)
    shape = [f"1,{HEADS},3,{HEAD_DIM}"] * 3 + ["1,1,3,3", "1,1,1,3"]
    script = _matches_at(model, tmp_path, [{"b": 1, "s": 3}, {"b": 2, "s": 5}], shape=shape)
    bias = "ops.where(causal, -3.4028235e38, 0.0)" if masked_fill else "ops.where(causal, 0.0"
    assert "probs = " in script and bias in script, script


def clamped_attention(mask_fill: float = float(np.finfo(F32).min)):
    """XGLM: ``max(scores / sqrt(d) + mask, finfo.min)`` before the softmax."""
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        _const("root", math.sqrt(HEAD_DIM)),
        helper.make_node("Div", ["scores", "root"], ["scaled"]),
        _const("allowed", 0.0),
        _const("blocked", mask_fill),
        helper.make_node("Where", ["keep", "allowed", "blocked"], ["bias"]),
        helper.make_node("Add", ["scaled", "bias"], ["logits"]),
        _const("floor", np.finfo(F32).min),
        helper.make_node("Max", ["logits", "floor"], ["clamped"]),
        helper.make_node("Softmax", ["clamped"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["out"]),
    ]
    spec = ["b", HEADS, "s", HEAD_DIM]
    inputs = [(n, F32, spec) for n in "qkv"] + [("keep", np.bool_, ["b", 1, 1, "s"])]
    return make_model(nodes, inputs, [("out", F32, None)])


def test_a_clamp_at_the_lowest_float_is_fused_away_unless_a_bias_is_minus_infinity():
    shapes = [(1, HEADS, 3, HEAD_DIM)] * 3 + [(1, 1, 1, 3)]
    count, (node,) = _fused(clamped_attention(), shapes)
    assert count == 1 and len(node.input) == 4
    assert _fused(clamped_attention(-np.inf), shapes)[0] == 0


@pytest.mark.slow
def test_a_clamped_attention_runs_like_onnxruntime_at_two_shapes(tmp_path):
    shape = [f"1,{HEADS},3,{HEAD_DIM}"] * 3 + ["1,1,1,3"]
    _matches_at(clamped_attention(), tmp_path, [{"b": 1, "s": 3}, {"b": 2, "s": 5}], shape=shape)


def folded_softmax_attention():
    """XGLM: heads folded into the batch for both products, the scores unfolded for the mask
    and the clamp, folded back (sized from the folded query) before the softmax; the
    probabilities unfolded and folded straight back before the context product."""
    nodes = [
        _const("zero", [0], np.int64),
        _const("one", [1], np.int64),
        _const("three", [3], np.int64),
        _const("heads", [HEADS], np.int64),
        _const("rest", [-1, HEAD_DIM], np.int64),
        helper.make_node("Shape", ["q"], ["q_shape"]),
        helper.make_node("Slice", ["q_shape", "zero", "one"], ["batch"]),
        helper.make_node("Mul", ["batch", "heads"], ["batch_heads"]),
        helper.make_node("Concat", ["batch_heads", "rest"], ["fold"], axis=0),
        *[helper.make_node("Reshape", [n, "fold"], [f"{n}_folded"]) for n in "qkv"],
        helper.make_node("Transpose", ["k_folded"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q_folded", "kt"], ["scores"]),
        _const("two", [2], np.int64),
        helper.make_node("Slice", ["q_shape", "two", "three"], ["seq"]),
        helper.make_node("Concat", ["seq", "seq"], ["rows_cols"], axis=0),
        helper.make_node("Concat", ["batch", "heads", "rows_cols"], ["unfold"], axis=0),
        helper.make_node("Reshape", ["scores", "unfold"], ["unfolded"]),
        _const("allowed", 0.0),
        _const("blocked", np.finfo(F32).min),
        helper.make_node("Where", ["keep", "allowed", "blocked"], ["mask"]),
        helper.make_node("Add", ["unfolded", "mask"], ["masked"]),
        _const("floor", np.finfo(F32).min),
        helper.make_node("Max", ["masked", "floor"], ["clamped"]),
        helper.make_node("Shape", ["q_folded"], ["q_size"]),
        helper.make_node("Slice", ["q_size", "zero", "one"], ["folded_batch"]),
        helper.make_node("Concat", ["folded_batch", "rows_cols"], ["refold"], axis=0),
        helper.make_node("Reshape", ["clamped", "refold"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("Reshape", ["probs", "unfold"], ["probs_unfolded"]),
        helper.make_node("Reshape", ["probs_unfolded", "refold"], ["probs_folded"]),
        helper.make_node("MatMul", ["probs_folded", "v_folded"], ["context"]),
        _const("split_heads", [HEADS, -1, HEAD_DIM], np.int64),
        helper.make_node("Concat", ["batch", "split_heads"], ["heads_back"], axis=0),
        helper.make_node("Reshape", ["context", "heads_back"], ["out"]),
    ]
    spec = ["b", HEADS, "s", HEAD_DIM]
    inputs = [(n, F32, spec) for n in "qkv"] + [("keep", np.bool_, ["b", 1, "s", "s"])]
    return make_model(nodes, inputs, [("out", F32, None)])


def test_a_softmax_over_scores_folded_back_is_fused():
    shapes = [(2, HEADS, 3, HEAD_DIM)] * 3 + [(2, 1, 3, 3)]
    count, (node,) = _fused(folded_softmax_attention(), shapes)
    assert count == 1 and len(node.input) == 4 and list(node.input[:3]) == ["q", "k", "v"]


@pytest.mark.slow
def test_a_softmax_over_scores_folded_back_runs_like_onnxruntime_at_two_shapes(tmp_path):
    shape = [f"2,{HEADS},3,{HEAD_DIM}"] * 3 + ["2,1,3,3"]
    model = folded_softmax_attention()
    _matches_at(model, tmp_path, [{"b": 2, "s": 3}, {"b": 1, "s": 6}], shape=shape)


def soft_capped_attention(cap: float = 50.0, divide: bool = True):
    """Gemma-2: ``cap * tanh(q @ kᵀ * scale / cap)`` before the mask is added."""
    inner = (
        helper.make_node("Div", ["scaled", "cap"], ["over"])
        if divide
        else helper.make_node("Mul", ["scaled", "inverse"], ["over"])
    )
    nodes = [
        _const("scale", 0.5),
        _const("cap", cap),
        _const("inverse", 1.0 / cap),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        inner,
        helper.make_node("Tanh", ["over"], ["capped"]),
        helper.make_node("Mul", ["capped", "cap"], ["soft"]),
        helper.make_node("Add", ["soft", "mask"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["out"]),
    ]
    dims = ["b", HEADS, "s", HEAD_DIM]
    return make_model(
        nodes,
        [("q", F32, dims), ("k", F32, dims), ("v", F32, dims), ("mask", F32, ["b", 1, 1, "s"])],
        [("out", F32, None)],
        opset=14,
    )


@pytest.mark.parametrize("divide", [True, False])
def test_soft_capped_scores_are_fused_with_their_cap(divide):
    shapes = [(1, 2, 3, 4)] * 3 + [(1, 1, 1, 3)]
    count, (node,) = _fused(soft_capped_attention(divide=divide), shapes)
    assert count == 1
    assert _attr(node, "softcap") == pytest.approx(50.0)
    assert _attr(node, "scale") == pytest.approx(0.5)


def test_a_tanh_capped_by_two_numbers_is_no_soft_cap():
    """``tanh(x / 50) * 40`` is not ``cap * tanh(x / cap)``: left as it is."""
    model = soft_capped_attention()
    model.graph.node.insert(0, _const("other", 40.0))
    outer = next(n for n in model.graph.node if list(n.input) == ["capped", "cap"])
    outer.input[1] = "other"
    count, _ = _fused(model, [(1, 2, 3, 4)] * 3 + [(1, 1, 1, 3)])
    assert count == 0


@pytest.mark.slow
def test_soft_capped_attention_runs_like_onnxruntime_at_two_shapes(tmp_path):
    model = soft_capped_attention(cap=2.0)  # small enough that the cap changes the numbers
    script = _matches_at(
        model, tmp_path, [{"b": 2, "s": 3}, {"b": 3, "s": 6}], shape=["2,2,3,4"] * 3 + ["2,1,1,3"]
    )
    assert "ops.tanh(" in script and "* 2.0" in script


def _windowed_attention():
    """Hiera's mask-unit attention: q, k, v of (batch, heads, windows, seq, dim), the key's
    last two axes swapped, q scaled; no heads repeated."""
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 2, 4, 3]),
        _const("scale", 0.5),
        helper.make_node("Mul", ["q", "scale"], ["qs"]),
        helper.make_node("MatMul", ["qs", "kt"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["out"]),
    ]
    dims = ["b", HEADS, 3, "s", HEAD_DIM]
    return make_model(
        nodes, [("q", F32, dims), ("k", F32, dims), ("v", F32, dims)], [("out", F32, None)]
    )


def test_attention_with_a_window_axis_is_fused():
    shape = (1, HEADS, 3, 5, HEAD_DIM)
    count, (node,) = _fused(_windowed_attention(), [shape] * 3)
    assert count == 1 and _attr(node, "scale") == pytest.approx(0.5)


def test_attention_with_a_window_axis_runs_like_onnxruntime_at_two_shapes(tmp_path):
    shape = ",".join(map(str, (1, HEADS, 3, 5, HEAD_DIM)))
    sizes = [{"b": 1, "s": 5}, {"b": 2, "s": 7}]
    _matches_at(_windowed_attention(), tmp_path, sizes, shape=[shape] * 3)


def _attention_returning_weights():
    """nn.MultiheadAttention(need_weights=True): the probabilities averaged over the heads
    are a second result, beside the context product."""
    model = torchscript_attention()
    graph = model.graph
    graph.node.extend(
        [
            helper.make_node("ReduceMean", ["probs"], ["weights"], axes=[1], keepdims=0),
        ]
    )
    graph.output.append(helper.make_tensor_value_info("weights", 1, None))
    return model


def test_attention_whose_weights_are_read_is_fused_with_them_as_a_second_output():
    shapes = [(1, 2, 3, 4), (1, 3, 2, 4), (1, 2, 3, 4), (1, 1, 1, 3)]
    count, (node,) = _fused(_attention_returning_weights(), shapes)
    assert count == 1 and list(node.output)[1] == "probs"


def test_attention_whose_weights_are_read_runs_like_onnxruntime_at_two_shapes(tmp_path):
    model = _attention_returning_weights()
    shape = ["2,2,3,4", "2,3,2,4", "2,2,3,4", "2,1,1,3"]
    script = _matches_at(model, tmp_path, [{"b": 2, "s": 3}, {"b": 3, "s": 6}], shape=shape)
    assert "probs = ops.softmax(" in script and "= probs\n" not in script, script


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_training_mode_exports_dropout_on_the_probabilities_is_fused(tmp_path, exporter):
    """A training-mode export keeps the Dropout between the softmax and the context product:
    the attention is still one fused node, written ``ops.matmul(self.dropout(probs), v)``,
    which gives PyTorch's eval-mode output under set_train(False) and drops under
    set_train(True)."""
    import mindspore as ms

    from mindconverter import convert
    from mindconverter.check.network import build_network

    reference = np.load(FIXTURES / "tiny_attention_training_reference.npz")
    result = convert(
        FIXTURES / f"tiny_attention_training_{exporter}.onnx", shape=["2,5,16"], output=tmp_path
    )
    code = result.script_path.read_text()
    assert "context = ops.matmul(self.dropout(probs), v)" in code, code
    assert "self.dropout = nn.Dropout(p=0.25)" in code
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = build_network(result.script_path, result.checkpoint_path)
    net.set_train(False)
    x = ms.Tensor(reference["input"])
    np.testing.assert_allclose(net(x).asnumpy(), reference["eval"], rtol=1e-5, atol=1e-6)
    net.set_train(True)
    assert not np.allclose(net(x).asnumpy(), reference["eval"], atol=1e-4)
