"""The script's ``rms_norm`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import Parameter, nn, ops


class RMSNorm(nn.Cell):
    """Root-mean-square norm over the last axis, as Llama-family models write it:
    ``x / sqrt(mean(x**2) + eps) * weight`` (MindSpore's ops.rms_norm has no CPU kernel)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = Parameter(ops.ones(hidden_size, ms.float32))
        self.eps = eps

    def construct(self, hidden_states):
        variance = ops.mean(hidden_states * hidden_states, -1, keep_dims=True)
        return self.weight * (hidden_states * ops.rsqrt(variance + self.eps))
