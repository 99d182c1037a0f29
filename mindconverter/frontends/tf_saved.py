"""Stage 1 for TensorFlow as saved today: a SavedModel folder, a Keras ``.keras``/``.h5`` file or
a ``.tflite`` flatbuffer becomes an in-memory ``onnx.ModelProto`` through tf2onnx's own loaders.

These formats say what their inputs and outputs are, so nothing has to be named: a SavedModel's
``serving_default`` signature (or its only one), a Keras model's ``inputs``/``outputs``, a TFLite
model's graph inputs/outputs. Dimensions the signature leaves open (a ``None`` batch) stay dynamic
in the ONNX model, and ``--shape`` fills them as for any model. Keras files are loaded with
``safe_mode=True`` (a ``Lambda`` layer holding Python code is refused, never run) and traced in
inference mode, and every file is
checked by :mod:`.tf_sniff` before TensorFlow reads it. Nothing is written beside the input.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

import onnx

from ..errors import make_error
from ..native_stderr import captured_native_stderr
from ..text import one_line
from .tf_gelu import gelu_op_handlers
from .tf_graphdef import (
    TF_OPSET,
    allow_inlining,
    import_tf_stack,
    quiet_tf_loggers,
    tf_stack_available,
)
from .tf_sniff import (
    KERAS_SUFFIXES,
    SAVED_MODEL_FILE,
    TFLITE_SUFFIX,
    check_tf_saved_path,
    check_tflite_tensors,
    unsafe_ops_in,
)

SERVING_SIGNATURE = "serving_default"
SERVING_TAG = "serve"


def describe_format(path: Path) -> str:
    """What kind of TensorFlow model ``path`` is, in words (for messages)."""
    if path.is_dir():
        return "TensorFlow SavedModel"
    if path.suffix.lower() == TFLITE_SUFFIX:
        return "TFLite model"
    return "Keras model"


def load_tf_saved(path: Path) -> onnx.ModelProto:
    """Convert the SavedModel folder, Keras file or TFLite file at ``path`` into ONNX."""
    check_tf_saved_path(path)
    kind = describe_format(path)
    needs = ("tensorflow", "tf2onnx", "keras") if kind == "Keras model" else ()
    if not tf_stack_available() or any(importlib.util.find_spec(n) is None for n in needs):
        raise make_error(
            "TF_STACK_MISSING", f"Converting a {kind} ('{path.name}') needs tensorflow and tf2onnx."
        )
    tf, tf2onnx = import_tf_stack()
    with quiet_tf_loggers(), captured_native_stderr(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TensorFlow's and Keras's deprecation notes
        if path.is_dir():
            return _from_saved_model(path, tf, tf2onnx)
        if path.suffix.lower() in KERAS_SUFFIXES:
            return _from_keras_file(path, tf, tf2onnx)
        return _from_tflite(path, tf2onnx)


def _first_line(exc: BaseException) -> str:
    """The exception's first line, printable and bounded (it may quote the model file)."""
    text = str(exc).strip()
    return one_line(text.splitlines()[0], 300) if text else type(exc).__name__


def _read_saved_model_proto(folder: Path):
    """The folder's ``saved_model.pb`` parsed (FILE_CORRUPT when it is not a SavedModel)."""
    from tensorflow.core.protobuf import saved_model_pb2  # only with TensorFlow present

    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString((folder / SAVED_MODEL_FILE).read_bytes())
    except OSError as exc:
        raise make_error(
            "FILE_UNREADABLE", f"Cannot read '{folder.name}': {exc.strerror}."
        ) from None
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError
        raise make_error(
            "FILE_CORRUPT",
            f"'{folder.name}/{SAVED_MODEL_FILE}' does not parse as a SavedModel ({_first_line(exc)}).",
        ) from None
    if not proto.meta_graphs:
        raise make_error("FILE_CORRUPT", f"SavedModel '{folder.name}' holds no graph.")
    return proto


