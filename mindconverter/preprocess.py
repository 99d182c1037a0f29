"""Stage 2: decide the inputs and outputs, fix shapes, infer every value, fold constants.

Each function takes a ``ModelProto`` and returns a new or updated one; none touches the file
on disk.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import sys
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxoptimizer
from onnx import helper, numpy_helper, shape_inference
from onnx.reference import ReferenceEvaluator

from .errors import make_error
from .unroll import unroll_loops

# A dimension beyond this is not a real size (it would not fit in memory) but an export bug.
MAX_DIMENSION = 1 << 40
# A folded constant may grow to this many bytes beyond the size of its inputs before we keep
# computing it at run time instead (e.g. a huge ConstantOfShape).
FOLD_GROWTH_LIMIT = 64 << 20

NOT_FOLDABLE = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
    "If",
    "Loop",
    "Scan",
    "SequenceConstruct",
    "SequenceEmpty",
    "SequenceInsert",
    "SequenceAt",
    "SplitToSequence",
    "ConcatFromSequence",
    "Optional",
    "OptionalGetElement",
    "OptionalHasElement",
}

# Graph clean-ups from onnxoptimizer that never change what a layer is (no fusing of Conv+BN or
# MatMul+Add: those are kept as the user wrote them).
# Dead nodes are removed by remove_dead_nodes: onnxoptimizer's eliminate_deadend ignores reads
# from If/Loop subgraphs and so deletes values a branch still needs.
OPTIMIZER_PASSES = [
    "eliminate_identity",
    "eliminate_nop_cast",
    "eliminate_nop_concat",
    "eliminate_nop_expand",
    "eliminate_nop_flatten",
    "eliminate_nop_pad",
    "eliminate_nop_split",
    "eliminate_nop_transpose",
    "fuse_consecutive_squeezes",
    "fuse_consecutive_transposes",
    "fuse_consecutive_unsqueezes",
]  # unused initializers are dropped by remove_unused_initializers: onnxoptimizer's pass misses subgraph reads


@dataclass
class TensorSpec:
    """A graph input or output as the model declares it."""

    name: str
    elem_type: int
    shape: list  # ints for static dims, strings or None for dynamic ones; None if rank unknown

    @property
    def dtype_name(self) -> str:
        if not self.elem_type:
            return "unknown"
        return np.dtype(helper.tensor_dtype_to_np_dtype(self.elem_type)).name

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    def describe(self) -> str:
        dims = (
            "?"
            if self.shape is None
            else ", ".join(str(d if d is not None else "?") for d in self.shape)
        )
        return f"{self.name}: {self.dtype_name}[{dims}]"


@dataclass
class FoldRecord:
    """How a folded constant was derived from source initializers (for the weight map)."""

    sources: list[str]
    steps: list[str] = field(default_factory=list)


def _spec_from_value_info(info: onnx.ValueInfoProto) -> TensorSpec:
    tensor_type = info.type.tensor_type
    shape = None
    if tensor_type.HasField("shape"):
        shape = []
        for dim in tensor_type.shape.dim:
            if (
                dim.HasField("dim_value") and dim.dim_value != -1
            ):  # Paddle2ONNX writes -1 for dynamic
                shape.append(int(dim.dim_value))
            elif dim.HasField("dim_param"):
                shape.append(dim.dim_param)
            else:
                shape.append(None)
    return TensorSpec(info.name, tensor_type.elem_type, shape)


def remove_initializer_inputs(model: onnx.ModelProto) -> None:
    """Drop graph inputs that are really weights (old exporters list initializers as inputs)."""
    weights = {init.name for init in model.graph.initializer}
    kept = [inp for inp in model.graph.input if inp.name not in weights]
    if len(kept) != len(model.graph.input):
        del model.graph.input[:]
        model.graph.input.extend(kept)


def detect_inputs(model: onnx.ModelProto) -> list[TensorSpec]:
    """The model's real inputs (not weights), in the model's order."""
    weights = {init.name for init in model.graph.initializer}
    return [_spec_from_value_info(inp) for inp in model.graph.input if inp.name not in weights]


def detect_outputs(model: onnx.ModelProto) -> list[TensorSpec]:
    """The model's outputs, in the model's order."""
    return [_spec_from_value_info(out) for out in model.graph.output]


def parse_shape(text: str) -> tuple[int, ...]:
    """Parse ``"1,3,224,224"`` into a tuple of positive ints (raises ArgumentError)."""
    stripped = text.strip().strip("[]()")
    if not stripped:
        raise make_error("BAD_SHAPE", f"Empty shape '{text}'.")
    dims = []
    for part in stripped.split(","):
        part = part.strip()
        if re.fullmatch(r"-\s*[0-9]+", part):
            raise make_error(
                "BAD_SHAPE", f"'{text}' has dimension {part}; dimensions must be positive."
            )
        if not re.fullmatch(r"[+]?[0-9]+", part):
            shown = part if part else "(empty)"
            raise make_error(
                "BAD_SHAPE", f"'{text}' is not a shape: '{shown}' is not a whole number."
            )
        value = int(part)
        if value <= 0:
            raise make_error(
                "BAD_SHAPE", f"'{text}' has dimension {value}; dimensions must be positive."
            )
        if value > MAX_DIMENSION:
            raise make_error("BAD_SHAPE", f"'{text}' has dimension {value}, which is too large.")
        dims.append(value)
    return tuple(dims)


def _close_names(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=3)
    pool = close or candidates[:8]
    more = "" if close or len(candidates) <= 8 else f" (and {len(candidates) - 8} more)"
    return ", ".join(repr(c) for c in pool) + more


def _check_names(
    names: list[str],
    known: list[str],
    option: str,
    hint_pool: list[str],
    weights: frozenset = frozenset(),
) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise make_error("DUPLICATE_NODE", f"'{name}' appears twice in {option}.")
        seen.add(name)
        if name in weights and name not in known:
            raise make_error(
                "UNKNOWN_NODE",
                f"{option} names '{name}', which is a stored weight, not a graph value; "
                f"candidates: {_close_names(name, hint_pool)}.",
            )
        if name not in known:
            raise make_error(
                "UNKNOWN_NODE",
                f"{option} names '{name}', which is not in the model; candidates: "
                f"{_close_names(name, hint_pool)}.",
            )


def all_value_names(model: onnx.ModelProto) -> list[str]:
    """Names of every graph input and node output, in graph order."""
    names = [inp.name for inp in model.graph.input]
    for node in model.graph.node:
        names.extend(out for out in node.output if out)
    return names


def select_inputs_outputs(
    model: onnx.ModelProto, input_nodes: list[str] | None, output_nodes: list[str] | None
) -> onnx.ModelProto:
    """Validate --input_nodes/--output_nodes and cut the graph to them when they differ."""
    inputs = [spec.name for spec in detect_inputs(model)]
    outputs = [spec.name for spec in detect_outputs(model)]
    known = all_value_names(model)
    weights = frozenset(init.name for init in model.graph.initializer)
    if input_nodes:
        _check_names(
            input_nodes,
            known,
            "--input_nodes",
            inputs + [n for n in known if n not in inputs],
            weights,
        )
    if output_nodes:
        _check_names(
            output_nodes,
            known,
            "--output_nodes",
            outputs + [n for n in known if n not in outputs],
            weights,
        )
    wanted_inputs = list(input_nodes) if input_nodes else inputs
    wanted_outputs = list(output_nodes) if output_nodes else outputs
    if set(wanted_inputs) == set(inputs) and wanted_outputs == outputs:
        if wanted_inputs != inputs:  # same inputs, user's order
            by_name = {inp.name: inp for inp in model.graph.input}
            weights = [inp for inp in model.graph.input if inp.name not in set(inputs)]
            ordered = [by_name[name] for name in wanted_inputs]
            del model.graph.input[:]
            model.graph.input.extend(ordered + weights)
        return model
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=False)
        return onnx.utils.Extractor(inferred).extract_model(wanted_inputs, wanted_outputs)
    except Exception as exc:  # onnx raises bare exceptions when a cut is impossible
        raise make_error(
            "UNKNOWN_NODE",
            f"Cannot cut the graph between {wanted_inputs} and {wanted_outputs}: {exc}",
        ) from None


def resolve_input_shapes(
    specs: list[TensorSpec], shapes: list[tuple[int, ...]] | None
) -> dict[str, tuple[int, ...]]:
    """Combine declared input shapes with --shape values; checks count and static dims."""
    if shapes and len(shapes) != len(specs):
        names = ", ".join(spec.name for spec in specs)
        raise make_error(
            "SHAPE_COUNT",
            f"{len(shapes)} shape(s) given for {len(specs)} input(s) ({names}).",
        )
    resolved = {}
    for index, spec in enumerate(specs):
        given = shapes[index] if shapes else None
        declared = spec.shape
        for dim in declared or []:
            if isinstance(dim, int) and (dim < 0 or dim > MAX_DIMENSION):
                raise make_error(
                    "ABSURD_DIMENSION", f"Input '{spec.name}' declares dimension {dim}."
                )
        if given is None:
            if spec.is_static and 0 in declared:
                raise make_error(
                    "SHAPE_REQUIRED",
                    f"Input {spec.describe()} declares a dimension of size 0 (an empty tensor).",
                )
            if not spec.is_static:
                raise make_error(
                    "SHAPE_REQUIRED",
                    f"Input {spec.describe()} has dynamic or unknown dimensions.",
                )
            resolved[spec.name] = tuple(declared)
            continue
        if declared is not None and declared and len(declared) != len(given):
            raise make_error(
                "SHAPE_CONFLICT",
                f"--shape {','.join(map(str, given))} has rank {len(given)} but input {spec.describe()} "
                f"has rank {len(declared)}.",
            )
        for axis, (want, have) in enumerate(zip(given, declared or [])):
            if isinstance(have, int) and have > 0 and have != want:
                raise make_error(
                    "SHAPE_CONFLICT",
                    f"--shape gives {want} for axis {axis} of input {spec.describe()}, which is static "
                    f"{have}.",
                )
        resolved[spec.name] = tuple(given)
    return resolved


def fix_input_shapes(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]) -> None:
    """Write the concrete input shapes into the graph and forget stale intermediate shapes."""
    for inp in model.graph.input:
        if inp.name not in shapes:
            continue
        tensor_type = inp.type.tensor_type
        tensor_type.ClearField("shape")
        tensor_type.shape.SetInParent()  # a scalar keeps an empty (rank 0) shape, not an unknown one
        for size in shapes[inp.name]:
            tensor_type.shape.dim.add().dim_value = size
    del model.graph.value_info[:]
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """Run ONNX shape inference with data propagation (shape arithmetic included).

    Data propagation keeps every element of 1-D integer values as a proto message (hundreds of
    bytes each), so a hostile ``Range(0, 1e9)`` would exhaust memory: it is only used when a first
    pass without it shows no integer vector longer than ``DATA_PROP_LIMIT``.
    """
    try:
        plain = shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=False
        )
        if _long_integer_vectors(plain):
            return plain
        return shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=True
        )
    except MemoryError:
        raise make_error(
            "ABSURD_DIMENSION", "Shape inference ran out of memory on the declared sizes."
        ) from None
    except Exception as exc:  # noqa: BLE001 - InferenceError, RuntimeError, ValidationError...
        raise make_error(
            "SHAPE_INFERENCE_FAILED", str(exc).splitlines()[0] if str(exc) else ""
        ) from None


# Longest integer vector for which shape inference may propagate values (real shape tensors are tiny).
DATA_PROP_LIMIT = 4096
_INTEGER_TYPES = {
    onnx.TensorProto.INT64,
    onnx.TensorProto.INT32,
    onnx.TensorProto.INT16,
    onnx.TensorProto.INT8,
    onnx.TensorProto.UINT64,
    onnx.TensorProto.UINT32,
    onnx.TensorProto.UINT16,
    onnx.TensorProto.UINT8,
}


def _long_integer_vectors(model: onnx.ModelProto) -> bool:
    graph = model.graph
    for init in graph.initializer:
        if (
            init.data_type in _INTEGER_TYPES
            and len(init.dims) == 1
            and init.dims[0] > DATA_PROP_LIMIT
        ):
            return True
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        tensor_type = info.type.tensor_type
        if tensor_type.elem_type in _INTEGER_TYPES and len(tensor_type.shape.dim) == 1:
            dim = tensor_type.shape.dim[0]
            if not dim.HasField("dim_value") or dim.dim_value > DATA_PROP_LIMIT:
                return True
    return False


def static_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Every value whose shape is fully known, by name."""
    known = {}
    for info in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        spec = _spec_from_value_info(info)
        if spec.is_static:
            known[info.name] = tuple(spec.shape)
    for init in model.graph.initializer:
        known[init.name] = tuple(init.dims)
    return known


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(
        attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for attr in node.attribute
    )


