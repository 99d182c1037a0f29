"""Test helpers: build ONNX graphs by hand, convert them, run MindSpore and onnxruntime."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime

IR_VERSION = 8  # onnxruntime 1.31 reads IR <= 13; onnx 1.23 would write 14


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[tuple[str, np.dtype, Sequence]],
    outputs: Sequence[tuple[str, np.dtype, Sequence | None]],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
    extra_opsets: dict[str, int] | None = None,
) -> onnx.ModelProto:
    """A model from nodes; inputs/outputs as (name, numpy dtype, shape or None)."""

    def info(name, dtype, shape):
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape
        )

    graph = helper.make_graph(
        list(nodes),
        "test_graph",
        [info(*spec) for spec in inputs],
        [info(*spec) for spec in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()],
    )
    opsets = [helper.make_opsetid("", opset)]
    opsets += [helper.make_opsetid(d, v) for d, v in (extra_opsets or {}).items()]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="mindconverter-tests")
    model.ir_version = IR_VERSION
    return model


def single_op_model(
    op_type: str,
    input_shapes: dict[str, Sequence[int]],
    output_count: int = 1,
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
    dtype=np.float32,
    input_names: list[str] | None = None,
    **attrs,
) -> onnx.ModelProto:
    """One node reading the given inputs (graph inputs then initializers) with float outputs."""
    initializers = initializers or {}
    names = input_names or list(input_shapes) + list(initializers)
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(output_count)], **attrs)
    return make_model(
        [node],
        [(name, dtype, shape) for name, shape in input_shapes.items()],
        [(f"y{i}", dtype, None) for i in range(output_count)],
        initializers,
        opset=opset,
    )


def random_feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Random values for every graph input that is not an initializer."""
    rng = np.random.default_rng(seed)
    weights = {init.name for init in model.graph.initializer}
    feeds = {}
    for inp in model.graph.input:
        if inp.name in weights:
            continue
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)
        if np.dtype(dtype).kind == "f":
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
        elif np.dtype(dtype).kind == "b":
            feeds[inp.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[inp.name] = rng.integers(0, 5, shape).astype(dtype)
    return feeds


def convert_and_run(
    model: onnx.ModelProto,
    tmp_path: Path,
    feeds: dict | None = None,
    graph_mode: bool = False,
    **convert_kwargs,
):
    """Save, convert and run a model; returns (result, mindspore outputs, onnxruntime outputs)."""
    tmp_path = Path(tmp_path)
    tmp_path.mkdir(parents=True, exist_ok=True)
    model_file = tmp_path / "model.onnx"
    onnx.save(model, str(model_file))
    feeds = feeds if feeds is not None else random_feeds(model)
    result = convert(model_file, output=tmp_path / "out", **convert_kwargs)
    names = [inp.name for inp in model.graph.input if inp.name in feeds]
    ms_outputs = run_mindspore(
        result.script_path, result.checkpoint_path, [feeds[n] for n in names], graph_mode=graph_mode
    )
    output_names = [out.name for out in model.graph.output]
    ort_outputs = run_onnxruntime(model, feeds, output_names)
    return result, ms_outputs, ort_outputs


def assert_matches(
    model: onnx.ModelProto,
    tmp_path: Path,
    feeds: dict | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    graph_mode: bool = False,
    **convert_kwargs,
):
    """Convert ``model`` and check every output of MindSpore equals onnxruntime's; returns the result."""
    result, ms_outputs, ort_outputs = convert_and_run(
        model, tmp_path, feeds, graph_mode, **convert_kwargs
    )
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    assert_outputs_match(ms_outputs, ort_outputs, rtol, atol)
    return result


def assert_outputs_match(
    ms_outputs, ort_outputs, rtol: float = 1e-4, atol: float = 1e-5, same_dtype: bool = False
) -> None:
    """MindSpore's outputs equal onnxruntime's: same shapes (and dtypes when asked), integers
    and booleans exactly, floats within the tolerances."""
    assert len(ms_outputs) == len(ort_outputs)
    for got, want in zip(ms_outputs, ort_outputs):
        assert got.shape == want.shape, (got.shape, want.shape)
        if same_dtype:
            assert got.dtype == want.dtype, (got.dtype, want.dtype)
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def convert_fully(model: onnx.ModelProto, tmp_path: Path, **convert_kwargs):
    """Save and convert ``model`` once (to run it on several inputs); every operator must convert."""
    model_file = Path(tmp_path) / "m.onnx"
    onnx.save(model, str(model_file))
    result = convert(model_file, output=Path(tmp_path) / "out", **convert_kwargs)
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    return result


def assert_runs_like_onnxruntime(
    model: onnx.ModelProto, result, feeds: dict, graph_mode: bool = False, **tolerances
) -> None:
    """Run a converted model (see :func:`convert_fully`) on ``feeds`` in MindSpore and in
    onnxruntime and compare every output (:func:`assert_outputs_match`)."""
    ort_outputs = run_onnxruntime(model, feeds, [out.name for out in model.graph.output])
    ms_outputs = run_mindspore(
        result.script_path, result.checkpoint_path, list(feeds.values()), graph_mode=graph_mode
    )
    assert_outputs_match(ms_outputs, ort_outputs, **tolerances)


__all__ = [
    "TensorProto",
    "assert_matches",
    "assert_outputs_match",
    "assert_runs_like_onnxruntime",
    "convert_fully",
    "convert_and_run",
    "make_model",
    "random_feeds",
    "single_op_model",
]