def _choose_signature(folder: Path, proto) -> tuple[list[str], str]:
    """The tags of the serving graph and the signature to convert: ``serving_default`` when
    present, else the only one (an error listing them when there are several or none)."""
    meta = next(
        (m for m in proto.meta_graphs if SERVING_TAG in m.meta_info_def.tags), proto.meta_graphs[0]
    )
    tags = list(meta.meta_info_def.tags)
    names = sorted(name for name in meta.signature_def if not name.startswith("_"))
    if SERVING_SIGNATURE in names:
        return tags, SERVING_SIGNATURE
    if len(names) == 1:
        return tags, names[0]
    listing = one_line(", ".join(names), 300) if names else "none"
    raise make_error(
        "TF_CONVERSION_FAILED",
        f"SavedModel '{folder.name}' has no '{SERVING_SIGNATURE}' signature to convert "
        f"(signatures: {listing}); save it with model.export() or a serving signature.",
    )


def _from_saved_model(folder: Path, tf, tf2onnx) -> onnx.ModelProto:
    """The serving signature of a SavedModel, frozen by tf2onnx's loader and converted."""
    proto = _read_saved_model_proto(folder)
    unsafe = unsafe_ops_in(proto)
    if unsafe:
        raise make_error(
            "TF_CONVERSION_FAILED",
            f"SavedModel '{folder.name}' uses operations that touch files, the terminal or Python "
            f"({', '.join(unsafe)}); it is not loaded.",
        )
    tags, signature = _choose_signature(folder, proto)
    del proto
    try:
        graph_def, inputs, outputs, renames = tf2onnx.tf_loader.from_saved_model(
            str(folder),
            None,
            None,
            tag=tags,
            signatures=[signature],
            return_tensors_to_rename=True,
        )
    except Exception as exc:  # noqa: BLE001 - TensorFlow's loader raises many kinds
        raise make_error(
            "TF_CONVERSION_FAILED",
            f"TensorFlow cannot load SavedModel '{folder.name}': {_first_line(exc)}",
        ) from None
    return _graph_to_onnx(folder.name, graph_def, inputs, outputs, renames, tf2onnx)


def _graph_to_onnx(name, graph_def, inputs, outputs, renames, tf2onnx) -> onnx.ModelProto:
    """tf2onnx's conversion of a frozen graph, tensors renamed after the signature's names."""
    allow_inlining(graph_def)
    try:
        model, _ = tf2onnx.convert.from_graph_def(
            graph_def,
            name=name,
            input_names=inputs,
            output_names=outputs,
            opset=TF_OPSET,
            tensors_to_rename=renames,
            custom_op_handlers=gelu_op_handlers(),
        )
    except Exception as exc:  # noqa: BLE001 - tf2onnx raises whatever its handlers raise
        raise make_error(
            "TF_CONVERSION_FAILED", f"tf2onnx could not convert '{name}': {_first_line(exc)}"
        ) from None
    return model


def _load_keras(path: Path):
    """The Keras model in ``path``, loaded in safe mode without its training configuration."""
    import keras  # only with TensorFlow present

    try:
        return keras.saving.load_model(path, compile=False, safe_mode=True)
    except ValueError as exc:
        text = _first_line(exc)
        if "unsafe" in text.lower() or "lambda" in text.lower():
            raise make_error(
                "TF_CONVERSION_FAILED",
                f"Keras refuses '{path.name}' in safe mode ({text}); mindconverter never loads "
                "Python code from a model file: rebuild the layer without Lambda code and save again.",
            ) from None
        raise make_error("FILE_CORRUPT", f"Keras cannot load '{path.name}': {text}") from None
    except Exception as exc:  # noqa: BLE001 - h5py, zipfile, json and Keras errors
        raise make_error(
            "FILE_CORRUPT", f"Keras cannot load '{path.name}': {_first_line(exc)}"
        ) from None


