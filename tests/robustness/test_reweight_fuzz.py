"""Fuzzing re-conversion: mutated weight maps and safetensors headers end in a coded error or a
checkpoint that holds exactly what the map names; never a crash, a hang or a write outside the
output folder."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mindconverter.errors import MindConverterError
from mindconverter.outputs.checkpoint import TENSOR_TYPES, read_checkpoint, write_safetensors
from mindconverter.reweight import reconvert_weights
from mindconverter.reweight.weights_file import read_weights
from tests.robustness.util import snapshot

STATE = {
    "w": np.arange(12, dtype=np.float32).reshape(4, 3),
    "b": np.array([0.5, -0.5, 0.25], np.float32),
    "conv.weight": np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2),
}
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
    {
        "converted_weight": {"name": "conv.weight", "shape": [2, 3, 2, 2], "data_type": "Float32"},
        "source_weight": {"name": "conv.weight", "shape": [2, 3, 2, 2], "data_type": "float32"},
    },
]
_NUMPY = {label: name for name, label in TENSOR_TYPES.items()}

ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["../x", "/etc/passwd", "a\nb", "\x1b[2J", "x\x00y", "fc.weight", "w"]),
    st.lists(st.integers(min_value=-3, max_value=2**45), max_size=5),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.sampled_from(["Float32", "float32", "BFloat16", "Q", "transpose(0, 1)", "[0]", "Mul()"]),
)
FIELDS = [
    ("converted_weight", "name"),
    ("converted_weight", "shape"),
    ("converted_weight", "data_type"),
    ("source_weight", "name"),
    ("source_weight", "shape"),
    ("source_weight", "data_type"),
    ("source_weight", "exported_as"),
    ("transform",),
    ("converted_weight",),
    ("extra",),
]


@st.composite
def edited_rows(draw):
    rows = copy.deepcopy(ROWS)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        action = draw(st.sampled_from(["set", "delete", "duplicate", "drop-row"]))
        index = draw(st.integers(min_value=0, max_value=len(rows) - 1)) if rows else 0
        if not rows:
            break
        if action == "duplicate":
            rows.append(copy.deepcopy(rows[index]))
            continue
        if action == "drop-row":
            rows.pop(index)
            continue
        path = draw(st.sampled_from(FIELDS))
        target = rows[index]
        for part in path[:-1]:
            target = target.get(part) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            continue
        if action == "delete":
            target.pop(path[-1], None)
        else:
            target[path[-1]] = draw(ODD_VALUES)
    return rows


def _weights_file(folder: Path) -> Path:
    path = folder / "new.safetensors"
    with open(path, "wb") as stream:
        write_safetensors(stream, list(STATE.items()))
    return path


def _check_outcome(folder: Path, weights: Path, weight_map: Path, rows) -> bool:
    """Re-convert into ``folder/out``: a coded one-line error, or a checkpoint whose records are
    the rows' names with the rows' shapes and dtypes (the values of unchanged rows exact)."""
    out = folder / "out"
    before = snapshot(folder)
    try:
        result = reconvert_weights(weights, weight_map, out)
    except MindConverterError as error:
        assert "\n" not in str(error)
        assert snapshot(folder) == before, "a failed re-conversion left files"
        return False
    written = read_checkpoint(result.checkpoint_path.read_bytes())
    assert list(written) == [row["converted_weight"]["name"] for row in rows]
    for row in rows:
        array = written[row["converted_weight"]["name"]]
        assert list(array.shape) == row["converted_weight"]["shape"]
        assert array.dtype == np.dtype(_NUMPY[row["converted_weight"]["data_type"]])
        if row in ROWS:
            expected = STATE[row["source_weight"]["name"]]
            expected = expected.T if row.get("transform") else expected
            np.testing.assert_array_equal(array, expected)
    outside = set(snapshot(folder)) - set(before)
    assert all(name.startswith("out") for name in outside), outside
    shutil.rmtree(out)
    return True


@settings(max_examples=120, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(rows=edited_rows())
def test_mutated_weight_maps(rows):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        weights = _weights_file(folder)
        weight_map = folder / "weight_map_of_m.json"
        weight_map.write_text(json.dumps({"m": rows}))
        event("re-converted" if _check_outcome(folder, weights, weight_map, rows) else "refused")


def _header() -> dict:
    header, offset = {}, 0
    for name, array in STATE.items():
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
    return header


HEADER_FIELDS = ["dtype", "shape", "data_offsets", "extra"]


@st.composite
def edited_safetensors(draw) -> bytes:
    header = _header()
    data = b"".join(array.tobytes() for array in STATE.values())
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        action = draw(st.sampled_from(["set", "delete", "rename", "data", "offsets"]))
        name = draw(st.sampled_from(sorted(header))) if header else None
        if name is None:
            break
        if action == "set":
            header[name][draw(st.sampled_from(HEADER_FIELDS))] = draw(ODD_VALUES)
        elif action == "delete":
            header[name].pop(draw(st.sampled_from(HEADER_FIELDS)), None)
        elif action == "rename":
            header[draw(st.sampled_from(["w", "b", "conv.weight", "new"]))] = header.pop(name)
        elif action == "data":
            cut = draw(st.integers(min_value=0, max_value=len(data) + 16))
            data = data[:cut] if cut <= len(data) else data + bytes(cut - len(data))
        else:
            begin = draw(st.integers(min_value=-4, max_value=len(data) + 8))
            header[name]["data_offsets"] = [begin, begin + draw(st.integers(-4, 64))]
    text = json.dumps(header).encode()
    if draw(st.booleans()):  # the same name twice in the JSON text itself
        text = text[:-1] + b',"b":' + json.dumps(_header()["b"]).encode() + b"}"
    return len(text).to_bytes(8, "little") + text + data


@settings(max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(content=edited_safetensors())
def test_mutated_safetensors_headers(content):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        weights = folder / "new.safetensors"
        weights.write_bytes(content)
        try:
            tensors = read_weights(weights)
            arrays = {key: np.array(tensors[key]) for key in tensors}
        except MindConverterError as error:
            assert error.key == "FILE_CORRUPT" and "\n" not in str(error)
        else:  # accepted: the tensors tile the data exactly as the header says
            assert sum(array.nbytes for array in arrays.values()) == len(
                content
            ) - 8 - int.from_bytes(content[:8], "little")
        weight_map = folder / "weight_map_of_m.json"
        weight_map.write_text(json.dumps({"m": ROWS}))
        event("re-converted" if _check_outcome(folder, weights, weight_map, ROWS) else "refused")


def test_the_unmutated_map_reconverts_exactly(tmp_path):
    weights = _weights_file(tmp_path)
    weight_map = tmp_path / "weight_map_of_m.json"
    weight_map.write_text(json.dumps({"m": ROWS}))
    assert _check_outcome(tmp_path, weights, weight_map, ROWS)
