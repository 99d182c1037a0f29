"""mindconverter: migrate trained ONNX and TensorFlow models to MindSpore.

The public API is :func:`convert`; see docs/usage.md.
"""

from .api import ConversionResult, convert
from .errors import MindConverterError
from .version import __version__

__all__ = ["ConversionResult", "MindConverterError", "__version__", "convert"]
