"""Re-convert weights: a newer state dict of the same source model becomes a new checkpoint for
an already converted script, through the weight map's recorded names and transforms.

Nothing is written unless every converted weight is found with the recorded shape and dtype and
its transform can be replayed: a checkpoint with stale or missing weights is never produced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..check.network import build_network
from ..codegen.naming import module_name
from ..errors import make_error
from ..frontends.loading import check_model_path
from ..native_stderr import captured_native_stderr
from ..outputs import checkpoint as ckpt
from ..outputs.atomic import (
    AtomicOutputs,
    check_targets,
    confined_path,
    prepare_folder,
    refuse_aliases,
)
from ..text import one_line
from .replay import EXPORTER_NOTES, CannotReplay, replay
from .weight_map_schema import check_rows
from .weights_file import read_weights

MAX_LISTED = 6
MAX_WEIGHT_MAP_BYTES = 256 << 20  # a weight map lists names and shapes: far below this


@dataclass
class ReweightResult:
    """What a weight re-conversion wrote."""

    checkpoint_path: Path
    written: int
    unused: list[str] = field(default_factory=list)  # tensors of the file no weight came from
    checked_against: Path | None = None  # the script the checkpoint was loaded into


def read_weight_map(path: str | Path) -> tuple[str, list[dict]]:
    """The model's stem and its rows from a weight map written by a conversion (its schema
    checked: see :mod:`.weight_map_schema`)."""
    path = check_model_path(path, (".json",))
    if path.stat().st_size > MAX_WEIGHT_MAP_BYTES:
        raise make_error("FILE_CORRUPT", f"'{path.name}' is too large for a weight map.")
    try:
        table = json.loads(path.read_bytes(), object_pairs_hook=_unique_keys)
    except _DuplicateKey as key:
        raise make_error(
            "WEIGHT_MAP_INVALID", f"'{path.name}' names {one_line(str(key), 60)} twice."
        ) from None
    except (UnicodeDecodeError, ValueError, RecursionError):  # JSONDecodeError is a ValueError
        raise make_error("FILE_CORRUPT", f"'{path.name}' is not a weight map (not JSON).") from None
    except OSError as exc:
        raise make_error("FILE_UNREADABLE", f"Cannot read '{path}': {exc.strerror}.") from None
    if not isinstance(table, dict) or len(table) != 1:
        raise make_error("FILE_CORRUPT", f"'{path.name}' is not a weight map of one model.")
    ((stem, rows),) = table.items()
    if module_name(stem) != stem:  # a conversion writes its script's module name, nothing else
        raise make_error(
            "WEIGHT_MAP_INVALID",
            f"'{path.name}' names its model {one_line(repr(stem), 60)}, which is not the module "
            "name of a converted script (results are named after it, inside --output).",
        )
    check_rows(rows, path.name)
    return stem, rows


class _DuplicateKey(ValueError):
    """A JSON object names one key twice (the JSON parser would keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    table = dict(pairs)
    if len(table) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(repr(key))
            seen.add(key)
    return table


# MindSpore parameter names whose PyTorch counterpart is named differently (same layout).
_TORCH_NAMES = {
    "gamma": "weight",
    "beta": "bias",
    "moving_mean": "running_mean",
    "moving_variance": "running_var",
    "embedding_table": "weight",
}


def torch_name(converted: str) -> str:
    """The PyTorch state-dict name of a converted parameter (``bn.gamma`` -> ``bn.weight``)."""
    path, _, leaf = converted.rpartition(".")
    leaf = _TORCH_NAMES.get(leaf, leaf)
    return f"{path}.{leaf}" if path else leaf


_RECURRENT_PARAMETER = re.compile(r"^(?P<kind>(?:weight|bias)_(?:ih|hh))_l0(?P<reverse>_reverse)?$")
_RECURRENT_SOURCE = re.compile(
    r"^(?P<module>.+)\.(?:weight|bias)_(?:ih|hh)_l(?P<layer>\d+)(?:_reverse)?$"
)


def recurrent_name(converted: str, source: str) -> str:
    """PyTorch's name for a parameter of a converted recurrent cell: each layer of a stacked
    ``nn.LSTM`` becomes a cell of its own (``lstm_1.bias_hh_l0``), named after the source
    parameter its weights came from (``lstm.weight_ih_l1`` -> ``lstm.bias_hh_l1``)."""
    leaf = _RECURRENT_PARAMETER.match(converted.rpartition(".")[2])
    origin = _RECURRENT_SOURCE.match(source)
    if not (leaf and origin):
        return ""
    reverse = leaf.group("reverse") or ""
    return f"{origin.group('module')}.{leaf.group('kind')}_l{origin.group('layer')}{reverse}"


def _same_layout(array: np.ndarray, shape: tuple[int, ...]) -> bool:
    """Equal shapes, or equal apart from unit dimensions (nn.Conv1d's weight is 4-D)."""
    squeezed = tuple(d for d in array.shape if d != 1)
    return tuple(array.shape) == shape or squeezed == tuple(d for d in shape if d != 1)


def new_weight(row: dict, tensors: Mapping[str, np.ndarray], from_onnx: bool = False) -> np.ndarray:
    """The converted weight of ``row`` computed from the new tensors; raises ValueError with
    the reason when it cannot be.

    A state dict is looked up by the parameter's own name first (MindSpore's layers hold
    PyTorch's layouts; exporters may merge equal tensors, so the recorded source can be another
    parameter's name), then by the recorded source name with the transform replayed. An ONNX
    export (``from_onnx``) is looked up by the recorded names, and also holds the values the
    exporter computed (BatchNorm folded into a convolution)."""
    source, converted = row["source_weight"], row["converted_weight"]
    transform = row.get("transform", "")
    shape = tuple(int(d) for d in converted["shape"])
    dtype = _numpy_dtype(converted["data_type"])
    name, exported_as = source["name"], source.get("exported_as", "")
    if any(note in transform for note in EXPORTER_NOTES) and not from_onnx:
        raise ValueError(
            "the exporter computed it (BatchNorm folded): no state dict holds it; "
            "give the new ONNX export as --weights_file"
        )
    if not from_onnx:
        # the parameter's own name, then the name recovered for a tensor the exporter renamed
        recurrent = recurrent_name(converted["name"], name)
        for own in (torch_name(converted["name"]), name if exported_as else "", recurrent):
            if own in tensors and _same_layout(tensors[own], shape):
                array = _checked(tensors[own], tensors[own].shape, source.get("data_type", ""), own)
                return np.ascontiguousarray(array.reshape(shape).astype(dtype))
    found = exported_as if exported_as in tensors else name if name in tensors else ""
    if not found:
        return _missing(name, exported_as)
    array = _checked(tensors[found], tuple(source["shape"]), source.get("data_type", ""), found)
    try:
        result = replay(transform, array, shape, dtype)
        if tuple(result.shape) != shape:
            raise ValueError(f"it comes out {list(result.shape)}, the network holds {list(shape)}")
        return result
    except CannotReplay as step:
        raise ValueError(f"its transform step '{step}' cannot be replayed") from None
    except (ValueError, IndexError, TypeError) as exc:  # an index or axis the tensor lacks
        raise ValueError(f"its transform does not fit the new tensor ({exc})") from None


class Missing(ValueError):
    """The file has no tensor for a weight."""


def _missing(name: str, exported_as: str):
    also = f" (exported as '{exported_as}')" if exported_as else ""
    raise Missing(f"no tensor '{name}'{also} in the file")


def _checked(array: np.ndarray, shape: tuple, dtype_name: str, found: str) -> np.ndarray:
    where = f" ('{found}')" if found else ""
    if tuple(array.shape) != tuple(shape):
        raise ValueError(
            f"the file's tensor{where} has shape {list(array.shape)}, not {list(shape)}"
        )
    if dtype_name and array.dtype.name != dtype_name:
        raise ValueError(f"the file's tensor{where} is {array.dtype.name}, not {dtype_name}")
    return array


def _numpy_dtype(checkpoint_type: str) -> np.dtype:
    for name, label in ckpt.TENSOR_TYPES.items():
        if label == checkpoint_type:
            return np.dtype(name)  # ml_dtypes (imported by the reader) registers bfloat16
    raise make_error(
        "FILE_CORRUPT", f"The weight map names an unknown data type '{checkpoint_type}'."
    )


class _FrozenConstants:
    """The existing checkpoint's values of the network's non-trainable parameters (constants
    the exporter made, which no state dict holds), read only when needed."""

    def __init__(self, script: Path):
        self.script = script
        self.values: dict[str, np.ndarray] | None = None

    def value(self, name: str) -> np.ndarray | None:
        if self.values is None:
            self.values = self._read()
        return self.values.get(name)

    def _read(self) -> dict[str, np.ndarray]:
        checkpoint = self.script.with_suffix(".ckpt")
        if not (self.script.is_file() and checkpoint.is_file()):
            return {}
        network = build_network(self.script, checkpoint)
        return {
            parameter.name: parameter.asnumpy()
            for parameter in network.get_parameters()
            if not parameter.requires_grad
        }


def _check_fits(script: Path, checkpoint: Path) -> None:
    """Load the new checkpoint into the converted script (strict); WEIGHTS_MISMATCH when an
    edited map gave a parameter another dtype or shape than the script's (MindSpore's own
    complaint, logged on stderr, is kept off the terminal)."""
    try:
        with captured_native_stderr():
            build_network(script, checkpoint)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise make_error(
            "WEIGHTS_MISMATCH",
            f"The new checkpoint does not fit '{script.name}': {one_line(str(exc), 240)}",
        ) from None


def reconvert_weights(
    weights_file: str | Path,
    weight_map_file: str | Path,
    output: str | Path = "output",
    *,
    overwrite: bool = False,
    log: Callable[[str], None] | None = None,
) -> ReweightResult:
    """Write ``<stem>.ckpt`` into ``output`` from ``weights_file`` through the weight map; when
    the converted script ``<stem>.py`` is there, the new checkpoint is loaded into it (strict)
    before it is published."""
    say = log or (lambda message: None)
    stem, rows = read_weight_map(weight_map_file)
    tensors = read_weights(weights_file)
    from_onnx = Path(weights_file).suffix.lower() == ".onnx"
    output_dir = prepare_folder(Path(output))
    script = confined_path(output_dir, f"{stem}.py")
    inputs = [Path(weights_file), Path(weight_map_file)]
    refuse_aliases([output_dir / f"{stem}{suffix}" for suffix in (".ckpt", ".safetensors")], inputs)
    frozen = _FrozenConstants(script)
    parameters, problems, used, kept = [], [], set(), []
    for row in rows:
        name = row["converted_weight"]["name"]
        try:
            parameters.append((name, new_weight(row, tensors, from_onnx)))
        except Missing as why:
            value = frozen.value(name)
            if value is None:
                problems.append(f"{one_line(name, 80)}: {one_line(str(why), 160)}")
            else:
                parameters.append((name, value))
                kept.append(name)
        except ValueError as why:
            problems.append(f"{one_line(name, 80)}: {one_line(str(why), 160)}")
        used.update({row["source_weight"]["name"], row["source_weight"].get("exported_as", "")})
        used.update({name, torch_name(name), recurrent_name(name, row["source_weight"]["name"])})
    if problems:
        listed = "; ".join(problems[:MAX_LISTED])
        more = f"; and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise make_error(
            "WEIGHTS_MISMATCH",
            f"{len(problems)} of {len(rows)} weight(s) cannot be taken from "
            f"'{Path(weights_file).name}': {listed}{more}.",
        )
    fits = ckpt.fits_ckpt(parameters)
    target = confined_path(output_dir, f"{stem}{'.ckpt' if fits else '.safetensors'}")
    check_targets([target], overwrite)
    refuse_aliases([target], inputs)
    with AtomicOutputs(overwrite=overwrite) as outputs:
        write = ckpt.write_checkpoint if fits else ckpt.write_safetensors
        outputs.write_with(target, lambda stream: write(stream, parameters))
        if script.is_file() and parameters:
            _check_fits(script, outputs.staged_path(target))
        outputs.publish()
    # an ONNX export also holds the graph's own constants: only a state dict's leftovers tell
    unused = [] if from_onnx else sorted(set(tensors) - used)
    say(f"Re-converted {len(parameters) - len(kept)} weight(s) into {target}.")
    if kept:
        say(
            f"{len(kept)} constant(s) of the network that no source tensor holds (masks, "
            "positions: not trainable) were kept from the existing checkpoint."
        )
    if unused:
        shown = ", ".join(one_line(name, 120) for name in unused[:3])
        say(f"{len(unused)} tensor(s) of the file are not in the network (e.g. {shown}).")
    return ReweightResult(target, len(parameters), unused, script if script.is_file() else None)


__all__ = ["ReweightResult", "new_weight", "read_weight_map", "reconvert_weights"]
