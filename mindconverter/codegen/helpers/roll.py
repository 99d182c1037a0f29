"""The script's ``roll`` helper, inlined by source where a converted network uses it."""

from mindspore import ops


def roll(x, shifts, dims):
    """``torch.roll``: each axis of ``dims`` turned by its shift, what leaves one end coming
    back at the other (Swin's shifted windows). Written with slices because ``ops.roll`` has
    no CPU kernel."""
    for shift, dim in zip(shifts, dims):
        size = x.shape[dim]
        shift %= size
        if shift:
            tail = ops.narrow(x, dim, size - shift, shift)
            x = ops.concat((tail, ops.narrow(x, dim, 0, size - shift)), axis=dim)
    return x
