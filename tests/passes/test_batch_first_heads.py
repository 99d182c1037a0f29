"""nn.MultiheadAttention's sequence-first steps written batch-first (passes/batch_first_heads.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter.graph import Graph
from mindconverter.passes import batch_first_heads
from mindconverter.passes.context import PassContext
from mindconverter.passes.pipeline import PIPELINE, run_passes
from tests.helpers import assert_matches, assert_runs_like_onnxruntime, convert_fully, make_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
F32 = np.float32
RNG = np.random.default_rng(7)


def _before_the_pass(model: onnx.ModelProto, shapes: list) -> Graph:
    from mindconverter.graph.specs import detect_inputs
    from mindconverter.mappers.registry import default_registry
    from mindconverter.passes.fix_shapes import parse_shape_request

    graph = Graph(model)
    context = PassContext(default_registry(), shapes=[parse_shape_request(s) for s in shapes])
    context.input_specs = detect_inputs(graph.model)
    upto = [step.name for step in PIPELINE].index("write sequence-first attention batch-first")
    run_passes(graph, context, PIPELINE[:upto])
    return graph


def _ops(graph: Graph) -> list[str]:
    return [node.op_type for node in graph.model.graph.node]


def _perms(graph: Graph) -> list[list[int]]:
    return [
        list(helper.get_attribute_value(node.attribute[0]))
        for node in graph.model.graph.node
        if node.op_type == "Transpose"
    ]


def test_the_torch_encoder_reads_batch_first_and_runs_like_onnxruntime_at_two_shapes(tmp_path):
    model = onnx.load(FIXTURES / "tiny_torch_encoder_dynamo.onnx")
    result = convert_fully(model, tmp_path, shape=["2,6,16"])
    code = result.script_path.read_text()
    assert "swapaxes(0, 1)" not in code and "ops.split(hidden_states, 16, axis=2)" in code, code
    for batch, seq in ((2, 6), (3, 9)):
        feeds = {"x": RNG.standard_normal((batch, seq, 16)).astype(F32)}
        assert_runs_like_onnxruntime(model, result, feeds)


def _attention_code(code: str) -> str:
    """The attention class of a converted nn.TransformerEncoder or nn.MultiheadAttention."""
    start = code.rindex("\nclass ", 0, code.index("out_proj")) + 1
    return code[start : code.index("\nclass ", start + 1)]


@pytest.mark.parametrize(
    "fixture, shape, varied",
    [
        ("tiny_torch_encoder_torchscript", (2, 6, 16), 0),
        ("tiny_torch_encoder_seq_first_torchscript", (6, 2, 16), 1),
    ],
)
def test_a_key_length_the_exporter_baked_in_still_reads_batch_first(
    tmp_path, fixture, shape, varied
):
    """TorchScript writes ``k.view(6, b * h, d)`` with the traced length: the key's heads are
    split as the query's (``(b, s, h, d)`` and one transpose), and the key transposed for the
    scores is found in the sequence-first layout too, so the attention is one fused product.
    The source runs at its traced length only: checked there at two batch sizes."""
    model = onnx.load(FIXTURES / f"{fixture}.onnx")
    result = convert_fully(model, tmp_path, shape=[",".join(map(str, shape))])
    attention = _attention_code(result.script_path.read_text())
    assert "2 * batch_size" not in attention, attention
    assert "ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)" in attention, attention
    for batch in (shape[varied], 3):
        size = list(shape)
        size[varied] = batch
        feeds = {"x": RNG.standard_normal(size).astype(F32)}
        assert_runs_like_onnxruntime(model, result, feeds)


def test_attention_weights_of_a_baked_key_length_are_unfolded(tmp_path):
    """nn.MultiheadAttention returning its weights (TorchScript): the heads folded into the
    batch for ``bmm`` are unfolded though the key's fold has the traced length and its sizes are
    read beside it (``k.size(1)`` for the weights' view)."""
    model = onnx.load(FIXTURES / "tiny_mha_weights_torchscript.onnx")
    result = convert_fully(model, tmp_path, shape=["2,5,16"])
    attention = _attention_code(result.script_path.read_text())
    assert "2 * batch_size" not in attention and "swapaxes(0, 1)" not in attention, attention
    for batch in (2, 3):
        feeds = {"x": RNG.standard_normal((batch, 5, 16)).astype(F32)}
        assert_runs_like_onnxruntime(model, result, feeds)


def test_cross_attention_weights_read_the_memory_batch_first(tmp_path):
    """nn.MultiheadAttention(kdim=8) over a memory, returning its weights (TorchScript): once
    the heads unfold, the sizes read for the weights' old view are dead, and the memory's swap
    to sequence-first moves through the key and value projections to the heads' transposes."""
    model = onnx.load(FIXTURES / "tiny_mha_cross_weights_torchscript.onnx")
    result = convert_fully(model, tmp_path, shape=["x=2,5,16", "memory=2,7,8"])
    attention = _attention_code(result.script_path.read_text())
    assert "swapaxes(0, 1)" not in attention and "2 * batch_size" not in attention, attention
    for batch, seq, mem in ((2, 5, 7), (3, 4, 9)):
        feeds = {
            "x": RNG.standard_normal((batch, seq, 16)).astype(F32),
            "memory": RNG.standard_normal((batch, mem, 8)).astype(F32),
        }
        assert_runs_like_onnxruntime(model, result, feeds)


def _sequence_first_projection(parts: int = 3):
    """x (batch, seq, 8) swapped to (seq, batch, 8), projected to ``parts`` * 8 features,
    unpacked as F.multi_head_attention_forward does, each part's heads folded into the batch
    and unfolded heads-first: (batch, 2, seq, 4)."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
        helper.make_node("MatMul", ["xt", "w"], ["p"]),
        helper.make_node("Add", ["p", "b"], ["proj"]),
        helper.make_node("Shape", ["xt"], ["dims"]),
        helper.make_node("Slice", ["dims", "zero", "two"], ["lead"]),
        helper.make_node("Concat", ["lead", "unpacked"], ["split_shape"], axis=0),
        helper.make_node("Reshape", ["proj", "split_shape"], ["view"]),
        helper.make_node("Unsqueeze", ["view", "zero"], ["u"]),
        helper.make_node("Transpose", ["u"], ["t"], perm=[3, 1, 2, 0, 4]),
        helper.make_node("Squeeze", ["t", "three"], ["s"]),
        helper.make_node("Gather", ["dims", "zero_scalar"], ["seq"], axis=0),
        helper.make_node("Gather", ["dims", "one_scalar"], ["batch"], axis=0),
        helper.make_node("Mul", ["batch", "two_scalar"], ["folded_batch"]),
        helper.make_node("Unsqueeze", ["seq", "zero"], ["seq_1"]),
        helper.make_node("Unsqueeze", ["folded_batch", "zero"], ["folded_1"]),
        helper.make_node("Unsqueeze", ["batch", "zero"], ["batch_1"]),
        helper.make_node("Concat", ["seq_1", "folded_1", "four"], ["fold"], axis=0),
        helper.make_node("Concat", ["batch_1", "two", "seq_1", "four"], ["unfold"], axis=0),
    ]
    outputs = []
    for part in range(parts):
        nodes += [
            helper.make_node("Gather", ["s", f"part_{part}"], [f"g{part}"], axis=0),
            helper.make_node("Reshape", [f"g{part}", "fold"], [f"f{part}"]),
            helper.make_node("Transpose", [f"f{part}"], [f"ft{part}"], perm=[1, 0, 2]),
            helper.make_node("Reshape", [f"ft{part}", "unfold"], [f"heads_{part}"]),
        ]
        outputs.append((f"heads_{part}", F32, None))
    constants = {
        "w": RNG.standard_normal((8, 8 * parts)).astype(F32),
        "b": RNG.standard_normal(8 * parts).astype(F32),
        "zero": np.array([0], np.int64),
        "two": np.array([2], np.int64),
        "three": np.array([3], np.int64),
        "four": np.array([4], np.int64),
        "unpacked": np.array([parts, 8], np.int64),
        "zero_scalar": np.array(0, np.int64),
        "one_scalar": np.array(1, np.int64),
        "two_scalar": np.array(2, np.int64),
        **{f"part_{part}": np.array(part, np.int64) for part in range(parts)},
    }
    inputs = [("x", F32, ["batch", "seq", 8])]
    return make_model(nodes, inputs, outputs, constants, opset=18)


@pytest.mark.parametrize("parts", [3, 2])
def test_a_packed_projection_unpacked_and_folded_is_one_split_and_one_transpose_each(
    tmp_path, parts
):
    model = _sequence_first_projection(parts)
    graph = _before_the_pass(model, ["2,5,8"])
    assert batch_first_heads.run(graph, PassContext(None))
    ops = _ops(graph)
    assert ops.count("Split") == 1 and "Squeeze" not in ops, ops
    assert _perms(graph) == [[0, 2, 1, 3]] * parts, _perms(graph)
    for shape in ((2, 5, 8), (3, 4, 8)):
        feeds = {"x": RNG.standard_normal(shape).astype(F32)}
        assert_matches(model, tmp_path / f"{shape[0]}", feeds, shape=[",".join(map(str, shape))])


def _flattened_output_projection():
    """ctx (batch, 2, seq, 4) -> (seq, batch, 2, 4) -> (seq * batch, 8) -> Gemm -> (seq, batch,
    6) -> (batch, seq, 6): F.multi_head_attention_forward's output projection."""
    nodes = [
        helper.make_node("Transpose", ["ctx"], ["ct"], perm=[2, 0, 1, 3]),
        helper.make_node("Shape", ["ct"], ["dims"]),
        helper.make_node("Slice", ["dims", "zero", "two"], ["lead"]),
        helper.make_node("ReduceProd", ["lead"], ["rows"], keepdims=1),
        helper.make_node("Concat", ["rows", "eight"], ["flat"], axis=0),
        helper.make_node("Reshape", ["ct", "flat"], ["flattened"]),
        helper.make_node("Gemm", ["flattened", "w", "b"], ["projected"], transB=1),
        helper.make_node("Concat", ["lead", "six"], ["unflat"], axis=0),
        helper.make_node("Reshape", ["projected", "unflat"], ["sequence_first"]),
        helper.make_node("Transpose", ["sequence_first"], ["y"], perm=[1, 0, 2]),
    ]
    constants = {
        "w": RNG.standard_normal((6, 8)).astype(F32),
        "b": RNG.standard_normal(6).astype(F32),
        "zero": np.array([0], np.int64),
        "two": np.array([2], np.int64),
        "six": np.array([6], np.int64),
        "eight": np.array([8], np.int64),
    }
    inputs = [("ctx", F32, ["batch", 2, "seq", 4])]
    return make_model(nodes, inputs, [("y", F32, None)], constants, opset=18)


def test_a_flattened_output_projection_is_a_dense_on_the_merged_heads(tmp_path):
    model = _flattened_output_projection()
    graph = _before_the_pass(model, ["2,2,5,4"])
    assert batch_first_heads.run(graph, PassContext(None))
    assert "Gemm" not in _ops(graph) and _perms(graph) == [[0, 2, 1, 3]], _ops(graph)
    turned = next(node for node in graph.model.graph.node if node.op_type == "Transpose")
    assert graph.symbolic_shapes[turned.output[0]] == ("batch", "seq", 2, 4)
    for shape in ((2, 2, 5, 4), (3, 2, 7, 4)):
        feeds = {"ctx": RNG.standard_normal(shape).astype(F32)}
        result = assert_matches(
            model, tmp_path / f"{shape[0]}", feeds, shape=[",".join(map(str, shape))]
        )
    code = result.script_path.read_text()
    assert "nn.Dense(in_channels=8, out_channels=6)" in code, code


def test_a_transpose_that_meets_no_other_stays(tmp_path):
    """Swapped to sequence-first and projected, then returned: nothing to meet."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
        helper.make_node("MatMul", ["xt", "w"], ["p"]),
        helper.make_node("Add", ["p", "b"], ["y"]),
    ]
    constants = {"w": RNG.standard_normal((8, 4)).astype(F32), "b": np.ones(4, F32)}
    model = make_model(nodes, [("x", F32, ["batch", "seq", 8])], [("y", F32, None)], constants)
    graph = _before_the_pass(model, ["2,5,8"])
    assert not batch_first_heads.run(graph, PassContext(None))
    assert _perms(graph) == [[1, 0, 2]]


def _folded_attention():
    """F.multi_head_attention_forward returning its weights: q, k, v (seq, batch, 8) fold their
    2 heads into the batch ((batch * 2, seq, 4)), ``bmm``, softmax, ``bmm``; the result is
    flattened to (seq * batch, 8) and the weights unfolded to (batch, 2, seq, mem)."""
    nodes = []
    for name in ("q", "k"):
        nodes += [
            helper.make_node("Shape", [name], [f"{name}_dims"]),
            helper.make_node("Gather", [f"{name}_dims", "zero"], [f"{name}_len"], axis=0),
            helper.make_node("Gather", [f"{name}_dims", "one"], [f"{name}_batch"], axis=0),
            helper.make_node("Mul", [f"{name}_batch", "two"], [f"{name}_folded"]),
            helper.make_node(
                "Concat", [f"{name}_len", f"{name}_folded", "four"], [f"{name}_fold"], axis=0
            ),
        ]
    nodes += [
        helper.make_node("Reshape", ["q", "q_fold"], ["q_rows"]),
        helper.make_node("Transpose", ["q_rows"], ["q_heads"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["k", "k_fold"], ["k_rows"]),
        helper.make_node("Transpose", ["k_rows"], ["k_turned"], perm=[1, 2, 0]),
        helper.make_node("Reshape", ["v", "k_fold"], ["v_rows"]),
        helper.make_node("Transpose", ["v_rows"], ["v_heads"], perm=[1, 0, 2]),
        helper.make_node("Mul", ["q_heads", "scale"], ["q_scaled"]),
        helper.make_node("MatMul", ["q_scaled", "k_turned"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v_heads"], ["context"]),
        helper.make_node("Transpose", ["context"], ["rows_first"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["rows_first", "flat"], ["y"]),
        helper.make_node("Concat", ["q_batch", "two", "q_len", "k_len"], ["unfold"], axis=0),
        helper.make_node("Reshape", ["probs", "unfold"], ["weights"]),
    ]
    constants = {
        "zero": np.array([0], np.int64),
        "one": np.array([1], np.int64),
        "two": np.array([2], np.int64),
        "four": np.array([4], np.int64),
        "flat": np.array([-1, 8], np.int64),
        "scale": np.array(0.5, F32),
    }
    inputs = [("q", F32, ["seq", "batch", 8]), ("k", F32, ["mem", "batch", 8])]
    inputs.append(("v", F32, ["mem", "batch", 8]))
    outputs = [("y", F32, None), ("weights", F32, None)]
    return make_model(nodes, inputs, outputs, constants, opset=18)


def test_attention_with_the_heads_folded_into_the_batch_runs_on_four_axes(tmp_path):
    model = _folded_attention()
    graph = _before_the_pass(model, ["q=5,2,8", "k=7,2,8", "v=7,2,8"])
    assert batch_first_heads.run(graph, PassContext(None))
    shapes = [graph.symbolic_shapes.get(n) for n in ("scores", "probs", "context")]
    assert all(shape is not None and len(shape) == 4 for shape in shapes), shapes
    for seq, batch, mem in ((5, 2, 7), (3, 1, 4)):
        feeds = {
            "q": RNG.standard_normal((seq, batch, 8)).astype(F32),
            "k": RNG.standard_normal((mem, batch, 8)).astype(F32),
            "v": RNG.standard_normal((mem, batch, 8)).astype(F32),
        }
        shape = [f"q={seq},{batch},8", f"k={mem},{batch},8", f"v={mem},{batch},8"]
        result = assert_matches(model, tmp_path / f"{seq}", feeds, shape=shape)
    assert "2 * batch" not in result.script_path.read_text()


def test_a_projection_with_a_computed_bias_lets_the_transpose_through(tmp_path):
    """nn.MultiheadAttention with kdim: each projection is a MatMul and an Add of a part of
    ``in_proj_bias`` (a Split the network computes), not a lifted Linear."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
        helper.make_node("MatMul", ["xt", "w"], ["p"]),
        helper.make_node("Split", ["packed_bias", "halves"], ["b", "unused"], axis=0),
        helper.make_node("Add", ["p", "b"], ["projected"]),
        helper.make_node("Reshape", ["projected", "heads"], ["split"]),
        helper.make_node("Transpose", ["split"], ["y"], perm=[1, 2, 0, 3]),
    ]
    constants = {
        "w": RNG.standard_normal((8, 8)).astype(F32),
        "halves": np.array([8, 8], np.int64),
        "heads": np.array([0, 0, 2, 4], np.int64),
    }
    inputs = [("x", F32, ["batch", "seq", 8]), ("packed_bias", F32, [16])]
    model = make_model(nodes, inputs, [("y", F32, None)], constants, opset=18)
    graph = _before_the_pass(model, ["x=2,5,8", "packed_bias=16"])
    assert batch_first_heads.run(graph, PassContext(None))
    assert _perms(graph) == [[0, 2, 1, 3]], _perms(graph)
    for shape in ((2, 5, 8), (3, 4, 8)):
        feeds = {"x": RNG.standard_normal(shape).astype(F32)}
        feeds["packed_bias"] = RNG.standard_normal(16).astype(F32)
        spec = [f"x={','.join(map(str, shape))}", "packed_bias=16"]
        assert_matches(model, tmp_path / f"{shape[0]}", feeds, shape=spec)
