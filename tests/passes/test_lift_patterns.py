"""Lifting decomposed chains (LayerNorm, RMSNorm, rotary, GELU, Linear) back to layers,
checked by numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.graph import Graph
from mindconverter.mappers.registry import default_registry
from mindconverter.passes.context import PassContext
from mindconverter.passes.lift_patterns import DOMAIN, lift_patterns
from mindconverter.passes.pipeline import SIMPLIFY, run_passes
from tests.helpers import assert_matches, assert_runs_like_onnxruntime, convert_fully, make_model

RNG = np.random.default_rng(7)
F32 = np.float32
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _c(name, value, dtype=F32):
    return helper.make_node(
        "Constant", [], [name], value=onnx.numpy_helper.from_array(np.asarray(value, dtype), name)
    )


def layer_norm_nodes(
    x, out, prefix, opset, gamma="gamma", beta="beta", eps=1e-5, use_pow=True, reciprocal=False
):
    """nn.LayerNorm(C) as the TorchScript exporter spells it below opset 17."""
    p = prefix
    if opset >= 18:
        nodes = [
            _c(f"{p}axes", [-1], np.int64),
            helper.make_node("ReduceMean", [x, f"{p}axes"], [f"{p}mean"], name=f"{p}/ReduceMean"),
        ]
        second = helper.make_node(
            "ReduceMean", [f"{p}sq", f"{p}axes"], [f"{p}var"], name=f"{p}/ReduceMean_1"
        )
    else:
        nodes = [
            helper.make_node("ReduceMean", [x], [f"{p}mean"], axes=[-1], name=f"{p}/ReduceMean")
        ]
        second = helper.make_node(
            "ReduceMean", [f"{p}sq"], [f"{p}var"], axes=[-1], name=f"{p}/ReduceMean_1"
        )
    nodes.append(helper.make_node("Sub", [x, f"{p}mean"], [f"{p}d"], name=f"{p}/Sub"))
    if use_pow:
        nodes += [
            _c(f"{p}two", 2.0),
            helper.make_node("Pow", [f"{p}d", f"{p}two"], [f"{p}sq"], name=f"{p}/Pow"),
        ]
    else:
        nodes.append(helper.make_node("Mul", [f"{p}d", f"{p}d"], [f"{p}sq"], name=f"{p}/Mul_sq"))
    nodes += [
        second,
        _c(f"{p}eps", eps),
        helper.make_node("Add", [f"{p}var", f"{p}eps"], [f"{p}ve"], name=f"{p}/Add"),
        helper.make_node("Sqrt", [f"{p}ve"], [f"{p}std"], name=f"{p}/Sqrt"),
    ]
    if reciprocal:
        nodes += [
            helper.make_node("Reciprocal", [f"{p}std"], [f"{p}inv"], name=f"{p}/Reciprocal"),
            helper.make_node("Mul", [f"{p}inv", f"{p}d"], [f"{p}n"], name=f"{p}/Mul_n"),
        ]
    else:
        nodes.append(helper.make_node("Div", [f"{p}d", f"{p}std"], [f"{p}n"], name=f"{p}/Div"))
    last = f"{p}n"
    if gamma:
        nodes.append(
            helper.make_node("Mul", [last, gamma], [f"{p}g" if beta else out], name=f"{p}/Mul")
        )
        last = f"{p}g"
    if beta:
        nodes.append(
            helper.make_node("Add", [last if gamma else f"{p}n", beta], [out], name=f"{p}/Add_1")
        )
    if not gamma and not beta:
        nodes[-1].output[0] = out
    return nodes


def erf_gelu_nodes(x, out, p, style="torch"):
    """GELU(x) as nn.GELU (torch) or HF's ``x * 0.5 * (1 + erf(x / sqrt(2)))`` (hf) export it."""
    if style == "torch":
        return [
            _c(f"{p}s2", math.sqrt(2.0)),
            helper.make_node("Div", [x, f"{p}s2"], [f"{p}a"]),
            helper.make_node("Erf", [f"{p}a"], [f"{p}e"]),
            _c(f"{p}one", 1.0),
            helper.make_node("Add", [f"{p}e", f"{p}one"], [f"{p}t"]),
            helper.make_node("Mul", [x, f"{p}t"], [f"{p}m"]),
            _c(f"{p}half", 0.5),
            helper.make_node("Mul", [f"{p}m", f"{p}half"], [out]),
        ]
    return [
        _c(f"{p}half", 0.5),
        helper.make_node("Mul", [x, f"{p}half"], [f"{p}h"]),
        _c(f"{p}r2", 1 / math.sqrt(2.0)),
        helper.make_node("Mul", [x, f"{p}r2"], [f"{p}a"]),
        helper.make_node("Erf", [f"{p}a"], [f"{p}e"]),
        _c(f"{p}one", 1.0),
        helper.make_node("Add", [f"{p}one", f"{p}e"], [f"{p}t"]),
        helper.make_node("Mul", [f"{p}h", f"{p}t"], [out]),
    ]


def tanh_gelu_nodes(x, out, p, cube="pow"):
    """GPT-2's ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))``."""
    nodes = [_c(f"{p}half", 0.5), helper.make_node("Mul", [x, f"{p}half"], [f"{p}h"])]
    if cube == "pow":
        nodes += [_c(f"{p}three", 3.0), helper.make_node("Pow", [x, f"{p}three"], [f"{p}x3"])]
    else:
        nodes += [
            helper.make_node("Mul", [x, x], [f"{p}x2"]),
            helper.make_node("Mul", [f"{p}x2", x], [f"{p}x3"]),
        ]
    nodes += [
        _c(f"{p}k", 0.044715),
        helper.make_node("Mul", [f"{p}k", f"{p}x3"], [f"{p}kx3"]),
        helper.make_node("Add", [x, f"{p}kx3"], [f"{p}in"]),
        _c(f"{p}c", math.sqrt(2.0 / math.pi)),
        helper.make_node("Mul", [f"{p}in", f"{p}c"], [f"{p}arg"]),
        helper.make_node("Tanh", [f"{p}arg"], [f"{p}th"]),
        _c(f"{p}one", 1.0),
        helper.make_node("Add", [f"{p}th", f"{p}one"], [f"{p}t"]),
        helper.make_node("Mul", [f"{p}h", f"{p}t"], [out]),
    ]
    return nodes


def _lifted(model):
    graph = Graph(model)
    run_passes(graph, PassContext(default_registry()), SIMPLIFY)
    counts = lift_patterns(graph)
    return counts, graph.model


def _script(result):
    return result.script_path.read_text()