def _from_keras_file(path: Path, tf, tf2onnx) -> onnx.ModelProto:
    """A ``.keras``/``.h5`` model traced on its own input specs (inference mode), frozen by
    tf2onnx's ``tf_loader.from_function`` and converted like a SavedModel's graph, so function
    calls Keras compiles with XLA (grouped convolutions) are inlined first."""
    model = _load_keras(path)
    if not getattr(model, "inputs", None):
        raise make_error(
            "TF_CONVERSION_FAILED",
            f"'{path.name}' holds a Keras model without declared inputs (a subclassed model); "
            "save it with model.export() and convert the SavedModel folder.",
        )
    try:
        concrete, in_names, out_names = _trace_keras(model, tf)
        inputs = [t.name for t in concrete.inputs[: len(in_names)]]
        outputs = [t.name for t in concrete.outputs]
        renames = dict(zip(inputs, in_names))
        if out_names is not None and len(out_names) == len(outputs):
            renames.update(zip(outputs, out_names))
        graph_def = tf2onnx.tf_loader.from_function(concrete, inputs, outputs)
    except Exception as exc:  # noqa: BLE001 - tracing and freezing raise many kinds
        raise make_error(
            "TF_CONVERSION_FAILED",
            f"TensorFlow could not trace '{path.name}': {_first_line(exc)}",
        ) from None
    return _graph_to_onnx(path.name, graph_def, inputs, outputs, renames, tf2onnx)


def _trace_keras(model, tf):
    """The model's inference function traced on its input specs (batch as declared), its
    input names and its output names (None when the outputs are not a plain list)."""
    in_names = _unique_names([_tensor_name(t, f"input_{i}") for i, t in enumerate(model.inputs)])
    specs = [tf.TensorSpec(t.shape, t.dtype, name=name) for t, name in zip(model.inputs, in_names)]
    single = len(specs) == 1

    @tf.function
    def serve(*args):
        return model(args[0] if single else list(args), training=False)

    concrete = serve.get_concrete_function(*specs)
    structured = concrete.structured_outputs
    out_names = None
    if not isinstance(structured, dict):
        layer_names = list(getattr(model, "output_names", None) or [])  # the output layers' names
        tensors = layer_names if len(layer_names) == len(model.outputs) else model.outputs
        names = [_tensor_name(t, f"output_{i}") for i, t in enumerate(tensors)]
        out_names = _unique_names(names)
    return concrete, in_names, out_names


def _tensor_name(tensor, fallback: str) -> str:
    """A Keras tensor's (or layer's) name usable as a TensorFlow op name (``image``, ``dense_1``)."""
    text = tensor if isinstance(tensor, str) else getattr(tensor, "name", "")
    name = str(text or "").split("/")[0].split(":")[0]
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    return name if re.match(r"^[A-Za-z]", name) else fallback


def _unique_names(names: list[str]) -> list[str]:
    seen: set[str] = set()
    result = []
    for name in names:
        candidate, count = name, 1
        while candidate in seen:
            candidate, count = f"{name}_{count}", count + 1
        seen.add(candidate)
        result.append(candidate)
    return result


def _from_tflite(path: Path, tf2onnx) -> onnx.ModelProto:
    """A TFLite flatbuffer, checked against its declared tensor sizes, then tf2onnx's reader."""
    from tf2onnx.tflite.Model import Model  # only with tf2onnx present

    check_tflite_tensors(path, Model)
    try:
        model, _ = tf2onnx.convert.from_tflite(
            str(path), opset=TF_OPSET, custom_op_handlers=gelu_op_handlers()
        )
    except Exception as exc:  # noqa: BLE001 - the flatbuffer reader and tf2onnx raise many kinds
        raise make_error(
            "TF_CONVERSION_FAILED", f"tf2onnx could not convert '{path.name}': {_first_line(exc)}"
        ) from None
    return model


__all__ = ["describe_format", "load_tf_saved"]
