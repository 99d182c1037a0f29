"""Unrolling of Loop and Scan nodes with a known iteration count (mindconverter/unroll.py),
checked end to end against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from mindconverter.graph import Graph
from mindconverter.passes.unroll_loops import unroll_loops
from tests.helpers import assert_matches, make_model

FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 4)).astype(np.float32) * 0.5


def _info(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _rnn_body(cond_nodes, cond_inputs=(), cond_outputs=()):
    """h = tanh(h @ W + xs[i]); scan output h (xs and W are read from the outer graph)."""
    nodes = list(cond_nodes) + [
        helper.make_node("Gather", ["xs", "i"], ["x_t"], axis=0),
        helper.make_node("MatMul", ["h_in", "W"], ["hw"]),
        helper.make_node("Add", ["hw", "x_t"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h_out"]),
        helper.make_node("Identity", ["h_out"], ["h_scan"]),
    ]
    return helper.make_graph(
        nodes,
        "body",
        [
            _info("i", INT64, []),
            _info("cond_in", BOOL, []),
            _info("h_in", FLOAT, [2, 4]),
            *cond_inputs,
        ],
        [
            _info("cond_out", BOOL, []),
            _info("h_out", FLOAT, [2, 4]),
            *cond_outputs,
            _info("h_scan", FLOAT, [2, 4]),
        ],
    )


def _model(nodes, outputs, inits, opset=17):
    return make_model(
        nodes,
        [("xs", np.float32, (5, 2, 4)), ("h0", np.float32, (2, 4))],
        outputs,
        {"W": W, **inits},
        opset=opset,
    )


def test_for_loop_with_state_and_scan_output(tmp_path):
    body = _rnn_body([helper.make_node("Identity", ["cond_in"], ["cond_out"])])
    loop = helper.make_node("Loop", ["trip", "", "h0"], ["h_last", "h_all"], body=body, name="rnn")
    model = _model(
        [loop],
        [("h_last", np.float32, (2, 4)), ("h_all", np.float32, (5, 2, 4))],
        {"trip": np.array(5, np.int64)},
    )
    result = assert_matches(model, tmp_path)
    script = result.script_path.read_text()
    assert script.count("ops.tanh(") == 5  # one body copy per iteration


def test_while_loop_with_counter_condition(tmp_path):
    """tf2onnx's form: a huge trip count and a condition computed from a carried counter."""
    body = _rnn_body(
        [
            helper.make_node("Add", ["t_in", "one"], ["t_out"]),
            helper.make_node("Less", ["t_out", "limit"], ["cond_out"]),
        ],
        cond_inputs=[_info("t_in", INT64, [])],
        cond_outputs=[_info("t_out", INT64, [])],
    )
    loop = helper.make_node(
        "Loop", ["trip", "go", "h0", "t0"], ["h_last", "t_last", "h_all"], body=body
    )
    model = _model(
        [helper.make_node("Less", ["t0", "limit"], ["go"]), loop],
        [
            ("h_last", np.float32, (2, 4)),
            ("t_last", np.int64, ()),
            ("h_all", np.float32, (3, 2, 4)),
        ],
        {
            "trip": np.array(np.iinfo(np.int64).max, np.int64),
            "t0": np.array(0, np.int64),
            "one": np.array(1, np.int64),
            "limit": np.array(3, np.int64),
        },
    )
    result = assert_matches(model, tmp_path)
    assert result.script_path.read_text().count("ops.tanh(") == 3


def test_loop_without_iterations_passes_state_through(tmp_path):
    body = _rnn_body([helper.make_node("Identity", ["cond_in"], ["cond_out"])])
    body.output.pop()  # no scan output: an empty one would have no known shape
    body.node.pop()
    loop = helper.make_node("Loop", ["trip", "", "h0"], ["h_last"], body=body)
    model = _model([loop], [("h_last", np.float32, (2, 4))], {"trip": np.array(0, np.int64)})
    assert_matches(model, tmp_path)


def test_old_opset_unsqueeze_attribute(tmp_path):
    body = _rnn_body([helper.make_node("Identity", ["cond_in"], ["cond_out"])])
    loop = helper.make_node("Loop", ["trip", "", "h0"], ["h_last", "h_all"], body=body)
    model = _model(
        [loop],
        [("h_last", np.float32, (2, 4)), ("h_all", np.float32, (4, 2, 4))],
        {"trip": np.array(4, np.int64)},
        opset=11,
    )
    assert_matches(model, tmp_path)


