"""Source of the small helpers that converted scripts may need.

This module is never imported by the converter (it needs MindSpore): the converter reads it as
text, and copies into a converted script exactly the top-level definitions that script uses
(plus what those definitions use), so the output never depends on mindconverter at run time.

Conventions: a helper uses only ``mindspore``, ``nn``, ``ops``, ``math`` and other helpers of
this file; the converter renames ``nn``/``ops``/``mindspore`` when the user's script already
binds those names. Names starting with ``_ms_`` or ``_torch`` are private to converted scripts;
the others stand in for torchvision helpers that model-zoo scripts import.
"""

# ruff: noqa
import math

import mindspore
from mindspore import nn, ops


# --- argument adapters ------------------------------------------------------------------------
def _ms_conv_padding(padding, dims):
    """PyTorch conv/pool padding (int or one value per spatial dim) -> MindSpore 'pad' padding."""
    if isinstance(padding, int):
        return padding
    if isinstance(padding, str):  # 'same' / 'valid' are carried by pad_mode
        return 0
    padding = tuple(padding)
    if len(padding) == 2 * dims:
        return padding
    if len(padding) != dims:
        raise ValueError(f"padding {padding} does not fit a {dims}-d layer")
    if dims == 1:
        return padding[0]
    return tuple(p for p in padding for _ in range(2))


def _ms_pad_mode(padding):
    """MindSpore pad_mode for a PyTorch conv padding value ('same', 'valid' or numbers)."""
    if isinstance(padding, str):
        return padding.lower()
    return "pad"


def _ms_tuple(value):
    """An int or a sequence of ints as a tuple."""
    if isinstance(value, int):
        return (value,)
    return tuple(value)


def _ms_size(size):
    """PyTorch *size arguments (`f(2, 3)` or `f((2, 3))`) as one tuple."""
    if len(size) == 1 and not isinstance(size[0], int):
        return tuple(size[0])
    return tuple(size)


def _ms_interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """ops.interpolate, computing `size` from `scale_factor` where MindSpore needs it."""
    if size is None and scale_factor is not None and mode in ("nearest", "area"):
        spatial = input.shape[2:]
        factors = (
            scale_factor
            if isinstance(scale_factor, (tuple, list))
            else [scale_factor] * len(spatial)
        )
        size = tuple(int(math.floor(dim * factor)) for dim, factor in zip(spatial, factors))
        scale_factor = None
    return ops.interpolate(
        input, size=size, scale_factor=scale_factor, mode=mode, align_corners=align_corners
    )


def _torch_param(cell, name):
    """The parameter of `cell` that PyTorch calls `name` (MindSpore names some differently)."""
    aliases = {
        "weight": ("weight", "gamma", "embedding_table"),
        "bias": ("bias", "beta"),
        "running_mean": ("moving_mean",),
        "running_var": ("moving_variance",),
    }
    for attr in aliases.get(name, (name,)):
        value = getattr(cell, attr, None)
        if value is not None:
            return value
    return None


# --- layers that MindSpore lacks or spells differently ------------------------------------------
class _OpCell(nn.Cell):
    """A parameter-free layer applying one mindspore.ops function (for PyTorch layers with no
    MindSpore class of the same meaning)."""

    def __init__(self, fn, *args, **kwargs):
        super().__init__()
        self.fn = fn
        self.args = args
        self.kwargs = kwargs

    def construct(self, x):
        return self.fn(x, *self.args, **self.kwargs)


class _MSLayerNorm(nn.LayerNorm):
    """nn.LayerNorm over the trailing `normalized_shape` dims, whatever the input rank
    (PyTorch's semantics; MindSpore's begin_norm_axis needs the rank up front)."""

    def __init__(self, normalized_shape, eps=1e-05, elementwise_affine=True):
        shape = _ms_tuple(normalized_shape)
        super().__init__(shape, begin_norm_axis=-1, begin_params_axis=-1, epsilon=eps)
        self.normalized_shape = shape
        self.eps = eps
        if not elementwise_affine:
            self.gamma.requires_grad = False
            self.beta.requires_grad = False

    def construct(self, x):
        return _ms_layer_norm(x, self.normalized_shape, self.gamma, self.beta, self.eps)


