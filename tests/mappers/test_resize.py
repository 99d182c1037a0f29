"""Numeric tests of Resize (opsets 10-19) and Upsample (7-9) against onnxruntime."""

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model

F = np.float32
X_SHAPE = (1, 2, 4, 5)


def resize_model(opset, scales=None, sizes=None, roi=None, x_shape=X_SHAPE, dtype=F, **attrs):
    inits = {}
    if opset < 11:
        names = ["x", "scales"]
        inits["scales"] = np.array(scales, F)
    else:
        if opset == 11 and roi is None:
            roi = []  # roi is a required input in opset 11
        names = [
            "x",
            "roi" if roi is not None else "",
            "scales" if scales is not None else "",
            "sizes" if sizes is not None else "",
        ]
        if roi is not None:
            inits["roi"] = np.array(roi, F)
        if scales is not None:
            inits["scales"] = np.array(scales, F)
        if sizes is not None:
            inits["sizes"] = np.array(sizes, np.int64)
        while names[-1] == "":
            names.pop()
    node = helper.make_node("Resize", names, ["y"], **attrs)
    return make_model([node], [("x", dtype, x_shape)], [("y", dtype, None)], inits, opset=opset)


@pytest.mark.parametrize(
    "opset, scales, attrs",
    [
        (10, [1, 1, 2, 2], {"mode": "nearest"}),
        (10, [1, 1, 3, 1.5], {"mode": "nearest"}),
        (10, [1, 1, 0.5, 0.6], {"mode": "nearest"}),
        (10, [1, 1, 2, 1.5], {"mode": "linear"}),
    ],
)
def test_resize_opset10(tmp_path, opset, scales, attrs):
    assert_matches(resize_model(opset, scales, **attrs), tmp_path)


@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"])
@pytest.mark.parametrize(
    "nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
)
def test_resize_nearest_modes(tmp_path, ctm, nearest_mode):
    model = resize_model(
        13,
        scales=[1, 1, 2.5, 1.6],
        mode="nearest",
        coordinate_transformation_mode=ctm,
        nearest_mode=nearest_mode,
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "opset, kwargs",
    [
        (11, {"scales": [1, 1, 0.5, 0.6]}),
        (13, {"sizes": [1, 2, 7, 3]}),
        (
            13,
            {
                "scales": [1, 1, 2, 2],
                "coordinate_transformation_mode": "asymmetric",
                "nearest_mode": "floor",
            },
        ),
    ],
)
def test_resize_nearest_scales_sizes(tmp_path, opset, kwargs):
    assert_matches(resize_model(opset, mode="nearest", **kwargs), tmp_path)


def test_resize_nearest_integer_input(tmp_path):
    model = resize_model(13, scales=[1, 1, 2, 3], dtype=np.int32, mode="nearest")
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 1.5], [1, 1, 0.5, 0.8], [1, 1, 0.3, 0.6]])
def test_resize_linear(tmp_path, ctm, scales):
    model = resize_model(13, scales=scales, mode="linear", coordinate_transformation_mode=ctm)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_sizes_pytorch_one_pixel(tmp_path, mode):
    model = resize_model(
        13, sizes=[1, 2, 1, 9], mode=mode, coordinate_transformation_mode="pytorch_half_pixel"
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("extrapolation", [0.0, 2.5])
def test_resize_tf_crop_and_resize(tmp_path, mode, extrapolation):
    roi = [0, 0, -0.2, 0.3, 1, 1, 0.8, 1.4]
    model = resize_model(
        13,
        sizes=[1, 2, 5, 6],
        roi=roi,
        mode=mode,
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=extrapolation,
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"exclude_outside": 1},
        {"cubic_coeff_a": -0.5},
        {"coordinate_transformation_mode": "align_corners"},
        {"coordinate_transformation_mode": "asymmetric", "exclude_outside": 1},
    ],
)
@pytest.mark.parametrize("scales", [[1, 1, 2, 1.4], [1, 1, 0.75, 0.6]])
def test_resize_cubic(tmp_path, attrs, scales):
    assert_matches(resize_model(13, scales=scales, mode="cubic", **attrs), tmp_path)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("scales", [[0.5, 0.4], [0.75, 1.5]])
def test_resize_antialias(tmp_path, mode, scales):
    model = resize_model(
        18, scales=scales, mode=mode, antialias=1, axes=[2, 3], x_shape=(1, 2, 8, 10)
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "axes, kwargs",
    [
        ([3], {"scales": [2.0]}),
        ([-1, 1], {"sizes": [7, 3]}),
        ([2, 3], {"sizes": [6, 6], "keep_aspect_ratio_policy": "not_larger"}),
        ([2, 3], {"sizes": [6, 6], "keep_aspect_ratio_policy": "not_smaller"}),
    ],
)
def test_resize_opset18_axes(tmp_path, axes, kwargs):
    mode = "nearest" if 1 in axes else "linear"  # onnxruntime's linear does not resize channels
    model = resize_model(18, mode=mode, axes=axes, **kwargs)
    assert_matches(model, tmp_path)


def test_resize_axis_not_last_two(tmp_path):
    model = resize_model(13, scales=[1, 1.5, 1, 1], mode="linear", x_shape=(1, 2, 3, 4))
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_half_pixel_symmetric(tmp_path, mode):
    model = resize_model(
        19,
        scales=[1, 1, 1.7, 0.7],
        mode=mode,
        coordinate_transformation_mode="half_pixel_symmetric",
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "opset, mode, scales",
    [
        (7, "nearest", [1.0, 1.0, 2.0, 2.0]),
        (7, "nearest", [1, 1, 3, 1.5]),
        (8, "linear", [1, 1, 2, 2.5]),
        (9, "nearest", [1, 1, 2, 3]),
        (9, "linear", [1, 1, 1.5, 2]),
    ],
)
def test_upsample(tmp_path, opset, mode, scales):
    if opset < 9:
        node = helper.make_node("Upsample", ["x"], ["y"], mode=mode, scales=scales)
        inits = {}
    else:
        node = helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)
        inits = {"s": np.array(scales, F)}
    model = make_model([node], [("x", F, X_SHAPE)], [("y", F, None)], inits, opset=opset)
    assert_matches(model, tmp_path)


def test_upsample_is_a_repeat(tmp_path):
    node = helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")
    model = make_model(
        [node], [("x", F, X_SHAPE)], [("y", F, None)], {"s": np.array([1, 1, 2, 2], F)}, opset=9
    )
    result = assert_matches(model, tmp_path)
    assert "ops.repeat_interleave" in result.script_path.read_text()
