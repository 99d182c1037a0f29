"""Head splits and merges written as one line (``ops.reshape(x, shape).swapaxes(1, 2)``)."""

from __future__ import annotations

import numpy as np
from onnx import helper

from tests.helpers import assert_matches, make_model


def _split_and_merge_heads(merge_shape_from_swapped: bool):
    """x[b, s, 8] -> [b, 2, s, 4] (scaled) -> back to [b, s, 8]; the merge reads its sizes from
    the swapped value when asked (as exporters do for an LSTM's output)."""
    nodes = [
        helper.make_node("Reshape", ["x", "heads"], ["split"]),
        helper.make_node("Transpose", ["split"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Mul", ["q", "scale"], ["scaled"]),
        helper.make_node("Transpose", ["scaled"], ["back"], perm=[0, 2, 1, 3]),
    ]
    if merge_shape_from_swapped:
        nodes += [
            helper.make_node("Shape", ["back"], ["sizes"], end=2),
            helper.make_node("Concat", ["sizes", "minus_one"], ["merged_shape"], axis=0),
            helper.make_node("Reshape", ["back", "merged_shape"], ["y"]),
        ]
    else:
        nodes.append(helper.make_node("Reshape", ["back", "merged"], ["y"]))
    constants = {
        "heads": np.array([0, 0, 2, 4], np.int64),
        "merged": np.array([0, 0, 8], np.int64),
        "minus_one": np.array([-1], np.int64),
        "scale": np.array(0.5, np.float32),
    }
    return make_model(
        nodes,
        [("x", np.float32, ["batch", "sequence", 8])],
        [("y", np.float32, ["batch", "sequence", 8])],
        constants,
    )


def _feeds(*shape):
    return {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}


def test_heads_split_and_merged_in_one_statement_each(tmp_path):
    result = assert_matches(
        _split_and_merge_heads(False), tmp_path, _feeds(2, 3, 8), shape=["2,3,8"]
    )
    code = result.script_path.read_text()
    assert ".swapaxes(1, 2)" in code and "ops.transpose" not in code
    assert "ops.reshape(x, (batch, sequence, 2, 4)).swapaxes(1, 2)" in code


def test_a_merge_reading_sizes_of_the_swapped_value_is_one_statement_with_named_sizes(tmp_path):
    """The merge reads the swapped value's sizes; they are the input's names, so the swap and
    the merge still make one statement (the swapped value is never needed on its own)."""
    model = _split_and_merge_heads(True)
    result = assert_matches(model, tmp_path, _feeds(2, 3, 8), shape=["2,3,8"])
    code = result.script_path.read_text()
    assert "ops.reshape(out.swapaxes(1, 2), (batch, sequence, -1))" in code
    assert "ops.shape(" not in code
    assert_matches(model, tmp_path / "other", _feeds(1, 5, 8), shape=["1,5,8"])


def _projected_heads(per_head: list, constants: dict | None = None):
    """x (batch, sequence, 8) projected, split into 2 heads of 4, ``per_head`` turning
    ``split`` into ``head``, then the heads moved first as ``y``."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Shape", ["x"], ["lead"], end=2),
        helper.make_node("Concat", ["lead", "per_head"], ["heads"], axis=0),
        helper.make_node("MatMul", ["x", "weight"], ["projected"]),
        helper.make_node("Add", ["projected", "bias"], ["dense"]),
        helper.make_node("Reshape", ["dense", "heads"], ["split"]),
        *per_head,
        helper.make_node("Transpose", ["head"], ["y"], perm=[0, 2, 1, 3]),
    ]
    return make_model(
        nodes,
        [("x", np.float32, ["batch", "sequence", 8])],
        [("y", np.float32, ["batch", 2, "sequence", 4])],
        {
            "weight": rng.standard_normal((8, 8)).astype(np.float32),
            "bias": rng.standard_normal(8).astype(np.float32),
            "per_head": np.array([2, 4], np.int64),
            **(constants or {}),
        },
    )


def test_a_projection_read_only_by_its_head_split_is_written_inside_it(tmp_path):
    """``q = ops.reshape(self.proj(x), shape).swapaxes(1, 2)``, as attention code is written."""
    model = _projected_heads([helper.make_node("Identity", ["split"], ["head"])])
    result = assert_matches(model, tmp_path, _feeds(2, 3, 8), shape=["2,3,8"])
    code = result.script_path.read_text()
    assert "ops.reshape(self." in code and "(x), " in code, code
    assert_matches(model, tmp_path / "other", _feeds(1, 5, 8), shape=["1,5,8"])


def test_a_head_split_normalised_per_head_is_one_statement(tmp_path):
    """Qwen3's q_norm: ``q = self.norm(ops.reshape(self.proj(x), shape)).swapaxes(1, 2)``."""
    rng = np.random.default_rng(2)
    norm = helper.make_node("LayerNormalization", ["split", "gamma", "beta"], ["head"], axis=-1)
    model = _projected_heads(
        [norm],
        {
            "gamma": rng.standard_normal(4).astype(np.float32),
            "beta": rng.standard_normal(4).astype(np.float32),
        },
    )
    result = assert_matches(model, tmp_path, _feeds(2, 3, 8), shape=["2,3,8"])
    construct = result.script_path.read_text().split("def construct")[1]
    lines = [line.strip() for line in construct.splitlines()[1:] if line.strip()]
    split = next(line for line in lines if "ops.reshape(self." in line)
    assert split.startswith("y = self.") and split.endswith(".swapaxes(1, 2)"), construct
    assert_matches(model, tmp_path / "other", _feeds(1, 5, 8), shape=["1,5,8"])


def test_projections_computed_before_their_head_splits_are_written_inside_them(tmp_path):
    """BART through dynamo: k_proj, v_proj, then both splits; each call moves to its split."""
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Shape", ["x"], ["lead"], end=2),
        helper.make_node("Concat", ["lead", "per_head"], ["heads"], axis=0),
    ]
    for name in ("k", "v"):
        nodes += [
            helper.make_node("MatMul", ["x", f"{name}_weight"], [f"{name}_projected"]),
            helper.make_node("Add", [f"{name}_projected", f"{name}_bias"], [f"{name}_dense"]),
        ]
    for name in ("k", "v"):
        nodes += [
            helper.make_node("Reshape", [f"{name}_dense", "heads"], [f"{name}_split"]),
            helper.make_node("Transpose", [f"{name}_split"], [name], perm=[0, 2, 1, 3]),
        ]
    weights = {f"{n}_weight": rng.standard_normal((8, 8)).astype(np.float32) for n in "kv"}
    biases = {f"{n}_bias": rng.standard_normal(8).astype(np.float32) for n in "kv"}
    model = make_model(
        nodes,
        [("x", np.float32, ["batch", "sequence", 8])],
        [(n, np.float32, ["batch", 2, "sequence", 4]) for n in "kv"],
        {**weights, **biases, "per_head": np.array([2, 4], np.int64)},
    )
    result = assert_matches(model, tmp_path, _feeds(2, 3, 8), shape=["2,3,8"])
    construct = result.script_path.read_text().split("def construct")[1]
    assert construct.count("ops.reshape(self.") == 2, construct
    assert_matches(model, tmp_path / "other", _feeds(1, 5, 8), shape=["1,5,8"])


def test_a_constant_slice_then_a_head_transpose_is_one_statement(tmp_path):
    """Falcon's query heads out of the fused projection: ``q = x[:, :, :2].swapaxes(1, 2)``."""
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["picked"]),
        helper.make_node("Transpose", ["picked"], ["y"], perm=[0, 2, 1, 3]),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, ["batch", "sequence", 4, 8])],
        [("y", np.float32, ["batch", 2, "sequence", 8])],
        {
            "starts": np.array([0], np.int64),
            "ends": np.array([2], np.int64),
            "axes": np.array([2], np.int64),
        },
    )
    feeds = {"x": np.random.default_rng(4).standard_normal((2, 3, 4, 8)).astype(np.float32)}
    result = assert_matches(model, tmp_path, feeds, shape=["2,3,4,8"])
    assert "y = x[:, :, :2].swapaxes(1, 2)" in result.script_path.read_text()


