"""Small transformers put through onnxruntime's transformer optimizer, its graph optimizations
and its quantizers at test time, then converted: every operator converts and the network
matches onnxruntime on the optimized model at two input shapes."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.helpers import assert_runs_like_onnxruntime, convert_fully

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MS = "com.microsoft"
SHAPES = ((2, 8), (3, 5))


def attention_sizes(model: onnx.ModelProto) -> tuple[int, int]:
    """(num_heads, hidden_size) read from the model: the hidden size is the width of the first
    embedding table, the head count the second axis of the scores onnxruntime computes."""
    import onnxruntime as ort

    tables = {init.name: init for init in model.graph.initializer if len(init.dims) == 2}
    gathers = [n for n in model.graph.node if n.op_type == "Gather" and n.input[0] in tables]
    hidden = int(tables[gathers[0].input[0]].dims[1])
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.add(name=softmax.input[0])
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = token_feeds(model, 1, 4)
    scores = session.run([softmax.input[0]], feeds)[0]
    return int(scores.shape[1]), hidden


def token_feeds(model: onnx.ModelProto, batch: int, seq: int, seed: int = 0) -> dict:
    """Token ids below the vocabulary size, and attention masks with the last token of the
    first row masked."""
    rng = np.random.default_rng(seed)
    tables = [init for init in model.graph.initializer if len(init.dims) == 2]
    vocab = int(tables[0].dims[0])
    weights = {init.name for init in model.graph.initializer}
    feeds = {}
    for inp in model.graph.input:
        if inp.name in weights:
            continue
        if "mask" in inp.name:
            mask = np.ones((batch, seq), np.int64)
            mask[0, -1] = 0
            feeds[inp.name] = mask
        elif "type" in inp.name:  # BERT's token types: two segments
            feeds[inp.name] = (np.arange(seq) >= seq // 2).astype(np.int64)[None].repeat(batch, 0)
        else:
            feeds[inp.name] = rng.integers(0, vocab, (batch, seq)).astype(np.int64)
    return feeds


def fused(path: Path, model_type: str, heads: int, hidden: int, tmp_path: Path):
    """onnxruntime's transformer optimizer (its Python fusions: opt_level 0 needs no torch),
    saved as it writes it (with the com.microsoft opset import)."""
    from onnxruntime.transformers.optimizer import optimize_model

    optimizer = optimize_model(
        str(path), model_type=model_type, num_heads=heads, hidden_size=hidden, opt_level=0
    )
    target = tmp_path / "fused.onnx"
    optimizer.save_model_to_file(str(target))
    return onnx.load(str(target))


def graph_optimized(model: onnx.ModelProto, tmp_path: Path) -> onnx.ModelProto:
    """onnxruntime's extended graph optimizations (FusedMatMul, FusedGemm, ...), saved."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "graph_optimized.onnx")
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return onnx.load(options.optimized_model_filepath)


def dynamic_int8(model: onnx.ModelProto, tmp_path: Path) -> onnx.ModelProto:
    """onnxruntime's quantize_dynamic (int8 weights, activations quantized at run time)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source, target = tmp_path / "fused_for_int8.onnx", tmp_path / "int8.onnx"
    onnx.save(model, str(source))
    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    return onnx.load(str(target))


def matmul_4bits(model: onnx.ModelProto, tmp_path: Path) -> onnx.ModelProto:
    """onnxruntime's MatMulNBits quantizer (4-bit blocks of 16, asymmetric)."""
    pytest.importorskip("onnx_ir", reason="onnxruntime's MatMulNBits quantizer needs onnx_ir")
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(model, block_size=16, is_symmetric=False)
    quantizer.process()
    return quantizer.model.model


def matmul_nf4(model: onnx.ModelProto, tmp_path: Path) -> onnx.ModelProto:
    """onnxruntime's bitsandbytes-style quantizer (MatMulBnb4, NF4 blocks of 16)."""
    from onnxruntime.quantization.matmul_bnb4_quantizer import MatMulBnb4Quantizer

    quantizer = MatMulBnb4Quantizer(model, MatMulBnb4Quantizer.NF4, 16)
    quantizer.process()
    return quantizer.model.model


