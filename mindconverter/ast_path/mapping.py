"""The torch -> MindSpore mapping table and its small template language.

The table lives in ``mappings/*.json`` (shipped as package data). Each entry maps one PyTorch
API, by its canonical dotted name (``torch.nn.Conv2d``, ``torch.nn.functional.relu``,
``torch.Tensor.view``, ``torch.nn.Module.modules``, ``torch.nn.init.kaiming_normal_``), to:

``sig``
    PyTorch's signature as Python parameter syntax (``"input, dim=None, keepdim=False"``).
    Call arguments are bound to it like Python would. Without ``sig`` the arguments are kept
    as written and only the name changes (``"ms"`` is then a dotted name).
``ms``
    A Python expression template: names of ``sig`` parameters stand for the bound argument
    expressions (``self`` for a method's receiver), module roots ``nn``, ``ops``,
    ``mindspore``, ``ms_init``, ``np`` mean MindSpore's (renamed if the script already uses
    those names), and UPPER-CASE calls are macros evaluated at conversion time (see
    :data:`MACROS`). ``"same"`` keeps a tensor method call as written. A list of
    ``{"when": [...], "ms": ...}`` picks the first variant whose conditions hold
    (``given:p``, ``not_given:p``, ``int:p``); ``"ms": null`` means "not convertible in that
    form".
``ignore``
    Parameters that are dropped silently (``inplace``, ``device``...). Any other supplied
    parameter the template does not use is dropped with a note in the report.
``suggest``, ``note``, ``stub``, ``decorator``, ``aliases``
    Report suggestion; documentation note; "replaced by a stand-in that raises" (reported as
    not converted); how a decorator use is handled (``remove`` / ``drop_def``); extra keyword
    spellings.
"""

from __future__ import annotations

import ast
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

MAPPING_DIR = Path(__file__).with_name("mappings")
MAPPING_FILES = (
    "nn_layers.json",
    "functional.json",
    "torch_functions.json",
    "tensor_methods.json",
    "module_methods.json",
    "init.json",
)

# Module roots a template may use, and the import each needs in the converted script.
ROOT_IMPORTS = {
    "mindspore": "import mindspore",
    "nn": "from mindspore import nn",
    "ops": "from mindspore import ops",
    "ms_init": "from mindspore.common import initializer as ms_init",
    "np": "import numpy as np",
    "math": "import math",
    "contextlib": "import contextlib",
    "typing": "import typing",
}

TORCH_PARAM_NAMES = ("weight", "bias", "running_mean", "running_var")
PARAM_LIKE_ATTRS = TORCH_PARAM_NAMES + (
    "gamma",
    "beta",
    "embedding_table",
    "moving_mean",
    "moving_variance",
)


class BindError(Exception):
    """The call's arguments do not fit PyTorch's signature (or the template cannot use them)."""


class DynamicArgs(Exception):
    """The call uses *args/**kwargs that cannot be bound before run time."""


OMIT = object()


@dataclass
class Variant:
    conds: list
    template: ast.expr | None
    text: str | None


@dataclass
class Api:
    key: str
    group: str
    sig: ast.arguments | None = None
    sig_text: str | None = None
    variants: list = field(default_factory=list)
    same: bool = False
    name_only: str | None = None  # no sig: the MindSpore dotted name
    ignore: frozenset = frozenset()
    aliases: dict = field(default_factory=dict)
    stub: bool = False
    suggest: str = ""
    note: str = ""
    decorator: str | None = None
    attribute: bool = False
    base: str | None = None  # what a subclass derives from, when not the plain reference

    @property
    def ms_display(self) -> str:
        """Short MindSpore name for reports and docs."""
        if self.same:
            method = self.key.rsplit(".", 1)[1]
            return (
                "mindspore.Tensor." if self.key.startswith("torch.Tensor.") else "nn.Cell."
            ) + method
        if self.name_only is not None:
            return self.name_only
        for variant in self.variants:
            if variant.template is not None:
                return describe_template(variant.template)
        return ""

    def reference(self) -> str | None:
        """What a bare (uncalled) reference to the API becomes, if it has a simple answer."""
        if self.name_only is not None:
            return self.name_only
        if (
            self.same
            or not self.variants
            or self.key.startswith(("torch.Tensor.", "torch.nn.Module."))
        ):
            return None
        template = self.variants[-1].template
        if isinstance(template, ast.Call):
            name = dotted(template.func)
            if name and (
                name.split(".")[0] in ROOT_IMPORTS
                or name in ("_MSLayerNorm", "_MSMultiheadAttention")
            ):
                return name
        return None