@pytest.mark.parametrize(
    "opset,use_pow,reciprocal", [(13, True, False), (18, False, True), (17, True, True)]
)
def test_layer_norm_chain_becomes_nn_layernorm(tmp_path, opset, use_pow, reciprocal):
    gamma, beta = RNG.standard_normal(16).astype(F32), RNG.standard_normal(16).astype(F32)
    nodes = layer_norm_nodes(
        "x", "y", "ln", opset, use_pow=use_pow, reciprocal=reciprocal, eps=1e-6
    )
    model = make_model(
        nodes,
        [("x", F32, [2, 5, 16])],
        [("y", F32, None)],
        {"gamma": gamma, "beta": beta},
        opset=opset,
    )
    counts, simplified = _lifted(model)
    assert counts == {"LayerNorm": 1}
    assert [n.op_type for n in simplified.graph.node] == ["LayerNorm"]
    result = assert_matches(model, tmp_path, rtol=1e-4, atol=1e-5)
    script = _script(result)
    assert "nn.LayerNorm(" in script and "epsilon=1e-06" in script
    assert "ReduceMean" not in script and "ops.sqrt" not in script
    mapping = json.loads(result.weight_map_path.read_text())
    sources = {row["source_weight"]["name"] for rows in mapping.values() for row in rows}
    assert {"gamma", "beta"} <= sources


def test_layer_norm_without_affine_and_over_two_axes(tmp_path):
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[2, 3]),
        helper.make_node("Sub", ["x", "mean"], ["d"]),
        _c("two", 2.0),
        helper.make_node("Pow", ["d", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-2, -1]),
        _c("eps", 1e-5),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["std"]),
        helper.make_node("Div", ["d", "std"], ["y"]),
    ]
    model = make_model(nodes, [("x", F32, [2, 3, 4, 5])], [("y", F32, None)], opset=13)
    assert _lifted(model)[0] == {"LayerNorm": 1}
    result = assert_matches(model, tmp_path)
    assert "begin_norm_axis=2" in _script(result)


def test_near_miss_is_not_lifted(tmp_path):
    """Variance over other axes than the mean is no layer norm: left as the primitive ops."""
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1]),
        helper.make_node("Sub", ["x", "mean"], ["d"]),
        _c("two", 2.0),
        helper.make_node("Pow", ["d", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[1]),
        _c("eps", 1e-5),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["std"]),
        helper.make_node("Div", ["d", "std"], ["y"]),
    ]
    model = make_model(nodes, [("x", F32, [2, 3, 4])], [("y", F32, None)], opset=13)
    assert _lifted(model)[0] == {}
    result = assert_matches(model, tmp_path)
    assert "nn.LayerNorm" not in _script(result)


def _group_norm_model(
    scale_value: float = 1.0, groups: int = 2, static: bool = False, names=("weight", "bias")
):
    """nn.GroupNorm(groups, 8) as both PyTorch exporters spell it: a reshape to (N, G, -1), an
    InstanceNormalization with unit scale and zero bias, a reshape back by the input's shape,
    the per-channel weight and bias as (8, 1, 1) constants. Batch and size are dynamic, or
    with ``static`` fixed at (1, 8, 5, 5) and both reshapes' shapes constants."""
    back = (
        [_c("shape", [1, 8, 5, 5], np.int64)]
        if static
        else [helper.make_node("Shape", ["x"], ["shape"])]
    )
    nodes = [
        _c("groups", [1 if static else 0, groups, -1], np.int64),
        helper.make_node("Reshape", ["x", "groups"], ["grouped"], name="/norm/Reshape"),
        _c("ones", [scale_value] * groups),
        _c("zeros", [0.0] * groups),
        helper.make_node(
            "InstanceNormalization", ["grouped", "ones", "zeros"], ["n"], epsilon=1e-5
        ),
        *back,
        helper.make_node("Reshape", ["n", "shape"], ["back"]),
        helper.make_node("Mul", ["back", names[0]], ["scaled"]),
        helper.make_node("Add", ["scaled", names[1]], ["y"]),
    ]
    inits = {
        names[0]: RNG.standard_normal((8, 1, 1)).astype(F32),
        names[1]: RNG.standard_normal((8, 1, 1)).astype(F32),
    }
    x = [1, 8, 5, 5] if static else ["n", 8, "h", "w"]
    return make_model(nodes, [("x", F32, x)], [("y", F32, None)], inits)


@pytest.mark.parametrize("groups, static", [(8, False), (2, True), (8, True)])
def test_group_norm_of_a_group_per_channel_or_fixed_sizes_holds_its_weights(
    tmp_path, groups, static
):
    """Wav2Vec2's first conv layer: nn.GroupNorm(C, C), as exported (eval mode, the affine
    folded to (C, 1) constants the exporter renamed) or at fixed sizes (the reshapes read
    constant shapes): the weights are the layer's, trainable, not frozen constants."""
    model = _group_norm_model(groups=groups, static=static, names=("onnx::Mul_9", "onnx::Add_10"))
    x = RNG.standard_normal((1, 8, 5, 5)).astype(F32)
    result = assert_matches(model, tmp_path, {"x": x}, shape=["1,8,5,5"])
    script = _script(result)
    assert f"nn.GroupNorm(num_groups={groups}, num_channels=8, eps=1e-05)" in script
    assert "requires_grad=False" not in script
    assert "ms.Tensor([" not in script and "ms.Tensor(\n" not in script  # no literal weights


def test_group_norm_chain_becomes_nn_groupnorm_with_its_weights(tmp_path):
    """BiT and PoolFormer: the weight and bias were frozen constants beside a GroupNorm of the
    groups; now one nn.GroupNorm(2, 8) holds them, trainable, at two sizes."""
    model = _group_norm_model()
    for n, size in ((1, 4), (3, 6)):
        x = RNG.standard_normal((n, 8, size, size)).astype(F32)
        result = assert_matches(model, tmp_path / str(n), {"x": x}, shape=["1,8,4,4"])
    script = _script(result)
    assert "nn.GroupNorm(num_groups=2, num_channels=8, eps=1e-05)" in script
    assert "ops.reshape" not in script and "requires_grad=False" not in script
    mapping = json.loads(result.weight_map_path.read_text())
    sources = {row["source_weight"]["name"] for rows in mapping.values() for row in rows}
    assert {"weight", "bias"} <= sources


def test_a_group_norm_chain_whose_inner_scale_is_not_one_is_left_alone(tmp_path):
    model = _group_norm_model(scale_value=2.0)
    x = RNG.standard_normal((2, 8, 3, 3)).astype(F32)
    result = assert_matches(model, tmp_path, {"x": x}, shape=["2,8,3,3"])
    assert "nn.GroupNorm(num_groups=2, num_channels=8" not in _script(result)


