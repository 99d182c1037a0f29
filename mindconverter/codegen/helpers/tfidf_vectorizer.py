"""The script's ``tfidf_vectorizer`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import nn, ops


class TfIdfVectorizer(nn.Cell):
    """ONNX's TfIdfVectorizer on integer tokens: counts, per row, the pool's n-grams made of
    tokens ``distance`` apart (1 for unigrams, 1 to ``max_skip + 1`` for longer ones), adds each
    count into its output slot, and weighs them by ``mode`` ("TF": counts, "IDF": weight where
    seen, "TFIDF": count times weight). ``grams`` holds, per n-gram length, the n-grams and
    their output slots."""

    def __init__(self, grams, output_size, max_skip=0, mode="TF", weights=None):
        super().__init__()
        self.grams = grams
        self.output_size = output_size
        self.max_skip = max_skip
        self.mode = mode
        self.weights = weights

    def construct(self, x):
        rows = x if x.ndim == 2 else ops.expand_dims(x, 0)
        length = rows.shape[1]
        total = ops.zeros((rows.shape[0], self.output_size), ms.float32)
        for size, tokens, slots in self.grams:
            pool = ms.Tensor(tokens, rows.dtype)
            into = ops.one_hot(ms.Tensor(slots, ms.int32), self.output_size, 1.0, 0.0)
            for distance in range(1, (1 if size == 1 else self.max_skip + 1) + 1):
                width = length - (size - 1) * distance
                if width > 0:
                    window = ops.stack(
                        [rows[:, j * distance : j * distance + width] for j in range(size)], -1
                    )
                    hits = ops.all(ops.expand_dims(window, 2) == pool, axis=-1)
                    total = total + ops.matmul(ops.sum(ops.cast(hits, ms.float32), 1), into)
        if self.mode == "IDF":
            total = ops.cast(total > 0, ms.float32)
        if self.mode != "TF" and self.weights is not None:
            total = total * ms.Tensor(self.weights, ms.float32)
        return total if x.ndim == 2 else total[0]
