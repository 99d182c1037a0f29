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
