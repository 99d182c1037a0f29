"""Stage 1: read a model file into an in-memory ``onnx.ModelProto``.

The input file is only ever opened for reading and nothing is written beside it.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from onnx import external_data_helper, helper, numpy_helper

from ..errors import make_error
from ..graph.weight_store import FileRange, WeightStore, is_held, mark_held, worth_holding
from .skeleton import split_weights
from .tf_sniff import SAVED_MODEL_FILE, TF_SAVED_SUFFIXES, is_saved_model_folder

MIN_OPSET = 7
SUPPORTED_SUFFIXES = (".onnx", ".pb", *TF_SAVED_SUFFIXES)


def check_model_path(path: str | Path, suffixes: Sequence[str] = ()) -> Path:
    """Check the model path exists, is a non-empty file with a known suffix (``suffixes``,
    by default a model's) or, for a model, a TensorFlow SavedModel folder."""
    accepts_folder = not suffixes
    suffixes = tuple(suffixes) or tuple(SUPPORTED_SUFFIXES)
    if not isinstance(path, (str, Path)) or "\x00" in str(path):
        what = "holds a NUL byte" if isinstance(path, (str, Path)) else "is not a path"
        raise make_error("BAD_ARGUMENT", f"The file name {str(path)[:80]!r} {what}.")
    path = Path(path)
    try:
        path.stat()
    except FileNotFoundError:
        raise make_error("FILE_NOT_FOUND", f"No such file: '{path}'.") from None
    except NotADirectoryError:
        raise make_error(
            "FILE_NOT_FOUND", f"No such file: '{path}' (a parent is not a folder)."
        ) from None
    except OSError as exc:  # EACCES on a parent folder, ELOOP, ENAMETOOLONG...
        raise make_error("FILE_UNREADABLE", f"Cannot reach '{path}': {exc.strerror}.") from None
    if path.is_dir():
        if accepts_folder and is_saved_model_folder(path):
            if not os.access(path / SAVED_MODEL_FILE, os.R_OK):
                raise make_error("FILE_UNREADABLE", f"'{path}' cannot be read (permission denied).")
            return path
        hint = (
            f" (a TensorFlow SavedModel folder holds {SAVED_MODEL_FILE})" if accepts_folder else ""
        )
        raise make_error("FILE_IS_DIRECTORY", f"'{path}' is a directory{hint}.")
    if not path.is_file():
        raise make_error(
            "FILE_UNREADABLE", f"'{path}' is not a regular file (a device, pipe or socket)."
        )
    if path.stat().st_size == 0:
        raise make_error("FILE_EMPTY", f"'{path}' is empty (0 bytes).")
    if path.suffix.lower() not in suffixes:
        suffix = f"suffix '{path.suffix}'" if path.suffix else "no suffix"
        expected = " or ".join(", ".join(suffixes).rsplit(", ", 1))
        raise make_error("UNKNOWN_SUFFIX", f"'{path.name}' has {suffix}; expected {expected}.")
    if not os.access(path, os.R_OK):
        raise make_error("FILE_UNREADABLE", f"'{path}' cannot be read (permission denied).")
    return path


def load_onnx(path: Path, store: WeightStore | None = None) -> onnx.ModelProto:
    """Parse an ONNX file, including tensors kept in external data files.

    With a ``store``, large initializers are not read: the model holds their headers and the
    store where their bytes are (in the file itself or its external-data files).
    """
    if store is not None:
        split = split_weights(path)
        if split is not None:
            if not split.model.opset_import:
                raise make_error(
                    "FILE_CORRUPT", f"'{path.name}' parses but holds no ONNX graph or opset."
                )
            for tensor in split.model.graph.initializer:
                if tensor.name in split.ranges and is_held(tensor):
                    store.add_range(tensor, split.ranges[tensor.name])
            _load_external_data(split.model, path.parent, store)
            densify_sparse_initializers(split.model)
            return split.model
    data = _read(path)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:
        raise make_error(
            "FILE_CORRUPT", f"'{path.name}' is not a valid ONNX protobuf ({exc})."
        ) from None
    del data
    if not model.HasField("graph") or not model.opset_import:
        raise make_error("FILE_CORRUPT", f"'{path.name}' parses but holds no ONNX graph or opset.")
    _load_external_data(model, path.parent, store)
    densify_sparse_initializers(model)
    return model


def densify_sparse_initializers(model: onnx.ModelProto) -> None:
    """Turn the main graph's sparse initializers into ordinary (dense) ones: MindSpore
    parameters are dense, and every later stage then sees one kind of weight."""
    graph = model.graph
    for sparse in graph.sparse_initializer:
        name = sparse.values.name
        dims = [int(d) for d in sparse.dims]
        if any(d < 0 for d in dims) or math.prod(dims) > MAX_ELEMENTS:
            raise make_error(
                "ABSURD_DIMENSION", f"Sparse initializer '{name}' declares dims {dims}."
            )
        try:
            values = numpy_helper.to_array(sparse.values).reshape(-1)
            indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
            if indices.size and indices.min() < 0:
                raise ValueError("negative index")
            dense = np.zeros(dims, values.dtype)
            if indices.ndim == 1:
                dense.reshape(-1)[indices] = values
            else:
                dense[tuple(indices.T)] = values
        except (ValueError, IndexError, TypeError) as exc:
            raise _invalid(f"Sparse initializer '{name}' is malformed ({exc}).") from None
        if any(init.name == name for init in graph.initializer):
            raise _invalid(f"Initializer '{name}' is stored twice (dense and sparse).")
        graph.initializer.append(numpy_helper.from_array(dense, name))
    graph.ClearField("sparse_initializer")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise make_error("FILE_UNREADABLE", f"Cannot read '{path}': {exc.strerror}.") from None
    except MemoryError:
        raise make_error("FILE_UNREADABLE", f"'{path}' is too large to read into memory.") from None


def _load_external_data(
    model: onnx.ModelProto, base_dir: Path, store: WeightStore | None = None
) -> None:
    """Read every externally stored tensor into the in-memory model, refusing paths outside;
    with a ``store``, large main-graph initializers are only located, not read."""
    base = base_dir.resolve()
    if store is not None:
        for tensor in model.graph.initializer:
            if external_data_helper.uses_external_data(tensor) and not is_held(tensor):
                target, info = _external_target(tensor, base)
                place = _external_range(tensor, target, info)
                if place is not None:
                    store.add_range(tensor, place)
                    mark_held(tensor)
    for tensor in external_data_helper._get_all_tensors(model):  # onnx's own tensor walker
        if not external_data_helper.uses_external_data(tensor) or is_held(tensor):
            continue
        target, info = _external_target(tensor, base)
        if store is not None:
            store.note_file(target)  # an input: no result may be written over it
        location = info.get("location", "")
        try:
            external_data_helper.load_external_data_for_tensor(tensor, str(base))
        except Exception as exc:
            raise make_error(
                "EXTERNAL_DATA_MISSING",
                f"Tensor '{tensor.name}' cannot be read from '{location}' ({exc}).",
            ) from None
        offset = int(info.get("offset", 0) or 0)
        length = info.get("length")
        if length is not None and len(tensor.raw_data) != int(length):
            raise make_error(
                "EXTERNAL_DATA_MISSING",
                f"Tensor '{tensor.name}' expects {length} bytes at offset {offset} of '{location}', "
                f"which is shorter.",
            )
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT
        problem = tensor_problem(tensor)
        if problem:
            raise make_error(
                "EXTERNAL_DATA_MISSING", f"Tensor '{tensor.name}' read from '{location}': {problem}"
            )


def _external_target(tensor: onnx.TensorProto, base: Path) -> tuple[Path, dict[str, str]]:
    """The file an external tensor's bytes are in (inside the model's folder) and its entries."""
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location", "")
    target = (base / location).resolve()
    if not location or base not in target.parents and target != base:
        raise make_error(
            "EXTERNAL_DATA_MISSING",
            f"Tensor '{tensor.name}' points outside the model folder ('{location}').",
        )
    if not target.is_file():
        raise make_error(
            "EXTERNAL_DATA_MISSING",
            f"Tensor '{tensor.name}' needs '{location}', which is missing.",
        )
    return target, info


def _external_range(tensor: onnx.TensorProto, target: Path, info: dict) -> FileRange | None:
    """Where an external tensor's bytes are, when it is worth holding by reference and the file
    holds all of them (else None: it is read, and checked, the ordinary way)."""
    try:
        offset = int(info.get("offset", 0) or 0)
        size = target.stat().st_size
        length = int(info["length"]) if info.get("length") else size - offset
    except (ValueError, OSError):
        return None
    if offset < 0 or length < 0 or offset + length > size or not worth_holding(tensor, length):
        return None
    return FileRange(target, offset, length)


def default_opset(model: onnx.ModelProto) -> int:
    """The opset version of the default ONNX domain."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise make_error("OPSET_UNSUPPORTED", "The model imports no default-domain ONNX opset.")


def check_opset(model: onnx.ModelProto) -> int:
    """Check the default-domain opset is one we convert; returns it."""
    version = default_opset(model)
    newest = onnx.defs.onnx_opset_version()
    if version < 1:
        raise make_error("OPSET_UNSUPPORTED", f"The model uses opset {version}.")
    if version > newest:
        raise make_error(
            "OPSET_UNSUPPORTED",
            f"The model uses opset {version}; the installed onnx {onnx.__version__} knows up to {newest}.",
        )
    return version


def load_model(
    path: str | Path, input_nodes=None, output_nodes=None, shapes=None, store=None
) -> onnx.ModelProto:
    """Check and load a model file into an ``onnx.ModelProto`` (TensorFlow's .pb, SavedModel
    folders, .keras/.h5 and .tflite files go via tf2onnx).

    ``input_nodes``, ``output_nodes`` and ``shapes`` are only used (and required) for a .pb.
    With a :class:`WeightStore`, an ONNX file's large weights stay in their files (see
    :func:`load_onnx`).
    """
    path = check_model_path(path)
    if path.is_dir() or path.suffix.lower() in TF_SAVED_SUFFIXES:
        from ..frontends.tf_saved import load_tf_saved

        model = load_tf_saved(path)
        check_opset(model)
        validate_model(model)
        return model
    if path.suffix.lower() == ".pb":
        check_graphdef(path)
        if (
            importlib.util.find_spec("tensorflow") is None
            or importlib.util.find_spec("tf2onnx") is None
        ):
            raise make_error("TF_STACK_MISSING", f"'{path.name}' is a TensorFlow GraphDef.")
        from ..frontends.tf_graphdef import load_graphdef

        model = load_graphdef(path, input_nodes, output_nodes, shapes)
        check_opset(model)
        validate_model(model)
        return model
    model = load_onnx(path, store)
    add_default_opset_if_unused(model)
    check_opset(model)
    validate_model(model)
    return upgrade_old_opset(model)


def upgrade_old_opset(model: onnx.ModelProto) -> onnx.ModelProto:
    """A model older than opset 7 (checked valid first), rewritten to opset 7 by onnx's version
    converter; OPSET_UNSUPPORTED when the converter cannot."""
    version = default_opset(model)
    if version >= MIN_OPSET:
        return model
    from onnx import version_converter

    try:
        upgraded = version_converter.convert_version(model, MIN_OPSET)
    except Exception as exc:  # the converter raises plain RuntimeErrors
        raise make_error(
            "OPSET_UNSUPPORTED",
            f"The model uses opset {version}; onnx's version converter could not bring it to "
            f"opset {MIN_OPSET} ({type(exc).__name__}).",
        ) from None
    return upgraded


def add_default_opset_if_unused(model: onnx.ModelProto) -> None:
    """A model whose nodes all come from other domains (an ``ai.onnx.preview.training``
    optimizer step) may import no default-domain opset; give the loaded copy the newest one,
    which the passes need for their own helper nodes."""
    if any(entry.domain in ("", "ai.onnx") for entry in model.opset_import):
        return
    if _uses_default_domain(model.graph):
        return
    model.opset_import.append(helper.make_opsetid("", onnx.defs.onnx_opset_version()))


def _uses_default_domain(graph: onnx.GraphProto) -> bool:
    for node in graph.node:
        if node.domain in ("", "ai.onnx"):
            return True
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
            if any(_uses_default_domain(sub) for sub in subgraphs):
                return True
    return False


# --- TensorFlow GraphDef sniffing (no TensorFlow needed) -------------------------------------------


def _graphdef_class():
    """A minimal GraphDef schema (nodes with name, op, inputs), enough to tell a GraphDef apart."""
    fdp = descriptor_pb2.FileDescriptorProto(
        name="mindconverter_graphdef.proto", package="mcsniff", syntax="proto3"
    )
    F = descriptor_pb2.FieldDescriptorProto
    node = fdp.message_type.add(name="NodeDef")
    node.field.add(name="name", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    node.field.add(name="op", number=2, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    node.field.add(name="input", number=3, label=F.LABEL_REPEATED, type=F.TYPE_STRING)
    node.field.add(name="device", number=4, label=F.LABEL_OPTIONAL, type=F.TYPE_STRING)
    graph = fdp.message_type.add(name="GraphDef")
    graph.field.add(
        name="node",
        number=1,
        label=F.LABEL_REPEATED,
        type=F.TYPE_MESSAGE,
        type_name=".mcsniff.NodeDef",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("mcsniff.GraphDef"))


def check_graphdef(path: Path) -> None:
    """Raise NOT_A_GRAPHDEF unless ``path`` holds a (frozen) TensorFlow GraphDef."""
    data = _read(path)
    graph = _graphdef_class()()
    try:
        graph.ParseFromString(data)
        ok = len(graph.node) > 0 and all(node.op and node.name for node in graph.node)
    except Exception:
        ok = False
    if ok:
        return
    hint = ""
    if _parses_as_onnx(data):
        hint = " It is an ONNX model: rename it to .onnx."
    if not hint and path.name == SAVED_MODEL_FILE:
        hint = f" It looks like a SavedModel: pass its folder ('{path.parent}') instead."
    raise make_error(
        "NOT_A_GRAPHDEF", f"'{path.name}' does not parse as a TensorFlow GraphDef.{hint}"
    )


def _parses_as_onnx(data: bytes) -> bool:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:
        return False
    return model.HasField("graph") and bool(model.opset_import)


# --- structural validation ---------------------------------------------------------------------------

MAX_ELEMENTS = 1 << 40
MAX_SUBGRAPH_DEPTH = 32
_VALID_TYPES = {value for name, value in onnx.TensorProto.DataType.items() if name != "UNDEFINED"}
_FOUR_BIT = {name for name in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(onnx.TensorProto, name)}
_TWO_BIT = {name for name in ("INT2", "UINT2") if hasattr(onnx.TensorProto, name)}


def _packed_count(type_name: str, count: int) -> int:
    """Stored items of ``count`` values: 4-bit types pack two a byte, 2-bit types four."""
    if type_name in _FOUR_BIT:
        return (count + 1) // 2
    if type_name in _TWO_BIT:
        return (count + 3) // 4
    return count


def tensor_problem(tensor: onnx.TensorProto) -> str:
    """What is wrong with a stored tensor's type, dims or data size ('' when it is sound)."""
    if tensor.data_type not in _VALID_TYPES:
        return f"unknown data type {tensor.data_type}."
    if any(d < 0 for d in tensor.dims):
        return f"negative dimension in {list(tensor.dims)}."
    count = 1
    for d in tensor.dims:
        count *= int(d)
    if count > MAX_ELEMENTS:
        return f"absurd dims {list(tensor.dims)}."
    if tensor.HasField("segment"):
        return "segmented tensors are not supported."
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        return ""  # checked when the external data is read
    type_name = onnx.TensorProto.DataType.Name(tensor.data_type)
    if tensor.data_type == onnx.TensorProto.STRING:
        have, want = len(tensor.string_data), count
    elif tensor.HasField("raw_data") and tensor.raw_data:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
        have = len(tensor.raw_data)
        packed = _packed_count(type_name, count)
        want = packed if packed != count else count * itemsize
    else:
        field_name = helper.tensor_dtype_to_field(tensor.data_type)
        have = len(getattr(tensor, field_name))
        want = _packed_count(type_name, count)
        if type_name.startswith("COMPLEX"):
            want = 2 * count
    if have != want:
        return f"holds {have} {'bytes' if tensor.raw_data else 'values'} where dims {list(tensor.dims)} need {want}."
    return ""