def test_scan_both_directions_and_output_axis(tmp_path):
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"]),
            helper.make_node("Mul", ["acc_out", "x_t"], ["y_t"]),
            helper.make_node("Neg", ["y_t"], ["z_t"]),
        ],
        "scan_body",
        [_info("acc_in", FLOAT, [3]), _info("x_t", FLOAT, [3])],
        [_info("acc_out", FLOAT, [3]), _info("y_t", FLOAT, [3]), _info("z_t", FLOAT, [3])],
    )
    scan = helper.make_node(
        "Scan",
        ["acc0", "xs"],
        ["acc", "ys", "zs"],
        body=body,
        num_scan_inputs=1,
        scan_input_axes=[1],
        scan_input_directions=[1],
        scan_output_axes=[0, -1],
        scan_output_directions=[0, 1],
    )
    model = make_model(
        [scan],
        [("acc0", np.float32, (3,)), ("xs", np.float32, (3, 6))],
        [("acc", np.float32, (3,)), ("ys", np.float32, (6, 3)), ("zs", np.float32, (3, 6))],
    )
    assert_matches(model, tmp_path)


def test_data_dependent_loop_stays_a_loop_and_converts_to_a_while(tmp_path):
    body = _rnn_body(
        [
            helper.make_node("ReduceMax", ["h_out"], ["peak"], keepdims=0),
            helper.make_node("Less", ["peak", "half"], ["cond_out"]),
        ]
    )
    # cond_out is computed after h_out: move those two nodes to the end so the body stays sorted
    tail = [body.node.pop(0) for _ in range(2)]
    body.node.extend(tail)
    loop = helper.make_node("Loop", ["trip", "go", "h0"], ["h_last", "h_all"], body=body)
    model = _model(
        [loop],
        [("h_last", np.float32, (2, 4)), ("h_all", np.float32, None)],
        {"trip": np.array(5, np.int64), "go": np.array(True), "half": np.array(0.5, np.float32)},
    )
    assert unroll_loops(Graph(model)) is False
    result = assert_matches(model, tmp_path)
    assert "while step < trip_count and condition:" in result.script_path.read_text()
    # the outer network holds the weight the body reads, once
    names = _checkpoint_names(result)
    assert len(names) == 1 and not names[0].startswith("loop."), names


def _counting_body(depth: int) -> onnx.GraphProto:
    """v = v + 1, wrapped in ``depth`` Loops of 200 iterations (names unique per level)."""
    d = str(depth)
    nodes = [helper.make_node("Identity", ["c_in" + d], ["c_out" + d])]
    value = "v_in" + d
    if depth:
        trip = onnx.numpy_helper.from_array(np.array(200, np.int64))
        nodes.append(helper.make_node("Constant", [], ["n" + d], value=trip))
        inner = _counting_body(depth - 1)
        nodes.append(helper.make_node("Loop", ["n" + d, "", value], ["w" + d], body=inner))
        value = "w" + d
    nodes.append(helper.make_node("Add", [value, "one"], ["v_out" + d]))
    return helper.make_graph(
        nodes,
        "body" + d,
        [_info("j" + d, INT64, []), _info("c_in" + d, BOOL, []), _info("v_in" + d, FLOAT, [2, 4])],
        [_info("c_out" + d, BOOL, []), _info("v_out" + d, FLOAT, [2, 4])],
    )


def test_nested_loops_past_the_budget_stay_while_a_small_loop_unrolls(tmp_path):
    """Three nested Loops of 200 would be 8 million copies: the converter sees it before copying
    (one outer Loop stays, with a note) and still unrolls the small loop beside it."""
    from mindconverter.passes import unroll_loops as unroll_pass
    from tests.passes.passes_util import graph_and_context

    small = helper.make_node(
        "Loop",
        ["trip", "", "h0"],
        ["h_last", "h_all"],
        body=_rnn_body([helper.make_node("Identity", ["cond_in"], ["cond_out"])]),
    )
    nested = helper.make_node("Loop", ["many", "", "h0"], ["deep"], body=_counting_body(2))
    model = _model(
        [small, nested],
        [("h_last", np.float32, (2, 4)), ("deep", np.float32, (2, 4))],
        {
            "trip": np.array(5, np.int64),
            "many": np.array(200, np.int64),
            "one": np.ones((2, 4), np.float32),
        },
    )
    graph, context = graph_and_context(model)
    assert unroll_pass.run(graph, context) is True  # the small loop
    assert [n.op_type for n in graph.model.graph.node].count("Loop") == 1
    assert unroll_pass.run(graph, context) is False
    assert [n.op_type for n in graph.model.graph.node].count("Loop") == 1
    assert context.notes == [
        f"Loops were left as they are: unrolling them would make more than "
        f"{unroll_pass.MAX_GRAPH_NODES} nodes."
    ]


def _checkpoint_names(result) -> list[str]:
    import mindspore as ms

    return list(ms.load_checkpoint(str(result.checkpoint_path)))
