"""The converted BERT and GPT-2 against the same networks written by hand in MindSpore.

    python tools/benchmark_handwritten.py [--layers 4] [--hidden 128] [--batch 4] [--seq 64]
                                          [--rounds 7] [--count 10] [--models bert gpt2]

Makes a Hugging Face ``BertModel`` and ``GPT2Model`` (random weights, eager attention) with
transformers in the PyTorch environment (``--torch_python``, default /work/venv-torch), exports
them with the dynamo exporter (dynamic batch and sequence), converts them with mindconverter, and
builds the same networks written by hand the way mindnlp writes them, loading the same weights.
Both networks must agree; then they are timed interleaved (rounds alternate which one goes
first) in PYNATIVE_MODE and GRAPH_MODE. Prints one line per model and mode: median time per
forward pass of each and the ratio converted / hand-written.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GLOG_v", "3")

import mindspore as ms  # noqa: E402
from mindspore import nn, ops  # noqa: E402

EXPORT = r"""
import sys, warnings
from pathlib import Path
import numpy as np, torch, transformers as tf

out, layers, hidden = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
heads = hidden // 32
torch.manual_seed(0)


class Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        config = tf.BertConfig(vocab_size=1000, hidden_size=hidden, num_hidden_layers=layers,
                               num_attention_heads=heads, intermediate_size=4 * hidden)
        config._attn_implementation = "eager"
        self.bert = tf.BertModel(config, add_pooling_layer=False).eval()

    def forward(self, input_ids, attention_mask):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class Gpt2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        config = tf.GPT2Config(vocab_size=1000, n_embd=hidden, n_layer=layers, n_head=heads)
        config._attn_implementation = "eager"
        self.gpt2 = tf.GPT2Model(config).eval()

    def forward(self, input_ids):
        return self.gpt2(input_ids=input_ids).last_hidden_state


ids = torch.randint(0, 1000, (2, 8))
for name, module, args in (("bert", Bert(), (ids, torch.ones_like(ids))), ("gpt2", Gpt2(), (ids,))):
    names = ["input_ids", "attention_mask"][: len(args)]
    auto = torch.export.Dim.AUTO
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module, args, dynamo=True, opset_version=18, input_names=names,
            output_names=["last_hidden_state"], dynamic_shapes=tuple({0: auto, 1: auto} for _ in args),
            optimize=True, verbose=False, report=False,
        )
        program.save(str(out / f"{name}.onnx"))
    state = {key: value.detach().numpy() for key, value in module.state_dict().items()}
    np.savez(out / f"{name}_weights.npz", **state)
"""


class SelfAttention(nn.Cell):
    """Multi-head attention on q, k, v projections, as mindnlp writes it."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.num_heads = heads
        self.head_dim = hidden // heads
        self.scale = 1 / math.sqrt(self.head_dim)

    def heads(self, x, b, s):
        return x.view(b, s, self.num_heads, self.head_dim).swapaxes(1, 2)

    def attend(self, q, k, v, mask, b, s):
        scores = ops.matmul(q, k.swapaxes(-1, -2)) * self.scale
        probs = ops.softmax(scores + mask, axis=-1)
        return ops.matmul(probs, v).swapaxes(1, 2).reshape(b, s, -1)


class BertAttention(SelfAttention):
    def __init__(self, hidden: int, heads: int):
        super().__init__(hidden, heads)
        self.query = nn.Dense(hidden, hidden)
        self.key = nn.Dense(hidden, hidden)
        self.value = nn.Dense(hidden, hidden)
        self.dense = nn.Dense(hidden, hidden)
        self.layer_norm = nn.LayerNorm((hidden,), epsilon=1e-12)

    def construct(self, hidden_states, attention_mask):
        b, s, _ = hidden_states.shape
        q = self.heads(self.query(hidden_states), b, s)
        k = self.heads(self.key(hidden_states), b, s)
        v = self.heads(self.value(hidden_states), b, s)
        context = self.attend(q, k, v, attention_mask, b, s)
        return self.layer_norm(self.dense(context) + hidden_states)


class BertLayer(nn.Cell):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.attention = BertAttention(hidden, heads)
        self.intermediate = nn.Dense(hidden, 4 * hidden)
        self.act = nn.GELU(approximate=False)
        self.output = nn.Dense(4 * hidden, hidden)
        self.layer_norm = nn.LayerNorm((hidden,), epsilon=1e-12)

    def construct(self, hidden_states, attention_mask):
        x = self.attention(hidden_states, attention_mask)
        return self.layer_norm(self.output(self.act(self.intermediate(x))) + x)


