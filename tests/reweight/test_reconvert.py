"""Weight re-conversion (--weights_file + --weight_map): a newer state dict or ONNX export of the
same model becomes a checkpoint for the already converted script, or nothing is written."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.cli import main
from mindconverter.errors import MindConverterError
from mindconverter.outputs.checkpoint import read_checkpoint, write_safetensors
from mindconverter.reweight import reconvert_weights, torch_name

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _reference(model: str) -> dict[str, np.ndarray]:
    return dict(np.load(FIXTURES / f"{model}_reference.npz"))


def _state_dict(reference) -> dict[str, np.ndarray]:
    """The PyTorch parameters tools/make_fixtures.py saved beside the fixture."""
    return {k[len("param:") :]: v for k, v in reference.items() if k.startswith("param:")}


def _save_safetensors(tensors: dict[str, np.ndarray], path: Path) -> Path:
    with open(path, "wb") as stream:
        write_safetensors(stream, list(tensors.items()))
    return path


def _convert(tmp_path, model: str, exporter: str, shape: str):
    return convert(FIXTURES / f"{model}_{exporter}.onnx", shape=[shape], output=tmp_path / "out")


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_new_state_dict_gives_pytorchs_numbers(tmp_path, exporter):
    """PyTorch's own LSTM-classifier parameters (gate order, names), with the head doubled:
    the network computes twice PyTorch's logits, so the new weights are the ones used."""
    reference = _reference("tiny_lstm")
    shape = ",".join(map(str, reference["ids"].shape))
    result = _convert(tmp_path, "tiny_lstm", exporter, shape)
    state = _state_dict(reference)
    state["head.weight"], state["head.bias"] = 2 * state["head.weight"], 2 * state["head.bias"]
    weights = _save_safetensors(state, tmp_path / "new.safetensors")
    done = reconvert_weights(weights, result.weight_map_path, tmp_path / "out", overwrite=True)
    assert done.checkpoint_path == result.checkpoint_path and done.unused == []
    assert done.checked_against == result.script_path
    got = run_mindspore(result.script_path, result.checkpoint_path, [reference["ids"]])[0]
    np.testing.assert_allclose(got, 2 * reference["logits"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_the_same_state_dict_gives_the_same_checkpoint_with_tied_weights(tmp_path, exporter):
    reference = _reference("tiny_gpt")
    shape = ",".join(map(str, reference["ids"].shape))
    result = _convert(tmp_path, "tiny_gpt", exporter, shape)
    before = read_checkpoint(result.checkpoint_path.read_bytes())
    state = _state_dict(reference)
    state["lm_head.weight"] = state["wte.weight"]  # tied: model.state_dict() lists both names
    weights = _save_safetensors(state, tmp_path / "same.safetensors")
    reconvert_weights(weights, result.weight_map_path, tmp_path / "out", overwrite=True)
    after = read_checkpoint(result.checkpoint_path.read_bytes())
    assert list(after) == list(before)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)


def _perturbed(source: Path, target: Path) -> Path:
    model = onnx.load(str(source))
    rng = np.random.default_rng(0)
    for index, init in enumerate(model.graph.initializer):
        array = numpy_helper.to_array(init)
        if array.dtype.kind == "f" and array.size > 1:
            noise = rng.standard_normal(array.shape).astype(array.dtype) * 0.05
            model.graph.initializer[index].CopyFrom(
                numpy_helper.from_array(array + noise, init.name)
            )
    onnx.save(model, str(target))
    return target


@pytest.mark.parametrize(
    "fixture, shape",
    [
        ("tiny_resnet_dynamo", "2,3,32,32"),  # BatchNorm folded by the exporter
        ("tiny_lstm_torchscript", "2,7"),  # gates regrouped, biases split
        ("tiny_bert_torchscript", "2,8"),  # constants the exporter made
    ],
)
def test_a_new_onnx_export_gives_what_converting_it_gives(tmp_path, fixture, shape):
    model = onnx.load(str(FIXTURES / f"{fixture}.onnx"))
    shapes = [shape] * len(model.graph.input)
    old = convert(FIXTURES / f"{fixture}.onnx", shape=shapes, output=tmp_path / "old")
    new_model = _perturbed(FIXTURES / f"{fixture}.onnx", tmp_path / f"{fixture}.onnx")
    fresh = convert(new_model, shape=shapes, output=tmp_path / "fresh")
    reconvert_weights(new_model, old.weight_map_path, tmp_path / "old", overwrite=True)
    got = read_checkpoint(old.checkpoint_path.read_bytes())
    want = read_checkpoint(fresh.checkpoint_path.read_bytes())
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.fixture(scope="module")
def converted_lstm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lstm")
    result = convert(FIXTURES / "tiny_lstm_torchscript.onnx", shape=["2,7"], output=folder)
    return result, _state_dict(_reference("tiny_lstm"))


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda s: s.pop("head.bias"), "head.bias: no tensor 'head.bias'"),
        (lambda s: s.update({"head.weight": s["head.weight"][:, :5]}), "has shape [3, 5], not"),
        (
            lambda s: s.update({"head.bias": s["head.bias"].astype(np.float64)}),
            "is float64, not float32",
        ),
    ],
    ids=["missing", "shape", "dtype"],
)
def test_weights_that_do_not_fit_are_listed_and_nothing_is_written(
    tmp_path, converted_lstm, change, expected
):
    result, state = converted_lstm
    state = dict(state)
    change(state)
    before = result.checkpoint_path.read_bytes()
    weights = _save_safetensors(state, tmp_path / "bad.safetensors")
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(
            weights, result.weight_map_path, result.script_path.parent, overwrite=True
        )
    assert info.value.key == "WEIGHTS_MISMATCH" and expected in str(info.value)
    assert result.checkpoint_path.read_bytes() == before
    assert sorted(p.suffix for p in result.script_path.parent.iterdir()) == [
        ".ckpt",
        ".json",
        ".py",
        ".txt",
    ]