def _invalid(message: str):
    return make_error("INVALID_GRAPH", message)


def _check_tensor(tensor: onnx.TensorProto, what: str) -> None:
    problem = tensor_problem(tensor)
    if problem.startswith("absurd"):
        raise make_error("ABSURD_DIMENSION", f"{what} declares {problem}")
    if problem:
        raise _invalid(f"{what}: {problem}")


def _check_value_info(info: onnx.ValueInfoProto, what: str) -> None:
    if not info.name:
        raise _invalid(f"A graph {what} has no name.")
    if info.type.HasField("tensor_type"):
        elem = info.type.tensor_type.elem_type
        if elem and elem not in _VALID_TYPES:
            raise _invalid(f"Graph {what} '{info.name}' has unknown element type {elem}.")


def _check_against_schema(
    node: onnx.NodeProto, label: str, opsets: dict[str, int], where: str
) -> None:
    """Input/output counts and required attributes of standard operators, as their schema says."""
    domain = node.domain if node.domain != "ai.onnx" else ""
    if domain not in ("", "ai.onnx.ml") or domain not in opsets:
        return
    try:
        schema = onnx.defs.get_schema(node.op_type, opsets[domain], domain)
    except Exception:
        return
    n_in = len(node.input)
    while n_in and not node.input[n_in - 1]:
        n_in -= 1
    n_out = len(node.output)
    what = f"Node {label!r} ({node.op_type}-{schema.since_version})"
    if not schema.min_input <= n_in <= schema.max_input:
        raise _invalid(
            f"{what} has {n_in} input(s); the operator takes {schema.min_input} to "
            f"{schema.max_input}{where}."
        )
    if not schema.min_output <= n_out <= schema.max_output or not any(node.output):
        raise _invalid(
            f"{what} has {n_out} output(s); the operator gives {schema.min_output} to "
            f"{schema.max_output}{where}."
        )
    given = {attr.name for attr in node.attribute}
    for name, attr in schema.attributes.items():
        if attr.required and name not in given:
            raise _invalid(f"{what} lacks its required attribute '{name}'{where}.")
    for attr in node.attribute:  # onnxoptimizer crashes the process on a mistyped attribute
        declared = schema.attributes.get(attr.name)
        if declared is not None and attr.type and attr.type != int(declared.type.value):
            raise _invalid(
                f"{what} has attribute '{attr.name}' of type "
                f"{onnx.AttributeProto.AttributeType.Name(attr.type)}; the operator takes "
                f"{declared.type.name}{where}."
            )


