"""mindconverter: migrate trained ONNX and TensorFlow models to MindSpore.

The public API is :func:`convert`; see docs/usage.md.
"""

__version__ = "0.1.0"

from .api import ConversionResult, convert
from .errors import MindConverterError

__all__ = ["ConversionResult", "MindConverterError", "__version__", "convert"]