def _evaluate_node(
    node: onnx.NodeProto, opsets: dict[str, int], values: list
) -> list[np.ndarray] | None:
    """Run one node with onnx's reference evaluator; None if it cannot be run."""
    feeds = {}
    renamed = helper.make_node(node.op_type, [], list(node.output), domain=node.domain)
    renamed.attribute.extend(node.attribute)
    for index, (name, value) in enumerate(zip(node.input, values)):
        if not name:
            renamed.input.append("")
            continue
        alias = f"in{index}"
        renamed.input.append(alias)
        feeds[alias] = value
    # A bare node would run at the evaluator's newest opset: wrap it in a model importing ours.
    graph = helper.make_graph(
        [renamed],
        "fold",
        [
            helper.make_tensor_value_info(
                alias, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype), None
            )
            for alias, v in feeds.items()
        ],
        [helper.make_empty_tensor_value_info(out) for out in node.output if out],
    )
    single = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()]
    )
    try:
        evaluator = ReferenceEvaluator(single)
        results = evaluator.run(None, feeds)
    except Exception:  # any failure means: keep the node, compute it at run time
        return None
    return [np.asarray(r) for r in results]


def fold_constants(model: onnx.ModelProto, records: dict[str, FoldRecord]) -> bool:
    """Replace nodes whose inputs are all known by initializers. Returns whether anything changed.

    ``Shape`` and ``Size`` of statically shaped values count as known. ``records`` gains, for
    each folded tensor that derives from weights, the source initializers and the steps applied.
    """
    graph = model.graph
    opsets = {entry.domain or "": entry.version for entry in model.opset_import}
    shapes = static_shapes(model)
    constants: dict[str, np.ndarray] = {}
    source_of: dict[str, FoldRecord] = dict(records)
    for init in graph.initializer:
        constants[init.name] = None  # loaded lazily: weights are only read when a fold needs them
        source_of.setdefault(init.name, FoldRecord([init.name]))
    init_by_name = {init.name: init for init in graph.initializer}
    graph_outputs = {out.name for out in graph.output}

    def value(name: str) -> np.ndarray:
        if constants.get(name) is None:
            constants[name] = numpy_helper.to_array(init_by_name[name])
        return constants[name]

    kept, new_initializers, changed = [], [], False
    for node in graph.node:
        result = None
        if (
            node.domain not in ("", "ai.onnx")
            or node.op_type in NOT_FOLDABLE
            or _has_subgraph(node)
        ):
            kept.append(node)
            continue
        if node.op_type == "Shape" and node.input[0] in shapes:
            result = [_shape_slice(shapes[node.input[0]], node)]
        elif node.op_type == "Size" and node.input[0] in shapes:
            result = [np.array(int(np.prod(shapes[node.input[0]])), dtype=np.int64)]
        elif node.op_type == "Constant" or all(
            (not name) or name in constants for name in node.input
        ):
            inputs = [value(name) if name else None for name in node.input]
            if not _fold_size_ok(node, inputs, shapes):
                kept.append(node)
                continue
            result = _evaluate_node(node, opsets, inputs)
            if result is not None:
                size_in = sum(arr.nbytes for arr in inputs if arr is not None)
                if sum(arr.nbytes for arr in result) > size_in + FOLD_GROWTH_LIMIT:
                    result = None
        if result is None or any(out in graph_outputs for out in node.output):
            kept.append(node)
            continue
        changed = True
        weight_sources = [source_of[n] for n in node.input if n and n in source_of]
        for out_name, array in zip(node.output, result):
            if not out_name:
                continue
            constants[out_name] = array
            init_by_name[out_name] = numpy_helper.from_array(array, out_name)
            new_initializers.append(init_by_name[out_name])
            shapes[out_name] = tuple(array.shape)
            if weight_sources and node.op_type not in ("Shape", "Size"):
                main = max(weight_sources, key=lambda rec: len(rec.sources))
                source_of[out_name] = records[out_name] = FoldRecord(
                    list(main.sources), main.steps + [_describe_step(node)]
                )
    if changed:
        del graph.node[:]
        graph.node.extend(kept)
        graph.initializer.extend(new_initializers)
    return changed


