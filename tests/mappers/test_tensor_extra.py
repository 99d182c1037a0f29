"""Numeric tests of indexing and extra tensor operators against onnxruntime (run-time inputs)."""

import numpy as np
import pytest
from onnx import helper, numpy_helper

from tests.helpers import assert_matches, make_model, single_op_model

rng = np.random.default_rng(7)
F = np.float32
I64 = np.int64


def x(*shape):
    return rng.standard_normal(shape).astype(F)


def model_of(op, inputs, outputs, inits=None, opset=17, **attrs):
    node = helper.make_node(
        op,
        [name for name, _, _ in inputs] + list(inits or {}),
        [name for name, _, _ in outputs],
        **attrs,
    )
    return make_model([node], inputs, outputs, inits, opset=opset)


# --- Gather family -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "axis, idx",
    [
        (0, np.array([2, -1, 0], I64)),
        (1, np.array([[0, -2], [3, 1]], I64)),
        (-1, np.array(-3, I64)),
        (2, np.array(1, I64)),
    ],
)
def test_gather_runtime_indices(tmp_path, axis, idx):
    model = model_of(
        "Gather", [("x", F, (3, 4, 5)), ("i", I64, idx.shape)], [("y", F, None)], axis=axis
    )
    assert_matches(model, tmp_path, feeds={"x": x(3, 4, 5), "i": idx})


def test_gather_embedding_table(tmp_path):
    """A weight table gathered by run-time ids (an embedding), int32 ids."""
    node = helper.make_node("Gather", ["table", "ids"], ["y"])
    model = make_model([node], [("ids", np.int32, (2, 3))], [("y", F, None)], {"table": x(6, 4)})
    assert_matches(model, tmp_path, feeds={"ids": np.array([[0, 5, -1], [2, 2, 3]], np.int32)})


def test_gather_constant_negative_indices(tmp_path):
    model = model_of(
        "Gather", [("x", F, (4, 3))], [("y", F, None)], {"i": np.array([-1, 0], I64)}, axis=0
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(tmp_path, axis):
    idx = rng.integers(-3, 3, (3, 3)).astype(I64)
    model = model_of(
        "GatherElements", [("x", F, (3, 3)), ("i", I64, (3, 3))], [("y", F, None)], axis=axis
    )
    assert_matches(model, tmp_path, feeds={"x": x(3, 3), "i": idx})


@pytest.mark.parametrize(
    "batch_dims, data_shape, idx",
    [
        (0, (2, 3, 4), np.array([[0, 1], [1, -1]], I64)),
        (0, (2, 3), np.array([[[1], [0]]], I64)),
        (1, (2, 3, 4), np.array([[1], [2]], I64)),
        (1, (2, 3, 4), np.array([[[0, 1], [2, 3]], [[1, 0], [0, 2]]], I64)),
        (2, (2, 3, 4), np.array([[[1], [2], [3]], [[0], [0], [-1]]], I64)),
    ],
)
def test_gather_nd(tmp_path, batch_dims, data_shape, idx):
    model = model_of(
        "GatherND",
        [("x", F, data_shape), ("i", I64, idx.shape)],
        [("y", F, None)],
        batch_dims=batch_dims,
    )
    assert_matches(model, tmp_path, feeds={"x": x(*data_shape), "i": idx})


# --- Scatter family ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reduction, axis", [("none", 0), ("none", 1), ("add", 1), ("mul", 0), ("max", 1), ("min", -1)]
)
def test_scatter_elements(tmp_path, reduction, axis):
    opset = 16 if reduction in ("none", "add", "mul") else 18
    attrs = {"axis": axis} if reduction == "none" else {"axis": axis, "reduction": reduction}
    idx = (
        np.array([[1, 0, 2], [0, -1, 1]], I64)
        if reduction != "none"
        else np.array([[1, 0, 2], [0, 2, -2]], I64)
    )
    if reduction == "none" and axis == 0:
        idx = np.array([[1, 0, 2], [2, 1, 0]], I64)
    model = model_of(
        "ScatterElements",
        [("x", F, (3, 3)), ("i", I64, (2, 3)), ("u", F, (2, 3))],
        [("y", F, None)],
        opset=opset,
        **attrs,
    )
    assert_matches(model, tmp_path, feeds={"x": x(3, 3), "i": idx, "u": x(2, 3)})


def test_scatter_opset9(tmp_path):
    model = model_of(
        "Scatter",
        [("x", F, (3, 3)), ("i", I64, (1, 3)), ("u", F, (1, 3))],
        [("y", F, None)],
        opset=9,
        axis=0,
    )
    assert_matches(
        model, tmp_path, feeds={"x": x(3, 3), "i": np.array([[2, 0, 1]], I64), "u": x(1, 3)}
    )


