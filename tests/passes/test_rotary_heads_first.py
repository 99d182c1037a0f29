"""The query and key turned heads-first before their rotary embedding (GPT-J, CodeGen)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter.graph import Graph
from mindconverter.graph.internal_domain import DOMAIN, declare_internal_domain
from mindconverter.passes.rotary_heads_first import _turned_pairs
from tests.helpers import make_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _pair_then_swaps(table_read_elsewhere: bool, key_perm=(0, 2, 1, 3)) -> Graph:
    nodes = [
        helper.make_node("ApplyRotaryPair", ["q", "k", "cos", "sin"], ["qr", "kr"], domain=DOMAIN),
        helper.make_node("Transpose", ["qr"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["kr"], ["kt"], perm=list(key_perm)),
    ]
    outputs = [("qt", np.float32, None), ("kt", np.float32, None)]
    if table_read_elsewhere:
        nodes.append(helper.make_node("Relu", ["cos"], ["c"]))
        outputs.append(("c", np.float32, None))
    heads = [("q", np.float32, ["b", "s", 2, 4]), ("k", np.float32, ["b", "s", 2, 4])]
    tables = [("cos", np.float32, [1, "s", 1, 4]), ("sin", np.float32, [1, "s", 1, 4])]
    model = make_model(nodes, heads + tables, outputs)
    declare_internal_domain(model)
    return Graph(model)


def test_a_pair_swapped_after_is_found_unless_its_table_is_read_elsewhere():
    assert len(_turned_pairs(_pair_then_swaps(False))) == 1
    assert len(_turned_pairs(_pair_then_swaps(False, key_perm=(0, 2, 3, 1)))) == 1
    assert _turned_pairs(_pair_then_swaps(True)) == []
    assert _turned_pairs(_pair_then_swaps(False, key_perm=(0, 1, 3, 2))) == []


@pytest.mark.slow
def test_gptj_heads_are_split_in_one_line_each_and_turned_heads_first(tmp_path):
    """GPT-J (TorchScript) turned its query and key while the heads were the third axis, then
    swapped them (the key straight to [b, h, d, s]). Turned heads-first, the attention splits
    its heads in one line each, as Llama's does; the numbers stay onnxruntime's."""
    from tests.helpers import assert_runs_like_onnxruntime, convert_fully

    model = onnx.load(FIXTURES / "tiny_gptj_torchscript.onnx")
    result = convert_fully(model, tmp_path, shape=["input_ids=2,5", "attention_mask=2,5"])
    code = result.script_path.read_text()
    assert "q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)" in code, code
    assert "q, k = apply_partial_interleaved_rotary_pos_emb(q, k, cos, sin, 4)" in code
    assert "q = q.swapaxes(1, 2)" not in code
    rng = np.random.default_rng(9)
    for batch, seq in (2, 5), (3, 9):
        mask = np.ones((batch, seq), np.int64)
        mask[0, -2:] = 0
        feeds = {"input_ids": rng.integers(0, 40, (batch, seq)), "attention_mask": mask}
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)
