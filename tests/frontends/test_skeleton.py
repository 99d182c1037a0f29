"""Reading a model's graph with its large weights left in the file (by reference)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from mindconverter.errors import MindConverterError
from mindconverter.frontends.loading import load_model, load_onnx
from mindconverter.frontends.skeleton import split_weights
from mindconverter.graph.weight_store import WeightStore, is_held
from tests.helpers import make_model

RNG = np.random.default_rng(0)
WEIGHTS = {
    "big": RNG.standard_normal((64, 32)).astype(np.float32),  # 8 KB: held
    "half": RNG.standard_normal((40, 40)).astype(np.float16),  # 3.2 KB: held
    "bias": RNG.standard_normal((32,)).astype(np.float32),  # 128 B: stays in the proto
    "shape": np.array([2, -1], np.int64),  # shape values stay (shape inference reads them)
    "table": np.arange(20000, dtype=np.int64),  # 160 KB of integers: held
}


def _model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("MatMul", ["x", "big"], ["a"]),
        helper.make_node("Add", ["a", "bias"], ["b"]),
        helper.make_node("Reshape", ["b", "shape"], ["c"]),
        helper.make_node("Cast", ["half"], ["h"], to=onnx.TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["h"], ["s"], keepdims=0),
        helper.make_node("Gather", ["table", "i"], ["t"]),
    ]
    return make_model(
        nodes,
        [("x", np.float32, (4, 64)), ("i", np.int64, (3,))],
        [("c", np.float32, None), ("s", np.float32, None), ("t", np.int64, None)],
        WEIGHTS,
    )


def _held(model: onnx.ModelProto) -> set[str]:
    return {init.name for init in model.graph.initializer if is_held(init)}


def test_large_weights_stay_in_the_file_and_read_back_exactly(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    split = split_weights(path)
    assert set(split.ranges) == {"big", "half", "table"} == _held(split.model)
    assert split.model.ByteSize() < 2000 < path.stat().st_size
    store = WeightStore()
    model = load_onnx(path, store)
    for name, array in WEIGHTS.items():
        tensor = next(init for init in model.graph.initializer if init.name == name)
        value = store.array(name) if is_held(tensor) else numpy_helper.to_array(tensor)
        assert value.dtype == array.dtype and value.shape == array.shape
        np.testing.assert_array_equal(value, array)
    assert not store.array("big").flags.writeable  # a view of the file, not a copy


def test_graph_nodes_and_metadata_are_kept_as_the_ordinary_parser_reads_them(tmp_path):
    original = _model()
    original.metadata_props.add(key="k", value="v")
    path = tmp_path / "m.onnx"
    onnx.save(original, path)
    model = load_onnx(path, WeightStore())
    assert model.graph.node == original.graph.node
    assert model.metadata_props == original.metadata_props
    assert [i.name for i in model.graph.initializer] == list(WEIGHTS)


def test_external_data_is_located_not_read(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path, save_as_external_data=True, location="m.bin", size_threshold=0)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    store = WeightStore()
    model = load_model(path, store=store)
    assert _held(model) == {"big", "half", "table"}
    np.testing.assert_array_equal(store.array("table"), WEIGHTS["table"])
    small = next(init for init in model.graph.initializer if init.name == "shape")
    np.testing.assert_array_equal(numpy_helper.to_array(small), WEIGHTS["shape"])  # read in
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_external_data_shorter_than_declared_is_refused(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path, save_as_external_data=True, location="m.bin", size_threshold=0)
    data = tmp_path / "m.bin"
    data.write_bytes(data.read_bytes()[:100])
    try:
        load_model(path, store=WeightStore())
    except MindConverterError as error:
        assert error.key == "EXTERNAL_DATA_MISSING"
    else:
        raise AssertionError("a truncated external-data file was accepted")


def test_unusual_wire_layouts_fall_back_to_the_ordinary_parser(tmp_path):
    data = _model().SerializeToString()
    path = tmp_path / "twice.onnx"
    path.write_bytes(data + data)  # two graph fields: protobuf merges them
    assert split_weights(path) is None
    (tmp_path / "cut.onnx").write_bytes(data[:-7])
    assert split_weights(tmp_path / "cut.onnx") is None
    try:
        load_model(tmp_path / "cut.onnx", store=WeightStore())
    except MindConverterError as error:
        assert error.key in ("FILE_CORRUPT", "INVALID_GRAPH")
    else:
        raise AssertionError("a truncated model was accepted")


def test_a_tensor_whose_bytes_do_not_match_its_dims_is_left_for_validation(tmp_path):
    model = _model()
    model.graph.initializer[0].raw_data = model.graph.initializer[0].raw_data[:-4]
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    assert "big" not in split_weights(path).ranges
    try:
        load_model(path, store=WeightStore())
    except MindConverterError as error:
        assert error.key == "INVALID_GRAPH"
    else:
        raise AssertionError("a malformed weight was accepted")
