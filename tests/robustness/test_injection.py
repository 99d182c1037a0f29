"""No code injection: text from a hostile model never becomes code in the generated script.

The model below puts Python payloads in every name and text field a model has. Each payload, if
it ever ran, would create a sentinel file. The test converts the model, imports the generated
script in a fresh interpreter, builds the network and loads the checkpoint, then checks the
sentinel does not exist and the script's syntax tree holds only what mindconverter writes.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.codegen.naming import Namer, class_name, comment_text, identifier, module_name
from tests.helpers import make_model


def payloads(sentinel) -> list[str]:
    """Strings that would run code (create ``sentinel``) if pasted into a script unescaped."""
    cmd = f"open({str(sentinel)!r}, 'w').close()"
    return [
        f"x); import os; os.system('touch {sentinel}') #",
        f"\n{cmd}\n#",
        f'"""\n{cmd}\n"""',
        f"'''\n{cmd}\n'''",
        f"\\\n{cmd}",
        f"\r{cmd}",
        f"\u2028{cmd}",
        f"\x0c{cmd}",
        f"a' + {cmd} + 'b",
        f'a" + {cmd} + "b',
        f"{{{cmd}}}",
        f"\\'; {cmd}; '",
    ]


def hostile_model(sentinel) -> onnx.ModelProto:
    evil = payloads(sentinel)
    long_name = "n" * 500 + evil[0]
    x1, x2 = evil[0], evil[2]
    w_name, b_name = evil[1], "construct"
    nodes = [
        helper.make_node(
            "MatMul", [x1, w_name], ["h" + evil[3]], name="/construct/" + evil[4] + "/MatMul"
        ),
        helper.make_node("Add", ["h" + evil[3], b_name], [long_name], name=evil[5]),
        helper.make_node("Relu", [long_name], ["r"], name="/training/" + evil[6] + "/Relu"),
        helper.make_node(
            f"Evil'''\"\"\"Op\n{evil[1]}",
            ["r", x2],
            ["u1" + evil[7], "u2"],
            domain="com.evil\n#" + evil[8],
            name=evil[9],
            note=evil[10],
            payload=evil[11].encode(),
        ),
        helper.make_node("Add", ["u1" + evil[7], "r"], ["out " + evil[8]], name="1" * 10),
        helper.make_node("Sigmoid", ["r"], ["class"], name="self"),
        helper.make_node("Mul", ["class", "__init__"], ["ops"], name="ops"),
        helper.make_node("Neg", ["ops"], ["\u6743\u91cd" + evil[9]], name="\u6743\u91cd"),
    ]
    model = make_model(
        nodes,
        [(x1, np.float32, [1, 4]), (x2, np.float32, [1, 3])],
        [
            ("out " + evil[8], np.float32, None),
            ("u2", np.float32, None),
            ("\u6743\u91cd" + evil[9], np.float32, None),
        ],
        {
            w_name: np.ones((4, 3), np.float32),
            b_name: np.full((3,), 0.5, np.float32),
            "__init__": np.full((1, 3), 2.0, np.float32),
        },
        extra_opsets={"com.evil\n#" + evil[8]: 1},
    )
    model.producer_name = evil[2]
    model.producer_version = evil[3]
    model.doc_string = evil[4]
    model.graph.name = evil[5]
    model.graph.doc_string = evil[6]
    for node in model.graph.node:
        node.doc_string = evil[7]
        entry = node.metadata_props.add()
        entry.key, entry.value = "pkg.torch.onnx.name_scopes", f"['', '{evil[1]}', 'training']"
    meta = model.metadata_props.add()
    meta.key, meta.value = evil[0], evil[1]
    return model


ALLOWED_IMPORTS = {"math", "mindspore"}


def _check_tree(code: str) -> None:
    """Only mindconverter's own imports; no call to anything but ms/nn/ops/cells/builtins it uses."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert {alias.name.split(".")[0] for alias in node.names} <= ALLOWED_IMPORTS
        if isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] in ALLOWED_IMPORTS
        if isinstance(node, ast.Name):
            assert node.id not in {
                "os",
                "open",
                "exec",
                "eval",
                "__import__",
                "system",
                "compile",
            }, node.id
        if isinstance(node, ast.Attribute):
            assert node.attr not in {"system", "popen", "close"}, node.attr
    # module level: only imports, classes and the docstring-free header
    for stmt in tree.body:
        assert isinstance(stmt, (ast.Import, ast.ImportFrom, ast.ClassDef)), ast.dump(stmt)[:200]


def test_hostile_model_script_imports_and_runs_nothing(tmp_path):
    sentinel = tmp_path / "PWNED"
    model_file = tmp_path / "evil\nimport os;os.system('touch PWNED')#.onnx"
    model_file.write_bytes(hostile_model(sentinel).SerializeToString())
    out = tmp_path / "out"
    result = convert(model_file, output=out)
    code = result.script_path.read_text()
    compile(code, str(result.script_path), "exec")
    _check_tree(code)
    assert result.unconverted and "Evil" in result.unconverted[0].op_type
    assert result.script_path.name.isascii() and "\n" not in result.script_path.name
    # Import the script in a fresh interpreter, build the net, load the checkpoint.
    runner = textwrap.dedent(f"""
        import importlib.util, sys
        import mindspore as ms
        spec = importlib.util.spec_from_file_location("converted", {str(result.script_path)!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        net = module.MindSporeModel()
        missing, unexpected = ms.load_param_into_net(net, ms.load_checkpoint({str(result.checkpoint_path)!r}))
        assert not missing and not unexpected, (missing, unexpected)
        assert callable(net.construct)
        print("IMPORTED-OK")
    """)
    done = subprocess.run(
        [sys.executable, "-c", runner],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "IMPORTED-OK" in done.stdout
    assert not sentinel.exists(), "code from the model ran on import"
    assert not (tmp_path / "PWNED").exists()
    # the report and weight map carry the text only in escaped form
    report = result.report_path.read_text()
    assert all("\n" not in line for line in report.splitlines())
    import json

    json.loads(result.weight_map_path.read_text())


@pytest.mark.parametrize(
    "text",
    payloads("/tmp/x")
    + [
        "",
        "_",
        "123",
        "class",
        "match",
        "self",
        "print",
        "a" * 1000,
        "\u00e9t\u00e9",
        "\U0001f600",
        "__init__",
    ],
)
def test_identifier_is_a_plain_identifier(text):
    name = identifier(text)
    assert name.isidentifier() and name.isascii() and len(name) <= 60
    import keyword

    assert not keyword.iskeyword(name) and not keyword.issoftkeyword(name)
    assert class_name(text).isidentifier()
    assert module_name(text or "m").isidentifier()
    line = comment_text(text)
    assert "\n" not in line and "\r" not in line and all(ch.isprintable() for ch in line)


def test_collisions_after_sanitising_get_distinct_names():
    namer = Namer()
    names = [namer.claim(text) for text in ["a-b", "a_b", "a.b", "A B", "a\nb", "a" * 60, "a" * 61]]
    assert len(set(names)) == len(names)
