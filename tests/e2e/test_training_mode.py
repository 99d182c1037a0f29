"""A training-mode export behaves like the PyTorch model in train and eval mode.

The references come from PyTorch (tools/make_fixtures.py): the model's outputs in eval mode, in
train mode (batch statistics, dropout switched off on both sides so the numbers are
comparable), and the running statistics after that training step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mindconverter import convert
from mindconverter.check.network import build_network

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _network(tmp_path):
    import mindspore as ms

    ms.set_context(mode=ms.PYNATIVE_MODE)
    result = convert(FIXTURES / "tiny_cnn_training.onnx", shape=["2,3,8,8"], output=tmp_path)
    assert result.fully_converted
    script = result.script_path.read_text()
    assert "nn.BatchNorm2d(num_features=6, eps=1e-05, momentum=0.9)" in script
    assert "nn.Dropout(p=0.25)" in script
    return build_network(result.script_path, result.checkpoint_path)


def test_eval_mode_uses_the_running_statistics(tmp_path):
    import mindspore as ms

    reference = np.load(FIXTURES / "tiny_cnn_training_reference.npz")
    net = _network(tmp_path)
    net.set_train(False)
    got = net(ms.Tensor(reference["input"])).asnumpy()
    np.testing.assert_allclose(got, reference["eval_logits"], rtol=1e-4, atol=1e-5)


def test_train_mode_uses_batch_statistics_and_updates_the_moving_ones(tmp_path):
    import mindspore as ms

    reference = np.load(FIXTURES / "tiny_cnn_training_reference.npz")
    net = _network(tmp_path)
    net.set_train(True)
    net.drop.set_train(False)
    got = net(ms.Tensor(reference["input"])).asnumpy()
    np.testing.assert_allclose(got, reference["train_logits"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        net.bn1.moving_mean.asnumpy(), reference["bn1_running_mean"], rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        net.bn1.moving_variance.asnumpy(), reference["bn1_running_var"], rtol=1e-4, atol=1e-6
    )
    assert not np.allclose(got, reference["eval_logits"], atol=1e-3)


def test_dropout_is_random_only_in_train_mode(tmp_path):
    import mindspore as ms

    net = _network(tmp_path)
    x = ms.Tensor(np.ones((4, 8), np.float32))
    net.drop.set_train(False)
    np.testing.assert_array_equal(net.drop(x).asnumpy(), np.ones((4, 8)))
    net.drop.set_train(True)
    values = net.drop(x).asnumpy()
    kept = np.isclose(values, 1 / 0.75)
    assert np.all(kept | (values == 0)) and (values == 0).any() and kept.any()


def test_verification_says_why_it_is_skipped(tmp_path):
    said = []
    result = convert(
        FIXTURES / "tiny_cnn_training.onnx",
        shape=["2,3,8,8"],
        output=tmp_path,
        verify=True,
        log=said.append,
    )
    assert result.verification is None
    assert any("training-mode export" in line for line in said)
