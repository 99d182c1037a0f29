"""The conversion report: [UnConvert] lines, the converted rate, inputs, outputs and counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..codegen.naming import comment_text
from ..codegen.rendered import RenderedModel
from ..graph import Graph
from ..mappers.base import MappedNode
from ..templating import render_template
from ..text import escape_controls


@dataclass
class OpCount:
    op: str
    total: int
    unconverted: int


def converted_rate(mapped: list[MappedNode]) -> float:
    """Percentage of nodes converted (100 for an empty graph)."""
    if not mapped:
        return 100.0
    return 100.0 * sum(m.converted for m in mapped) / len(mapped)


def op_counts(mapped: list[MappedNode]) -> list[OpCount]:
    """Per-operator node counts, most frequent first."""
    totals = Counter(_qualified(m.node.domain, m.node.op_type) for m in mapped)
    missing = Counter(_qualified(m.node.domain, m.node.op_type) for m in mapped if not m.converted)
    return [
        OpCount(op, n, missing.get(op, 0))
        for op, n in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _qualified(domain: str, op_type: str) -> str:
    return f"{domain or 'onnx'}::{op_type}"


def render_report(
    *,
    graph: Graph,
    mapped: list[MappedNode],
    rendered: RenderedModel,
    model_name: str,
    script_name: str,
    checkpoint_name: str,
    inputs: list[str],
    outputs: list[str],
    verification: dict | None = None,
    notes: list[str] | None = None,
) -> str:
    """The text report: the familiar [UnConvert] lines, rate, then inputs, outputs, counts."""
    sites = [
        {
            "line": site.line,
            "column": site.column,
            "qualified_op": comment_text(_qualified(site.domain, site.op_type), 80),
            "reason": comment_text(f"Node '{site.node_name}': {site.reason}.", 400),
        }
        for site in rendered.unconverted
    ]
    return render_template(
        "mindconverter.outputs",
        "report.txt.j2",
        finalize=escape_controls,  # no model-controlled text can start a report line
        unconverted=sites,
        rate=converted_rate(mapped),
        model_name=comment_text(model_name),
        opset=graph.opset,
        producer=comment_text(graph.producer or "unknown"),
        script_name=script_name,
        checkpoint_name=checkpoint_name,
        parameter_count=len(rendered.entries),
        weight_count=sum(int(e.array.size) for e in rendered.entries),
        inputs=[comment_text(line) for line in inputs],
        outputs=[comment_text(line) for line in outputs],
        total_nodes=len(mapped),
        converted_nodes=sum(m.converted for m in mapped),
        op_counts=op_counts(mapped),
        verification=verification,
        verified_shapes=_shape_sets_text(verification),
        weight_transforms=weight_transforms(rendered),
        notes=[comment_text(note, 600) for note in notes or []],
    )


def weight_transforms(rendered: RenderedModel) -> list[str]:
    """One line per kind of change a checkpoint weight went through on its way from the source
    (layout changes, BatchNorm folded by the exporter...), with how many weights it touched."""
    counts: dict[str, int] = {}
    for entry in rendered.entries:
        for step in filter(None, (part.strip() for part in entry.transform.split(";"))):
            counts[step] = counts.get(step, 0) + 1
    return [comment_text(f"{step}: {count} weight(s)", 300) for step, count in counts.items()]


def _shape_sets_text(verification: dict | None) -> list[str]:
    """One line per input shape set verification ran at (names escaped)."""
    if not verification:
        return []
    return [
        comment_text(
            "; ".join(f"{name}[{', '.join(map(str, dims))}]" for name, dims in shapes.items()), 400
        )
        for shapes in verification.get("shapes", [])
    ]
