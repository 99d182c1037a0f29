"""Control flow: an If with a constant condition is inlined and converts; the rest is reported."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import assert_matches, make_model


def _branch(name, op, output="out"):
    """A branch graph reading the outer value ``x`` (outer-scope reference, as exporters write it)."""
    node = helper.make_node(op, ["x"], [output])
    return helper.make_graph(
        [node], name, [], [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)]
    )


def _if_model(cond_nodes, cond_inits=None, then_op="Relu", else_op="Neg"):
    if_node = helper.make_node(
        "If",
        ["cond"],
        ["y"],
        then_branch=_branch("then", then_op, "t_out"),
        else_branch=_branch("else", else_op, "e_out"),
    )
    tail = helper.make_node("Sigmoid", ["y"], ["z"])
    return make_model(
        cond_nodes + [if_node, tail],
        [("x", np.float32, (2, 3))],
        [("z", np.float32, (2, 3))],
        cond_inits,
        opset=13,
    )


@pytest.mark.parametrize("value, op", [(True, "Relu"), (False, "Neg")])
def test_if_constant_initializer_condition(tmp_path, value, op):
    model = _if_model([], {"cond": np.array(value)})
    result = assert_matches(model, tmp_path)
    text = result.script_path.read_text()
    assert f"ops.{op.lower()}(" in text or ("-x" in text and op == "Neg")


def test_if_constant_node_condition(tmp_path):
    const = helper.make_node(
        "Constant", [], ["cond"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True])
    )
    assert_matches(_if_model([const]), tmp_path)


def test_if_condition_folded_from_shape(tmp_path):
    """A shape test (typical of traced exports) folds to a constant, then the If is inlined."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
        helper.make_node("Equal", ["batch", "two"], ["cond"]),
    ]
    inits = {"zero": np.array(0, np.int64), "two": np.array(2, np.int64)}
    result = assert_matches(_if_model(nodes, inits, then_op="Tanh", else_op="Relu"), tmp_path)
    assert "ops.tanh(" in result.script_path.read_text()


def _run_everywhere(model, tmp_path, feeds_list, graph_mode=(False, True)):
    """Convert once (dynamic, --shape from the first feeds), then MindSpore equals onnxruntime
    on every feed, in each mode."""
    onnx.save(model, tmp_path / "m.onnx")
    first = feeds_list[0]
    names = [inp.name for inp in model.graph.input if inp.name in first]
    shapes = [",".join(map(str, np.shape(first[n]))) or "" for n in names]
    result = convert(
        tmp_path / "m.onnx",
        output=tmp_path / "out",
        shape=[f"{n}={s}" for n, s in zip(names, shapes)],
    )
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    outputs = [out.name for out in model.graph.output]
    for feeds in feeds_list:
        want = run_onnxruntime(model, feeds, outputs)
        for mode in graph_mode:
            got = run_mindspore(
                result.script_path,
                result.checkpoint_path,
                [feeds[n] for n in names],
                graph_mode=mode,
            )
            for g, w in zip(got, want):
                assert g.shape == w.shape, (g.shape, w.shape, mode)
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return result


def _sum_condition():
    return [
        helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"]),
    ]


def test_if_decided_at_run_time_becomes_a_python_if(tmp_path):
    model = _if_model(_sum_condition(), {"zero": np.array(0, np.float32)})
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "n"
    positive, negative = np.ones((2, 3), np.float32), -np.ones((4, 3), np.float32)
    result = _run_everywhere(model, tmp_path, [{"x": positive}, {"x": negative}])
    text = result.script_path.read_text()
    assert "self.then_branch(x) if " in text and "else self.else_branch(x)" in text
    assert "class ThenBranch(nn.Cell):" in text and "class ElseBranch(nn.Cell):" in text


