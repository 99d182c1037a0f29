"""Hostile inputs, round three: lying weight files, results that would land on an input, files
cut short while they are read, NUL bytes in paths, a failed --overwrite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import mindconverter.outputs.atomic as atomic
from mindconverter import convert
from mindconverter.errors import MindConverterError
from mindconverter.graph.weight_store import FileRange, WeightStore, stable_chunks
from mindconverter.outputs.checkpoint import write_safetensors
from mindconverter.reweight import reconvert_weights
from mindconverter.reweight.weights_file import read_weights
from tests.helpers import assert_runs_like_onnxruntime, convert_fully, make_model, random_feeds
from tests.robustness.util import error_of, run_cli, save, snapshot, valid_model

REPO = Path(__file__).resolve().parents[2]


def _safetensors_file(header: dict | bytes, data: bytes) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data


def _f32(begin: int, end: int, count: int) -> dict:
    return {"dtype": "F32", "shape": [count], "data_offsets": [begin, end]}


@pytest.mark.parametrize(
    "content, reason",
    [
        (_safetensors_file({"a": _f32(0, 8, 2), "b": _f32(4, 12, 2)}, bytes(12)), "overlap"),
        (_safetensors_file({"a": _f32(0, 4, 1), "b": _f32(0, 4, 1)}, bytes(4)), "overlap"),
        (_safetensors_file({"a": _f32(4, 8, 1)}, bytes(8)), "gap"),
        (_safetensors_file({"a": _f32(0, 4, 1)}, bytes(8)), "belong to no tensor"),
        (
            _safetensors_file(
                b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                b'"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
                bytes(4),
            ),
            "twice",
        ),
        (
            _safetensors_file({"a": {**_f32(0, 4, 1), "shape": [2**62, 2**62]}}, bytes(4)),
            "does not match",
        ),
        (_safetensors_file({"a": {**_f32(0, 4, 1), "shape": [1.0]}}, bytes(4)), "malformed"),
        (_safetensors_file({"a": {**_f32(0, 4, 1), "extra": 1}}, bytes(4)), "malformed"),
        (_safetensors_file(b"[" * 50_000 + b"]" * 50_000, b""), "not JSON"),
    ],
    ids=[
        "overlapping",
        "shared-range",
        "gap",
        "trailing-bytes",
        "duplicate-name",
        "overflowing-shape",
        "float-dim",
        "unknown-field",
        "deep-json",
    ],
)
def test_lying_safetensors_files_are_refused(tmp_path, content, reason):
    path = tmp_path / "w.safetensors"
    path.write_bytes(content)
    with pytest.raises(MindConverterError) as info:
        read_weights(path)
    assert info.value.key == "FILE_CORRUPT" and reason in str(info.value)


def test_the_safetensors_library_refuses_what_we_refuse(tmp_path):
    """The library's own rules agree on the overlap (it keeps the last of duplicate names)."""
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "w.safetensors"
    path.write_bytes(_safetensors_file({"a": _f32(0, 8, 2), "b": _f32(4, 12, 2)}, bytes(12)))
    with pytest.raises(Exception):  # noqa: B017 - SafetensorError
        safetensors_numpy.load_file(str(path))


def test_a_safetensors_file_cut_short_after_its_header_is_read(tmp_path):
    path = tmp_path / "w.safetensors"
    with open(path, "wb") as stream:
        write_safetensors(stream, [("a", np.arange(64, dtype=np.float32))])
    tensors = read_weights(path)
    os.truncate(path, path.stat().st_size - 16)
    with pytest.raises(MindConverterError) as info:
        tensors["a"]
    assert info.value.key == "FILE_CHANGED"


@pytest.mark.parametrize("dims", [[5, 3], [2**31, 2**31, 4], [-1]], ids=["more", "huge", "neg"])
def test_onnx_weights_whose_dims_lie(tmp_path, dims):
    model = valid_model()
    weight = model.graph.initializer[0]
    del weight.dims[:]
    weight.dims.extend(dims)
    path = save(model, tmp_path / "new.onnx")
    with pytest.raises(MindConverterError) as info:
        read_weights(path)
    assert info.value.key == "FILE_CORRUPT" and "\n" not in str(info.value)


def _weights(folder: Path, name: str) -> Path:
    state = {"w": np.arange(12, dtype=np.float32).reshape(4, 3), "b": np.ones(3, np.float32)}
    path = folder / name
    with open(path, "wb") as stream:
        write_safetensors(stream, list(state.items()))
    return path


