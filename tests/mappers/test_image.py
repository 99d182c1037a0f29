"""ImageDecoder against onnx's reference evaluator (Pillow decodes there too)."""

from __future__ import annotations

import io

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator
from PIL import Image

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import make_model


def _encoded(fmt: str) -> np.ndarray:
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, (9, 13, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt)
    return np.frombuffer(buffer.getvalue(), np.uint8)


@pytest.mark.parametrize("pixel_format", ["RGB", "BGR", "Grayscale"])
@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "BMP"])
def test_image_decoder_matches_the_reference(fmt, pixel_format, tmp_path):
    data = _encoded(fmt)
    node = helper.make_node("ImageDecoder", ["data"], ["pixels"], pixel_format=pixel_format)
    model = make_model(
        [node], [("data", np.uint8, (data.size,))], [("pixels", np.uint8, None)], opset=20
    )
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    result = convert(path, output=tmp_path / "out")
    assert result.unconverted == []
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, [data])
    (want,) = ReferenceEvaluator(model).run(None, {"data": data})
    assert got.dtype == np.uint8 and got.shape == want.shape == (
        9,
        13,
        1 if pixel_format == "Grayscale" else 3,
    )
    np.testing.assert_array_equal(got, want)
