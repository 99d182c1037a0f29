"""Deprecated AST path: convert a PyTorch model *script* into a MindSpore script.

    from mindconverter.ast_path import convert_script
    result = convert_script("resnet.py", "output/")

This path rewrites source code by a mapping table (see ``docs/ast_path.md``); it cannot convert
weights and only knows the APIs in its table. The graph path (``--model_file`` with an ONNX
export) is the recommended conversion.
"""

from .converter import convert_script, convert_source
from .mapping import load_table
from .results import DEPRECATION, ScriptConversionResult, SourceConversion

__all__ = [
    "DEPRECATION",
    "ScriptConversionResult",
    "SourceConversion",
    "convert_script",
    "convert_source",
    "load_table",
]
