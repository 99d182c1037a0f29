"""tf2onnx handlers that write TensorFlow's and TFLite's GELU in ONNX operators.

Keras 3's exact GELU is ``0.5 * x * erfc(-x * c)`` (``c = 1/sqrt(2)``) and a TFLite model holds one
``GELU`` builtin; tf2onnx has no handler for ``Erfc`` or ``TFL_GELU`` and passes them through under
their TF names, which onnxruntime (and so ``--verify``) cannot run, and around which tf2onnx's
transpose optimizer keeps NHWC transposes. These handlers, given to tf2onnx as
``custom_op_handlers``, emit ``0.5 * x * (1 + erf(x * c))`` instead (``erfc(-z) = 1 + erf(z)``),
or its tanh form for ``approximate=1``; the GELU lifting pass then makes it one ``ops.gelu``.
Only Keras' ``erfc(Neg(x) * c)`` form is rewritten: other ``Erfc`` uses keep the TF op (mapped to
``ops.erfc``), since ``1 - erf`` would lose the function's small tail values.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import helper


def _const(ctx, value: float, like: str) -> str:
    """A scalar constant of ``like``'s dtype in the tf2onnx graph ``ctx``; returns its output."""
    from tf2onnx import utils  # only with tf2onnx present

    dtype = helper.tensor_dtype_to_np_dtype(ctx.get_dtype(like))
    return ctx.make_const(utils.make_name("gelu_const"), np.array(value, dtype)).output[0]


def _scaled_by_negation(ctx, name: str) -> str | None:
    """For ``name = Neg(x) * c`` (either order), a new ``x * c``; else None."""
    product = ctx.get_node_by_output(name)
    if product is None or product.type != "Mul":
        return None
    for negated, scale in (
        (product.input[0], product.input[1]),
        (product.input[1], product.input[0]),
    ):
        neg = ctx.get_node_by_output(negated)
        if neg is not None and neg.type == "Neg":
            return ctx.make_node("Mul", [neg.input[0], scale]).output[0]
    return None


def _finish_gelu(ctx, core, x: str) -> None:
    """Turn the consumers of ``core`` (erf or tanh of the scaled input) into ``0.5 * x * (1 + core)``."""
    plus_one = ctx.insert_new_node_on_output(
        "Add", core.output[0], inputs=[core.output[0], _const(ctx, 1.0, x)]
    )
    half_x = ctx.make_node("Mul", [x, _const(ctx, 0.5, x)]).output[0]
    ctx.insert_new_node_on_output("Mul", plus_one.output[0], inputs=[plus_one.output[0], half_x])


def _erfc_handler(ctx, node, name, args):
    """Keras' ``erfc(Neg(x) * c)`` -> ``1 + erf(x * c)``; any other Erfc stays a TF ``Erfc``."""
    scaled = _scaled_by_negation(ctx, node.input[0])
    if scaled is None:
        return
    node.type = "Erf"
    ctx.replace_input(node, node.input[0], scaled, 0)
    ctx.insert_new_node_on_output(
        "Add", node.output[0], inputs=[node.output[0], _const(ctx, 1.0, scaled)]
    )


def _tflite_gelu_handler(ctx, node, name, args):
    """TFLite ``GELU`` -> ``0.5 * x * (1 + erf(x / sqrt(2)))``, or the tanh form when approximate."""
    x = node.input[0]
    approximate = bool(node.get_attr_value("approximate", 0))
    if approximate:
        cube = ctx.make_node("Mul", [ctx.make_node("Mul", [x, x]).output[0], x]).output[0]
        inner = ctx.make_node("Mul", [cube, _const(ctx, 0.044715, x)]).output[0]
        inner = ctx.make_node("Add", [x, inner]).output[0]
        scaled = ctx.make_node("Mul", [inner, _const(ctx, math.sqrt(2.0 / math.pi), x)]).output[0]
    else:
        scaled = ctx.make_node("Mul", [x, _const(ctx, 1.0 / math.sqrt(2.0), x)]).output[0]
    for attr in list(node.attr):
        del node.attr[attr]
    node.type = "Tanh" if approximate else "Erf"
    ctx.replace_input(node, x, scaled, 0)
    _finish_gelu(ctx, node, x)


def gelu_op_handlers() -> dict:
    """``custom_op_handlers`` for tf2onnx's converters (``{op type: (handler, args)}``)."""
    return {"Erfc": (_erfc_handler, []), "TFL_GELU": (_tflite_gelu_handler, [])}


__all__ = ["gelu_op_handlers"]