def _ms_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Layer normalization over the trailing `normalized_shape` dims (F.layer_norm)."""
    shape = _ms_tuple(normalized_shape)
    axis = input.ndim - len(shape)
    if weight is None:
        weight = ops.ones(shape, input.dtype)
    if bias is None:
        bias = ops.zeros(shape, input.dtype)
    output, _, _ = ops.LayerNorm(begin_norm_axis=axis, begin_params_axis=axis, epsilon=eps)(
        input, weight, bias
    )
    return output


# --- stand-ins for things that cannot run in MindSpore ------------------------------------------
class _UnconvertedBase:
    """Base class standing in for an unconverted PyTorch/torchvision class."""


class _UnconvertedAPI:
    """Stands for a PyTorch API the converter could not translate (see the conversion report).
    The script still imports; calling it raises a clear error."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _UnconvertedAPI(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"'{self._name}' was not converted to MindSpore (see the conversion report); "
            "rewrite this call by hand."
        )

    def __mro_entries__(self, bases):
        return (_UnconvertedBase,)

    def __instancecheck__(self, obj):
        return False

    def __subclasscheck__(self, cls):
        return False

    def __repr__(self):
        return f"<unconverted {self._name}>"


def _pretrained_weights_unavailable(*args, **kwargs):
    """Stands for PyTorch's model_zoo/hub weight download, which cannot feed a MindSpore model."""
    raise NotImplementedError(
        "PyTorch pretrained weights cannot be loaded into the converted MindSpore model. "
        "Export the pretrained PyTorch model to ONNX and convert it with "
        "`mindconverter --model_file model.onnx`, which writes a MindSpore checkpoint."
    )


# --- torchvision helpers that model-zoo scripts import -----------------------------------------
def _noop(*args, **kwargs):
    """Does nothing (stands for torchvision's usage logging)."""
    return None


def _decorator_passthrough(*args, **kwargs):
    """A decorator factory whose decorator returns the function unchanged
    (stands for torchvision's register_model / handle_legacy_interface)."""

    def decorate(fn):
        return fn

    return decorate


class _Anything:
    """Permissive stand-in for torchvision weight metadata (transforms, categories, ...)."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Anything()

    def __getitem__(self, key):
        return _Anything()

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0


class _WeightsEnum:
    """Stands for torchvision's WeightsEnum: no weight set can be fetched, `verify` passes through."""

    @classmethod
    def verify(cls, obj):
        return obj


def _ovewrite_named_param(kwargs, param, new_value):
    """Set kwargs[param] to new_value, refusing a conflicting value the caller gave."""
    if param in kwargs:
        if kwargs[param] != new_value:
            raise ValueError(
                f"The parameter '{param}' expected value {new_value} but got {kwargs[param]} instead."
            )
    else:
        kwargs[param] = new_value


def _make_divisible(v, divisor, min_value=None):
    """Round a channel count to a multiple of `divisor`, never below 90% of the original."""
    if min_value is None:
        min_value = divisor
    rounded = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * v:
        rounded += divisor
    return rounded


class Conv2dNormActivation(nn.SequentialCell):
    """Conv2d -> normalization -> activation (MindSpore version of torchvision's block)."""

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size=3,
        stride=1,
        padding=None,
        groups=1,
        norm_layer=nn.BatchNorm2d,
        activation_layer=nn.ReLU,
        dilation=1,
        inplace=True,
        bias=None,
    ):
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                ks = _ms_tuple(kernel_size) * (2 if isinstance(kernel_size, int) else 1)
                dl = _ms_tuple(dilation) * (2 if isinstance(dilation, int) else 1)
                padding = tuple((k - 1) // 2 * d for k, d in zip(ks, dl))
        if bias is None:
            bias = norm_layer is None
        layers = [
            nn.Conv2d(
                in_channels,
                out_channels,
                kernel_size,
                stride=stride,
                pad_mode="pad",
                padding=_ms_conv_padding(padding, 2),
                dilation=dilation,
                group=groups,
                has_bias=bias,
            )
        ]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)
        self.out_channels = out_channels


