"""A residual sum some instances of a block make: found at the end of a body, and bodies that
compute the same under other names recognised as the same."""

from __future__ import annotations

from mindconverter.codegen.residuals import same_up_to_names, split_residual, targets


def test_a_final_sum_of_an_input_and_the_value_before_is_a_residual():
    split = split_residual(["conv = self.conv(x)", "out = x + conv"], ["x"], ["out"])
    assert split is not None
    assert split.prefix == ["conv = self.conv(x)"]
    assert split.line == "conv = x + conv"
    assert split.result == "conv"


def test_the_operands_keep_their_order():
    split = split_residual(["conv = self.conv(x)", "out = conv + x"], ["x"], ["out"])
    assert split is not None and split.line == "conv = conv + x"


def test_sums_that_are_not_a_residual_are_left_alone():
    args = ["x", "y"]
    assert split_residual(["conv = self.conv(x)", "out = x + y"], args, ["out"]) is None
    assert split_residual(["conv = self.conv(x)", "out = x + conv"], args, ["conv"]) is None
    body = ["conv = self.conv(x)", "other = self.fc(x)", "out = x + conv"]
    assert split_residual(body, args, ["out"]) is None  # not the value just before
    indented = ["if self.fc is not None:", "    conv = self.fc(x)", "out = x + conv"]
    assert split_residual(indented, args, ["out"]) is None


def test_targets_of_assignments_and_loops():
    assert targets("a, b = ops.split(x)") == ["a", "b"]
    assert targets("    for layer in self.layers:") == ["layer"]
    assert targets("if self.fc is not None:") == []


def test_the_same_statements_under_other_names_are_the_same():
    mine = ["x = self.conv(x)", "x = ops.relu(x)"]
    theirs = ["conv = self.conv(x)", "conv = ops.relu(conv)"]
    assert same_up_to_names(mine, "x", theirs, "conv", ["x"])


def test_another_value_read_or_returned_is_not_the_same():
    mine = ["x = self.conv(x)", "y = ops.relu(x)"]
    assert not same_up_to_names(mine, "x", ["c = self.conv(x)", "y = ops.relu(c)"], "y", ["x"])
    assert not same_up_to_names(mine, "y", ["c = self.conv(x)", "y = ops.relu(x)"], "y", ["x"])


def test_attributes_calls_and_literals_must_match():
    args = ["x"]
    assert not same_up_to_names(["y = self.conv(x)"], "y", ["y = self.fc(x)"], "y", args)
    assert not same_up_to_names(["y = ops.relu(x)"], "y", ["y = ops.gelu(x)"], "y", args)
    assert not same_up_to_names(["y = x * 2"], "y", ["y = x * 3"], "y", args)
    assert not same_up_to_names(["y = x"], "y", ["y = x", "z = y"], "z", args)
