"""The node-suite runner runs cases as a user runs mindconverter: the CLI with every input named
and shaped, then the script and checkpoint in a fresh process."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from onnx import helper

from tests.helpers import make_model
from tools import node_suite as suite
from tools import node_suite_cli as cli
from tools import run_node_suite as runner


def test_every_input_is_named_and_shaped_as_the_data_has_it():
    model = make_model(
        [helper.make_node("Add", ["x", "s"], ["y"])],
        [("x", np.float32, ["n", 0]), ("s", np.float32, []), ("b", np.float32, [2, 3])],
        [("y", np.float32, None)],
    )
    inputs = [np.zeros((4, 0), np.float32), np.float32(1.0), np.ones((2, 3), np.float32)]
    assert cli.shape_arguments(model, inputs) == ["x=4,0", "s=", "b=2,3"]


def test_layer_weights_stay_inputs_for_the_cli_run():
    data_dir = suite.ensure_test_data()
    model = suite.onnx.load(str(data_dir / "test_convtranspose_pads" / "model.onnx"))
    inputs, _ = suite.read_data_set(data_dir / "test_convtranspose_pads", model)
    assert suite.parameter_inputs(model, inputs) == ["W"]
    assert suite.parameter_inputs(model, inputs, weights=False) == []


def test_sampling_is_reproducible_and_filters_by_operator():
    tests = suite.in_scope_tests()
    first = runner.select_tests(tests, sample=20, seed=5)
    assert len(first) == 20 and first == runner.select_tests(tests, sample=20, seed=5)
    assert first != runner.select_tests(tests, sample=20, seed=6)
    resize = runner.select_tests(tests, ops=["resize"])
    assert resize and all("Resize" in t.op_types for t in resize)


@pytest.mark.slow
def test_cases_run_through_the_cli_and_a_fresh_process():
    """A plain case, a zero-size input and a run-time weight pass."""
    tests = {t.name: t for t in suite.in_scope_tests()}
    names = ["test_abs", "test_reduce_prod_empty_set", "test_convtranspose_pads"]
    outcomes = runner.run_tests(
        [tests[name] for name in names], suite.default_data_dir(), workers=1, progress=False
    )
    assert {name: outcomes[name].status for name in names} == dict.fromkeys(names, "pass")


@pytest.mark.slow
def test_the_check_process_notices_wrong_values(tmp_path):
    """The same converted case against expected outputs moved by 1: a mismatch."""
    test = next(t for t in suite.in_scope_tests() if t.name == "test_abs")
    case = cli.prepare_case(test, suite.default_data_dir(), tmp_path / "abs")
    assert cli.convert_case(case, timeout=120) is None
    data = tmp_path / "abs" / "data.pickle"
    inputs, expected = pickle.loads(data.read_bytes())
    data.write_bytes(pickle.dumps((inputs, [e + 1 for e in expected])))
    found = {}
    cli.check_cases([case], tmp_path, 1, 1, 120, lambda c, o: found.setdefault(o.name, o))
    assert found["test_abs"].status == "mismatch"