def _unbound(dynamo: bool, read_elsewhere: bool = False):
    """``q, k, v = x.unbind(0)`` of x (3, n, 4): a Split into parts of one (TorchScript) or a
    Slice of each position (dynamo), each part squeezed, then q * k + v."""
    if dynamo:
        nodes = []
        for i, part in enumerate(("pq", "pk", "pv")):
            nodes += [
                _c(f"start{i}", [i], np.int64),
                _c(f"end{i}", [i + 1], np.int64),
                helper.make_node("Slice", ["x", f"start{i}", f"end{i}"], [part]),
            ]
    else:
        nodes = [helper.make_node("Split", ["x"], ["pq", "pk", "pv"], axis=0, num_outputs=3)]
    nodes.append(_c("zero", [0], np.int64))
    nodes += [
        helper.make_node("Squeeze", [p, "zero"], [n]) for p, n in zip(("pq", "pk", "pv"), "qkv")
    ]
    nodes += [
        helper.make_node("Mul", ["q", "k"], ["qk"]),
        helper.make_node("Add", ["qk", "v"], ["y"]),
    ]
    outputs = [("y", F32, None)] + ([("pq", F32, None)] if read_elsewhere else [])
    return make_model(nodes, [("x", F32, [3, "n", 4])], outputs, opset=18)


@pytest.mark.parametrize("dynamo", [False, True])
def test_an_unbind_is_one_call(tmp_path, dynamo):
    """Hiera's ``q, k, v = qkv.unbind(0)``: not a split (or three slices) and three squeezes."""
    model = _unbound(dynamo)
    result = convert_fully(model, tmp_path, shape=["3,2,4"])
    script = _script(result)
    assert "ops.unbind(x, dim=0)" in script and "squeeze" not in script, script
    for n in (2, 5):
        feeds = {"x": RNG.standard_normal((3, n, 4)).astype(F32)}
        assert_runs_like_onnxruntime(model, result, feeds)


def test_slices_of_some_positions_are_no_unbind(tmp_path):
    """Funnel squeezes x[0:1] and x[2:3] of an axis of three: no unbind (and no crash)."""
    nodes = [_c("zero", [0], np.int64)]
    for i in (0, 2):
        nodes += [
            _c(f"start{i}", [i], np.int64),
            _c(f"end{i}", [i + 1], np.int64),
            helper.make_node("Slice", ["x", f"start{i}", f"end{i}"], [f"p{i}"]),
            helper.make_node("Squeeze", [f"p{i}", "zero"], [f"s{i}"]),
        ]
    nodes.append(helper.make_node("Add", ["s0", "s2"], ["y"]))
    model = make_model(nodes, [("x", F32, [3, 2, 4])], [("y", F32, None)], opset=18)
    assert "Unbind" not in _lifted(model)[0]
    assert_matches(model, tmp_path)


def test_a_part_read_elsewhere_keeps_the_split():
    assert "Unbind" not in _lifted(_unbound(False, read_elsewhere=True))[0]


