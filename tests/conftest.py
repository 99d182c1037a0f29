"""Shared pytest setup: MindSpore in PyNative mode, quiet logs."""

import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore: errors only

import pytest

# The quick lane (``pytest -m "not slow"``) is the loop a developer runs after every change: every
# unit, every mapper in PyNative mode, the goldens, the architecture and the error paths. What
# costs seconds per test runs in the full lane only; these modules are slow as a whole.
SLOW_MODULES = {
    "e2e": "whole models through every output and mode",
    "outputs/test_scaffold.py": "trains networks for several steps",
    "outputs/test_mindir.py": "compiles and exports MindIR",
    "robustness/test_properties.py": "randomised models, each converted and run",
    "robustness/test_fuzz.py": "randomised corruptions of whole models",
    "robustness/test_mutation_fuzz.py": "randomised corruptions of whole models",
    "robustness/test_round_two.py": "signals a conversion in a child process",
    "frontends/test_tf_graphdef_rnn.py": "builds and freezes Keras models",
    "frontends/test_tf_graphdef_models.py": "builds and freezes Keras models",
    "frontends/test_tf_graphdef_errors.py": "starts TensorFlow in child processes",
    "ast_path/test_model_scripts.py": "converts whole torchvision-style scripts",
}


def _in_slow_module(relative: str) -> bool:
    return any(relative == module or relative.startswith(module + "/") for module in SLOW_MODULES)


def pytest_ignore_collect(collection_path, config):
    """In the quick lane, slow modules are not even imported (TensorFlow alone takes seconds)."""
    if config.getoption("markexpr") != "not slow":
        return None
    tests_root = config.rootpath / "tests"
    if not collection_path.is_relative_to(tests_root):
        return None
    return _in_slow_module(collection_path.relative_to(tests_root).as_posix()) or None


def pytest_collection_modifyitems(config, items):
    """Mark the slow modules, and every GRAPH_MODE twin of a test (``graph_mode=True``: a
    compilation of seconds, where the PyNative twin stays in the quick lane)."""
    tests_root = config.rootpath / "tests"
    for item in items:
        relative = item.path.relative_to(tests_root).as_posix()
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("graph_mode") is True or _in_slow_module(relative):
            item.add_marker(pytest.mark.slow)
