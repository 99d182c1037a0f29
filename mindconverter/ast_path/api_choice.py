"""Choosing the MindSpore form of a PyTorch API at a call site: types, adapters, safe references."""

from __future__ import annotations

import ast

from .common import MS_DTYPES
from .helpers import torch_display
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
    conditions_hold,
    describe_template,
    dotted,
    runtime_binding,
    sig_params,
)


class ApiChoices:
    """Decides how a PyTorch API is written in MindSpore at a call site. Part of :class:`~mindconverter.ast_path.transformer.Converter`."""

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
