"""mindconverter: migrate trained ONNX and TensorFlow models to MindSpore.

The public API is :func:`convert`; see docs/usage.md. It is imported on first use, so the
command line starts without loading onnx, numpy and the rest (``mindconverter --help``).
"""

from .errors import MindConverterError
from .version import __version__

__all__ = ["ConversionResult", "MindConverterError", "__version__", "compare_training", "convert"]


def __getattr__(name: str):
    if name in ("ConversionResult", "convert"):
        from . import api

        return getattr(api, name)
    if name == "compare_training":
        from .check import training

        return training.compare_training
    raise AttributeError(f"module 'mindconverter' has no attribute {name!r}")
