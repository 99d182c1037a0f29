"""Text features on integer tokens: TfIdfVectorizer (string pools stay unconverted: MindSpore
has no string tensors)."""

from __future__ import annotations

import numpy as np

from .base import Cell, Input, NodeContext, Unsupported
from .registry import mapper


def _grams_by_size(ctx: NodeContext) -> tuple:
    """((size, n-grams, output slots), ...) from the flattened pool: ``ngram_counts[k]`` is
    where the (k+1)-grams start in ``pool_int64s``."""
    pool = [int(t) for t in ctx.attr("pool_int64s", [])]
    starts = [int(c) for c in ctx.attr("ngram_counts", [])] + [len(pool)]
    slots = [int(i) for i in ctx.attr("ngram_indexes", [])]
    grams, seen = [], 0
    for size in range(1, len(starts)):
        tokens = pool[starts[size - 1] : starts[size]]
        count = len(tokens) // size
        if count:
            entries = tuple(tuple(tokens[i * size : (i + 1) * size]) for i in range(count))
            grams.append((size, entries, tuple(slots[seen : seen + count])))
        seen += count
    return tuple(grams)


@mapper("TfIdfVectorizer", since=9)
def tfidf_vectorizer(ctx: NodeContext):
    """TfIdfVectorizer (integer tokens) -> the script's TfIdfVectorizer cell."""
    if ctx.attr("pool_strings") is not None:
        raise Unsupported("TfIdfVectorizer over strings (MindSpore has no string tensors)")
    dtype = ctx.input_dtype(0)
    if dtype is None or np.dtype(dtype).kind not in "iu":
        raise Unsupported("TfIdfVectorizer on non-integer input")
    low, high = int(ctx.attr("min_gram_length")), int(ctx.attr("max_gram_length"))
    grams = tuple(g for g in _grams_by_size(ctx) if low <= g[0] <= high)
    slots = [int(i) for i in ctx.attr("ngram_indexes", [])]
    weights = ctx.attr("weights")
    kwargs = {
        "grams": grams,
        "output_size": max(slots) + 1 if slots else 0,
        "max_skip": int(ctx.attr("max_skip_count", 0)),
        "mode": str(ctx.attr("mode", "TF")),
    }
    if weights is not None and len(weights):
        kwargs["weights"] = tuple(float(w) for w in weights)
    return Cell("TfIdfVectorizer", kwargs, [Input(0)], role="tfidf")
