"""Converted models stay alive: one network serves other batch sizes and sequence lengths, holds
every source weight whole, has exactly PyTorch's trainable parameters (tied ones shared) and
gives PyTorch's gradients.

References come from PyTorch (tools/make_fixtures.py, ``export_with_gradients``): outputs at the
conversion shape and at another batch size and length, and the gradient of
``sum(logits * loss_weights)`` with respect to every trainable parameter.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mindconverter import convert
from mindconverter.check.network import build_network

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = [
    (model, exporter)
    for model in ("tiny_gpt", "tiny_lstm")
    for exporter in ("torchscript", "dynamo")
]


def _convert(tmp_path, model, exporter):
    import mindspore as ms

    ms.set_context(mode=ms.PYNATIVE_MODE)
    reference = dict(np.load(FIXTURES / f"{model}_reference.npz"))
    shape = ",".join(map(str, reference["ids"].shape))
    result = convert(FIXTURES / f"{model}_{exporter}.onnx", shape=[shape], output=tmp_path)
    assert result.fully_converted
    net = build_network(result.script_path, result.checkpoint_path)
    net.set_train(False)
    return result, net, reference


def _source_parameters(reference):
    return {k[len("param:") :]: v for k, v in reference.items() if k.startswith("param:")}


def _holder(net, value):
    """The network's parameter holding exactly ``value`` (weights are kept whole)."""
    found = [
        p
        for p in net.get_parameters()
        if p.shape == value.shape and np.array_equal(p.asnumpy(), value)
    ]
    return found[0] if found else None


@pytest.mark.parametrize("model, exporter", CASES)
def test_one_network_serves_other_batch_sizes_and_lengths(tmp_path, model, exporter):
    import mindspore as ms

    _, net, reference = _convert(tmp_path, model, exporter)
    for ids, logits in (("ids", "logits"), ("other_ids", "other_logits")):
        got = net(ms.Tensor(reference[ids])).asnumpy()
        np.testing.assert_allclose(got, reference[logits], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("model, exporter", CASES)
def test_trainable_parameters_are_the_sources_held_whole(tmp_path, model, exporter):
    result, net, reference = _convert(tmp_path, model, exporter)
    source = _source_parameters(reference)
    trainable = {p.name for p in net.trainable_params()}
    holders = {name: _holder(net, value) for name, value in source.items()}
    assert all(holder is not None for holder in holders.values()), [
        name for name, holder in holders.items() if holder is None
    ]
    assert {holder.name for holder in holders.values()} == trainable
    assert len(trainable) == len(source)  # tied weights are one Parameter, masks are frozen
    entries = json.loads(result.weight_map_path.read_text())
    assert len(next(iter(entries.values()))) == len(list(net.get_parameters()))


@pytest.mark.parametrize("model, exporter", CASES)
def test_gradients_match_pytorch(tmp_path, model, exporter):
    import mindspore as ms

    _, net, reference = _convert(tmp_path, model, exporter)
    weights = ms.Tensor(reference["loss_weights"])

    def loss(ids):
        return (net(ids) * weights).sum()

    params = net.trainable_params()
    grads = ms.grad(loss, grad_position=None, weights=params)(ms.Tensor(reference["ids"]))
    by_name = {p.name: g.asnumpy() for p, g in zip(params, grads)}
    scale = max(float(np.abs(v).max()) for k, v in reference.items() if k.startswith("grad:"))
    for name, value in _source_parameters(reference).items():
        got = by_name[_holder(net, value).name]
        np.testing.assert_allclose(
            got, reference[f"grad:{name}"], rtol=0, atol=2e-5 * scale, err_msg=name
        )


@pytest.mark.parametrize("model, exporter", [("tiny_gpt", "dynamo"), ("tiny_lstm", "torchscript")])
def test_graph_mode_compiles_once_for_every_size(tmp_path, model, exporter):
    import sys

    import mindspore as ms

    reference = dict(np.load(FIXTURES / f"{model}_reference.npz"))
    shape = ",".join(map(str, reference["ids"].shape))
    result = convert(FIXTURES / f"{model}_{exporter}.onnx", shape=[shape], output=tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = build_network(result.script_path, result.checkpoint_path)
        net.set_train(False)
        net.set_inputs(*sys.modules[type(net).__module__].dynamic_inputs())
        for ids, logits in (("ids", "logits"), ("other_ids", "other_logits")):
            got = net(ms.Tensor(reference[ids])).asnumpy()
            np.testing.assert_allclose(got, reference[logits], rtol=1e-4, atol=1e-5)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