def dotted(node: ast.AST) -> str | None:
    """'a.b.c' for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def describe_template(node: ast.expr) -> str:
    """A readable name for what a template produces ('nn.Conv2d', 'ops.flatten', ...)."""
    target = node
    while (
        isinstance(target, ast.Call)
        and isinstance(target.func, ast.Name)
        and target.func.id.isupper()
    ):
        # INPLACE(self, expr) / INIT(tensor, init) / SET(...): describe the interesting argument
        target = target.args[-1] if target.args else target
        if target is node:
            break
    if isinstance(target, ast.Call):
        name = dotted(target.func)
        if name:
            if name.startswith("self."):
                return "mindspore.Tensor." + name[5:]
            if name == "_OpCell" and target.args:
                inner = dotted(target.args[0])
                return f"_OpCell({inner})" if inner else "_OpCell"
            return name
        if isinstance(target.func, ast.Attribute) and isinstance(target.func.value, ast.Call):
            inner = describe_template(target.func.value)
            return f"{inner}.{target.func.attr}"
    text = ast.unparse(target)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_sig(text: str) -> ast.arguments:
    try:
        return ast.parse(f"def _f({text}): pass").body[0].args
    except SyntaxError as exc:  # a broken data file is a packaging bug
        raise ValueError(f"bad signature {text!r}: {exc}") from None


def parse_template(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"bad template {text!r}: {exc}") from None


@dataclass
class MappingTable:
    apis: dict
    unsupported: dict
    externals: dict
    torch_family: tuple
    param_renames: dict
    groups: list  # (file, title, description, [keys])

    def get(self, key: str) -> Api | None:
        return self.apis.get(key)

    def suggestion(self, key: str) -> str:
        """The suggestion for an unconverted API, looked up by longest known prefix."""
        api = self.apis.get(key)
        if api is not None and api.suggest:
            return api.suggest
        parts = key.split(".")
        for end in range(len(parts), 0, -1):
            hint = self.unsupported.get(".".join(parts[:end]))
            if hint:
                return hint
        return ""

    def count(self) -> int:
        """Number of PyTorch APIs mapped (module aliases like 'torch.nn' excluded)."""
        return sum(
            1 for key in self.apis if key not in ("torch", "torch.nn", "torch.nn.functional")
        )


def _load_api(key: str, entry: dict, group: str) -> Api:
    api = Api(key=key, group=group)
    api.ignore = frozenset(entry.get("ignore", ()))
    api.aliases = dict(entry.get("aliases", {}))
    api.stub = bool(entry.get("stub", False))
    api.suggest = entry.get("suggest", "")
    api.note = entry.get("note", "")
    api.decorator = entry.get("decorator")
    api.attribute = bool(entry.get("attribute", False))
    api.base = entry.get("base")
    ms = entry.get("ms")
    if "sig" in entry:
        api.sig_text = entry["sig"]
        api.sig = parse_sig(entry["sig"])
    if ms == "same":
        api.same = True
        return api
    if api.sig is None and not api.attribute:
        if not isinstance(ms, str):
            raise ValueError(f"{key}: an entry without 'sig' needs a dotted 'ms' name")
        api.name_only = ms
        return api
    variants = ms if isinstance(ms, list) else [{"ms": ms}]
    for variant in variants:
        text = variant.get("ms")
        api.variants.append(
            Variant(
                conds=list(variant.get("when", [])),
                template=parse_template(text) if text else None,
                text=text,
            )
        )
    return api


@cache
def load_table() -> MappingTable:
    """Read every mapping file once."""
    apis: dict = {}
    unsupported: dict = {}
    groups = []
    for name in MAPPING_FILES:
        data = json.loads((MAPPING_DIR / name).read_text(encoding="utf-8"))
        keys = []
        for key, entry in data["apis"].items():
            if key in apis:
                raise ValueError(f"{key} is mapped twice ({name})")
            apis[key] = _load_api(key, entry, name)
            keys.append(key)
        unsupported.update(data.get("unsupported", {}))
        groups.append((name, data.get("title", name), data.get("description", ""), keys))
    ext = json.loads((MAPPING_DIR / "externals.json").read_text(encoding="utf-8"))
    groups.append(
        ("externals.json", ext.get("title", ""), ext.get("description", ""), list(ext["names"]))
    )
    return MappingTable(
        apis=apis,
        unsupported=unsupported,
        externals=ext["names"],
        torch_family=tuple(ext.get("torch_family", ("torch",))),
        param_renames=ext.get("param_renames", {}),
        groups=groups,
    )


# --- binding ---------------------------------------------------------------------------------


@dataclass
class Binding:
    """Call arguments bound to PyTorch parameter names."""

    supplied: dict  # name -> expr | list (varargs) | dict (varkw)
    defaults: dict  # name -> default expr from the signature
    vararg: str | None
    kwarg: str | None
    runtime: bool = False  # adapter mode: every parameter is a run-time Name

    def given(self, name: str) -> bool:
        return name in self.supplied


def sig_params(sig: ast.arguments):
    positional = [a.arg for a in sig.posonlyargs + sig.args]
    pos_defaults = dict(zip(positional[len(positional) - len(sig.defaults) :], sig.defaults))
    kwonly = [a.arg for a in sig.kwonlyargs]
    kw_defaults = {a.arg: d for a, d in zip(sig.kwonlyargs, sig.kw_defaults) if d is not None}
    defaults = {**pos_defaults, **kw_defaults}
    required = [p for p in positional + kwonly if p not in defaults]
    return positional, kwonly, defaults, required


def bind(api: Api, args: list, keywords: list) -> Binding:
    """Bind call arguments to the API's PyTorch signature, as Python would."""
    positional, kwonly, defaults, required = sig_params(api.sig)
    vararg = api.sig.vararg.arg if api.sig.vararg else None
    kwarg = api.sig.kwarg.arg if api.sig.kwarg else None
    supplied: dict = {}
    for index, arg in enumerate(args):
        if isinstance(arg, ast.Starred):
            if index >= len(positional) and vararg:
                supplied.setdefault(vararg, []).extend(args[index:])
                break
            raise DynamicArgs()
        if index < len(positional):
            supplied[positional[index]] = arg
        elif vararg:
            supplied.setdefault(vararg, []).append(arg)
        else:
            raise BindError(f"too many positional arguments ({len(args)})")
    for kw in keywords:
        if kw.arg is None:
            raise DynamicArgs()
        name = api.aliases.get(kw.arg, kw.arg)
        if name not in positional and name not in kwonly:
            if name == "axis" and "dim" in positional + kwonly:
                name = "dim"
            elif name == "keepdims" and "keepdim" in positional + kwonly:
                name = "keepdim"
        if name in positional or name in kwonly:
            if name in supplied:
                raise BindError(f"argument '{name}' given twice")
            supplied[name] = kw.value
        elif kwarg:
            supplied.setdefault(kwarg, {})[kw.arg] = kw.value
        else:
            raise BindError(f"unexpected keyword argument '{kw.arg}'")
    missing = [p for p in required if p not in supplied]
    if missing:
        raise BindError(f"missing argument(s) {', '.join(missing)}")
    return Binding(supplied=supplied, defaults=defaults, vararg=vararg, kwarg=kwarg)


