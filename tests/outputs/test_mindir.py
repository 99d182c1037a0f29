"""--mindir: the converted network exported with mindspore.export, loaded back with
mindspore.load + nn.GraphCell, computes onnxruntime's numbers (at two sizes when dynamic)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from mindconverter import convert
from mindconverter.check.verify import run_onnxruntime
from mindconverter.errors import MindConverterError
from tests.helpers import make_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _run_mindir(path: Path, feeds: list[np.ndarray]) -> list[np.ndarray]:
    import mindspore as ms

    cell = ms.nn.GraphCell(ms.load(str(path)))
    outputs = cell(*[ms.Tensor(feed) for feed in feeds])
    outputs = outputs if isinstance(outputs, (tuple, list)) else [outputs]
    return [out.asnumpy() for out in outputs]


def test_dynamic_transformer_keeps_its_dynamic_dimensions(tmp_path):
    model_file = FIXTURES / "tiny_bert_dynamo.onnx"
    result = convert(model_file, shape=["2,8", "2,8"], output=tmp_path / "out", mindir=True)
    assert result.paths.mindir == tmp_path / "out" / "tiny_bert_dynamo.mindir"
    assert "dynamic dimensions kept" in result.report_path.read_text()
    model = onnx.load(str(model_file))
    names = [out.name for out in model.graph.output]
    rng = np.random.default_rng(0)
    for batch, length in [(2, 8), (3, 5)]:
        ids = rng.integers(0, 50, (batch, length)).astype(np.int64)
        mask = np.ones((batch, length), np.int64)
        got = _run_mindir(result.paths.mindir, [ids, mask])
        want = run_onnxruntime(model, {"input_ids": ids, "attention_mask": mask}, names)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_static_network(tmp_path):
    weight = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    model = make_model(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["y"])],
        [("x", np.float32, [2, 4])],
        [("y", np.float32, [2, 3])],
        {"w": weight},
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    result = convert(path, output=tmp_path / "out", mindir=True)
    assert "fixed input shapes" in result.report_path.read_text()
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(_run_mindir(result.paths.mindir, [x])[0], x @ weight, rtol=1e-5)


def test_unconverted_operators_leave_no_mindir(tmp_path):
    from tests.codegen.golden_cases import CASES

    case = next(case for case in CASES if case.name == "unconverted_operator")
    path = case.write_model(tmp_path)
    result = convert(path, output=tmp_path / "out", mindir=True)
    assert result.unconverted and result.paths.mindir is None
    assert not list((tmp_path / "out").glob("*.mindir"))
    assert "MindIR not written" in result.report_path.read_text()


def test_an_existing_mindir_is_not_replaced_without_overwrite(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "tiny_resnet_torchscript.mindir").write_text("old")
    with pytest.raises(MindConverterError) as info:
        convert(
            FIXTURES / "tiny_resnet_torchscript.onnx",
            "1,3,32,32",
            output=tmp_path / "out",
            mindir=True,
        )
    assert info.value.key == "OUTPUT_EXISTS"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "tiny_resnet_torchscript.mindir"
    ]


def test_an_export_failure_is_coded_and_writes_nothing(tmp_path, monkeypatch):
    import mindspore as ms

    def refuse(*args, **kwargs):
        raise RuntimeError("unsupported construct\nmore detail")

    monkeypatch.setattr(ms, "export", refuse)
    with pytest.raises(MindConverterError) as info:
        convert(
            FIXTURES / "tiny_resnet_torchscript.onnx",
            "1,3,32,32",
            output=tmp_path / "out",
            mindir=True,
        )
    assert info.value.key == "MINDIR_FAILED"
    assert "unsupported construct" in str(info.value) and "more detail" not in str(info.value)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_dynamic_export_mindspore_cannot_run_falls_back_to_fixed_shapes(tmp_path, monkeypatch):
    """Some dynamic-shape graphs MindSpore exports cannot run after loading (seen on a
    transformers ResNet: "Get infer shape function failed, primitive name:raise"); each export is
    loaded and run once, and a failing dynamic one is exported again for the --shape sizes."""
    from mindconverter.outputs import mindir

    real = mindir._export_checked
    calls = []

    def dynamic_fails(network, inputs, stem, specs):
        calls.append(inputs)
        if len(calls) == 1:
            raise RuntimeError("Get infer shape function failed, primitive name:raise")
        return real(network, inputs, stem, specs)

    monkeypatch.setattr(mindir, "_export_checked", dynamic_fails)
    rng = np.random.default_rng(3)
    channels = 4
    inits = {
        "w": rng.standard_normal((channels, 3, 3, 3)).astype(np.float32),
        "scale": rng.uniform(0.5, 1.5, channels).astype(np.float32),
        "bias": rng.standard_normal(channels).astype(np.float32),
        "mean": rng.standard_normal(channels).astype(np.float32),
        "var": rng.uniform(0.5, 1.5, channels).astype(np.float32),
    }
    model = make_model(
        [
            onnx.helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            onnx.helper.make_node(
                "BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"]
            ),
        ],
        [("x", np.float32, ["batch", 3, 8, 8])],
        [("y", np.float32, ["batch", channels, 8, 8])],
        inits,
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    result = convert(path, shape=["2,3,8,8"], output=tmp_path / "out", mindir=True)
    report = result.report_path.read_text()
    x = np.random.default_rng(4).standard_normal((2, 3, 8, 8)).astype(np.float32)
    want = run_onnxruntime(model, {"x": x}, ["y"])[0]
    np.testing.assert_allclose(_run_mindir(result.paths.mindir, [x])[0], want, rtol=1e-4, atol=1e-5)
    assert "fixed input shapes: MindSpore cannot run its dynamic export (Get infer shape" in report
    assert len(calls) == 2 and calls[1][0].shape == (2, 3, 8, 8)
