"""TfIdfVectorizer on integer tokens equals onnxruntime: unigrams and bigrams with skips, every
weighting mode, 1-D and batched input, PyNative and GRAPH mode."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model


@pytest.mark.parametrize(
    "mode, weights, min_gram, skip",
    [
        ("TF", None, 1, 0),
        ("TF", None, 2, 2),
        ("IDF", [0.5, 2, 1, 3, 1.5], 1, 1),
        ("TFIDF", None, 1, 3),
    ],
)
@pytest.mark.parametrize("shape", [(12,), (2, 8)])
def test_tfidf_vectorizer_equals_onnxruntime(tmp_path, mode, weights, min_gram, skip, shape):
    attrs = dict(
        mode=mode,
        min_gram_length=min_gram,
        max_gram_length=2,
        max_skip_count=skip,
        ngram_counts=[0, 3],
        ngram_indexes=[0, 1, 2, 3, 4],
        pool_int64s=[2, 3, 5, 2, 3, 5, 7],  # unigrams 2, 3, 5; bigrams (2, 3), (5, 7)
    )
    if weights:
        attrs["weights"] = weights
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    model = make_model([node], [("x", np.int64, shape)], [("y", np.float32, None)], opset=9)
    x = np.random.default_rng(1).choice([2, 3, 5, 7, 9], size=shape).astype(np.int64)
    result = assert_matches(model, tmp_path, {"x": x}, graph_mode=len(shape) == 2)
    assert "class TfIdfVectorizer(nn.Cell):" in result.script_path.read_text()
