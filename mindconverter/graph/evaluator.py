"""The one evaluator of ONNX nodes at conversion time (onnx's reference implementation).

Folding and unrolling run single nodes on known values (:func:`evaluate_node`); pattern lifting
runs a short chain on a probe input to check what it computes (:func:`evaluate_chain`).
"""

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


def evaluate_chain(
    nodes: list[onnx.NodeProto],
    x_name: str,
    x_value: np.ndarray,
    out: str,
    initializers: list[onnx.TensorProto],
    opset: int,
) -> np.ndarray | None:
    """Run ``nodes`` on ``x_value`` fed as ``x_name`` and return value ``out``; None on failure."""
    return evaluate_nodes(nodes, {x_name: x_value}, out, initializers, opset)


def evaluate_nodes(
    nodes: list[onnx.NodeProto],
    feeds: dict[str, np.ndarray],
    out: str,
    initializers: list[onnx.TensorProto],
    opset: int,
) -> np.ndarray | None:
    """Run ``nodes`` on ``feeds`` (value name -> array) and return value ``out``; None on
    failure."""
    graph = helper.make_graph(
        [_without_metadata(node) for node in nodes],
        "chain",
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape)
            )
            for name, value in feeds.items()
        ],
        [helper.make_tensor_value_info(out, 0, None)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    try:
        outputs = ReferenceEvaluator(model).run(None, feeds)
        return np.asarray(list(outputs)[0])
    except Exception:  # the chain is not what it seemed: the caller keeps it as it is
        return None


def _without_metadata(node: onnx.NodeProto) -> onnx.NodeProto:
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    del copy.metadata_props[:]
    return copy
