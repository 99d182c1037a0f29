"""compare_training: the converted network trained next to PyTorch's run. The PyTorch half is
recorded by tools/make_training_reference.py (tests/fixtures/training_parity_*.npz), so these
tests need no torch; the last one runs the whole function when torch is importable."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest

from mindconverter import convert
from mindconverter.check.training import (
    Trajectory,
    compare_training,
    compare_trajectories,
    mindspore_trajectory,
)
from mindconverter.errors import MindConverterError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# As tools/make_training_reference.py recorded them.
LOSS, OPTIMIZER, LR, STEPS = "cross_entropy", "momentum", 0.1, 6
_modules = itertools.count()


def _batches():
    data = np.load(FIXTURES / "training_parity_batches.npz")
    return [(data[f"x{i}"], data[f"y{i}"]) for i in range(3)]


def _network(script: Path, checkpoint: Path):
    spec = importlib.util.spec_from_file_location(f"parity_net_{next(_modules)}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    network = module.MindSporeModel()
    ms.load_param_into_net(network, ms.load_checkpoint(str(checkpoint)), strict_load=True)
    return network


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("parity")
    return convert(FIXTURES / "training_parity.onnx", shape="5,6", output=folder)


def _compare(converted, script=None, network=None):
    script = script or converted.script_path
    network = network or _network(script, converted.checkpoint_path)
    ours = mindspore_trajectory(network, _batches(), LOSS, OPTIMIZER, LR, STEPS)
    reference = Trajectory.load(FIXTURES / "training_parity_trajectory.npz")
    return compare_trajectories(reference, ours, converted.weight_map_path, script)


@pytest.mark.slow
def test_the_converted_network_trains_like_pytorch(converted):
    result = _compare(converted)
    assert result.ok, result.text()
    assert len(result.steps) == STEPS and result.start is None
    for step in result.steps:
        assert abs(step.loss - step.reference_loss) < 1e-5 * max(1.0, abs(step.reference_loss))
    assert result.text().endswith("training matches")


@pytest.mark.slow
def test_tanh_gelu_leaves_the_pytorch_trajectory(converted, tmp_path):
    """The network as a bare nn.GELU() (the tanh approximation) would have been: the report
    names the first gradient off and the script line creating its cell."""
    script = tmp_path / "tanh_gelu.py"
    text = converted.script_path.read_text()
    assert "nn.GELU(approximate=False)" in text
    script.write_text(text.replace("nn.GELU(approximate=False)", "nn.GELU()"))
    result = _compare(converted, script=script)
    assert not result.ok
    first = result.steps[0].divergence
    assert first is not None and first.what == "gradient", result.text()
    assert first.script_line.startswith("tanh_gelu.py:") and "self.seq = " in first.script_line
    assert "training diverges" in result.text()


@pytest.mark.slow
def test_a_changed_starting_weight_is_named_with_its_pytorch_name(converted):
    network = _network(converted.script_path, converted.checkpoint_path)
    gamma = next(p for p in network.trainable_params() if p.name == "seq.2.gamma")
    gamma.set_data(ms.Tensor(gamma.asnumpy() + 0.01))
    result = _compare(converted, network=network)
    assert result.start is not None and result.start.name == "seq.2.gamma"
    assert result.start.source_name == "seq.2.weight"  # via the weight map
    assert abs(result.start.max_abs_error - 0.01) < 1e-6
    assert "value of seq.2.gamma (PyTorch seq.2.weight) off by 0.01" in result.text()


def test_trajectory_round_trips_through_npz(tmp_path):
    trajectory = Trajectory(
        losses=[1.5, 0.5],
        grads=[{"a.weight": np.ones((2, 3), np.float32)}, {"a.weight": np.zeros((2, 3))}],
        params=[{"a.weight": np.full((2, 3), float(i))} for i in range(3)],
    )
    trajectory.save(tmp_path / "t.npz")
    loaded = Trajectory.load(tmp_path / "t.npz")
    assert loaded.losses == [1.5, 0.5] and len(loaded.params) == 3 and len(loaded.grads) == 2
    np.testing.assert_array_equal(loaded.params[2]["a.weight"], np.full((2, 3), 2.0))
    report = compare_trajectories(trajectory, loaded)
    assert report.ok and report.steps[1].divergence is None


def test_bad_arguments_are_refused():
    with pytest.raises(MindConverterError) as caught:
        mindspore_trajectory(None, _batches(), loss_fn="hinge")
    assert caught.value.key == "BAD_ARGUMENT"
    with pytest.raises(MindConverterError, match="steps must be"):
        mindspore_trajectory(None, _batches(), steps=0)


def _torch_missing() -> bool:
    return importlib.util.find_spec("torch") is None


@pytest.mark.skipif(not _torch_missing(), reason="torch is installed")
def test_without_torch_the_error_says_so():
    with pytest.raises(MindConverterError) as caught:
        compare_training(object(), None, _batches(), LOSS)
    assert caught.value.key == "TORCH_MISSING"


@pytest.mark.slow
@pytest.mark.skipif(_torch_missing(), reason="needs torch")
def test_compare_training_runs_pytorch_and_mindspore(converted):
    """The whole function: the source model rebuilt in PyTorch from the fixture's weights."""
    import onnx
    import torch
    from onnx import numpy_helper

    weights = {
        init.name: torch.from_numpy(numpy_helper.to_array(init).copy())
        for init in onnx.load(FIXTURES / "training_parity.onnx").graph.initializer
    }
    source = torch.nn.Module()
    source.seq = torch.nn.Sequential(
        torch.nn.Linear(6, 16),
        torch.nn.GELU(),
        torch.nn.LayerNorm(16, eps=1e-3),
        torch.nn.Linear(16, 4),
    )
    source.forward = lambda x: source.seq(x)
    source.load_state_dict({k: v for k, v in weights.items() if k.startswith("seq.")})
    network = _network(converted.script_path, converted.checkpoint_path)
    result = compare_training(
        source,
        network,
        _batches(),
        loss_fn=LOSS,
        optimizer=OPTIMIZER,
        lr=LR,
        steps=STEPS,
        weight_map=converted.weight_map_path,
        script=converted.script_path,
    )
    assert result.ok, result.text()