def test_picks_out_of_a_fused_projection_are_written_inside_their_splits(tmp_path):
    """Phi-3: ``q = ops.reshape(qkv[:, :, :8], shape).swapaxes(1, 2)``, each part taken where
    its head split reads it (both parts are taken first, as exporters write them)."""
    slices, splits = [], []
    bounds = {"axis": np.array([2], np.int64), "per_head": np.array([2, 4], np.int64)}
    for index, name in enumerate("qk"):
        bounds[f"{name}_s"] = np.array([8 * index], np.int64)
        bounds[f"{name}_e"] = np.array([8 * index + 8], np.int64)
        slices.append(
            helper.make_node("Slice", ["x", f"{name}_s", f"{name}_e", "axis"], [f"{name}_part"])
        )
        splits += [
            helper.make_node("Reshape", [f"{name}_part", "heads"], [f"{name}_split"]),
            helper.make_node("Transpose", [f"{name}_split"], [name], perm=[0, 2, 1, 3]),
        ]
    sizes = [
        helper.make_node("Shape", ["x"], ["lead"], end=2),
        helper.make_node("Concat", ["lead", "per_head"], ["heads"], axis=0),
    ]
    model = make_model(
        slices + sizes + splits,
        [("x", np.float32, ["batch", "sequence", 16])],
        [(n, np.float32, ["batch", 2, "sequence", 4]) for n in "qk"],
        bounds,
    )
    feeds = {"x": np.random.default_rng(5).standard_normal((2, 3, 16)).astype(np.float32)}
    result = assert_matches(model, tmp_path, feeds, shape=["2,3,16"])
    construct = result.script_path.read_text().split("def construct")[1]
    assert "ops.reshape(x[:, :, :8], " in construct, construct
    assert "ops.reshape(x[:, :, 8:], " in construct, construct


