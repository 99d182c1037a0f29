"""Command-line interface: ``mindconverter --model_file m.onnx --shape 1,3,224,224``.

Exit codes: 0 success, 1 conversion failed, 2 usage error. Errors print one line with a stable
code; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import textwrap
import traceback
from collections.abc import Sequence
from pathlib import Path

from .errors import MindConverterError, make_error
from .outputs.atomic import Stopped
from .text import escape_controls
from .version import __version__

DESCRIPTION = (
    "Convert a trained model to MindSpore: an ONNX (.onnx) or frozen TensorFlow (.pb) model becomes a "
    "readable MindSpore script (class MindSporeModel), a checkpoint with its weights, a conversion "
    "report and a weight map."
)

EPILOG = """examples:
  mindconverter --model_file resnet50.onnx
  mindconverter --model_file bert.onnx --shape 1,128 1,128 --input_nodes input_ids attention_mask
  mindconverter --model_file model.onnx --shape 1,3,224,224 --output out --verify

exit codes: 0 converted, 1 conversion failed (or --strict/--verify failed), 2 usage error.
Error codes and fixes: docs/errors.md."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in our one-line error format (exit code 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        error = make_error("BAD_ARGUMENT", f"{message}.")
        self.exit(2, f"{error}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to generate docs/cli.md)."""
    parser = _Parser(
        prog="mindconverter",
        description=textwrap.fill(DESCRIPTION, 95),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"mindconverter {__version__}")
    parser.add_argument(
        "--model_file",
        metavar="FILE",
        help="the model to convert: .onnx, a frozen TensorFlow .pb, a SavedModel folder, .keras/.h5 "
        "or .tflite",
    )
    parser.add_argument(
        "--shape",
        nargs="+",
        action="extend",  # repeated flags add up: --shape a=1,8 --shape b=1,8
        metavar="[NAME=]D,D,...",
        help="input shape(s), space-separated: one per input in order (e.g. 1,3,224,224), one per input "
        "with dynamic dimensions (fully static inputs, scalars included, may be left out; a static "
        "model needs none), or by name (input_ids=1,128; 'sr=' is a scalar; 0 is an empty axis: "
        "'boxes=0,4'). An input whose dynamic dimensions are all named by the model and sized by "
        "another shape (h[2, batch, 64] once input=1,512 sizes batch) may be left out too. Must "
        "agree with the model's static dimensions",
    )
    parser.add_argument(
        "--input_nodes",
        nargs="+",
        action="extend",
        metavar="NAME",
        help="input names, in the order construct() takes them (default: the model's inputs)",
    )
    parser.add_argument(
        "--output_nodes",
        nargs="+",
        action="extend",
        metavar="NAME",
        help="output names (default: the model's outputs); an inner value cuts the graph there",
    )
    parser.add_argument(
        "--output",
        default="output",
        metavar="DIR",
        help="folder for the script and checkpoint (default: ./output)",
    )
    parser.add_argument(
        "--report", metavar="DIR", help="folder for the report and weight map (default: --output)"
    )
    parser.add_argument(
        "--in_file",
        metavar="FILE",
        help="[deprecated] a PyTorch model script to rewrite by its syntax tree",
    )
    parser.add_argument(
        "--weights_file",
        metavar="FILE",
        help="re-convert weights: a newer state dict of the converted model (.safetensors; "
        ".pt/.pth/.bin with PyTorch installed; or an ONNX export of the same architecture) "
        "becomes a new checkpoint in --output, through --weight_map",
    )
    parser.add_argument(
        "--weight_map",
        metavar="FILE",
        help="the weight_map_of_<stem>.json written when the model was converted",
    )
    _add_run_options(parser)
    return parser


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """How a conversion runs and what else it writes and checks."""
    parser.add_argument(
        "--overwrite", action="store_true", help="replace results that already exist"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 1, nothing written) when any operator cannot be converted",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="run the converted model in MindSpore and onnxruntime on random inputs and "
        "compare (needs MindSpore); exit 1 on mismatch",
    )
    parser.add_argument(
        "--verify_layers",
        action="store_true",
        help="--verify, and write every intermediate value's error against onnxruntime into the "
        "report (a mismatch always names the first diverging node)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=1e-3,
        metavar="REL",
        help="relative error allowed by --verify (default: 1e-3)",
    )
    parser.add_argument(
        "--graph_mode", action="store_true", help="run --verify in MindSpore GRAPH_MODE"
    )
    parser.add_argument(
        "--static",
        action="store_true",
        help="fix every dimension to --shape (default: dimensions the model declares dynamic stay "
        "dynamic in the generated network)",
    )
    parser.add_argument(
        "--mindir",
        action="store_true",
        help="also export the network as <stem>.mindir for deployment (mindspore.export; "
        "dynamic dimensions kept)",
    )
    parser.add_argument(
        "--scaffold",
        action="store_true",
        help="also write train_<stem>.py and eval_<stem>.py beside the script: training "
        "(mindspore.train.Model, checkpoints) and evaluation scripts to start from",
    )
    parser.add_argument(
        "--train_output",
        metavar="NAME",
        help="with --scaffold: the output to train (default: the first output)",
    )
    parser.add_argument(
        "--loss",
        choices=("cross_entropy", "mse", "l1", "bce", "output"),
        help="with --scaffold: the loss on the trained output (default: cross_entropy for "
        "[batch, classes] scores, mse for other float outputs; output: the output is itself the "
        "loss to minimise)",
    )
    parser.add_argument(
        "--keep_quantized",
        action="store_true",
        help="keep the integer weights of onnxruntime's quantized operators (MatMulNBits, "
        "DynamicQuantizeMatMul, MatMulIntegerToFloat) as integers in the checkpoint, "
        "dequantized in the network as it runs: a smaller checkpoint whose quantized weights "
        "do not train (default: dequantized once into float weights)",
    )
    parser.add_argument(
        "--float32",
        action="store_true",
        help="compute a float16/bfloat16 model in float32 (default: in its own dtype)",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no stage timings or progress bars (shown on stderr only when it is a terminal)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")


def _log(message: str) -> None:
    # Progress goes to stdout: stderr carries nothing but the one error line on failure.
    # Messages hold model-controlled names: escaped, they cannot forge lines or drive the terminal.
    try:
        print(escape_controls(message), flush=True)
    except BrokenPipeError:
        # the reader went away (`mindconverter ... | head -2`): the conversion itself goes on,
        # the rest of its messages go nowhere
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _reconvert_weights(args: argparse.Namespace) -> int:
    """--weights_file with --weight_map: a new checkpoint for an already converted script."""
    if not (args.weights_file and args.weight_map) or args.model_file or args.in_file:
        raise make_error(
            "BAD_ARGUMENT",
            "re-converting weights takes --weights_file and --weight_map (and no --model_file "
            "or --in_file).",
        )
    if not args.output.strip():
        raise make_error("BAD_ARGUMENT", "--output is empty; give a folder name.")
    from .reweight import reconvert_weights

    result = reconvert_weights(
        args.weights_file, args.weight_map, args.output, overwrite=args.overwrite, log=_log
    )
    if result.checked_against is not None:
        _log(f"Loaded into {result.checked_against}: every parameter fits.")
    return 0


def run(args: argparse.Namespace) -> int:
    """Carry out a parsed command line; returns the exit code."""
    if args.weights_file or args.weight_map:
        return _reconvert_weights(args)
    if bool(args.model_file) == bool(args.in_file):
        raise make_error("MISSING_ARGUMENT")
    for option in ("input_nodes", "output_nodes"):
        for name in getattr(args, option) or []:
            if not name:
                raise make_error("BAD_ARGUMENT", f"--{option} has an empty name.")
    for option in ("output", "report"):
        if getattr(args, option) is not None and not getattr(args, option).strip():
            raise make_error("BAD_ARGUMENT", f"--{option} is empty; give a folder name.")
    if args.in_file:
        from .ast_path import convert_script

        result = convert_script(
            args.in_file, args.output, args.report, overwrite=args.overwrite, notify=_log
        )
        _log(f"Converted script: {result.script_path}")
        _log(f"Report: {result.report_path} (converted rate {result.converted_rate:.2f}%)")
        return 0
    from .api import convert
    from .progress import Progress

    result = convert(
        args.model_file,
        shape=args.shape,
        input_nodes=args.input_nodes,
        output_nodes=args.output_nodes,
        output=args.output,
        report=args.report,
        overwrite=args.overwrite,
        strict=args.strict,
        verify=args.verify,
        verify_layers=args.verify_layers,
        tolerance=args.tolerance,
        graph_mode=args.graph_mode,
        dynamic=not args.static,
        float32=args.float32,
        keep_quantized=args.keep_quantized,
        mindir=args.mindir,
        scaffold=args.scaffold,
        train_output=args.train_output,
        train_loss=args.loss,
        debug=args.debug,
        log=_log,
        progress=Progress.for_terminal(quiet=args.quiet),
    )
    total = sum(result.operator_counts.values())
    _log(
        f"Converted {Path(args.model_file).name} in {result.seconds:.1f}s: "
        f"{total - len(result.unconverted)}/{total} operators ({result.converted_rate:.2f}%), "
        f"{result.parameter_count} parameters."
    )
    if result.unconverted:
        kinds = sorted({site.op_type for site in result.unconverted})
        _log(
            f"WARNING: {len(result.unconverted)} operator(s) not converted ({', '.join(kinds)}); "
            f"placeholders mark them in the script, see the report."
        )
    for label, path in (
        ("Script", result.script_path),
        ("Checkpoint", result.checkpoint_path),
        ("Report", result.report_path),
        ("Weight map", result.weight_map_path),
        ("MindIR", result.paths.mindir),
        ("Training", result.paths.train_script),
        ("Evaluation", result.paths.eval_script),
    ):
        if path is not None:
            _log(f"{label + ':':12}{path}")
    _log(f"Wall time {result.seconds:.1f}s, peak memory {result.peak_memory_mb:.0f} MB.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mindconverter`` command."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (already printed as one line), --help, --version
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        return run(args)
    except MindConverterError as exc:
        if args.debug:
            traceback.print_exc()
        print(escape_controls(str(exc)), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as stop:
        number = stop.number if isinstance(stop, Stopped) else signal.SIGINT
        print(
            f"Interrupted by {signal.Signals(number).name}; nothing was written.", file=sys.stderr
        )
        return 128 + number
    except Exception as exc:  # a bug (or MemoryError...): still one line unless --debug
        if args.debug:
            traceback.print_exc()
        message = " ".join(str(exc).split())[:300]
        error = make_error("INTERNAL_ERROR", f"{type(exc).__name__}: {message}".rstrip(": ") + ".")
        print(escape_controls(str(error)), file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
