"""Numbered layers run as one loop, with each layer's own KV cache zipped in and gathered out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mindconverter import convert

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_decoder_layers_with_their_own_caches_run_in_one_loop(tmp_path, exporter):
    result = convert(
        FIXTURES / f"tiny_llama_{exporter}.onnx",
        shape=["1,3", "2,1,2,2,4", "2,1,2,2,4"],
        output=tmp_path,
        verify=True,
    )
    code = result.script_path.read_text()
    assert "self.layers[" not in code
    assert "in zip(\n            self.layers, past_key_per_layer, past_value_per_layer\n" in code
    assert "present_key_per_layer += (present_key,)" in code
    assert result.verification["ok"] and len(result.verification["shapes"]) == 2


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_layers_taking_one_of_two_values_in_turn_run_in_one_loop(tmp_path, exporter):
    """Gemma-2's sliding and global layers alternate their masks: the masks are zipped in
    as a tuple with one item per layer, repeats and all."""
    result = convert(
        FIXTURES / f"tiny_alternating_masks_{exporter}.onnx",
        shape=["2,5,8"],
        output=tmp_path,
        verify=True,
    )
    code = result.script_path.read_text()
    assert "self.layers[" not in code
    masks = re.search(r"\n        (\w+) = \((\w+), (\w+), (\w+), (\w+)\)\n", code)
    assert masks is not None, code
    near, far = masks.group(2), masks.group(3)
    assert near != far and masks.group(4, 5) == (near, far)
    assert f"in zip(self.layers, {masks.group(1)}):" in code
    assert result.verification["ok"] and len(result.verification["shapes"]) == 2


def _layers_with_a_first_one_unnormed():
    """Three layers ``h + relu(norm(h) @ w + side)``; layer 0 has no norm (ModernBERT's first
    layer: an ``nn.Identity`` in the source, no node in the export) and reads ``side`` as is,
    the others read ``-side``, which the exporter computes in the first layer that reads it
    (the parent's statement then runs between layer 0 and layer 1)."""
    import numpy as np
    from onnx import helper

    from tests.helpers import make_model

    rng = np.random.default_rng(0)
    nodes, constants, current, side = [], {}, "x", "enc"
    for layer in range(3):
        scope = f"/encoder/layers.{layer}"
        normed = current
        if layer == 1:  # computed where the first layer that reads it runs
            nodes.append(helper.make_node("Neg", ["enc"], ["side"], name=f"{scope}/proj/Neg"))
            side = "side"
        if layer:
            constants[f"scale{layer}"] = rng.standard_normal(4).astype(np.float32)
            constants[f"shift{layer}"] = rng.standard_normal(4).astype(np.float32)
            normed = f"n{layer}"
            nodes.append(
                helper.make_node(
                    "LayerNormalization",
                    [current, f"scale{layer}", f"shift{layer}"],
                    [normed],
                    epsilon=1e-5,
                    name=f"{scope}/attn_norm/LayerNormalization",
                )
            )
        constants[f"w{layer}"] = rng.standard_normal((4, 4)).astype(np.float32)
        nodes += [
            helper.make_node(
                "MatMul", [normed, f"w{layer}"], [f"m{layer}"], name=f"{scope}/proj/MatMul"
            ),
            helper.make_node("Add", [f"m{layer}", side], [f"a{layer}"], name=f"{scope}/Add"),
            helper.make_node("Relu", [f"a{layer}"], [f"r{layer}"], name=f"{scope}/act/Relu"),
            helper.make_node("Add", [current, f"r{layer}"], [f"h{layer}"], name=f"{scope}/Add_1"),
        ]
        current = f"h{layer}"
    nodes.append(helper.make_node("Tanh", [current], ["y"], name="/head/Tanh"))
    return make_model(
        nodes,
        [("x", np.float32, ["batch", 4]), ("enc", np.float32, ["batch", 4])],
        [("y", np.float32, None)],
        constants,
    )


def test_a_layer_without_an_optional_norm_runs_in_the_loop_with_an_identity(tmp_path):
    """Layers whose texts differ by a norm only the later ones hold are one class that builds
    ``nn.Identity()`` in its place; the parent's statement between the layers runs before
    them, so the three run in one loop, matching onnxruntime at two batch sizes."""
    import numpy as np

    from tests.helpers import assert_matches, assert_runs_like_onnxruntime

    model = _layers_with_a_first_one_unnormed()
    rng = np.random.default_rng(1)
    feeds = {name: rng.standard_normal((2, 4)).astype(np.float32) for name in ("x", "enc")}
    result = assert_matches(model, tmp_path, feeds, shape=["x=2,4", "enc=2,4"])
    code = result.script_path.read_text()
    assert "if has_attn_norm\n            else nn.Identity()" in code, code
    flat = " ".join(code.split())
    assert "nn.CellList( [Layer(), Layer(has_attn_norm=True), Layer(has_attn_norm=True)] )" in flat
    assert "self.layers[" not in code and "in zip(self.layers, " in code, code
    assert "if self.attn_norm is not None" not in code
    other = {name: rng.standard_normal((5, 4)).astype(np.float32) for name in ("x", "enc")}
    assert_runs_like_onnxruntime(model, result, other)


def _stages_whose_every_result_the_head_reads():
    """A backbone of three stages ``h = relu(h @ w)`` whose results a head concatenates
    (Segformer's decode head reads every stage's feature map)."""
    import numpy as np
    from onnx import helper

    from tests.helpers import make_model

    rng = np.random.default_rng(2)
    nodes, constants, current = [], {}, "x"
    for stage in range(3):
        scope = f"/backbone/stages.{stage}"
        constants[f"w{stage}"] = rng.standard_normal((4, 4)).astype(np.float32)
        nodes += [
            helper.make_node(
                "MatMul", [current, f"w{stage}"], [f"m{stage}"], name=f"{scope}/proj/MatMul"
            ),
            helper.make_node("Relu", [f"m{stage}"], [f"h{stage}"], name=f"{scope}/act/Relu"),
        ]
        current = f"h{stage}"
    nodes.append(helper.make_node("Concat", ["h0", "h1", "h2"], ["y"], axis=1, name="/head/Concat"))
    return make_model(
        nodes, [("x", np.float32, ["batch", 4])], [("y", np.float32, None)], constants
    )


def test_layers_whose_every_result_is_read_later_run_in_a_loop_that_gathers_them(tmp_path):
    """Stages feeding each other whose results a head reads too run in one loop that gathers
    every result into a tuple, which the backbone returns whole; the numbers match
    onnxruntime at two batch sizes."""
    import numpy as np

    from tests.helpers import assert_matches, assert_runs_like_onnxruntime

    model = _stages_whose_every_result_the_head_reads()
    rng = np.random.default_rng(3)
    result = assert_matches(
        model, tmp_path, {"x": rng.standard_normal((2, 4)).astype(np.float32)}, shape=["2,4"]
    )
    code = result.script_path.read_text()
    assert "self.stages[" not in code, code
    assert (
        "all_hidden_states = ()\n        for layer in self.stages:\n"
        "            x = layer(x)\n            all_hidden_states += (x,)\n"
        "        return all_hidden_states\n"
    ) in code, code
    assert_runs_like_onnxruntime(
        model, result, {"x": rng.standard_normal((5, 4)).astype(np.float32)}
    )


def _projections_of_their_own_inputs():
    """A head projecting each of three inputs with a layer of its own (Segformer's decode head:
    one projection per stage's feature map), then concatenating the projections."""
    import numpy as np
    from onnx import helper

    from tests.helpers import make_model

    rng = np.random.default_rng(4)
    nodes, constants = [], {}
    for index in range(3):
        scope = f"/head/linear_projections.{index}"
        constants[f"w{index}"] = rng.standard_normal((4, 3)).astype(np.float32)
        nodes += [
            helper.make_node(
                "MatMul", [f"x{index}", f"w{index}"], [f"m{index}"], name=f"{scope}/proj/MatMul"
            ),
            helper.make_node("Tanh", [f"m{index}"], [f"p{index}"], name=f"{scope}/act/Tanh"),
        ]
    nodes.append(helper.make_node("Concat", ["p0", "p2", "p1"], ["y"], axis=1, name="/head/Concat"))
    inputs = [(f"x{index}", np.float32, ["batch", 4]) for index in range(3)]
    return make_model(nodes, inputs, [("y", np.float32, None)], constants)


def test_layers_each_applied_to_an_input_of_its_own_run_in_a_loop(tmp_path):
    """Layers of one class that read no layer's result, each applied once to an input of its
    own, run in one loop zipping the list with the inputs and gathering the results, read
    later as ``outputs[i]``; the numbers match onnxruntime at two batch sizes."""
    import numpy as np

    from tests.helpers import assert_matches, assert_runs_like_onnxruntime

    model = _projections_of_their_own_inputs()
    rng = np.random.default_rng(5)

    def feeds(batch):
        return {f"x{i}": rng.standard_normal((batch, 4)).astype(np.float32) for i in range(3)}

    result = assert_matches(model, tmp_path, feeds(2), shape=["x0=2,4", "x1=2,4", "x2=2,4"])
    code = result.script_path.read_text()
    assert "self.linear_projections[" not in code, code
    assert (
        "        linear_projection_outputs = ()\n"
        "        for layer, x in zip(self.linear_projections, (x0, x1, x2)):\n"
        "            linear_projection_outputs += (layer(x),)\n"
    ) in code, code
    assert "linear_projection_outputs[2]" in code, code
    assert_runs_like_onnxruntime(model, result, feeds(5))
