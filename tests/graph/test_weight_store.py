"""The weight store: large initializers held outside the proto the passes edit."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter.graph import Graph
from mindconverter.graph.weight_store import (
    FileRange,
    WeightStore,
    is_held,
    release_pages,
    worth_holding_array,
)
from tests.helpers import make_model


def _model(weight):
    return make_model(
        [helper.make_node("MatMul", ["x", "w"], ["a"]), helper.make_node("Add", ["a", "b"], ["y"])],
        [("x", np.float32, (2, weight.shape[0]))],
        [("y", np.float32, None)],
        {"w": weight, "b": np.ones(weight.shape[1], np.float32)},
    )


def test_a_graph_holds_its_large_weights_and_gives_them_back_unchanged():
    weight = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    graph = Graph(_model(weight))
    held = {init.name for init in graph.model.graph.initializer if is_held(init)}
    assert held == {"w"}
    assert graph.model.ByteSize() < 1000
    np.testing.assert_array_equal(graph.constants["w"], weight)
    np.testing.assert_array_equal(graph.constants["b"], np.ones(16, np.float32))
    assert graph.shapes.get("w") == (64, 16)  # headers keep dims and type
    assert graph.dtypes["w"] == np.float32


def test_file_ranges_are_memory_mapped_read_only_views(tmp_path):
    data = np.arange(5000, dtype=np.float32)
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\x00" * 12 + data.tobytes())  # an offset that is not page-aligned
    store = WeightStore()
    header = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[50, 100])
    store.add_range(header, FileRange(path, 12, data.nbytes))
    array = store.array("w")
    assert array.shape == (50, 100) and not array.flags.writeable
    np.testing.assert_array_equal(array.reshape(-1), data)
    release_pages(array)  # pages go; the values are read again from the file
    np.testing.assert_array_equal(array.reshape(-1), data)
    assert store.nbytes() == data.nbytes


def test_only_large_tensors_of_plain_types_are_held():
    assert worth_holding_array(np.zeros((32, 32), np.float32))
    assert not worth_holding_array(np.zeros(8, np.float32))
    assert not worth_holding_array(np.zeros(4096, np.int64))  # shape-sized integers stay
    assert worth_holding_array(np.zeros(20000, np.int64))
    assert not worth_holding_array(np.array(["a" * 5000], dtype=object))


def _resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads Linux's /proc")
def test_released_pages_leave_the_resident_set(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(np.ones(8 << 20, np.float32).tobytes())  # 32 MB
    store = WeightStore()
    header = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[8 << 20])
    store.add_range(header, FileRange(path, 0, 32 << 20))
    array = store.array("w")
    before = _resident_mb()
    assert array.sum() == 8 << 20  # every page read
    read = _resident_mb()
    release_pages(array[::2])  # any view of the weight finds its memory map
    assert read - before > 24
    assert read - _resident_mb() > 24