# Operators whose output size is set by input *values* (not shapes): fold them only when the size
# is known to be reasonable, so a hostile ConstantOfShape([1e6, 1e6]) is never materialised.
_SIZE_FROM_VALUES = {
    "ConstantOfShape",
    "Expand",
    "Tile",
    "Range",
    "Resize",
    "Upsample",
    "Pad",
    "OneHot",
    "EyeLike",
    "CenterCropPad",
    "Col2Im",
}


def _fold_size_ok(node: onnx.NodeProto, inputs: list, shapes: dict[str, tuple[int, ...]]) -> bool:
    """Whether evaluating ``node`` at conversion time may stay near FOLD_GROWTH_LIMIT (the exact
    check runs on the result; this one only stops monstrous arrays from being built)."""
    budget = sum(arr.nbytes for arr in inputs if arr is not None) + FOLD_GROWTH_LIMIT
    for out in node.output:
        if out and out in shapes:
            size = 1
            for dim in shapes[out]:
                size *= max(int(dim), 0)
            if size > 2 * budget:  # elements, at least one byte each
                return False
        elif out and node.op_type in _SIZE_FROM_VALUES:
            return False  # size unknown and driven by values: keep it for run time
    return True


def _shape_slice(shape: tuple[int, ...], node: onnx.NodeProto) -> np.ndarray:
    attrs = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return np.array(shape[slice(start, end)], dtype=np.int64)


