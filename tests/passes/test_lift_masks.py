"""The padding-mask lift: index grids over a 2-D mask become ``mask[:, None, None, :]``, and the
scores still match onnxruntime's at more than one size, with padded positions."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.helpers import assert_matches, make_model

F32, I64 = np.float32, np.int64


def _sizes():
    """Nodes giving ``batch`` and ``length`` (1-D, one element) and the scalars ``b``/``l``."""
    return [
        helper.make_node("Shape", ["mask"], ["mask_shape"]),
        helper.make_node("Gather", ["mask_shape", "i0"], ["batch"], axis=0),
        helper.make_node("Gather", ["mask_shape", "i1"], ["length"], axis=0),
        helper.make_node("Squeeze", ["batch", "i0"], ["b"]),
        helper.make_node("Squeeze", ["length", "i0"], ["l"]),
        helper.make_node("Range", ["zero", "b", "one"], ["b_range"]),
        helper.make_node("Range", ["zero", "l", "one"], ["kv_range"]),
        helper.make_node("Unsqueeze", ["b_range", "axes_123"], ["b_grid"]),
        helper.make_node("Cast", ["mask"], ["mask_bool"], to=TensorProto.BOOL),
    ]


def _dynamo_grid(kv_index: str = "kv_range"):
    """transformers' sdpa_mask as the dynamo exporter writes it: gather_nd over stacked grids."""
    return [
        helper.make_node("Unsqueeze", [kv_index, "axes_012"], ["kv_grid"]),
        helper.make_node("Concat", ["batch", "one_1d", "one_1d", "length"], ["grid"], axis=0),
        helper.make_node("Expand", ["b_grid", "grid"], ["b_wide"]),
        helper.make_node("Expand", ["kv_grid", "grid"], ["kv_wide"]),
        helper.make_node("Unsqueeze", ["b_wide", "last"], ["b_index"]),
        helper.make_node("Unsqueeze", ["kv_wide", "last"], ["kv_index"]),
        helper.make_node("Concat", ["b_index", "kv_index"], ["index"], axis=-1),
        helper.make_node("GatherND", ["mask_bool", "index"], ["padding"]),
    ]


def _torchscript_flat():
    """The TorchScript spelling: a flat gather at ``b * length + kv``, reshaped to 4-D."""
    return [
        helper.make_node("Unsqueeze", ["kv_range", "axes_012"], ["kv_grid"]),
        helper.make_node("Reshape", ["mask_bool", "column"], ["flat"]),
        helper.make_node("Mul", ["b_grid", "l"], ["row_start"]),
        helper.make_node("Add", ["kv_grid", "row_start"], ["flat_index"]),
        helper.make_node("Gather", ["flat", "flat_index"], ["gathered"], axis=0),
        helper.make_node("Concat", ["batch", "one_1d", "one_1d", "length"], ["grid"], axis=0),
        helper.make_node("Reshape", ["gathered", "grid"], ["padding"]),
    ]


def _model(grid_nodes):
    nodes = _sizes() + grid_nodes
    nodes += [
        helper.make_node("Where", ["padding", "zero_f", "minus_big"], ["bias"]),
        helper.make_node("Add", ["scores", "bias"], ["y"]),
    ]
    constants = {
        "i0": np.array([0], I64),
        "i1": np.array([1], I64),
        "zero": np.array(0, I64),
        "one": np.array(1, I64),
        "one_1d": np.array([1], I64),
        "axes_123": np.array([1, 2, 3], I64),
        "axes_012": np.array([0, 1, 2], I64),
        "last": np.array([-1], I64),
        "column": np.array([-1, 1], I64),
        "zero_f": np.array(0.0, F32),
        "minus_big": np.array(-1e9, F32),
    }
    return make_model(
        nodes,
        [("scores", F32, ["batch", 2, "query", "key"]), ("mask", I64, ["batch", "key"])],
        [("y", F32, ["batch", 2, "query", "key"])],
        constants,
    )


def _feeds(batch: int, length: int) -> dict:
    rng = np.random.default_rng(batch * 10 + length)
    mask = np.ones((batch, length), I64)
    mask[0, :2] = 0  # left padding in the first row, right padding in the last
    mask[-1, -1] = 0
    scores = rng.standard_normal((batch, 2, length, length)).astype(F32)
    return {"scores": scores, "mask": mask}