ConvNormActivation = Conv2dNormActivation


class SqueezeExcitation(nn.Cell):
    """Squeeze-and-excitation block (MindSpore version of torchvision's)."""

    def __init__(
        self, input_channels, squeeze_channels, activation=nn.ReLU, scale_activation=nn.Sigmoid
    ):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1, pad_mode="valid", has_bias=True)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1, pad_mode="valid", has_bias=True)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def construct(self, x):
        scale = self.avgpool(x)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        scale = self.scale_activation(scale)
        return scale * x


class StochasticDepth(nn.Cell):
    """Randomly drops whole rows (or the whole batch) in training, as torchvision's does."""

    def __init__(self, p, mode="row"):
        super().__init__()
        self.p = p
        self.mode = mode

    def construct(self, x):
        if not self.training or self.p == 0.0:
            return x
        survival = 1.0 - self.p
        if self.mode == "row":
            size = (x.shape[0],) + (1,) * (x.ndim - 1)
        else:
            size = (1,) * x.ndim
        noise = (ops.rand(size) < survival).astype(x.dtype)
        if survival > 0.0:
            noise = noise / survival
        return x * noise


class Permute(nn.Cell):
    """Permutes the dimensions of its input."""

    def __init__(self, dims):
        super().__init__()
        self.dims = tuple(dims)

    def construct(self, x):
        return ops.permute(x, self.dims)


def _ms_assert(condition, message):
    """torch._assert as a function."""
    assert condition, message


def _ms_calculate_gain(nonlinearity, param=None):
    """The recommended init gain for a nonlinearity (same values as PyTorch's table)."""
    if nonlinearity in (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    ):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _ms_initialize(param, init):
    """param.set_data(initializer(init, ...)) for a parameter found at run time."""
    from mindspore.common.initializer import initializer

    param.set_data(initializer(init, param.shape, param.dtype))
    return param


def _ms_sync_sequential(cell):
    """Make a SequentialCell run every child registered on it, in order, as nn.Sequential does
    (children set as attributes or added later are otherwise not run by SequentialCell)."""
    cell.cell_list = list(cell._cells.values())
    missing = len(cell._cells) - len(cell._is_dynamic_name)
    if missing > 0:
        cell._is_dynamic_name = list(cell._is_dynamic_name) + [False] * missing


def _ms_add_module(cell, name, module):
    """nn.Module.add_module: register `module` as child `name` (and run it, in a SequentialCell)."""
    cell.insert_child_to_cell(name, module)
    if isinstance(cell, nn.SequentialCell):
        _ms_sync_sequential(cell)


class MLP(nn.SequentialCell):
    """Dense -> (norm) -> activation -> dropout blocks, last Dense then dropout
    (MindSpore version of torchvision's MLP)."""

    def __init__(
        self,
        in_channels,
        hidden_channels,
        norm_layer=None,
        activation_layer=nn.ReLU,
        inplace=None,
        bias=True,
        dropout=0.0,
    ):
        layers = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Dense(in_dim, hidden_dim, has_bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer())
            layers.append(nn.Dropout(p=dropout))
            in_dim = hidden_dim
        layers.append(nn.Dense(in_dim, hidden_channels[-1], has_bias=bias))
        layers.append(nn.Dropout(p=dropout))
        super().__init__(*layers)


class _MSMultiheadAttention(nn.MultiheadAttention):
    """nn.MultiheadAttention that always returns (output, weights) like PyTorch's
    (weights is None when need_weights=False)."""

    def construct(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        out = super().construct(
            query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights
        )
        if isinstance(out, (tuple, list)):
            return (out[0], out[1] if len(out) > 1 else None)
        return out, None
