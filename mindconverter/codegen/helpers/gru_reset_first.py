"""The script's ``gru_reset_first`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import Parameter, nn, ops


class GRUResetFirst(nn.Cell):
    """ONNX's GRU with linear_before_reset=0 (Keras' reset_after=False): the reset gate scales
    the hidden state before the candidate's recurrent transform, which nn.GRU (PyTorch's form)
    does not do. Weights keep ONNX's gate order (z, r, h); input [seq, batch, input_size];
    returns Y [seq, directions, batch, hidden] and Y_h [directions, batch, hidden]; the initial
    state h0 [directions, batch, hidden] defaults to zeros."""

    def __init__(self, input_size, hidden_size, bidirectional=False, reverse=False):
        super().__init__()
        self.hidden_size = hidden_size
        self.bidirectional = bidirectional
        self.reverse = reverse  # one direction, run from the last step to the first
        gates = 3 * hidden_size
        self.weight_ih_l0 = Parameter(ops.zeros((gates, input_size), ms.float32))
        self.weight_hh_l0 = Parameter(ops.zeros((gates, hidden_size), ms.float32))
        self.bias_ih_l0 = Parameter(ops.zeros((gates,), ms.float32))
        self.bias_hh_l0 = Parameter(ops.zeros((gates,), ms.float32))
        if bidirectional:
            self.weight_ih_l0_reverse = Parameter(ops.zeros((gates, input_size), ms.float32))
            self.weight_hh_l0_reverse = Parameter(ops.zeros((gates, hidden_size), ms.float32))
            self.bias_ih_l0_reverse = Parameter(ops.zeros((gates,), ms.float32))
            self.bias_hh_l0_reverse = Parameter(ops.zeros((gates,), ms.float32))

    def step(self, x_t, h, w_ih, w_hh, b_ih, b_hh):
        size = self.hidden_size
        from_x = ops.matmul(x_t, w_ih.T) + b_ih
        z = ops.sigmoid(from_x[:, :size] + ops.matmul(h, w_hh[:size].T) + b_hh[:size])
        r = ops.sigmoid(
            from_x[:, size : 2 * size]
            + ops.matmul(h, w_hh[size : 2 * size].T)
            + b_hh[size : 2 * size]
        )
        candidate = ops.tanh(
            from_x[:, 2 * size :] + ops.matmul(r * h, w_hh[2 * size :].T) + b_hh[2 * size :]
        )
        return (1 - z) * candidate + z * h

    def scan(self, x, h, w_ih, w_hh, b_ih, b_hh, reverse):
        steps = x.shape[0]
        outputs = []
        for i in range(steps):
            h = self.step(x[steps - 1 - i] if reverse else x[i], h, w_ih, w_hh, b_ih, b_hh)
            outputs.append(h)
        if reverse:
            outputs = outputs[::-1]
        return ops.stack(outputs, 0), h

    def construct(self, x, h0=None):
        if h0 is None:
            directions = 2 if self.bidirectional else 1
            h0 = ops.zeros((directions, x.shape[1], self.hidden_size), x.dtype)
        weights = (self.weight_ih_l0, self.weight_hh_l0, self.bias_ih_l0, self.bias_hh_l0)
        y, h = self.scan(x, h0[0], *weights, self.reverse)
        if not self.bidirectional:
            return ops.expand_dims(y, 1), ops.expand_dims(h, 0)
        weights = (
            self.weight_ih_l0_reverse,
            self.weight_hh_l0_reverse,
            self.bias_ih_l0_reverse,
            self.bias_hh_l0_reverse,
        )
        y_back, h_back = self.scan(x, h0[1], *weights, True)
        return ops.stack((y, y_back), 1), ops.stack((h, h_back), 0)
