# MindSpore network converted from tiny_mobilenet_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: input_: float32[batch, 3, 32, 32].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import mindspore as ms
from mindspore import nn, ops


class InvertedResidual(nn.Cell):
    """Recovered from features.1, features.2."""

    def __init__(
        self, block_out_channels, block_out_channels_1, stride=1, residual=False
    ):
        super().__init__()
        self.block = nn.SequentialCell(
            [
                nn.Conv2d(
                    in_channels=16,
                    out_channels=block_out_channels,
                    kernel_size=1,
                    pad_mode="valid",
                    has_bias=True,
                ),
                nn.Identity(),
                nn.ReLU6(),
                nn.Conv2d(
                    in_channels=block_out_channels,
                    out_channels=block_out_channels,
                    kernel_size=3,
                    stride=stride,
                    pad_mode="pad",
                    padding=1,
                    group=block_out_channels,
                    has_bias=True,
                ),
                nn.Identity(),
                nn.ReLU6(),
                nn.Conv2d(
                    in_channels=block_out_channels,
                    out_channels=block_out_channels_1,
                    kernel_size=1,
                    pad_mode="valid",
                    has_bias=True,
                ),
            ]
        )
        self.residual = residual

    def construct(self, x):
        block = self.block(x)
        if self.residual:
            block = x + block
        return block


class SqueezeExcite(nn.Cell):
    """Recovered from features.3.block.6, features.4.block.6."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Conv2d(
            in_channels=72,
            out_channels=18,
            kernel_size=1,
            pad_mode="valid",
            has_bias=True,
        )
        self.fc2 = nn.Conv2d(
            in_channels=18,
            out_channels=72,
            kernel_size=1,
            pad_mode="valid",
            has_bias=True,
        )

    def construct(self, x):
        out = ops.mean(x, axis=(2, 3), keep_dims=True)
        out = self.fc1(out)
        out = ops.relu(out)
        out = self.fc2(out)
        out = ops.hardsigmoid(out)
        mul = x * out
        return mul


class InvertedResidual2(nn.Cell):
    """Recovered from features.3, features.4."""

    def __init__(self, out_channels, stride=1, residual=False):
        super().__init__()
        self.block = nn.SequentialCell(
            [
                nn.Conv2d(
                    in_channels=24,
                    out_channels=72,
                    kernel_size=1,
                    pad_mode="valid",
                    has_bias=True,
                ),
                nn.Identity(),
                nn.HSwish(),
                nn.Conv2d(
                    in_channels=72,
                    out_channels=72,
                    kernel_size=3,
                    stride=stride,
                    pad_mode="pad",
                    padding=1,
                    group=72,
                    has_bias=True,
                ),
                nn.Identity(),
                nn.HSwish(),
                SqueezeExcite(),
                nn.Conv2d(
                    in_channels=72,
                    out_channels=out_channels,
                    kernel_size=1,
                    pad_mode="valid",
                    has_bias=True,
                ),
            ]
        )
        self.residual = residual

    def construct(self, x):
        block = self.block(x)
        if self.residual:
            block = x + block
        return block


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_: float32[batch, 3, 32, 32]
    Outputs:
        logits: float32[batch, 10]
    """

    def __init__(self):
        super().__init__()
        self.features = nn.SequentialCell(
            [
                nn.SequentialCell(
                    [
                        nn.Conv2d(
                            in_channels=3,
                            out_channels=16,
                            kernel_size=3,
                            stride=2,
                            pad_mode="pad",
                            padding=1,
                            has_bias=True,
                        ),
                        nn.Identity(),
                        nn.HSwish(),
                    ]
                ),
                InvertedResidual(
                    block_out_channels=16, block_out_channels_1=16, residual=True
                ),
                InvertedResidual(
                    block_out_channels=64, block_out_channels_1=24, stride=2
                ),
                InvertedResidual2(out_channels=24, residual=True),
                InvertedResidual2(out_channels=32, stride=2),
            ]
        )
        self.classifier = nn.SequentialCell(
            [
                nn.Dense(in_channels=32, out_channels=64),
                nn.HSwish(),
                nn.Identity(),
                nn.Dense(in_channels=64, out_channels=10),
            ]
        )

    def construct(self, input_):
        x = self.features(input_)
        x = ops.mean(x, axis=(2, 3), keep_dims=True)
        x = ops.reshape(x, (-1, 32))
        logits = self.classifier(x)
        return logits


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, 3, 32, 32], dtype=ms.float32),)
