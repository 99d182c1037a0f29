"""Build a corpus of tiny transformer ONNX models for the readability work (not committed).

Decoders with a KV cache (Llama, Mistral with a sliding window, Qwen2, GPT-2, GPT-NeoX, Bloom with
ALiBi), ALBERT (one shared layer), BART (encoder-decoder), a Whisper encoder (audio) and DeiT, each
exported by the TorchScript exporter (opset 17) and the dynamo exporter (opset 18), random weights::

    python tools/corpus/build_transformers.py --out /work/tcorpus

It writes ``manifest.json`` in the same form as build_corpus.py (model, file, exporter, inputs,
shapes). Run it with a Python that has torch, onnxscript and transformers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_corpus import _entry, export, randomize  # noqa: E402

VOCAB, LAYERS = 99, 2


class DecoderWithCache(torch.nn.Module):
    """A causal LM called with flat past keys/values; returns logits and the present ones."""

    def __init__(self, model, layers: int):
        super().__init__()
        self.model, self.layers = model, layers

    def forward(self, input_ids, attention_mask, *past):
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        for index in range(self.layers):
            cache.update(past[2 * index], past[2 * index + 1], index)
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            past_key_values=cache,
            use_cache=True,
        )
        present = []
        for layer in out.past_key_values.layers:
            present += [layer.keys, layer.values]
        return (out.logits, *present)


class Outputs(torch.nn.Module):
    """A Hugging Face model called with keyword inputs, returning a tuple of tensors."""

    def __init__(self, model, names, keys):
        super().__init__()
        self.model, self.names, self.keys = model, list(names), list(keys)

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)))
        return tuple(out[key] for key in self.keys)


def _decoder(name, cls, config, kv_heads, head_dim, past=3, new=2):
    model = cls(config).eval()
    past_names = [f"past_{kind}_{i}" for i in range(LAYERS) for kind in ("key", "value")]
    names = ["input_ids", "attention_mask", *past_names]
    args = (
        torch.randint(1, VOCAB, (1, new)),
        torch.ones(1, past + new, dtype=torch.int64),
        *[torch.randn(1, kv_heads, past, head_dim) for _ in past_names],
    )
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total"}}
    axes.update({n: {0: "batch", 2: "past"} for n in past_names})
    outputs = ["logits"] + [n.replace("past", "present") for n in past_names]
    return name, DecoderWithCache(model, LAYERS), args, names, outputs, axes


def models():
    import transformers as tf

    small = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=LAYERS)
    specs = [
        _decoder(
            "llama_kv",
            tf.LlamaForCausalLM,
            tf.LlamaConfig(**small, num_attention_heads=4, num_key_value_heads=2),
            2,
            8,
        ),
        _decoder(
            "mistral_kv",
            tf.MistralForCausalLM,
            tf.MistralConfig(
                **small, num_attention_heads=4, num_key_value_heads=2, sliding_window=4
            ),
            2,
            8,
        ),
        _decoder(
            "qwen2_kv",
            tf.Qwen2ForCausalLM,
            tf.Qwen2Config(**small, num_attention_heads=4, num_key_value_heads=2),
            2,
            8,
        ),
        _decoder(
            "gpt2_kv",
            tf.GPT2LMHeadModel,
            tf.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=LAYERS, n_head=2, n_positions=64),
            2,
            16,
        ),
        _decoder(
            "gpt_neox_kv",
            tf.GPTNeoXForCausalLM,
            tf.GPTNeoXConfig(**small, num_attention_heads=4, rotary_pct=0.5),
            4,
            8,
        ),
        _decoder(
            "bloom_kv",
            tf.BloomForCausalLM,
            tf.BloomConfig(vocab_size=VOCAB, hidden_size=32, n_layer=LAYERS, n_head=4),
            4,
            8,
        ),
    ]
    text_axes = {0: "batch", 1: "sequence"}
    albert = tf.AlbertModel(
        tf.AlbertConfig(
            vocab_size=VOCAB,
            embedding_size=16,
            hidden_size=32,
            num_hidden_layers=3,
            num_attention_heads=2,
            intermediate_size=64,
        )
    ).eval()
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[-1, 4:] = 0
    specs.append(
        (
            "albert",
            Outputs(albert, ["input_ids", "attention_mask"], ["last_hidden_state"]),
            (torch.randint(1, VOCAB, (2, 8)), mask),
            ["input_ids", "attention_mask"],
            ["last_hidden_state"],
            {"input_ids": text_axes, "attention_mask": text_axes},
        )
    )
    bart = tf.BartModel(
        tf.BartConfig(
            vocab_size=VOCAB,
            d_model=32,
            encoder_layers=LAYERS,
            decoder_layers=LAYERS,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
            use_cache=False,
        )
    ).eval()
    names = ["input_ids", "attention_mask", "decoder_input_ids"]
    specs.append(
        (
            "bart",
            Outputs(bart, names, ["last_hidden_state"]),
            (torch.randint(3, VOCAB, (2, 8)), mask, torch.randint(3, VOCAB, (2, 5))),
            names,
            ["last_hidden_state"],
            {
                "input_ids": text_axes,
                "attention_mask": text_axes,
                "decoder_input_ids": {0: "batch", 1: "target"},
            },
        )
    )
    whisper = tf.WhisperModel(
        tf.WhisperConfig(
            vocab_size=VOCAB,
            num_mel_bins=16,
            d_model=32,
            encoder_layers=LAYERS,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_source_positions=16,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            decoder_start_token_id=0,
        )
    ).eval()
    specs.append(
        (
            "whisper_encoder",
            Outputs(whisper.encoder, ["input_features"], ["last_hidden_state"]),
            (torch.randn(1, 16, 32),),
            ["input_features"],
            ["last_hidden_state"],
            {"input_features": {0: "batch"}},
        )
    )
    deit = tf.DeiTForImageClassification(
        tf.DeiTConfig(
            image_size=32,
            patch_size=8,
            hidden_size=32,
            num_hidden_layers=LAYERS,
            num_attention_heads=2,
            intermediate_size=64,
            num_labels=5,
        )
    ).eval()
    specs.append(
        (
            "deit",
            Outputs(deit, ["pixel_values"], ["logits"]),
            (torch.randn(1, 3, 32, 32),),
            ["pixel_values"],
            ["logits"],
            {"pixel_values": {0: "batch"}},
        )
    )
    return specs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/work/tcorpus", help="corpus folder (not in the repo)")
    parser.add_argument("--only", nargs="*", default=[], help="build only these model names")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    entries, failures = [], []
    for name, module, inputs, names, outputs, axes in models():
        if args.only and name not in args.only:
            continue
        randomize(module).eval()
        for exporter, opset in (("torchscript", 17), ("dynamo", 18)):
            started = time.perf_counter()
            try:
                path = export(name, module, inputs, names, outputs, axes, out, exporter, opset)
            except Exception as exc:  # noqa: BLE001 - exporters raise anything
                message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                failures.append({"model": name, "exporter": exporter, "error": message})
                print(f"  export failed: {name} [{exporter}]: {message}", flush=True)
                continue
            entry = _entry(path, name, "transformers", exporter, inputs, names, export.notes)
            entries.append(entry)
            print(f"  {path.name}: {time.perf_counter() - started:.1f}s", flush=True)
    manifest = {"models": entries, "export_failures": failures}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"{len(entries)} model files, {len(failures)} export failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