@pytest.mark.parametrize("name", ["m.safetensors", "hard link"])
def test_a_reconversion_never_writes_over_its_weights_file(tmp_path, name):
    out = tmp_path / "out"
    result = convert(save(valid_model(), tmp_path / "m.onnx"), output=out)
    if name == "hard link":
        weights = _weights(tmp_path, "new.safetensors")
        result.checkpoint_path.unlink()
        os.link(weights, result.checkpoint_path)  # m.ckpt is another name of the weights file
    else:
        weights = _weights(out, name)  # what a checkpoint past 2 GB would be named
    before = snapshot(tmp_path)
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(weights, result.weight_map_path, out, overwrite=True)
    assert info.value.key == "OUTPUT_IS_INPUT"
    assert snapshot(tmp_path) == before


def test_a_reconversion_never_writes_over_its_weight_map(tmp_path):
    out = tmp_path / "out"
    result = convert(save(valid_model(), tmp_path / "m.onnx"), output=out)
    weights = _weights(tmp_path, "new.safetensors")
    weight_map = tmp_path / "map.json"
    os.link(result.weight_map_path, weight_map)
    result.checkpoint_path.unlink()
    os.link(weight_map, result.checkpoint_path)  # m.ckpt is another name of the weight map
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(weights, weight_map, out, overwrite=True)
    assert info.value.key == "OUTPUT_IS_INPUT"


def _model_with_external_data(folder: Path, location: str | None) -> Path:
    """A convolution whose weight is in ``location`` (None: in the model file)."""
    weight = np.arange(16 * 4 * 9, dtype=np.float32).reshape(16, 4, 3, 3) / 576
    model = make_model(  # a convolution keeps its weight as it is: the checkpoint maps the file
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
        [("x", np.float32, [1, 4, 8, 8])],
        [("y", np.float32, [1, 16, 8, 8])],
        {"w": weight},
    )
    path = folder / "m.onnx"
    if location is None:
        return save(model, path)
    onnx.save_model(
        model, str(path), save_as_external_data=True, location=location, size_threshold=0
    )
    return path


@pytest.mark.parametrize("location", ["m.ckpt", "m.py", "report_of_m.txt"])
def test_a_conversion_never_writes_over_its_external_data(tmp_path, location):
    model = _model_with_external_data(tmp_path, location)
    before = snapshot(tmp_path)
    code, _, stderr = run_cli(["--model_file", model, "--output", tmp_path, "--overwrite"])
    assert (code, error_of(stderr)[0]) == (2, "OUTPUT_IS_INPUT")
    assert snapshot(tmp_path) == before


def test_a_conversion_never_writes_over_its_model_through_a_hard_link(tmp_path):
    model = save(valid_model(), tmp_path / "m.onnx")
    out = tmp_path / "out"
    out.mkdir()
    os.link(model, out / "m.ckpt")
    before = snapshot(tmp_path)
    code, _, stderr = run_cli(["--model_file", model, "--output", out, "--overwrite"])
    assert (code, error_of(stderr)[0]) == (2, "OUTPUT_IS_INPUT")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("argument", ["model_file", "output", "report"])
def test_a_nul_byte_in_a_conversion_path(tmp_path, argument):
    paths = {"model_file": save(valid_model(), tmp_path / "m.onnx"), "output": tmp_path / "o"}
    paths[argument] = f"{paths.get(argument, tmp_path)}\x00.x"
    with pytest.raises(MindConverterError) as info:
        convert(**paths)
    assert info.value.key == "BAD_ARGUMENT" and "\x00" not in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


@pytest.mark.parametrize("argument", ["weights_file", "weight_map_file", "output"])
def test_a_nul_byte_in_a_reconversion_path(tmp_path, argument):
    result = convert(save(valid_model(), tmp_path / "m.onnx"), output=tmp_path / "out")
    paths = {
        "weights_file": _weights(tmp_path, "new.safetensors"),
        "weight_map_file": result.weight_map_path,
        "output": tmp_path / "o",
    }
    paths[argument] = f"{paths[argument]}\x00x"
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(**paths)
    assert info.value.key == "BAD_ARGUMENT" and "\x00" not in str(info.value)
    assert not (tmp_path / "o").exists()


