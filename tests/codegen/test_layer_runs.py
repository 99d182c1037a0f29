"""Numbered layers run as one loop, with each layer's own KV cache zipped in and gathered out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mindconverter import convert

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_decoder_layers_with_their_own_caches_run_in_one_loop(tmp_path, exporter):
    result = convert(
        FIXTURES / f"tiny_llama_{exporter}.onnx",
        shape=["1,3", "2,1,2,2,4", "2,1,2,2,4"],
        output=tmp_path,
        verify=True,
    )
    code = result.script_path.read_text()
    assert "self.layers[" not in code
    assert "in zip(\n            self.layers, past_key_per_layer, past_value_per_layer\n" in code
    assert "present_key_per_layer += (present_key,)" in code
    assert result.verification["ok"] and len(result.verification["shapes"]) == 2


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_layers_taking_one_of_two_values_in_turn_run_in_one_loop(tmp_path, exporter):
    """Gemma-2's sliding and global layers alternate their masks: the masks are zipped in
    as a tuple with one item per layer, repeats and all."""
    result = convert(
        FIXTURES / f"tiny_alternating_masks_{exporter}.onnx",
        shape=["2,5,8"],
        output=tmp_path,
        verify=True,
    )
    code = result.script_path.read_text()
    assert "self.layers[" not in code
    masks = re.search(r"\n        (\w+) = \((\w+), (\w+), (\w+), (\w+)\)\n", code)
    assert masks is not None, code
    near, far = masks.group(2), masks.group(3)
    assert near != far and masks.group(4, 5) == (near, far)
    assert f"in zip(self.layers, {masks.group(1)}):" in code
    assert result.verification["ok"] and len(result.verification["shapes"]) == 2
