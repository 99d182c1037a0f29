"""The syntax-tree rewrite of a PyTorch script into MindSpore."""

from __future__ import annotations

import ast

from .api_choice import ApiChoices
from .calls import CallRewriting
from .common import ClassInfo, empty_binding, set_store
from .events import EventRecording
from .helpers import helper_definitions, torch_display
from .imports import ImportAnalysis
from .mapping import (
    TORCH_PARAM_NAMES,
    Renderer,
    describe_template,
    load_table,
    runtime_binding,
)


class Converter(CallRewriting, ApiChoices, EventRecording, ImportAnalysis, ast.NodeTransformer):
    """Rewrites a PyTorch script's tree into MindSpore, recording what it converted and left."""

    def __init__(self, tree: ast.Module):
        self.table = load_table()
        self.helper_names = set(helper_definitions())
        self.aliases: dict = {}  # local name -> torch path
        self.externals: dict = {}  # local name -> (qualified, entry)
        self.unknown_imports: dict = {}  # local name -> qualified (placeholders)
        self.removed_imports: set = set()
        self.events: list = []
        self.helpers: set = set()
        self.roots: set = {"mindspore", "nn", "ops"}
        self.adapters: dict = {}
        self.cell_classes: set = set()
        self.sequential_classes: set = set()
        self.class_attr_types: dict = {}
        self.class_stack: list = []
        self.narrow: list = [{}]
        self.pending_events: dict = {}
        self.ref_context = 0
        self._safe_cache: dict = {}
        self._collect_imports(tree)
        self.root_alias_map = self._choose_root_aliases(tree)
        self._collect_classes(tree)

    def visit_Name(self, node: ast.Name):
        if not isinstance(node.ctx, ast.Load):
            return node
        if node.id in self.aliases:
            return self.convert_reference(node, self.resolve(node))
        if node.id in self.externals:
            qualified, entry = self.externals[node.id]
            helper = entry.get("helper")
            self.need_helper(helper)
            shown = qualified.lstrip(".")
            if entry.get("stub"):
                self.event(
                    node,
                    False,
                    shown,
                    note=f"replaced by the stand-in '{helper}', which raises if called",
                    suggest=entry.get("suggest", ""),
                )
            else:
                self.event(node, True, shown, f"{helper} (MindSpore helper in this script)")
        elif node.id in self.unknown_imports:
            qualified = self.unknown_imports[node.id]
            self.need_helper("_UnconvertedAPI")
            self.event(
                node,
                False,
                qualified,
                note="it comes from a module that cannot be converted; a stand-in raises if it is used",
                suggest="Copy the definition into this script and convert it too.",
            )
        return node

    def visit_Attribute(self, node: ast.Attribute):
        key = self.resolve(node)
        if key is not None:
            if isinstance(node.ctx, ast.Load):
                return self.convert_reference(node, key)
            self.unconverted(node, key)
            return node
        node = self.generic_visit(node)
        if not isinstance(node, ast.Attribute):
            return node
        if node.attr == "forward" and self.class_stack and self.class_stack[-1].is_cell:
            value = node.value
            if (isinstance(value, ast.Name) and value.id == "self") or (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "super"
            ):
                node.attr = "construct"
                return node
        api = self.table.get("torch.Tensor." + node.attr)
        if api is not None and api.attribute and isinstance(node.ctx, ast.Load):
            variant = api.variants[0]
            result = Renderer(
                runtime_binding(api) if api.sig else empty_binding(),
                node.value,
                self.render_context(),
            ).render(variant.template)
            self.event(
                result, True, torch_display(api.key), describe_template(variant.template), src=node
            )
            return result
        renames = self.type_renames(node.value)
        if renames is not None and node.attr in renames:
            node._mc_typed = True
            new = renames[node.attr]
            if new != node.attr:
                self.event(
                    node,
                    True,
                    f".{node.attr}",
                    f".{new}",
                    note="MindSpore names this attribute differently",
                )
                node.attr = new
        return node

    def visit_Compare(self, node: ast.Compare):
        node = self.generic_visit(node)
        left = node.left
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Is, ast.IsNot))
            and isinstance(node.comparators[0], ast.Constant)
            and node.comparators[0].value is None
            and isinstance(left, ast.Attribute)
            and left.attr in TORCH_PARAM_NAMES
            and not getattr(left, "_mc_typed", False)
            and not (isinstance(left.value, ast.Name) and left.value.id == "self")
        ):
            self.need_helper("_torch_param")
            node.left = ast.Call(
                func=ast.Name(id="_torch_param", ctx=ast.Load()),
                args=[left.value, ast.Constant(left.attr)],
                keywords=[],
            )
        return node

    # ---- statements
    def visit_Import(self, node):
        if id(node) in self.removed_imports:
            return None
        return node

    def visit_ImportFrom(self, node):
        if id(node) in self.removed_imports:
            return None
        return node

    def visit_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Call):
            node.value._mc_stmt = True
        value = self.visit(node.value)
        target = getattr(value, "_mc_assign_to", None)
        if target is not None:
            del value._mc_assign_to
            set_store(target)
            return ast.Assign(
                targets=[target], value=value, lineno=node.lineno, col_offset=node.col_offset
            )
        node.value = value
        return node

    def visit_If(self, node: ast.If):
        scope = self.narrowing(node.test)
        self.narrow.append(scope)
        node.test = self.visit(node.test)
        node.body = self.visit_block(node.body)
        self.narrow.pop()
        node.orelse = self.visit_block(node.orelse)
        return node

    def visit_block(self, statements):
        out = []
        for stmt in statements:
            result = self.visit(stmt)
            if result is None:
                continue
            out.extend(result if isinstance(result, list) else [result])
        return out

    def narrowing(self, test) -> dict:
        tests = (
            test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        )
        scope = {}
        for item in tests:
            if not (
                isinstance(item, ast.Call)
                and isinstance(item.func, ast.Name)
                and item.func.id == "isinstance"
                and len(item.args) == 2
                and isinstance(item.args[0], ast.Name)
            ):
                continue
            classes = item.args[1].elts if isinstance(item.args[1], ast.Tuple) else [item.args[1]]
            keys = [self.resolve(c) for c in classes]
            if not keys or any(k is None or k not in self.table.param_renames for k in keys):
                continue
            renames = [self.table.param_renames[k] for k in keys]
            combined = {}
            for attr in set().union(*renames):
                targets = {r.get(attr) for r in renames}
                if len(targets) == 1 and None not in targets:
                    combined[attr] = targets.pop()
            scope[item.args[0].id] = combined
        return scope

    def handle_decorators(self, node) -> bool:
        """Apply decorator mappings; False when the whole definition must go."""
        kept = []
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            key = self.resolve(target)
            api = self.table.get(key) if key else None
            if api is not None and api.decorator == "remove":
                self.pending_events.setdefault(id(node), []).append(
                    (torch_display(key), "(decorator removed)")
                )
                continue
            if api is not None and api.decorator == "drop_def":
                return False
            kept.append(dec)
        node.decorator_list = kept
        return True

    def prune_body(self, body: list) -> list:
        """Drop TorchScript overload stubs and apply decorator removals before visiting."""
        out = []
        dropped: dict = {}
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if not self.handle_decorators(stmt):
                    dropped[stmt.name] = dropped.get(stmt.name, 0) + 1
                    continue
                if stmt.name in dropped:
                    self.pending_events.setdefault(id(stmt), []).append(
                        (
                            "torch.jit._overload_method",
                            f"(removed {dropped.pop(stmt.name)} overload stub(s))",
                        )
                    )
            out.append(stmt)
        return out

    def visit_Module(self, node: ast.Module):
        node.body = self.prune_body(node.body)
        node.body = self.visit_block(node.body)
        return node

    def visit_arg(self, node: ast.arg):
        if node.annotation is not None:
            self.ref_context += 1
            node.annotation = self.visit(node.annotation)
            self.ref_context -= 1
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign):
        self.ref_context += 1
        node.annotation = self.visit(node.annotation)
        self.ref_context -= 1
        node.target = self.visit(node.target)
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_FunctionDef(self, node):
        node.body = self.prune_body(node.body)
        self._flush_pending(node)
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        if node.returns is not None:
            self.ref_context += 1
            node.returns = self.visit(node.returns)
            self.ref_context -= 1
        node.body = self.visit_block(node.body) or [ast.Pass()]
        return node

    def visit_ClassDef(self, node: ast.ClassDef):
        is_cell = node.name in self.cell_classes
        base_key = None
        for base in node.bases:
            key = self.resolve(base)
            if key is not None:
                base_key = key
                break
        node.body = self.prune_body(node.body)
        self._flush_pending(node)
        node.bases = [self.visit_base(b) for b in node.bases]
        node.keywords = [self.visit(k) for k in node.keywords]
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        if is_cell:
            names = {
                s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            for stmt in node.body:
                if (
                    isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and stmt.name == "forward"
                    and "construct" not in names
                ):
                    stmt.name = "construct"
                    self.event(stmt, True, "nn.Module.forward", "nn.Cell.construct")
        self.class_stack.append(ClassInfo(node.name, is_cell, base_key))
        self.narrow.append({})
        node.body = self.visit_block(node.body) or [ast.Pass()]
        self.narrow.pop()
        self.class_stack.pop()
        if node.name in self.sequential_classes:
            self._sync_sequential_init(node)
        return node

    def visit_base(self, base):
        key = self.resolve(base)
        api = self.table.get(key) if key else None
        if api is not None and api.base:
            new = self.build_name(api.base)
            self.event(
                new,
                True,
                torch_display(key),
                api.base,
                note="as a base class it keeps PyTorch's constructor arguments",
                src=base,
            )
            return new
        self.ref_context += 1
        try:
            return self.visit(base)
        finally:
            self.ref_context -= 1

    def _sync_sequential_init(self, node: ast.ClassDef):
        """nn.Sequential runs children set as attributes; SequentialCell needs telling."""
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                sets_attributes = any(
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    for sub in ast.walk(stmt)
                    if isinstance(sub, ast.Assign)
                    for t in sub.targets
                )
                if sets_attributes:
                    self.need_helper("_ms_sync_sequential")
                    call = ast.Expr(
                        value=ast.Call(
                            func=ast.Name(id="_ms_sync_sequential", ctx=ast.Load()),
                            args=[ast.Name(id="self", ctx=ast.Load())],
                            keywords=[],
                        )
                    )
                    stmt.body.append(call)
                    self.event(
                        call.value,
                        True,
                        "nn.Sequential (children set as attributes)",
                        "_ms_sync_sequential",
                        src=stmt,
                    )