def test_folded_batchnorm_needs_its_batchnorm_in_the_state_dict(tmp_path):
    """The fold is replayed from the BatchNorm's tensors: a state dict without them is refused,
    naming the BatchNorm looked for."""
    result = _convert(tmp_path, "tiny_resnet", "dynamo", "2,3,32,32")
    rows = json.loads(result.weight_map_path.read_text())["tiny_resnet_dynamo"]
    state = {
        torch_name(row["converted_weight"]["name"]): np.zeros(
            row["converted_weight"]["shape"], np.float32
        )
        for row in rows
    }
    weights = _save_safetensors(state, tmp_path / "state.safetensors")
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(weights, result.weight_map_path, tmp_path / "out", overwrite=True)
    assert "folded a BatchNorm into convolution 'conv1'" in str(info.value)
    assert "'bn1.running_var'" in str(info.value)


def test_an_existing_checkpoint_needs_overwrite(tmp_path, converted_lstm):
    result, state = converted_lstm
    weights = _save_safetensors(state, tmp_path / "w.safetensors")
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(weights, result.weight_map_path, result.script_path.parent)
    assert info.value.key == "OUTPUT_EXISTS"


def test_unreadable_inputs_get_coded_errors(tmp_path, converted_lstm):
    result, _ = converted_lstm
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes((10**6).to_bytes(8, "little") + b"{}")
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(broken, result.weight_map_path, tmp_path / "o")
    assert info.value.key == "FILE_CORRUPT"
    not_a_map = tmp_path / "map.json"
    not_a_map.write_text("[1, 2]")
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(broken, not_a_map, tmp_path / "o")
    assert info.value.key == "FILE_CORRUPT"
    if importlib.util.find_spec("torch") is None:
        pickled = tmp_path / "state.pt"
        pickled.write_bytes(b"not used")
        with pytest.raises(MindConverterError) as info:
            reconvert_weights(pickled, result.weight_map_path, tmp_path / "o")
        assert info.value.key == "WEIGHTS_UNREADABLE" and "safetensors" in str(info.value)
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_cli(tmp_path, converted_lstm, capsys):
    result, state = converted_lstm
    weights = _save_safetensors(
        {**state, "extra.buffer": np.zeros(2, np.float32)}, tmp_path / "w.safetensors"
    )
    out = tmp_path / "cli"
    argv = [
        "--weights_file",
        str(weights),
        "--weight_map",
        str(result.weight_map_path),
        "--output",
        str(out),
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Re-converted 7 weight(s)" in text and "extra.buffer" in text
    assert (out / "tiny_lstm_torchscript.ckpt").is_file()
    assert main(["--weights_file", str(weights)]) == 2
    assert "--weight_map" in capsys.readouterr().err


def test_recurrent_names_follow_the_source_layer():
    from mindconverter.reweight.reconvert import recurrent_name

    assert (
        recurrent_name("lstm_1.bias_hh_l0_reverse", "lstm.weight_ih_l1")
        == "lstm.bias_hh_l1_reverse"
    )
    assert recurrent_name("enc.rnn.weight_hh_l0", "enc.rnn.weight_ih_l0") == "enc.rnn.weight_hh_l0"
    assert recurrent_name("fc.weight", "lstm.weight_ih_l1") == ""
    assert recurrent_name("lstm.weight_ih_l0", "onnx::LSTM_12") == ""


def _prose(row: dict, transform: str) -> None:
    """A row as a weight map without ``steps`` (written before them) has it."""
    row.pop("steps", None)
    row["transform"] = transform


@pytest.mark.parametrize(
    "edit, expected",
    [
        (lambda rows: _prose(rows[1], "[99]; gates i,o,f,c -> i,f,c,o"), "does not fit"),
        (lambda rows: _prose(rows[1], "transpose(5, 0)"), "does not fit"),
        (lambda rows: _prose(rows[1], "Mul()"), "'Mul()' cannot be replayed"),
        (lambda rows: rows[1].update({"steps": [{"op": "index", "items": [99]}]}), "does not fit"),
        (
            lambda rows: rows[1].update({"steps": [{"op": "transpose", "perm": [5, 0]}]}),
            "does not fit",
        ),
    ],
    ids=[
        "index-out-of-range",
        "axis-out-of-range",
        "computing-step",
        "steps-index-out-of-range",
        "steps-axis-out-of-range",
    ],
)
def test_a_tampered_weight_map_is_refused(tmp_path, converted_lstm, edit, expected):
    result, state = converted_lstm
    table = json.loads(result.weight_map_path.read_text())
    edit(table["tiny_lstm_torchscript"])
    tampered = tmp_path / "map.json"
    tampered.write_text(json.dumps(table))
    source = {
        row["source_weight"]["name"]: np.zeros(row["source_weight"]["shape"], np.float32)
        for row in table["tiny_lstm_torchscript"]
    }
    weights = _save_safetensors(source, tmp_path / "w.safetensors")
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(weights, tampered, tmp_path / "o")
    assert info.value.key == "WEIGHTS_MISMATCH" and expected in str(info.value)
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def _map_named(tmp_path: Path, result, key: str) -> Path:
    """The conversion's weight map with its model name replaced by ``key``."""
    (rows,) = json.loads(result.weight_map_path.read_text()).values()
    edited = tmp_path / "edited_map.json"
    edited.write_text(json.dumps({key: rows}))
    return edited


def _files_below(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*")} if folder.exists() else set()


@pytest.mark.parametrize(
    "key",
    ["../escaped", "../../tmp/escaped", "/tmp/escaped_abs", "sub/dir", "..", "a\nb", "", "x.y"],
)
def test_a_weight_map_cannot_choose_a_path(tmp_path, converted_lstm, key):
    """The model name in a weight map names the results: one that is not a module name (a path,
    a parent folder, a line break) is refused before anything is read or written."""
    result, state = converted_lstm
    weights = _save_safetensors(state, tmp_path / "w.safetensors")
    before = _files_below(tmp_path)
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(weights, _map_named(tmp_path, result, key), tmp_path / "inner" / "o")
    assert info.value.key == "WEIGHT_MAP_INVALID"
    assert "\n" not in str(info.value)
    assert _files_below(tmp_path) - before == {tmp_path / "edited_map.json"}


def test_a_weight_map_cannot_make_an_outside_script_run(tmp_path, converted_lstm, capsys):
    """A `../payload` stem once wrote `../payload.ckpt` and imported `../payload.py`: through the
    CLI, the payload is neither run nor written beside."""
    result, state = converted_lstm
    weights = _save_safetensors(state, tmp_path / "w.safetensors")
    marker = tmp_path / "ran"
    (tmp_path / "payload.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    out = tmp_path / "out_folder"
    edited = _map_named(tmp_path, result, "../payload")
    argv = ["--weights_file", str(weights), "--weight_map", str(edited), "--output", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "code 1000015" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not marker.exists() and not (tmp_path / "payload.ckpt").exists()


def test_a_linked_script_in_the_output_folder_is_not_imported(tmp_path, converted_lstm):
    """A symbolic link where the converted script should be could run any file: refused."""
    result, state = converted_lstm
    weights = _save_safetensors(state, tmp_path / "w.safetensors")
    out = tmp_path / "linked"
    out.mkdir()
    marker = tmp_path / "ran"
    outside = tmp_path / "outside.py"
    outside.write_text(f"open({str(marker)!r}, 'w').close()\n")
    stem = result.script_path.stem
    (out / f"{stem}.py").symlink_to(outside)
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(weights, result.weight_map_path, out)
    assert info.value.key == "OUTPUT_NOT_WRITABLE" and not marker.exists()
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}.py"]


def test_confined_path_refuses_every_way_out(tmp_path):
    from mindconverter.outputs.atomic import confined_path

    assert confined_path(tmp_path, "model.ckpt") == tmp_path / "model.ckpt"
    for name in ["../x.ckpt", "/etc/x.ckpt", "a/b.ckpt", "..", ".", "", "a\\b", "nul\x00.py"]:
        with pytest.raises(MindConverterError) as info:
            confined_path(tmp_path, name)
        assert info.value.key == "OUTPUT_NOT_WRITABLE", name
