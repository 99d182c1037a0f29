"""Rewriting calls and references of PyTorch APIs."""

from __future__ import annotations

import ast

from .common import GENERIC_METHODS
from .helpers import torch_display
from .mapping import (
    BindError,
    DynamicArgs,
    Renderer,
    bind,
    conditions_hold,
    describe_template,
    dotted,
    unused_supplied,
)

# A training step has no call-for-call MindSpore form: gradients are computed by a function.
BACKWARD_SUGGESTION = (
    "MindSpore computes gradients functionally: grad_fn = mindspore.value_and_grad(forward_fn, "
    "None, optimizer.parameters); loss, grads = grad_fn(inputs, labels); optimizer(grads) "
    "replaces loss.backward() and optimizer.step() (or wrap the network in nn.TrainOneStepCell)."
)


class CallRewriting:
    """Rewrites calls, ``super().__init__`` and plain references of PyTorch APIs. Part of :class:`~mindconverter.ast_path.transformer.Converter`."""

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
        if isinstance(func, ast.Attribute) and func.attr == "backward" and not node.args:
            self.event(node, False, "Tensor.backward", suggest=BACKWARD_SUGGESTION)
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