def test_a_failed_overwrite_leaves_no_old_file(tmp_path, monkeypatch):
    """Setting the previous report aside fails: no hidden ``.old`` stays beside it, and every
    previous result is back under its name."""
    model = save(valid_model(), tmp_path / "m.onnx")
    out, report = tmp_path / "out", tmp_path / "rep"
    assert run_cli(["--model_file", model, "--output", out, "--report", report])[0] == 0
    before = snapshot(tmp_path)
    real = os.replace

    def refuse_report(source, target):
        if Path(source).name == "report_of_m.txt":
            raise OSError(16, "Device or resource busy")
        real(source, target)

    monkeypatch.setattr(atomic.os, "replace", refuse_report)
    argv = ["--model_file", model, "--output", out, "--report", report, "--overwrite"]
    code, _, stderr = run_cli(argv)
    assert (code, error_of(stderr)[0]) == (1, "OUTPUT_NOT_WRITABLE")
    assert snapshot(tmp_path) == before


_TRUNCATING_RUN = """
import os, sys
import mindconverter.outputs.checkpoint as ckpt
from mindconverter.cli import main

victim, real = sys.argv[1], ckpt.write_checkpoint

def truncate_then_write(stream, parameters, progress=None):
    os.truncate(victim, 0)  # the file is cut short after loading, before the weights are read
    return real(stream, parameters, progress)

ckpt.write_checkpoint = truncate_then_write
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["m.onnx", "m.data", "small"])
def test_a_file_cut_short_during_conversion(tmp_path, victim):
    """Once SIGBUS killed the process (the weights were memory-mapped): now a coded error, exit
    code 1 and no staged file left. A small model, read whole, is checked unchanged too."""
    if victim == "small":
        model = save(valid_model(), tmp_path / "m.onnx")
        victim = "m.onnx"
    else:
        model = _model_with_external_data(tmp_path, "m.data" if victim == "m.data" else None)
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_TRUNCATING_RUN), str(tmp_path / victim)]
        + ["--model_file", str(model), "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 1, run.stderr
    assert error_of(run.stderr)[0] == "FILE_CHANGED"
    assert not out.exists()
    expected = {"m.onnx", "m.data"} if victim == "m.data" else {"m.onnx"}
    assert {p.name for p in tmp_path.iterdir()} == expected  # nothing staged beside the model


def test_the_weight_store_refuses_a_file_that_changed(tmp_path):
    """Mapping checks the file first; the checkpoint writer's pread-based copy of a mapped
    weight checks it again (the mapped pages themselves are never touched here)."""
    data = np.arange(4096, dtype=np.float32)
    path = tmp_path / "w.bin"
    path.write_bytes(data.tobytes())
    header = numpy_helper.from_array(data[:0], "w")
    del header.dims[:]
    header.dims.extend([4096])
    store = WeightStore()
    store.add_range(header, FileRange(path, 0, data.nbytes))
    mapped = store.array("w")
    assert b"".join(stable_chunks(mapped.view(np.uint8).reshape(-1))) == data.tobytes()
    os.truncate(path, 100)
    for attempt in (lambda: store.array("w"), lambda: list(stable_chunks(mapped.view(np.uint8)))):
        with pytest.raises(MindConverterError) as info:
            attempt()
        assert info.value.key == "FILE_CHANGED"


@pytest.mark.parametrize(
    "shape", ["1099511627776", "1024,1024,1024,2", "99999999999999999999,1"], ids=str
)
def test_an_example_shape_is_bounded_before_anything_is_allocated(tmp_path, shape):
    """``--shape 2**40`` once made --verify try a 32 TiB allocation."""
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [("x", np.float32, ["n"])],
        [("y", np.float32, None)],
    )
    path = save(model, tmp_path / "m.onnx")
    argv = ["--model_file", path, "--shape", shape, "--output", tmp_path / "o", "--verify"]
    code, _, stderr = run_cli(argv)
    assert (code, error_of(stderr)[0]) == (2, "BAD_SHAPE")
    assert not (tmp_path / "o").exists()


def test_declared_dims_whose_product_overflows_int64(tmp_path):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [("x", np.float32, [2**40, 2**40, 2**40])],
        [("y", np.float32, None)],
    )
    code, _, stderr = run_cli(
        ["--model_file", save(model, tmp_path / "m.onnx"), "--output", tmp_path / "o"]
    )
    assert (code, error_of(stderr)[0]) == (1, "ABSURD_DIMENSION")


def _variadic(op_type: str, count: int) -> onnx.ModelProto:
    """``op_type`` over ``count`` operands cycling through three inputs that broadcast."""
    names = ["a", "b", "c"]
    attributes = {"axis": 0} if op_type == "Concat" else {}
    return make_model(
        [helper.make_node(op_type, [names[i % 3] for i in range(count)], ["y"], **attributes)],
        [("a", np.float32, [2, 3]), ("b", np.float32, [1, 3]), ("c", np.float32, [2, 3])],
        [("y", np.float32, None)],
    )


@pytest.mark.parametrize("op_type", ["Sum", "Max", "Min", "Mean", "Concat"])
def test_five_thousand_operands_convert(tmp_path, op_type):
    """1,200 operands once hit Python's recursion limit (a left-nested expression)."""
    path = save(_variadic(op_type, 5000), tmp_path / "m.onnx")
    code, _, stderr = run_cli(["--model_file", path, "--output", tmp_path / "o"])
    assert code == 0, stderr
    compile((tmp_path / "o" / "m.py").read_text(), "m.py", "exec")


