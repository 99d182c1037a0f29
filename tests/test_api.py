"""The Python API validates what the CLI validates and raises only documented errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.errors import ArgumentError
from tests.helpers import make_model


def _scaled(tmp_path):
    """y = x * sr, with x of dynamic batch and sr a scalar (like Silero VAD's sample rate)."""
    model = make_model(
        [
            helper.make_node("Cast", ["sr"], ["srf"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", ["x", "srf"], ["y"]),
        ],
        [("x", np.float32, ["batch", 4]), ("sr", np.int64, [])],
        [("y", np.float32, ["batch", 4])],
    )
    path = tmp_path / "scaled.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(
    "shape",
    [["2,4"], ["x=2,4"], ["x=2,4", "sr="], "2,4", [(2, 4)], [(2, 4), ()]],
    ids=["dynamic-only", "by-name", "scalar-by-name", "string", "tuple", "tuple-and-scalar"],
)
def test_static_inputs_need_no_shape(tmp_path, shape):
    result = convert(_scaled(tmp_path), shape=shape, output=tmp_path / "out")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    sr = np.array(3, dtype=np.int64)
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, [x, sr])
    np.testing.assert_allclose(got, x * 3)


@pytest.mark.parametrize(
    "shape,key",
    [
        (["2,4", "5,7"], "SHAPE_CONFLICT"),  # a rank-0 input given a 2-D shape
        (["2,4", "3", "4"], "SHAPE_COUNT"),
        (["y=2,4"], "UNKNOWN_NODE"),
        (["x=2,4", "x=3,4"], "DUPLICATE_NODE"),
        ([(1.5, 4)], "BAD_SHAPE"),
        ([(True, 4)], "BAD_SHAPE"),
        (42, "BAD_SHAPE"),
        (["=2,4"], "BAD_SHAPE"),
    ],
)
def test_bad_shapes_are_coded_errors(tmp_path, shape, key):
    with pytest.raises(ArgumentError) as info:
        convert(_scaled(tmp_path), shape=shape, output=tmp_path / "out")
    assert info.value.key == key
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tolerance": math.nan},
        {"tolerance": math.inf},
        {"tolerance": -1e-3},
        {"tolerance": 0},
        {"tolerance": "1e-3"},
        {"tolerance": True},
        {"output": ""},
        {"output": 5},
        {"report": "  "},
        {"input_nodes": "x"},
        {"input_nodes": ["x", ""]},
        {"output_nodes": [None]},
    ],
    ids=lambda kwargs: "-".join(f"{k}={v!r}" for k, v in kwargs.items()),
)
def test_bad_arguments_are_argument_errors(tmp_path, kwargs):
    arguments = {"shape": ["2,4"], "output": tmp_path / "out", **kwargs}
    with pytest.raises(ArgumentError) as info:
        convert(_scaled(tmp_path), **arguments)
    assert info.value.key == "BAD_ARGUMENT"


def test_model_file_must_be_a_path(tmp_path):
    with pytest.raises(ArgumentError) as info:
        convert(123, output=tmp_path / "out")
    assert info.value.key == "BAD_ARGUMENT"


@pytest.mark.parametrize(
    "option",
    [
        {"overwrite": "yes"},
        {"verify": 1},
        {"dynamic": "no"},
        {"float32": None},
        {"registry": 3},
        {"log": 3},
        {"progress": 3},
    ],
)
def test_options_of_the_wrong_kind_are_argument_errors(tmp_path, option):
    from mindconverter.errors import MindConverterError

    model = Path(__file__).resolve().parent / "fixtures" / "tiny_resnet_dynamo.onnx"
    with pytest.raises(MindConverterError) as info:
        convert(model, shape="1,3,32,32", output=tmp_path / "out", **option)
    assert info.value.key == "BAD_ARGUMENT"
    assert not (tmp_path / "out").exists()
