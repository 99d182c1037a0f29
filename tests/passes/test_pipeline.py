"""The pipeline: its order, and repeating passes until the graph settles."""

from __future__ import annotations

import numpy as np
from onnx import helper

from mindconverter.passes.pipeline import PIPELINE, UntilSettled, run_passes
from tests.helpers import make_model
from tests.passes.passes_util import graph_and_context


def test_the_order_of_the_stages():
    names = [step.name for step in PIPELINE]
    order = [
        "select inputs and outputs",
        "fix input shapes",
        "lift decomposed layers",
        "check the graph",
        "map operators",
        "recover the module hierarchy",
    ]
    assert [names.index(name) for name in order] == sorted(names.index(name) for name in order)
    assert any(isinstance(step, UntilSettled) for step in PIPELINE)


def test_until_settled_repeats_and_tidies_only_after_changes():
    calls = []
    budget = iter([True, True, False])

    def changing(graph, context):
        calls.append("change")
        return next(budget)

    def tidy(graph, context):
        calls.append("tidy")
        return True

    UntilSettled("test", passes=(changing,), tidy=(tidy,)).apply(None, None)
    assert calls == ["change", "tidy", "change", "tidy", "change"]


def test_the_whole_pipeline_maps_and_recovers():
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="/act/Relu"),
            helper.make_node("Neg", ["r"], ["y"]),
        ],
        [("x", np.float32, [2])],
        [("y", np.float32, [2])],
    )
    graph, context = graph_and_context(model)
    run_passes(graph, context)
    assert [m.node.op_type for m in context.mapped] == ["Relu", "Neg"]
    assert all(m.converted for m in context.mapped)
    assert context.tree is not None and len(context.tree.nodes()) == 2