def test_t5_rms_norm_is_not_a_layer_norm(tmp_path):
    """T5's RMSNorm (no mean subtraction) is an RMSNorm, never a LayerNorm."""
    nodes = [
        _c("two", 2.0),
        helper.make_node("Pow", ["x", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
        _c("eps", 1e-6),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["std"]),
        helper.make_node("Reciprocal", ["std"], ["inv"]),
        helper.make_node("Mul", ["x", "inv"], ["n"]),
        helper.make_node("Mul", ["w", "n"], ["y"]),
    ]
    model = make_model(
        nodes,
        [("x", F32, [2, 3, 8])],
        [("y", F32, None)],
        {"w": RNG.random(8).astype(F32)},
        opset=13,
    )
    assert _lifted(model)[0] == {"RMSNorm": 1}
    assert_matches(model, tmp_path)


def rms_norm_nodes(spelling: str) -> list:
    """Llama's RMSNorm as the exporters spell it: ``x * (1 / sqrt(...))`` (TorchScript),
    ``x * reciprocal(sqrt(...))`` (dynamo) or ``x / sqrt(...)``; the weight multiplies last."""
    nodes = [
        _c("two", 2.0),
        helper.make_node("Pow", ["x", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
        _c("eps", 1e-6),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["std"]),
    ]
    if spelling == "divide":
        nodes.append(helper.make_node("Div", ["x", "std"], ["n"]))
    elif spelling == "one_over":
        nodes += [_c("one", 1.0), helper.make_node("Div", ["one", "std"], ["inv"])]
        nodes.append(helper.make_node("Mul", ["x", "inv"], ["n"]))
    else:
        nodes.append(helper.make_node("Reciprocal", ["std"], ["inv"]))
        nodes.append(helper.make_node("Mul", ["inv", "x"], ["n"]))
    return nodes + [helper.make_node("Mul", ["w", "n"], ["y"])]


@pytest.mark.parametrize("spelling", ["divide", "one_over", "reciprocal"])
def test_rms_norm_chain_becomes_one_rms_norm_cell(tmp_path, spelling):
    model = make_model(
        rms_norm_nodes(spelling),
        [("x", F32, ["batch", 3, 8])],
        [("y", F32, None)],
        {"w": RNG.random(8).astype(F32)},
    )
    feeds = {"x": RNG.standard_normal((2, 3, 8)).astype(F32)}
    result = assert_matches(model, tmp_path, feeds, shape=["2,3,8"])
    assert "RMSNorm(hidden_size=8, eps=1e-06)" in _script(result)
    assert "class RMSNorm(nn.Cell):" in _script(result)
    other = {"x": RNG.standard_normal((1, 3, 8)).astype(F32)}
    assert_matches(model, tmp_path / "other", other, shape=["1,3,8"])


def test_rms_norm_over_the_wrong_axis_is_not_lifted():
    nodes = rms_norm_nodes("divide")
    nodes[1] = helper.make_node("ReduceMean", ["sq"], ["var"], axes=[1])
    model = make_model(
        nodes, [("x", F32, [2, 3, 8])], [("y", F32, None)], {"w": RNG.random(8).astype(F32)}
    )
    assert "RMSNorm" not in _lifted(model)[0]
    assert _lifted(
        make_model(
            rms_norm_nodes("divide"),
            [("x", F32, [2, 3, 8])],
            [("y", F32, None)],
            {"w": RNG.random(8).astype(F32)},
        )
    )[0] == {"RMSNorm": 1}


def rotary_nodes(half: int, swap_order: bool = False) -> list:
    """``q * cos + rotate_half(q) * sin``, rotate_half spelled with two Slices, Neg, Concat."""
    nodes = [
        _c("zero", [0], np.int64),
        _c("mid", [half], np.int64),
        _c("end", [2**62], np.int64),
        _c("last", [-1], np.int64),
        helper.make_node("Slice", ["q", "zero", "mid", "last"], ["low"]),
        helper.make_node("Slice", ["q", "mid", "end", "last"], ["high"]),
        helper.make_node("Neg", ["high"], ["neg"]),
        helper.make_node("Concat", ["neg", "low"], ["turned"], axis=-1),
        helper.make_node("Mul", ["q", "cos"], ["plain"]),
        helper.make_node("Mul", ["turned", "sin"], ["rotated"]),
    ]
    add_inputs = ["rotated", "plain"] if swap_order else ["plain", "rotated"]
    return nodes + [helper.make_node("Add", add_inputs, ["y"])]


@pytest.mark.parametrize("swap_order", [False, True])
def test_rotary_embedding_is_one_line_with_rotate_half(tmp_path, swap_order):
    spec = ["batch", 2, "sequence", 8]
    model = make_model(
        rotary_nodes(4, swap_order),
        [("q", F32, spec), ("cos", F32, spec), ("sin", F32, spec)],
        [("y", F32, None)],
    )
    shapes = ["1,2,3,8", "1,2,3,8", "1,2,3,8"]
    feeds = {n: RNG.standard_normal((1, 2, 3, 8)).astype(F32) for n in ("q", "cos", "sin")}
    code = _script(assert_matches(model, tmp_path, feeds, shape=shapes))
    assert "y = q * cos + rotate_half(q) * sin" in code and "def rotate_half(x):" in code
    other = {n: RNG.standard_normal((2, 2, 5, 8)).astype(F32) for n in ("q", "cos", "sin")}
    assert_matches(model, tmp_path / "other", other, shape=["2,2,5,8"] * 3)


def test_a_concat_of_halves_in_the_wrong_order_is_not_rotate_half():
    nodes = rotary_nodes(4)
    nodes[7] = helper.make_node("Concat", ["low", "neg"], ["turned"], axis=-1)
    spec = [1, 2, 3, 8]
    model = make_model(
        nodes, [("q", F32, spec), ("cos", F32, spec), ("sin", F32, spec)], [("y", F32, None)]
    )
    assert "RotateHalf" not in _lifted(model)[0]
    nodes = rotary_nodes(4)
    model = make_model(
        nodes, [("q", F32, spec), ("cos", F32, spec), ("sin", F32, spec)], [("y", F32, None)]
    )
    assert _lifted(model)[0] == {"RotateHalf": 1, "ApplyRotary": 1}


@pytest.mark.parametrize("style", ["torch", "hf"])
def test_erf_gelu_becomes_nn_gelu(tmp_path, style):
    model = make_model(
        erf_gelu_nodes("x", "y", "g", style), [("x", F32, [2, 3, 8])], [("y", F32, None)], opset=13
    )
    counts, simplified = _lifted(model)
    assert counts == {"Gelu": 1}
    assert [(n.domain, n.op_type) for n in simplified.graph.node] == [(DOMAIN, "Gelu")]
    feeds = {"x": (RNG.standard_normal((2, 3, 8)) * 3).astype(F32)}
    result = assert_matches(model, tmp_path, feeds=feeds)
    assert "nn.GELU(approximate=False)" in _script(result)


@pytest.mark.parametrize("cube", ["pow", "mul"])
def test_tanh_gelu_becomes_approximate_gelu(tmp_path, cube):
    model = make_model(
        tanh_gelu_nodes("x", "y", "g", cube), [("x", F32, [2, 8])], [("y", F32, None)], opset=13
    )
    assert _lifted(model)[0] == {"Gelu": 1}
    feeds = {"x": (RNG.standard_normal((2, 8)) * 3).astype(F32)}
    result = assert_matches(model, tmp_path, feeds=feeds)
    assert "nn.GELU(approximate=True)" in _script(result)


def test_wrong_gelu_constant_is_not_lifted(tmp_path):
    nodes = erf_gelu_nodes("x", "y", "g", "torch")
    nodes[0] = _c("gs2", 1.3)  # not sqrt(2): some other function
    model = make_model(nodes, [("x", F32, [4])], [("y", F32, None)], opset=13)
    assert _lifted(model)[0] == {}
    assert "nn.GELU" not in _script(assert_matches(model, tmp_path))


def test_gelu_with_shared_intermediate_is_not_lifted():
    nodes = erf_gelu_nodes("x", "y", "g", "torch")
    nodes.append(helper.make_node("Neg", ["ge"], ["z"]))  # the Erf value is used elsewhere too
    model = make_model(nodes, [("x", F32, [4])], [("y", F32, None), ("z", F32, None)], opset=13)
    assert _lifted(model)[0] == {}


@pytest.mark.parametrize("sigmoid_first", [False, True])
def test_x_times_its_sigmoid_becomes_silu(tmp_path, sigmoid_first):
    """Llama's MLP activation as both exporters write it: ``x * sigmoid(x)``."""
    operands = ["s", "x"] if sigmoid_first else ["x", "s"]
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", operands, ["y"])]
    model = make_model(nodes, [("x", F32, ["b", 8])], [("y", F32, None)])
    counts, simplified = _lifted(model)
    assert counts == {"Silu": 1}
    assert [(n.domain, n.op_type) for n in simplified.graph.node] == [(DOMAIN, "Silu")]
    feeds = {"x": (RNG.standard_normal((2, 8)) * 4).astype(F32)}
    result = assert_matches(model, tmp_path, feeds=feeds, shape=["2,8"])
    assert "ops.silu(x)" in _script(result) and "sigmoid" not in _script(result)
    other = {"x": (RNG.standard_normal((3, 8)) * 4).astype(F32)}
    assert_matches(model, tmp_path / "other", feeds=other, shape=["3,8"])


def test_a_sigmoid_read_elsewhere_or_of_another_value_is_no_silu():
    shared = [
        helper.make_node("Sigmoid", ["x"], ["s"]),
        helper.make_node("Mul", ["x", "s"], ["y"]),
        helper.make_node("Neg", ["s"], ["z"]),
    ]
    model = make_model(shared, [("x", F32, [2, 8])], [("y", F32, None), ("z", F32, None)])
    assert _lifted(model)[0] == {}
    gated = [helper.make_node("Sigmoid", ["g"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    model = make_model(gated, [("x", F32, [2, 8]), ("g", F32, [2, 8])], [("y", F32, None)])
    assert _lifted(model)[0] == {}


@pytest.mark.parametrize("bias_first", [False, True])
def test_matmul_add_becomes_dense_with_bias(tmp_path, bias_first):
    w, b = RNG.standard_normal((8, 6)).astype(F32), RNG.standard_normal(6).astype(F32)
    add_inputs = ["b", "mm"] if bias_first else ["mm", "b"]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="/encoder/fc/MatMul"),
        helper.make_node("Add", add_inputs, ["y"], name="/encoder/fc/Add"),
    ]
    model = make_model(
        nodes, [("x", F32, [2, 3, 8])], [("y", F32, None)], {"w": w, "b": b}, opset=13
    )
    assert _lifted(model)[0] == {"Linear": 1}
    result = assert_matches(model, tmp_path)
    script = _script(result)
    assert "nn.Dense(in_channels=8, out_channels=6)" in script and "has_bias=False" not in script
    mapping = json.loads(result.weight_map_path.read_text())
    rows = {row["source_weight"]["name"]: row for rows in mapping.values() for row in rows}
    assert rows["w"]["converted_weight"]["shape"] == [6, 8]
    assert "transpose(1, 0)" in json.dumps(rows["w"])


def test_matmul_with_shared_output_keeps_its_add(tmp_path):
    w, b = RNG.standard_normal((4, 4)).astype(F32), RNG.standard_normal(4).astype(F32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["y"]),
        helper.make_node("Relu", ["mm"], ["z"]),
    ]
    model = make_model(
        nodes,
        [("x", F32, [3, 4])],
        [("y", F32, None), ("z", F32, None)],
        {"w": w, "b": b},
        opset=13,
    )
    assert _lifted(model)[0] == {}
    assert_matches(model, tmp_path)


def test_transformer_block_lifts_every_layer(tmp_path):
    """Dense -> GELU -> Dense -> residual -> LayerNorm, as BERT's feed-forward block exports."""
    hidden, inner = 8, 16
    inits = {
        "w1": RNG.standard_normal((hidden, inner)).astype(F32) * 0.3,
        "b1": RNG.standard_normal(inner).astype(F32),
        "w2": RNG.standard_normal((inner, hidden)).astype(F32) * 0.3,
        "b2": RNG.standard_normal(hidden).astype(F32),
        "gamma": RNG.standard_normal(hidden).astype(F32),
        "beta": RNG.standard_normal(hidden).astype(F32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="/layer/intermediate/dense/MatMul"),
        helper.make_node("Add", ["b1", "h0"], ["h1"], name="/layer/intermediate/dense/Add"),
    ]
    nodes += erf_gelu_nodes("h1", "h2", "gelu", "torch")
    nodes += [
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="/layer/output/dense/MatMul"),
        helper.make_node("Add", ["b2", "h3"], ["h4"], name="/layer/output/dense/Add"),
        helper.make_node("Add", ["h4", "x"], ["h5"], name="/layer/output/Add"),
    ]
    nodes += layer_norm_nodes("h5", "y", "/layer/output/LayerNorm", 13, eps=1e-12)
    model = make_model(nodes, [("x", F32, [1, 4, hidden])], [("y", F32, None)], inits, opset=13)
    assert _lifted(model)[0] == {"Gelu": 1, "LayerNorm": 1, "Linear": 2}
    result = assert_matches(model, tmp_path, rtol=1e-4, atol=1e-4)
    script = _script(result)
    assert script.count("nn.Dense(") == 2 and "nn.GELU(" in script and "nn.LayerNorm(" in script
    assert "epsilon=1e-12" in script


def _conv1d_model(trans_b: int = 0):
    """GPT-2's Conv1D as TorchScript exports it: addmm on a flattened input, unflattened back."""
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((4, 6) if not trans_b else (6, 4)).astype(F32)
    nodes = [
        helper.make_node("Reshape", ["x", "flat"], ["rows"]),
        helper.make_node("Gemm", ["rows", "w", "b"], ["out"], transB=trans_b),
        helper.make_node("Shape", ["x"], ["size"]),
        helper.make_node("Gather", ["size", "lead"], ["leading"], axis=0),
        helper.make_node("Concat", ["leading", "features"], ["target"], axis=0),
        helper.make_node("Reshape", ["out", "target"], ["y"]),
    ]
    constants = {
        "flat": np.array([-1, 4], np.int64),
        "w": weight,
        "b": rng.standard_normal(6).astype(F32),
        "lead": np.array([0, 1], np.int64),
        "features": np.array([6], np.int64),
    }
    return make_model(
        nodes, [("x", F32, ["batch", "seq", 4])], [("y", F32, ["batch", "seq", 6])], constants
    )


def test_linear_on_a_flattened_input_is_one_dense_on_the_input(tmp_path):
    model = _conv1d_model()
    feeds = {"x": np.random.default_rng(1).standard_normal((2, 3, 4)).astype(F32)}
    result = assert_matches(model, tmp_path, feeds, shape=["2,3,4"])
    body = _script(result)
    body = body[body.index("def construct") :]
    assert "reshape" not in body and "self.fc(x)" in body.replace(" ", ""), body
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 5, 4)).astype(F32)}
    assert_matches(model, tmp_path / "second", feeds, shape=["1,5,4"])