@pytest.mark.slow
@pytest.mark.parametrize("op_type", ["Sum", "Max", "Mean"])
def test_many_operands_compute_what_onnxruntime_does(tmp_path, op_type):
    model = _variadic(op_type, 1500)
    result = convert_fully(model, tmp_path)
    assert_runs_like_onnxruntime(model, result, random_feeds(model), rtol=1e-4, atol=1e-3)


@pytest.mark.slow
def test_a_three_thousand_node_deep_chain_converts_and_runs(tmp_path):
    nodes, previous = [], "x"
    for index in range(3000):
        op_type = ("Neg", "Relu", "Sigmoid")[index % 3]
        nodes.append(helper.make_node(op_type, [previous], [f"t{index}"]))
        previous = f"t{index}"
    nodes.append(helper.make_node("Identity", [previous], ["y"]))
    model = make_model(nodes, [("x", np.float32, [1, 4])], [("y", np.float32, [1, 4])])
    result = convert_fully(model, tmp_path)
    assert_runs_like_onnxruntime(model, result, random_feeds(model))


def _nested_loops(outer_trip: int, inner_trip: int, inner_from_main: bool = False):
    """Loop(outer_trip) { Loop(inner_trip) { v + 1 } } over x: y = x + outer * inner."""
    value = helper.make_tensor_value_info
    inner_body = helper.make_graph(
        [
            helper.make_node("Add", ["v_in", "one"], ["v_out"]),
            helper.make_node("Identity", ["ci_in"], ["ci_out"]),
        ],
        "inner",
        [
            value("j", onnx.TensorProto.INT64, []),
            value("ci_in", onnx.TensorProto.BOOL, []),
            value("v_in", onnx.TensorProto.FLOAT, [1, 4]),
        ],
        [
            value("ci_out", onnx.TensorProto.BOOL, []),
            value("v_out", onnx.TensorProto.FLOAT, [1, 4]),
        ],
    )
    count = numpy_helper.from_array(np.array(inner_trip, np.int64))
    outer_nodes = [] if inner_from_main else [helper.make_node("Constant", [], ["m"], value=count)]
    outer_body = helper.make_graph(
        outer_nodes
        + [
            helper.make_node("Loop", ["m", "", "u_in"], ["u_out"], body=inner_body),
            helper.make_node("Identity", ["c_in"], ["c_out"]),
        ],
        "outer",
        [
            value("i", onnx.TensorProto.INT64, []),
            value("c_in", onnx.TensorProto.BOOL, []),
            value("u_in", onnx.TensorProto.FLOAT, [1, 4]),
        ],
        [value("c_out", onnx.TensorProto.BOOL, []), value("u_out", onnx.TensorProto.FLOAT, [1, 4])],
    )
    constants = {"n": np.array(outer_trip, np.int64), "one": np.array(1.0, np.float32)}
    if inner_from_main:
        constants["m"] = np.array(inner_trip, np.int64)
    return make_model(
        [helper.make_node("Loop", ["n", "", "x"], ["y"], body=outer_body)],
        [("x", np.float32, [1, 4])],
        [("y", np.float32, [1, 4])],
        constants,
    )


@pytest.mark.parametrize("inner_from_main", [False, True], ids=["inner-constant", "outer-scope"])
def test_a_loop_nest_past_the_step_budget_is_left_unconverted(tmp_path, inner_from_main):
    """4096 x 4096 fixed iterations once became a network running 16.7 million Python steps:
    now the Loop is an unconverted placeholder with a note saying why, found in bounded time."""
    path = save(_nested_loops(4096, 4096, inner_from_main), tmp_path / "m.onnx")
    result = convert(path, output=tmp_path / "o")
    assert [site.op_type for site in result.unconverted] == ["Loop"]
    assert "16777216 body calls" in result.unconverted[0].reason
    assert "16777216 body calls" in result.report_path.read_text()


