"""Measure how readable a generated script is (issue 26: "transformers read like mindnlp").

Usage: ``python tools/readability.py SCRIPT.py [SCRIPT.py ...] [--json]``

For each script it reports, from the script's syntax tree alone:

- ``attention_lines``: code lines of the ``construct`` of each class whose name contains
  ``Attention``, or that computes attention itself (a softmax and a matrix product: an
  attention dissolved into its parent), the largest one;
- ``x_params``: ``construct`` parameters named ``x_<n>``;
- ``noops``: computations that do nothing, by kind (``logical_and`` with ``True``,
  ``arange(...) >= 0``, ``squeeze`` of ``unsqueeze``, cast of a cast to the same dtype, ``* 1``,
  ``+ 0``, a scalar ``ms.Tensor`` where a Python number works, one tuple of sizes built again
  in the same function, reshape of a reshape, transpose of a transpose, ``ops.gather`` with a
  constant index, a ``nn.LayerNorm`` tied to the input's rank);
- ``unrolled_calls`` (``self.layer[0](...)`` outside a loop) and ``loops``
  (``for layer in self.layers``);
- ``mixed_containers``: ``nn.CellList``/``nn.SequentialCell`` holding instances of several classes
  (unless ``construct`` takes it apart by name: different sublayers, each called once);
- ``size_only_params``: block parameters used only where a size is read or given;
- ``renamed_meanings``: variables assigned again with a value that does not read them;
- ``tied_copies``: ``self.fc_1.weight = self.fc.weight``, a layer written again for each
  application instead of one layer applied in a loop;
- ``ruff_check`` / ``ruff_imports`` / ``ruff_format``: whether ``ruff check --isolated`` (default
  rules), its import-order rule (``I``) and ``ruff format --check`` pass.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

SHAPE_TAKING = {"reshape", "broadcast_to", "zeros", "ones", "fill", "full", "tile", "view"}
NUMBERED_X = re.compile(r"^x_\d+$")


def _name(node: ast.AST) -> str:
    """``ops.reshape`` for the callee of a call (empty when it is not a dotted name)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _name(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    return ""


def _is_number(node: ast.AST, values: tuple = ()) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_number(node.operand, tuple(-v for v in values))
    ok = isinstance(node, ast.Constant) and type(node.value) in (int, float)
    return ok and (not values or node.value in values)


def _scalar_tensor(node: ast.AST, values: tuple = ()) -> bool:
    """``ms.Tensor(<number or bool>, ms.<dtype>)``."""
    if not (isinstance(node, ast.Call) and _name(node.func) in ("ms.Tensor", "Tensor")):
        return False
    if not node.args:
        return False
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, bool):
        return not values or first.value in values
    return _is_number(first, values)


class _Function:
    """One ``construct``: its assignments, in order, to trace where a value came from."""

    def __init__(self, func: ast.FunctionDef):
        self.func = func
        self.params = [a.arg for a in func.args.args if a.arg != "self"]
        self.parents: dict[int, ast.AST] = {}
        for parent in ast.walk(func):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent

    def definition(self, name: ast.AST, before: ast.AST) -> ast.AST | None:
        """The value last assigned to variable ``name`` before statement ``before``."""
        if not isinstance(name, ast.Name):
            return name
        found = None
        for stmt in self.func.body:
            if stmt is before:
                break
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name.id for t in stmt.targets
            ):
                found = stmt.value
        return found

    def statement_of(self, node: ast.AST) -> ast.AST:
        while id(node) in self.parents and not isinstance(self.parents[id(node)], ast.FunctionDef):
            node = self.parents[id(node)]
        return node

    def source_call(self, node: ast.AST) -> str:
        """The function whose result ``node`` is (following one variable assignment)."""
        if isinstance(node, ast.Name):
            node = self.definition(node, self.statement_of(node))
        return _name(node.func) if isinstance(node, ast.Call) else ""

    def traces_to_arange(self, node: ast.AST, depth: int = 0) -> bool:
        if depth > 8 or node is None:
            return False
        if isinstance(node, ast.Name):
            return self.traces_to_arange(self.definition(node, self.statement_of(node)), depth + 1)
        if isinstance(node, ast.Call):
            func = _name(node.func).rsplit(".", 1)[-1]
            if func == "arange":
                return True
            if func in ("unsqueeze", "expand_dims", "reshape", "broadcast_to") and node.args:
                return self.traces_to_arange(node.args[0], depth + 1)
        return False


