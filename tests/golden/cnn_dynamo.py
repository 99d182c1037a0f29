# MindSpore network converted from tiny_resnet_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: input_: float32[batch, 3, 32, 32].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import mindspore as ms
from mindspore import nn, ops


class BasicBlock(nn.Cell):
    """Recovered from layer1.0, layer1.1, layer2.0, layer2.1 and 2 more."""

    def __init__(self, in_channels, out_channels, stride=1, has_downsample=False):
        super().__init__()
        self.conv1 = nn.Conv2d(
            in_channels=in_channels,
            out_channels=out_channels,
            kernel_size=3,
            stride=stride,
            pad_mode="pad",
            padding=1,
            has_bias=True,
        )
        self.conv2 = nn.Conv2d(
            in_channels=out_channels,
            out_channels=out_channels,
            kernel_size=3,
            pad_mode="pad",
            padding=1,
            has_bias=True,
        )
        self.downsample = (
            nn.SequentialCell(
                [
                    nn.Conv2d(
                        in_channels=in_channels,
                        out_channels=out_channels,
                        kernel_size=1,
                        stride=stride,
                        pad_mode="valid",
                        has_bias=True,
                    )
                ]
            )
            if has_downsample
            else None
        )

    def construct(self, x):
        out = self.conv1(x)
        out = ops.relu(out)
        out = self.conv2(out)
        if self.downsample is not None:
            x = self.downsample(x)
        out = out + x
        out = ops.relu(out)
        return out


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_: float32[batch, 3, 32, 32]
    Outputs:
        logits: float32[batch, 10]
    """

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(
            in_channels=3,
            out_channels=8,
            kernel_size=7,
            stride=2,
            pad_mode="pad",
            padding=3,
            has_bias=True,
        )
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="pad", padding=1)
        self.layer1 = nn.SequentialCell(
            [
                BasicBlock(in_channels=8, out_channels=8),
                BasicBlock(in_channels=8, out_channels=8),
            ]
        )
        self.layer2 = nn.SequentialCell(
            [
                BasicBlock(
                    in_channels=8, out_channels=16, stride=2, has_downsample=True
                ),
                BasicBlock(in_channels=16, out_channels=16),
            ]
        )
        self.layer3 = nn.SequentialCell(
            [
                BasicBlock(
                    in_channels=16, out_channels=32, stride=2, has_downsample=True
                ),
                BasicBlock(in_channels=32, out_channels=32),
            ]
        )
        self.fc = nn.Dense(in_channels=32, out_channels=10)

    def construct(self, input_):
        x = self.conv1(input_)
        x = ops.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = ops.mean(x, axis=(2, 3), keep_dims=True)
        x = ops.reshape(x, (-1, 32))
        logits = self.fc(x)
        return logits


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, 3, 32, 32], dtype=ms.float32),)
