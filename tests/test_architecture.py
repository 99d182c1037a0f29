"""The package's shape, checked: no import cycles, no private names across modules, passes that
do not import each other, small units, and developer tools outside the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mindconverter"
MAX_CLASS_LINES = 400
MAX_CLASS_METHODS = 20
MAX_FUNCTION_LINES = 120
# Modules of passes/ that are not passes: the shared context and the ordered list itself.
PASS_INFRASTRUCTURE = {"mindconverter.passes.context", "mindconverter.passes.pipeline"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(imported module, imported names) for every import outside ``if TYPE_CHECKING:``."""
    module = _module_name(path)
    package = _package_of(module, path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(child)
        for node in ast.walk(tree)
        if _is_type_checking_block(node)
        for child in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.append((base, [alias.name for alias in node.names]))
    return found


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _edges() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, names in _imports(path):
            candidates = [f"{target}.{n}" for n in names] + [target]
            for candidate in candidates:
                if candidate in modules and candidate != name:
                    edges[name].add(candidate)
                    break
    return edges


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                return stack[stack.index(target) :] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_no_import_cycles():
    edges = _edges()
    # A package's __init__ re-exporting its submodules is not a cycle through the package.
    for name in list(edges):
        edges[name] = {t for t in edges[name] if not name.startswith(t + ".")}
    assert _find_cycle(edges) is None, f"import cycle: {' -> '.join(_find_cycle(edges))}"


def test_no_private_names_taken_across_modules():
    offenders = []
    modules = _modules()
    for name, path in modules.items():
        for target, names in _imports(path):
            if not target.startswith("mindconverter") or target == name:
                continue
            offenders += [
                f"{name} imports {target}.{n}"
                for n in names
                if n.startswith("_") and not n.startswith("__")
            ]
    assert not offenders, offenders


def test_passes_do_not_import_each_other():
    edges = _edges()
    passes = {name for name in edges if name.startswith("mindconverter.passes.")}
    offenders = [
        f"{name} -> {target}"
        for name in passes - PASS_INFRASTRUCTURE
        for target in edges[name]
        if target in passes - PASS_INFRASTRUCTURE
    ]
    assert not offenders, offenders


def test_every_pass_module_has_run():
    for name, path in _modules().items():
        if not name.startswith("mindconverter.passes.") or name in PASS_INFRASTRUCTURE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert "run" in names, f"{name} has no run(graph, context)"


def _units():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path.relative_to(PACKAGE.parent), node


def test_classes_and_functions_are_small():
    too_big = []
    for where, node in _units():
        lines = node.end_lineno - node.lineno + 1
        if isinstance(node, ast.ClassDef):
            methods = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
            if lines > MAX_CLASS_LINES or methods > MAX_CLASS_METHODS:
                too_big.append(f"{where}:{node.lineno} class {node.name}: {lines} lines, {methods}")
        elif lines > MAX_FUNCTION_LINES:
            too_big.append(f"{where}:{node.lineno} {node.name}: {lines} lines")
    assert not too_big, too_big


@pytest.mark.parametrize(
    "folder", ["frontends", "graph", "passes", "mappers", "codegen", "outputs"]
)
def test_pipeline_folders_exist_and_say_what_they_hold(folder):
    init = PACKAGE / folder / "__init__.py"
    assert init.is_file()
    assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), (
        f"{folder} has no docstring"
    )


def test_developer_tools_live_outside_the_package():
    assert not (PACKAGE / "suite.py").exists()
    assert not any(path.name.startswith("gen_") for path in PACKAGE.rglob("*.py"))


# Each stage imports only the stages before it (and the package's shared base modules).
STAGES = ["graph", "frontends", "mappers", "passes", "codegen", "outputs"]
# Earlier stages a stage may not import although they come before it.
NOT_BELOW = {"frontends": {"mappers"}, "mappers": {"frontends"}, "codegen": {"frontends"}}


def _stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in STAGES else None


def test_imports_point_one_way():
    """graph <- mappers <- passes <- codegen <- outputs: a stage never imports a later one, nor
    the modules on top (api, cli, verification, re-conversion)."""
    offenders = []
    for name, targets in _edges().items():
        stage = _stage_of(name)
        if stage is None:
            continue
        allowed = set(STAGES[: STAGES.index(stage) + 1]) - NOT_BELOW.get(stage, set())
        for target in targets:
            target_stage = _stage_of(target)
            top_level = target_stage is None and target not in BASE_MODULES
            if (target_stage is not None and target_stage not in allowed) or top_level:
                offenders.append(f"{name} -> {target}")
    assert not offenders, offenders


# Modules at the package's top that any stage may use: errors, plain text helpers, progress.
BASE_MODULES = {
    "mindconverter.errors",
    "mindconverter.text",
    "mindconverter.version",
    "mindconverter.progress",
    "mindconverter.native_stderr",
    "mindconverter.templating",
    "mindconverter.ruff_format",
}


def test_no_type_checking_imports():
    """Types every stage needs live where every stage may import them, so no import hides
    behind ``if TYPE_CHECKING:``."""
    hidden = [
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if any(_is_type_checking_block(n) for n in ast.walk(ast.parse(path.read_text())))
    ]
    assert not hidden, hidden


# The layers on top of the pipeline, each importing only what is below it.
TOP_LAYERS = {
    "check": {"conversion", "reweight", "api", "cli"},
    "reweight": {"conversion", "api", "cli"},
    "conversion": {"reweight", "api", "cli"},
}


@pytest.mark.parametrize("layer", sorted(TOP_LAYERS))
def test_top_layers_import_only_below(layer):
    offenders = [
        f"{name} -> {target}"
        for name, targets in _edges().items()
        if name.startswith(f"mindconverter.{layer}.")
        for target in targets
        if target.split(".")[1] in TOP_LAYERS[layer]
    ]
    assert not offenders, offenders


def test_api_is_only_the_surface():
    """api.py holds convert() and its result types; the work is in conversion/."""
    lines = (PACKAGE / "api.py").read_text().splitlines()
    assert len(lines) <= 250, f"api.py has {len(lines)} lines"
