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
    body = ["a, b = ops.split(x, 2)", "c = ops.relu(a) + b"]
    drop_unused_assignments(body, ["c"])
    assert body == ["a, b = ops.split(x, 2)", "c = ops.relu(a) + b"]


def test_an_unpacked_result_nothing_reads_is_blanked():
    """CvT's embedding also returns its output as an image, which the stage read only for its
    sizes (read from the input since): ``x, _ = self.embedding(pixel_values)``, as ruff wants
    (RUF059); a statement none of whose results are read goes."""
    body = [
        "x, embedding = self.embedding(pixel_values)",
        "# a note",
        "a, b = ops.split(x, 2)",
        "x = self.layers(x)",
    ]
    drop_unused_assignments(body, ["x"])
    assert body == ["x, _ = self.embedding(pixel_values)", "x = self.layers(x)"]