def _check_graph(
    graph: onnx.GraphProto,
    outer: set[str],
    depth: int,
    top: bool,
    domains: frozenset = frozenset({""}),
    opsets: dict | None = None,
) -> None:
    opsets = opsets or {}
    if depth > MAX_SUBGRAPH_DEPTH:
        raise _invalid(f"Subgraphs are nested more than {MAX_SUBGRAPH_DEPTH} levels deep.")
    where = "" if top else f" (in subgraph '{graph.name}')"
    defined = set(outer)
    local: set[str] = set()
    for inp in graph.input:
        _check_value_info(inp, "input")
        if inp.name in local:
            raise _invalid(f"Graph input '{inp.name}' is declared twice{where}.")
        local.add(inp.name)
    seen_init: set[str] = set()
    for init in graph.initializer:
        if not init.name:
            raise _invalid(f"An initializer has no name{where}.")
        if init.name in seen_init:
            raise _invalid(f"Initializer '{init.name}' is stored twice{where}.")
        seen_init.add(init.name)
        _check_tensor(init, f"Initializer '{init.name}'{where}")
    local |= seen_init
    defined |= local
    produced: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        label = node.name or f"#{index}"
        if not node.op_type:
            raise _invalid(f"Node {label!r} has no operator type{where}.")
        if (node.domain if node.domain != "ai.onnx" else "") not in domains:
            raise _invalid(
                f"Node {label!r} ({node.op_type}) uses domain '{node.domain}', which the model does "
                f"not import (opset_import){where}."
            )
        for out in node.output:
            if not out:
                continue
            if out in produced or out in local:
                raise _invalid(f"Value '{out}' is written twice (by node {label!r}){where}.")
            if out in outer:  # ONNX values are single-assignment across nested graphs too
                raise _invalid(
                    f"Value '{out}' (node {label!r}){where} shadows a value of the enclosing "
                    "graph; ONNX needs every value name unique across subgraphs."
                )
            produced[out] = index
    available = defined | set(produced)
    for index, node in enumerate(graph.node):
        label = node.name or f"#{index}"
        _check_against_schema(node, label, opsets, where)
        for name in node.input:
            if name and name not in available:
                raise _invalid(
                    f"Node {label!r} ({node.op_type}) reads '{name}', which nothing defines{where}."
                )
        names = [attr.name for attr in node.attribute]
        if len(set(names)) < len(names):
            twice = sorted({name for name in names if names.count(name) > 1})
            raise _invalid(
                f"Node {label!r} ({node.op_type}) repeats attribute {twice[0]!r}{where}."
            )
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                _check_tensor(attr.t, f"Attribute '{attr.name}' of node {label!r}{where}")
            elif attr.type == onnx.AttributeProto.TENSORS:
                for tensor in attr.tensors:
                    _check_tensor(tensor, f"Attribute '{attr.name}' of node {label!r}{where}")
            elif attr.type == onnx.AttributeProto.GRAPH:
                _check_graph(attr.g, available, depth + 1, False, domains, opsets)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    _check_graph(sub, available, depth + 1, False, domains, opsets)
    for out in graph.output:
        _check_value_info(out, "output")
        if out.name not in available:
            raise _invalid(f"Graph output '{out.name}' is produced by no node{where}.")
    if top:
        for inp in graph.input:
            if inp.name not in seen_init and inp.type.WhichOneof("value") not in (
                None,
                "tensor_type",
            ):
                kind = inp.type.WhichOneof("value").replace("_type", "")
                raise _invalid(
                    f"Graph input '{inp.name}' is a {kind}, not a tensor; only tensor inputs convert."
                )
        if not graph.output:
            raise _invalid("The graph has no outputs.")
        _check_acyclic(graph, produced)


