"""The script as a whole: generated from a graph, formatted, placeholders located."""

from __future__ import annotations

import ast

import numpy as np
from onnx import helper

from mindconverter.codegen.script import format_code, render_script
from mindconverter.graph import Graph
from mindconverter.graph.specs import detect_inputs
from mindconverter.mappers.registry import default_registry
from mindconverter.passes.context import PassContext
from mindconverter.passes.pipeline import PIPELINE, run_passes
from tests.helpers import make_model


def _rendered(nodes, inputs, outputs, initializers=None, extra_opsets=None):
    graph = Graph(make_model(nodes, inputs, outputs, initializers, extra_opsets=extra_opsets))
    context = PassContext(default_registry())
    context.input_specs = detect_inputs(graph.model)
    run_passes(graph, context, PIPELINE)
    return render_script(graph, context.mapped, context.tree, "model.onnx")


def test_a_linear_layer_becomes_a_dense_cell_with_its_checkpoint_entries():
    weight = np.arange(12, dtype=np.float32).reshape(3, 4)
    rendered = _rendered(
        [helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"], transB=1)],
        [("x", np.float32, [2, 4])],
        [("y", np.float32, [2, 3])],
        {"fc.weight": weight, "fc.bias": np.zeros(3, np.float32)},
    )
    ast.parse(rendered.code)
    assert "class MindSporeModel(nn.Cell):" in rendered.code
    assert "self.fc = nn.Dense(in_channels=4, out_channels=3)" in rendered.code
    assert {entry.name: entry.source for entry in rendered.entries} == {
        "fc.weight": "fc.weight",
        "fc.bias": "fc.bias",
    }
    np.testing.assert_array_equal(rendered.entries[0].array, weight)
    assert rendered.input_names == ["x"] and not rendered.unconverted


def test_an_unconverted_operator_is_located_in_construct():
    rendered = _rendered(
        [helper.make_node("Mystery", ["x"], ["y"], domain="com.example")],
        [("x", np.float32, [2])],
        [("y", np.float32, [2])],
        extra_opsets={"com.example": 1},
    )
    (site,) = rendered.unconverted
    line = rendered.code.splitlines()[site.line - 1]
    assert line[site.column :].startswith(f"self.{site.attribute}(")
    assert "def construct(" in "\n".join(rendered.code.splitlines()[: site.line])


def test_format_code_formats_and_leaves_broken_code_alone():
    assert format_code("x = ( 1,2 )\n") == "x = (1, 2)\n"
    assert format_code("def (:\n") == "def (:\n"


def test_derived_sizes_read_as_python_in_the_docstring():
    """Symbolic inference's ``floor(h/7)`` is shown as ``(h // 7)``; anything unsafe in a
    docstring still becomes ``_`` (dimension names come from the model file)."""
    from mindconverter.codegen.script import _dims_text

    shape = (1, "floor(floor(n/5)/2) - 1", "floor(height/7)*floor(width/7) + 1", 'a"""\nb')
    text = _dims_text(shape)
    assert text.startswith("1, ((n // 5) // 2) - 1, (height // 7)*(width // 7) + 1, ")
    assert '"' not in text and "\n" not in text


def test_sizes_nothing_names_read_as_unknown_in_the_docstring():
    """``unk__3`` (onnx) and ``LayerNormalizationlast_hidden_state_dim_1`` (the TorchScript
    exporter) are names made up for sizes known only at run time: shown as ``?``."""
    from mindconverter.codegen.script import _dims_text

    shape = ("batch", "unk__3", "LayerNormalizationlast_hidden_state_dim_1", "floor(h/7)", 16)
    assert _dims_text(shape) == "batch, ?, ?, (h // 7), 16"


def test_a_convolution_length_reads_as_python_in_the_docstring():
    """``floor(a/4 - 9/4)`` is ``(a - 9) // 4``; a floor with no exact rewrite stays a floor."""
    from mindconverter.codegen.script import _dims_text

    shape = ("floor(floor(samples/5)/4 - 9/4) + 1", "floor(x/4 + 1/2)")
    assert _dims_text(shape) == "(((samples // 5) - 9) // 4) + 1, floor(x/4 + 1/2)"


_FOLDED = "/model/Constant_3_output_0"  # a table the exporter folded: no source name


def test_a_static_exports_mask_is_a_named_table_never_a_nested_literal():
    causal = np.tril(np.ones((1, 1, 3, 3), dtype=bool))
    rendered = _rendered(
        [
            helper.make_node("Where", [_FOLDED, "scores", "hidden"], ["masked"]),
            helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        ],
        [("scores", np.float32, [1, 1, 3, 3])],
        [("probs", np.float32, [1, 1, 3, 3])],
        {_FOLDED: causal, "hidden": np.array(-np.inf, np.float32)},
    )
    assert "self.causal_mask = Parameter(" in rendered.code
    assert "ops.where(self.causal_mask, scores, -math.inf)" in rendered.code
    assert "[[True" not in rendered.code  # 9 values: small enough to inline, but a table
    (entry,) = rendered.entries
    assert entry.name == "causal_mask"
    np.testing.assert_array_equal(entry.array, causal)
