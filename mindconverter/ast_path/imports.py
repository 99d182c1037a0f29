"""What a script imports from PyTorch and which of its classes are modules (read before rewriting)."""

from __future__ import annotations

import ast

from .helpers import normalize_key
from .mapping import (
    ROOT_IMPORTS,
)


class ImportAnalysis:
    """Reads imports and class definitions; resolves names to torch API keys. Part of :class:`~mindconverter.ast_path.transformer.Converter`."""

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