def test_heads_picked_then_normed_in_turn_are_one_statement_each(tmp_path):
    """Persimmon: q and k picked out of the fused heads, then both normed, then both turned;
    each head is one statement, ``q = self.<norm>(x[:, :, :, 0]).swapaxes(1, 2)``."""
    rng = np.random.default_rng(6)
    constants = {"zero": np.array(0, np.int64), "one": np.array(1, np.int64)}
    nodes = [
        helper.make_node("Gather", ["x", "zero"], ["q_part"], axis=3),
        helper.make_node("Gather", ["x", "one"], ["k_part"], axis=3),
    ]
    for name in "qk":
        constants[f"{name}_gamma"] = rng.standard_normal(4).astype(np.float32)
        constants[f"{name}_beta"] = rng.standard_normal(4).astype(np.float32)
        nodes.append(
            helper.make_node(
                "LayerNormalization",
                [f"{name}_part", f"{name}_gamma", f"{name}_beta"],
                [f"{name}_normed"],
                axis=-1,
            )
        )
    nodes += [
        helper.make_node("Transpose", [f"{name}_normed"], [name], perm=[0, 2, 1, 3])
        for name in "qk"
    ]
    model = make_model(
        nodes,
        [("x", np.float32, ["batch", "sequence", 2, 3, 4])],
        [(n, np.float32, ["batch", 2, "sequence", 4]) for n in "qk"],
        constants,
        opset=17,
    )
    for batch, seq in (2, 3), (1, 5):
        feeds = {"x": rng.standard_normal((batch, seq, 2, 3, 4)).astype(np.float32)}
        result = assert_matches(model, tmp_path / str(seq), feeds, shape=["2,3,2,3,4"])
    construct = result.script_path.read_text().split("def construct")[1].split("\n\n")[0]
    lines = [line.strip() for line in construct.splitlines()[1:] if line.strip()]
    assert lines[0].startswith("q = self.norm(x[:, :, :, 0]).swapaxes(1, 2)"), construct
    assert len(lines) == 3, construct  # q, k and the return


