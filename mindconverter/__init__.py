"""mindconverter: migrate trained ONNX and TensorFlow models to MindSpore.

The public API is :func:`convert`; see docs/usage.md.
"""

__version__ = "0.1.0"

from .api import ConversionResult, convert  # noqa: E402
from .errors import MindConverterError  # noqa: E402

__all__ = ["ConversionResult", "MindConverterError", "convert", "__version__"]
