"""onnxruntime's attention operators (com.microsoft) against onnxruntime itself."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import assert_matches, assert_runs_like_onnxruntime, convert_fully
from tests.mappers.test_contrib_fused import MS, ms_model, rand

F32 = np.float32
I32 = np.int32


def attention_model(mask_shape=None, past=False, bias_input=False, **attrs):
    names = ["x", "w", "b", "mask" if mask_shape else "", "past" if past else ""]
    if bias_input:
        names.append("attn_bias")
    outputs = ["y", "present"] if past else ["y"]
    node = helper.make_node("Attention", names, outputs, domain=MS, num_heads=2, **attrs)
    inputs = [("x", F32, [2, 5, 16])]
    if mask_shape:
        inputs.append(("mask", I32, mask_shape))
    if past:
        inputs.append(("past", F32, [2, 2, 2, 3, 8]))
    if bias_input:
        inputs.append(("attn_bias", F32, [2, 2, 5, 8 if past else 5]))
    weights = {"w": rand(16, 48, seed=1) * 0.3, "b": rand(48, seed=2) * 0.1}
    return ms_model([node], inputs, [(name, F32, None) for name in outputs], weights, opset=17)


def feeds_for(model, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in model.graph.input:
        if inp.name in {i.name for i in model.graph.initializer}:
            continue
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        if inp.name == "mask" and len(shape) == 1:
            feeds[inp.name] = np.array([3, 5], I32)[: shape[0]]
        elif inp.name in ("mask", "key_padding_mask"):
            value = np.ones(shape, I32)
            value[0, ..., -2:] = 0
            feeds[inp.name] = value
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(F32)
    return feeds


@pytest.mark.parametrize(
    ("mask_shape", "past", "bias_input", "attrs"),
    [
        (None, False, False, {}),
        ([2, 5], False, False, {}),
        ([2], False, False, {}),
        ([2, 5, 5], False, False, {"scale": 0.3}),
        ([2, 5], False, False, {"unidirectional": 1}),
        (None, False, True, {}),
        ([2, 8], True, False, {"unidirectional": 1}),
    ],
)
def test_attention(tmp_path, mask_shape, past, bias_input, attrs):
    model = attention_model(mask_shape, past, bias_input, **attrs)
    result = assert_matches(model, tmp_path, feeds_for(model), rtol=1e-4, atol=1e-5)
    script = result.script_path.read_text()
    assert "self.query = nn.Dense(" in script, script
    assert "ops.softmax(" in script


@pytest.mark.slow
def test_attention_with_dynamic_batch_and_sequence(tmp_path):
    model = attention_model([2, 5], unidirectional=1)
    for inp in model.graph.input:
        dims = inp.type.tensor_type.shape.dim
        dims[0].dim_param, dims[1].dim_param = "batch", "seq"
    result = convert_fully(model, tmp_path, shape=["2,5,16", "2,5"])
    for batch, seq in ((2, 5), (3, 7)):
        rng = np.random.default_rng(seq)
        mask = np.ones((batch, seq), I32)
        mask[0, -1] = 0
        feeds = {"x": rng.standard_normal((batch, seq, 16)).astype(F32), "mask": mask}
        assert_runs_like_onnxruntime(model, result, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("variant", ["plain", "bias_mask", "past"])
def test_multi_head_attention(tmp_path, variant):
    names = ["q", "k", "v"]
    inputs = [("q", F32, [2, 5, 16]), ("k", F32, [2, 7, 16]), ("v", F32, [2, 7, 16])]
    weights = {}
    outputs = ["y"]
    if variant == "bias_mask":
        names += ["qkv_bias", "key_padding_mask"]
        weights["qkv_bias"] = rand(48, seed=3)
        inputs.append(("key_padding_mask", I32, [2, 7]))
    if variant == "past":
        names += ["", "", "", "past_k", "past_v"]
        inputs += [("past_k", F32, [2, 2, 3, 8]), ("past_v", F32, [2, 2, 3, 8])]
        outputs += ["present_k", "present_v"]
    node = helper.make_node("MultiHeadAttention", names, outputs, domain=MS, num_heads=2)
    model = ms_model([node], inputs, [(n, F32, None) for n in outputs], weights)
    assert_matches(model, tmp_path, feeds_for(model), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("padded", [False, True])
def test_group_query_attention_prompt(tmp_path, padded):
    names = ["q", "k", "v", "", "", "seqlens_k", "total_len"]
    node = helper.make_node(
        "GroupQueryAttention",
        names,
        ["y", "present_k", "present_v"],
        domain=MS,
        num_heads=4,
        kv_num_heads=2,
    )
    inputs = [("q", F32, [2, 5, 32]), ("k", F32, [2, 5, 16]), ("v", F32, [2, 5, 16])]
    inputs.append(("seqlens_k", I32, [2]))
    model = ms_model(
        [node],
        inputs,
        [("y", F32, None), ("present_k", F32, None), ("present_v", F32, None)],
        {"total_len": np.array(5, I32)},
    )
    feeds = {n: rand(*s, seed=i) for i, (n, _, s) in enumerate(inputs[:3])}
    feeds["seqlens_k"] = np.array([2, 4] if padded else [4, 4], I32)
    result = convert_fully(model, tmp_path)
    assert_runs_like_onnxruntime(model, result, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("layout", "attrs"),
    [("3d", {"num_heads": 2}), ("3d", {"num_heads": 2, "interleaved": 1}), ("4d", {})],
)
def test_rotary_embedding(tmp_path, layout, attrs):
    shape = [2, 5, 16] if layout == "3d" else [2, 2, 5, 8]
    node = helper.make_node(
        "RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, **attrs
    )
    angles = np.arange(12).reshape(-1, 1) * (0.1 ** np.arange(4)).reshape(1, -1)
    weights = {"cos": np.cos(angles).astype(F32), "sin": np.sin(angles).astype(F32)}
    model = ms_model(
        [node], [("x", F32, shape), ("pos", np.int64, [2, 5])], [("y", F32, None)], weights
    )
    feeds = {"x": rand(*shape, seed=4), "pos": np.array([[0, 1, 2, 3, 4], [3, 4, 5, 6, 7]])}
    assert_matches(model, tmp_path, feeds)


@pytest.mark.parametrize(
    ("packed", "rotary", "past", "window"),
    [(True, False, False, -1), (False, True, False, -1), (True, True, False, -1),
     (False, True, True, -1), (False, False, True, -1), (False, False, False, 2),
     (False, False, True, 2)],
)  # fmt: skip
def test_group_query_attention_forms(tmp_path, packed, rotary, past, window):
    """Packed q/k/v, rotary embedding (cos/sin caches) and a past cache, against onnxruntime."""
    # onnxruntime wants head sizes of 16 with rotary, and one new token per row after a past
    heads, kv_heads, head, past_len = 4, 2, 16, 4
    seq = 1 if past else 3
    names = ["qkv", "", ""] if packed else ["q", "k", "v"]
    inputs = (
        [("qkv", F32, [2, seq, (heads + 2 * kv_heads) * head])]
        if packed
        else [("q", F32, [2, seq, heads * head]), ("k", F32, [2, seq, kv_heads * head]),
              ("v", F32, [2, seq, kv_heads * head])]
    )  # fmt: skip
    if past:
        names += ["past_k", "past_v"]
        inputs += [("past_k", F32, [2, kv_heads, past_len, head])]
        inputs += [("past_v", F32, [2, kv_heads, past_len, head])]
    else:
        names += ["", ""]
    names += ["seqlens_k", "total_len"]
    inputs.append(("seqlens_k", I32, [2]))
    total = seq + (past_len if past else 0)
    initializers = {"total_len": np.array(total, I32)}
    if rotary:
        angles = np.arange(16).reshape(-1, 1) * (0.3 ** np.arange(head // 2)).reshape(1, -1)
        initializers["cos"] = np.cos(angles).astype(F32)
        initializers["sin"] = np.sin(angles).astype(F32)
        names += ["cos", "sin"]
    outputs = ["y", "present_k", "present_v"]
    node = helper.make_node(
        "GroupQueryAttention",
        names,
        outputs,
        domain=MS,
        num_heads=heads,
        kv_num_heads=kv_heads,
        do_rotary=int(rotary),
        local_window_size=window,
    )
    model = ms_model([node], inputs, [(n, F32, None) for n in outputs], initializers)
    feeds = {name: rand(*shape, seed=i) for i, (name, _, shape) in enumerate(inputs[:-1])}
    feeds["seqlens_k"] = np.array([total - 1, total - 1], I32)
    result = convert_fully(model, tmp_path)
    assert_runs_like_onnxruntime(model, result, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("packing", ["qkv", "kv"])
def test_multi_head_attention_packed_is_the_unpacked_one(tmp_path, packing):
    """onnxruntime runs packed MultiHeadAttention on CUDA only: the converted packed operator
    must equal onnxruntime's MultiHeadAttention on the same q/k/v given separately."""
    if packing == "qkv":
        names, inputs = ["qkv"], [("qkv", F32, [2, 5, 2, 3, 8])]
    else:
        names, inputs = ["q", "kv"], [("q", F32, [2, 5, 16]), ("kv", F32, [2, 7, 2, 2, 8])]
    node = helper.make_node("MultiHeadAttention", names, ["y"], domain=MS, num_heads=2)
    model = ms_model([node], inputs, [("y", F32, None)])
    feeds = {name: rand(*shape, seed=i) for i, (name, _, shape) in enumerate(inputs)}
    result = convert_fully(model, tmp_path)
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))
    if packing == "qkv":
        packed = feeds["qkv"]
        q, k, v = (packed[:, :, :, i].reshape(2, 5, 16) for i in range(3))
    else:
        q = feeds["q"]
        k, v = (feeds["kv"][:, :, :, i].reshape(2, 7, 16) for i in range(2))
    plain = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain=MS, num_heads=2)
    shapes = [("q", F32, list(q.shape)), ("k", F32, list(k.shape)), ("v", F32, list(v.shape))]
    reference = ms_model([plain], shapes, [("y", F32, None)])
    (want,) = run_onnxruntime(reference, {"q": q, "k": k, "v": v}, ["y"])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
