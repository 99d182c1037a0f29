"""Loading model files: clear errors for bad paths and files, external data kept in its folder."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.errors import MindConverterError
from mindconverter.frontends.loading import check_model_path, check_opset, load_model, load_onnx
from mindconverter.graph.weight_store import WeightStore
from tests.helpers import make_model


def _error(call, *args):
    with pytest.raises(MindConverterError) as info:
        call(*args)
    return info.value.key


def _model(weight_size: int = 64):
    return make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [("x", np.float32, [weight_size])],
        [("y", np.float32, [weight_size])],
        {"w": np.arange(weight_size, dtype=np.float32)},
    )


def test_bad_paths_have_their_own_codes(tmp_path):
    assert _error(check_model_path, tmp_path / "missing.onnx") == "FILE_NOT_FOUND"
    assert _error(check_model_path, tmp_path) == "FILE_IS_DIRECTORY"
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert _error(check_model_path, tmp_path / "empty.onnx") == "FILE_EMPTY"
    (tmp_path / "model.txt").write_bytes(b"x")
    assert _error(check_model_path, tmp_path / "model.txt") == "UNKNOWN_SUFFIX"
    (tmp_path / "junk.onnx").write_bytes(b"\xff\x00not a model")
    assert _error(load_model, tmp_path / "junk.onnx") == "FILE_CORRUPT"


def test_external_data_loads_from_the_model_folder_and_nothing_is_written(tmp_path):
    onnx.save(
        _model(),
        tmp_path / "m.onnx",
        save_as_external_data=True,
        location="m.bin",
        size_threshold=0,
    )
    before = sorted(p.name for p in tmp_path.iterdir())
    model = load_onnx(tmp_path / "m.onnx")
    np.testing.assert_array_equal(
        onnx.numpy_helper.to_array(model.graph.initializer[0]), np.arange(64)
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before == ["m.bin", "m.onnx"]


@pytest.mark.parametrize("by_reference", [False, True])
@pytest.mark.parametrize("location", ["../outside.bin", "missing.bin"])
def test_external_data_outside_the_folder_or_missing_is_refused(tmp_path, location, by_reference):
    folder = tmp_path / "model"
    folder.mkdir()
    onnx.save(
        _model(4096),
        folder / "m.onnx",
        save_as_external_data=True,
        location="m.bin",
        size_threshold=0,
    )
    model = onnx.load(folder / "m.onnx", load_external_data=False)
    for entry in model.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = location
    (tmp_path / "outside.bin").write_bytes((folder / "m.bin").read_bytes())
    onnx.save(model, folder / "m.onnx")
    store = WeightStore() if by_reference else None
    assert _error(load_onnx, folder / "m.onnx", store) == "EXTERNAL_DATA_MISSING"


def test_opsets_outside_the_supported_range(tmp_path):
    model = _model()
    model.opset_import[0].version = 0
    assert _error(check_opset, model) == "OPSET_UNSUPPORTED"
    model.opset_import[0].version = onnx.defs.onnx_opset_version() + 1
    assert _error(check_opset, model) == "OPSET_UNSUPPORTED"
    model.opset_import[0].version = 17
    assert check_opset(model) == 17


def test_a_model_older_than_opset_7_is_upgraded_by_onnx_version_converter(tmp_path):
    nodes = [
        helper.make_node("Not", ["x"], ["n"]),
        helper.make_node("Add", ["z", "b"], ["y"], broadcast=1),
    ]
    model = make_model(
        nodes,
        [("x", np.bool_, [2, 3]), ("z", np.float32, [2, 3])],
        [("n", np.bool_, None), ("y", np.float32, None)],
        {"b": np.array([0.5, 1.5, 2.5], np.float32)},
        opset=5,
    )
    model.opset_import[0].version = 5
    x = np.array([[True, False, True], [False, False, True]])
    z = np.arange(6, dtype=np.float32).reshape(2, 3)
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert result.unconverted == []
    not_x, total = run_mindspore(result.script_path, result.checkpoint_path, [x, z])
    # onnxruntime runs nothing older than opset 7: the expected values by hand
    np.testing.assert_array_equal(not_x, ~x)
    np.testing.assert_array_equal(total, z + np.array([0.5, 1.5, 2.5], np.float32))
