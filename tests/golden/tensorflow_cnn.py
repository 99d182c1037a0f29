# MindSpore network converted from tf_cnn.pb by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by tf2onnx 1.17.0 None.
# Converted for input shapes: image_0: float32[1, 8, 8, 3].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
from mindspore import nn, ops


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        image_0: float32[1, 8, 8, 3]
    Outputs:
        x: float32[1, 5]
    """

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(
            in_channels=3,
            out_channels=4,
            kernel_size=3,
            pad_mode="pad",
            padding=1,
            has_bias=True,
        )
        self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.fc = nn.Dense(in_channels=64, out_channels=5, has_bias=False)

    def construct(self, image_0):
        x = ops.transpose(image_0, (0, 3, 1, 2))
        x = self.conv(x)
        x = ops.relu(x)
        x = self.maxpool(x)
        x = ops.transpose(x, (0, 2, 3, 1))
        x = ops.reshape(x, (1, 64))
        x = self.fc(x)
        x = ops.softmax(x, axis=-1)
        return x
