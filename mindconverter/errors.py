"""Error classes and the table of stable error codes.

Every failure the tool reports is a :class:`MindConverterError` carrying one entry of
``ERROR_CODES``. Its one-line form is ``[ClassName] code NNNNNNN: what is wrong. What to do.``
``docs/errors.md`` is generated from ``ERROR_CODES`` (``python tools/gen_error_docs.py``) and a test
checks the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorCode:
    """One documented error: number, error class name, cause and fix."""

    number: int
    category: str
    cause: str
    fix: str


# The numbering groups errors by category; numbers are never reused or renumbered.
ERROR_CODES: dict[str, ErrorCode] = {
    # --- 1000xxx: reading the model file -------------------------------------------------
    "FILE_NOT_FOUND": ErrorCode(
        1000001,
        "ModelLoadingError",
        "The model file does not exist.",
        "Check the path given to --model_file.",
    ),
    "FILE_IS_DIRECTORY": ErrorCode(
        1000002,
        "ModelLoadingError",
        "The model path is a directory that is not a TensorFlow SavedModel (no saved_model.pb).",
        "Pass the model file itself, or the SavedModel folder that holds saved_model.pb.",
    ),
    "FILE_EMPTY": ErrorCode(
        1000003,
        "ModelLoadingError",
        "The model file is empty.",
        "Export or download the model again.",
    ),
    "FILE_CORRUPT": ErrorCode(
        1000004,
        "ModelLoadingError",
        "The file cannot be parsed as a model of its format (truncated, corrupt, another format, "
        "or a TensorFlow file refused by its sanity checks).",
        "Export the model again; check the download finished.",
    ),
    "UNKNOWN_SUFFIX": ErrorCode(
        1000005,
        "ModelLoadingError",
        "The file suffix is none of .onnx, .pb, .keras, .h5, .hdf5 or .tflite.",
        "Rename the file to its format's suffix or export to ONNX.",
    ),
    "EXTERNAL_DATA_MISSING": ErrorCode(
        1000006,
        "ModelLoadingError",
        "A tensor stored in an external data file cannot be read.",
        "Keep the external data files next to the .onnx file, as the exporter wrote them.",
    ),
    "OPSET_UNSUPPORTED": ErrorCode(
        1000007,
        "ModelLoadingError",
        "The model's ONNX opset (or IR version) is outside the supported range.",
        "Re-export with an opset between 7 and the newest the installed onnx package knows (or upgrade onnx).",
    ),
    "INVALID_GRAPH": ErrorCode(
        1000008,
        "ModelLoadingError",
        "The graph is malformed (cycle, undefined or twice-written value, no outputs, wrong operator "
        "arity, domain not imported, tensor data not matching its dims).",
        "Validate the model with onnx.checker and export it again.",
    ),
    "TF_STACK_MISSING": ErrorCode(
        1000009,
        "ModelLoadingError",
        "Converting a TensorFlow model (.pb, SavedModel, .keras/.h5, .tflite) needs TensorFlow and "
        "tf2onnx, which are not installed.",
        "Install the extra: pip install 'mindconverter[tf]'.",
    ),
    "NOT_A_GRAPHDEF": ErrorCode(
        1000010,
        "ModelLoadingError",
        "The .pb file is not a frozen TensorFlow GraphDef.",
        "Freeze the model to a GraphDef (see docs/tensorflow.md).",
    ),
    "ABSURD_DIMENSION": ErrorCode(
        1000011,
        "ModelLoadingError",
        "The model declares a tensor dimension that is negative or impossibly large.",
        "Check the export; give real sizes with --shape.",
    ),
    "FILE_UNREADABLE": ErrorCode(
        1000012,
        "ModelLoadingError",
        "The model path is not a regular file or cannot be read (permissions, device, pipe).",
        "Check the file's permissions and pass a regular .onnx or .pb file.",
    ),
    "TF_CONVERSION_FAILED": ErrorCode(
        1000013,
        "ModelLoadingError",
        "TensorFlow cannot import the GraphDef or load the SavedModel/Keras/TFLite model (or refuses "
        "it as unsafe), or tf2onnx fails to convert it to ONNX.",
        "Check the model loads in TensorFlow; see docs/tensorflow.md for what is refused and why.",
    ),
    "WEIGHTS_UNREADABLE": ErrorCode(
        1000014,
        "ModelLoadingError",
        "The weights file given to --weights_file cannot be read (PyTorch missing, or no state dict).",
        "Save the weights as safetensors (safetensors.torch.save_file(model.state_dict(), path)).",
    ),
    "WEIGHT_MAP_INVALID": ErrorCode(
        1000015,
        "ModelLoadingError",
        "The weight map given to --weight_map is not one a conversion wrote: it was edited or is "
        "inconsistent (a model name that is not a module name, fields of the wrong type, two rows "
        "for one parameter, a transform that does not fit its shapes).",
        "Pass the weight_map_of_<stem>.json the conversion wrote, unchanged; convert the model "
        "again to get a new one.",
    ),
    "DUPLICATE_PARAMETER": ErrorCode(
        1000030,
        "ModelLoadingError",
        "Two weights would be stored under one parameter name (MindSpore cannot load such a "
        "checkpoint).",
        "Give each weight its own name: pass the weight map the conversion wrote, unchanged.",
    ),
    "FILE_CHANGED": ErrorCode(
        1000031,
        "ModelLoadingError",
        "The model, its external data or the weights file changed (truncated or rewritten) while "
        "it was being read.",
        "Let the export or download finish, then run the conversion again.",
    ),
    # --- 2000xxx: command-line usage (exit code 2) -------------------------------------------
    "BAD_SHAPE": ErrorCode(
        2000001,
        "ArgumentError",
        "A --shape value is not a comma-separated list of whole numbers (0 is an empty axis).",
        "Write shapes like --shape 1,3,224,224 (one per input, space-separated).",
    ),
    "SHAPE_CONFLICT": ErrorCode(
        2000002,
        "ArgumentError",
        "A --shape value disagrees with a static dimension or the rank the model declares.",
        "Use the model's static sizes; only dynamic dimensions may be chosen.",
    ),
    "SHAPE_COUNT": ErrorCode(
        2000003,
        "ArgumentError",
        "The number of --shape values does not match the number of inputs.",
        "Give one shape per input or per dynamic input, in the order of the inputs (or of "
        "--input_nodes), or name them (NAME=D,D,...).",
    ),
    "SHAPE_REQUIRED": ErrorCode(
        2000004,
        "ArgumentError",
        "An input has dynamic dimensions and no --shape was given for it.",
        "Give concrete sizes with --shape.",
    ),
    "UNKNOWN_NODE": ErrorCode(
        2000005,
        "ArgumentError",
        "A name in --input_nodes or --output_nodes is not in the model.",
        "Use one of the names the message lists.",
    ),
    "DUPLICATE_NODE": ErrorCode(
        2000006,
        "ArgumentError",
        "A name appears twice in --input_nodes or --output_nodes.",
        "List each name once.",
    ),
    "MISSING_ARGUMENT": ErrorCode(
        2000007,
        "ArgumentError",
        "Neither --model_file nor --in_file was given, or both were.",
        "Give exactly one of --model_file or --in_file.",
    ),
    "BAD_ARGUMENT": ErrorCode(
        2000008,
        "ArgumentError",
        "An argument has an invalid value.",
        "See mindconverter --help.",
    ),
    "TF_NAMES_REQUIRED": ErrorCode(
        2000009,
        "ArgumentError",
        "A TensorFlow .pb was given without --input_nodes or --output_nodes.",
        "Name the tensors in TensorFlow's form, e.g. --input_nodes x:0 --output_nodes Identity:0.",
    ),
    "SCAFFOLD_NO_LOSS": ErrorCode(
        2000010,
        "ArgumentError",
        "--scaffold found no loss to train the output on: it is an integer or boolean tensor, it "
        "has no batch axis (a scalar), the model takes no batched input, or the --loss given does "
        "not fit it.",
        "Name a float output with --train_output NAME and a loss that fits it with --loss "
        "(cross_entropy, mse, l1, bce, or output for an output that is itself the loss), or "
        "convert without --scaffold.",
    ),
    "OUTPUT_IS_INPUT": ErrorCode(
        2000030,
        "ArgumentError",
        "A result would be written over one of the input files (the model, its external data, "
        "the weights file or the weight map).",
        "Choose another --output folder (or rename the input).",
    ),
    # --- 3000xxx: writing results ------------------------------------------------------------
    "OUTPUT_EXISTS": ErrorCode(
        3000001,
        "OutputError",
        "An output file already exists.",
        "Choose another --output/--report folder or pass --overwrite.",
    ),
    "OUTPUT_NOT_WRITABLE": ErrorCode(
        3000002,
        "OutputError",
        "The output or report folder cannot be created or written.",
        "Choose a folder you can write to.",
    ),
    "OUTPUT_IS_FILE": ErrorCode(
        3000003,
        "OutputError",
        "The --output or --report path is an existing file, not a folder.",
        "Give a folder path.",
    ),
    # --- 4000xxx: conversion --------------------------------------------------------------------
    "UNSUPPORTED_OPERATORS": ErrorCode(
        4000001,
        "ConversionError",
        "Operators could not be converted and --strict was given.",
        "See the report; register a custom mapper (docs/adding_a_mapper.md) or drop --strict.",
    ),
    "SHAPE_INFERENCE_FAILED": ErrorCode(
        4000002,
        "ConversionError",
        "Shapes or types could not be inferred for the graph.",
        "Check --shape; run onnx.shape_inference on the model to see the failing node.",
    ),
    "MAPPING_FAILED": ErrorCode(
        4000003,
        "ConversionError",
        "A mapper raised an internal error.",
        "Report it with the model; rerun with --debug for the traceback.",
    ),
    "UNSUPPORTED_DTYPE": ErrorCode(
        4000004,
        "ConversionError",
        "A tensor has a data type that a MindSpore checkpoint cannot store.",
        "Cast the weights to a supported type (float16/32/64, int8-64, uint8-64, bool) before export.",
    ),
    "MINDIR_FAILED": ErrorCode(
        4000005,
        "ConversionError",
        "MindSpore could not export the converted network as MindIR (--mindir).",
        "Convert without --mindir and see the error running the script in GRAPH_MODE; "
        "please report the model.",
    ),
    "WEIGHTS_MISMATCH": ErrorCode(
        4000006,
        "ConversionError",
        "The new weights do not fit the converted network (missing, or other shapes or dtypes), "
        "or a weight's recorded transform cannot be replayed without the model.",
        "Check the weights come from the same architecture; for weights the exporter computed "
        "(folded BatchNorm), export to ONNX again and convert it.",
    ),
    # --- 5000xxx: verification --------------------------------------------------------------------
    "VERIFY_MISMATCH": ErrorCode(
        5000001,
        "VerificationError",
        "MindSpore's outputs differ from onnxruntime's beyond the tolerance.",
        "See the per-output errors in the report; please report the model.",
    ),
    "MINDSPORE_MISSING": ErrorCode(
        5000002,
        "VerificationError",
        "--verify needs MindSpore, which is not installed.",
        "Install it: pip install 'mindconverter[mindspore]'.",
    ),
    "VERIFY_FAILED": ErrorCode(
        5000003,
        "VerificationError",
        "The converted model or onnxruntime failed to run during verification.",
        "Rerun with --debug; the generated script may need a hand fix at the reported line.",
    ),
    "TORCH_MISSING": ErrorCode(
        5000004,
        "VerificationError",
        "compare_training needs PyTorch to train the source model, and it is not installed.",
        "Install torch, or record the PyTorch run elsewhere and compare with compare_trajectories.",
    ),
    # --- 6000xxx: the deprecated AST path ---------------------------------------------------------
    "SCRIPT_UNREADABLE": ErrorCode(
        6000001,
        "ScriptConversionError",
        "The --in_file script cannot be read or is not valid Python.",
        "Pass a PyTorch model script that Python can parse.",
    ),
    # --- 9000000: bugs ----------------------------------------------------------------------------
    "INTERNAL_ERROR": ErrorCode(
        9000000,
        "InternalError",
        "An unexpected internal error (a bug in mindconverter, not in your input).",
        "Rerun with --debug and report the traceback together with the model.",
    ),
}


class MindConverterError(Exception):
    """Base class: a failure with a stable code, printed as one line."""

    exit_code = 1

    def __init__(self, key: str, detail: str = ""):
        self.key = key
        self.error_code = ERROR_CODES[key]
        self.detail = detail or self.error_code.cause
        super().__init__(str(self))

    @property
    def code(self) -> int:
        return self.error_code.number

    def __str__(self) -> str:
        detail = " ".join(self.detail.split())
        return f"[{self.error_code.category}] code {self.code}: {detail} {self.error_code.fix}"


class ModelLoadingError(MindConverterError):
    """The model file is missing, unreadable or malformed."""


class ArgumentError(MindConverterError):
    """A command-line or API argument is wrong (exit code 2)."""

    exit_code = 2


class OutputError(MindConverterError):
    """Results cannot be written where asked."""


class ConversionError(MindConverterError):
    """The conversion itself failed."""


class VerificationError(MindConverterError):
    """The converted model does not match or cannot be run."""


class ScriptConversionError(MindConverterError):
    """The deprecated AST path failed on its input script."""


class InternalError(MindConverterError):
    """An unexpected exception: a bug in mindconverter (code 9000000)."""


_CLASSES = {
    cls.__name__: cls
    for cls in (
        ModelLoadingError,
        ArgumentError,
        OutputError,
        ConversionError,
        VerificationError,
        ScriptConversionError,
        InternalError,
    )
}


def make_error(key: str, detail: str = "") -> MindConverterError:
    """Build the error of the right class for ``key``."""
    return _CLASSES[ERROR_CODES[key].category](key, detail)
