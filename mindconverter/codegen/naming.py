"""Turning names from a model file into safe, unique Python identifiers.

Nothing from a model reaches generated code except through :func:`identifier` (for names) or
:func:`comment_text` (for text shown in comments); string literals go through ``repr``.
"""

from __future__ import annotations

import builtins
import keyword
import re
import sys
import unicodedata
from collections.abc import Iterable

from ..text import one_line

MAX_IDENTIFIER = 48

# Names the generated script itself uses at module or method level.
RESERVED = {
    "self",
    "ms",
    "nn",
    "ops",
    "np",
    "math",
    "Parameter",
    "Tensor",
    "MindSporeModel",
    "UnconvertedOperator",
    "super",
    "rotate_half",  # helper functions the script may define (helpers/)
    "masked_softmax",
    "apply_rotary_pos_emb",
    "apply_partial_rotary_pos_emb",
    "rotate_every_two",
    "apply_interleaved_rotary_pos_emb",
    "apply_partial_interleaved_rotary_pos_emb",
    "roll",
    "dynamic_inputs",
}

# Attribute and method names of ``nn.Cell`` (MindSpore 2.x, lower-cased): a sub-cell or parameter
# stored under one of these (``self.construct = ...``) would break the network, so attribute
# namers start with them taken.
CELL_MEMBERS = frozenset(
    {
        "add_flags",
        "add_flags_recursive",
        "apply",
        "arguments_key",
        "auto_prefix",
        "bprop",
        "bprop_debug",
        "buffers",
        "cast_inputs",
        "cell_init_args",
        "cell_list",
        "cell_type",
        "cells",
        "cells_and_names",
        "check_names",
        "check_names_and_refresh_name",
        "children",
        "cls_name",
        "compile",
        "compile_and_run",
        "compile_cache",
        "compile_phase",
        "compiled",
        "construct",
        "cpu",
        "create_time",
        "cuda",
        "enable_backward_hook",
        "eval",
        "exist_names",
        "exist_objs",
        "extend_repr",
        "float",
        "forward",
        "generate_scope",
        "get_buffer",
        "get_extra_state",
        "get_flags",
        "get_func_graph_proto",
        "get_inputs",
        "get_mixed_precision_type",
        "get_parameters",
        "get_scope",
        "get_sub_cell",
        "global_cells",
        "grad_ops_label",
        "half",
        "has_bprop",
        "ignore_list",
        "init_parameters_data",
        "insert_child_to_cell",
        "insert_param_to_cell",
        "is_top_cell",
        "jit_config_dict",
        "load_state_dict",
        "mixed_precision_type",
        "modules",
        "name_cells",
        "named_buffers",
        "offload",
        "parallel_parameter_merge_net_dict",
        "parallel_parameter_name_list",
        "param_prefix",
        "parameter_layout_dict",
        "parameters",
        "parameters_and_names",
        "parameters_broadcast_dict",
        "parameters_dict",
        "phase",
        "phase_cache",
        "pipeline_segment",
        "pipeline_stage",
        "recompute",
        "register_backward_hook",
        "register_backward_pre_hook",
        "register_buffer",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_load_state_dict_post_hook",
        "register_load_state_dict_pre_hook",
        "register_parameter_forward_hook",
        "register_saved_tensors_hooks",
        "register_state_dict_post_hook",
        "register_state_dict_pre_hook",
        "remove_redundant_parameters",
        "requires_grad",
        "run_construct",
        "set_boost",
        "set_broadcast_flag",
        "set_comm_fusion",
        "set_data_parallel",
        "set_extra_state",
        "set_grad",
        "set_inputs",
        "set_jit_config",
        "set_mixed_precision_type",
        "set_train",
        "shard",
        "state_dict",
        "t_destination",
        "to",
        "to_empty",
        "to_float",
        "total_instance_count",
        "train",
        "trainable_params",
        "training",
        "type",
        "untrainable_params",
        "update_cell_prefix",
        "update_cell_type",
        "update_parameters_name",
    }
)


