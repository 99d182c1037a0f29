"""An edited or inconsistent weight map is refused as a whole (WEIGHT_MAP_INVALID) before any
weight is read: wrong field types, a parameter named twice, sizes no transform makes."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mindconverter import convert
from mindconverter.errors import MindConverterError
from mindconverter.outputs.checkpoint import read_checkpoint, write_checkpoint, write_safetensors
from mindconverter.reweight import reconvert_weights
from mindconverter.reweight.weight_map_schema import check_rows
from tests.robustness.util import save, valid_model

ROWS = [
    {
        "converted_weight": {"name": "fc.weight", "shape": [3, 4], "data_type": "Float32"},
        "source_weight": {"name": "w", "shape": [4, 3], "data_type": "float32"},
        "transform": "transpose(1, 0)",
    },
    {
        "converted_weight": {"name": "fc.bias", "shape": [3], "data_type": "Float32"},
        "source_weight": {"name": "b", "shape": [3], "data_type": "float32"},
    },
]


def _set(path: str, value):
    """An edit of ROWS: ``path`` is ``row/field/key`` (``row/key`` for a row's own field)."""

    def edit(rows):
        parts = path.split("/")
        target = rows[int(parts[0])]
        for part in parts[1:-1]:
            target = target[part]
        target[parts[-1]] = value

    return edit


def _drop(path: str):
    def edit(rows):
        row, *rest = path.split("/")
        target = rows[int(row)]
        for part in rest[:-1]:
            target = target[part]
        del target[rest[-1]]

    return edit


EDITS = {
    "duplicate-target": (lambda rows: rows.append(copy.deepcopy(rows[1])), "a second time"),
    "same-name-other-source": (
        _set("1/converted_weight/name", "fc.weight"),
        "a second time",
    ),
    "shape-is-a-string": (_set("0/converted_weight/shape", "3,4"), "not a list"),
    "shape-has-a-float": (_set("0/source_weight/shape", [4.0, 3]), "non-negative int"),
    "shape-has-a-bool": (_set("1/source_weight/shape", [True]), "non-negative int"),
    "negative-dim": (_set("1/converted_weight/shape", [-3]), "non-negative int"),
    "overflowing-shape": (_set("0/converted_weight/shape", [2**40, 2**40]), "more than"),
    "absurd-rank": (_set("1/converted_weight/shape", [1] * 40), "dimensions"),
    "name-is-a-number": (_set("0/converted_weight/name", 7), "not a string"),
    "source-name-is-a-list": (_set("0/source_weight/name", ["w"]), "not a string"),
    "empty-source-name": (_set("0/source_weight/name", ""), "empty"),
    "control-in-name": (_set("0/source_weight/name", "w\n[Error] forged"), "control"),
    "path-as-parameter": (_set("0/converted_weight/name", "../fc.weight"), "parameter path"),
    "unknown-converted-dtype": (_set("0/converted_weight/data_type", "Float128"), "known type"),
    "unknown-source-dtype": (_set("0/source_weight/data_type", "object"), "known type"),
    "dtype-is-a-number": (_set("0/converted_weight/data_type", 1), "known type"),
    "transform-is-a-list": (_set("0/transform", ["transpose(1, 0)"]), "not a string"),
    "huge-transform": (_set("0/transform", "Identity();" * 1000), "characters long"),
    "many-steps": (_set("0/transform", "transpose(1, 0);" * 65), "steps"),
    "cast-to-text": (_set("0/transform", "Cast(to=8); transpose(1, 0)"), "not a number type"),
    "exported-as-number": (_set("0/source_weight/exported_as", 3), "not a string"),
    "unknown-field": (_set("0/converted_weight/offset", 3), "unknown field"),
    "missing-shape": (_drop("1/converted_weight/shape"), "lacks shape"),
    "missing-source": (_drop("1/source_weight"), "lacks source_weight"),
    "row-is-a-list": (lambda rows: rows.__setitem__(0, ["converted_weight"]), "not an object"),
    "steps-not-a-list": (lambda rows: rows[1].update({"steps": "transpose"}), "steps"),
    "steps-unknown-op": (
        lambda rows: rows[1].update({"steps": [{"op": "exec", "code": "x"}]}),
        "unknown step",
    ),
    "steps-too-many": (
        lambda rows: rows[1].update({"steps": [{"op": "transpose", "perm": [1, 0]}] * 65}),
        "at most",
    ),
    "growth-past-the-source": (_set("1/converted_weight/shape", [1 << 25]), "elements out of"),
    "too-many-rows": (lambda rows: rows.extend([rows[1]] * (1 << 20)), "rows"),
}


def test_a_conversion_written_map_is_valid():
    check_rows(copy.deepcopy(ROWS), "map.json")


@pytest.mark.parametrize("name", list(EDITS))
def test_edited_rows_are_refused(name):
    edit, expected = EDITS[name]
    rows = copy.deepcopy(ROWS)
    edit(rows)
    with pytest.raises(MindConverterError) as info:
        check_rows(rows, "map.json")
    assert info.value.key == "WEIGHT_MAP_INVALID", info.value
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_many_parameters_sharing_one_large_source_are_bounded():
    """Rows may reuse a source (tied weights), but not so often that the parameters outgrow the
    sources they come from (a MemoryError before)."""
    rows = [
        {
            "converted_weight": {"name": f"p{i}", "shape": [1 << 20], "data_type": "Float32"},
            "source_weight": {"name": "big", "shape": [1 << 20], "data_type": "float32"},
        }
        for i in range(4 * 16 + 1)
    ]
    with pytest.raises(MindConverterError) as info:
        check_rows(rows, "map.json")
    assert info.value.key == "WEIGHT_MAP_INVALID" and "far more" in str(info.value)
    check_rows(rows[:4], "map.json")  # tied a few times: fine


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("schema")
    model = save(valid_model(), folder / "m.onnx")
    result = convert(model, output=folder / "out")
    state = {"w": np.arange(12, dtype=np.float32).reshape(4, 3), "b": np.ones(3, np.float32)}
    weights = folder / "new.safetensors"
    with open(weights, "wb") as stream:
        write_safetensors(stream, list(state.items()))
    return result, weights


def _edited_map(tmp_path: Path, result, edit) -> Path:
    table = json.loads(result.weight_map_path.read_text())
    edit(table["m"])
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(table))
    return path


