"""Shapes of onnxruntime operators (com.microsoft) its symbolic shape inference has no rule for.

onnxruntime's graph optimizations and quantizers write FusedMatMul, FusedGemm, FusedConv,
DynamicQuantizeMatMul, MatMulIntegerToFloat, QGemm, QAttention and QLinear* operators that its
own symbolic shape inference cannot follow, so every dimension after them would be unknown. The
rules below give their outputs' shapes from their inputs' (symbolic) shapes and are added to one
inference run's dispatcher.
"""

from __future__ import annotations

from functools import partial

from onnx import TensorProto, helper

from .node import node_attribute


def _elem_type(inference, name: str, default: int) -> int:
    info = inference.known_vi_.get(name) if name else None
    if info is None or not info.type.tensor_type.elem_type:
        return default
    return info.type.tensor_type.elem_type


def _set(inference, node, shape, elem_type: int, index: int = 0) -> None:
    info = inference.known_vi_[node.output[index]]
    info.CopyFrom(helper.make_tensor_value_info(node.output[index], elem_type, list(shape)))


def _transposed(shape: list, flag: int) -> list:
    return shape[:-2] + [shape[-1], shape[-2]] if flag and len(shape) >= 2 else shape


def _matmul_shape(inference, node, trans_a: int = 0, trans_b: int = 0) -> list:
    left = _transposed(list(inference._get_shape(node, 0)), trans_a)
    right = _transposed(list(inference._get_shape(node, 1)), trans_b)
    if len(left) < 2 or len(right) < 2:
        raise ValueError("a matrix product of vectors")
    batch = inference._broadcast_shapes(left[:-2], right[:-2])
    return [*batch, left[-2], right[-1]]


def fused_matmul(inference, node) -> None:
    shape = _matmul_shape(
        inference, node, node_attribute(node, "transA", 0), node_attribute(node, "transB", 0)
    )
    _set(inference, node, shape, _elem_type(inference, node.input[0], TensorProto.FLOAT))


def float_matmul(inference, node) -> None:
    """DynamicQuantizeMatMul, MatMulIntegerToFloat: a float matrix product."""
    _set(inference, node, _matmul_shape(inference, node), TensorProto.FLOAT)


def _gemm_shape(inference, node, a: int, b: int) -> list:
    left, right = inference._get_shape(node, a), inference._get_shape(node, b)
    rows = left[1] if node_attribute(node, "transA", 0) else left[0]
    cols = right[0] if node_attribute(node, "transB", 0) else right[1]
    return [rows, cols]


def fused_gemm(inference, node) -> None:
    shape = _gemm_shape(inference, node, 0, 1)
    _set(inference, node, shape, _elem_type(inference, node.input[0], TensorProto.FLOAT))


def q_gemm(inference, node) -> None:
    """QGemm: float output, or the type of y_zero_point when it is quantized."""
    quantized = len(node.input) > 7 and node.input[7]
    elem_type: int = TensorProto.FLOAT
    if quantized:
        zero = node.input[8] if len(node.input) > 8 else ""
        elem_type = _elem_type(inference, zero, TensorProto.UINT8)
    _set(inference, node, _gemm_shape(inference, node, 0, 3), elem_type)


def q_attention(inference, node) -> None:
    """QAttention: (batch, sequence, value hidden size) in float."""
    shape = inference._get_shape(node, 0)
    sizes = node_attribute(node, "qkv_hidden_sizes", None)
    hidden = int(sizes[2]) if sizes else inference._get_shape(node, 1)[1] // 3
    _set(inference, node, [shape[0], shape[1], hidden], TensorProto.FLOAT)


def same_as_input(inference, node) -> None:
    """QLinear element-wise operators: the input's shape and type."""
    shape = inference._get_shape(node, 0)
    _set(inference, node, shape, _elem_type(inference, node.input[0], TensorProto.UINT8))


def q_global_average_pool(inference, node) -> None:
    shape = list(inference._get_shape(node, 0))
    spatial = (
        range(1, len(shape) - 1)
        if node_attribute(node, "channels_last", 0)
        else range(2, len(shape))
    )
    for axis in spatial:
        shape[axis] = 1
    _set(inference, node, shape, _elem_type(inference, node.input[0], TensorProto.UINT8))


