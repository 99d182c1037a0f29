"""Statements nothing reads leave ``construct`` (codegen/dead_code.py)."""

from __future__ import annotations

from mindconverter.codegen.dead_code import drop_unused_assignments


def test_an_unread_statement_goes_with_its_note_and_what_only_it_read():
    body = [
        "out = ops.reshape(self.k_proj(x), shape)",
        "# a note about the transpose",
        "transpose = out.swapaxes(1, 2)",
        "transpose_2 = ops.transpose(out, (0, 2, 3, 1))",
        "helper = ops.relu(x)",
        "unused = helper * 2",
    ]
    drop_unused_assignments(body, ["transpose_2"])
    assert body == [
        "out = ops.reshape(self.k_proj(x), shape)",
        "transpose_2 = ops.transpose(out, (0, 2, 3, 1))",
    ]


def test_reads_anywhere_keep_a_statement():
    body = ["x = self.fc(x)", "for layer in self.layers:", "    x = layer(x)", "y = x + 1"]
    drop_unused_assignments(body, ["y"])
    assert body == ["x = self.fc(x)", "for layer in self.layers:", "    x = layer(x)", "y = x + 1"]
    body = ["a, b = ops.split(x, 2)", "c = ops.relu(a)"]
    drop_unused_assignments(body, ["c"])
    assert body == ["a, b = ops.split(x, 2)", "c = ops.relu(a)"]