def _noops(fn: _Function) -> Counter:
    found: Counter = Counter()
    tuples_seen: Counter = Counter()
    for node in ast.walk(fn.func):
        if isinstance(node, ast.Call):
            func = _name(node.func).rsplit(".", 1)[-1]
            args = node.args
            if func == "logical_and" and any(_scalar_tensor(a, (True,)) for a in args):
                found["logical_and_true"] += 1
            if (
                func == "squeeze"
                and args
                and fn.source_call(args[0]).endswith(("unsqueeze", "expand_dims"))
            ):
                found["squeeze_of_unsqueeze"] += 1
            if func == "cast" and len(args) == 2 and fn.source_call(args[0]).endswith("cast"):
                inner = args[0]
                if isinstance(inner, ast.Name):
                    inner = fn.definition(inner, fn.statement_of(inner))
                if isinstance(inner, ast.Call) and len(inner.args) == 2:
                    if ast.dump(inner.args[1]) == ast.dump(args[1]):
                        found["cast_to_same_dtype"] += 1
            if func == "reshape" and args and fn.source_call(args[0]).endswith("reshape"):
                found["reshape_of_reshape"] += 1
            if func == "transpose" and args and fn.source_call(args[0]).endswith("transpose"):
                found["transpose_of_transpose"] += 1
            if func == "gather" and len(args) >= 2 and _scalar_tensor(args[1]):
                found["constant_gather"] += 1
            if _name(node.func) == "nn.LayerNorm" and any(
                k.arg == "begin_norm_axis" for k in node.keywords
            ):
                found["rank_bound_layernorm"] += 1
            if func != "Tensor":
                scalars = [a for a in args if _scalar_tensor(a)]
                found["scalar_tensor"] += len(scalars)
        elif isinstance(node, ast.BinOp):
            right, left = node.right, node.left
            if isinstance(node.op, (ast.Mult, ast.Div)) and (
                _is_number(right, (1,)) or _scalar_tensor(right, (1,))
            ):
                found["times_one"] += 1
            if isinstance(node.op, ast.Mult) and (
                _is_number(left, (1,)) or _scalar_tensor(left, (1,))
            ):
                found["times_one"] += 1
            if isinstance(node.op, (ast.Add, ast.Sub)) and (
                _is_number(right, (0,)) or _scalar_tensor(right, (0,))
            ):
                found["plus_zero"] += 1
            scalars = [side for side in (left, right) if _scalar_tensor(side)]
            found["scalar_tensor"] += len(scalars)
        elif isinstance(node, ast.Compare):
            if (
                len(node.ops) == 1
                and isinstance(node.ops[0], ast.GtE)
                and (_is_number(node.comparators[0], (0,)) or _scalar_tensor(node.comparators[0]))
                and fn.traces_to_arange(node.left)
            ):
                found["arange_ge_zero"] += 1
        elif isinstance(node, ast.Tuple) and any("shape" in ast.dump(elt) for elt in node.elts):
            tuples_seen[ast.dump(node)] += 1
    found["repeated_shape_tuple"] += sum(count - 1 for count in tuples_seen.values())
    return +found


def _size_only(fn: _Function, param: str) -> bool:
    """Whether every read of ``param`` gives or reads a size (never tensor data)."""
    reads = [
        n
        for n in ast.walk(fn.func)
        if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load)
    ]
    if not reads:
        return False
    for read in reads:
        node, shape_use = read, False
        while id(node) in fn.parents:
            parent = fn.parents[id(node)]
            if isinstance(parent, ast.Attribute) and parent.attr == "shape":
                shape_use = True
            if isinstance(parent, ast.Call):
                func = _name(parent.func).rsplit(".", 1)[-1]
                if func == "shape" or (func in SHAPE_TAKING and node is not parent.func):
                    position = parent.args.index(node) if node in parent.args else -1
                    if func == "shape" or position != 0:
                        shape_use = True
            if shape_use or isinstance(parent, ast.stmt):
                break
            node = parent
        if not shape_use:
            return False
    return True


def _renamed_meanings(fn: _Function) -> int:
    """Assignments to an existing variable whose value does not read it (``x = f(y)`` after
    ``x``); reading it through temporaries (``e = exp(x); x = e / e.sum()``) is a chain."""
    defined = set(fn.params)
    reads_of: dict[str, set[str]] = {}  # variable -> names its latest value was computed from
    count = 0
    for stmt in fn.func.body:
        if not isinstance(stmt, ast.Assign):
            continue
        direct = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
        reads = set(direct)
        for name in direct:
            reads |= reads_of.get(name, set())
        for target in stmt.targets:
            for name in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(name, ast.Name):
                    reads_of[name.id] = reads
        for target in stmt.targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            for name in names:
                if isinstance(name, ast.Name) and name.id != "_":
                    if name.id in defined and name.id not in reads:
                        count += 1
                    defined.add(name.id)
    return count


