"""The one node evaluator: runs a single ONNX node on known values at conversion time."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator


def evaluate_node(
    node: onnx.NodeProto, opsets: dict[str, int], values: list
) -> list[np.ndarray] | None:
    """Run one node with onnx's reference evaluator; None if it cannot be run."""
    feeds = {}
    renamed = helper.make_node(node.op_type, [], list(node.output), domain=node.domain)
    renamed.attribute.extend(node.attribute)
    for index, (name, value) in enumerate(zip(node.input, values)):
        if not name:
            renamed.input.append("")
            continue
        alias = f"in{index}"
        renamed.input.append(alias)
        feeds[alias] = value
    # A bare node would run at the evaluator's newest opset: wrap it in a model importing ours.
    graph = helper.make_graph(
        [renamed],
        "fold",
        [
            helper.make_tensor_value_info(
                alias, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype), None
            )
            for alias, v in feeds.items()
        ],
        [helper.make_empty_tensor_value_info(out) for out in node.output if out],
    )
    single = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()]
    )
    try:
        evaluator = ReferenceEvaluator(single)
        results = evaluator.run(None, feeds)
    except Exception:  # any failure means: keep the node, compute it at run time
        return None
    return [np.asarray(r) for r in results]


NOT_FOLDABLE = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
    "If",
    "Loop",
    "Scan",
    "SequenceConstruct",
    "SequenceEmpty",
    "SequenceInsert",
    "SequenceAt",
    "SplitToSequence",
    "ConcatFromSequence",
    "Optional",
    "OptionalGetElement",
    "OptionalHasElement",
}