def test_flattened_linear_with_transposed_weight_is_left_alone(tmp_path):
    feeds = {"x": np.random.default_rng(1).standard_normal((2, 3, 4)).astype(F32)}
    assert_matches(_conv1d_model(trans_b=1), tmp_path, feeds, shape=["2,3,4"])


def _renamed(nodes: list, suffix: str, keep: tuple) -> list:
    """Copies of ``nodes`` whose values (except ``keep``) end in ``suffix``."""
    copies = []
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.input[:] = [n if n in keep else n + suffix for n in node.input]
        copy.output[:] = [n + suffix for n in node.output]
        copies.append(copy)
    return copies


def test_query_and_key_turned_by_the_same_tables_are_one_call(tmp_path):
    """mindnlp's ``q, k = apply_rotary_pos_emb(q, k, cos, sin)`` for the two rotations that
    share their tables; onnxruntime's numbers at two shapes."""
    nodes = _renamed(rotary_nodes(4), "_q", ("cos", "sin")) + _renamed(
        rotary_nodes(4), "_k", ("cos", "sin")
    )
    nodes += [helper.make_node("Sub", ["y_q", "y_k"], ["y"])]
    names = ("q_q", "q_k", "cos", "sin")
    static = make_model(nodes, [(n, F32, [1, 2, 3, 8]) for n in names], [("y", F32, None)])
    assert _lifted(static)[0] == {"RotateHalf": 2, "ApplyRotary": 2, "ApplyRotaryPair": 1}
    spec = ["batch", 2, "sequence", 8]
    model = make_model(nodes, [(n, F32, spec) for n in names], [("y", F32, None)])
    feeds = {n: RNG.standard_normal((1, 2, 3, 8)).astype(F32) for n in names}
    code = _script(assert_matches(model, tmp_path, feeds, shape=["1,2,3,8"] * 4))
    assert "x, out = apply_rotary_pos_emb(q_q, q_k, cos, sin)" in code  # inputs stay as given
    assert "def apply_rotary_pos_emb(q, k, cos, sin):" in code
    other = {n: RNG.standard_normal((2, 2, 5, 8)).astype(F32) for n in names}
    assert_matches(model, tmp_path / "other", other, shape=["2,2,5,8"] * 4)