def _describe_step(node: onnx.NodeProto) -> str:
    attrs = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
    shown = ", ".join(
        f"{k}={list(v) if isinstance(v, (list, tuple)) else v}"
        for k, v in attrs.items()
        if isinstance(v, (int, float, list, tuple))
    )
    return f"{node.op_type}({shown})"


def run_optimizer(model: onnx.ModelProto) -> onnx.ModelProto:
    """Apply onnxoptimizer's clean-up passes, keeping each node's metadata (it drops them)."""
    for index, node in enumerate(model.graph.node):
        if not node.name:
            node.name = f"{node.op_type}_{index}"
    metadata = {
        node.name: list(node.metadata_props) for node in model.graph.node if node.metadata_props
    }
    try:
        with _quiet_stderr():
            optimized = onnxoptimizer.optimize(model, OPTIMIZER_PASSES)
    except (
        Exception
    ):  # the optimizer rejects some valid models; it only tidies, so go on without it
        return model
    for node in optimized.graph.node:
        for entry in metadata.get(node.name, []):
            node.metadata_props.add().CopyFrom(entry)
    optimized.graph.ClearField("value_info")
    return optimized


@contextlib.contextmanager
def _quiet_stderr():
    """Silence C++ code that writes warnings straight to file descriptor 2."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # no real stderr (embedded, captured): nothing to silence
        yield
        return
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def remove_unused_initializers(model: onnx.ModelProto) -> None:
    """Drop initializers nothing reads any more (after folding)."""
    used = {name for node in model.graph.node for name in node.input}
    used |= {out.name for out in model.graph.output}
    used |= subgraph_references(model.graph)
    kept = [init for init in model.graph.initializer if init.name in used]
    if len(kept) != len(model.graph.initializer):
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept)


def remove_dead_nodes(model: onnx.ModelProto) -> None:
    """Drop nodes none of whose outputs reaches a graph output (reads inside subgraphs count)."""
    graph = model.graph
    needed = {out.name for out in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(out in needed for out in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
            needed |= subgraph_references(helper.make_graph([node], "n", [], []))
    if len(kept) != len(graph.node):
        kept.reverse()
        del graph.node[:]
        graph.node.extend(kept)


def subgraph_references(graph: onnx.GraphProto) -> set[str]:
    """Names read by the subgraphs (If/Loop/Scan bodies) of ``graph``'s nodes, recursively."""
    names = set()
    for node in graph.node:
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in subgraphs:
                names |= {name for n in sub.node for name in n.input}
                names |= subgraph_references(sub)
    return names