@pytest.mark.parametrize(
    "reduction, idx, upd_shape",
    [
        ("none", np.array([[0], [2]], I64), (2, 4)),
        ("none", np.array([[0, 1], [2, -1]], I64), (2,)),
        ("add", np.array([[1], [1]], I64), (2, 4)),
        ("mul", np.array([[0, 0], [0, 0]], I64), (2,)),
        ("max", np.array([[1, 2], [1, 2]], I64), (2,)),
        ("min", np.array([[2], [2]], I64), (2, 4)),
    ],
)
def test_scatter_nd(tmp_path, reduction, idx, upd_shape):
    attrs = {} if reduction == "none" else {"reduction": reduction}
    model = model_of(
        "ScatterND",
        [("x", F, (3, 4)), ("i", I64, idx.shape), ("u", F, upd_shape)],
        [("y", F, None)],
        opset=18,
        **attrs,
    )
    assert_matches(model, tmp_path, feeds={"x": x(3, 4), "i": idx, "u": x(*upd_shape)})


# --- TopK, NonZero, Compress, Unique -----------------------------------------------------------


@pytest.mark.parametrize(
    "opset, attrs",
    [
        (9, {"k": 2}),
        (11, {"axis": 0}),
        (11, {"largest": 0}),
        (11, {"axis": 1, "largest": 0}),
    ],
)
def test_topk(tmp_path, opset, attrs):
    inits = {} if opset < 10 else {"k": np.array([2], I64)}
    model = model_of(
        "TopK", [("x", F, (3, 4))], [("v", F, None), ("i", I64, None)], inits, opset=opset, **attrs
    )
    assert_matches(model, tmp_path)


def test_topk_indices_only(tmp_path):
    node = helper.make_node("TopK", ["x", "k"], ["unused_values", "i"], axis=1)
    model = make_model(
        [node], [("x", F, (2, 5))], [("i", I64, None)], {"k": np.array([3], I64)}, opset=13
    )
    assert_matches(model, tmp_path)


def test_nonzero(tmp_path):
    model = model_of("NonZero", [("x", F, (3, 4))], [("y", I64, None)], opset=13)
    data = np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 5, 6]], F)
    assert_matches(model, tmp_path, feeds={"x": data})


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_runtime_condition(tmp_path, axis):
    attrs = {} if axis is None else {"axis": axis}
    model = model_of(
        "Compress", [("x", F, (3, 4)), ("c", np.bool_, (3,))], [("y", F, None)], opset=11, **attrs
    )
    assert_matches(model, tmp_path, feeds={"x": x(3, 4), "c": np.array([True, False, True])})


def test_compress_constant_condition(tmp_path):
    model = model_of(
        "Compress",
        [("x", F, (3, 4))],
        [("y", F, None)],
        {"c": np.array([False, True, True, True])},
        opset=11,
        axis=1,
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("sorted_", [1, 0])
def test_unique(tmp_path, sorted_):
    node = helper.make_node("Unique", ["x"], ["y", "idx", "inv", "cnt"], sorted=sorted_)
    model = make_model(
        [node],
        [("x", F, (2, 4))],
        [("y", F, None), ("idx", I64, None), ("inv", I64, None), ("cnt", I64, None)],
        opset=11,
    )
    data = np.array([[3, 1, 2, 1], [3, 0, 2, 5]], F)
    assert_matches(model, tmp_path, feeds={"x": data})


# --- tensor ops ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "in_shape, target", [((3, 1), [2, 3, 4]), ((1, 4), [3, 1]), ((2, 3), [1, 1])]
)
def test_expand(tmp_path, in_shape, target):
    model = model_of("Expand", [("x", F, in_shape)], [("y", F, None)], {"s": np.array(target, I64)})
    assert_matches(model, tmp_path)


def test_tile(tmp_path):
    model = model_of("Tile", [("x", F, (2, 3))], [("y", F, None)], {"r": np.array([2, 3], I64)})
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("axis, idx_dtype", [(-1, I64), (0, I64), (1, F)])
def test_one_hot(tmp_path, axis, idx_dtype):
    depth = np.array(4, I64 if idx_dtype == I64 else F)  # the type pairs onnxruntime implements
    inits = {"d": depth, "v": np.array([-1.0, 2.5], F)}
    model = model_of(
        "OneHot", [("i", idx_dtype, (2, 3))], [("y", F, None)], inits, opset=11, axis=axis
    )
    feeds = {"i": np.array([[0, 3, -1], [-4, 2, 7]], idx_dtype)}
    assert_matches(model, tmp_path, feeds=feeds)


