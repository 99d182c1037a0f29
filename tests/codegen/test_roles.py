"""Block inputs named by what the block does with them (codegen/roles.py)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model

F32 = np.float32


def _half_passed_through(axis: int):
    """The root splits x in two along ``axis``; block ``blk`` convolves one half and puts the
    other back beside it (ShuffleNet's unit along channels; a cache extended along axis 2)."""
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], name="/Split", axis=axis, num_outputs=2),
        helper.make_node("Conv", ["b", "w"], ["rb"], name="/blk/conv/Conv"),
        helper.make_node("Concat", ["a", "rb"], ["y"], name="/blk/Concat", axis=axis),
    ]
    channels = 2 if axis == 1 else 4
    weight = np.random.default_rng(1).standard_normal((channels, channels, 1, 1)).astype(F32)
    shape = [1, 4, 4, 4]
    return make_model(nodes, [("x", F32, shape)], [("y", F32, None)], {"w": weight}, opset=18)


@pytest.mark.parametrize("axis, name", [(1, "shortcut"), (2, "past_key")])
def test_a_value_only_put_back_beside_the_result_is_named_by_the_axis(tmp_path, axis, name):
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 4, 4, 4)).astype(F32)}
    result = assert_matches(_half_passed_through(axis), tmp_path, feeds)
    code = result.script_path.read_text()
    block = code[code.index("class ") : code.index("class MindSporeModel")]
    assert f", {name})" in block.split("def construct(")[1].split("\n")[0], block


def test_a_second_float_input_that_weighs_the_result_and_an_integer_input_are_named(tmp_path):
    """Mixtral's experts: the tokens, the routing weights they are scaled by, and the chosen
    experts' indices: ``construct(self, x, weights, indices)``, not ``x, x_1, x_2``."""
    nodes = [
        helper.make_node("Relu", ["tokens"], ["hidden"], name="/Relu"),
        helper.make_node("Neg", ["routing"], ["scales"], name="/Neg"),
        helper.make_node("Add", ["chosen", "one"], ["ids"], name="/Add"),
        helper.make_node("MatMul", ["hidden", "w"], ["h"], name="/blk/proj/MatMul"),
        helper.make_node("Reshape", ["scales", "column"], ["scale_col"], name="/blk/Reshape"),
        helper.make_node("Mul", ["h", "scale_col"], ["weighed"], name="/blk/Mul"),
        helper.make_node("Cast", ["ids"], ["ids_f"], name="/blk/Cast", to=1),
        helper.make_node("Reshape", ["ids_f", "column"], ["ids_col"], name="/blk/Reshape_1"),
        helper.make_node("Add", ["weighed", "ids_col"], ["y"], name="/blk/Add"),
    ]
    constants = {
        "w": np.random.default_rng(2).standard_normal((8, 8)).astype(F32),
        "column": np.array([-1, 1], np.int64),
        "one": np.array(1, np.int64),
    }
    inputs = [("tokens", F32, [4, 8]), ("routing", F32, [4]), ("chosen", np.int64, [4])]
    model = make_model(nodes, inputs, [("y", F32, None)], constants)
    rng = np.random.default_rng(3)
    feeds = {
        "tokens": rng.standard_normal((4, 8)).astype(F32),
        "routing": rng.standard_normal(4).astype(F32),
        "chosen": rng.integers(0, 3, 4).astype(np.int64),
    }
    code = assert_matches(model, tmp_path, feeds).script_path.read_text()
    assert "def construct(self, x, weights, indices):" in code, code


def test_a_cache_cropped_from_a_network_input_is_named_after_that_input(tmp_path):
    """A sliding window's value cache cropped by the caller (``past_value_1[:, :, -3:]``) and
    extended in the block is the block's ``past_value``, whatever caches come before it."""
    nodes = [
        helper.make_node(
            "Slice", ["past_value_1", "minus3", "big", "axis2"], ["crop"], name="/Slice"
        ),
        helper.make_node("MatMul", ["x", "w"], ["h"], name="/blk/proj/MatMul"),
    ]
    for index, cache in enumerate(("past_key_0", "past_value_0", "crop")):
        nodes.append(
            helper.make_node(
                "Concat", [cache, "h"], [f"cat{index}"], name=f"/blk/Concat_{index}", axis=2
            )
        )
    nodes.append(helper.make_node("Sum", ["cat0", "cat1", "cat2"], ["y"], name="/blk/Sum"))
    constants = {
        "minus3": np.array([-3], np.int64),
        "big": np.array([2**62], np.int64),
        "axis2": np.array([2], np.int64),
        "w": np.random.default_rng(1).standard_normal((4, 4)).astype(F32),
    }
    sizes = {"past_key_0": 3, "past_value_0": 3, "past_value_1": 5}  # the last one is cropped
    caches = [(name, F32, [1, 2, size, 4]) for name, size in sizes.items()]
    model = make_model(nodes, [("x", F32, [1, 2, 1, 4]), *caches], [("y", F32, None)], constants)
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((1, 2, 1, 4)).astype(F32)}
    feeds.update({name: rng.standard_normal(shape).astype(F32) for name, _, shape in caches})
    result = assert_matches(model, tmp_path, feeds)
    code = result.script_path.read_text()
    signature = code[code.index("class Blk") :].split("def construct(")[1].split(")")[0]
    assert signature.split(", ")[-1].startswith("past_value"), signature