def simplify(
    model: onnx.ModelProto, max_rounds: int = 500
) -> tuple[onnx.ModelProto, dict[str, FoldRecord]]:
    """Infer shapes and fold constants until nothing changes, then tidy with onnxoptimizer."""
    records: dict[str, FoldRecord] = {}
    model = infer_shapes(model)
    for _ in range(max_rounds):
        folded = fold_constants(model, records)
        if not (inline_constant_ifs(model) or unroll_loops(model) or folded):
            break
        remove_unused_initializers(model)
        model = infer_shapes(model)
    model = run_optimizer(model)
    remove_dead_nodes(model)
    remove_unused_initializers(model)
    model = infer_shapes(model)
    return model, records


def inline_constant_ifs(model: onnx.ModelProto) -> bool:
    """Replace each ``If`` whose condition is a known constant by the branch it takes.

    The branch's nodes keep their names (nested subgraphs may read them from the outer scope,
    which is why onnxoptimizer's renaming eliminate_if_with_const_cond is not used); each branch
    output becomes an Identity onto the If's output.
    """
    graph = model.graph
    inits = {init.name: init for init in graph.initializer}
    nodes, changed = [], False
    for node in graph.node:
        cond = inits.get(node.input[0]) if node.op_type == "If" and node.input else None
        if cond is None or node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        value = numpy_helper.to_array(cond)
        if value.size != 1:
            nodes.append(node)
            continue
        branch_name = "then_branch" if bool(value.reshape(-1)[0]) else "else_branch"
        branch = next(attr.g for attr in node.attribute if attr.name == branch_name)
        nodes.extend(branch.node)
        for init in branch.initializer:
            graph.initializer.append(init)
        for source, target in zip(branch.output, node.output):
            if target:
                nodes.append(
                    helper.make_node(
                        "Identity", [source.name], [target], name=f"{node.name}/{target}"
                    )
                )
        changed = True
    if changed:
        del graph.node[:]
        graph.node.extend(nodes)
    return changed
