"""Numeric tests of InstanceNormalization, LayerNormalization, GroupNormalization, LpNormalization
and MeanVarianceNormalization against onnxruntime."""

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model, single_op_model
from tests.mappers.builders import randn

rng = np.random.default_rng(7)


def w(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 3, 4, 4), (1, 2, 3, 3, 3)])
def test_instance_norm(tmp_path, shape):
    c = shape[1]
    model = single_op_model(
        "InstanceNormalization", {"x": shape}, initializers={"s": w(c), "b": w(c)}, epsilon=1e-3
    )
    result = assert_matches(model, tmp_path)
    assert "nn.GroupNorm(" in result.script_path.read_text()


def test_instance_norm_runtime_scale(tmp_path):
    model = single_op_model("InstanceNormalization", {"x": (2, 3, 4, 4), "s": (3,), "b": (3,)})
    assert_matches(model, tmp_path, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "shape, axis, scale_shape, bias",
    [
        ((2, 5, 8), -1, (8,), True),
        ((2, 5, 8), -1, (8,), False),
        ((2, 3, 4, 5), 2, (4, 5), True),
        ((2, 3, 4, 5), 1, (3, 4, 5), True),
        ((2, 3, 4, 5), -2, (1, 5), True),  # broadcast scale
    ],
)
def test_layer_norm(tmp_path, shape, axis, scale_shape, bias):
    inits = {"s": w(*scale_shape)}
    if bias:
        inits["b"] = w(*scale_shape)
    model = single_op_model(
        "LayerNormalization", {"x": shape}, initializers=inits, axis=axis, epsilon=1e-4
    )
    result = assert_matches(model, tmp_path, atol=1e-4)
    assert "nn.LayerNorm(" in result.script_path.read_text()


def test_layer_norm_runtime_scale(tmp_path):
    model = single_op_model("LayerNormalization", {"x": (2, 5, 8), "s": (8,), "b": (8,)})
    assert_matches(model, tmp_path, atol=1e-4)


@pytest.mark.parametrize("shape, groups", [((2, 6, 4, 4), 3), ((1, 4, 5), 2), ((1, 4, 2, 2, 2), 1)])
def test_group_norm_18_per_group(tmp_path, shape, groups):
    model = single_op_model(
        "GroupNormalization",
        {"x": shape},
        initializers={"s": w(groups), "b": w(groups)},
        opset=18,
        num_groups=groups,
        epsilon=1e-4,
    )
    assert_matches(model, tmp_path, atol=1e-4)


@pytest.mark.parametrize("shape, groups", [((2, 6, 4, 4), 3), ((1, 4, 5), 4)])
def test_group_norm_21_per_channel(tmp_path, shape, groups):
    c = shape[1]
    model = single_op_model(
        "GroupNormalization",
        {"x": shape},
        initializers={"s": w(c), "b": w(c)},
        opset=21,
        num_groups=groups,
    )
    assert_matches(model, tmp_path, atol=1e-4)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [-1, 1])
def test_lp_normalization(tmp_path, p, axis):
    model = single_op_model("LpNormalization", {"x": (2, 3, 4)}, p=p, axis=axis)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("axes", [None, [0, 2, 3], [1], [2, 3]])
@pytest.mark.parametrize("opset", [9, 13])
def test_mean_variance_normalization(tmp_path, axes, opset):
    attrs = {} if axes is None else {"axes": axes}
    model = single_op_model("MeanVarianceNormalization", {"x": (2, 3, 4, 5)}, opset=opset, **attrs)
    assert_matches(model, tmp_path, atol=1e-4)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm_with_statistics(tmp_path, axis):
    """The Mean and InvStdDev outputs (training graphs) are computed too."""
    shape = (2, 3, 4)
    node = helper.make_node(
        "LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv_std"], axis=axis
    )
    model = make_model(
        [node],
        [("x", np.float32, shape)],
        [("y", np.float32, None), ("mean", np.float32, None), ("inv_std", np.float32, None)],
        {"s": w(*shape[axis:]), "b": w(*shape[axis:])},
    )
    assert_matches(model, tmp_path, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (1, 3, 4, 4), (1, 3, 2, 3, 3)])
def test_batch_norm(tmp_path, shape):
    c = shape[1]
    inits = {"s": randn(c), "b": randn(c), "m": randn(c), "v": np.abs(randn(c)) + 0.5}
    model = single_op_model("BatchNormalization", {"x": shape}, initializers=inits, epsilon=1e-3)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "shape, size", [((1, 6, 4, 4), 5), ((1, 32, 13, 13), 5), ((1, 8, 5, 5), 3)]
)
def test_lrn(tmp_path, shape, size):
    assert_matches(
        single_op_model("LRN", {"x": shape}, size=size, alpha=1e-3, beta=0.75, bias=2.0), tmp_path
    )


def test_dropout_is_a_cell(tmp_path):
    model = single_op_model(
        "Dropout", {"x": (2, 3)}, initializers={"r": np.array(0.25, np.float32)}
    )
    result = assert_matches(model, tmp_path)
    assert "nn.Dropout(p=0.25)" in result.script_path.read_text()


@pytest.mark.parametrize("ratio", [1.0, -0.5, float("nan")])
def test_a_dropout_ratio_outside_the_range_leaves_a_placeholder(tmp_path, ratio):
    """nn.Dropout(p=1.0) cannot be built: the script failed at MindSporeModel()."""
    import onnx

    from mindconverter import convert
    from mindconverter.check.network import build_network

    model = single_op_model(
        "Dropout", {"x": (2, 3)}, initializers={"r": np.array(ratio, np.float32)}
    )
    onnx.save(model, str(tmp_path / "m.onnx"))
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert [site.op_type for site in result.unconverted] == ["Dropout"]
    build_network(result.script_path, result.checkpoint_path)


@pytest.mark.parametrize(
    "mean",
    [np.zeros(3, np.int32), np.array(0.25, np.float32)],
    ids=["int32-statistics", "scalar-statistics"],
)
def test_batch_norm_statistics_a_layer_cannot_load_leave_a_placeholder(tmp_path, mean):
    """An invalid model (mutated) whose statistics reached nn.BatchNorm2d: the script could not
    load its own checkpoint."""
    import onnx

    from mindconverter import convert
    from mindconverter.check.network import build_network

    inits = {"s": w(3), "b": w(3), "m": mean, "v": np.ones(3, np.float32)}
    model = single_op_model("BatchNormalization", {"x": (1, 3, 2, 2)}, initializers=inits)
    onnx.save(model, str(tmp_path / "m.onnx"))
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert [site.op_type for site in result.unconverted] == ["BatchNormalization"]
    build_network(result.script_path, result.checkpoint_path)