def _loop_body(nested_if: bool):
    """acc += x * i (x from the outer scope); per step: acc; keep going while acc's sum < limit.
    With ``nested_if``, the increment is negated on odd steps by an If inside the body."""
    nodes = [
        helper.make_node("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "i_float"], ["step_value"]),
    ]
    if nested_if:
        odd = helper.make_graph(
            [helper.make_node("Neg", ["step_value"], ["negated"])],
            "odd",
            [],
            [helper.make_tensor_value_info("negated", TensorProto.FLOAT, None)],
        )
        even = helper.make_graph(
            [helper.make_node("Identity", ["step_value"], ["kept"])],
            "even",
            [],
            [helper.make_tensor_value_info("kept", TensorProto.FLOAT, None)],
        )
        nodes += [
            helper.make_node("Mod", ["i", "two"], ["parity"]),
            helper.make_node("Equal", ["parity", "one"], ["is_odd"]),
            helper.make_node("If", ["is_odd"], ["increment"], then_branch=odd, else_branch=even),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["step_value"], ["increment"]))
    nodes += [
        helper.make_node("Add", ["acc_in", "increment"], ["acc_out"]),
        helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
        helper.make_node("Less", ["total", "limit"], ["cond_out"]),
        helper.make_node("Identity", ["acc_out"], ["per_step"]),
    ]
    return helper.make_graph(
        nodes,
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("per_step", TensorProto.FLOAT, None),
        ],
    )


@pytest.mark.parametrize("nested_if", [False, True])
def test_loop_with_run_time_trip_count_and_condition_becomes_a_while(tmp_path, nested_if):
    nodes = [
        helper.make_node(
            "Loop", ["trips", "go", "start"], ["acc", "steps"], body=_loop_body(nested_if)
        )
    ]
    model = make_model(
        nodes,
        [
            ("trips", np.int64, []),
            ("go", np.bool_, []),
            ("start", np.float32, ["n", 3]),
            ("x", np.float32, ["n", 3]),
        ],
        [("acc", np.float32, None), ("steps", np.float32, None)],
        {
            "limit": np.array(40.0, np.float32),
            "two": np.array(2, np.int64),
            "one": np.array(1, np.int64),
        },
        opset=13,
    )
    rng = np.random.default_rng(0)
    feeds = [
        {
            "trips": np.array(trips, np.int64),
            "go": np.array(True),
            "start": rng.standard_normal((n, 3)).astype(np.float32),
            "x": np.abs(rng.standard_normal((n, 3))).astype(np.float32),
        }
        for trips, n in ((3, 2), (9, 4))
    ]
    result = _run_everywhere(model, tmp_path, feeds, graph_mode=(False, True))
    text = result.script_path.read_text()
    assert "while step < trip_count and condition:" in text
    assert "class LoopBody(nn.Cell):" in text
    if nested_if:
        assert "self.then_branch(" in text


def test_loop_without_scan_outputs_runs_in_graph_mode(tmp_path):
    body = _loop_body(False)
    del body.output[2]
    del body.node[-1]
    nodes = [helper.make_node("Loop", ["trips", "", "start"], ["acc"], body=body)]
    model = make_model(
        nodes,
        [("trips", np.int64, []), ("start", np.float32, [2, 3]), ("x", np.float32, [2, 3])],
        [("acc", np.float32, None)],
        {"limit": np.array(1e9, np.float32)},
        opset=13,
    )
    rng = np.random.default_rng(1)
    feeds = [
        {
            "trips": np.array(trips, np.int64),
            "start": rng.standard_normal((2, 3)).astype(np.float32),
            "x": rng.standard_normal((2, 3)).astype(np.float32),
        }
        for trips in (0, 5)
    ]
    _run_everywhere(model, tmp_path, feeds)


