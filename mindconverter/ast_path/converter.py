"""The deprecated AST path: rewrite a PyTorch model script into a MindSpore script.

``convert_source`` does the work on text and never raises for a script Python can parse: when
the rewritten tree cannot be produced it falls back to the original code with every PyTorch
use marked. ``convert_script`` adds the file handling (errors from :mod:`mindconverter.errors`,
atomic writes, no silent overwrite).
"""

from __future__ import annotations

import ast
import copy
import io
import shutil
import subprocess
import sys
import tokenize
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..errors import make_error
from ..outputs.atomic import AtomicOutputs, check_targets, prepare_folder
from .mapping import (
    PARAM_LIKE_ATTRS,
    ROOT_IMPORTS,
    TORCH_PARAM_NAMES,
    Api,
    BindError,
    Binding,
    DynamicArgs,
    RenderContext,
    Renderer,
    bind,
    conditions_hold,
    describe_template,
    dotted,
    load_table,
    runtime_binding,
    sig_params,
    unused_supplied,
)

DEPRECATION = (
    "[Deprecated] The --in_file (script/AST) conversion is deprecated and converts only the APIs in "
    "its mapping table. Export the model to ONNX (torch.onnx.export) and convert it with "
    "`mindconverter --model_file model.onnx` for a complete conversion with weights."
)

HELPERS_FILE = Path(__file__).with_name("helpers_src.py")

# Method names that plain Python objects also have: kept unchanged and not reported, since the
# receiver is most likely not a tensor.
GENERIC_METHODS = {
    "add",
    "split",
    "sort",
    "count",
    "index",
    "copy",
    "pop",
    "items",
    "keys",
    "values",
    "update",
    "append",
    "extend",
    "insert",
    "remove",
    "join",
    "format",
    "replace",
    "strip",
    "all",
    "any",
    "item",
    "tolist",
    "max",
    "min",
    "sum",
    "mean",
    "round",
    "abs",
    "flip",
    "log",
    "exp",
    "sqrt",
    "apply",
    "type",
    "float",
    "int",
    "bool",
    "sub",
    "mul",
    "div",
    "eq",
    "ne",
    "lt",
    "t",
    "dim",
    "register_buffer",
    "pow",
    "norm",
    "numel",
    "prod",
    "expand",
}

MS_DTYPES = {
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool_",
    "complex64",
    "complex128",
}


@dataclass
class Event:
    """One line of the report."""

    node: ast.AST | None
    converted: bool
    torch_name: str
    ms_name: str = ""
    note: str = ""
    suggest: str = ""
    src_line: int = 0
    src_col: int = 0
    line: int = 0
    col: int = 0

    def text(self) -> str:
        where = f"line {self.line}:{self.col}:"
        if self.converted:
            msg = f"{where} [Convert] '{self.torch_name}' is converted to '{self.ms_name}'."
            if self.note:
                msg += f" Note: {self.note}."
            return msg
        msg = f"{where} [UnConvert] '{self.torch_name}' didn't convert."
        if self.note:
            msg += f" {self.note[:1].upper()}{self.note[1:]}."
        if self.suggest:
            msg += f" Suggestion: {self.suggest}"
        return msg


@dataclass
class SourceConversion:
    """The converted script, its report and the counts."""

    code: str
    report: str
    events: list = field(default_factory=list)
    fallback_reason: str = ""

    @property
    def converted(self) -> int:
        return sum(1 for e in self.events if e.converted)

    @property
    def unconverted(self) -> int:
        return sum(1 for e in self.events if not e.converted)

    @property
    def converted_rate(self) -> float:
        total = self.converted + self.unconverted
        return 100.0 if total == 0 else 100.0 * self.converted / total


@dataclass
class ScriptConversionResult:
    """What :func:`convert_script` wrote."""

    script_path: Path
    report_path: Path
    converted: int
    unconverted: int
    converted_rate: float
    events: list = field(default_factory=list, repr=False)


def torch_display(key: str) -> str:
    """The familiar spelling of a PyTorch API in reports ('nn.Linear', 'F.relu', 'torch.cat')."""
    if key.startswith("torch.nn.functional."):
        return "F." + key[len("torch.nn.functional.") :]
    if key.startswith("torch.nn.") and not key.startswith("torch.nn.init."):
        return key[len("torch.") :]
    if key.startswith("torch.nn.init."):
        return "nn.init." + key[len("torch.nn.init.") :]
    return key


def normalize_key(key: str) -> str:
    """Canonical spelling of a torch path (torch.nn.modules.conv.Conv2d -> torch.nn.Conv2d)."""
    parts = key.split(".")
    if parts[:3] == ["torch", "nn", "modules"]:
        rest = parts[3:]
        if len(rest) >= 2:
            rest = rest[1:]
        return ".".join(["torch", "nn"] + rest)
    if parts[:2] == ["torch", "functional"]:
        return ".".join(["torch"] + parts[2:])
    return key


# --- helper sources --------------------------------------------------------------------------