def _check_acyclic(graph: onnx.GraphProto, produced: dict[str, int]) -> None:
    """Kahn's algorithm over node indices; a leftover node lies on a cycle."""
    nodes = list(graph.node)
    pending = [0] * len(nodes)
    readers: dict[int, list[int]] = {}
    for index, node in enumerate(nodes):
        for name in set(node.input):
            if name in produced:
                pending[index] += 1
                readers.setdefault(produced[name], []).append(index)
    ready = [i for i, n in enumerate(pending) if n == 0]
    done = 0
    while ready:
        current = ready.pop()
        done += 1
        for reader in readers.get(current, []):
            pending[reader] -= 1
            if pending[reader] == 0:
                ready.append(reader)
    if done != len(nodes):
        stuck = next(i for i, n in enumerate(pending) if n > 0)
        node = nodes[stuck]
        raise _invalid(f"The graph has a cycle through node {(node.name or node.op_type)!r}.")


def _check_text_fields(message, path: str = "model") -> None:
    """Every string field must be valid UTF-8 (protobuf hands back ``bytes`` where it is not)."""
    string, message_type = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE
    for field, value in message.ListFields():
        if field.type == string:
            values = value if _is_repeated(field) else [value]
            if any(not isinstance(v, str) for v in values):
                raise make_error(
                    "FILE_CORRUPT",
                    f"Field '{path}.{field.name}' holds text that is not valid UTF-8.",
                )
        elif field.type == message_type:
            for item in value if _is_repeated(field) else [value]:
                _check_text_fields(item, f"{path}.{field.name}")


def _is_repeated(field) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf >= 5.x
    if repeated is not None:
        return bool(repeated)
    return field.label == FieldDescriptor.LABEL_REPEATED


def validate_model(model: onnx.ModelProto) -> None:
    """Reject structurally broken graphs before any C++ pass (shape inference, optimizer) sees them.

    Checks: names defined before use, each value written once, no cycles, outputs produced, known
    element types, and initializer/attribute tensors whose data matches their dims.
    """
    _check_text_fields(model)
    if model.ir_version > onnx.IR_VERSION:
        raise make_error(
            "OPSET_UNSUPPORTED",
            f"The model has IR version {model.ir_version}; the installed onnx "
            f"{onnx.__version__} reads up to {onnx.IR_VERSION}.",
        )
    domains = {entry.domain if entry.domain != "ai.onnx" else "" for entry in model.opset_import}
    domains |= {function.domain for function in model.functions}
    opsets = {
        entry.domain if entry.domain != "ai.onnx" else "": entry.version
        for entry in model.opset_import
    }
    _check_graph(model.graph, set(), 0, True, frozenset(domains), opsets)
