# MindSpore network converted from lstm_classifier.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by golden.
# Converted for input shapes: x: float32[5, 1, 4].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
from mindspore import nn, ops


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        x: float32[5, 1, 4]
    Outputs:
        logits: float32[1, 3]
    """

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=4, hidden_size=6)
        self.fc = nn.Dense(in_channels=6, out_channels=3)

    def construct(self, x):
        lstm_out = self.lstm(x)
        out = lstm_out[1][0]
        out = ops.squeeze(out, axis=0)
        logits = self.fc(out)
        return logits
