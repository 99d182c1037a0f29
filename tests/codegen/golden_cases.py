"""The models whose generated scripts are kept as golden files under ``tests/golden/``.

Each case writes its source model into a folder and names the shapes to convert it with. The
models are small and built deterministically (by ``onnx.helper``, TensorFlow, or taken from
``tests/fixtures``), so the generated script changes only when the converter does.

Regenerate the golden files after an intended change with ``python tools/regen_golden.py``.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"
FIXTURES = GOLDEN_DIR.parent / "fixtures"
IR_VERSION = 8


@dataclass(frozen=True)
class GoldenCase:
    """One source model and how to convert it."""

    name: str
    write_model: Callable[[Path], Path]  # writes the model into a folder, returns its path
    shape: tuple[str, ...] = ()
    needs: str = ""  # an optional package the case needs (skipped without it)
    input_nodes: tuple[str, ...] = ()
    output_nodes: tuple[str, ...] = ()

    @property
    def golden_path(self) -> Path:
        return GOLDEN_DIR / f"{self.name}.py"


def _fixture(file_name: str) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        target = folder / file_name
        shutil.copyfile(FIXTURES / file_name, target)
        return target

    return write


def _save(model: onnx.ModelProto, path: Path) -> Path:
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def _lstm_classifier(folder: Path) -> Path:
    """An LSTM over a sequence followed by a linear classifier on the last hidden state."""
    rng = np.random.default_rng(0)
    seq, batch, features, hidden, classes = 5, 1, 4, 6, 3
    weights = {
        "lstm.weight_ih": rng.standard_normal((1, 4 * hidden, features)).astype(np.float32),
        "lstm.weight_hh": rng.standard_normal((1, 4 * hidden, hidden)).astype(np.float32),
        "lstm.bias": rng.standard_normal((1, 8 * hidden)).astype(np.float32),
        "fc.weight": rng.standard_normal((hidden, classes)).astype(np.float32),
        "fc.bias": rng.standard_normal((classes,)).astype(np.float32),
    }
    nodes = [
        helper.make_node(
            "LSTM",
            ["x", "lstm.weight_ih", "lstm.weight_hh", "lstm.bias"],
            ["all_hidden", "last_hidden", "last_cell"],
            hidden_size=hidden,
            name="/lstm/LSTM",
        ),
        helper.make_node("Squeeze", ["last_hidden", "axes0"], ["h"], name="/Squeeze"),
        helper.make_node("MatMul", ["h", "fc.weight"], ["scores"], name="/fc/MatMul"),
        helper.make_node("Add", ["scores", "fc.bias"], ["logits"], name="/fc/Add"),
    ]
    initializers = [numpy_helper.from_array(v, k) for k, v in weights.items()]
    initializers.append(numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"))
    graph = helper.make_graph(
        nodes,
        "lstm_classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, features])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes])],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="golden"
    )
    return _save(model, folder / "lstm_classifier.onnx")


def _unconverted_operator(folder: Path) -> Path:
    """A custom-domain operator between two converted ones: the script keeps a placeholder."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Mystery", ["r"], ["m"], domain="com.example", name="mystery"),
        helper.make_node("Add", ["m", "x"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "with_custom_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="golden")
    model.ir_version = IR_VERSION
    onnx.save(model, folder / "custom_op.onnx")  # the checker rejects unknown domains
    return folder / "custom_op.onnx"


def _tensorflow_cnn(folder: Path) -> Path:
    """A frozen TF1-style graph: NHWC conv, bias, ReLU, max pool, dense layer, softmax."""
    import tensorflow as tf

    rng = np.random.default_rng(1)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 8, 8, 3], name="image")
        kernel = tf.constant(
            rng.standard_normal((3, 3, 3, 4)).astype(np.float32), name="conv/kernel"
        )
        bias = tf.constant(rng.standard_normal(4).astype(np.float32), name="conv/bias")
        y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, kernel, 1, "SAME"), bias), name="conv/relu")
        y = tf.nn.max_pool2d(y, 2, 2, "VALID", name="pool")
        y = tf.reshape(y, [1, 64], name="flatten")
        dense = tf.constant(rng.standard_normal((64, 5)).astype(np.float32), name="dense/kernel")
        tf.nn.softmax(tf.matmul(y, dense, name="dense/matmul"), name="probs")
    path = folder / "tf_cnn.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path