def q_concat(inference, node) -> None:
    """QLinearConcat: inputs from index 2 in (X, scale, zero point) triples, joined on axis."""
    shapes = [list(inference._get_shape(node, i)) for i in range(2, len(node.input), 3)]
    axis = int(node_attribute(node, "axis", 0)) % len(shapes[0])
    if not all(isinstance(shape[axis], int) for shape in shapes):
        raise ValueError("a concatenation along a dynamic axis")
    shape = list(shapes[0])
    shape[axis] = sum(s[axis] for s in shapes)
    _set(inference, node, shape, _elem_type(inference, node.input[2], TensorProto.UINT8))


def q_embed_layer_norm(inference, node) -> None:
    """QEmbedLayerNormalization: (batch, sequence, hidden) floats and a mask index per row."""
    ids = list(inference._get_shape(node, 0))
    hidden = inference._get_shape(node, 2)[1]
    _set(inference, node, [*ids, hidden], TensorProto.FLOAT)
    if len(node.output) > 1 and node.output[1]:
        _set(inference, node, ids[:1], TensorProto.INT32, 1)


def quantized_lstm(inference, node) -> None:
    """DynamicQuantizeLSTM: ONNX LSTM's outputs, Y [seq, directions, batch, hidden], Y_h and Y_c
    [directions, batch, hidden]."""
    seq, batch = inference._get_shape(node, 0)[:2]
    directions = (
        2
        if node_attribute(node, "direction", b"forward") in (b"bidirectional", "bidirectional")
        else 1
    )
    hidden = int(node_attribute(node, "hidden_size", 0))
    elem_type = _elem_type(inference, node.input[0], TensorProto.FLOAT)
    shapes = [[seq, directions, batch, hidden], [directions, batch, hidden]]
    for index, name in enumerate(node.output):
        if name:
            _set(inference, node, shapes[min(index, 1)], elem_type, index)


def q_average_pool(pool, inference, node) -> None:
    """QLinearAveragePool: AveragePool's shape rule, in the input's integer type."""
    pool(node)
    elem_type = _elem_type(inference, node.input[0], TensorProto.UINT8)
    inference.known_vi_[node.output[0]].type.tensor_type.elem_type = elem_type


def matmul_bnb4(inference, node) -> None:
    """MatMulBnb4: A's leading dimensions, then N."""
    shape = list(inference._get_shape(node, 0))
    shape[-1] = int(node_attribute(node, "N", 0))
    _set(inference, node, shape, _elem_type(inference, node.input[0], TensorProto.FLOAT))


def add_contrib_shape_handlers(inference) -> None:
    """Add the rules above to a ``SymbolicShapeInference``'s dispatcher (where it has none)."""
    handlers = getattr(inference, "dispatcher_", None)
    if not isinstance(handlers, dict):
        return
    rules = {
        "FusedMatMul": fused_matmul,
        "FusedGemm": fused_gemm,
        "DynamicQuantizeMatMul": float_matmul,
        "MatMulIntegerToFloat": float_matmul,
        "QGemm": q_gemm,
        "QAttention": q_attention,
        "MatMulBnb4": matmul_bnb4,
        "DynamicQuantizeLSTM": quantized_lstm,
        "QEmbedLayerNormalization": q_embed_layer_norm,
        "QLinearSigmoid": same_as_input,
        "QLinearLeakyRelu": same_as_input,
        "QLinearSoftmax": same_as_input,
        "QLinearGlobalAveragePool": q_global_average_pool,
        "QLinearConcat": q_concat,
    }
    for op_type, rule in rules.items():
        handlers.setdefault(op_type, partial(rule, inference))
    if "Conv" in handlers:
        handlers.setdefault("FusedConv", handlers["Conv"])
    if "AveragePool" in handlers:
        rule = partial(q_average_pool, handlers["AveragePool"], inference)
        handlers.setdefault("QLinearAveragePool", rule)