def runtime_binding(api: Api) -> Binding:
    """A binding where every parameter is the run-time name itself (for adapter functions)."""
    positional, kwonly, defaults, _ = sig_params(api.sig)
    supplied = {name: ast.Name(id=name, ctx=ast.Load()) for name in positional + kwonly}
    vararg = api.sig.vararg.arg if api.sig.vararg else None
    kwarg = api.sig.kwarg.arg if api.sig.kwarg else None
    return Binding(supplied=supplied, defaults=defaults, vararg=vararg, kwarg=kwarg, runtime=True)


def _is_int(node) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    )


def conditions_hold(conds: list, binding: Binding) -> bool:
    for cond in conds:
        kind, _, name = cond.partition(":")
        if binding.runtime:
            return False
        if kind == "given" and not binding.given(name):
            return False
        if kind == "not_given" and binding.given(name):
            return False
        if kind == "int" and not (binding.given(name) and _is_int(binding.supplied[name])):
            return False
    return True


def used_names(template: ast.expr) -> set:
    return {n.id for n in ast.walk(template) if isinstance(n, ast.Name)}


# --- rendering -------------------------------------------------------------------------------


class RenderContext:
    """What the renderer needs from the converter: module-root renaming, helper bookkeeping,
    statement context for in-place methods and a place for notes."""

    def __init__(
        self,
        root_alias: Callable[[str], str],
        need_helper: Callable[[str], None],
        helper_names: set,
        param_expr: Callable[[ast.expr], ast.expr],
        is_param_like: Callable[[ast.expr], bool],
        dtype_attr: Callable[[ast.expr], bool],
    ):
        self.root_alias = root_alias
        self.need_helper = need_helper
        self.helper_names = helper_names
        self.param_expr = param_expr
        self.is_param_like = is_param_like
        self.dtype_attr = dtype_attr
        self.statement = False
        self.notes: list = []