def test_scan_over_a_dynamic_length_becomes_a_for(tmp_path):
    body = helper.make_graph(
        [
            helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
            helper.make_node("Mul", ["sum_out", "scale"], ["scaled"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("sum_in", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("row", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("sum_out", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("scaled", TensorProto.FLOAT, None),
        ],
    )
    scan = helper.make_node(
        "Scan",
        ["init", "seq"],
        ["total", "history"],
        body=body,
        num_scan_inputs=1,
        scan_input_axes=[1],
        scan_input_directions=[1],
    )
    model = make_model(
        [scan],
        [("init", np.float32, [2]), ("seq", np.float32, [2, "t"]), ("scale", np.float32, [2])],
        [("total", np.float32, None), ("history", np.float32, None)],
        opset=16,
    )
    rng = np.random.default_rng(2)
    feeds = [
        {
            "init": rng.standard_normal(2).astype(np.float32),
            "seq": rng.standard_normal((2, t)).astype(np.float32),
            "scale": rng.standard_normal(2).astype(np.float32),
        }
        for t in (3, 6)
    ]
    result = _run_everywhere(model, tmp_path, feeds, graph_mode=(False, True))
    assert "while step < length:" in result.script_path.read_text()


def test_while_loop_without_trip_count_collects_per_step_values_in_pynative(tmp_path):
    nodes = [
        helper.make_node("Loop", ["", "go", "start"], ["acc", "steps"], body=_loop_body(False))
    ]
    model = make_model(
        nodes,
        [("go", np.bool_, []), ("start", np.float32, [2, 3]), ("x", np.float32, [2, 3])],
        [("acc", np.float32, None), ("steps", np.float32, None)],
        {"limit": np.array(30.0, np.float32)},
        opset=13,
    )
    feeds = {
        "go": np.array(True),
        "start": np.zeros((2, 3), np.float32),
        "x": np.full((2, 3), 0.5, np.float32),
    }
    result = _run_everywhere(model, tmp_path, [feeds], graph_mode=(False,))
    assert "while condition:" in result.script_path.read_text()


def test_a_body_with_weights_of_its_own_keeps_them_in_the_checkpoint(tmp_path):
    import mindspore as ms

    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Mul", ["acc_in", "body.scale"], ["scaled"]),
            helper.make_node("Add", ["scaled", "x"], ["acc_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, None),
        ],
        [onnx.numpy_helper.from_array(np.array([0.5, -1.0, 2.0], np.float32), "body.scale")],
    )
    nodes = [helper.make_node("Loop", ["trips", "", "x"], ["acc"], body=body)]
    model = make_model(
        nodes,
        [("trips", np.int64, []), ("x", np.float32, [2, 3])],
        [("acc", np.float32, None)],
        opset=13,
    )
    rng = np.random.default_rng(4)
    feeds = [
        {"trips": np.array(t, np.int64), "x": rng.standard_normal((2, 3)).astype(np.float32)}
        for t in (2, 4)
    ]
    result = _run_everywhere(model, tmp_path, feeds)
    stored = ms.load_checkpoint(str(result.checkpoint_path))
    assert [name for name in stored if name.startswith("loop.body.")] == list(stored), stored
    assert len(stored) == 1


HIDDEN = 4


def _rate_switch_model(samples: int | str = "samples"):
    """``If(rate == 16000)``: the 16 kHz branch works at any length; the 8 kHz branch (as in
    Silero VAD) feeds an LSTM a rank that is only 3 for 256-sample chunks."""
    then_branch = helper.make_graph(
        [
            helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["head"]),
            helper.make_node("Unsqueeze", ["head", "axis0"], ["t_out"]),
        ],
        "then",
        [],
        [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)],
    )
    inner_then = helper.make_graph(
        [helper.make_node("Squeeze", ["chunks", "axis1"], ["squeezed"])],
        "squeeze",
        [],
        [helper.make_tensor_value_info("squeezed", TensorProto.FLOAT, None)],
    )
    inner_else = helper.make_graph(
        [helper.make_node("Identity", ["chunks"], ["kept"])],
        "keep",
        [],
        [helper.make_tensor_value_info("kept", TensorProto.FLOAT, None)],
    )
    else_branch = helper.make_graph(
        [
            helper.make_node("Reshape", ["x", "chunk_shape"], ["chunks"]),
            helper.make_node("Shape", ["chunks"], ["chunk_dims"]),
            helper.make_node("Gather", ["chunk_dims", "one"], ["count"], axis=0),
            helper.make_node("Equal", ["count", "one"], ["single"]),
            helper.make_node(
                "If", ["single"], ["steps"], then_branch=inner_then, else_branch=inner_else
            ),
            helper.make_node("Unsqueeze", ["steps", "axis0"], ["sequence"]),
            helper.make_node("LSTM", ["sequence", "w", "r"], ["", "e_out"], hidden_size=HIDDEN),
        ],
        "else",
        [],
        [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)],
    )
    nodes = [
        helper.make_node("Equal", ["rate", "sixteen_k"], ["wide"]),
        helper.make_node("If", ["wide"], ["y"], then_branch=then_branch, else_branch=else_branch),
    ]
    rng = np.random.default_rng(0)
    inits = {
        "sixteen_k": np.array(16000, np.int64),
        "starts": np.array([0], np.int64),
        "ends": np.array([HIDDEN], np.int64),
        "axes": np.array([1], np.int64),
        "axis0": np.array([0], np.int64),
        "axis1": np.array([1], np.int64),
        "one": np.array(1, np.int64),
        "chunk_shape": np.array([1, -1, 256], np.int64),
        "w": rng.standard_normal((1, 4 * HIDDEN, 256)).astype(np.float32) * 0.1,
        "r": rng.standard_normal((1, 4 * HIDDEN, HIDDEN)).astype(np.float32) * 0.1,
    }
    return make_model(
        nodes,
        [("x", np.float32, (1, samples)), ("rate", np.int64, ())],
        [("y", np.float32, None)],
        inits,
        opset=13,
    )


@pytest.mark.slow
def test_a_branch_the_source_cannot_run_at_the_conversion_sizes_raises(tmp_path):
    """Converted at 512 samples, the 8 kHz branch fails in onnxruntime too: the script's branch
    raises there, and the 16 kHz branch matches; converted at 256, both branches convert."""
    model = _rate_switch_model()
    onnx.save(model, tmp_path / "m.onnx")
    wide = np.array(16000, np.int64)
    x = np.random.default_rng(1).standard_normal((1, 512)).astype(np.float32)
    with pytest.raises(Exception, match="LSTM"):
        run_onnxruntime(model, {"x": x, "rate": np.array(8000, np.int64)}, ["y"])
    result = convert(
        tmp_path / "m.onnx", output=tmp_path / "out", shape=["x=1,512"], verify=True, mindir=True
    )
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    assert result.paths.mindir is not None and result.paths.mindir.exists()  # sr 16000 there
    text = result.script_path.read_text()
    assert "onnxruntime fails there too" in text and "raise ValueError(" in text
    want = run_onnxruntime(model, {"x": x, "rate": wide}, ["y"])
    for graph_mode in (False, True):
        got = run_mindspore(result.script_path, result.checkpoint_path, [x, wide], graph_mode)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
        with pytest.raises(ValueError, match="cannot run at the input sizes"):
            narrow = np.array(8000, np.int64)
            run_mindspore(result.script_path, result.checkpoint_path, [x, narrow], graph_mode)

    short = x[:, :256]
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out256", shape=["x=1,256"])
    assert result.unconverted == []
    assert "raise ValueError(" not in result.script_path.read_text()
    for rate in (wide, np.array(8000, np.int64)):
        want = run_onnxruntime(model, {"x": short, "rate": rate}, ["y"])
        got = run_mindspore(result.script_path, result.checkpoint_path, [short, rate])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_a_branch_that_runs_in_the_source_but_does_not_convert_stays_unconverted(tmp_path):
    """Only a failure of the source itself makes a raising branch: an operator we do not
    convert (com.microsoft Inverse), in a branch onnxruntime runs, is reported."""
    inverse = helper.make_graph(
        [helper.make_node("Inverse", ["x"], ["e_out"], domain="com.microsoft")],
        "else",
        [],
        [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)],
    )
    nodes = [
        helper.make_node("Greater", ["s", "zero"], ["cond"]),
        helper.make_node(
            "If",
            ["cond"],
            ["y"],
            then_branch=_branch("then", "Relu", "t_out"),
            else_branch=inverse,
        ),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, (2, 3, 3)), ("s", np.float32, ())],
        [("y", np.float32, (2, 3, 3))],
        {"zero": np.array(0, np.float32)},
        opset=13,
        extra_opsets={"com.microsoft": 1},
    )
    x = np.eye(3, dtype=np.float32)[None].repeat(2, 0) * 2
    run_onnxruntime(model, {"x": x, "s": np.array(-1, np.float32)}, ["y"])  # it runs
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert [(u.op_type, "Inverse" in u.reason) for u in result.unconverted] == [("If", True)]
