"""Issue 26: converted transformers read like hand-written MindSpore (slow).

Every transformer available is converted, checked against onnxruntime, and measured with
``tools/readability.py``; the properties fixed so far must hold: ruff's default rules, import
order and formatting pass, no ``x_<n>`` parameters, no variable changes meaning, and none of
the no-ops the tidy passes remove is left.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import assert_outputs_match
from tools.readability import measure

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CORPORA = (Path("/work/corpus"), Path("/work/tcorpus"))

# no-ops the tidy passes remove (what is left, e.g. ``arange(n) >= 0`` and-ed with a mask it
# broadcasts, is not a pure no-op yet)
REMOVED_NOOPS = (
    "logical_and_true",
    "squeeze_of_unsqueeze",
    "cast_to_same_dtype",
    "times_one",
    "plus_zero",
    "reshape_of_reshape",
    "transpose_of_transpose",
    "constant_gather",
    "rank_bound_layernorm",
)


def _input_count(path: Path) -> int:
    """The model's inputs (token ids, masks, token types): each gets a [1, 8] example."""
    graph = onnx.load(str(path), load_external_data=False).graph
    weights = {init.name for init in graph.initializer}
    return sum(inp.name not in weights for inp in graph.input)


def _models() -> list[tuple[Path, list[str]]]:
    """The committed fixtures, and every model of the corpora with the shapes their manifests
    give (the corpora are built by the lead; absent, only the fixtures run)."""
    fixtures = sorted(FIXTURES.glob("tiny_bert_*.onnx")) + sorted(FIXTURES.glob("tiny_gpt_*.onnx"))
    found = [(path, ["1,8"] * _input_count(path)) for path in fixtures]
    for corpus in CORPORA:
        manifest = corpus / "manifest.json"
        if not manifest.is_file():
            continue
        for entry in json.loads(manifest.read_text())["models"]:
            path = corpus / entry["file"]
            if path.is_file():
                shapes = [",".join(str(d) for d in dims) for dims in entry["shapes"]]
                found.append((path, shapes))
    return found


@pytest.mark.parametrize("model_file, shapes", _models(), ids=[path.stem for path, _ in _models()])
def test_transformer_reads_cleanly(tmp_path, model_file, shapes):
    result = convert(model_file, shape=shapes, output=tmp_path)
    _assert_runs_like_onnxruntime(model_file, shapes, result)
    found = measure(result.script_path.read_text())
    report = json.dumps(found, indent=1)
    assert found["ruff_check"] and found["ruff_imports"] and found["ruff_format"], report
    assert found["renamed_meanings"] == 0, report
    assert not any(found["noop_kinds"].get(kind) for kind in REMOVED_NOOPS), report
    assert found["x_params"] == 0, report
    assert found["unrolled_calls"] == 0, report


def _assert_runs_like_onnxruntime(model_file: Path, shapes: list[str], result) -> None:
    """MindSpore runs the script like onnxruntime runs the model on inputs a tokenizer could
    give: token ids below 8, attention masks of ones, normal floats (past keys, audio, pixels)."""
    model = onnx.load(str(model_file))
    weights = {init.name for init in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    inputs = [inp for inp in model.graph.input if inp.name not in weights]
    for inp, shape in zip(inputs, shapes):
        dims = [int(d) for d in shape.split(",")]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)
        if np.dtype(dtype).kind == "f":
            feeds[inp.name] = rng.standard_normal(dims).astype(dtype)
        elif "mask" in inp.name:
            feeds[inp.name] = np.ones(dims, dtype)
        elif "token_type" in inp.name:  # a tokenizer's segment ids: 0 for one sentence
            feeds[inp.name] = np.zeros(dims, dtype)
        else:
            feeds[inp.name] = rng.integers(0, 8, dims).astype(dtype)
    expected = run_onnxruntime(model, feeds, [out.name for out in model.graph.output])
    got = run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))
    assert_outputs_match(got, expected, rtol=1e-3, atol=1e-4)