class Renderer:
    """Instantiates one template for one binding."""

    def __init__(self, binding: Binding, receiver: ast.expr | None, ctx: RenderContext):
        self.binding = binding
        self.receiver = receiver
        self.ctx = ctx
        self.used_once: set = set()
        self.p_value: ast.expr | None = None

    # values
    def _fresh(self, key, node):
        if key in self.used_once:
            return copy.deepcopy(node)
        self.used_once.add(key)
        return node

    def value_of(self, name: str):
        b = self.binding
        if name in b.supplied:
            value = b.supplied[name]
            if isinstance(value, list):
                return ast.Tuple(
                    elts=[self._fresh((name, i), v) for i, v in enumerate(value)], ctx=ast.Load()
                )
            if isinstance(value, dict):
                return ast.Dict(
                    keys=[ast.Constant(k) for k in value],
                    values=[self._fresh((name, k), v) for k, v in value.items()],
                )
            return self._fresh(name, value)
        if b.runtime and name in (b.vararg, b.kwarg):
            return ast.Name(id=name, ctx=ast.Load())
        if name == b.vararg:
            return ast.Tuple(elts=[], ctx=ast.Load())
        if name == b.kwarg:
            return ast.Dict(keys=[], values=[])
        if name in b.defaults:
            return copy.deepcopy(b.defaults[name])
        raise BindError(f"template uses unknown parameter '{name}'")

    def is_param(self, name: str) -> bool:
        b = self.binding
        return name in b.supplied or name in b.defaults or name in (b.vararg, b.kwarg)

    # the walk
    def render(self, node):
        if isinstance(node, ast.Name):
            if node.id == "self" and self.receiver is not None:
                return self._fresh("self", self.receiver)
            if node.id == "P" and self.p_value is not None:
                return copy.deepcopy(self.p_value)
            if self.is_param(node.id):
                return self.value_of(node.id)
            if node.id in ROOT_IMPORTS:
                return ast.Name(id=self.ctx.root_alias(node.id), ctx=ast.Load())
            if node.id in self.ctx.helper_names:
                self.ctx.need_helper(node.id)
            return ast.Name(id=node.id, ctx=type(node.ctx)())
        if isinstance(node, ast.Call):
            if (
                isinstance(node.func, ast.Name)
                and node.func.id.isupper()
                and node.func.id in MACROS
            ):
                return MACROS[node.func.id](self, node.args)
            return self._render_call(node)
        if isinstance(node, ast.AST):
            new = type(node)()
            for name, value in ast.iter_fields(node):
                if isinstance(value, list):
                    items = []
                    for item in value:
                        rendered = self.render(item) if isinstance(item, ast.AST) else item
                        if rendered is OMIT:
                            raise BindError("a required value is missing")
                        items.append(rendered)
                    setattr(new, name, items)
                elif isinstance(value, ast.AST):
                    rendered = self.render(value)
                    if rendered is OMIT:
                        raise BindError("a required value is missing")
                    setattr(new, name, rendered)
                else:
                    setattr(new, name, value)
            return new
        return node

    def _render_call(self, node: ast.Call) -> ast.Call:
        func = self.render(node.func)
        args = []
        omitted = False
        for arg in node.args:
            if (
                isinstance(arg, ast.Starred)
                and isinstance(arg.value, ast.Name)
                and arg.value.id == self.binding.vararg
            ):
                name = arg.value.id
                if self.binding.runtime or name not in self.binding.supplied:
                    if self.binding.runtime:
                        args.append(
                            ast.Starred(value=ast.Name(id=name, ctx=ast.Load()), ctx=ast.Load())
                        )
                    continue
                args.extend(
                    self._fresh((name, i), v) for i, v in enumerate(self.binding.supplied[name])
                )
                continue
            value = self.render(arg)
            if value is OMIT:
                omitted = True
                continue
            if omitted:
                raise BindError("an optional positional argument is missing before a given one")
            args.append(value)
        keywords = []
        for kw in node.keywords:
            if (
                kw.arg is None
                and isinstance(kw.value, ast.Name)
                and kw.value.id == self.binding.kwarg
            ):
                name = kw.value.id
                if self.binding.runtime:
                    keywords.append(ast.keyword(arg=None, value=ast.Name(id=name, ctx=ast.Load())))
                else:
                    for key, value in self.binding.supplied.get(name, {}).items():
                        keywords.append(ast.keyword(arg=key, value=self._fresh((name, key), value)))
                continue
            value = self.render(kw.value)
            if value is OMIT:
                continue
            keywords.append(ast.keyword(arg=kw.arg, value=value))
        return ast.Call(func=func, args=args, keywords=keywords)