def _mixed_containers(tree: ast.AST) -> int:
    """Containers holding instances of several classes, unless ``construct`` takes the list
    apart by name (``self_attention, feed_forward = self.layer``: T5's different sublayers,
    each called once, not repeated layers)."""
    count = 0
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
        unpacked = {
            _name(node.value)
            for node in ast.walk(cls)
            if isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Attribute)
        }
        for node in ast.walk(cls):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            call = node.value
            if _name(call.func) not in ("nn.CellList", "nn.SequentialCell") or not call.args:
                continue
            if not isinstance(call.args[0], (ast.List, ast.Tuple)):
                continue
            classes = {
                _name(e.func)
                for e in call.args[0].elts
                if isinstance(e, ast.Call) and _name(e.func) != "nn.Identity"
            }
            count += len(classes) > 1 and _name(node.targets[0]) not in unpacked
    return count


def _ruff(args: list[str], code: str) -> bool:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    done = subprocess.run(
        [ruff, *args, "-"], input=code.encode(), capture_output=True, timeout=120, check=False
    )
    return done.returncode == 0


def _tied_copies(tree: ast.Module) -> int:
    """``self.fc_1.weight = self.fc.weight`` lines: a layer the source applies again written as
    a second copy sharing the first one's Parameters (ALBERT before its loop)."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    copy, first = _name(stmt.targets[0]), _name(stmt.value)
                    holder, _, param = copy.rpartition(".")
                    if param and first == f"{re.sub(r'_[0-9]+$', '', holder)}.{param}" != copy:
                        count += 1
    return count


def _computes_attention(func: ast.FunctionDef) -> bool:
    """A softmax (``ops.softmax``, the script's ``masked_softmax`` or the explicit
    ``ops.exp`` form) and ``ops.matmul`` in one ``construct``."""
    called = {_name(n.func) for n in ast.walk(func) if isinstance(n, ast.Call)}
    softmax = {"ops.softmax", "masked_softmax", "ops.exp"} & called
    return bool(softmax) and "ops.matmul" in called


def measure(code: str, run_ruff: bool = True) -> dict:
    """The readability properties of one generated script."""
    tree = ast.parse(code)
    attention, noops, x_params, size_only, renamed = [], Counter(), 0, 0, 0
    unrolled = loops = 0
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        for func in cls.body:
            if not (isinstance(func, ast.FunctionDef) and func.name == "construct"):
                continue
            fn = _Function(func)
            if "Attention" in cls.name or _computes_attention(func):
                lines = {n.lineno for s in func.body for n in ast.walk(s) if hasattr(n, "lineno")}
                attention.append(len(lines))
            noops += _noops(fn)
            x_params += sum(bool(NUMBERED_X.match(p)) for p in fn.params)
            if cls.name != "MindSporeModel":
                size_only += sum(_size_only(fn, p) for p in fn.params)
            renamed += _renamed_meanings(fn)
            in_loops = {
                id(inner)
                for loop in ast.walk(func)
                if isinstance(loop, ast.For)
                for inner in ast.walk(loop)
            }
            for node in ast.walk(func):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Subscript)
                    and _name(node.func.value).startswith("self.")
                    and _is_number(node.func.slice)
                    and id(node) not in in_loops  # one layer applied in a loop (ALBERT)
                ):
                    unrolled += 1
                loops += isinstance(node, ast.For)
    result = {
        "attention_lines": max(attention) if attention else 0,
        "attention_classes": len(attention),
        "x_params": x_params,
        "noops": sum(noops.values()),
        "noop_kinds": dict(sorted(noops.items())),
        "unrolled_calls": unrolled,
        "loops": loops,
        "mixed_containers": _mixed_containers(tree),
        "size_only_params": size_only,
        "renamed_meanings": renamed,
        "tied_copies": _tied_copies(tree),
    }
    if run_ruff:
        result["ruff_check"] = _ruff(["check", "--isolated", "--quiet"], code)
        result["ruff_imports"] = _ruff(["check", "--isolated", "--quiet", "--select", "I"], code)
        result["ruff_format"] = _ruff(["format", "--isolated", "--check", "--quiet"], code)
    return result


def summary(results: dict[str, dict]) -> dict:
    """Totals over several scripts (medians for attention lengths)."""
    rows = list(results.values())
    lengths = [r["attention_lines"] for r in rows if r["attention_lines"]]
    total = {"scripts": len(rows)}
    for key in (
        "x_params",
        "noops",
        "unrolled_calls",
        "mixed_containers",
        "size_only_params",
        "renamed_meanings",
        "tied_copies",
    ):
        total[key] = sum(r[key] for r in rows)
    total["attention_lines_median"] = statistics.median(lengths) if lengths else 0
    for key in ("ruff_check", "ruff_imports", "ruff_format"):
        total[f"{key}_failures"] = sum(not r.get(key, True) for r in rows)
    return total


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    paths = [Path(a) for a in argv if a != "--json"]
    if not paths:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    results = {str(p): measure(p.read_text(encoding="utf-8")) for p in paths}
    if as_json:
        print(json.dumps({"scripts": results, "summary": summary(results)}, indent=2))
        return 0
    for path, row in results.items():
        print(path)
        for key, value in row.items():
            print(f"  {key}: {value}")
    print("summary:", json.dumps(summary(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