def test_tables_unsqueezed_only_for_the_pair_are_unsqueezed_inside_the_call(tmp_path):
    """Gemma-3's attention unsqueezes its layer's tables for the heads itself:
    ``q, k = apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)``, no unsqueeze lines."""
    nodes = [
        helper.make_node("Unsqueeze", ["cos_table", "one"], ["cos"]),
        helper.make_node("Unsqueeze", ["sin_table", "one"], ["sin"]),
    ]
    nodes += _renamed(rotary_nodes(4), "_q", ("cos", "sin"))
    nodes += _renamed(rotary_nodes(4), "_k", ("cos", "sin"))
    nodes += [helper.make_node("Sub", ["y_q", "y_k"], ["y"])]
    heads, tables = ["batch", 2, "sequence", 8], ["batch", "sequence", 8]
    inputs = [("q_q", F32, heads), ("q_k", F32, heads)]
    inputs += [("cos_table", F32, tables), ("sin_table", F32, tables)]
    model = make_model(nodes, inputs, [("y", F32, None)], {"one": np.array([1], np.int64)})
    for batch, seq in ((1, 3), (2, 5)):
        feeds = {n: RNG.standard_normal((batch, 2, seq, 8)).astype(F32) for n in ("q_q", "q_k")}
        feeds |= {
            n: RNG.standard_normal((batch, seq, 8)).astype(F32) for n in ("cos_table", "sin_table")
        }
        shapes = [f"{batch},2,{seq},8"] * 2 + [f"{batch},{seq},8"] * 2
        code = _script(assert_matches(model, tmp_path / str(seq), feeds, shape=shapes))
    assert "apply_rotary_pos_emb(q_q, q_k, cos_table, sin_table, unsqueeze_dim=1)" in code, code
    assert (
        "ops.unsqueeze" not in code
        and "def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=None):" in code
    )


def test_tables_other_pairs_share_stay_unsqueezed_outside_every_call(tmp_path):
    """Gemma-3 with five sliding layers and one global: the sliding layers share unsqueezed
    tables, the global layer unsqueezes its own. Its call absorbs no unsqueeze then, so it
    reads its tables as the others do (the layers stay one class)."""

    def pair(suffix: str) -> list:
        both = _renamed(rotary_nodes(4), "_q", ("cos", "sin"))
        both += _renamed(rotary_nodes(4), "_k", ("cos", "sin"))
        return _renamed(both, suffix, ())

    nodes = []
    for table in ("a", "b"):
        nodes += [
            helper.make_node("Unsqueeze", [f"cos_table_{table}", "one"], [f"cos{table}"]),
            helper.make_node("Unsqueeze", [f"sin_table_{table}", "one"], [f"sin{table}"]),
        ]
    for index, table in enumerate("aab"):
        for number, node in enumerate(pair(str(index))):  # each pair in its layer's scope
            node.name = f"/layers.{index}/attn/{node.op_type}_{number}"
            node.input[:] = [
                f"{n[:3]}{table}" if n in (f"cos{index}", f"sin{index}") else n for n in node.input
            ]
            nodes.append(node)
    nodes += [
        helper.make_node("Sum", [f"y_{side}{index}" for side in "qk" for index in range(3)], ["y"])
    ]
    heads, tables = [1, 2, 3, 8], [1, 3, 8]
    inputs = [(f"q_{side}{index}", F32, heads) for index in range(3) for side in "qk"]
    inputs += [(f"{t}_table_{x}", F32, tables) for x in "ab" for t in ("cos", "sin")]
    model = make_model(nodes, inputs, [("y", F32, None)], {"one": np.array([1], np.int64)})
    assert _lifted(model)[0]["ApplyRotaryPair"] == 3
    feeds = {name: RNG.standard_normal(shape).astype(F32) for name, _, shape in inputs}
    code = _script(assert_matches(model, tmp_path, feeds))
    assert "unsqueeze_dim" not in code and "ops.unsqueeze(cos_table_b, dim=1)" in code, code


def test_rotations_by_different_tables_stay_apart():
    nodes = _renamed(rotary_nodes(4), "_q", ("cos", "sin")) + _renamed(
        rotary_nodes(4), "_k", ("cos",)
    )
    nodes += [helper.make_node("Sub", ["y_q", "y_k"], ["y"])]
    names = ("q_q", "q_k", "cos", "sin", "sin_k")
    model = make_model(nodes, [(n, F32, [1, 2, 3, 8]) for n in names], [("y", F32, None)])
    assert "ApplyRotaryPair" not in _lifted(model)[0]


def _partial_rotary_nodes(rest_first: bool = False) -> list:
    """GPT-NeoX's partial rotary on (b, h, s, 8): the first 4 features of q and k turned by the
    same tables, each concatenated back with its untouched rest."""
    nodes = [
        _c("zero_p", [0], np.int64),
        _c("four", [4], np.int64),
        _c("big", [2**62], np.int64),
        _c("axis", [3], np.int64),
    ]
    for name in ("q", "k"):
        nodes += [
            helper.make_node("Slice", [name, "zero_p", "four", "axis"], [f"{name}_rot"]),
            helper.make_node("Slice", [name, "four", "big", "axis"], [f"{name}_pass"]),
        ]
        turned = _renamed(rotary_nodes(2), f"_{name}", ("cos", "sin"))
        for node in turned:  # rotary_nodes turns "q": here it turns this head's first half
            node.input[:] = [f"{name}_rot" if n == f"q_{name}" else n for n in node.input]
        nodes += turned
    for name in ("q", "k"):  # both turned first, then put back together (as NeoX runs it)
        parts = [f"{name}_pass", f"y_{name}"] if rest_first else [f"y_{name}", f"{name}_pass"]
        nodes.append(helper.make_node("Concat", parts, [f"{name}_out"], axis=-1))
    nodes.append(helper.make_node("Sub", ["q_out", "k_out"], ["y"]))
    return nodes