# --- macros ----------------------------------------------------------------------------------


def _param_name(node) -> str:
    if not isinstance(node, ast.Name):
        raise ValueError("macro argument must be a parameter name")
    return node.id


def _m_opt(r: Renderer, args):
    name = _param_name(args[0])
    if r.binding.runtime or r.binding.given(name):
        return r.value_of(name)
    return OMIT


def _m_default(r: Renderer, args):
    name = _param_name(args[0])
    if r.binding.runtime:
        value = r.value_of(name)
        other = r.render(args[1])
        return ast.IfExp(
            test=ast.Compare(
                left=copy.deepcopy(value), ops=[ast.IsNot()], comparators=[ast.Constant(None)]
            ),
            body=value,
            orelse=other,
        )
    if r.binding.given(name):
        value = r.binding.supplied[name]
        if not (isinstance(value, ast.Constant) and value.value is None):
            return r.value_of(name)
    return r.render(args[1])


def _m_float(r: Renderer, args):
    value = r.render(args[0])
    if value is OMIT:
        return OMIT
    if (
        isinstance(value, ast.Constant)
        and isinstance(value.value, (int, float))
        and not isinstance(value.value, bool)
    ):
        return ast.Constant(float(value.value))
    return ast.Call(func=ast.Name(id="float", ctx=ast.Load()), args=[value], keywords=[])


def _number(node):
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


def _m_momentum(r: Renderer, args):
    name = _param_name(args[0])
    if not r.binding.runtime and not r.binding.given(name):
        return OMIT
    value = r.value_of(name)
    if isinstance(value, ast.Constant) and value.value is None:
        r.ctx.notes.append(
            "momentum=None (cumulative average) has no MindSpore equivalent; the default is used"
        )
        return OMIT
    number = _number(value)
    if number is not None:
        return ast.Constant(round(1.0 - number, 10))
    return ast.BinOp(left=ast.Constant(1), op=ast.Sub(), right=value)