@pytest.mark.slow
def test_a_small_loop_nest_still_computes_what_onnxruntime_does(tmp_path):
    model = _nested_loops(3, 5)
    result = convert_fully(model, tmp_path)
    assert_runs_like_onnxruntime(model, result, random_feeds(model))


@pytest.mark.slow
def test_a_node_name_with_thousands_of_scopes(tmp_path):
    """The module hierarchy recovered from names is cut at 64 levels: 3,000 scopes once hit the
    recursion limit while building the blocks."""
    deep = "/" + "/".join(f"m{index}" for index in range(3000))
    model = make_model(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], name=f"{deep}/Conv"),
            helper.make_node("Relu", ["c"], ["y"], name=f"{deep}/Relu"),
        ],
        [("x", np.float32, [1, 2, 4, 4])],
        [("y", np.float32, None)],
        {"w": np.arange(4, dtype=np.float32).reshape(2, 2, 1, 1) - 1.5},
    )
    result = convert_fully(model, tmp_path)
    assert_runs_like_onnxruntime(model, result, random_feeds(model))


def _chain_tree(depth: int, cyclic: bool = False) -> onnx.ModelProto:
    """A TreeEnsemble whose one tree is a chain: node i sends x<split to a leaf, else to i+1."""
    last = depth - 1
    false_ids = [index + 1 for index in range(last)] + [depth]
    node = helper.make_node(
        "TreeEnsemble",
        ["x"],
        ["y"],
        domain="ai.onnx.ml",
        nodes_splits=numpy_helper.from_array(np.linspace(-1, 1, depth).astype(np.float32)),
        nodes_featureids=[0] * depth,
        nodes_modes=numpy_helper.from_array(np.zeros(depth, np.uint8)),
        nodes_truenodeids=list(range(depth)),
        nodes_falsenodeids=[0] * depth if cyclic else false_ids,
        nodes_trueleafs=[1] * depth,
        nodes_falseleafs=[0] * depth if cyclic else [0] * last + [1],
        leaf_targetids=[0] * (depth + 1),
        leaf_weights=numpy_helper.from_array(np.arange(depth + 1, dtype=np.float32)),
        tree_roots=[0],
        n_targets=1,
    )
    return make_model(
        [node],
        [("x", np.float32, (4, 1))],
        [("y", np.float32, None)],
        extra_opsets={"ai.onnx.ml": 5},
    )


def test_a_three_thousand_level_tree_converts(tmp_path):
    """Tree paths were walked recursively: a 3,000-level tree hit the recursion limit."""
    result = convert(save(_chain_tree(3000), tmp_path / "m.onnx"), output=tmp_path / "o")
    assert result.unconverted == []


@pytest.mark.parametrize("both_branches", [False, True], ids=["one-branch", "both-branches"])
def test_a_cyclic_tree_is_left_unconverted_in_bounded_time(tmp_path, both_branches):
    """Both branches back to the root once doubled the paths at every level until the depth
    bound: 2^40 walks."""
    model = _chain_tree(40, cyclic=True)
    if both_branches:
        attributes = {attr.name: attr for attr in model.graph.node[0].attribute}
        del attributes["nodes_trueleafs"].ints[:]
        attributes["nodes_trueleafs"].ints.extend([0] * 40)
        del attributes["nodes_truenodeids"].ints[:]
        attributes["nodes_truenodeids"].ints.extend([0] * 40)
    result = convert(save(model, tmp_path / "m.onnx"), output=tmp_path / "o")
    assert [site.op_type for site in result.unconverted] == ["TreeEnsemble"]


def test_verification_inputs_are_bounded_before_they_are_drawn(tmp_path):
    """A static input of 3 x 20000 x 20000 would be drawn in float64 (9.6 GB) by --verify."""
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [("x", np.float32, [3, 20000, 20000])],
        [("y", np.float32, [3, 20000, 20000])],
    )
    path = save(model, tmp_path / "m.onnx")
    code, _, stderr = run_cli(["--model_file", path, "--output", tmp_path / "o", "--verify"])
    assert (code, error_of(stderr)[0]) == (1, "VERIFY_FAILED")
    assert not (tmp_path / "o").exists()
