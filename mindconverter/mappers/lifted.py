"""Layers lifted from decomposed chains by ``mindconverter.patterns`` (domain ``ai.mindconverter``):
LayerNorm -> nn.LayerNorm, Gelu -> nn.GELU, Linear -> nn.Dense."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from ..graph.weight_steps import Transpose
from .base import (
    Call,
    Cell,
    DType,
    Input,
    Item,
    Lit,
    NodeContext,
    Unpack,
    Unsupported,
    Weight,
    normalize_axis,
)
from .common import bias_removed, zero_bias
from .normalization import group_norm_cell
from .registry import mapper
from .syntax import ops

DOMAIN = "ai.mindconverter"


def _param(ctx: NodeContext, index: int, shape: tuple[int, ...], fill: float, dtype) -> Weight:
    """Input ``index`` broadcast to ``shape`` (the exporter may store it as [1, 1, C]), or ``fill``."""
    if not ctx.has_input(index):
        return Weight(
            np.full(shape, fill, dtype=dtype),
            "",
            "ones (no scale in the source)" if fill else "zeros (no bias in the source)",
        )
    value = ctx.require_const(index, "the LayerNorm parameter")
    trimmed = value.reshape(value.shape[-len(shape) :] if value.ndim > len(shape) else value.shape)
    full = np.broadcast_to(trimmed, shape).astype(value.dtype)
    transform = (
        ""
        if full.shape == value.shape
        else f"reshape/broadcast {list(value.shape)} to {list(shape)}"
    )
    return ctx.weight(index, np.ascontiguousarray(full), transform)


@mapper("LayerNorm", domain=DOMAIN)
def layer_norm(ctx: NodeContext):
    """LayerNorm (a lifted ReduceMean/Sub/Pow/.../Mul/Add chain) -> nn.LayerNorm over x.shape[axis:]."""
    shape = ctx.require_shape(0)
    axis = normalize_axis(int(ctx.attr("axis", -1)), len(shape))
    eps = float(ctx.attr("epsilon", 1e-5))
    normalized_shape = tuple(int(d) for d in shape[axis:])
    dtype = ctx.input_dtype(0) or np.dtype(np.float32)
    weights = {
        "gamma": _param(ctx, 1, normalized_shape, 1.0, dtype),
        "beta": _param(ctx, 2, normalized_shape, 0.0, dtype),
    }
    kwargs = {
        "normalized_shape": normalized_shape,
        "begin_norm_axis": axis,
        "begin_params_axis": axis,
        "epsilon": eps,
    }
    return Cell("nn.LayerNorm", kwargs=kwargs, args=[Input(0)], weights=weights, role="norm")


@mapper("GroupNorm", domain=DOMAIN)
def group_norm(ctx: NodeContext):
    """GroupNorm (a lifted reshape/InstanceNormalization/reshape/Mul/Add chain) -> nn.GroupNorm
    with the chain's per-channel weight and bias."""
    channels = int(ctx.require_shape(0)[1])
    weights = []
    for index in (1, 2):  # (C, 1, 1) as the chain multiplied and added them
        value = ctx.require_const(index, "the GroupNorm parameter")
        transform = f"reshape {list(value.shape)} to [{channels}]"
        weights.append(ctx.weight(index, value.reshape(-1), transform))
    eps = float(ctx.attr("epsilon", 1e-5))
    return group_norm_cell(ctx, int(ctx.attr("num_groups")), weights[0], weights[1], eps)


@mapper("Unbind", domain=DOMAIN)
def unbind(ctx: NodeContext):
    """Unbind (a Split or Slices of each position, each squeezed) -> ``ops.unbind``."""
    axis = int(ctx.attr("axis", 0))
    return Unpack(ops.unbind(Input(0), dim=Lit(axis)), ctx.num_outputs)


@mapper("Gelu", domain=DOMAIN)
def gelu(ctx: NodeContext):
    """Gelu (a lifted Erf or Tanh formula) -> nn.GELU(approximate=False/True)."""
    approximate = ctx.attr("approximate", "none")
    if isinstance(approximate, bytes):
        approximate = approximate.decode()
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"Gelu approximate={approximate!r}")
    return Cell(
        "nn.GELU", kwargs={"approximate": approximate == "tanh"}, args=[Input(0)], role="gelu"
    )


@mapper("Silu", domain=DOMAIN)
def silu(ctx: NodeContext):
    """Silu (a lifted ``x * sigmoid(x)``) -> ops.silu."""
    return ops.silu(Input(0))


@mapper("SlicedLinear", domain=DOMAIN)
def sliced_linear(ctx: NodeContext):
    """SlicedLinear (x @ w[a:b].T + bias[a:b], a projection with part of a packed weight) ->
    ``ops.dense(x, w[a:b], bias[a:b])``, the parameters held whole."""
    start, end = int(ctx.attr("start")), int(ctx.attr("end"))
    shape = ctx.input_shape(1)
    last = shape is not None and end == shape[0]
    rows = (slice(start or None, None if last else end),)
    return ops.dense(Input(0), Item(Input(1), rows), Item(Input(2), rows))