def _normed_projection(after_transpose: bool):
    """x (batch, sequence, 8) projected, normed (features of the whole projection, or of each
    head after the transpose), split into 2 heads of 4 and turned heads-first as ``y``."""
    rng = np.random.default_rng(4)
    norm_size = 4 if after_transpose else 8
    nodes = [
        helper.make_node("Shape", ["x"], ["lead"], end=2),
        helper.make_node("Concat", ["lead", "per_head"], ["heads"], axis=0),
        helper.make_node("MatMul", ["x", "weight"], ["projected"]),
        helper.make_node("Add", ["projected", "bias"], ["dense"]),
    ]
    if after_transpose:  # dense -> split -> turned -> norm -> y
        split_from, turned, norm_in, norm_out = "dense", "turned", "turned", "y"
    else:  # dense -> norm -> normed -> split -> y
        split_from, turned, norm_in, norm_out = "normed", "y", "dense", "normed"
    split = [
        helper.make_node("Reshape", [split_from, "heads"], ["split"]),
        helper.make_node("Transpose", ["split"], [turned], perm=[0, 2, 1, 3]),
    ]
    norm = helper.make_node("LayerNormalization", [norm_in, "gamma", "beta"], [norm_out], axis=-1)
    nodes += [*split, norm] if after_transpose else [norm, *split]
    return make_model(
        nodes,
        [("x", np.float32, ["batch", "sequence", 8])],
        [("y", np.float32, ["batch", 2, "sequence", 4])],
        {
            "weight": rng.standard_normal((8, 8)).astype(np.float32),
            "bias": rng.standard_normal(8).astype(np.float32),
            "gamma": rng.standard_normal(norm_size).astype(np.float32),
            "beta": rng.standard_normal(norm_size).astype(np.float32),
            "per_head": np.array([2, 4], np.int64),
        },
    )


def _construct_lines(model, tmp_path) -> list[str]:
    """The root's construct lines of ``model`` converted (numbers checked at two shapes)."""
    result = assert_matches(model, tmp_path, _feeds(2, 3, 8), shape=["2,3,8"])
    assert_matches(model, tmp_path / "other", _feeds(1, 5, 8), shape=["1,5,8"])
    construct = result.script_path.read_text().split("def construct")[-1]
    return [line.strip() for line in construct.splitlines()[1:] if line.strip()]


def test_a_projection_normed_before_its_head_split_is_written_inside_the_norm(tmp_path):
    """OLMo-2's q_norm over the whole projection, then the split:
    ``q = ops.reshape(self.norm(self.proj(x)), shape).swapaxes(1, 2)``, no ``proj =`` line."""
    lines = _construct_lines(_normed_projection(after_transpose=False), tmp_path)
    assert any(line.startswith("y = ops.reshape(self.") and "(self." in line[20:] for line in lines)
    assert not any(" = self." in line and "reshape" not in line for line in lines), lines


def test_a_head_split_normalised_after_its_transpose_is_written_inside_the_norm(tmp_path):
    """Gemma-3's q_norm after the transpose:
    ``y = self.norm(ops.reshape(self.proj(x), shape).swapaxes(1, 2))``, one statement."""
    lines = _construct_lines(_normed_projection(after_transpose=True), tmp_path)
    split = next(line for line in lines if "ops.reshape(" in line)
    assert split.startswith("y = self.") and split.endswith(".swapaxes(1, 2))"), lines
