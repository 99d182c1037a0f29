"""Numeric tests of LpPool, GlobalLpPool, MaxUnpool, RoiAlign and dilated MaxPool against onnxruntime."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import (
    assert_matches,
    assert_outputs_match,
    convert_fully,
    make_model,
    single_op_model,
)

rng = np.random.default_rng(3)


@pytest.mark.parametrize(
    "shape, attrs, opset",
    [
        ((1, 2, 9), {"kernel_shape": [3], "strides": [2]}, 11),
        ((1, 2, 9), {"kernel_shape": [2], "p": 1, "pads": [1, 0]}, 11),
        ((1, 2, 6, 6), {"kernel_shape": [2, 2]}, 11),
        (
            (1, 2, 7, 7),
            {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "p": 3},
            11,
        ),
        ((1, 2, 7, 7), {"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "p": 1}, 11),
        ((1, 2, 7, 7), {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, 18),
        ((1, 2, 4, 4, 4), {"kernel_shape": [2, 2, 2]}, 18),
        ((1, 2, 6, 6), {"kernel_shape": [2, 2], "p": 1}, 7),
    ],
)
def test_lp_pool(tmp_path, shape, attrs, opset):
    model = single_op_model("LpPool", {"x": shape}, opset=opset, **attrs)
    assert_matches(model, tmp_path, atol=1e-4)


@pytest.mark.parametrize("shape", [(1, 3, 5), (2, 3, 4, 4), (1, 2, 3, 3, 3)])
@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(tmp_path, shape, p):
    model = single_op_model("GlobalLpPool", {"x": shape}, p=p)
    assert_matches(model, tmp_path, atol=1e-4)


def _pool_indices(x, pool_attrs):
    """MaxPool values and (whole-tensor flattened) indices from onnxruntime."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **pool_attrs)
    model = make_model(
        [node],
        [("x", np.float32, x.shape)],
        [("y", np.float32, None), ("i", np.int64, None)],
        opset=12,
    )
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


@pytest.mark.parametrize(
    "shape, pool_attrs, output_shape",
    [
        ((2, 3, 6, 6), {"kernel_shape": [2, 2], "strides": [2, 2]}, None),
        ((2, 3, 6, 6), {"kernel_shape": [2, 2], "strides": [2, 2]}, [2, 3, 6, 6]),
        ((2, 3, 6, 6), {"kernel_shape": [2, 2], "strides": [2, 2]}, [2, 3, 7, 8]),
        (
            (1, 2, 7, 7),
            {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
            [1, 2, 8, 8],
        ),
        ((1, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, None),
        ((2, 3, 8), {"kernel_shape": [2], "strides": [2]}, None),
        ((1, 2, 4, 4, 4), {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}, None),
    ],
)
def test_max_unpool(tmp_path, shape, pool_attrs, output_shape):
    x = rng.standard_normal(shape).astype(np.float32)
    y, indices = _pool_indices(x, pool_attrs)
    inputs = ["y", "i"]
    inits = {}
    if output_shape is not None:
        inputs.append("s")
        inits["s"] = np.array(output_shape, np.int64)
    node = helper.make_node("MaxUnpool", inputs, ["z"], **pool_attrs)
    model = make_model(
        [node],
        [("y", np.float32, y.shape), ("i", np.int64, indices.shape)],
        [("z", np.float32, None)],
        inits,
        opset=11,
    )
    if output_shape is None:
        assert_matches(model, tmp_path, feeds={"y": y, "i": indices})
        return
    # A larger output_shape: the ONNX reference (and the node suite's expected outputs) keep the
    # indices in the size the kernel gives and put that result in the output's leading corner;
    # onnxruntime reads them as positions in output_shape instead.
    result = convert_fully(model, tmp_path)
    got = run_mindspore(result.script_path, result.checkpoint_path, [y, indices])
    want = ReferenceEvaluator(model).run(None, {"y": y, "i": indices})
    assert_outputs_match(got, want)


def _roi_model(opset, **attrs):
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], **attrs)
    return make_model(
        [node],
        [
            ("x", np.float32, (2, 3, 10, 10)),
            ("rois", np.float32, (3, 4)),
            ("batch", np.int64, (3,)),
        ],
        [("y", np.float32, None)],
        opset=opset,
    )


def _roi_feeds():
    return {
        "x": rng.standard_normal((2, 3, 10, 10)).astype(np.float32),
        "rois": np.array([[0.5, 1.2, 6.3, 7.9], [2, 2, 9, 5], [1, 1, 1.5, 1.7]], np.float32),
        "batch": np.array([0, 1, 1], np.int64),
    }


@pytest.mark.parametrize(
    "opset, attrs",
    [
        (10, {"output_height": 3, "output_width": 2, "sampling_ratio": 2}),
        (10, {"output_height": 2, "output_width": 2, "sampling_ratio": 1, "spatial_scale": 0.5}),
        (
            16,
            {
                "output_height": 3,
                "output_width": 2,
                "sampling_ratio": 2,
                "coordinate_transformation_mode": "output_half_pixel",
            },
        ),
    ],
)
def test_roi_align(tmp_path, opset, attrs):
    assert_matches(_roi_model(opset, **attrs), tmp_path, feeds=_roi_feeds())


