"""Results that are only a slice are written in the ``return`` (codegen/returns.py)."""

from mindconverter.codegen.returns import inline_returned_slices


def test_a_returned_slice_is_written_in_the_return():
    body = [
        "k = ops.concat((past_key, key_states), axis=-2)",
        "x = k[:, :, -3:]",
        "scores = ops.matmul(q, k.swapaxes(-1, -2))",
        "out = self.o_proj(scores)",
    ]
    returns = inline_returned_slices(body, ["x", "out"])
    assert returns == ["k[:, :, -3:]", "out"]
    assert "x = k[:, :, -3:]" not in body and len(body) == 3


def test_a_slice_read_again_or_of_a_changed_variable_keeps_its_line():
    read_again = ["x = k[:, :, -3:]", "y = x * 2"]
    assert inline_returned_slices(read_again, ["x", "y"]) == ["x", "y"]
    changed = ["x = k[:, :, -3:]", "k = k * 2"]
    assert inline_returned_slices(changed, ["x", "k"]) == ["x", "k"]
    looped = ["x = k[:, :, -3:]", "for k in self.layers:", "    y = k(y)"]
    assert inline_returned_slices(looped, ["x"]) == ["x"]
    called = ["x = self.table(ids)", "y = x[0]"]
    assert inline_returned_slices(called, ["x", "y"]) == ["x", "x[0]"]


def test_a_last_layer_call_is_written_in_the_return():
    from mindconverter.codegen.returns import inline_returned_call

    body = ["x = ops.reshape(context, shape)", "x = self.o_proj(x)"]
    assert inline_returned_call(body, ["k", "v", "x"]) == ["k", "v", "self.o_proj(x)"]
    assert body == ["x = ops.reshape(context, shape)"]


def test_a_call_returned_twice_guarded_or_noted_keeps_its_line():
    from mindconverter.codegen.returns import inline_returned_call

    twice = ["x = self.o_proj(x)"]
    assert inline_returned_call(twice, ["x", "x"]) == ["x", "x"] and len(twice) == 1
    guarded = ["if self.downsample is not None:", "    x = self.downsample(x)"]
    assert inline_returned_call(guarded, ["x"]) == ["x"] and len(guarded) == 2
    noted = ["# computed in float32: no kernel", "x = self.norm(x)"]
    assert inline_returned_call(noted, ["x"]) == ["x"] and len(noted) == 2
    not_a_layer = ["x = ops.relu(x)"]
    assert inline_returned_call(not_a_layer, ["x"]) == ["x"]