@cache
def helper_definitions() -> dict:
    """name -> (order, node) for every top-level definition of helpers_src.py."""
    tree = ast.parse(HELPERS_FILE.read_text(encoding="utf-8"))
    defs = {}
    for order, node in enumerate(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defs[node.name] = (order, node)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            defs[node.targets[0].id] = (order, node)
    return defs


def helper_closure(names: set) -> list:
    """The helper definitions for `names` plus everything they use, in file order."""
    defs = helper_definitions()
    wanted = set()
    todo = [n for n in names if n in defs]
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for sub in ast.walk(defs[name][1]):
            if (
                isinstance(sub, ast.Name)
                and sub.id in defs
                and sub.id not in wanted
                and sub.id != name
            ):
                todo.append(sub.id)
    return [copy.deepcopy(defs[n][1]) for n in sorted(wanted, key=lambda n: defs[n][0])]


# --- the transformer -------------------------------------------------------------------------


@dataclass
class _ClassInfo:
    name: str
    is_cell: bool
    base_key: str | None


class _Converter(ast.NodeTransformer):
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

    # ---- pre-passes
    def _is_torch_module(self, module: str) -> bool:
        return module.split(".")[0] in self.table.torch_family

    def _collect_imports(self, tree):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                torch_aliases = [a for a in node.names if self._is_torch_module(a.name)]
                if not torch_aliases:
                    continue
                if len(torch_aliases) != len(node.names):
                    node.names = [a for a in node.names if not self._is_torch_module(a.name)]
                else:
                    self.removed_imports.add(id(node))
                for alias in torch_aliases:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if not (node.level or self._is_torch_module(module)):
                    continue
                self.removed_imports.add(id(node))
                prefix = "." * node.level + module
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    local = alias.asname or alias.name
                    qualified = f"{prefix}.{alias.name}" if module else f"{prefix}{alias.name}"
                    entry = self.table.externals.get(alias.name)
                    if entry is not None and not module.startswith("torch."):
                        self.externals[local] = (qualified, entry)
                    elif module.split(".")[0] == "torch":
                        self.aliases[local] = normalize_key(qualified)
                    elif entry is not None:
                        self.externals[local] = (qualified, entry)
                    else:
                        self.unknown_imports[local] = qualified

    def _choose_root_aliases(self, tree) -> dict:
        bound: dict = {}
        for node in ast.walk(tree):
            names = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.append((node.name, "def"))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.append((node.id, "assign"))
            elif isinstance(node, ast.arg):
                names.append((node.arg, "arg"))
            elif (
                isinstance(node, (ast.Import, ast.ImportFrom))
                and id(node) not in self.removed_imports
            ):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    mod = (
                        alias.name
                        if isinstance(node, ast.Import)
                        else f"{node.module}.{alias.name}"
                    )
                    names.append((local, "import:" + mod))
            for name, how in names:
                bound.setdefault(name, set()).add(how)
        mapping = {}
        natural = {
            "np": "import:numpy",
            "math": "import:math",
            "contextlib": "import:contextlib",
            "typing": "import:typing",
        }
        for root in ROOT_IMPORTS:
            uses = bound.get(root, set())
            if not uses or uses == {natural.get(root)}:
                mapping[root] = root
            else:
                candidate = f"ms_{root}" if not root.startswith("ms") else f"{root}_"
                while candidate in bound:
                    candidate += "_"
                mapping[root] = candidate
        return mapping

    def _collect_classes(self, tree):
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        helper_cells = {
            "Conv2dNormActivation",
            "ConvNormActivation",
            "SqueezeExcitation",
            "StochasticDepth",
            "Permute",
            "MLP",
        }
        changed = True
        while changed:
            changed = False
            for cls in classes:
                if cls.name in self.cell_classes:
                    continue
                for base in cls.bases:
                    key = self.resolve(base)
                    is_cell = (
                        (
                            key is not None
                            and key.startswith("torch.nn.")
                            and key.count(".") == 2
                            and key.split(".")[-1][:1].isupper()
                        )
                        or (isinstance(base, ast.Name) and base.id in self.cell_classes)
                        or (
                            isinstance(base, ast.Name)
                            and base.id in self.externals
                            and self.externals[base.id][1].get("helper") in helper_cells
                        )
                    )
                    if is_cell:
                        self.cell_classes.add(cls.name)
                        changed = True
                        break
        changed = True
        while changed:
            changed = False
            for cls in classes:
                if cls.name in self.sequential_classes:
                    continue
                for base in cls.bases:
                    if self.resolve(base) == "torch.nn.Sequential" or (
                        isinstance(base, ast.Name) and base.id in self.sequential_classes
                    ):
                        self.sequential_classes.add(cls.name)
                        changed = True
                        break
        for cls in classes:
            types = {}
            for node in ast.walk(cls):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    key = self.resolve(node.value.func)
                    if key is None or key not in self.table.param_renames:
                        continue
                    for target in node.targets:
                        if (
                            isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == "self"
                        ):
                            types[target.attr] = key
            self.class_attr_types[cls.name] = types

    # ---- helpers
    def resolve(self, node) -> str | None:
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return normalize_key(".".join([self.aliases[node.id]] + list(reversed(chain))))
        return None

    def root_alias(self, root: str) -> str:
        self.roots.add(root)
        return self.root_alias_map.get(root, root)

    def need_helper(self, name: str):
        self.helpers.add(name)

    def build_name(self, dotted_name: str) -> ast.expr:
        parts = dotted_name.split(".")
        root = parts[0]
        if root in ROOT_IMPORTS:
            root = self.root_alias(root)
        elif root in self.helper_names:
            self.need_helper(root)
        node: ast.expr = ast.Name(id=root, ctx=ast.Load())
        for part in parts[1:]:
            node = ast.Attribute(value=node, attr=part, ctx=ast.Load())
        return node

    def event(self, node, converted, torch_name, ms_name="", note="", suggest="", src=None):
        src = src if src is not None else node
        self.events.append(
            Event(
                node=node,
                converted=converted,
                torch_name=torch_name,
                ms_name=ms_name,
                note=note,
                suggest=suggest,
                src_line=getattr(src, "lineno", 0),
                src_col=getattr(src, "col_offset", 0),
            )
        )

    def unconverted(self, node, key, note="", src=None):
        self.event(
            node, False, torch_display(key), note=note, suggest=self.table.suggestion(key), src=src
        )

    def render_context(self, statement=False) -> RenderContext:
        ctx = RenderContext(
            root_alias=self.root_alias,
            need_helper=self.need_helper,
            helper_names=self.helper_names,
            param_expr=self.param_expr,
            is_param_like=self.is_param_like,
            dtype_attr=self.is_dtype,
        )
        ctx.statement = statement
        return ctx

    def param_expr(self, node):
        if isinstance(node, ast.Attribute) and node.attr == "data":
            node = node.value
        if (
            isinstance(node, ast.Attribute)
            and node.attr in TORCH_PARAM_NAMES
            and not getattr(node, "_mc_typed", False)
            and not (isinstance(node.value, ast.Name) and node.value.id == "self")
        ):
            self.need_helper("_torch_param")
            return ast.Call(
                func=ast.Name(id="_torch_param", ctx=ast.Load()),
                args=[node.value, ast.Constant(node.attr)],
                keywords=[],
            )
        return node

    def is_param_like(self, node) -> bool:
        return isinstance(node, ast.Attribute) and (
            node.attr == "data"
            or node.attr in PARAM_LIKE_ATTRS
            or getattr(node, "_mc_typed", False)
        )

    def is_dtype(self, node) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.root_alias_map.get("mindspore", "mindspore")
            and node.attr in MS_DTYPES
        )

    def type_renames(self, value) -> dict | None:
        if isinstance(value, ast.Name) and value.id == "self":
            if self.class_stack and self.class_stack[-1].base_key in self.table.param_renames:
                return self.table.param_renames[self.class_stack[-1].base_key]
            return None
        if isinstance(value, ast.Name):
            for scope in reversed(self.narrow):
                if value.id in scope:
                    return scope[value.id]
            return None
        if (
            isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id == "self"
            and self.class_stack
        ):
            key = self.class_attr_types.get(self.class_stack[-1].name, {}).get(value.attr)
            if key is not None:
                return self.table.param_renames.get(key, {})
        return None

    # ---- adapters (PyTorch signature known only at run time)
    def adapter_for(self, api: Api, method: bool) -> str | None:
        name = "_torch_" + api.key[len("torch.") :].replace(".", "_")
        if name in self.adapters:
            return name
        variant = next((v for v in reversed(api.variants) if not v.conds), None)
        if api.sig is None or variant is None or variant.template is None:
            return None
        binding = runtime_binding(api)
        receiver = ast.Name(id="self", ctx=ast.Load()) if method else None
        try:
            body = Renderer(binding, receiver, self.render_context()).render(variant.template)
        except (BindError, DynamicArgs, ValueError):
            return None
        params = ("self, " if method else "") + api.sig_text
        fn = ast.parse(f"def {name}({params}):\n    return 0").body[0]
        doc = f"PyTorch's {torch_display(api.key)} signature, building {describe_template(variant.template)}."
        fn.body = [ast.Expr(value=ast.Constant(doc)), ast.Return(value=body)]
        self.adapters[name] = fn
        return name

    def reference_is_safe(self, api: Api) -> bool:
        """Can code that calls a reference to `api` with PyTorch's usual arguments call the
        MindSpore class directly? (Required arguments pass through unchanged, no optional
        argument changes meaning, and no `inplace` flag callers like to pass.)"""
        if api.key in self._safe_cache:
            return self._safe_cache[api.key]
        safe = False
        positional, kwonly, defaults, required = sig_params(api.sig)
        if "inplace" not in positional + kwonly and api.sig.vararg is None:
            binding = Binding(
                supplied={p: ast.Name(id=p, ctx=ast.Load()) for p in required},
                defaults=defaults,
                vararg=None,
                kwarg=api.sig.kwarg.arg if api.sig.kwarg else None,
            )
            variant = next((v for v in api.variants if conditions_hold(v.conds, binding)), None)
            try:
                result = (
                    Renderer(binding, None, self.render_context()).render(variant.template)
                    if variant and variant.template
                    else None
                )
            except (BindError, DynamicArgs, ValueError):
                result = None
            safe = (
                isinstance(result, ast.Call)
                and not result.keywords
                and [getattr(a, "id", None) for a in result.args] == required
            )
        self._safe_cache[api.key] = safe
        return safe

    def class_adapter_for(self, api: Api, ref: str) -> str | None:
        """A subclass of the MindSpore class whose constructor takes PyTorch's arguments."""
        name = "_torch_" + api.key[len("torch.") :].replace(".", "_")
        if name in self.adapters:
            return name
        variant = next((v for v in reversed(api.variants) if not v.conds), None)
        if variant is None or variant.template is None:
            return None
        try:
            body = Renderer(runtime_binding(api), None, self.render_context()).render(
                variant.template
            )
        except (BindError, DynamicArgs, ValueError):
            return None
        if not (
            isinstance(body, ast.Call)
            and dotted(body.func)
            == ref.replace(ref.split(".")[0], self.root_alias(ref.split(".")[0]), 1)
        ):
            return self.adapter_for(api, method=False)
        cls = ast.parse(
            f"class {name}({ast.unparse(body.func)}):\n"
            f"    def __init__(self, {api.sig_text}):\n"
            f"        super().__init__()\n"
        ).body[0]
        cls.body.insert(
            0,
            ast.Expr(
                value=ast.Constant(
                    f"{ref} taking PyTorch's {torch_display(api.key)} constructor arguments."
                )
            ),
        )
        init = cls.body[1]
        init.body[0].value.args = body.args
        init.body[0].value.keywords = body.keywords
        self.adapters[name] = cls
        return name

    # ---- calls
    def convert_call(self, node: ast.Call, key: str, receiver=None, statement=False):
        api = self.table.get(key)
        display = torch_display(key)
        if api is None:
            prefix, _, last = key.rpartition(".")
            papi = self.table.get(prefix)
            ref = papi.reference() if papi else None
            if ref and last.startswith("__"):
                node.func = ast.Attribute(value=self.build_name(ref), attr=last, ctx=ast.Load())
                self.event(node, True, display, f"{ref}.{last}")
                return node
            if receiver is not None:
                node.func.value = receiver
            self.unconverted(node, key)
            return node
        if api.same:
            node.func.value = receiver
            if key.rsplit(".", 1)[1] not in GENERIC_METHODS:
                self.event(node, True, display, api.ms_display)
            return node
        if api.name_only is not None:
            node.func = self.build_name(api.name_only)
            if api.stub:
                self.event(
                    node,
                    False,
                    display,
                    note=f"replaced by the stand-in '{api.name_only}', which raises if called",
                    suggest=api.suggest,
                )
            else:
                self.event(node, True, display, api.name_only)
            return node
        if api.attribute or api.sig is None:
            if receiver is not None:
                node.func.value = receiver
            self.unconverted(node, key)
            return node
        try:
            binding = bind(api, node.args, node.keywords)
        except DynamicArgs:
            return self.call_through_adapter(node, api, receiver, display)
        except BindError as exc:
            if receiver is not None:
                # a method call that does not fit the tensor method is most likely not on a tensor
                node.func.value = receiver
                return node
            self.unconverted(
                node, key, note=f"its arguments do not match PyTorch's signature ({exc})"
            )
            return node
        variant = next((v for v in api.variants if conditions_hold(v.conds, binding)), None)
        if variant is None or variant.template is None:
            if receiver is not None:
                node.func.value = receiver
            self.unconverted(node, key, note="this form of the call has no MindSpore counterpart")
            return node
        ctx = self.render_context(statement)
        try:
            result = Renderer(binding, receiver, ctx).render(variant.template)
        except DynamicArgs:
            return self.call_through_adapter(node, api, receiver, display)
        except BindError as exc:
            if receiver is not None:
                node.func.value = receiver
            self.unconverted(node, key, note=str(exc))
            return node
        notes = list(ctx.notes)
        dropped = unused_supplied(api, binding, variant.template)
        if dropped:
            notes.append(
                f"argument(s) {', '.join(repr(d) for d in dropped)} have no MindSpore counterpart and were dropped"
            )
        self.event(
            result,
            True,
            display,
            describe_template(variant.template),
            note="; ".join(notes),
            src=node,
        )
        return result

    def call_through_adapter(self, node, api, receiver, display):
        name = self.adapter_for(api, method=receiver is not None)
        if name is None:
            if receiver is not None:
                node.func.value = receiver
            self.unconverted(node, api.key, note="its arguments are only known at run time")
            return node
        args = ([receiver] if receiver is not None else []) + node.args
        new = ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=node.keywords)
        self.event(
            new,
            True,
            display,
            name,
            note="arguments are resolved at run time by a generated adapter",
            src=node,
        )
        return new

    def method_api(self, func: ast.Attribute) -> Api | None:
        receiver = func.value
        if isinstance(
            receiver,
            (
                ast.Constant,
                ast.JoinedStr,
                ast.List,
                ast.Dict,
                ast.Set,
                ast.Tuple,
                ast.ListComp,
                ast.DictComp,
                ast.SetComp,
            ),
        ):
            return None
        if isinstance(receiver, ast.Name) and (
            receiver.id in self.externals or receiver.id in self.unknown_imports
        ):
            return None
        is_self = (isinstance(receiver, ast.Name) and receiver.id == "self") or (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "super"
        )
        prefixes = ("torch.nn.Module.",) if is_self else ("torch.nn.Module.", "torch.Tensor.")
        for prefix in prefixes:
            api = self.table.get(prefix + func.attr)
            if api is not None and not api.attribute:
                return api
        return None

    def visit_Call(self, node: ast.Call):
        statement = getattr(node, "_mc_stmt", False)
        func = node.func
        # functools.partial(torch_api, ...) -> partial(adapter, ...)
        if (
            isinstance(func, (ast.Name, ast.Attribute))
            and (dotted(func) or "").split(".")[-1] == "partial"
            and node.args
            and self.resolve(node.args[0]) is not None
        ):
            key = self.resolve(node.args[0])
            api = self.table.get(key)
            if (
                api is not None
                and api.sig is not None
                and not key.startswith(("torch.Tensor.", "torch.nn.Module."))
            ):
                name = self.adapter_for(api, method=False)
                if name is not None:
                    src = node.args[0]
                    node.args[0] = ast.Name(id=name, ctx=ast.Load())
                    self.event(
                        node.args[0],
                        True,
                        torch_display(key),
                        name,
                        note="used through functools.partial, so a PyTorch-signature adapter is generated",
                        src=src,
                    )
                    node.args[1:] = [self.visit(a) for a in node.args[1:]]
                    node.keywords = [self.visit(k) for k in node.keywords]
                    return node
        # super().__init__(...) of a class derived from a PyTorch layer with its own signature
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "__init__"
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
            and self.class_stack
            and self.class_stack[-1].base_key
        ):
            return self.convert_super_init(node)
        if (
            isinstance(func, ast.Name)
            and func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            node.args[0] = self.visit(node.args[0])
            self.ref_context += 1
            node.args[1] = self.visit(node.args[1])
            self.ref_context -= 1
            return node
        key = self.resolve(func)
        if key is not None:
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return self.convert_call(node, key, statement=statement)
        if isinstance(func, ast.Attribute) and self.resolve(func.value) is None:
            api = self.method_api(func)
            if api is not None:
                receiver = self.visit(func.value)
                node.args = [self.visit(a) for a in node.args]
                node.keywords = [self.visit(k) for k in node.keywords]
                return self.convert_call(node, api.key, receiver=receiver, statement=statement)
        return self.generic_visit(node)

    def convert_super_init(self, node: ast.Call):
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        key = self.class_stack[-1].base_key
        api = self.table.get(key)
        if api is None or api.sig is None or not api.variants or api.base:
            return node
        try:
            binding = bind(api, node.args, node.keywords)
            variant = next((v for v in api.variants if conditions_hold(v.conds, binding)), None)
            if variant is None or variant.template is None:
                raise BindError("no variant")
            result = Renderer(binding, None, self.render_context()).render(variant.template)
        except (BindError, DynamicArgs, ValueError):
            self.unconverted(
                node, key, note="the arguments passed to the base class could not be mapped"
            )
            return node
        if not isinstance(result, ast.Call):
            return node
        node.args, node.keywords = result.args, result.keywords
        self.event(
            node,
            True,
            torch_display(key) + ".__init__",
            describe_template(variant.template) + ".__init__",
        )
        return node

    # ---- names and attributes
    def convert_reference(self, node, key):
        api = self.table.get(key)
        display = torch_display(key)
        if api is not None and not api.attribute:
            ref = api.reference()
            if (
                ref is not None
                and not self.ref_context
                and api.sig is not None
                and not self.reference_is_safe(api)
            ):
                name = self.class_adapter_for(api, ref)
                if name is not None:
                    new = ast.Name(id=name, ctx=ast.Load())
                    self.event(
                        new,
                        True,
                        display,
                        name,
                        note=f"used as a value; this subclass of {ref} takes PyTorch's constructor arguments",
                        src=node,
                    )
                    return new
            if ref is not None:
                new = self.build_name(ref)
                if api.stub:
                    self.event(
                        new,
                        False,
                        display,
                        note=f"replaced by the stand-in '{ref}', which raises if called",
                        suggest=api.suggest,
                        src=node,
                    )
                else:
                    self.event(new, True, display, ref, src=node)
                return new
            if api.sig is not None and not key.startswith(("torch.Tensor.", "torch.nn.Module.")):
                name = self.adapter_for(api, method=False)
                if name is not None:
                    new = ast.Name(id=name, ctx=ast.Load())
                    self.event(
                        new,
                        True,
                        display,
                        name,
                        note="used as a value, so a PyTorch-signature adapter is generated",
                        src=node,
                    )
                    return new
        prefix, _, last = key.rpartition(".")
        papi = self.table.get(prefix)
        ref = papi.reference() if papi else None
        if ref and last.startswith("__"):
            new = ast.Attribute(value=self.build_name(ref), attr=last, ctx=ast.Load())
            self.event(new, True, display, f"{ref}.{last}", src=node)
            return new
        self.unconverted(node, key)
        return node

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
                runtime_binding(api) if api.sig else _empty_binding(),
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
            _set_store(target)
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

    def _flush_pending(self, node):
        for torch_name, ms_name in self.pending_events.pop(id(node), []):
            self.event(node, True, torch_name, ms_name)

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

    visit_AsyncFunctionDef = visit_FunctionDef

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
        self.class_stack.append(_ClassInfo(node.name, is_cell, base_key))
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


def _empty_binding():
    from .mapping import Binding

    return Binding(supplied={}, defaults={}, vararg=None, kwarg=None)


def _set_store(node):
    node.ctx = ast.Store()
    return node


# --- assembling the output -------------------------------------------------------------------


class _RootRenamer(ast.NodeTransformer):
    def __init__(self, mapping: dict):
        self.mapping = {k: v for k, v in mapping.items() if k != v}

    def visit_Name(self, node):
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node


def _header(conv: _Converter, tree: ast.Module) -> list:
    """Imports, helpers, stand-ins and adapters to put at the top of the converted script."""
    used_names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for adapter in conv.adapters.values():
        used_names |= {n.id for n in ast.walk(adapter) if isinstance(n, ast.Name)}
    # placeholders for torch names still referenced (unconverted code keeps its text)
    provided = set(conv.root_alias_map.values())
    placeholders = []
    for local, qualified in sorted(conv.aliases.items()):
        if local in used_names and local not in provided:
            placeholders.append((local, qualified))
    for local, qualified in sorted(conv.unknown_imports.items()):
        if local in used_names:
            placeholders.append((local, qualified))
    if placeholders:
        conv.need_helper("_UnconvertedAPI")
    ext_aliases = []
    for local, (_, entry) in sorted(conv.externals.items()):
        helper = entry.get("helper")
        if local in used_names:
            conv.need_helper(helper)
            if helper == "_Anything":
                ext_aliases.append((local, "_Anything()"))
            elif local != helper:
                ext_aliases.append((local, helper))
    helpers = helper_closure(conv.helpers)
    for helper in helpers:
        for sub in ast.walk(helper):
            if isinstance(sub, ast.Name) and sub.id in ("math", "mindspore", "nn", "ops"):
                conv.roots.add(sub.id)
    lines = []
    order = ["mindspore", "nn", "ops", "ms_init", "np", "math", "contextlib", "typing"]
    plain = [r for r in order if r in conv.roots and r in ("np", "math", "contextlib", "typing")]
    for root in plain:
        alias = conv.root_alias_map.get(root, root)
        module = {"np": "numpy"}.get(root, root)
        lines.append(f"import {module}" + (f" as {alias}" if alias != module else ""))
    ms_alias = conv.root_alias_map.get("mindspore", "mindspore")
    lines.append("import mindspore" + (f" as {ms_alias}" if ms_alias != "mindspore" else ""))
    parts = []
    for root in ("nn", "ops"):
        alias = conv.root_alias_map.get(root, root)
        parts.append(root + (f" as {alias}" if alias != root else ""))
    lines.append("from mindspore import " + ", ".join(parts))
    if "ms_init" in conv.roots:
        alias = conv.root_alias_map.get("ms_init", "ms_init")
        lines.append(f"from mindspore.common import initializer as {alias}")
    body = ast.parse("\n".join(lines) + "\n").body
    renamer = _RootRenamer(conv.root_alias_map)
    for helper in helpers:
        body.append(renamer.visit(helper))
    for local, helper in ext_aliases:
        body.append(ast.parse(f"{local} = {helper}").body[0])
    for local, qualified in placeholders:
        body.append(ast.parse(f"{local} = _UnconvertedAPI({qualified!r})").body[0])
    for adapter in conv.adapters.values():
        body.append(adapter)
    return body


def _insert_header(tree: ast.Module, header: list):
    """Imports go after the docstring and __future__ imports; helpers after the script's own
    leading imports."""
    index = 0
    body = tree.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        index = 1
    while (
        index < len(body)
        and isinstance(body[index], ast.ImportFrom)
        and body[index].module == "__future__"
    ):
        index += 1
    imports = [n for n in header if isinstance(n, (ast.Import, ast.ImportFrom))]
    rest = [n for n in header if not isinstance(n, (ast.Import, ast.ImportFrom))]
    after = index
    while after < len(body) and isinstance(body[after], (ast.Import, ast.ImportFrom)):
        after += 1
    tree.body = body[:index] + imports + body[index:after] + rest + body[after:]


def _fix_empty_bodies(tree):
    for node in ast.walk(tree):
        for field_name in ("body",):
            value = getattr(node, field_name, None)
            if isinstance(value, list) and not value and not isinstance(node, ast.Module):
                setattr(node, field_name, [ast.Pass()])
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                if not handler.body:
                    handler.body = [ast.Pass()]


def _ruff_binary() -> str | None:
    try:
        from ruff.__main__ import find_ruff_bin

        return find_ruff_bin()
    except Exception:
        return shutil.which("ruff")


def _format(code: str) -> str:
    """Format with ruff when available (same AST, so positions are recomputed afterwards)."""
    binary = _ruff_binary()
    if not binary:
        return code
    try:
        proc = subprocess.run(
            [
                binary,
                "format",
                "--isolated",
                "--line-length",
                "100",
                "--stdin-filename",
                "converted.py",
                "-",
            ],
            input=code,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return code
    if proc.returncode != 0 or not proc.stdout.strip():
        return code
    try:
        if ast.dump(ast.parse(proc.stdout)) != ast.dump(ast.parse(code)):
            return code
    except SyntaxError:
        return code
    return proc.stdout


def _positions(tree: ast.AST, code: str) -> dict:
    """id(node) -> (line, col) in `code`, by walking `tree` and the re-parsed code in lockstep."""
    reparsed = ast.parse(code)
    positions = {}

    def nodes(root):
        return (
            n
            for n in ast.walk(root)
            if not isinstance(
                n, (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
            )
        )

    for old, new in zip(nodes(tree), nodes(reparsed)):
        if type(old) is not type(new):
            break
        if hasattr(new, "lineno"):
            positions[id(old)] = (new.lineno, new.col_offset)
    return positions


def _unsafe_lines(code: str) -> set:
    """Lines whose end lies inside a string token (no comment may be appended there)."""
    unsafe = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                unsafe.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    lines = code.splitlines()
    for number, line in enumerate(lines, 1):
        if line.rstrip().endswith("\\"):
            unsafe.add(number)
    return unsafe


def _statement_starts(code: str) -> list:
    """(start, end, indent) of every statement, to find where a comment line may go."""
    spans = []
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return spans
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            spans.append((node.lineno, getattr(node, "end_lineno", node.lineno), node.col_offset))
    return spans


def _add_marks(code: str, events: list) -> str:
    """Append '# [UnConvert] ...' comments to the lines of unconverted APIs; lines positions of
    events are updated when a comment has to go on a line of its own."""
    marks: dict = {}
    for event in events:
        if not event.converted and event.line > 0:
            marks.setdefault(event.line, [])
            if event.torch_name not in marks[event.line]:
                marks[event.line].append(event.torch_name)
    if not marks:
        return code
    lines = code.split("\n")
    unsafe = _unsafe_lines(code)
    spans = _statement_starts(code)
    insert_before: dict = {}
    for line, names in marks.items():
        if line > len(lines):
            continue
        text = (
            "# [UnConvert] "
            + ", ".join(f"'{n}'" for n in names)
            + " didn't convert (see the report)"
        )
        if line not in unsafe:
            lines[line - 1] = lines[line - 1] + "  " + text
            continue
        enclosing = [s for s in spans if s[0] <= line <= s[1]]
        start, _, indent = max(enclosing, key=lambda s: s[0]) if enclosing else (line, line, 0)
        insert_before.setdefault(start, []).append(" " * indent + text)
    if not insert_before:
        return "\n".join(lines)
    out = []
    shift_at = []
    for number, line in enumerate(lines, 1):
        extra = insert_before.get(number, [])
        out.extend(extra)
        if extra:
            shift_at.append((number, len(extra)))
        out.append(line)
    for event in events:
        event.line += sum(count for start, count in shift_at if start <= event.line)
    return "\n".join(out)


def _report(events: list, name: str, fallback_reason: str, helpers: list) -> str:
    converted = sum(1 for e in events if e.converted)
    unconverted = len(events) - converted
    total = converted + unconverted
    rate = 100.0 if total == 0 else 100.0 * converted / total
    lines = ["[Start Convert]"]
    lines.extend(e.text() for e in events)
    lines.append("[Convert Over]")
    lines.append(f"Converted Rate: {rate:.2f}%.")
    lines.append("")
    lines.append(f"Script: {name}")
    lines.append(f"Converted: {converted}  Unconverted: {unconverted}")
    if fallback_reason:
        lines.append(
            f"The script could not be rewritten ({fallback_reason}); the output is the original code "
            "with every PyTorch use marked."
        )
    missing: dict = {}
    for event in events:
        if not event.converted:
            missing[event.torch_name] = missing.get(event.torch_name, 0) + 1
    if missing:
        lines.append(
            "Not converted: " + ", ".join(f"{k} ({v})" for k, v in sorted(missing.items()))
        )
    if helpers:
        lines.append("Helpers added to the script: " + ", ".join(helpers))
    lines.append("Line:column positions point into the converted script (columns count from 0).")
    lines.append(DEPRECATION)
    return "\n".join(lines) + "\n"


def _sort_events(events):
    events.sort(key=lambda e: (e.line, e.col))


def convert_source(source: str, name: str = "<script>") -> SourceConversion:
    """Convert PyTorch script text. Raises SyntaxError (or ValueError) only for unparsable input."""
    tree = ast.parse(source)
    try:
        return _convert_tree(tree, name)
    except Exception as exc:
        return _fallback(source, name, f"{type(exc).__name__}: {exc}")


def _convert_tree(tree: ast.Module, name: str) -> SourceConversion:
    conv = _Converter(tree)
    tree = conv.visit(tree)
    header = _header(conv, tree)
    _insert_header(tree, header)
    _fix_empty_bodies(tree)
    ast.fix_missing_locations(tree)
    code = _format(ast.unparse(tree) + "\n")
    positions = _positions(tree, code)
    for event in conv.events:
        pos = positions.get(id(event.node)) if event.node is not None else None
        if pos is not None:
            event.line, event.col = pos
        else:
            event.line, event.col = event.src_line, event.src_col
    events = conv.events
    _sort_events(events)
    code = _add_marks(code, events)
    _sort_events(events)
    ast.parse(code)  # the output must be valid Python; a failure here falls back
    helpers = sorted(n for n in {d.name if hasattr(d, "name") else "" for d in header} if n)
    return SourceConversion(code=code, report=_report(events, name, "", helpers), events=events)


def _fallback(source: str, name: str, reason: str) -> SourceConversion:
    """The original code with every PyTorch use marked (used if rewriting failed)."""
    events: list = []
    try:
        tree = ast.parse(source)
        conv = _Converter.__new__(_Converter)
        conv.table = load_table()
        conv.aliases, conv.externals, conv.unknown_imports, conv.removed_imports = {}, {}, {}, set()
        _Converter._collect_imports(conv, tree)
        seen = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in seen:
                key = _Converter.resolve(conv, node)
                if key is None:
                    continue
                for sub in ast.walk(node):
                    seen.add(id(sub))
                if isinstance(node, ast.Name) and key in conv.table.torch_family:
                    continue
                events.append(
                    Event(
                        node=None,
                        converted=False,
                        torch_name=torch_display(key),
                        suggest=conv.table.suggestion(key),
                        line=node.lineno,
                        col=node.col_offset,
                    )
                )
    except Exception:
        events = []
    _sort_events(events)
    code = source if source.endswith("\n") else source + "\n"
    try:
        marked = _add_marks(code, events)
        ast.parse(marked)
        code = marked
    except Exception:
        pass
    return SourceConversion(
        code=code, report=_report(events, name, reason, []), events=events, fallback_reason=reason
    )


# --- files -----------------------------------------------------------------------------------


def _read_script(path: Path) -> str:
    if not path.exists():
        raise make_error("FILE_NOT_FOUND", f"The script '{path}' does not exist.")
    if path.is_dir():
        raise make_error("FILE_IS_DIRECTORY", f"'{path}' is a directory, not a Python script.")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise make_error("SCRIPT_UNREADABLE", f"Cannot read '{path}': {exc.strerror}.") from None
    if not data.strip():
        raise make_error("FILE_EMPTY", f"The script '{path}' is empty.")
    if b"\x00" in data:
        raise make_error(
            "SCRIPT_UNREADABLE", f"'{path}' contains NUL bytes; it is not a Python script."
        )
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise make_error(
            "SCRIPT_UNREADABLE", f"'{path}' is not a text file Python can decode ({exc})."
        ) from None
    text = text.removeprefix("\ufeff")
    return text


def convert_script(
    in_file: str | Path,
    output_dir: str | Path,
    report_dir: str | Path | None = None,
    overwrite: bool = False,
) -> ScriptConversionResult:
    """Convert the PyTorch script `in_file`; write `<name>.py` to `output_dir` and
    `report_of_<name>.txt` to `report_dir` (default: `output_dir`)."""
    print(DEPRECATION, file=sys.stderr)
    path = Path(in_file)
    text = _read_script(path)
    try:
        compile(text, str(path), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        raise make_error(
            "SCRIPT_UNREADABLE", f"'{path}' is not valid Python: {exc.msg} (line {exc.lineno})."
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise make_error("SCRIPT_UNREADABLE", f"'{path}' cannot be parsed: {exc}.") from None
    output_dir = Path(output_dir)
    report_dir = Path(report_dir) if report_dir is not None else output_dir
    script_path = output_dir / (path.stem + ".py")
    report_path = report_dir / f"report_of_{path.stem}.txt"
    try:
        same = script_path.resolve() == path.resolve()
    except OSError:
        same = False
    if same:
        raise make_error(
            "BAD_ARGUMENT",
            f"The converted script would replace the input '{path}'; choose another --output folder.",
        )
    prepare_folder(output_dir)
    prepare_folder(report_dir)
    check_targets([script_path, report_path], overwrite)
    try:
        result = convert_source(text, path.name)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise make_error("SCRIPT_UNREADABLE", f"'{path}' cannot be parsed: {exc}.") from None
    with AtomicOutputs(overwrite=overwrite) as outputs:
        outputs.write_text(script_path, result.code)
        outputs.write_text(report_path, result.report)
        outputs.publish()
    return ScriptConversionResult(
        script_path=script_path,
        report_path=report_path,
        converted=result.converted,
        unconverted=result.unconverted,
        converted_rate=result.converted_rate,
        events=result.events,
    )