@pytest.mark.parametrize(
    "opset, attrs",
    [
        (16, {"output_height": 3, "output_width": 2, "sampling_ratio": 2}),
        (10, {"output_height": 2, "output_width": 3, "sampling_ratio": 2, "mode": "max"}),
        (
            16,
            {
                "output_height": 2,
                "output_width": 2,
                "sampling_ratio": 3,
                "spatial_scale": 0.5,
                "mode": "max",
                "coordinate_transformation_mode": "half_pixel",
            },
        ),
    ],
)
def test_roi_align_written_with_ops(tmp_path, opset, attrs):
    """'half_pixel' coordinates and mode 'max' (the script's RoiAlignByOps), with a ROI reaching
    past the map and one smaller than a pixel."""
    feeds = _roi_feeds()
    feeds["rois"][1] = [-3.0, 7.5, 12.0, 11.0]
    result = assert_matches(_roi_model(opset, **attrs), tmp_path, feeds=feeds)
    assert "RoiAlignByOps" in result.script_path.read_text()


@pytest.mark.parametrize("opset, attrs, reason", [(10, {}, "sampling_ratio=0")])
def test_roi_align_unsupported(tmp_path, opset, attrs, reason):
    onnx.save(_roi_model(opset, **attrs), str(tmp_path / "roi.onnx"))
    result = convert(tmp_path / "roi.onnx", output=tmp_path / "out")
    assert [u.op_type for u in result.unconverted] == ["RoiAlign"]
    assert reason in result.unconverted[0].reason


@pytest.mark.parametrize(
    "shape, attrs",
    [
        ((1, 2, 12), {"kernel_shape": [3], "dilations": [2]}),
        ((1, 2, 12), {"kernel_shape": [2], "dilations": [3], "strides": [2], "pads": [1, 1]}),
        (
            (1, 2, 9, 9),
            {"kernel_shape": [2, 2], "dilations": [2, 2], "ceil_mode": 1, "strides": [2, 2]},
        ),
        ((1, 2, 7, 7, 7), {"kernel_shape": [2, 2, 2], "dilations": [2, 2, 2]}),
        (
            (1, 2, 8, 8, 8),
            {"kernel_shape": [3, 3, 3], "dilations": [2, 1, 2], "pads": [2, 1, 2, 2, 1, 2]},
        ),
        (
            (1, 2, 9, 9),
            {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 2, 2, 2]},
        ),  # pad > kernel / 2
    ],
)
def test_dilated_max_pool(tmp_path, shape, attrs):
    model = single_op_model("MaxPool", {"x": shape}, opset=12, **attrs)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "shape, attrs",
    [
        ((1, 2, 9), {"kernel_shape": [3], "dilations": [2]}),
        ((2, 3, 8, 7), {"kernel_shape": [2, 3], "dilations": [2, 1], "strides": [1, 2]}),
        (
            (1, 2, 9, 9),
            {
                "kernel_shape": [3, 3],
                "dilations": [2, 2],
                "pads": [2, 1, 2, 2],
                "count_include_pad": 1,
            },
        ),
        ((1, 2, 9, 9), {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 1, 2, 2]}),
        (
            (1, 1, 8, 8),
            {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [3, 3], "ceil_mode": 1},
        ),
        ((1, 2, 6, 6, 6), {"kernel_shape": [2, 2, 2], "dilations": [2, 2, 1]}),
    ],
)
def test_dilated_average_pool(tmp_path, shape, attrs):
    """Window sums by a dilated depthwise convolution of ones, divided by ONNX's counts."""
    model = single_op_model("AveragePool", {"x": shape}, opset=19, **attrs)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ("MaxPool", {"kernel_shape": [2, 2]}),
        ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
        ("MaxPool", {"kernel_shape": [3, 3], "pads": [0, 0, 1, 1]}),
        ("MaxPool", {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"}),
        ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
        ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}),
        ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
        ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1]}),
        ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 0, 2, 1], "count_include_pad": 1}),
        ("GlobalAveragePool", {}),
        ("GlobalMaxPool", {}),
    ],
)
def test_pool_2d(tmp_path, op, attrs):
    assert_matches(single_op_model(op, {"x": (1, 2, 9, 9)}, **attrs), tmp_path)


@pytest.mark.parametrize(
    "op, extra",
    [
        ("MaxPool", {}),
        ("AveragePool", {"count_include_pad": 0}),
        ("AveragePool", {"count_include_pad": 1}),
    ],
)
@pytest.mark.parametrize(
    "shape, attrs",
    [
        ((1, 1, 4), {"kernel_shape": [3], "pads": [2, 2], "strides": [2]}),
        ((1, 3, 1, 4), {"kernel_shape": [1, 3], "pads": [0, 2, 0, 2], "strides": [1, 2]}),
        ((1, 1, 5), {"kernel_shape": [2], "pads": [0, 1], "strides": [3]}),
    ],
)
def test_ceil_mode_drops_a_window_starting_in_the_end_padding(tmp_path, op, extra, shape, attrs):
    """Explicitly padded pools used the cell's ceil_mode, which kept a last window that starts
    in the end padding (NaN, 0 or -inf there, or a failure); ONNX drops it."""
    model = single_op_model(op, {"x": shape}, opset=19, ceil_mode=1, **attrs, **extra)
    assert_matches(model, tmp_path)