def identifier(text: str, fallback: str = "value", attribute: bool = False) -> str:
    """A lower-case snake_case identifier made from ``text`` (ASCII letters, digits, ``_``).

    ``attribute=True`` is for names used only after ``self.``: there, builtins and our module-level
    names cannot clash, so source names like ``self.self`` (BERT) are kept.
    """
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"NaN|Inf", lambda m: m.group().lower(), text)  # IsNaN -> isnan, not is_na_n
    # word breaks keep acronyms whole: HTTPServer -> http_server, fooBar -> foo_bar,
    # layer1Conv -> layer1_conv, GPT2MLP -> gpt2mlp
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"([a-z])([A-Z])", r"\1_\2", text)
    text = re.sub(r"([0-9])([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    text = re.sub(r"_+", "_", text)
    if not text:
        text = fallback
    if text[0].isdigit():
        text = f"{fallback}_{text}"
    if len(text) > MAX_IDENTIFIER:
        text = text[:MAX_IDENTIFIER].rstrip("_")
    clashes = keyword.iskeyword(text) or (
        not attribute
        and (keyword.issoftkeyword(text) or text in RESERVED or hasattr(builtins, text))
    )
    if clashes:
        text = f"{text}_"
    return text


def class_name(text: str, fallback: str = "Block") -> str:
    """A CamelCase class name made from ``text``; a source class name (``GPT2MLP``) is kept."""
    if re.fullmatch(rf"[A-Z][A-Za-z0-9]{{0,{MAX_IDENTIFIER - 1}}}", str(text)) and not (
        text in RESERVED or hasattr(builtins, text)
    ):
        return str(text)
    parts = identifier(text, fallback.lower()).split("_")
    name = "".join(part[:1].upper() + part[1:] for part in parts if part)
    name = name or fallback
    if name in RESERVED or keyword.iskeyword(name) or hasattr(builtins, name):
        name = f"{name}Cell"
    return name


def module_name(stem: str) -> str:
    """A valid Python module name from a file stem (``bert.base`` -> ``bert_base``); keeps case."""
    text = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "model"
    if text[0].isdigit():
        text = f"model_{text}"
    if keyword.iskeyword(text) or _shadows_a_module(text):
        text = f"{text}_model"
    return text[:80]


# Packages a generated script or its user imports beside the standard library.
_TAKEN_MODULES = {"mindspore", "onnx", "numpy", "onnxruntime", "mindconverter", "math"}


def _shadows_a_module(name: str) -> bool:
    """Whether a script of this name would hide a standard-library module or a package it needs
    (``signal.py`` beside the user's code breaks ``import signal``)."""
    lowered = name.lower()  # case-insensitive file systems
    stdlib = {m.lower() for m in sys.stdlib_module_names | set(sys.builtin_module_names)}
    return lowered in stdlib or lowered in _TAKEN_MODULES


class Namer:
    """Hands out unique identifiers within one scope."""

    def __init__(self, taken: Iterable[str] | None = None, reserve: bool = True):
        """``reserve=False`` for attribute names (after ``self.``), where only ``taken`` can clash."""
        self.taken = (set(RESERVED) if reserve else set()) | set(taken or ())

    def claim(self, hint: str, fallback: str = "value", attribute: bool = False) -> str:
        """A fresh identifier based on ``hint``: ``relu``, then ``relu_1``, ``relu_2``..."""
        base = identifier(hint, fallback, attribute=attribute)
        stem = base.rstrip("_") or base  # range_ -> range_1, not range__1
        name, counter = base, 0
        while name in self.taken:
            counter += 1
            name = f"{stem}_{counter}"
        self.taken.add(name)
        return name

    def claim_class(self, hint: str) -> str:
        """A fresh CamelCase class name based on ``hint``: ``BasicBlock``, then ``BasicBlock2``..."""
        base = class_name(hint)
        name, counter = base, 1
        while name in self.taken:
            counter += 1
            name = f"{base}{counter}"
        self.taken.add(name)
        return name

    def claim_exact(self, name: str) -> str:
        """Reserve an already-safe identifier (suffixing it if taken)."""
        return self.claim(name)


def comment_text(text: str, limit: int = 200) -> str:
    """Text safe inside a ``#`` comment: one line, printable, bounded."""
    return one_line(text, limit)
