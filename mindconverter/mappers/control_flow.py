"""Control flow: If, Loop, Scan, and what happens to them.

The preprocessing inlines an ``If`` whose condition is a constant (onnxoptimizer's
eliminate_if_with_const_cond, after constant folding), so a mapper only sees the ones it cannot
resolve. Rendering an ONNX subgraph as MindSpore code (a branch body, a loop body) needs the
renderer to emit nested statement blocks, which the single-expression mapper contract cannot
describe, so these stay unconverted with a clear reason. Loops and Scans whose iteration count
is known at conversion time never get here: the preprocessing unrolls them into straight-line
nodes (mindconverter/unroll.py).
"""

from __future__ import annotations

from .base import NodeContext, Unsupported
from .registry import mapper


@mapper("If")
def if_(ctx: NodeContext):
    """If -> unsupported unless the preprocessing inlined it (constant condition)."""
    if ctx.is_const(0):
        raise Unsupported(
            "If with a constant condition that the preprocessing could not inline "
            "(onnxoptimizer's eliminate_if_with_const_cond rejected the model)"
        )
    raise Unsupported(
        "If with a condition computed at run time: converting ONNX subgraphs into MindSpore "
        "control flow is not supported"
    )


@mapper("Loop")
def loop(ctx: NodeContext):
    """Loop -> unsupported (one left by the unrolling runs a data-dependent number of times)."""
    trip = ctx.const(0)
    detail = (
        f" ({int(trip.reshape(-1)[0])} iterations)" if trip is not None and trip.size == 1 else ""
    )
    raise Unsupported(
        f"Loop{detail}: its iteration count or condition depends on run-time data, so it could not "
        "be unrolled, and converting ONNX loop bodies (subgraphs) into MindSpore is not supported"
    )


@mapper("Scan", since=8)
def scan(ctx: NodeContext):
    """Scan -> unsupported (one left by the unrolling has no static scan length)."""
    raise Unsupported(
        "Scan: the scanned length is not static (or the loop is too long to unroll), and converting "
        "ONNX scan bodies (subgraphs) into MindSpore is not supported"
    )
