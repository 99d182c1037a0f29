"""A tuple of sizes written twice in one construct is written once (codegen/repeated_tuples.py)."""

from __future__ import annotations

from mindconverter.codegen.repeated_tuples import name_repeated_tuples


def _claims():
    names = iter(["shape", "shape_1"])
    return lambda: next(names)


def test_a_repeated_sizes_tuple_is_named_above_its_first_statement():
    body = [
        "shape_3 = (batch_size, 1, 1, ops.shape(max_)[3])",
        "# a note",
        "expand = ops.broadcast_to(range_, (batch_size, -1, -1, shape_3[3]))",
        "expand = ops.unsqueeze(expand, dim=4)",
        "expand_1 = ops.broadcast_to(range_1, (batch_size, -1, -1, shape_3[3]))",
    ]
    name_repeated_tuples(body, _claims())
    assert body == [
        "shape_3 = (batch_size, 1, 1, ops.shape(max_)[3])",
        "shape = (batch_size, -1, -1, shape_3[3])",
        "# a note",
        "expand = ops.broadcast_to(range_, shape)",
        "expand = ops.unsqueeze(expand, dim=4)",
        "expand_1 = ops.broadcast_to(range_1, shape)",
    ]


def test_tuples_of_numbers_or_named_sizes_or_of_a_reassigned_value_stay():
    body = [
        "x = ops.transpose(x, (0, 2, 1, 3))",
        "y = ops.transpose(y, (0, 2, 1, 3))",
        "a = ops.reshape(a, (shape[0], -1))",
        "shape = (7, 2)",
        "b = ops.reshape(b, (shape[0], -1))",
        "c = ops.reshape(c, (x.shape[0], 4))",
        "for layer in self.layers:",
        "    d = ops.reshape(d, (x.shape[0], 4))",
        "e = ops.broadcast_to(e, (batch, -1, -1))",
        "f = ops.broadcast_to(f, (batch, -1, -1))",
    ]
    expected = list(body)
    name_repeated_tuples(body, _claims())
    assert body == expected


def test_a_static_target_shape_is_named_once_classes_are_merged():
    body = [
        "q = ops.reshape(self.q_proj(hidden_states), (1, 2, -1, self.head_dim))",
        "k = ops.reshape(self.k_proj(hidden_states), (1, 2, -1, self.head_dim))",
        "x = ops.transpose(q, (0, 2, 1, 3))",
        "y = ops.transpose(k, (0, 2, 1, 3))",
        "z = ops.reshape(x, (2, -1))",
        "w = ops.reshape(y, (2, -1))",
    ]
    before = list(body)
    name_repeated_tuples(body, _claims())
    assert body == before  # without ``static`` numbers alone are never a sizes tuple
    name_repeated_tuples(body, _claims(), static=True)
    assert body == [
        "shape = (1, 2, -1, self.head_dim)",
        "q = ops.reshape(self.q_proj(hidden_states), shape)",
        "k = ops.reshape(self.k_proj(hidden_states), shape)",
        # a permutation has no -1; two numbers read as well inline
        "x = ops.transpose(q, (0, 2, 1, 3))",
        "y = ops.transpose(k, (0, 2, 1, 3))",
        "z = ops.reshape(x, (2, -1))",
        "w = ops.reshape(y, (2, -1))",
    ]