class HandBert(nn.Cell):
    def __init__(self, layers: int, hidden: int):
        super().__init__()
        self.word_embeddings = nn.Embedding(1000, hidden)
        self.position_embeddings = nn.Embedding(512, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.layer_norm = nn.LayerNorm((hidden,), epsilon=1e-12)
        self.layers = nn.CellList([BertLayer(hidden, hidden // 32) for _ in range(layers)])

    def construct(self, input_ids, attention_mask):
        s = input_ids.shape[1]
        x = self.word_embeddings(input_ids) + self.position_embeddings(ops.arange(s))
        x = self.layer_norm(x + self.token_type_embeddings(ops.zeros_like(input_ids)))
        mask = (1.0 - attention_mask[:, None, None, :].astype(ms.float32)) * -3.4028234663852886e38
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Gpt2Attention(SelfAttention):
    def __init__(self, hidden: int, heads: int):
        super().__init__(hidden, heads)
        self.hidden = hidden
        self.c_attn = nn.Dense(hidden, 3 * hidden)
        self.c_proj = nn.Dense(hidden, hidden)

    def construct(self, hidden_states, causal_mask):
        b, s, _ = hidden_states.shape
        q, k, v = ops.split(self.c_attn(hidden_states), self.hidden, axis=2)
        q, k, v = self.heads(q, b, s), self.heads(k, b, s), self.heads(v, b, s)
        return self.c_proj(self.attend(q, k, v, causal_mask, b, s))


class Gpt2Block(nn.Cell):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm((hidden,), epsilon=1e-5)
        self.attn = Gpt2Attention(hidden, heads)
        self.ln_2 = nn.LayerNorm((hidden,), epsilon=1e-5)
        self.c_fc = nn.Dense(hidden, 4 * hidden)
        self.act = nn.GELU(approximate=True)
        self.c_proj = nn.Dense(4 * hidden, hidden)

    def construct(self, hidden_states, causal_mask):
        x = hidden_states + self.attn(self.ln_1(hidden_states), causal_mask)
        return x + self.c_proj(self.act(self.c_fc(self.ln_2(x))))


class HandGpt2(nn.Cell):
    def __init__(self, layers: int, hidden: int):
        super().__init__()
        self.wte = nn.Embedding(1000, hidden)
        self.wpe = nn.Embedding(1024, hidden)
        self.h = nn.CellList([Gpt2Block(hidden, hidden // 32) for _ in range(layers)])
        self.ln_f = nn.LayerNorm((hidden,), epsilon=1e-5)
        causal = np.triu(np.full((1024, 1024), -3.4028234663852886e38, np.float32), 1)
        self.causal = ms.Tensor(causal[None, None])

    def construct(self, input_ids):
        s = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe(ops.arange(s))
        mask = self.causal[:, :, :s, :s]
        for block in self.h:
            x = block(x, mask)
        return self.ln_f(x)


def load_bert(net: HandBert, weights: dict) -> None:
    """The PyTorch state dict into the hand-written BERT."""
    pairs = {
        "word_embeddings.embedding_table": "embeddings.word_embeddings.weight",
        "position_embeddings.embedding_table": "embeddings.position_embeddings.weight",
        "token_type_embeddings.embedding_table": "embeddings.token_type_embeddings.weight",
        "layer_norm.gamma": "embeddings.LayerNorm.weight",
        "layer_norm.beta": "embeddings.LayerNorm.bias",
    }
    for i in range(len(net.layers)):
        source = f"encoder.layer.{i}."
        for ours, theirs in (
            ("attention.query", "attention.self.query"),
            ("attention.key", "attention.self.key"),
            ("attention.value", "attention.self.value"),
            ("attention.dense", "attention.output.dense"),
            ("intermediate", "intermediate.dense"),
            ("output", "output.dense"),
        ):
            for kind in ("weight", "bias"):
                pairs[f"layers.{i}.{ours}.{kind}"] = f"{source}{theirs}.{kind}"
        for ours, theirs in (
            ("attention.layer_norm", "attention.output.LayerNorm"),
            ("layer_norm", "output.LayerNorm"),
        ):
            pairs[f"layers.{i}.{ours}.gamma"] = f"{source}{theirs}.weight"
            pairs[f"layers.{i}.{ours}.beta"] = f"{source}{theirs}.bias"
    _load(net, weights, {k: ("bert." + v, False) for k, v in pairs.items()})


def load_gpt2(net: HandGpt2, weights: dict) -> None:
    """The PyTorch state dict into the hand-written GPT-2 (Conv1D weights transposed)."""
    pairs = {
        "wte.embedding_table": ("wte.weight", False),
        "wpe.embedding_table": ("wpe.weight", False),
        "ln_f.gamma": ("ln_f.weight", False),
        "ln_f.beta": ("ln_f.bias", False),
    }
    for i in range(len(net.h)):
        for ours, theirs in (
            ("attn.c_attn", "attn.c_attn"),
            ("attn.c_proj", "attn.c_proj"),
            ("c_fc", "mlp.c_fc"),
            ("c_proj", "mlp.c_proj"),
        ):
            pairs[f"h.{i}.{ours}.weight"] = (f"h.{i}.{theirs}.weight", True)
            pairs[f"h.{i}.{ours}.bias"] = (f"h.{i}.{theirs}.bias", False)
        for norm in ("ln_1", "ln_2"):
            pairs[f"h.{i}.{norm}.gamma"] = (f"h.{i}.{norm}.weight", False)
            pairs[f"h.{i}.{norm}.beta"] = (f"h.{i}.{norm}.bias", False)
    _load(net, weights, {k: ("gpt2." + v, t) for k, (v, t) in pairs.items()})


def _load(net: nn.Cell, weights: dict, pairs: dict) -> None:
    params = dict(net.parameters_and_names())
    assert set(params) == set(pairs), sorted(set(params) ^ set(pairs))
    for name, (source, transpose) in pairs.items():
        array = weights[source].T if transpose else weights[source]
        params[name].set_data(ms.Tensor(np.ascontiguousarray(array)))


def _time(net, inputs, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        net(*inputs).asnumpy()
    return (time.perf_counter() - started) / count


def compare(converted, hand, inputs, rounds: int, count: int) -> tuple[float, float, float]:
    """Agreement (max abs difference), then median seconds per forward pass of each network."""
    difference = float(np.abs(converted(*inputs).asnumpy() - hand(*inputs).asnumpy()).max())
    times = {"converted": [], "hand": []}
    for index in range(rounds):
        order = ("converted", "hand") if index % 2 == 0 else ("hand", "converted")
        for name in order:
            times[name].append(_time(converted if name == "converted" else hand, inputs, count))
    return difference, statistics.median(times["converted"]), statistics.median(times["hand"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--torch_python", default="/work/venv-torch/bin/python")
    parser.add_argument("--models", nargs="+", default=["bert", "gpt2"], choices=["bert", "gpt2"])
    args = parser.parse_args()
    from mindconverter import convert
    from mindconverter.check.network import build_network

    folder = Path(tempfile.mkdtemp(prefix="benchmark_handwritten_"))
    subprocess.run(
        [args.torch_python, "-c", EXPORT, str(folder), str(args.layers), str(args.hidden)],
        check=True,
    )
    rng = np.random.default_rng(0)
    ids = ms.Tensor(rng.integers(0, 1000, (args.batch, args.seq)), ms.int64)
    mask = np.ones((args.batch, args.seq), np.int64)
    mask[0, args.seq // 2 :] = 0
    cases = {
        "bert": (HandBert, load_bert, [ids, ms.Tensor(mask)], ["2,8", "2,8"]),
        "gpt2": (HandGpt2, load_gpt2, [ids], ["2,8"]),
    }
    for name in args.models:
        hand_class, load, inputs, shapes = cases[name]
        result = convert(folder / f"{name}.onnx", shape=shapes, output=folder / name)
        weights = dict(np.load(folder / f"{name}_weights.npz"))
        for mode, label in ((ms.PYNATIVE_MODE, "PYNATIVE"), (ms.GRAPH_MODE, "GRAPH")):
            ms.set_context(mode=mode)
            converted = build_network(result.script_path, result.checkpoint_path)
            hand = hand_class(args.layers, args.hidden)
            load(hand, weights)
            converted.set_train(False)
            hand.set_train(False)
            difference, ours, theirs = compare(converted, hand, inputs, args.rounds, args.count)
            print(
                f"{name} {label}: converted {ours * 1e3:.2f} ms, hand-written {theirs * 1e3:.2f} ms"
                f" per forward pass, ratio {ours / theirs:.3f} (max abs difference "
                f"{difference:.1e})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