VARIANTS = {
    "fused": lambda model, tmp_path: model,
    "fused+graph_optimized": graph_optimized,
    "fused+quantize_dynamic": dynamic_int8,
    "fused+matmul_4bits": matmul_4bits,
    "fused+matmul_nf4": matmul_nf4,
}


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize(
    ("fixture", "model_type"),
    [
        ("tiny_bert_torchscript", "bert"),
        ("tiny_gpt_torchscript", "gpt2"),
        ("tiny_bert_dynamo", "bert"),
        ("tiny_gpt_dynamo", "gpt2"),
        ("tiny_bert_eager", "bert"),  # made by tools/make_contrib_fixtures.py
        ("tiny_gpt2_eager", "gpt2"),
    ],
)
def test_optimized_transformer_converts_and_matches(tmp_path, fixture, model_type, variant):
    logging.getLogger().setLevel(logging.WARNING)  # the optimizer logs every fusion
    path = FIXTURES / f"{fixture}.onnx"
    source = onnx.load(str(path))
    heads, hidden = attention_sizes(source)
    model = VARIANTS[variant](fused(path, model_type, heads, hidden, tmp_path), tmp_path)
    contrib = Counter(node.op_type for node in model.graph.node if node.domain == MS)
    assert contrib, "the optimizer produced no com.microsoft operators"
    if variant == "fused+matmul_4bits":
        assert contrib["MatMulNBits"] > 0
    if variant == "fused+matmul_nf4":
        assert contrib["MatMulBnb4"] > 0
    if fixture == "tiny_bert_eager":  # attention written out: the optimizer fuses all of it
        fused_ops = {"EmbedLayerNormalization", "Attention"}
        if variant == "fused+quantize_dynamic":
            fused_ops = {"QEmbedLayerNormalization", "QAttention"}
        assert fused_ops <= set(contrib), contrib
    batch, seq = SHAPES[0]
    shapes = [f"{batch},{seq}"] * len(token_feeds(source, batch, seq))
    result = convert_fully(model, tmp_path, shape=shapes)
    quantized = "quantize" in variant or "bits" in variant or "nf4" in variant
    tolerances = {"rtol": 1e-3, "atol": 5e-4} if quantized else {"rtol": 1e-4, "atol": 1e-5}
    for batch, seq in SHAPES:
        feeds = token_feeds(source, batch, seq, seed=seq)
        assert_runs_like_onnxruntime(model, result, feeds, **tolerances)


def static_uint8(path: Path, tmp_path: Path) -> onnx.ModelProto:
    """onnxruntime's quantize_static in the QOperator format (QLinearConv, QLinearAdd/Mul,
    QLinearGlobalAveragePool, QGemm), calibrated on random images."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class RandomImages(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.batches = iter(
                {"input": rng.standard_normal((2, 3, 32, 32)).astype(np.float32)} for _ in range(4)
            )

        def get_next(self):
            return next(self.batches, None)

    target = tmp_path / "static_uint8.onnx"
    quantize_static(
        str(path),
        str(target),
        RandomImages(),
        quant_format=QuantFormat.QOperator,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
    )
    return onnx.load(str(target))


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["tiny_resnet_torchscript", "tiny_mobilenet_torchscript"])
def test_statically_quantized_cnn_converts_and_matches(tmp_path, fixture):
    logging.getLogger().setLevel(logging.WARNING)
    model = static_uint8(FIXTURES / f"{fixture}.onnx", tmp_path)
    contrib = Counter(node.op_type for node in model.graph.node if node.domain == MS)
    assert {"QLinearAdd", "QLinearGlobalAveragePool", "QGemm"} <= set(contrib), contrib
    result = convert_fully(model, tmp_path, shape=["1,3,32,32"])
    rng = np.random.default_rng(1)
    for batch in (1, 3):
        feeds = {"input": rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)}
        assert_runs_like_onnxruntime(model, result, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_a_4_bit_model_kept_quantized_matches_with_a_smaller_checkpoint(tmp_path):
    """--keep_quantized: MatMulNBits' integers stay integers (one a byte) in the checkpoint,
    dequantized as the network runs; the numbers are the float conversion's."""
    logging.getLogger().setLevel(logging.WARNING)
    path = FIXTURES / "tiny_gpt_torchscript.onnx"
    source = onnx.load(str(path))
    heads, hidden = attention_sizes(source)
    model = matmul_4bits(fused(path, "gpt2", heads, hidden, tmp_path), tmp_path)
    batch, seq = SHAPES[0]
    shapes = [f"{batch},{seq}"] * len(token_feeds(source, batch, seq))
    (tmp_path / "kept").mkdir()
    (tmp_path / "floats").mkdir()
    kept = convert_fully(model, tmp_path / "kept", shape=shapes, keep_quantized=True)
    floats = convert_fully(model, tmp_path / "floats", shape=shapes)
    assert "QuantizedDense(" in kept.script_path.read_text()
    assert kept.checkpoint_path.stat().st_size < 0.8 * floats.checkpoint_path.stat().st_size
    for batch, seq in SHAPES:
        feeds = token_feeds(source, batch, seq, seed=seq)
        assert_runs_like_onnxruntime(model, kept, feeds, rtol=1e-3, atol=5e-4)
