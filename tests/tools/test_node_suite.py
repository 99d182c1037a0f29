"""The ONNX backend node test suite, end to end (slow; CI runs it: ``pytest -m slow -n 2``).

Every in-scope node test is converted with the real pipeline, run in MindSpore with the generated
checkpoint and compared with the suite's reference outputs (``tools/node_suite.py``). A test must
pass, or be listed with its reason in ``docs/node_suite_known_failures.json`` (then it is an
expected failure). A known failure that starts passing fails too, so the list stays true.
"""

from __future__ import annotations

import faulthandler
import os
import signal

import pytest

from tools import node_suite as suite

TIMEOUT = int(os.environ.get("NODE_SUITE_TIMEOUT", "120"))  # seconds per test

pytestmark = pytest.mark.slow

_TESTS = suite.in_scope_tests()
_KNOWN = suite.load_known_failures()


class _TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise _TestTimeout(f"no result within {TIMEOUT} s")


@pytest.mark.parametrize("node_test", _TESTS, ids=[t.name for t in _TESTS])
def test_node(node_test: suite.NodeTest, tmp_path):
    # soft limit: an exception in Python code; hard limit: end the worker (xdist replaces it)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    faulthandler.dump_traceback_later(TIMEOUT * 2, exit=True)
    try:
        outcome = suite.run_node_test(node_test, work_dir=tmp_path)
    except _TestTimeout as exc:
        outcome = suite.Outcome(node_test.name, "timeout", str(exc))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        faulthandler.cancel_dump_traceback_later()
    known = _KNOWN.get(node_test.name)
    if outcome.passed:
        assert known is None, (
            f"{node_test.name} passes now: remove it from docs/node_suite_known_failures.json"
        )
        return
    if known is not None and not known.explains(outcome):
        pytest.fail(
            f"documented as failing with {known.status!r}, but now {outcome.status}: {outcome.reason}",
            pytrace=False,
        )
    if known is not None:
        pytest.xfail(f"{known.reason} [{outcome.status}: {outcome.reason}]")
    pytest.fail(f"{outcome.status}: {outcome.reason}", pytrace=False)


def test_scope_rules():
    """Out-of-scope categories are excluded, expanded function bodies are kept."""
    tests = {t.name: t for t in suite.load_manifest()}
    assert tests["test_bernoulli"].excluded and tests["test_identity_sequence"].excluded
    assert tests["test_strnormalizer_nostopwords_nochangecase"].excluded
    assert tests["test_training_dropout"].excluded
    # optimizer steps, quantization and ai.onnx.ml operators are in scope
    assert not tests["test_adam"].excluded and not tests["test_quantizelinear"].excluded
    assert not tests["test_softmax_axis_0_expanded"].excluded
    assert tests["test_softmax_axis_0_expanded"].primary_op == "Softmax"
    assert not tests["test_conv_with_strides_padding"].excluded


def test_freeze_rules():
    """Configuration inputs and layer weights become initializers; operands and sole inputs do not."""
    import onnx

    data_dir = suite.ensure_test_data()

    def frozen(name):
        folder = data_dir / name
        model = onnx.load(str(folder / "model.onnx"))
        inputs, _ = suite.read_data_set(folder, model)
        return suite.parameter_inputs(model, inputs)

    assert frozen("test_reshape_negative_dim") == ["shape"]
    assert frozen("test_slice") == ["starts", "ends", "axes", "steps"]
    assert frozen("test_conv_with_strides_padding") == ["W"]
    assert frozen("test_add") == [] and frozen("test_gather_0") == []
    assert (
        frozen("test_range_float_type_positive_delta") == []
    )  # would leave Range no runtime input