def _m_bn_stats(r: Renderer, args):
    name = _param_name(args[0])
    if not r.binding.runtime and not r.binding.given(name):
        return OMIT
    value = r.value_of(name)
    if isinstance(value, ast.Constant):
        return OMIT if value.value else ast.Constant(True)
    return ast.IfExp(test=value, body=ast.Constant(None), orelse=ast.Constant(True))


def _m_pad_mode(r: Renderer, args):
    name = _param_name(args[0])
    if r.binding.runtime:
        r.ctx.need_helper("_ms_pad_mode")
        return ast.Call(
            func=ast.Name(id="_ms_pad_mode", ctx=ast.Load()), args=[r.value_of(name)], keywords=[]
        )
    if not r.binding.given(name):
        return ast.Constant("valid")
    value = r.binding.supplied[name]
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return ast.Constant(value.value.lower())
    return ast.Constant("pad")


def _m_conv_pad(r: Renderer, args):
    name = _param_name(args[0])
    dims = args[1].value
    if not r.binding.runtime and not r.binding.given(name):
        return OMIT
    value = r.value_of(name)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return OMIT
    if _is_int(value):
        return value
    if isinstance(value, (ast.Tuple, ast.List)) and all(_is_int(e) for e in value.elts):
        items = [e.value for e in value.elts]
        if len(items) == dims:
            if dims == 1:
                return ast.Constant(items[0])
            return ast.Tuple(
                elts=[ast.Constant(v) for v in items for _ in range(2)], ctx=ast.Load()
            )
        if len(items) == 2 * dims:
            return ast.Tuple(elts=[ast.Constant(v) for v in items], ctx=ast.Load())
        raise BindError(f"padding {ast.unparse(value)} does not fit a {dims}-d layer")
    r.ctx.need_helper("_ms_conv_padding")
    return ast.Call(
        func=ast.Name(id="_ms_conv_padding", ctx=ast.Load()),
        args=[value, ast.Constant(dims)],
        keywords=[],
    )


def _m_pad_value(r: Renderer, args):
    name = _param_name(args[0])
    if not r.binding.runtime and not r.binding.given(name):
        return OMIT
    value = r.value_of(name)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return OMIT
    if r.binding.runtime:
        return ast.IfExp(
            test=ast.Call(
                func=ast.Name(id="isinstance", ctx=ast.Load()),
                args=[copy.deepcopy(value), ast.Name(id="str", ctx=ast.Load())],
                keywords=[],
            ),
            body=ast.Constant(0),
            orelse=value,
        )
    return value


def _m_pool_pad_mode(r: Renderer, args):
    if r.binding.runtime or any(r.binding.given(_param_name(a)) for a in args):
        return ast.Constant("pad")
    return OMIT


def _m_gelu_approx(r: Renderer, args):
    name = _param_name(args[0])
    if not r.binding.runtime and not r.binding.given(name):
        return ast.Constant(False)
    value = r.value_of(name)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return ast.Constant(value.value == "tanh")
    return ast.Compare(left=value, ops=[ast.Eq()], comparators=[ast.Constant("tanh")])


def _m_shape(r: Renderer, args):
    name = _param_name(args[0])
    if r.binding.runtime:
        r.ctx.need_helper("_ms_size")
        return ast.Call(
            func=ast.Name(id="_ms_size", ctx=ast.Load()),
            args=[ast.Name(id=name, ctx=ast.Load())],
            keywords=[],
        )
    items = r.binding.supplied.get(name, [])
    items = [r._fresh((name, i), v) for i, v in enumerate(items)]
    if len(items) == 1:
        item = items[0]
        if isinstance(item, ast.Starred):
            return ast.Call(
                func=ast.Name(id="tuple", ctx=ast.Load()), args=[item.value], keywords=[]
            )
        return item
    return ast.Tuple(elts=items, ctx=ast.Load())


def _m_inplace(r: Renderer, args):
    target = r.render(args[0])
    if r.ctx.is_param_like(target):
        param = r.ctx.param_expr(target)
        r.receiver = param
        r.used_once.discard("self")
        r.used_once.add("self")
        value = r.render(args[1])
        return ast.Call(
            func=ast.Attribute(value=copy.deepcopy(param), attr="set_data", ctx=ast.Load()),
            args=[value],
            keywords=[],
        )
    value = r.render(args[1])
    if r.ctx.statement and isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
        value._mc_assign_to = copy.deepcopy(target)
    return value


