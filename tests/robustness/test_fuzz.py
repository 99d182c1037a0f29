"""Fuzzing the loader and the CLI: every input ends in a valid conversion or a clean error.

Mutation-based: truncations, bit flips, byte edits and protobuf field changes of valid models.
Property-based (hypothesis): random --shape text and randomly wired small graphs.
"Clean" means: exit code 0, 1 or 2; on failure exactly one error line whose code is in the
table and is not the internal-error code; on success a script that compiles and all four
results; never a temporary file left behind, never a change to the input file.
Scale with MINDCONVERTER_FUZZ_SCALE (default 1; CI nightly may use more).
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from tests.helpers import make_model
from tests.robustness.util import error_of, run_cli, valid_model

SCALE = float(os.environ.get("MINDCONVERTER_FUZZ_SCALE", "1"))
F = np.float32
COUNTS: dict[str, int] = {}


def conv_model() -> onnx.ModelProto:
    """Conv + BatchNorm + Reshape with a shape constant + Gemm: weights, attributes, constants."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node(
            "Conv", ["x", "cw", "cb"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv"
        ),
        helper.make_node(
            "BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], epsilon=1e-5, name="bn"
        ),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("Shape", ["r"], ["sh"]),
        helper.make_node("Gather", ["sh", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["b1"]),
        helper.make_node("Concat", ["b1", "minus1"], ["newshape"], axis=0),
        helper.make_node("Reshape", ["r", "newshape"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fw", "fb"], ["y"], transB=1),
    ]
    inits = {
        "cw": rng.standard_normal((2, 1, 3, 3)).astype(F),
        "cb": np.zeros(2, F),
        "s": np.ones(2, F),
        "b": np.zeros(2, F),
        "m": np.zeros(2, F),
        "v": np.ones(2, F),
        "zero": np.array(0, np.int64),
        "axes": np.array([0], np.int64),
        "minus1": np.array([-1], np.int64),
        "fw": rng.standard_normal((3, 32)).astype(F),
        "fb": np.zeros(3, F),
    }
    return make_model(nodes, [("x", F, [1, 1, 4, 4])], [("y", F, None)], inits, opset=13)


SEEDS = {"mlp": valid_model(), "conv": conv_model()}


def check_clean(tmp_path: Path, data: bytes, extra=(), name: str = "m.onnx", kind: str = "") -> int:
    """Convert ``data``; assert a clean outcome; returns the exit code."""
    COUNTS[kind] = COUNTS.get(kind, 0) + 1
    case = tmp_path / f"case{COUNTS[kind]}"
    case.mkdir()
    model = case / name
    model.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    out = case / "out"
    code, stdout, stderr = run_cli(["--model_file", model, "--output", out, *extra])
    assert "Traceback" not in stdout + stderr
    assert hashlib.sha256(model.read_bytes()).hexdigest() == digest, "input modified"
    assert sorted(p.name for p in case.iterdir()) in (
        ["m.onnx"],
        ["m.onnx", "out"],
        [name],
        [name, "out"],
    )
    if code == 0:
        assert stderr == ""
        files = sorted(p.name for p in out.iterdir())
        assert len(files) == 4 and not any(f.startswith(".") for f in files), files
        script = next(out.glob("*.py"))
        compile(script.read_text(), str(script), "exec")
    else:
        assert code in (1, 2)
        key, _ = error_of(stderr)
        if key == "INTERNAL_ERROR":
            debug = run_cli(["--model_file", model, "--output", case / "dbg", *extra, "--debug"])[2]
            pytest.fail(f"internal error on fuzzed input {model}:\n{debug[-3000:]}")
        assert not out.exists(), "failed run left an output folder"
    return code


# --- mutation-based ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed_name", list(SEEDS))
def test_truncations(tmp_path, seed_name):
    data = SEEDS[seed_name].SerializeToString()
    rng = random.Random(1)
    cuts = sorted(
        {0, 1, 2, len(data) - 1} | {rng.randrange(1, len(data)) for _ in range(int(25 * SCALE))}
    )
    for cut in cuts:
        check_clean(tmp_path, data[:cut] or b"\x00", kind="truncation")


@pytest.mark.parametrize("seed_name", list(SEEDS))
def test_bit_flips_and_byte_edits(tmp_path, seed_name):
    data = SEEDS[seed_name].SerializeToString()
    rng = random.Random(seed_name)
    for _ in range(int(60 * SCALE)):
        mutated = bytearray(data)
        for _ in range(rng.choice([1, 1, 2, 4, 16])):
            position = rng.randrange(len(mutated))
            action = rng.random()
            if action < 0.6:
                mutated[position] ^= 1 << rng.randrange(8)
            elif action < 0.75:
                mutated[position] = rng.randrange(256)
            elif action < 0.85:
                del mutated[position]
            elif action < 0.95:
                mutated.insert(position, rng.randrange(256))
            else:
                size = rng.randrange(1, 16)
                mutated[position:position] = mutated[position : position + size]
        check_clean(tmp_path, bytes(mutated), kind="bytes")


def _field_mutations(model: onnx.ModelProto, rng: random.Random) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    choice = rng.randrange(16)
    node = g.node[rng.randrange(len(g.node))]
    if choice == 0 and g.initializer:
        t = g.initializer[rng.randrange(len(g.initializer))]
        t.dims[:] = [
            rng.choice([0, 1, 2, 3, -1, 7, 1 << 31, 1 << 62]) for _ in range(rng.randrange(0, 4))
        ]
    elif choice == 1 and g.initializer:
        g.initializer[rng.randrange(len(g.initializer))].data_type = rng.randrange(0, 30)
    elif choice == 2:
        node.op_type = rng.choice(
            ["Relu", "Conv", "NoSuchOp", "", "If", "Loop", "Reshape", "Gemm", "Cast"]
        )
    elif choice == 3:
        node.input[:] = [
            rng.choice(["x", "", "ghost", "y", "r"] + list(node.output)) for _ in node.input
        ]
    elif choice == 4:
        node.output[:] = [rng.choice(["x", "y", "", "dup", "cw"]) for _ in node.output]
    elif choice == 5:
        m.opset_import[0].version = rng.choice(
            [0, 1, 6, 7, 9, 11, 13, 18, 21, 23, 24, 28, 29, 10000]
        )
    elif choice == 6 and node.attribute:
        attr = node.attribute[rng.randrange(len(node.attribute))]
        if attr.ints:
            attr.ints[:] = [
                rng.choice([-5, -1, 0, 1, 3, 1 << 40]) for _ in range(rng.randrange(0, 6))
            ]
        elif attr.type == onnx.AttributeProto.INT:
            attr.i = rng.choice([-7, -1, 0, 2, 99, 1 << 62])
        else:
            attr.f = rng.choice([float("nan"), float("inf"), -1.0, 0.0, 1e30])
    elif choice == 7:
        node.attribute.append(
            helper.make_attribute(
                rng.choice(["axis", "pads", "to", "mode", "perm"]),
                rng.choice([3, [1, 2], "nearest'\n", 1.5, [0, 0, -1]]),
            )
        )
    elif choice == 8:
        dims = g.input[0].type.tensor_type.shape.dim
        if dims:
            d = dims[rng.randrange(len(dims))]
            if rng.random() < 0.5:
                d.dim_value = rng.choice([0, 1, 5, -2, 1 << 45])
            else:
                d.dim_param = rng.choice(["N", "", "batch size"])
    elif choice == 9:
        g.input[0].type.tensor_type.elem_type = rng.choice([0, 2, 6, 7, 8, 9, 10, 11, 16, 99])
    elif choice == 10:
        g.output[0].name = rng.choice(["x", "ghost", "", "cw", g.node[0].output[0]])
    elif choice == 11:
        nodes = list(g.node)
        rng.shuffle(nodes)
        del g.node[:]
        g.node.extend(nodes)
    elif choice == 12:
        del g.node[rng.randrange(len(g.node))]
    elif choice == 13:
        node.domain = rng.choice(["com.microsoft", "ai.onnx", "ai.onnx.ml", "x\n'"])
    elif choice == 14 and g.initializer:
        t = g.initializer[rng.randrange(len(g.initializer))]
        t.raw_data = t.raw_data[: rng.randrange(0, len(t.raw_data) + 1)] + b"\x00" * rng.randrange(
            0, 3
        )
    else:
        g.node.append(
            helper.make_node(
                rng.choice(["Range", "ConstantOfShape", "Tile", "Expand"]),
                [g.node[-1].output[0]] * rng.randrange(1, 4),
                ["extra"],
            )
        )
        g.output[0].name = "extra"
    m.ir_version = rng.choice([m.ir_version] * 5 + [0, 3, 13, 99])
    return m


@pytest.mark.parametrize("seed_name", list(SEEDS))
def test_field_mutations(tmp_path, seed_name):
    rng = random.Random(f"fields-{seed_name}")
    for _ in range(int(70 * SCALE)):
        model = SEEDS[seed_name]
        for _ in range(rng.choice([1, 1, 2, 3])):
            model = _field_mutations(model, rng)
        check_clean(tmp_path, model.SerializeToString(), kind="fields")


# --- property-based (hypothesis) -------------------------------------------------------------------

FAST = settings(
    max_examples=int(60 * SCALE),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FAST
@given(
    text=st.text(
        alphabet=st.sampled_from(list("0123456789,-+ []x()\u0661.\n")) | st.characters(),
        max_size=20,
    )
)
def test_shape_argument_text(tmp_path_factory, text):
    tmp_path = tmp_path_factory.mktemp("shape")
    code = check_clean(
        tmp_path, valid_model().SerializeToString(), extra=["--shape", text], kind="shape-text"
    )
    assert code in (0, 1, 2)


UNARY = [
    "Relu",
    "Sigmoid",
    "Neg",
    "Abs",
    "Exp",
    "Tanh",
    "Identity",
    "Softmax",
    "Flatten",
    "Transpose",
]
BINARY = ["Add", "Mul", "Sub", "Div", "MatMul", "Max", "Concat", "Pow"]
NAME = st.text(min_size=1, max_size=12) | st.sampled_from(
    ["x", "class", "self", "construct", "1a", "a b"]
)


@st.composite
def random_graphs(draw):
    n_inputs = draw(st.integers(1, 3))
    dims = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    names = draw(st.lists(NAME, min_size=n_inputs + 8, max_size=n_inputs + 8, unique=True))
    inputs = names[:n_inputs]
    available = list(inputs)
    nodes = []
    for index in range(draw(st.integers(1, 6))):
        out = names[n_inputs + index]
        pick = (
            st.sampled_from(available + ["ghost"])
            if draw(st.integers(0, 20)) == 0
            else st.sampled_from(available)
        )
        if draw(st.booleans()):
            op = draw(st.sampled_from(UNARY))
            attrs = (
                {"axis": draw(st.integers(-4, 3))}
                if op in ("Softmax", "Flatten") and draw(st.booleans())
                else {}
            )
            nodes.append(helper.make_node(op, [draw(pick)], [out], name=draw(NAME), **attrs))
        else:
            op = draw(st.sampled_from(BINARY))
            attrs = {"axis": draw(st.integers(-3, 2))} if op == "Concat" else {}
            nodes.append(
                helper.make_node(op, [draw(pick), draw(pick)], [out], name=draw(NAME), **attrs)
            )
        available.append(out)
    if draw(st.integers(0, 10)) == 0:
        nodes.append(helper.make_node('Strange"Op', [available[-1]], ["odd"], domain="vendor"))
        available.append("odd")
    outputs = draw(
        st.lists(st.sampled_from(available[n_inputs:]), min_size=1, max_size=2, unique=True)
    )
    shape = [draw(st.sampled_from([d, "N"])) if draw(st.integers(0, 6)) == 0 else d for d in dims]
    return make_model(
        nodes,
        [(name, F, shape) for name in inputs],
        [(name, F, None) for name in outputs],
        opset=draw(st.sampled_from([7, 11, 13, 17, 21])),
        extra_opsets={"vendor": 1},
    )


@FAST
@given(model=random_graphs(), with_shape=st.booleans())
def test_random_graphs(tmp_path_factory, model, with_shape):
    tmp_path = tmp_path_factory.mktemp("graph")
    extra = []
    if with_shape:
        dims = [d.dim_value or 2 for d in model.graph.input[0].type.tensor_type.shape.dim]
        extra = ["--shape", *[",".join(map(str, dims))] * len(model.graph.input)]
    check_clean(tmp_path, model.SerializeToString(), extra=extra, kind="hypothesis-graph")


@FAST
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".onnx", ".pb", ".ONNX", ".txt"]))
def test_random_bytes(tmp_path_factory, data, suffix):
    tmp_path = tmp_path_factory.mktemp("bytes")
    check_clean(tmp_path, data, name=f"m{suffix}", kind="hypothesis-bytes")


def test_zz_report_counts(capsys):
    """Prints how many fuzz cases this worker ran (visible with -s; recorded in the closing note)."""
    with capsys.disabled():
        print(f"\nfuzz cases run in this worker: {sum(COUNTS.values())} {COUNTS}")
