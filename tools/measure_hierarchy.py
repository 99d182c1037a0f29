"""Measure how much of the source's module tree the generated scripts of a corpus keep.

    python tools/measure_hierarchy.py /work/corpus/manifest.json [--verify] [--graph_mode]

For each model of the manifest (``{"models": [{"file", "shapes"}, ...]}``, files beside it) it
prints whether the script is flat (no recovered class), whether its repeated layers sit in
containers of one class each (a container mixing classes made from one source class, such as
``BasicBlock`` and ``BasicBlock2``, does not) (and run in a ``for`` loop), how many block arguments are sizes
(shape tuples computed outside the block), and with ``--verify`` whether MindSpore matches
onnxruntime at the conversion shape and a second one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import onnx  # noqa: E402

from mindconverter import convert  # noqa: E402
from mindconverter.graph import Graph  # noqa: E402
from mindconverter.graph.module_tree import Block  # noqa: E402
from mindconverter.graph.specs import detect_inputs  # noqa: E402
from mindconverter.mappers.registry import default_registry  # noqa: E402
from mindconverter.passes import recover_hierarchy  # noqa: E402
from mindconverter.passes.context import PassContext  # noqa: E402
from mindconverter.passes.fix_shapes import parse_shape_request  # noqa: E402
from mindconverter.passes.pipeline import PIPELINE, run_passes  # noqa: E402


def size_arguments(model_file: Path, shapes: list[str]) -> int:
    """Block arguments (over every block of the recovered tree) computed by a ``Dims`` node."""
    graph = Graph(onnx.load(str(model_file)))
    context = PassContext(default_registry(), shapes=[parse_shape_request(s) for s in shapes])
    context.input_specs = detect_inputs(graph.model)
    upto = [step.name for step in PIPELINE].index("recover the module hierarchy")
    run_passes(graph, context, PIPELINE[:upto])
    recover_hierarchy.run(graph, context)
    producers = {out: m.node.op_type for m in context.tree.nodes() for out in m.node.outputs}
    count = 0
    pending = list(context.tree.child_blocks())
    while pending:
        block: Block = pending.pop()
        pending.extend(block.child_blocks())
        count += sum(producers.get(name) == "Dims" for name in block.inputs)
    return count


def container_classes(code: str) -> list[list[str]]:
    """The recovered classes held by each ``nn.CellList``/``nn.SequentialCell`` of the script."""
    classes = set(re.findall(r"^class (\w+)\(nn\.Cell\):", code, flags=re.MULTILINE))
    result = []
    for match in re.finditer(r"nn\.(?:CellList|SequentialCell)\(\s*\[", code):
        depth, end = 1, match.end()
        while depth and end < len(code):
            depth += {"[": 1, "]": -1}.get(code[end], 0)
            end += 1
        names = [n for n in re.findall(r"(\w+)\(", code[match.end() : end]) if n in classes]
        if len(names) >= 2:
            result.append(names)
    return result


def measure(entry: dict, folder: Path, verify: bool, graph_mode: bool) -> dict:
    """One model's row."""
    model_file = folder / entry["file"]
    shapes = [",".join(str(d) for d in shape) for shape in entry.get("shapes", [])]
    row = {"file": entry["file"]}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        try:
            result = convert(
                model_file, shape=shapes or None, output=out, verify=verify, graph_mode=graph_mode
            )
        except Exception as error:  # a failed conversion is a row of the table, not the end
            row["error"] = str(error).splitlines()[0][:120]
            return row
        code = result.script_path.read_text()
        if verify:
            row["verified"] = bool(result.verification and result.verification.get("ok"))
    row["seconds"] = round(time.perf_counter() - started, 1)
    lists = container_classes(code)
    row["flat"] = not re.search(r"^class (?!MindSporeModel)\w+\(nn\.Cell\):", code, re.MULTILINE)
    row["lists"] = len(lists)
    # classes recovered from one source class, split by their code (BasicBlock, BasicBlock2)
    row["mixed_lists"] = sum(
        len(set(names)) > len({re.sub(r"\d+$", "", name) for name in names}) for names in lists
    )
    row["loops"] = len(re.findall(r"^\s+for \w+ in self\.\w+:", code, flags=re.MULTILINE))
    row["size_args"] = size_arguments(model_file, shapes)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifests", nargs="+", type=Path)
    parser.add_argument("--verify", action="store_true")
    parser.add_argument("--graph_mode", action="store_true")
    args = parser.parse_args()
    rows = []
    for manifest in args.manifests:
        for entry in json.loads(manifest.read_text())["models"]:
            row = measure(entry, manifest.parent, args.verify, args.graph_mode)
            rows.append(row)
            print(json.dumps(row), flush=True)
    done = [r for r in rows if "error" not in r]
    one_class = [r for r in done if r["lists"] and not r["mixed_lists"]]
    print(
        f"{len(rows)} models, {len(done)} converted: {sum(not r['flat'] for r in done)} not flat, "
        f"{len(one_class)} with repeated layers in containers of one class, "
        f"{sum(r['size_args'] == 0 for r in done)} without size-only block arguments, "
        f"{sum(r['loops'] > 0 for r in done)} with a for loop over layers"
        + (f", {sum(r.get('verified', False) for r in done)} verified" if args.verify else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