def _init_param(r: Renderer, arg):
    tensor = r.render(arg)
    param = r.ctx.param_expr(tensor)
    r.p_value = param
    return param


def _m_init(r: Renderer, args):
    param = _init_param(r, args[0])
    init = r.render(args[1])
    if isinstance(param, ast.Call):  # looked up at run time: keep it to one lookup
        r.ctx.need_helper("_ms_initialize")
        return ast.Call(
            func=ast.Name(id="_ms_initialize", ctx=ast.Load()), args=[param, init], keywords=[]
        )
    ms_init = r.ctx.root_alias("ms_init")
    call = ast.Call(
        func=ast.Attribute(
            value=ast.Name(id=ms_init, ctx=ast.Load()), attr="initializer", ctx=ast.Load()
        ),
        args=[
            init,
            ast.Attribute(value=copy.deepcopy(param), attr="shape", ctx=ast.Load()),
            ast.Attribute(value=copy.deepcopy(param), attr="dtype", ctx=ast.Load()),
        ],
        keywords=[],
    )
    return ast.Call(
        func=ast.Attribute(value=copy.deepcopy(param), attr="set_data", ctx=ast.Load()),
        args=[call],
        keywords=[],
    )


def _m_set(r: Renderer, args):
    param = _init_param(r, args[0])
    value = r.render(args[1])
    return ast.Call(
        func=ast.Attribute(value=copy.deepcopy(param), attr="set_data", ctx=ast.Load()),
        args=[value],
        keywords=[],
    )


def _m_to(r: Renderer, args):
    receiver = r.render(args[0])
    if r.binding.runtime:
        raise DynamicArgs()
    positional = r.binding.supplied.get(_param_name(args[1]), [])
    keywords = r.binding.supplied.get(_param_name(args[2]), {})
    dtype = keywords.get("dtype")
    if dtype is None:
        for arg in positional:
            if r.ctx.dtype_attr(arg):
                dtype = arg
                break
    if dtype is None:
        return receiver
    return ast.Call(
        func=ast.Attribute(value=receiver, attr="astype", ctx=ast.Load()), args=[dtype], keywords=[]
    )


def _m_ddof(r: Renderer, args):
    """ddof from PyTorch's `unbiased` flag (default True -> 1)."""
    name = _param_name(args[0])
    if not r.binding.runtime and not r.binding.given(name):
        return ast.Constant(1)
    value = r.value_of(name)
    if isinstance(value, ast.Constant):
        return ast.Constant(1 if value.value else 0)
    return ast.IfExp(test=value, body=ast.Constant(1), orelse=ast.Constant(0))


MACROS: dict[str, Callable[[Renderer, list], Any]] = {
    "DDOF": _m_ddof,
    "OPT": _m_opt,
    "DEFAULT": _m_default,
    "FLOAT": _m_float,
    "MOMENTUM": _m_momentum,
    "BN_STATS": _m_bn_stats,
    "PAD_MODE": _m_pad_mode,
    "CONV_PAD": _m_conv_pad,
    "PAD_VALUE": _m_pad_value,
    "POOL_PAD_MODE": _m_pool_pad_mode,
    "GELU_APPROX": _m_gelu_approx,
    "SHAPE": _m_shape,
    "INPLACE": _m_inplace,
    "INIT": _m_init,
    "SET": _m_set,
    "TO": _m_to,
}


def unused_supplied(api: Api, binding: Binding, template: ast.expr) -> list:
    """Supplied parameters the template drops and that are not silently ignorable."""
    names = used_names(template)
    dropped = []
    for name, value in binding.supplied.items():
        if name in names or name in api.ignore or name == "out" and _is_none(value):
            continue
        default = binding.defaults.get(name)
        if (
            default is not None
            and isinstance(value, ast.AST)
            and ast.dump(value) == ast.dump(default)
        ):
            continue
        dropped.append(name)
    return dropped


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
