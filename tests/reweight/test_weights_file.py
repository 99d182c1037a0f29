"""Reading a newer set of weights: safetensors (bfloat16 included), ONNX initializers and Constant
nodes; broken files get coded errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from mindconverter.errors import MindConverterError
from mindconverter.outputs.checkpoint import write_safetensors
from mindconverter.reweight.weights_file import read_weights


def test_safetensors_round_trip_with_bfloat16(tmp_path):
    tensors = {
        "a.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b.half": np.arange(4, dtype=np.float32).astype(ml_dtypes.bfloat16),
        "steps": np.array(7, np.int64),
    }
    path = tmp_path / "w.safetensors"
    with open(path, "wb") as stream:
        write_safetensors(stream, list(tensors.items()))
    got = read_weights(path)
    assert list(got) == list(tensors)
    for name, array in tensors.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape
        np.testing.assert_array_equal(got[name], array)


def test_safetensors_library_files_are_read(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "lib.safetensors"
    safetensors_numpy.save_file({"x": np.ones((2, 2), np.float16)}, str(path))
    np.testing.assert_array_equal(read_weights(path)["x"], np.ones((2, 2), np.float16))


def _file(header: bytes, data: bytes = b"") -> bytes:
    return len(header).to_bytes(8, "little") + header + data


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"\x00\x01", "shorter than"),
        ((1 << 40).to_bytes(8, "little") + b"{}", "header length"),
        (_file(b"nope"), "not JSON"),
        (_file(b"[1]"), "not a table"),
        (_file(b'{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'), "outside the file"),
        (_file(b'{"x":{"dtype":"F32","shape":[-4],"data_offsets":[0,0]}}'), "outside the file"),
        (_file(b'{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', b"\0" * 4), "match"),
        (
            _file(b'{"x":{"dtype":"Q99","shape":[1],"data_offsets":[0,4]}}', b"\0" * 4),
            "unknown dtype",
        ),
    ],
    ids=[
        "short",
        "header-too-long",
        "not-json",
        "not-a-table",
        "past-the-end",
        "negative-dim",
        "size-mismatch",
        "unknown-dtype",
    ],
)
def test_broken_safetensors_files(tmp_path, content, reason):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(MindConverterError) as info:
        read_weights(path)
    assert info.value.key == "FILE_CORRUPT" and reason in str(info.value)


def test_onnx_initializers_and_constant_nodes(tmp_path):
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    mask = np.tril(np.ones((3, 3), np.float32))
    nodes = [
        helper.make_node("Constant", [], ["mask"], value=numpy_helper.from_array(mask)),
        helper.make_node("MatMul", ["x", "w"], ["y0"]),
        helper.make_node("MatMul", ["y0", "mask"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 3])],
        [numpy_helper.from_array(weight, "w")],
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), str(path))
    got = read_weights(path)
    np.testing.assert_array_equal(got["w"], weight)
    np.testing.assert_array_equal(got["mask"], mask)


def test_unknown_suffix(tmp_path):
    path = tmp_path / "w.h5"
    path.write_bytes(b"x")
    with pytest.raises(MindConverterError) as info:
        read_weights(path)
    assert info.value.key == "UNKNOWN_SUFFIX" and ".safetensors" in str(info.value)
