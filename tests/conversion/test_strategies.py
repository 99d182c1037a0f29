"""The ordered conversion strategies: dynamic dimensions kept first, fixed sizes when that
leaves fewer operators unconverted."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.conversion.settings import ConversionSettings
from mindconverter.conversion.strategies import FIXED_SIZES, STRATEGIES, strategies_for
from mindconverter.mappers.base import Call, Input, Unsupported
from mindconverter.mappers.registry import default_registry

FIXED_NOTE = "Every dimension is kept at the --shape sizes"


def _relu_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def _static_only_registry():
    """A user mapper for Relu that, like some real mappers, needs every size known."""
    registry = default_registry()

    @registry.register("Relu")
    def relu_with_known_sizes(ctx):
        if not all(isinstance(d, int) for d in ctx.input_shape(0)):
            raise Unsupported("needs every size known")
        return Call("ops.relu", [Input(0)])

    return registry


def test_the_order_is_dynamic_first_then_fixed_sizes():
    registry = default_registry()
    assert [s.dynamic for s in STRATEGIES] == [True, False]
    assert strategies_for(ConversionSettings(registry)) == STRATEGIES
    assert strategies_for(ConversionSettings(registry, dynamic=False)) == (FIXED_SIZES,)


def test_fixed_sizes_are_chosen_when_they_convert_more(tmp_path):
    model = _relu_model(tmp_path / "m.onnx")
    said = []
    result = convert(
        model, shape="3,4", output=tmp_path / "o", registry=_static_only_registry(), log=said.append
    )
    assert result.fully_converted
    assert FIXED_NOTE in result.report_path.read_text()
    assert any(FIXED_NOTE in message for message in said)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, [x])
    np.testing.assert_array_equal(got, np.maximum(x, 0))


def test_dynamic_dimensions_stay_when_everything_converts(tmp_path):
    result = convert(_relu_model(tmp_path / "m.onnx"), shape="3,4", output=tmp_path / "o")
    assert result.fully_converted and FIXED_NOTE not in result.report_path.read_text()
    for batch in (3, 5):
        x = np.full((batch, 4), -2.0, np.float32)
        (got,) = run_mindspore(result.script_path, result.checkpoint_path, [x])
        assert got.shape == (batch, 4) and not got.any()