@mapper("Linear", domain=DOMAIN)
def linear(ctx: NodeContext):
    """Linear (a lifted MatMul + Add with constant weight [in, out] and bias; ``transB=1``: a
    Gemm's weight [out, in]) -> nn.Dense."""
    weight = ctx.require_const(1, "the Linear weight")
    if weight.ndim != 2:
        raise Unsupported("the Linear weight must be 2-D")
    if int(ctx.attr("transB", 0)):
        out_features, in_features = (int(d) for d in weight.shape)
        weights = {"weight": ctx.weight(1, weight)}
    else:
        in_features, out_features = (int(d) for d in weight.shape)
        weights = {"weight": ctx.weight(1, weight.T, (Transpose((1, 0)),))}
    kwargs = {"in_channels": in_features, "out_channels": out_features}
    if ctx.has_input(2):
        bias = ctx.require_const(2, "the Linear bias")
        flat = bias.reshape(out_features)
        weights["bias"] = ctx.weight(
            2,
            flat,
            "" if bias.shape == flat.shape else f"reshape {list(bias.shape)} to [{out_features}]",
        )
    elif bias_removed(ctx):  # zero at export, not after new weights
        weights["bias"] = zero_bias(ctx, out_features, weight.dtype)
    else:
        kwargs["has_bias"] = False
    return Cell("nn.Dense", kwargs=kwargs, args=[Input(0)], weights=weights, role="fc")


@mapper("RMSNorm", domain=DOMAIN)
def rms_norm(ctx: NodeContext):
    """RMSNorm (a lifted Pow/ReduceMean/Add/Sqrt/Div/Mul chain over the last axis) -> the
    script's RMSNorm cell (MindSpore's ``ops.rms_norm`` has no CPU kernel)."""
    shape = ctx.require_shape(0)
    hidden = int(shape[-1])
    dtype = ctx.input_dtype(0) or np.dtype(np.float32)
    weights = {"weight": _param(ctx, 1, (hidden,), 1.0, dtype)}
    kwargs = {"hidden_size": hidden, "eps": float(ctx.attr("epsilon", 1e-6))}
    return Cell("RMSNorm", kwargs=kwargs, args=[Input(0)], weights=weights, role="norm")


@mapper("RotateHalf", domain=DOMAIN)
def rotate_half(ctx: NodeContext):
    """RotateHalf (a lifted Slice/Slice/Neg/Concat over the last axis) -> the script's
    ``rotate_half`` function, as rotary position embeddings are written."""
    return Call("rotate_half", [Input(0)])


@mapper("Roll", domain=DOMAIN)
def roll(ctx: NodeContext):
    """Roll (a lifted Concat of the two Slices ``x[s:]``, ``x[:s]`` of an axis, or several such
    turns in a row) -> the script's ``roll(x, shifts, dims)``, as ``torch.roll`` is called."""
    shifts, dims = tuple(ctx.attr("shifts")), tuple(ctx.attr("dims"))
    return Call("roll", [Input(0), Lit(shifts), Lit(dims)])


@mapper("FullLike", domain=DOMAIN)
def full_like(ctx: NodeContext):
    """FullLike (a lifted ``ConstantOfShape(Shape(x))``) -> ``ops.full_like(x, value)``."""
    value = ctx.attr("value")
    array = np.asarray(value if isinstance(value, np.ndarray) else numpy_helper.to_array(value))
    array = array.reshape(-1)
    item = array[0].item()
    return ops.full_like(Input(0), Lit(item), dtype=DType(array.dtype.name))


@mapper("RotateEveryTwo", domain=DOMAIN)
def rotate_every_two(ctx: NodeContext):
    """RotateEveryTwo (a lifted turn of interleaved pairs) -> the script's ``rotate_every_two``
    function, as GPT-J's rotary embeddings are written."""
    return Call("rotate_every_two", [Input(0)])


@mapper("ApplyRotaryPair", domain=DOMAIN)
def apply_rotary_pair(ctx: NodeContext):
    """ApplyRotaryPair (the query's and the key's ApplyRotary by the same tables) -> the
    script's ``apply_rotary_pos_emb(q, k, cos, sin)``, as mindnlp writes it; the interleaved
    kind (GPT-J) calls ``apply_interleaved_rotary_pos_emb``."""
    rotary_dim = ctx.attr("rotary_dim", 0)
    kind = "interleaved_" if ctx.attr("interleaved", 0) else ""
    if rotary_dim:  # GPT-NeoX and GPT-J turn only the first features of each head
        args = [Input(0), Input(1), Input(2), Input(3), int(rotary_dim)]
        return Unpack(Call(f"apply_partial_{kind}rotary_pos_emb", args), 2)
    args = [Input(0), Input(1), Input(2), Input(3)]
    unsqueeze_dim = ctx.attr("unsqueeze_dim", None)
    if unsqueeze_dim is not None:  # the tables unsqueezed for the heads inside the call
        return Unpack(Call("apply_rotary_pos_emb", args, {"unsqueeze_dim": int(unsqueeze_dim)}), 2)
    return Unpack(Call(f"apply_{kind}rotary_pos_emb", args), 2)


@mapper("ApplyRotary", domain=DOMAIN)
def apply_rotary(ctx: NodeContext):
    """ApplyRotary (a lifted ``x * cos + RotateHalf(x) * sin``) -> ``x * cos + rotate_half(x) * sin``
    (``rotate_every_two`` for the interleaved kind)."""
    turn = "rotate_every_two" if ctx.attr("interleaved", 0) else "rotate_half"
    turned = Call(turn, [Input(0)]) * Input(2)
    return Input(0) * Input(1) + turned
