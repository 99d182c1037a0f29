# MindSpore network converted from tiny_hf_resnet_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: pixel_values: float32[batch, 3, 32, 32].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import mindspore as ms
from mindspore import nn, ops


class Embedder(nn.Cell):
    """Recovered from model.embedder.embedder."""

    def __init__(self):
        super().__init__()
        self.convolution = nn.Conv2d(
            in_channels=3,
            out_channels=8,
            kernel_size=7,
            stride=2,
            pad_mode="pad",
            padding=3,
            has_bias=True,
        )

    def construct(self, pixel_values):
        pixel_values = self.convolution(pixel_values)
        pixel_values = ops.relu(pixel_values)
        return pixel_values


class Embedder2(nn.Cell):
    """Recovered from model.embedder."""

    def __init__(self):
        super().__init__()
        self.embedder = Embedder()
        self.pooler = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="pad", padding=1)

    def construct(self, pixel_values):
        pixel_values = self.embedder(pixel_values)
        return self.pooler(pixel_values)


class Layer(nn.Cell):
    """Recovered from model.encoder.stages.0.layers.0.layer.0, model.encoder.stages.0.layers.0.layer.1, model.encoder.stages.0.layers.0.layer.2, model.encoder.stages.0.layers.0.shortcut and 7 more."""

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        pad_mode,
        padding=0,
        stride=1,
        relu=False,
    ):
        super().__init__()
        self.convolution = nn.Conv2d(
            in_channels=in_channels,
            out_channels=out_channels,
            kernel_size=kernel_size,
            stride=stride,
            pad_mode=pad_mode,
            padding=padding,
            has_bias=True,
        )
        self.relu = relu

    def construct(self, x):
        x = self.convolution(x)
        if self.relu:
            x = ops.relu(x)
        return x


class Layer2(nn.Cell):
    """Recovered from model.encoder.stages.0.layers.0, model.encoder.stages.1.layers.0, model.encoder.stages.1.layers.1."""

    def __init__(
        self,
        in_channels,
        layer_out_channels,
        layer_out_channels_1,
        stride=1,
        has_shortcut=False,
    ):
        super().__init__()
        self.layer = nn.SequentialCell(
            [
                Layer(
                    in_channels=in_channels,
                    out_channels=layer_out_channels,
                    kernel_size=1,
                    pad_mode="valid",
                    relu=True,
                ),
                Layer(
                    in_channels=layer_out_channels,
                    out_channels=layer_out_channels,
                    kernel_size=3,
                    pad_mode="pad",
                    padding=1,
                    stride=stride,
                    relu=True,
                ),
                Layer(
                    in_channels=layer_out_channels,
                    out_channels=layer_out_channels_1,
                    kernel_size=1,
                    pad_mode="valid",
                ),
            ]
        )
        self.shortcut = (
            Layer(
                in_channels=in_channels,
                out_channels=layer_out_channels_1,
                kernel_size=1,
                pad_mode="valid",
                stride=stride,
            )
            if has_shortcut
            else None
        )

    def construct(self, x):
        layer = self.layer(x)
        if self.shortcut is not None:
            x = self.shortcut(x)
        layer = layer + x
        layer = ops.relu(layer)
        return layer


class Stage(nn.Cell):
    """Recovered from model.encoder.stages.0, model.encoder.stages.1."""

    def __init__(
        self, in_channels, layers_out_channels, layers_out_channels_1, depth, stride=1
    ):
        super().__init__()
        self.layers = nn.SequentialCell(
            [
                Layer2(
                    in_channels=in_channels,
                    layer_out_channels=layers_out_channels,
                    layer_out_channels_1=layers_out_channels_1,
                    stride=stride,
                    has_shortcut=True,
                ),
                *[
                    Layer2(
                        in_channels=layers_out_channels_1,
                        layer_out_channels=layers_out_channels,
                        layer_out_channels_1=layers_out_channels_1,
                    )
                    for _ in range(depth - 1)
                ],
            ]
        )

    def construct(self, x):
        return self.layers(x)


class Encoder(nn.Cell):
    """Recovered from model.encoder."""

    def __init__(self):
        super().__init__()
        self.stages = nn.SequentialCell(
            [
                Stage(
                    in_channels=8,
                    layers_out_channels=4,
                    layers_out_channels_1=16,
                    depth=1,
                ),
                Stage(
                    in_channels=16,
                    layers_out_channels=8,
                    layers_out_channels_1=32,
                    stride=2,
                    depth=2,
                ),
            ]
        )

    def construct(self, x):
        return self.stages(x)


class Model(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.embedder = Embedder2()
        self.encoder = Encoder()

    def construct(self, pixel_values):
        pixel_values = self.embedder(pixel_values)
        return self.encoder(pixel_values)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        pixel_values: float32[batch, 3, 32, 32]
    Outputs:
        output: float32[batch, 32, 4, 4]
    """

    def __init__(self):
        super().__init__()
        self.model = Model()

    def construct(self, pixel_values):
        output = self.model(pixel_values)
        return output


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, 3, 32, 32], dtype=ms.float32),)