def test_a_duplicate_row_is_refused_before_anything_is_read_or_written(tmp_path, converted):
    result, weights = converted
    edited = _edited_map(tmp_path, result, lambda rows: rows.append(copy.deepcopy(rows[0])))
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(tmp_path / "absent.safetensors", edited, tmp_path / "o")
    assert info.value.key == "WEIGHT_MAP_INVALID"  # before the (missing) weights are looked at
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "text, key",
    [
        ('{"m": [], "m": []}', "WEIGHT_MAP_INVALID"),
        ("[" * 100_000 + "]" * 100_000, "FILE_CORRUPT"),
        ('{"m": [' + "1" * 5000 + "]}", "FILE_CORRUPT"),
        ('{"m": "rows"}', "WEIGHT_MAP_INVALID"),
    ],
    ids=["duplicate-model-key", "deep-nesting", "huge-integer", "rows-not-a-list"],
)
def test_malformed_map_text_gets_a_coded_error(tmp_path, converted, text, key):
    _, weights = converted
    path = tmp_path / "map.json"
    path.write_text(text)
    with pytest.raises(MindConverterError) as info:
        reconvert_weights(weights, path, tmp_path / "o")
    assert info.value.key == key


def test_the_checkpoint_writers_refuse_a_name_twice(tmp_path):
    twice = [("a", np.zeros(2, np.float32)), ("a", np.ones(2, np.float32))]
    for writer in (write_checkpoint, write_safetensors):
        with open(tmp_path / "c", "wb") as stream, pytest.raises(MindConverterError) as info:
            writer(stream, twice)
        assert info.value.key == "DUPLICATE_PARAMETER"
    with open(tmp_path / "ok.ckpt", "wb") as stream:
        write_checkpoint(stream, [("a", np.zeros(2, np.float32)), ("b", np.ones(2, np.float32))])
    assert list(read_checkpoint((tmp_path / "ok.ckpt").read_bytes())) == ["a", "b"]


@pytest.mark.slow
def test_a_duplicate_row_through_the_cli_ends_in_one_coded_line(tmp_path, converted):
    """Once, a duplicate row gave a checkpoint whose loading aborted the whole process."""
    result, weights = converted
    edited = _edited_map(tmp_path, result, lambda rows: rows.append(copy.deepcopy(rows[1])))
    out = tmp_path / "o"
    argv = ["--weights_file", weights, "--weight_map", edited, "--output", out]
    run = subprocess.run(
        [sys.executable, "-m", "mindconverter", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "code 1000015" in lines[0] and "a second time" in lines[0]
    assert not out.exists()


@pytest.mark.slow
def test_a_dtype_the_script_does_not_hold_is_one_coded_line(tmp_path, converted):
    """A valid-looking edit (Float16 where the script holds Float32) once ended in MindSpore's
    RuntimeError, an internal error and a CRITICAL log line."""
    result, weights = converted

    def to_half(rows):
        rows[0]["converted_weight"]["data_type"] = "Float16"

    edited = _edited_map(tmp_path, result, to_half)
    out = tmp_path / "o"
    shutil.copytree(result.script_path.parent, out)
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    argv = ["--weights_file", weights, "--weight_map", edited, "--output", out, "--overwrite"]
    run = subprocess.run(
        [sys.executable, "-m", "mindconverter", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1 and "code 4000006" in lines[0], run.stderr
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before
