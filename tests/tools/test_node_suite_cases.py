"""Operators added to close node-suite gaps: Attention, the losses, RMSNormalization, windows,
GridSample, CumProd and fixes to Shape / Flatten / ArgMin.

Numeric checks against onnxruntime where it runs the operator; otherwise (and additionally for a
few hard variants) against the ONNX node suite's reference data through mindconverter.suite.
"""

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model, single_op_model
from tools import node_suite as suite

rng = np.random.default_rng(7)


def _attention_model(q, k, v, mask=None, past=None, n_out=1, **attrs):
    names = ["Q", "K", "V"]
    inputs = [("Q", np.float32, q), ("K", np.float32, k), ("V", np.float32, v)]
    if mask is not None:
        names.append("M")
        inputs.append(("M", mask[0], mask[1]))
    if past is not None:
        names = names[:4] + [""] * (4 - len(names)) + ["PK", "PV"]
        inputs += [("PK", np.float32, past[0]), ("PV", np.float32, past[1])]
    outs = ["Y", "present_key", "present_value", "qk"][:n_out]
    node = helper.make_node("Attention", names, outs, **attrs)
    return make_model([node], inputs, [(o, np.float32, None) for o in outs], opset=23)


@pytest.mark.parametrize(
    "case",
    [
        {"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8)},
        {"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8), "is_causal": 1, "softcap": 2.0},
        {
            "q": (2, 4, 24),
            "k": (2, 6, 12),
            "v": (2, 6, 10),
            "q_num_heads": 4,
            "kv_num_heads": 2,
            "scale": 0.2,
        },
        {"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8), "mask": (np.float32, (4, 6))},
        {"q": (2, 3, 4, 8), "k": (2, 3, 6, 8), "v": (2, 3, 6, 8), "mask": (np.bool_, (2, 1, 4, 6))},
        {
            "q": (1, 2, 3, 8),
            "k": (1, 2, 3, 8),
            "v": (1, 2, 3, 8),
            "past": ((1, 2, 2, 8), (1, 2, 2, 8)),
            "is_causal": 1,
            "n_out": 4,
            "qk_matmul_output_mode": 3,
        },
    ],
)
def test_attention_vs_onnxruntime(tmp_path, case):
    case = dict(case)
    model = _attention_model(
        case.pop("q"),
        case.pop("k"),
        case.pop("v"),
        case.pop("mask", None),
        case.pop("past", None),
        case.pop("n_out", 1),
        **case,
    )
    feeds = None
    if any(i.type.tensor_type.elem_type == 9 for i in model.graph.input):
        feeds = {
            i.name: (
                rng.random([d.dim_value for d in i.type.tensor_type.shape.dim]) > 0.3
                if i.type.tensor_type.elem_type == 9
                else rng.standard_normal(
                    [d.dim_value for d in i.type.tensor_type.shape.dim]
                ).astype(np.float32)
            )
            for i in model.graph.input
        }
    assert_matches(model, tmp_path, feeds=feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted, ignore", [(False, None), (True, None), (True, 1), (False, 2)])
def test_losses_vs_onnxruntime(tmp_path, op, reduction, weighted, ignore):
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    names = ["x", "t"] + (["w"] if weighted else [])
    outputs = [("loss", np.float32, None)]
    node = helper.make_node(op, names, ["loss"], **attrs)
    inits = {"w": rng.random(5).astype(np.float32)} if weighted else None
    model = make_model(
        [node], [("x", np.float32, (3, 5, 2)), ("t", np.int64, (3, 2))], outputs, inits, opset=13
    )
    x = rng.standard_normal((3, 5, 2)).astype(np.float32)
    if op == "NegativeLogLikelihoodLoss":
        x = np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True)).astype(np.float32)
    t = np.array([[0, 1], [2, 4], [1, 3]], dtype=np.int64)
    assert_matches(model, tmp_path, feeds={"x": x, "t": t}, rtol=1e-4, atol=1e-5)


def test_rms_normalization(tmp_path):
    model = single_op_model(
        "RMSNormalization",
        {"x": (2, 3, 4)},
        initializers={"s": rng.random((3, 4)).astype(np.float32)},
        opset=23,
        axis=1,
        epsilon=1e-3,
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows(tmp_path, op, periodic):
    node = helper.make_node(op, ["n"], ["y"], periodic=periodic)
    model = make_model([node], [("n", np.int64, ())], [("y", np.float32, None)], opset=17)
    assert_matches(model, tmp_path, feeds={"n": np.array(10, dtype=np.int64)}, atol=1e-5)


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(tmp_path, padding, align):
    model = single_op_model(
        "GridSample",
        {"x": (1, 2, 4, 5), "g": (1, 3, 3, 2)},
        opset=16,
        padding_mode=padding,
        align_corners=align,
    )
    feeds = {
        "x": rng.standard_normal((1, 2, 4, 5)).astype(np.float32),
        "g": rng.uniform(-1.3, 1.3, (1, 3, 3, 2)).astype(np.float32),
    }
    assert_matches(model, tmp_path, feeds=feeds, atol=1e-5)


def test_flatten_negative_axis_and_argmin(tmp_path):
    flat = helper.make_node("Flatten", ["x"], ["f"], axis=-1)
    arg = helper.make_node("ArgMin", ["x"], ["a"], axis=2)
    model = make_model(
        [flat, arg],
        [("x", np.float32, (2, 3, 4))],
        [("f", np.float32, None), ("a", np.int64, None)],
        opset=13,
    )
    assert_matches(model, tmp_path)


def test_shape_as_graph_output(tmp_path):
    node = helper.make_node("Shape", ["x"], ["s"], start=1, end=-1)
    relu = helper.make_node("Relu", ["x"], ["r"])
    model = make_model(
        [node, relu],
        [("x", np.float32, (2, 3, 4, 5))],
        [("s", np.int64, None), ("r", np.float32, None)],
        opset=15,
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "name",
    [
        "test_cumprod_1d_int32_exclusive",
        "test_cumprod_2d_axis_0",
        "test_cumprod_1d_reverse_exclusive",
        "test_attention_4d_causal_nonpad_batch_prefill",
        "test_attention_23_boolmask_fullymasked_row_nan_robustness",
        "test_attention_3d_gqa_with_past_and_present",
        "test_sce_mean_weight_ii_4d_log_prob",
        "test_nllloss_NCd1d2d3_none_no_weight_negative_ii",
    ],
)
def test_node_suite_cases(name):
    tests = {t.name: t for t in suite.load_manifest(suite.ensure_test_data())}
    if name not in tests:
        pytest.skip(f"{name} is not in this onnx version's node suite")
    outcome = suite.run_node_test(tests[name])
    assert outcome.status == "pass", outcome.reason


@pytest.mark.parametrize(
    "attrs, shape",
    [
        ({"axis": 1}, (2, 8, 3, 1)),
        ({"axis": 2, "onesided": 1}, (2, 3, 8, 1)),
        ({"axis": 1, "inverse": 1}, (2, 6, 3, 2)),
    ],
)
def test_dft_opset17(tmp_path, attrs, shape):
    model = single_op_model("DFT", {"x": shape}, opset=17, **attrs)
    assert_matches(model, tmp_path, rtol=1e-4, atol=1e-4)


def test_col2im_det_affine_grid(tmp_path):
    col = helper.make_node("Col2Im", ["cols", "image", "block"], ["img"], strides=[1, 2])
    det = helper.make_node("Det", ["m"], ["d"])
    grid = helper.make_node("AffineGrid", ["theta", "size"], ["g"], align_corners=1)
    model = make_model(
        [col, det, grid],
        [
            ("cols", np.float32, (1, 4, 6)),
            ("m", np.float32, (2, 3, 3)),
            ("theta", np.float32, (2, 2, 3)),
        ],
        [("img", np.float32, None), ("d", np.float32, None), ("g", np.float32, None)],
        {
            "image": np.array([3, 6], np.int64),
            "block": np.array([2, 2], np.int64),
            "size": np.array([2, 1, 3, 4], np.int64),
        },
        opset=20,
    )
    assert_matches(model, tmp_path, rtol=1e-4, atol=1e-5)


def test_conv_with_runtime_weight(tmp_path):
    node = helper.make_node(
        "Conv", ["x", "w", "b"], ["y"], group=2, pads=[1, 0, 1, 2], strides=[1, 2]
    )
    model = make_model(
        [node],
        [("x", np.float32, (1, 4, 6, 7)), ("w", np.float32, (6, 2, 3, 3)), ("b", np.float32, (6,))],
        [("y", np.float32, None)],
        opset=13,
    )
    assert_matches(model, tmp_path, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "name",
    [
        "test_rotary_embedding_interleaved",
        "test_rotary_embedding_3d_input",
        "test_rotary_embedding_with_rotary_dim",
        "test_linear_attention_gated_delta_gqa",
        "test_linear_attention_prefill_with_past",
        "test_causal_conv_with_state_silu_fp16",
        "test_causal_conv_with_state_kernel_size_one",
        "test_stft_with_window",
        "test_tensorscatter_circular",
        "test_swiglu_alpha",
        "test_center_crop_pad_crop_and_pad",
        "test_bitcast_float32_to_int32",
        "test_bitcast_bool_to_uint8",
        "test_dft_irfft",
        "test_hannwindow_symmetric",
        "test_causal_conv_with_state_basic_expanded",
    ],
)
def test_node_suite_new_ops(name):
    tests = {t.name: t for t in suite.load_manifest(suite.ensure_test_data())}
    if name not in tests:
        pytest.skip(f"{name} is not in this onnx version's node suite")
    outcome = suite.run_node_test(tests[name])
    assert outcome.status == "pass", outcome.reason