def test_a_partial_rotary_is_one_call_on_the_whole_heads(tmp_path):
    spec = ["batch", 2, "sequence", 8]
    table = ["batch", 2, "sequence", 4]
    inputs = [("q", F32, spec), ("k", F32, spec), ("cos", F32, table), ("sin", F32, table)]
    static = make_model(
        _partial_rotary_nodes(),
        [(n, F32, [1, 2, 3, d]) for n, d in (("q", 8), ("k", 8), ("cos", 4), ("sin", 4))],
        [("y", F32, None)],
    )
    assert _lifted(static)[0]["PartialRotary"] == 1
    model = make_model(_partial_rotary_nodes(), inputs, [("y", F32, None)])

    def feeds(b, s):
        sizes = {"q": 8, "k": 8, "cos": 4, "sin": 4}
        return {n: RNG.standard_normal((b, 2, s, d)).astype(F32) for n, d in sizes.items()}

    shapes = ["1,2,3,8", "1,2,3,8", "1,2,3,4", "1,2,3,4"]
    code = _script(assert_matches(model, tmp_path, feeds(1, 3), shape=shapes))
    assert "= apply_partial_rotary_pos_emb(q, k, cos, sin, 4)" in code
    assert "def apply_partial_rotary_pos_emb(q, k, cos, sin, rotary_dim):" in code
    assert_matches(model, tmp_path / "other", feeds(2, 5), shape=shapes)


def test_a_rest_put_first_is_no_partial_rotary():
    static = make_model(
        _partial_rotary_nodes(rest_first=True),
        [(n, F32, [1, 2, 3, d]) for n, d in (("q", 8), ("k", 8), ("cos", 4), ("sin", 4))],
        [("y", F32, None)],
    )
    assert "PartialRotary" not in _lifted(static)[0]


def interleaved_rotary_nodes(name: str = "q", sized_by_shape: bool = False) -> list:
    """GPT-J's ``x * cos + rotate_every_two(x) * sin`` on (b, s, h, 8): step-2 slices, Neg, two
    Unsqueezes, a Concat and a Reshape merging the pairs back (its target read from the
    concat's Shape when ``sized_by_shape``, as TorchScript exports ``flatten(-2)``)."""
    p = f"{name}_"
    nodes = [
        _c(p + "zero", [0], np.int64),
        _c(p + "one", [1], np.int64),
        _c(p + "end", [2**62], np.int64),
        _c(p + "last", [-1], np.int64),
        _c(p + "two", [2], np.int64),
        helper.make_node(
            "Slice", [name, p + "zero", p + "end", p + "last", p + "two"], [p + "even"]
        ),
        helper.make_node("Slice", [name, p + "one", p + "end", p + "last", p + "two"], [p + "odd"]),
        helper.make_node("Neg", [p + "odd"], [p + "neg"]),
        helper.make_node("Unsqueeze", [p + "neg", p + "last"], [p + "neg_u"]),
        helper.make_node("Unsqueeze", [p + "even", p + "last"], [p + "even_u"]),
        helper.make_node("Concat", [p + "neg_u", p + "even_u"], [p + "pairs"], axis=-1),
    ]
    if sized_by_shape:
        nodes += [
            helper.make_node("Shape", [p + "pairs"], [p + "sizes"], end=3),
            _c(p + "minus_one", [-1], np.int64),
            helper.make_node("Concat", [p + "sizes", p + "minus_one"], [p + "target"], axis=0),
        ]
    else:
        nodes.append(_c(p + "target", [0, 0, 0, -1], np.int64))
    nodes += [
        helper.make_node("Reshape", [p + "pairs", p + "target"], [p + "turned"]),
        helper.make_node("Mul", [name, "cos"], [p + "plain"]),
        helper.make_node("Mul", [p + "turned", "sin"], [p + "rotated"]),
        helper.make_node("Add", [p + "plain", p + "rotated"], [f"y_{name}"]),
    ]
    return nodes


@pytest.mark.parametrize("sized_by_shape", [False, True])
def test_an_interleaved_rotary_pair_is_one_line_with_rotate_every_two(tmp_path, sized_by_shape):
    spec = ["batch", "sequence", 2, 8]
    nodes = interleaved_rotary_nodes("q", sized_by_shape) + interleaved_rotary_nodes(
        "k", sized_by_shape
    )
    nodes.append(helper.make_node("Sub", ["y_q", "y_k"], ["y"]))
    model = make_model(
        nodes,
        [("q", F32, spec), ("k", F32, spec), ("cos", F32, spec), ("sin", F32, spec)],
        [("y", F32, None)],
    )

    def feeds(b, s):
        return {n: RNG.standard_normal((b, s, 2, 8)).astype(F32) for n in ("q", "k", "cos", "sin")}

    shapes = ["1,3,2,8"] * 4
    code = _script(assert_matches(model, tmp_path, feeds(1, 3), shape=shapes))
    assert "= apply_interleaved_rotary_pos_emb(q, k, cos, sin)" in code, code
    assert "def rotate_every_two(x):" in code and "ops.unsqueeze" not in code
    assert_matches(model, tmp_path / "other", feeds(2, 5), shape=["2,5,2,8"] * 4)


def test_pairs_put_back_in_the_wrong_order_are_no_rotate_every_two():
    nodes = interleaved_rotary_nodes("q")
    concat = next(n for n in nodes if n.op_type == "Concat")
    concat.input[:] = ["q_even_u", "q_neg_u"]
    spec = [1, 3, 2, 8]
    model = make_model(
        nodes, [("q", F32, spec), ("cos", F32, spec), ("sin", F32, spec)], [("y_q", F32, None)]
    )
    assert "RotateEveryTwo" not in _lifted(model)[0]


