"""Stage 4: run the operator mappers over the IR graph.

Unsupported operators never abort: each node gets either a mapped description or the reason it
could not be converted.
"""

from __future__ import annotations

from ..errors import make_error
from ..graph import Graph
from ..graph.symbolic import DynamicDim, DynamicDimensionError
from ..mappers.base import MappedNode, NodeContext, Unsupported, expression_parts
from ..mappers.registry import MapperRegistry
from .context import PassContext


def map_nodes(
    graph: Graph,
    registry: MapperRegistry,
    debug: bool = False,
    convert_body=None,
    keep_quantized: bool = False,
) -> list[MappedNode]:
    """Map every node; a mapper's internal error becomes an unconverted node (or raises with debug)."""
    mapped = []
    for node in graph.nodes:
        domain = node.domain or ""
        opset = graph.opsets.get(domain, graph.opset if not domain else 1)
        fn = registry.lookup(node.op_type, opset, domain)
        if fn is None:
            reason = registry.why_missing(node.op_type, opset, domain)
            mapped.append(MappedNode(node, reason=reason))
            continue
        try:
            result = fn(NodeContext(graph, node, opset, convert_body, keep_quantized))
        except Unsupported as exc:
            mapped.append(MappedNode(node, reason=str(exc)))
            continue
        except DynamicDimensionError as exc:
            mapped.append(MappedNode(node, reason=f"the mapper {exc}, which stays dynamic"))
            continue
        except Exception as exc:  # a bug in one mapper must not lose the whole conversion
            if debug:
                raise make_error(
                    "MAPPING_FAILED", f"Mapper for '{node.op_type}' failed on '{node.name}': {exc}"
                ) from exc
            mapped.append(
                MappedNode(node, reason=f"internal mapper error ({type(exc).__name__}: {exc})")
            )
            continue
        dim = _dynamic_dim_in(result)
        if dim is not None:  # it would reach the script as a literal (codegen cannot write it)
            mapped.append(
                MappedNode(node, reason=f"the mapper writes dynamic dimension '{dim}' as a size")
            )
            continue
        mapped.append(MappedNode(node, result=result))
    return mapped


def _dynamic_dim_in(value) -> DynamicDim | None:
    """The first DynamicDim inside a mapper's result (expressions, literals, containers)."""
    return next((part for part in expression_parts(value) if isinstance(part, DynamicDim)), None)


def run(graph: Graph, context: PassContext) -> bool:
    """Map every node with the context's registry; the results go to ``context.mapped``."""
    context.mapped = map_nodes(
        graph,
        context.registry,
        debug=context.debug,
        convert_body=context.convert_body,
        keep_quantized=context.keep_quantized,
    )
    return False
