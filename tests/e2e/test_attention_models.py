"""Exported transformers end to end: every attention is fused, the script reads as mindnlp
writes it, the numbers match onnxruntime at two shapes, and a greedy decode over the key/value
cache gives onnxruntime's tokens."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import assert_runs_like_onnxruntime, convert_fully

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CORPUS = Path("/work/corpus/manifest.json")
LAYERS, KV_HEADS, HEAD_DIM, VOCAB = 2, 2, 4, 48  # tools/make_attention_fixtures.py


def _fused_count(result) -> int:
    report = result.report_path.read_text(encoding="utf-8")
    for line in report.splitlines():
        if "ai.mindconverter::ScaledDotProductAttention" in line:
            return int(line.split()[-1])
    return 0


def _token_feeds(batch: int, seq: int, seed: int, vocab: int = 40) -> dict:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, (batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    mask[0, seq // 2 :] = 0  # padding in the first sequence
    return {"input_ids": ids, "attention_mask": mask}


def _cache_feeds(ids: np.ndarray, past: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    shape = (LAYERS, ids.shape[0], KV_HEADS, past, HEAD_DIM)
    return {
        "input_ids": ids,
        "past_keys": rng.standard_normal(shape).astype(np.float32),
        "past_values": rng.standard_normal(shape).astype(np.float32),
    }


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_bert_attention_is_fused_and_matches_at_two_shapes(tmp_path, exporter):
    model = onnx.load(str(FIXTURES / f"tiny_bert_{exporter}.onnx"))
    result = convert_fully(model, tmp_path, shape=["2,8", "2,8"])
    assert _fused_count(result) == 3
    script = result.script_path.read_text(encoding="utf-8")
    assert "ops.isnan" not in script and ".swapaxes(-1, -2)) / math.sqrt(16)" in script
    for seed, (batch, seq) in enumerate([(2, 8), (3, 5)]):
        assert_runs_like_onnxruntime(model, result, _token_feeds(batch, seq, seed), atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_gpt_attention_is_fused_and_matches_at_two_shapes(tmp_path, exporter):
    model = onnx.load(str(FIXTURES / f"tiny_gpt_{exporter}.onnx"))
    result = convert_fully(model, tmp_path, shape=["1,8"])
    assert _fused_count(result) == 2
    for seed, (batch, seq) in enumerate([(1, 8), (2, 5)]):
        ids = np.random.default_rng(seed).integers(0, 40, (batch, seq)).astype(np.int64)
        assert_runs_like_onnxruntime(model, result, {"ids": ids}, atol=1e-5)


# fixture, its shapes, two size sets of its inputs (float inputs random, ids below 40), attentions
ENCODERS = [
    ("tiny_vit_torchscript.onnx", ["1,3,16,16"], [[(1, 3, 16, 16)], [(3, 3, 16, 16)]], 2),
    ("tiny_whisper_encoder_dynamo.onnx", ["1,8,16"], [[(1, 8, 16)], [(2, 8, 16)]], 2),
    (
        "tiny_bart_torchscript.onnx",
        ["2,6", "2,6", "2,4"],
        [[(2, 6), (2, 6), (2, 4)], [(3, 9), (3, 9), (3, 5)]],
        3,
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "shape", "size_sets", "attentions"), ENCODERS)
def test_encoders_attention_is_fused_and_matches_at_two_shapes(
    tmp_path, name, shape, size_sets, attentions
):
    """ViT, an audio encoder (Whisper's) and an encoder-decoder (BART: causal self-attention,
    padding mask, cross-attention)."""
    model = onnx.load(str(FIXTURES / name))
    result = convert_fully(model, tmp_path, shape=shape)
    assert _fused_count(result) == attentions
    for seed, sizes in enumerate(size_sets):
        feeds = _corpus_feeds(model, sizes, seed)
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5)


def _greedy(run, prompt: np.ndarray, past: dict, steps: int) -> list[int]:
    """Greedy decoding: the prompt, then one token at a time with the returned cache."""
    feeds = {"input_ids": prompt, **past}
    tokens = []
    for _ in range(steps):
        logits, keys, values = run(feeds)
        token = int(np.argmax(logits[0, -1]))
        tokens.append(token)
        feeds = {
            "input_ids": np.array([[token]], np.int64),
            "past_keys": keys,
            "past_values": values,
        }
    return tokens


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_llama_with_cache_decodes_onnxruntimes_tokens(tmp_path, exporter):
    model = onnx.load(str(FIXTURES / f"tiny_llama_{exporter}.onnx"))
    result = convert_fully(model, tmp_path, shape=["1,3", "2,1,2,2,4", "2,1,2,2,4"])
    assert _fused_count(result) == LAYERS
    assert "ops.repeat_interleave" in result.script_path.read_text(encoding="utf-8")
    for seed, (batch, seq, past) in enumerate([(1, 3, 2), (2, 4, 5)]):
        ids = np.random.default_rng(seed).integers(0, VOCAB, (batch, seq)).astype(np.int64)
        assert_runs_like_onnxruntime(model, result, _cache_feeds(ids, past, seed), atol=1e-5)
    feeds = _cache_feeds(np.array([[1, 2]], np.int64), 3, seed=5)
    assert_runs_like_onnxruntime(model, result, feeds, graph_mode=True, atol=1e-5)
    names = [out.name for out in model.graph.output]

    def onnxruntime(feeds):
        return run_onnxruntime(model, feeds, names)

    def mindspore(feeds):
        return run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))

    start = _cache_feeds(np.array([[5, 17, 3]], np.int64), 1, seed=7)
    prompt, past = start.pop("input_ids"), start
    expected = _greedy(onnxruntime, prompt, past, steps=6)
    assert _greedy(mindspore, prompt, past, steps=6) == expected


def _corpus_models():
    if not CORPUS.exists():
        return []
    return json.loads(CORPUS.read_text())["models"]


def _second_sizes(model: onnx.ModelProto, shapes: list) -> list:
    """Other sizes for the dimensions the model declares dynamic: one more in the batch, three
    fewer tokens in a sequence of token ids."""
    second = []
    for inp, dims in zip(model.graph.input, shapes):
        declared = inp.type.tensor_type.shape.dim
        ids = inp.type.tensor_type.elem_type != onnx.TensorProto.FLOAT
        changed = list(dims)
        for axis, dim in enumerate(declared):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                continue
            if axis == 0:
                changed[axis] = dims[axis] + 1
            elif ids:
                changed[axis] = max(2, dims[axis] - 3)
        second.append(changed)
    return second


def _corpus_feeds(model: onnx.ModelProto, shapes: list, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp, dims in zip(model.graph.input, shapes):
        if inp.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            feeds[inp.name] = rng.standard_normal(dims).astype(np.float32)
        elif "mask" in inp.name:
            mask = np.ones(dims, np.int64)
            mask[0, dims[1] // 2 :] = 0  # padding in the first sequence
            feeds[inp.name] = mask
        else:
            feeds[inp.name] = rng.integers(0, 16, dims).astype(np.int64)
    return feeds


@pytest.mark.slow
@pytest.mark.parametrize("entry", _corpus_models(), ids=lambda entry: entry["file"])
def test_corpus_attention_is_fused_and_matches(tmp_path, entry):
    """The lead's corpus (when present): every Softmax of an attention is fused, and the
    network matches onnxruntime at the corpus's sizes and at other sizes of its dynamic
    dimensions."""
    path = CORPUS.parent / entry["file"]
    model = onnx.load(str(path))
    shapes = [",".join(str(d) for d in dims) for dims in entry["shapes"]]
    result = convert_fully(model, tmp_path, shape=shapes)
    softmaxes = sum(node.op_type == "Softmax" for node in model.graph.node)
    assert _fused_count(result) == softmaxes
    for seed, sizes in enumerate([entry["shapes"], _second_sizes(model, entry["shapes"])]):
        feeds = _corpus_feeds(model, sizes, seed)
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-4, rtol=1e-3)


TCORPUS = Path("/work/tcorpus/manifest.json")
UNFUSED = ("bloom",)  # ALiBi through baddbmm on (B*H, S, T) scores reshaped around the mask


def _tcorpus_models():
    return json.loads(TCORPUS.read_text())["models"] if TCORPUS.exists() else []


def _one_more_in_the_batch(model: onnx.ModelProto, shapes: list) -> list:
    """The sizes with one more in axis 0 of every input that declares it dynamic."""
    second = []
    for inp, dims in zip(model.graph.input, shapes):
        first = inp.type.tensor_type.shape.dim[0]
        static = first.HasField("dim_value") and first.dim_value > 0
        second.append(list(dims) if static else [dims[0] + 1, *dims[1:]])
    return second


@pytest.mark.slow
@pytest.mark.parametrize("entry", _tcorpus_models(), ids=lambda entry: entry["file"])
def test_decoder_corpus_attention_is_fused_and_matches(tmp_path, entry):
    """The lead's decoder corpus (when present): Llama, Mistral, Qwen2, GPT-2, GPT-NeoX with a
    key/value cache, ALBERT, BART, Whisper's encoder, DeiT; every attention but BLOOM's fused."""
    path = TCORPUS.parent / entry["file"]
    model = onnx.load(str(path))
    shapes = [",".join(str(d) for d in dims) for dims in entry["shapes"]]
    result = convert_fully(model, tmp_path, shape=shapes)
    softmaxes = sum(node.op_type == "Softmax" for node in model.graph.node)
    if not entry["file"].startswith(UNFUSED):
        assert _fused_count(result) == softmaxes
    for seed, sizes in enumerate([entry["shapes"], _one_more_in_the_batch(model, entry["shapes"])]):
        feeds = _corpus_feeds(model, sizes, seed)
        if "attention_mask" in feeds:
            feeds["attention_mask"][:] = 1  # with a cache, the mask covers past and new tokens
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-4, rtol=1e-3)


def _decode_with_cache(run, model: onnx.ModelProto, entry: dict, steps: int) -> list[int]:
    """Greedy decoding of a corpus decoder: the outputs after the logits are the next cache."""
    names = [inp.name for inp in model.graph.input]
    feeds = _corpus_feeds(model, entry["shapes"], seed=3)
    tokens = []
    for _ in range(steps):
        feeds["attention_mask"] = np.ones(
            (1, feeds[names[2]].shape[2] + feeds["input_ids"].shape[1]), np.int64
        )
        logits, *cache = run(feeds)
        tokens.append(int(np.argmax(logits[0, -1])))
        feeds = dict(zip(names[2:], cache))
        feeds = {"input_ids": np.array([[tokens[-1]]], np.int64), "attention_mask": None, **feeds}
    return tokens


@pytest.mark.slow
@pytest.mark.parametrize(
    "entry",
    [e for e in _tcorpus_models() if "_kv_torchscript" in e["file"]],
    ids=lambda entry: entry["file"],
)
def test_decoder_corpus_greedy_decode_gives_onnxruntimes_tokens(tmp_path, entry):
    model = onnx.load(str(TCORPUS.parent / entry["file"]))
    shapes = [",".join(str(d) for d in dims) for dims in entry["shapes"]]
    result = convert_fully(model, tmp_path, shape=shapes)
    names = [out.name for out in model.graph.output]

    def onnxruntime(feeds):
        return run_onnxruntime(model, feeds, names)

    def mindspore(feeds):
        return run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))

    expected = _decode_with_cache(onnxruntime, model, entry, steps=5)
    assert _decode_with_cache(mindspore, model, entry, steps=5) == expected