@pytest.mark.slow
def test_rotaries_an_empty_concatenation_keeps_apart_are_one_call(tmp_path):
    """Phi-3 through TorchScript: the query's rotary ends in a concatenation with an empty
    pass-through part before the key's runs. The no-op goes before the lifts: the pair is one
    ``apply_rotary_pos_emb`` call on tables named ``cos`` and ``sin`` (unsqueezed to the head
    axis in the call, as transformers writes it), and the numbers stay onnxruntime's at two
    shapes."""
    from pathlib import Path

    from tests.helpers import assert_runs_like_onnxruntime, convert_fully

    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "tiny_phi3_torchscript.onnx"
    model = onnx.load(fixture)
    result = convert_fully(model, tmp_path, shape=["input_ids=2,5", "attention_mask=2,5"])
    code = result.script_path.read_text()
    assert "q, k = apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)" in code, code
    assert "def construct(self, hidden_states, cos, sin, attention_mask):" in code
    rng = np.random.default_rng(8)
    for batch, seq in (2, 5), (3, 7):
        mask = np.ones((batch, seq), np.int64)
        mask[0, -2:] = 0
        feeds = {"input_ids": rng.integers(0, 40, (batch, seq)), "attention_mask": mask}
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_projections_with_parts_of_a_packed_weight_are_dense_calls_of_a_block(tmp_path, exporter):
    """SigLIP's pooling head: nn.MultiheadAttention projects a probe with rows :16 of its
    packed in_proj_weight and the tokens with rows 16:. Both are ``ops.dense`` calls on the
    whole Parameter (the checkpoint keeps in_proj_weight as PyTorch has it), the module is a
    class of its own, written batch-first, and the probe the dynamo exporter renamed
    (``val_4``) is a trainable Parameter under its own name."""
    fixture = FIXTURES / f"tiny_pooling_head_{exporter}.onnx"
    result = convert(fixture, shape=["2,5,16"], output=tmp_path, verify=True)
    # the TorchScript export runs at its traced token count only (its key length is baked in)
    shapes = 2 if exporter == "dynamo" else 1
    assert result.verification["ok"] and len(result.verification["shapes"]) == shapes
    code = result.script_path.read_text()
    assert "self.in_proj_weight[:16], self.in_proj_bias[:16]" in code
    assert "ops.dense(x, self.in_proj_weight[16:], self.in_proj_bias[16:])" in code
    assert "self.attention = " in code and "swapaxes(0, 1)" not in code
    assert "self.probe = Parameter(ops.zeros((1, 1, 16), ms.float32))\n" in code
    rows = next(iter(json.loads(result.weight_map_path.read_text()).values()))
    sources = {row["source_weight"]["name"] for row in rows}
    assert sources == {
        "probe",
        "attention.in_proj_weight",
        "attention.in_proj_bias",
        "attention.out_proj.weight",
        "attention.out_proj.bias",
    }


def _sliced_projection(x_shape):
    """``x @ w[2:6].T + b[2:6]``: a projection with rows of packed parameters."""
    nodes = [
        _c("starts", [2], np.int64),
        _c("ends", [6], np.int64),
        helper.make_node("Slice", ["w", "starts", "ends"], ["rows"]),
        helper.make_node("Transpose", ["rows"], ["rows_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["x", "rows_t"], ["p"]),
        helper.make_node("Slice", ["b", "starts", "ends"], ["b_rows"]),
        helper.make_node("Add", ["b_rows", "p"], ["y"]),
    ]
    inits = {
        "w": RNG.standard_normal((8, 3)).astype(F32),
        "b": RNG.standard_normal(8).astype(F32),
    }
    return make_model(nodes, [("x", F32, x_shape)], [("y", F32, None)], inits)


@pytest.mark.parametrize("x_shape, lifted", [([2, 5, 3], True), ([3], False)])
def test_rows_of_a_packed_weight_project_a_batch_of_rows(tmp_path, x_shape, lifted):
    result = assert_matches(_sliced_projection(x_shape), tmp_path)
    script = _script(result)
    assert ("ops.dense(x, self.w[2:6], self.b[2:6])" in script) is lifted, script


def _rolled(first: int, second: int, dims: list, end: int = 2**62) -> list:
    """``torch.roll`` of axes 1 and 2 as exporters write it: ``concat((x[s:], x[:s]))`` per
    axis (``s`` negative in a dynamic export, the turn back written as ``x[14:]`` in a static
    one)."""
    nodes, value = [], "x"
    for axis, cut in ((1, first), (2, second)):
        names = [f"{part}{axis}" for part in ("cut", "end", "zero", "axis")]
        nodes += [
            _c(names[0], [cut], np.int64),
            _c(names[1], [end], np.int64),
            _c(names[2], [0], np.int64),
            _c(names[3], [axis], np.int64),
            helper.make_node("Slice", [value, names[0], names[1], names[3]], [f"head{axis}"]),
            helper.make_node("Slice", [value, names[2], names[0], names[3]], [f"tail{axis}"]),
            helper.make_node("Concat", [f"head{axis}", f"tail{axis}"], [f"r{axis}"], axis=axis),
        ]
        value = f"r{axis}"
    return nodes + [helper.make_node("Relu", [value], ["y"])]


@pytest.mark.parametrize(
    ("first", "second", "dims", "written"),
    [
        (2, 2, [1, 6, 6, 3], "roll(x, (-2, -2), (1, 2))"),  # Swin's shift
        (2, 1, [1, 6, 6, 3], "roll(x, (-2, -1), (1, 2))"),
        (-2, -2, ["batch", "height", "width", 3], "roll(x, (2, 2), (1, 2))"),  # dynamic
        (14, 14, [1, 16, 16, 3], "roll(x, (2, 2), (1, 2))"),  # the turn back of 14 is 2
    ],
)
def test_slices_joined_in_turn_are_one_roll(tmp_path, first, second, dims, written):
    """Swin's shifted windows: ``torch.roll`` over two axes reads as one ``roll`` call, the
    numbers onnxruntime's."""
    model = make_model(_rolled(first, second, dims), [("x", F32, dims)], [("y", F32, None)])
    shape = [6 if isinstance(d, str) else d for d in dims]
    feeds = {"x": RNG.standard_normal(shape).astype(F32)}
    code = _script(assert_matches(model, tmp_path, feeds, shape=[",".join(map(str, shape))]))
    assert written in code and "ops.concat" not in code[code.index("class MindSporeModel") :]
    if "batch" in dims:  # another size, the same script
        feeds = {"x": RNG.standard_normal((2, 8, 5, 3)).astype(F32)}
        assert_matches(model, tmp_path / "other", feeds, shape=["2,8,5,3"])


def test_slices_that_do_not_meet_are_no_roll():
    """``concat((x[2:], x[:1]))`` drops a row: no turn."""
    nodes = _rolled(2, 2, [1, 6, 6, 3])
    nodes[5] = helper.make_node("Slice", ["x", "zero1", "one", "axis1"], ["tail1"])
    model = make_model(
        nodes,
        [("x", F32, [1, 6, 6, 3])],
        [("y", F32, None)],
        {"one": np.array([1], np.int64)},
    )
    assert _lifted(model)[0] == {"Roll": 1}  # the second axis alone


def test_swin_rolls_its_shifted_windows_in_one_call_each_way(tmp_path):
    """Hugging Face's Swin block with shifted windows rolls its tokens before the attention
    and back after it: one ``roll`` each way, numbers onnxruntime's at two batch sizes."""
    from tests.helpers import assert_runs_like_onnxruntime, convert_fully

    model = onnx.load(FIXTURES / "tiny_swin_shifted_torchscript.onnx")
    result = convert_fully(model, tmp_path, shape=["pixel_values=1,3,16,16"])
    code = _script(result)
    assert "roll(x, (-2, -2), (1, 2))" in code and ", (2, 2), (1, 2))" in code, code
    for batch in (1, 2):
        x = RNG.standard_normal((batch, 3, 16, 16)).astype(F32)
        assert_runs_like_onnxruntime(model, result, {"pixel_values": x})
