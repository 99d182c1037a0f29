"""A module applied several times in a row with shared weights (ALBERT's layer) is one block
called in a loop; its weights are written once; onnxruntime's numbers at two shapes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model

F32 = np.float32
RNG = np.random.default_rng(7)


def _application(index: int, source: str, weights: tuple[str, str], mask: str) -> list:
    """One call of ``encoder.layers.0``: a Linear, a masked ReLU; TorchScript names a repeated
    call's leaf modules ``fc_1``, ``fc_2``..."""
    suffix = f"_{index}" if index else ""
    scope = f"/encoder/layers.0/fc{suffix}"
    out = f"h{index + 1}"
    return [
        helper.make_node("MatMul", [source, weights[0]], [f"mm{index}"], name=f"{scope}/MatMul"),
        helper.make_node("Add", [f"mm{index}", weights[1]], [f"fc{index}"], name=f"{scope}/Add"),
        helper.make_node(
            "Mul", [f"fc{index}", mask], [f"masked{index}"], name=f"/encoder/layers.0/Mul{suffix}"
        ),
        helper.make_node(
            "Relu", [f"masked{index}"], [out], name=f"/encoder/layers.0/act{suffix}/Relu"
        ),
    ]


def _shared_layer_model(
    times: int = 3, same_values: bool = True, chained: bool = True, mask: str = "mask"
):
    """x -> encoder.proj -> encoder.layers.0 applied ``times`` times -> y."""
    nodes = [helper.make_node("MatMul", ["x", "w_in"], ["h0"], name="/encoder/proj/MatMul")]
    weights = {"w_in": RNG.standard_normal((4, 8)).astype(F32)}
    weights["w"] = RNG.standard_normal((8, 8)).astype(F32) * 0.5
    weights["b"] = RNG.standard_normal(8).astype(F32)
    for index in range(times):
        names = ("w", "b")
        if index and not same_values:
            names = (f"w{index}", "b")  # a weight of its own: a different layer
            weights[f"w{index}"] = RNG.standard_normal((8, 8)).astype(F32)
        source = f"h{index}" if chained or not index else "h0"
        nodes += _application(index, source, names, mask)
    last = f"h{times}"
    if not chained:
        nodes.append(helper.make_node("Add", ["h1", last], ["y"], name="/head/Add"))
    else:
        nodes.append(helper.make_node("Identity", [last], ["y"], name="/head/Identity"))
    return make_model(
        nodes,
        [("x", F32, ["batch", "sequence", 4]), ("mask", F32, ["batch", "sequence", 1])],
        [("y", F32, ["batch", "sequence", 8])],
        weights,
    )


def _feeds(batch: int, sequence: int) -> dict:
    return {
        "x": RNG.standard_normal((batch, sequence, 4)).astype(F32),
        "mask": (RNG.random((batch, sequence, 1)) > 0.3).astype(F32),
    }


def _converted_at_two_shapes(model, tmp_path):
    result = assert_matches(model, tmp_path, _feeds(2, 3), shape=["2,3,4", "2,3,1"])
    assert_matches(model, tmp_path / "other", _feeds(1, 5), shape=["2,3,4", "2,3,1"])
    return result


@pytest.mark.parametrize("times", [2, 3])
def test_a_shared_layer_applied_in_a_row_is_one_cell_called_in_a_loop(tmp_path, times):
    result = _converted_at_two_shapes(_shared_layer_model(times), tmp_path)
    code = result.script_path.read_text()
    assert f"for _ in range({times}):" in code
    assert "self.layers = nn.CellList([" in code and "self.layers[0](" in code
    assert code.count("nn.Dense(") == 2 and ".weight = self." not in code  # proj, the layer
    import mindspore as ms

    names = list(ms.load_checkpoint(str(result.checkpoint_path)))
    assert sorted(names) == [
        "encoder.layers.0.fc.bias",
        "encoder.layers.0.fc.weight",
        "encoder.proj.weight",
    ]


def _scoped(node, *scopes: str):
    """A node as the dynamo exporter leaves it: no path in its name, its module scopes in
    metadata (the same for every call of a shared module)."""
    node.name = ""
    entry = node.metadata_props.add()
    entry.key, entry.value = "pkg.torch.onnx.name_scopes", repr(["", *scopes, "op"])
    return node


def test_dynamo_calls_of_a_shared_layer_share_their_scope_and_the_mask_computed_once(tmp_path):
    """Every call has the same scopes; the mask the exporter computed once for every call is
    filed under the first and runs before the loop."""
    layer = ("encoder", "encoder.layers", "encoder.layers.0")
    nodes = [
        _scoped(helper.make_node("MatMul", ["x", "w_in"], ["h0"]), "encoder", "encoder.proj"),
        _scoped(helper.make_node("Cast", ["mask_in"], ["mask"], to=1), *layer),
    ]
    for index in range(3):
        for node in _application(index, f"h{index}", ("w", "b"), "mask"):
            leaf = node.name.split("/")[-2].split("_")[0]
            nodes.append(_scoped(node, *layer, f"encoder.layers.0.{leaf}"))
    nodes.append(_scoped(helper.make_node("Identity", ["h3"], ["y"]), "head"))
    weights = {
        "w_in": RNG.standard_normal((4, 8)).astype(F32),
        "w": RNG.standard_normal((8, 8)).astype(F32) * 0.5,
        "b": RNG.standard_normal(8).astype(F32),
    }
    model = make_model(
        nodes,
        [("x", F32, ["batch", "sequence", 4]), ("mask_in", np.bool_, ["batch", "sequence", 1])],
        [("y", F32, ["batch", "sequence", 8])],
        weights,
    )
    feeds = {n: v for n, v in _feeds(2, 3).items() if n == "x"}
    feeds["mask_in"] = RNG.random((2, 3, 1)) > 0.3
    result = assert_matches(model, tmp_path, feeds, shape=["2,3,4", "2,3,1"])
    code = result.script_path.read_text()
    loop = code.index("for _ in range(3):")
    assert code.index("ops.cast(mask_in") < loop  # before the loop, once
    assert code.count("ops.cast(") == 1 and code.count("nn.Dense(") == 2


@pytest.mark.parametrize(
    "same_values, chained, mask", [(False, True, "mask"), (True, False, "mask"), (True, True, "h0")]
)
def test_different_weights_or_unchained_calls_stay_separate(tmp_path, same_values, chained, mask):
    """A layer with weights of its own is another layer; the same layer applied to two inputs
    that do not follow each other (a Siamese pair) is not a loop, nor are calls that each read
    the first call's input besides the previous result."""
    model = _shared_layer_model(3, same_values=same_values, chained=chained, mask=mask)
    code = _converted_at_two_shapes(model, tmp_path).script_path.read_text()
    assert "range(" not in code