CASES = [
    GoldenCase("cnn_torchscript", _fixture("tiny_resnet_torchscript.onnx"), ("1,3,32,32",)),
    GoldenCase("cnn_dynamo", _fixture("tiny_resnet_dynamo.onnx"), ("1,3,32,32",)),
    GoldenCase("transformer_dynamo", _fixture("tiny_bert_dynamo.onnx"), ("1,8", "1,8")),
    GoldenCase("gpt_dynamo", _fixture("tiny_gpt_dynamo.onnx"), ("1,8",)),
    GoldenCase("mobilenet_dynamo", _fixture("tiny_mobilenet_dynamo.onnx"), ("1,3,32,32",)),
    GoldenCase(
        "decoder_kv_cache_torchscript",
        _fixture("tiny_llama_torchscript.onnx"),
        ("1,3", "2,1,2,2,4", "2,1,2,2,4"),
    ),
    GoldenCase(
        "decoder_kv_cache_dynamo",
        _fixture("tiny_llama_dynamo.onnx"),
        ("1,3", "2,1,2,2,4", "2,1,2,2,4"),
    ),
    GoldenCase("vit_torchscript", _fixture("tiny_vit_torchscript.onnx"), ("1,3,16,16",)),
    GoldenCase("audio_encoder_dynamo", _fixture("tiny_whisper_encoder_dynamo.onnx"), ("1,8,16",)),
    # OLMo-2: q_norm and k_norm over the whole projection, written inside the head split
    GoldenCase(
        "normed_projection_decoder_torchscript",
        _fixture("tiny_olmo2_torchscript.onnx"),
        ("2,5", "2,5"),
    ),
    # PyTorch's nn.TransformerEncoder: nn.MultiheadAttention written batch-first
    GoldenCase("torch_encoder_dynamo", _fixture("tiny_torch_encoder_dynamo.onnx"), ("2,6,16",)),
    GoldenCase(
        "encoder_decoder_torchscript",
        _fixture("tiny_bart_torchscript.onnx"),
        ("2,6", "2,6", "2,4"),
    ),
    GoldenCase(
        "alibi_decoder_torchscript",
        _fixture("tiny_bloom_torchscript.onnx"),
        ("input_ids=2,5", "attention_mask=2,5"),
    ),
    GoldenCase("alibi_decoder_dynamo", _fixture("tiny_bloom_dynamo.onnx")),
    GoldenCase(
        "position_bias_encoder_torchscript",
        _fixture("tiny_t5_encoder_torchscript.onnx"),
        ("input_ids=2,5", "attention_mask=2,5"),
    ),
    GoldenCase(
        "interleaved_rotary_decoder_torchscript",
        _fixture("tiny_gptj_torchscript.onnx"),
        ("input_ids=2,5", "attention_mask=2,5"),
    ),
    GoldenCase(
        "fixed_token_count_encoder_dynamo",
        _fixture("tiny_dinov2_dynamo.onnx"),
        ("pixel_values=1,3,28,28",),
    ),
    GoldenCase(
        "stages_vision_dynamo", _fixture("tiny_swin_dynamo.onnx"), ("pixel_values=1,3,32,32",)
    ),
    GoldenCase(  # Swin's second block rolls its windows: roll(x, (-2, -2), (1, 2))
        "shifted_windows_torchscript",
        _fixture("tiny_swin_shifted_torchscript.onnx"),
        ("pixel_values=1,3,16,16",),
    ),
    GoldenCase(  # HF ResNet: stages of one and two layers are one class with a depth
        "stage_depths_torchscript",
        _fixture("tiny_hf_resnet_torchscript.onnx"),
        ("pixel_values=1,3,32,32",),
    ),
    GoldenCase(
        "sliding_window_decoder_kv_torchscript",
        _fixture("tiny_gemma2_kv_torchscript.onnx"),
        (
            "input_ids=1,2",
            "attention_mask=1,5",
            *(f"past_{k}_{i}=1,1,3,8" for i in (0, 1) for k in ("key", "value")),
        ),
    ),
    GoldenCase("lstm_classifier", _lstm_classifier),
    GoldenCase(
        "tensorflow_cnn",
        _tensorflow_cnn,
        ("1,8,8,3",),
        needs="tensorflow",
        input_nodes=("image:0",),
        output_nodes=("probs:0",),
    ),
    GoldenCase("unconverted_operator", _unconverted_operator),
]


def available(case: GoldenCase) -> bool:
    """Whether the packages the case needs are installed."""
    return not case.needs or importlib.util.find_spec(case.needs) is not None


def generate(case: GoldenCase, folder: Path) -> str:
    """Convert the case's model in ``folder`` and return the generated script's text."""
    from mindconverter import convert

    model_path = case.write_model(folder)
    result = convert(
        model_path,
        shape=list(case.shape) or None,
        input_nodes=list(case.input_nodes) or None,
        output_nodes=list(case.output_nodes) or None,
        output=folder / "out",
    )
    return result.script_path.read_text(encoding="utf-8")
