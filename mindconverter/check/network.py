"""Run a generated network: import its script from any file name, build ``MindSporeModel`` with
its checkpoint (strictly: no missing, no left-over parameter) and call it on numpy inputs."""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import itertools
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import make_error
from ..graph.container_types import widened

_module_counter = itertools.count()
# MindSpore's context (PYNATIVE/GRAPH mode, its compiler caches) belongs to the process, and
# calls from several threads at once abort it: one generated network runs at a time.
_MINDSPORE = threading.RLock()


@contextlib.contextmanager
def mindspore_lock() -> Iterator[None]:
    """Hold MindSpore for one caller (re-entrant: a holder may call the functions below)."""
    with _MINDSPORE:
        yield


def load_generated_module(script: Path):
    """Import a generated script from any file name (staged files end in .tmp)."""
    name = f"mindconverter_generated_{next(_module_counter)}"
    loader = importlib.machinery.SourceFileLoader(name, str(script))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # GRAPH mode compiles construct() by importing its module by name
    loader.exec_module(module)
    return module


def build_network(script: Path, checkpoint: Path):
    """Instantiate ``MindSporeModel`` from the script and load the checkpoint into it.

    Returns the network; raises if a parameter is missing or left over.
    """
    os.environ.setdefault("GLOG_v", "3")  # MindSpore's own warnings would fill stderr
    with mindspore_lock():
        return _build_network(script, checkpoint)


def _build_network(script: Path, checkpoint: Path):
    import mindspore as ms

    module = load_generated_module(script)
    net = module.MindSporeModel()
    if not net.parameters_dict() and Path(checkpoint).stat().st_size == 0:
        net.set_train(False)
        return net  # a network without weights: MindSpore refuses to load an empty checkpoint
    form = "safetensors" if str(checkpoint).endswith(".safetensors") else "ckpt"
    params = ms.load_checkpoint(str(checkpoint), format=form)
    not_loaded, unused = ms.load_param_into_net(net, params, strict_load=True)
    if not_loaded or unused:
        raise make_error(
            "VERIFY_FAILED",
            f"Checkpoint does not fit the network: missing {list(not_loaded)[:5]}, unused {list(unused)[:5]}.",
        )
    net.set_train(False)
    return net


def run_mindspore(
    script: Path, checkpoint: Path, inputs: list[np.ndarray], graph_mode: bool = False
) -> list[np.ndarray]:
    """Run the converted network on numpy inputs; returns numpy outputs. Inputs of types
    MindSpore cannot hold (float8, int4...) are passed in their containers, as the script
    declares them."""
    os.environ.setdefault("GLOG_v", "3")  # MindSpore's own warnings would fill stderr
    with mindspore_lock():
        return _run(script, checkpoint, inputs, graph_mode)


def _run(script: Path, checkpoint: Path, inputs: list[np.ndarray], graph_mode: bool) -> list:
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE if graph_mode else ms.PYNATIVE_MODE)
    try:
        net = build_network(script, checkpoint)
        declare = getattr(sys.modules.get(type(net).__module__), "dynamic_inputs", None)
        if graph_mode and declare is not None:
            net.set_inputs(*declare())  # one graph for every size of the dynamic dimensions
        result = net(*[ms.Tensor(widened(array)) for array in inputs])
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    results = result if isinstance(result, (tuple, list)) else [result]
    return [r.asnumpy() if hasattr(r, "asnumpy") else np.asarray(r) for r in results]