def test_range_runtime(tmp_path):
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    model = make_model(
        [node], [("s", F, ()), ("l", F, ()), ("d", F, ())], [("y", F, None)], opset=11
    )
    feeds = {"s": np.array(1.0, F), "l": np.array(6.5, F), "d": np.array(1.5, F)}
    assert_matches(model, tmp_path, feeds=feeds)


def test_range_int_runtime_limit(tmp_path):
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    model = make_model(
        [node],
        [("l", I64, ())],
        [("y", I64, None)],
        {"s": np.array(2, I64), "d": np.array(3, I64)},
        opset=11,
    )
    assert_matches(model, tmp_path, feeds={"l": np.array(14, I64)})


@pytest.mark.parametrize("value", [None, np.array([2.5], F), np.array([7], I64)])
def test_constant_of_shape_runtime(tmp_path, value):
    attrs = {} if value is None else {"value": numpy_helper.from_array(value, "v")}
    out_dtype = F if value is None else value.dtype
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], **attrs)
    model = make_model([node], [("s", I64, (2,))], [("y", out_dtype, None)], opset=11)
    assert_matches(model, tmp_path, feeds={"s": np.array([2, 3], I64)})


def test_size(tmp_path):
    node = helper.make_node("Size", ["x"], ["y"])
    model = make_model([node], [("x", F, (2, 3, 4))], [("y", I64, None)], opset=13)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("upper, k", [(1, None), (0, None), (1, 1), (0, -1), (1, -2)])
def test_trilu(tmp_path, upper, k):
    inits = {} if k is None else {"k": np.array(k, I64)}
    model = model_of("Trilu", [("x", F, (2, 4, 5))], [("y", F, None)], inits, opset=14, upper=upper)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("opset, mode", [(9, None), (13, "DCR"), (13, "CRD")])
def test_depth_to_space(tmp_path, opset, mode):
    attrs = {"blocksize": 2} if mode is None else {"blocksize": 2, "mode": mode}
    assert_matches(
        single_op_model("DepthToSpace", {"x": (1, 8, 2, 3)}, opset=opset, **attrs), tmp_path
    )


def test_space_to_depth(tmp_path):
    assert_matches(single_op_model("SpaceToDepth", {"x": (1, 2, 4, 6)}, blocksize=2), tmp_path)


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
    ],
)
def test_einsum(tmp_path, equation, shapes):
    inputs = [(f"x{i}", F, s) for i, s in enumerate(shapes)]
    model = model_of("Einsum", inputs, [("y", F, None)], opset=12, equation=equation)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("time_axis, batch_axis", [(0, 1), (1, 0)])
def test_reverse_sequence(tmp_path, time_axis, batch_axis):
    shape = (4, 3) if time_axis == 0 else (3, 4)
    model = model_of(
        "ReverseSequence",
        [("x", F, shape), ("l", I64, (3,))],
        [("y", F, None)],
        opset=10,
        time_axis=time_axis,
        batch_axis=batch_axis,
    )
    assert_matches(model, tmp_path, feeds={"x": x(*shape), "l": np.array([1, 4, 2], I64)})


@pytest.mark.parametrize("attrs", [{}, {"k": 1}, {"k": -2, "dtype": 7}])
def test_eye_like(tmp_path, attrs):
    out_dtype = I64 if attrs.get("dtype") == 7 else F
    model = model_of("EyeLike", [("x", F, (3, 4))], [("y", out_dtype, None)], opset=9, **attrs)
    assert_matches(model, tmp_path)


def test_data_dependent_shapes_in_graph_mode(tmp_path):
    """NonZero, Compress and Unique have data-dependent output shapes; GRAPH mode must run them too."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"]),
        helper.make_node("Compress", ["x", "c"], ["cx"], axis=1),
        helper.make_node("Unique", ["x"], ["u", "ui", "uv", "uc"]),
    ]
    model = make_model(
        nodes,
        [("x", F, (2, 3)), ("c", np.bool_, (3,))],
        [
            ("nz", I64, None),
            ("cx", F, None),
            ("u", F, None),
            ("ui", I64, None),
            ("uv", I64, None),
            ("uc", I64, None),
        ],
        opset=13,
    )
    feeds = {"x": np.array([[0, 2, 2], [1, 0, 3]], F), "c": np.array([True, False, True])}
    assert_matches(model, tmp_path, feeds=feeds, graph_mode=True)
