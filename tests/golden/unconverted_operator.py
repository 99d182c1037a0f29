# MindSpore network converted from custom_op.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by golden.
# Converted for input shapes: x: float32[2, 3].
# The network has no weights (its checkpoint is empty, nothing to load):
#     net = MindSporeModel()
from mindspore import nn, ops


class UnconvertedOperator(nn.Cell):
    """Placeholder for an operator mindconverter could not convert (see the report).

    The script imports and the network builds; calling this cell raises. Replace it with an
    implementation of the operator for the recorded input and output shapes.
    """

    def __init__(self, op_type, input_shapes, output_shapes):
        super().__init__()
        self.op_type = op_type
        self.input_shapes = input_shapes
        self.output_shapes = output_shapes

    def construct(self, *inputs):
        raise NotImplementedError(
            "An operator was not converted; see the conversion report."
        )


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        x: float32[2, 3]
    Outputs:
        y: float32[?]
    """

    def __init__(self):
        super().__init__()
        self.unconverted_mystery = UnconvertedOperator(
            "Mystery", input_shapes=((2, 3),), output_shapes=(None,)
        )

    def construct(self, x):
        out = ops.relu(x)
        out = self.unconverted_mystery(out)
        y = out + x
        return y
