"""The model-zoo architectures shipped in the onnx wheel convert fully and match onnxruntime."""

import onnx
import pytest

from mindconverter import convert
from tests.e2e.zoo import LIGHT_MODELS, randomized_light_model

HEAVY = {"light_vgg19", "light_zfnet512"}


@pytest.mark.slow
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_converts_and_matches(tmp_path, name):
    model_file = tmp_path / f"{name}.onnx"
    onnx.save(randomized_light_model(name), str(model_file))
    result = convert(model_file, output=tmp_path / "out", verify=True)
    assert result.unconverted == []
    assert result.verification["ok"], result.verification
    assert result.verification["max_relative_error"] <= 1e-3


def test_light_models_found():
    assert len(LIGHT_MODELS) >= 9, LIGHT_MODELS
