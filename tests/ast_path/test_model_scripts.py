"""Converted model-zoo style scripts build under MindSpore with PyTorch's trainable-parameter
counts and output shapes (recorded with real PyTorch by tools/record_ast_expectations.py)."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")

from mindconverter.ast_path import convert_script  # noqa: E402 - after the skip checks above

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
EXPECTATIONS = json.loads((HERE / "expectations.json").read_text())["cases"]
_counter = itertools.count()


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """fixture file name -> (conversion result, imported converted module); converted once."""
    previous_mode = ms.get_context("mode")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    cache = {}

    def get(name):
        if name not in cache:
            out = tmp_path_factory.mktemp("out")
            result = convert_script(FIXTURES / name, out)
            module_name = f"_ast_converted_{Path(name).stem}_{next(_counter)}"
            spec = importlib.util.spec_from_file_location(module_name, result.script_path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
            cache[name] = (result, module)
        return cache[name]

    yield get
    ms.set_context(mode=previous_mode)
    for key in [k for k in sys.modules if k.startswith("_ast_converted_")]:
        del sys.modules[key]


def _shapes(value):
    if isinstance(value, (tuple, list)):
        return [s for item in value for s in _shapes(item)]
    return [list(value.shape)]


@pytest.mark.parametrize("case", EXPECTATIONS, ids=[c["id"] for c in EXPECTATIONS])
def test_model_matches_pytorch(case, converted):
    result, module = converted(case["fixture"])
    assert result.unconverted <= 3, result.report_path.read_text()
    np.random.seed(0)
    net = eval(case["build"], vars(module))
    assert isinstance(net, ms.nn.Cell)
    params = sum(p.size for p in net.trainable_params())
    assert params == case["params"], (
        f"{case['id']}: {params} trainable parameters, PyTorch has {case['params']}"
    )
    if not case.get("forward", True):
        return
    net.set_train(False)
    inputs = []
    for spec in case["inputs"]:
        if "expr" in spec:
            inputs.append(eval(spec["expr"], dict(vars(module), net=net)))
        elif spec["dtype"].startswith("int"):
            inputs.append(ms.Tensor(np.random.randint(0, spec["high"], spec["shape"]), ms.int32))
        else:
            inputs.append(ms.Tensor(np.random.rand(*spec["shape"]).astype(np.float32)))
    out = net(*inputs)
    assert _shapes(out) == case["outputs"]


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.py")))
def test_output_is_valid_python_with_report(name, converted):
    result, _ = converted(name)
    code = result.script_path.read_text()
    ast.parse(code)
    assert "import torch" not in code
    report = result.report_path.read_text()
    assert report.startswith("[Start Convert]\n")
    assert "[Convert Over]" in report
    assert f"Converted Rate: {result.converted_rate:.2f}%." in report
    lines = code.splitlines()
    for line in report.splitlines():
        if line.startswith("line "):
            number = int(line.split()[1].split(":")[0])
            assert 1 <= number <= len(lines), line
