"""Re-convert weights: a newer state dict of the same source model becomes a new checkpoint for
an already converted script, through the weight map's recorded names and transforms.

Nothing is written unless every converted weight is found with the recorded shape and dtype and
its transform can be replayed: a checkpoint with stale or missing weights is never produced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..check.network import build_network
from ..codegen.naming import module_name
from ..errors import make_error
from ..frontends.loading import check_model_path
from ..graph.module_tree import packed_projection
from ..graph.weight_roles import is_generated_name
from ..graph.weight_steps import BatchNormFold, WeightStep, parse_steps, steps_from_json
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
from .replay import CannotReplay, replay
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


_STACKED_CELL = re.compile(
    r"^(?P<module>.+)_(?P<layer>[1-9]\d*)\.(?P<kind>(?:weight|bias)_(?:ih|hh))_l0(?P<reverse>_reverse)?$"
)


def own_names(converted: str, source: str) -> list[str]:
    """State-dict names a converted parameter may have in PyTorch, best first: its own
    (``bn.gamma`` -> ``bn.weight``), a stacked ``nn.LSTM``'s layer (``lstm_1.weight_ih_l0`` ->
    ``lstm.weight_ih_l1``), ``nn.MultiheadAttention``'s packed input projection
    (``self_attn.weight`` -> ``self_attn.in_proj_weight``)."""
    names = [torch_name(converted), recurrent_name(converted, source)]
    stacked = _STACKED_CELL.match(converted)
    if stacked:
        names.append(
            f"{stacked.group('module')}.{stacked.group('kind')}_l{stacked.group('layer')}"
            f"{stacked.group('reverse') or ''}"
        )
    path, _, leaf = converted.rpartition(".")
    if path.endswith("attn") and leaf in ("weight", "bias"):
        names.append(f"{path}.in_proj_{leaf}")
    if leaf in ("weight", "bias") and packed_projection(f"{path}_{leaf}"):
        names.append(f"{path}_{leaf}")  # self_attn.in_proj.weight -> self_attn.in_proj_weight
    return [name for name in names if name]


def row_steps(row: dict) -> list[WeightStep]:
    """A row's typed steps: its structured ``steps``, or an older map's ``transform`` prose."""
    if "steps" in row:
        return steps_from_json(row["steps"])
    return parse_steps(row.get("transform", "") if isinstance(row.get("transform"), str) else "")


DEFAULT_BATCHNORM_EPS = 1e-5  # PyTorch's; a TorchScript export does not record a folded one


def _conv_prefixes(converted: str, source: str, exported_as: str) -> list[str]:
    names = [source.rpartition(".")[0] if exported_as or not source.startswith("onnx::") else ""]
    names.append(converted.rpartition(".")[0])
    return [name for name in dict.fromkeys(names) if name]


def batchnorm_candidates(conv: str) -> list[str]:
    """Where the BatchNorm after convolution ``conv`` sits in the state dict, by the naming
    rules of torchvision and most model zoos: ``conv1`` -> ``bn1``, ``conv`` -> ``bn``,
    ``downsample.0`` -> ``downsample.1`` (the next entry of an ``nn.Sequential``)."""
    parent, _, leaf = conv.rpartition(".")
    join = (lambda name: f"{parent}.{name}") if parent else (lambda name: name)
    if leaf.isdigit():
        return [join(str(int(leaf) + 1))]
    found = []
    for conv_word in ("conv", "Conv"):
        if conv_word in leaf:
            for norm_word in ("bn", "norm", "batchnorm", "bn_"):
                found.append(join(leaf.replace(conv_word, norm_word, 1)))
    return list(dict.fromkeys(found))


def _folded(row: dict, fold: BatchNormFold, tensors, used: set) -> np.ndarray:
    """The folded convolution weight or bias of ``row`` from the state dict's convolution and
    BatchNorm tensors (see ``batchnorm_candidates`` for how the BatchNorm is found)."""
    source, converted = row["source_weight"], row["converted_weight"]
    fold = replace(fold, part=fold.part or converted["name"].rpartition(".")[2])
    convs = [
        c
        for c in _conv_prefixes(converted["name"], source["name"], source.get("exported_as", ""))
        if f"{c}.weight" in tensors
    ]
    if not convs:
        raise Missing(
            f"its convolution's weight is not in the file (looked for '{converted['name'].rpartition('.')[0]}.weight')"
        )
    conv = convs[0]
    looked = [fold.batchnorm] if fold.batchnorm else batchnorm_candidates(conv)
    norms = [bn for bn in looked if f"{bn}.running_var" in tensors]
    if not norms:
        tried = ", ".join(f"'{bn}.running_var'" for bn in looked) or "no name rule fits"
        raise ValueError(
            f"the exporter folded a BatchNorm into convolution '{conv}' and the file has no "
            f"BatchNorm for it (looked for {tried})"
        )
    bn = norms[0]
    parts = {k: f"{bn}.{k}" for k in ("weight", "bias", "running_mean", "running_var")}
    missing = [name for name in parts.values() if name not in tensors]
    if missing:
        raise ValueError(f"no tensor '{missing[0]}' in the file for its folded BatchNorm")
    weight = np.asarray(tensors[f"{conv}.weight"], np.float64)
    bias = tensors.get(f"{conv}.bias")
    bias = np.zeros(weight.shape[0]) if bias is None else np.asarray(bias, np.float64)
    values = {k: np.asarray(tensors[name], np.float64).reshape(-1) for k, name in parts.items()}
    if any(v.shape != (weight.shape[0],) for v in values.values()) or bias.shape != (
        weight.shape[0],
    ):
        raise ValueError(
            f"BatchNorm '{bn}' does not have the {weight.shape[0]} channels of '{conv}'"
        )
    used.update({f"{conv}.weight", f"{conv}.bias", *parts.values()})
    eps = DEFAULT_BATCHNORM_EPS if fold.eps is None else fold.eps
    return fold.fold(
        weight,
        bias,
        values["weight"],
        values["bias"],
        values["running_mean"],
        values["running_var"],
        eps,
    )


def new_weight(
    row: dict, tensors: Mapping[str, np.ndarray], from_onnx: bool = False, used: set | None = None
) -> np.ndarray:
    """The converted weight of ``row`` computed from the new tensors; raises ValueError with
    the reason when it cannot be. ``used`` gains the names of the tensors read.

    A state dict is looked up by the parameter's own names first (``own_names``: MindSpore's
    layers hold PyTorch's layouts; exporters may merge equal tensors, so the recorded source
    can be another parameter's name), then by the recorded source name with the steps
    replayed; a BatchNorm the exporter folded into a convolution is folded again from the
    state dict's tensors. An ONNX export (``from_onnx``) is looked up by the recorded names,
    and holds the values the exporter computed (folded BatchNorm) itself."""
    used = set() if used is None else used
    source, converted = row["source_weight"], row["converted_weight"]
    shape = tuple(int(d) for d in converted["shape"])
    dtype = _numpy_dtype(converted["data_type"])
    name, exported_as = source["name"], source.get("exported_as", "")
    steps = row_steps(row)
    folds = [step for step in steps if isinstance(step, BatchNormFold)]
    steps = [step for step in steps if not isinstance(step, BatchNormFold)]
    if folds and not from_onnx:
        return _replayed(steps, _folded(row, folds[0], tensors, used), shape, dtype)
    if not from_onnx:
        # the parameter's own names, then the name recovered for a tensor the exporter renamed
        for own in [*own_names(converted["name"], name), name if exported_as else ""]:
            if own in tensors and _same_layout(tensors[own], shape):
                array = _checked(tensors[own], tensors[own].shape, source.get("data_type", ""), own)
                used.add(own)
                return np.ascontiguousarray(array.reshape(shape).astype(dtype))
    found = exported_as if exported_as in tensors else name if name in tensors else ""
    if not found:
        tried = [] if from_onnx else own_names(converted["name"], name)
        return _missing(name, exported_as, tried)
    used.add(found)
    array = _checked(tensors[found], tuple(source["shape"]), source.get("data_type", ""), found)
    return _replayed(steps, array, shape, dtype)


def _replayed(steps, array: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    try:
        result = replay(steps, array, shape, dtype)
    except CannotReplay as step:
        raise ValueError(f"its transform step '{step}' cannot be replayed") from None
    except (ValueError, IndexError, TypeError) as exc:  # an index or axis the tensor lacks
        raise ValueError(f"its transform does not fit the new tensor ({exc})") from None
    if tuple(result.shape) != shape:
        raise ValueError(f"it comes out {list(result.shape)}, the network holds {list(shape)}")
    return result


class Missing(ValueError):
    """The file has no tensor for a weight."""


def _missing(name: str, exported_as: str, tried: list[str]):
    also = f" (exported as '{exported_as}')" if exported_as else ""
    looked = [f"'{own}'" for own in dict.fromkeys(tried) if own not in (name, exported_as)]
    names = f"{', '.join(looked)} (its layer's names) nor " if looked else ""
    why = (
        ": the exporter made that name up and the layer's scope gave none"
        if is_generated_name(name)
        else ""
    )
    raise Missing(f"no tensor {names}'{name}'{also} in the file{why}")


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


def _unrecorded_eps_folds(rows: list[dict]) -> int:
    """How many rows replay a BatchNorm fold whose epsilon the export did not record."""
    return sum(
        any(isinstance(step, BatchNormFold) and step.eps is None for step in row_steps(row))
        for row in rows
    )


def _untied(unused: list[str], used: set, tensors: Mapping[str, np.ndarray]) -> list[str]:
    """``unused`` without the state dict's second names of tied parameters (``lm_head.weight``
    beside ``wte.weight``): tensors equal to one that was read."""
    by_shape: dict[tuple, list[np.ndarray]] = {}
    for name in used:
        if name in tensors:
            by_shape.setdefault((tensors[name].shape, tensors[name].dtype), []).append(
                tensors[name]
            )
    return [
        name
        for name in unused
        if not any(
            np.array_equal(tensors[name], other)
            for other in by_shape.get((tensors[name].shape, tensors[name].dtype), [])
        )
    ]


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
            parameters.append((name, new_weight(row, tensors, from_onnx, used)))
        except Missing as why:
            value = frozen.value(name)
            if value is None:
                problems.append(f"{one_line(name, 80)}: {one_line(str(why), 160)}")
            else:
                parameters.append((name, value))
                kept.append(name)
        except ValueError as why:
            problems.append(f"{one_line(name, 80)}: {one_line(str(why), 160)}")
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
    unused = [] if from_onnx else _untied(sorted(set(tensors) - used), used, tensors)
    say(f"Re-converted {len(parameters) - len(kept)} weight(s) into {target}.")
    if kept:
        say(
            f"{len(kept)} constant(s) of the network that no source tensor holds (masks, "
            "positions: not trainable) were kept from the existing checkpoint."
        )
    if unused:
        shown = ", ".join(one_line(name, 120) for name in unused[:3])
        say(f"{len(unused)} tensor(s) of the file are not in the network (e.g. {shown}).")
    folds = 0 if from_onnx else _unrecorded_eps_folds(rows)
    if folds:
        say(
            f"{folds} weight(s) were folded again with BatchNorm epsilon "
            f"{DEFAULT_BATCHNORM_EPS:g}, PyTorch's default: the export does not record it."
        )
    return ReweightResult(target, len(parameters), unused, script if script.is_file() else None)


__all__ = ["ReweightResult", "new_weight", "read_weight_map", "reconvert_weights"]