@pytest.mark.parametrize("grid", [_dynamo_grid, _torchscript_flat], ids=["dynamo", "torchscript"])
def test_mask_index_grid_becomes_one_unsqueeze(tmp_path, grid):
    model = _model(grid())
    result = assert_matches(model, tmp_path, _feeds(2, 5), shape=["2,2,5,5", "2,5"])
    code = result.script_path.read_text()
    assert "[:, None, None, :]" in code, code
    assert "gather" not in code and "arange" not in code, code
    assert_matches(model, tmp_path / "second", _feeds(3, 4), shape=["3,2,4,4", "3,4"])


def test_grid_that_reads_the_mask_differently_is_kept(tmp_path):
    """Keys read in reverse order are not ``mask[:, None, None, :]``: the gather stays."""
    reverse = [
        helper.make_node("Sub", ["l", "one"], ["last_key"]),
        helper.make_node("Sub", ["last_key", "kv_range"], ["reversed_keys"]),
    ]
    model = _model(reverse + _dynamo_grid("reversed_keys"))
    code = assert_matches(model, tmp_path, _feeds(2, 5), shape=["2,2,5,5", "2,5"])
    assert "gather_nd" in code.script_path.read_text()


def test_a_gather_whose_index_hangs_on_a_deep_chain_of_sizes_is_left_quickly():
    """EnCodec through TorchScript: each layer pads by an amount computed from the previous
    layer's size, so every size reads all the sizes before it. Searching each size's cone
    anew took exponential time (a conversion ran for hours); the search has one budget."""
    import signal

    from mindconverter.graph import Graph
    from mindconverter.graph.specs import detect_inputs
    from mindconverter.mappers.registry import default_registry
    from mindconverter.passes import lift_masks
    from mindconverter.passes.context import PassContext
    from mindconverter.passes.fix_shapes import parse_shape_request
    from mindconverter.passes.pipeline import PIPELINE, run_passes

    nodes, value = [], "x"
    for i in range(40):  # x grows by an amount read off its size, level after level
        nodes += [
            helper.make_node("Shape", [value], [f"size{i}"]),
            helper.make_node("Gather", [f"size{i}", "last"], [f"length{i}"], axis=0),
            helper.make_node("Mod", [f"length{i}", "two"], [f"pad{i}"]),
            helper.make_node("Concat", ["no_pad", f"pad{i}"], [f"pads{i}"], axis=0),
            helper.make_node("Pad", [value, f"pads{i}"], [f"grown{i}"]),
        ]
        value = f"grown{i}"
    nodes += [
        helper.make_node("Shape", [value], ["final_size"]),
        helper.make_node("Gather", ["final_size", "last"], ["final_length"], axis=0),
        helper.make_node("Mod", ["final_length", "two"], ["index"]),
        helper.make_node("Reshape", ["index", "index_shape"], ["indices"]),
        helper.make_node("Gather", ["mask", "indices"], ["picked"], axis=0),
        helper.make_node("Unsqueeze", ["picked", "middle"], ["y"]),
    ]
    constants = {
        "last": np.array([1], np.int64),
        "two": np.array([2], np.int64),
        "no_pad": np.array([0, 0, 0], np.int64),
        "index_shape": np.array([1, 1], np.int64),
        "middle": np.array([1], np.int64),
    }
    inputs = [("x", np.float32, [1, "n"]), ("mask", np.int64, [2, 5])]
    model = make_model(nodes, inputs, [("y", np.int64, None), (value, np.float32, None)], constants)
    graph = Graph(model)
    context = PassContext(
        default_registry(), shapes=[parse_shape_request(s) for s in ("1,4", "2,5")]
    )
    context.input_specs = detect_inputs(graph.model)
    upto = [step.name for step in PIPELINE].index("index padding masks as mask[:, None, None, :]")
    run_passes(graph, context, PIPELINE[:upto])
    assert graph.symbolic_shapes.get("y"), "the gather must reach the mask search"

    def too_long(*_):
        raise TimeoutError("the mask search does not end")

    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(60)  # the search takes milliseconds; without a budget, hours
    try:
        lift_masks.run(graph, context)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