def test_several_feature_maps_are_hidden_states_not_x_and_x_1(tmp_path):
    """SegFormer's decode head takes every stage's feature map: ``hidden_states``,
    ``hidden_states_1``, not ``x, x_1``."""
    nodes = [
        helper.make_node("Relu", ["a"], ["fa"], name="/Relu"),
        helper.make_node("Relu", ["b"], ["fb"], name="/Relu_1"),
        helper.make_node("Conv", ["fa", "w"], ["ca"], name="/head/proj/Conv"),
        helper.make_node("Add", ["ca", "fb"], ["y"], name="/head/Add"),
    ]
    weight = np.random.default_rng(1).standard_normal((2, 2, 1, 1)).astype(F32)
    inputs = [("a", F32, [1, 2, 4, 4]), ("b", F32, [1, 2, 4, 4])]
    model = make_model(nodes, inputs, [("y", F32, None)], {"w": weight})
    rng = np.random.default_rng(2)
    feeds = {name: rng.standard_normal(shape).astype(F32) for name, _, shape in inputs}
    result = assert_matches(model, tmp_path, feeds)
    code = result.script_path.read_text()
    assert "def construct(self, hidden_states, hidden_states_1):" in code, code


def test_a_bias_with_one_row_per_head_is_alibi(tmp_path):
    """MPT adds its ALiBi bias (heads, 1, keys) to the scores beside the mask: ``alibi``, not a
    second ``attention_mask``."""
    nodes = [
        helper.make_node("Relu", ["slopes"], ["alibi_bias"], name="/Relu"),
        helper.make_node("Relu", ["h"], ["hidden"], name="/Relu_1"),
        helper.make_node("MatMul", ["hidden", "wq"], ["q"], name="/attn/q_proj/MatMul"),
        helper.make_node("Transpose", ["q"], ["kt"], name="/attn/Transpose", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="/attn/MatMul"),
        helper.make_node("Add", ["scores", "alibi_bias"], ["biased"], name="/attn/Add"),
        helper.make_node("Softmax", ["biased"], ["probs"], name="/attn/Softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "q"], ["y"], name="/attn/MatMul_1"),
    ]
    weight = np.random.default_rng(1).standard_normal((4, 4)).astype(F32)
    inputs = [("slopes", F32, [2, 1, 3]), ("h", F32, [1, 2, 3, 4])]
    model = make_model(nodes, inputs, [("y", F32, None)], {"wq": weight})
    rng = np.random.default_rng(2)
    feeds = {name: rng.standard_normal(shape).astype(F32) for name, _, shape in inputs}
    result = assert_matches(model, tmp_path, feeds)
    code = result.script_path.read_text()
    assert "def construct(self, x, alibi):" in code, code


def test_layers_of_a_list_read_the_network_input_by_role_and_share_one_class(tmp_path):
    """``forward(self, x): return self.layers(x)`` with ``nn.TransformerEncoderLayer`` s: the
    first layer reads the network input ``x``, the second the first's result; both take
    ``hidden_states`` (down to their attention), so one class serves both."""
    rng = np.random.default_rng(5)
    nodes, weights, hidden = [], {}, "x"
    for i in range(2):
        scope = f"/layers/layers.{i}"
        weights[f"layers.{i}.attn.in_proj_weight"] = rng.standard_normal((4, 4)).astype(F32)
        weights[f"layers.{i}.attn.out_proj.weight"] = rng.standard_normal((4, 4)).astype(F32)
        nodes += [
            helper.make_node(
                "MatMul",
                [hidden, f"layers.{i}.attn.in_proj_weight"],
                [f"p{i}"],
                name=f"{scope}/attn/MatMul",
            ),
            helper.make_node("Relu", [f"p{i}"], [f"r{i}"], name=f"{scope}/attn/Relu"),
            helper.make_node(
                "MatMul",
                [f"r{i}", f"layers.{i}.attn.out_proj.weight"],
                [f"o{i}"],
                name=f"{scope}/attn/MatMul_1",
            ),
            helper.make_node("Add", [hidden, f"o{i}"], [f"h{i}"], name=f"{scope}/Add"),
        ]
        hidden = f"h{i}"
    nodes.append(helper.make_node("Identity", [hidden], ["y"], name="/Identity"))
    model = make_model(
        nodes, [("x", F32, ["batch", "seq", 4])], [("y", F32, None)], weights, opset=18
    )
    feeds = {"x": rng.standard_normal((2, 3, 4)).astype(F32)}
    result = assert_matches(model, tmp_path, feeds, shape=["x=2,3,4"])
    code = result.script_path.read_text()
    assert "class Attention2" not in code and "class AttentionLayer2" not in code, code
    assert "def construct(self, hidden_states):" in code.split("class Attention(")[1], code
