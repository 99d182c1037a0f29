"""Export the small attention models committed under tests/fixtures/ (needs torch; tests do not).

    /work/venv-torch/bin/python tools/make_attention_fixtures.py

``tiny_llama_{torchscript,dynamo}.onnx``: a Llama-style decoder written as Hugging Face writes
it (RMSNorm, rotary position embeddings with rotate_half, grouped-query heads through
``repeat_kv``, a causal mask, a key/value cache given as inputs and returned as outputs), with
dynamic batch, sequence and cache length, so a greedy decode loop can run on it.

``tiny_vit_torchscript.onnx``, ``tiny_whisper_encoder_dynamo.onnx`` and
``tiny_bart_torchscript.onnx`` (the TorchScript exporter writes smaller files):
Hugging Face's ViT, Whisper encoder (an audio encoder) and BART (an encoder-decoder with causal
self-attention and cross-attention) at toy width, for golden files of their attention;
``tiny_bloom_{torchscript,dynamo}.onnx``: BLOOM, whose ALiBi attention multiplies heads folded
into the batch (``baddbmm``); ``tiny_t5_encoder_torchscript.onnx``: T5's encoder, whose first
block owns the relative position table and hands the position bias to the others;
``tiny_t5_torchscript.onnx``: the whole T5 (one encoder block, two decoder blocks), whose
decoder attention computes the same causal mask in every block;
``tiny_phi3_torchscript.onnx``: Phi-3, whose query and key rotary embeddings each end in a
concatenation with an empty pass-through part;
``tiny_gptj_torchscript.onnx``: GPT-J, whose rotary embedding turns interleaved pairs of the
first features of each head, on sin and cos tables layer 0 repeats for every layer;
``tiny_swin_dynamo.onnx``: Swin with two stages whose head sizes and window counts differ
(numbers of ``construct`` that become class arguments; stack traces dropped);
``tiny_dinov2_dynamo.onnx``: DINOv2, whose token count the dynamo exporter fixes at 17 once it
specialises the position-table interpolation away (stack traces dropped to keep it small);
``tiny_gemma2_kv_torchscript.onnx``: Gemma-2 with a key/value cache, a sliding-window layer
then a global one: the sliding layer's cache is cropped to its window (transformers' cache
does it inside the layer's scope) and the global layer's is not;
``tiny_olmo2_torchscript.onnx``: OLMo-2, whose q_norm and k_norm normalise the whole
projection before the head split;
``tiny_swin_shifted_torchscript.onnx``: Swin whose second block rolls its windows
(``torch.roll`` exported as slices and concatenations);
``tiny_hunyuan_torchscript.onnx``: HunYuan, whose query and key are normalized after
their rotary embedding;
``tiny_smollm3_torchscript.onnx``: SmolLM3 with four layers, the last of which skips the
rotary embedding (``no_rope_layers``);
``tiny_torch_encoder_dynamo.onnx``: PyTorch's own ``nn.TransformerEncoder``, batch first, whose
``nn.MultiheadAttention`` works sequence-first and runs its projections functionally.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
VOCAB, HIDDEN, HEADS, KV_HEADS, LAYERS, MAX_POSITIONS = 48, 16, 4, 2, 2, 64
HEAD_DIM = HIDDEN // HEADS


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, groups: int):
    batch, kv_heads, steps, head_dim = x.shape
    x = x[:, :, None, :, :].expand(batch, kv_heads, groups, steps, head_dim)
    return x.reshape(batch, kv_heads * groups, steps, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)

    def forward(self, x, cos, sin, mask, past_k, past_v):
        batch, steps, _ = x.shape
        q = self.q_proj(x).view(batch, steps, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k_proj(x).view(batch, steps, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v_proj(x).view(batch, steps, KV_HEADS, HEAD_DIM).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        groups = HEADS // KV_HEADS
        scores = torch.matmul(q, repeat_kv(k, groups).transpose(2, 3)) / math.sqrt(HEAD_DIM)
        probs = torch.softmax(scores + mask, dim=-1)
        context = torch.matmul(probs, repeat_kv(v, groups)).transpose(1, 2)
        return self.o_proj(context.reshape(batch, steps, -1)), k, v


class LlamaLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(HIDDEN)
        self.self_attn = LlamaAttention()
        self.post_attention_layernorm = RMSNorm(HIDDEN)
        self.gate_proj = nn.Linear(HIDDEN, 2 * HIDDEN, bias=False)
        self.up_proj = nn.Linear(HIDDEN, 2 * HIDDEN, bias=False)
        self.down_proj = nn.Linear(2 * HIDDEN, HIDDEN, bias=False)

    def forward(self, x, cos, sin, mask, past_k, past_v):
        attended, k, v = self.self_attn(self.input_layernorm(x), cos, sin, mask, past_k, past_v)
        x = x + attended
        h = self.post_attention_layernorm(x)
        x = x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))
        return x, k, v


class TinyLlama(nn.Module):
    """Token ids and a key/value cache -> logits and the extended cache."""

    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(LlamaLayer() for _ in range(LAYERS))
        self.norm = RMSNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, input_ids, past_keys, past_values):
        steps, past = input_ids.shape[1], past_keys.shape[3]
        positions = torch.arange(past, past + steps).float()
        freqs = positions[:, None] * self.inv_freq[None, :]
        angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = angles.cos()[None, None], angles.sin()[None, None]
        rows = torch.arange(steps)[:, None] + past
        cols = torch.arange(past + steps)[None, :]
        mask = torch.where(cols <= rows, 0.0, torch.finfo(torch.float32).min)[None, None]
        x = self.embed_tokens(input_ids)
        keys, values = [], []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, mask, past_keys[i], past_values[i])
            keys.append(k)
            values.append(v)
        return self.lm_head(self.norm(x)), torch.stack(keys), torch.stack(values)


def example_inputs(batch: int = 1, steps: int = 3, past: int = 2):
    ids = torch.randint(0, VOCAB, (batch, steps))
    cache = (LAYERS, batch, KV_HEADS, past, HEAD_DIM)
    return ids, torch.randn(cache), torch.randn(cache)


def export_tiny_llama() -> None:
    torch.manual_seed(0)
    model = TinyLlama().eval()
    for parameter in model.parameters():  # RMSNorm weights of ones would hide a wrong mapping
        nn.init.normal_(parameter, std=0.3)
    args = example_inputs()
    names = ["input_ids", "past_keys", "past_values"]
    outputs = ["logits", "present_keys", "present_values"]
    axes = {
        "input_ids": {0: "batch", 1: "sequence"},
        "past_keys": {1: "batch", 3: "past"},
        "past_values": {1: "batch", 3: "past"},
    }
    torch.onnx.export(
        model, args, FIXTURES / "tiny_llama_torchscript.onnx", input_names=names,
        output_names=outputs, dynamic_axes=axes, opset_version=17, dynamo=False,
    )  # fmt: skip
    batch, seq, past = (torch.export.Dim(n, max=MAX_POSITIONS) for n in ("batch", "seq", "past"))
    shapes = {
        "input_ids": {0: batch, 1: seq},
        "past_keys": {1: batch, 3: past},
        "past_values": {1: batch, 3: past},
    }
    program = torch.onnx.export(
        model, args, input_names=names, output_names=outputs, dynamic_shapes=shapes,
        opset_version=18, dynamo=True,
    )  # fmt: skip
    program.save(str(FIXTURES / "tiny_llama_dynamo.onnx"), external_data=False)


def _stub_torchvision_ops() -> None:
    """transformers imports torchvision when installed; the CPU-less torchvision wheel lacks its
    compiled operators, so define their schemas (never called here) before that import."""
    try:
        torch.ops.torchvision.nms  # noqa: B018 - raises when the extension did not load
        return
    except (AttributeError, RuntimeError):
        pass
    library = torch.library.Library("torchvision", "DEF")
    library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _stub_torchvision_ops.library = library  # keep the registration alive


class _Plain(nn.Module):
    """A Hugging Face model called with keyword inputs, returning its first output."""

    def __init__(self, model: nn.Module, names: list[str]):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs):
        out = self.model(**dict(zip(self.names, inputs)))
        return out[0] if isinstance(out, tuple) else out.last_hidden_state


def _export(model: nn.Module, name: str, inputs: dict, dims: dict, dynamo: bool) -> None:
    """``model`` (with random small weights) through the dynamo exporter (opset 18) or the
    TorchScript one (opset 17), dynamic where ``dims`` says."""
    torch.manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn_like(parameter) * 0.2)
    plain = _Plain(model.eval(), list(inputs)).eval()
    if not dynamo:
        axes = {key: {axis: str(dim) for axis, dim in dims.get(key, {}).items()} for key in inputs}
        torch.onnx.export(
            plain, tuple(inputs.values()), FIXTURES / f"{name}.onnx", input_names=list(inputs),
            output_names=["output"], dynamic_axes=axes, opset_version=17, dynamo=False,
        )  # fmt: skip
        return
    shapes = tuple(dims.get(key, {}) for key in inputs)
    program = torch.onnx.export(
        plain, tuple(inputs.values()), input_names=list(inputs), output_names=["output"],
        dynamic_shapes=(shapes,), opset_version=18, dynamo=True,
    )  # fmt: skip
    program.save(str(FIXTURES / f"{name}.onnx"), external_data=False)


def export_transformers() -> None:
    _stub_torchvision_ops()
    import transformers as hf

    batch, seq = torch.export.Dim("batch", max=8), torch.export.Dim("sequence", max=16)
    vit = hf.ViTModel(
        hf.ViTConfig(
            image_size=16, patch_size=8, hidden_size=16, num_hidden_layers=2,
            num_attention_heads=2, intermediate_size=32,
        ),
        add_pooling_layer=False,
    )  # fmt: skip
    pixels = {"pixel_values": torch.randn(1, 3, 16, 16)}
    _export(vit, "tiny_vit_torchscript", pixels, {"pixel_values": {0: batch}}, dynamo=False)
    whisper = hf.WhisperConfig(
        num_mel_bins=8, d_model=16, encoder_layers=2, encoder_attention_heads=2,
        encoder_ffn_dim=32, max_source_positions=8, decoder_layers=1,
        decoder_attention_heads=2, decoder_ffn_dim=32, vocab_size=40, pad_token_id=0,
        bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
    )  # fmt: skip
    encoder = hf.WhisperModel(whisper).get_encoder()
    features = {"input_features": torch.randn(1, 8, 16)}
    dims = {"input_features": {0: batch}}
    _export(encoder, "tiny_whisper_encoder_dynamo", features, dims, dynamo=True)
    bart = hf.BartModel(
        hf.BartConfig(
            vocab_size=40, d_model=16, encoder_layers=1, decoder_layers=1,
            encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
            decoder_ffn_dim=32, max_position_embeddings=32,
        )
    )  # fmt: skip
    tokens = {
        "input_ids": torch.randint(0, 40, (2, 6)),
        "attention_mask": torch.ones(2, 6, dtype=torch.int64),
        "decoder_input_ids": torch.randint(0, 40, (2, 4)),
    }
    target = torch.export.Dim("target", max=16)
    dims = {
        "input_ids": {0: batch, 1: seq},
        "attention_mask": {0: batch, 1: seq},
        "decoder_input_ids": {0: batch, 1: target},
    }
    _export(bart, "tiny_bart_torchscript", tokens, dims, dynamo=False)
    bloom = hf.BloomModel(
        hf.BloomConfig(vocab_size=40, hidden_size=16, n_layer=1, n_head=2)
    )  # fmt: skip
    tokens = {
        "input_ids": torch.randint(0, 40, (2, 5)),
        "attention_mask": torch.ones(2, 5, dtype=torch.int64),
    }
    dims = {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}}
    _export(bloom, "tiny_bloom_torchscript", tokens, dims, dynamo=False)
    _export(bloom, "tiny_bloom_dynamo", tokens, {}, dynamo=True)  # it exports at fixed sizes
    t5 = hf.T5EncoderModel(
        hf.T5Config(
            vocab_size=40, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2,
            relative_attention_num_buckets=8, relative_attention_max_distance=16,
        )
    )  # fmt: skip
    _export(t5, "tiny_t5_encoder_torchscript", tokens, dims, dynamo=False)
    gptj = hf.GPTJModel(
        hf.GPTJConfig(
            vocab_size=40, n_embd=16, n_layer=2, n_head=2, rotary_dim=4, n_positions=32,
            bos_token_id=1, eos_token_id=2,
        )
    )  # fmt: skip
    _export(gptj, "tiny_gptj_torchscript", tokens, dims, dynamo=False)
    dinov2 = hf.Dinov2Model(
        hf.Dinov2Config(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            image_size=28, patch_size=7,
        )
    )  # fmt: skip
    pixels = {"pixel_values": torch.randn(2, 3, 28, 28)}
    side = torch.export.Dim("side", min=2, max=9)
    dims = {"pixel_values": {0: batch, 2: 7 * side, 3: 7 * side}}
    _export(dinov2, "tiny_dinov2_dynamo", pixels, dims, dynamo=True)
    _drop_metadata(FIXTURES / "tiny_dinov2_dynamo.onnx")
    swin = hf.SwinModel(
        hf.SwinConfig(
            image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
            window_size=4, attn_implementation="eager",
        ),
        add_pooling_layer=False,
    )  # fmt: skip
    pixels = {"pixel_values": torch.randn(2, 3, 32, 32)}
    _export(swin, "tiny_swin_dynamo", pixels, {"pixel_values": {0: batch}}, dynamo=True)
    _drop_metadata(FIXTURES / "tiny_swin_dynamo.onnx")


def export_t5() -> None:
    _stub_torchvision_ops()
    import transformers as hf

    t5 = hf.T5Model(
        hf.T5Config(
            vocab_size=40, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=2,
            num_heads=2, relative_attention_num_buckets=8, relative_attention_max_distance=16,
            use_cache=False,
        )
    )  # fmt: skip
    tokens = {
        "input_ids": torch.randint(0, 40, (2, 5)),
        "attention_mask": torch.ones(2, 5, dtype=torch.int64),
        "decoder_input_ids": torch.randint(0, 40, (2, 4)),
    }
    dims = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "sequence"},
        "decoder_input_ids": {0: "batch", 1: "target"},
    }
    _export(t5, "tiny_t5_torchscript", tokens, dims, dynamo=False)


def export_phi3() -> None:
    _stub_torchvision_ops()
    import transformers as hf

    phi3 = hf.Phi3Model(
        hf.Phi3Config(
            vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
            pad_token_id=0, use_cache=False,
        )
    )  # fmt: skip
    tokens = {
        "input_ids": torch.randint(0, 40, (2, 5)),
        "attention_mask": torch.ones(2, 5, dtype=torch.int64),
    }
    dims = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}
    _export(phi3, "tiny_phi3_torchscript", tokens, dims, dynamo=False)


def export_gemma2_kv() -> None:
    _stub_torchvision_ops()
    import transformers as hf

    sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))
    from build_transformers import DecoderWithCache  # the corpus's cache wrapper

    config = hf.Gemma2Config(
        vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=64,
        pad_token_id=0,
    )  # fmt: skip
    torch.manual_seed(1)
    model = hf.Gemma2ForCausalLM(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn_like(parameter) * 0.2)
    past = [f"past_{kind}_{i}" for i in range(2) for kind in ("key", "value")]
    args = (
        torch.randint(1, 40, (1, 2)),
        torch.ones(1, 5, dtype=torch.int64),
        *[torch.randn(1, 1, 3, 8) for _ in past],
    )
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total"}}
    axes.update({name: {0: "batch", 2: "past"} for name in past})
    outputs = ["logits"] + [name.replace("past", "present") for name in past]
    torch.onnx.export(
        DecoderWithCache(model, 2).eval(), args, FIXTURES / "tiny_gemma2_kv_torchscript.onnx",
        input_names=["input_ids", "attention_mask", *past], output_names=outputs,
        dynamic_axes=axes, opset_version=17, dynamo=False,
    )  # fmt: skip


def export_olmo2() -> None:
    """OLMo-2: its q_norm and k_norm normalise the whole projection, before the head split."""
    _stub_torchvision_ops()
    import transformers as hf

    config = hf.Olmo2Config(
        vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
        pad_token_id=0, use_cache=False,
    )  # fmt: skip
    model = hf.Olmo2Model(config).eval()
    tokens = {
        "input_ids": torch.randint(1, 40, (2, 5)),
        "attention_mask": torch.ones(2, 5, dtype=torch.int64),
    }
    dims = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}
    _export(model, "tiny_olmo2_torchscript", tokens, dims, dynamo=False)


def export_torch_encoder() -> None:
    """PyTorch's own nn.TransformerEncoder (nn.MultiheadAttention inside), batch first."""

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(16, 3)

        def forward(self, x):
            return self.head(self.encoder(x))

    torch.manual_seed(2)
    model = Encoder().eval()
    with torch.no_grad():  # distinct layers: the encoder deep-copies one
        for parameter in model.parameters():
            parameter.copy_(torch.randn_like(parameter) * 0.2)
    path = FIXTURES / "tiny_torch_encoder_dynamo.onnx"
    batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("seq", min=2, max=64)
    torch.onnx.export(
        model, (torch.randn(2, 6, 16),), path, input_names=["x"], output_names=["y"],
        dynamic_shapes=({0: batch, 1: seq},), opset_version=18, dynamo=True, external_data=False,
    )  # fmt: skip
    _drop_metadata(path)


def export_torch_attention_torchscript() -> None:
    """PyTorch's own attention through the TorchScript exporter, which writes the traced key
    length into the heads' fold: a batch-first and a sequence-first nn.TransformerEncoder, and
    an nn.MultiheadAttention returning its averaged weights (heads folded into the batch)."""

    class Encoder(nn.Module):
        def __init__(self, batch_first: bool):
            super().__init__()
            layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=batch_first)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

        def forward(self, x):
            return self.encoder(x)

    class Weighted(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(16, 2, batch_first=True)

        def forward(self, x):
            return self.attn(x, x, x)

    class Cross(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(16, 2, batch_first=True, kdim=8, vdim=8)

        def forward(self, x, memory):
            return self.attn(x, memory, memory)

    torch.manual_seed(3)
    cross = Cross().eval()
    with torch.no_grad():
        for parameter in cross.parameters():
            parameter.copy_(torch.randn_like(parameter) * 0.2)
    torch.onnx.export(
        cross, (torch.randn(2, 5, 16), torch.randn(2, 7, 8)),
        FIXTURES / "tiny_mha_cross_weights_torchscript.onnx", input_names=["x", "memory"],
        dynamic_axes={"x": {0: "batch", 1: "seq"}, "memory": {0: "batch", 1: "mem"}},
        opset_version=17, dynamo=False,
    )  # fmt: skip
    batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("seq", min=2, max=64)
    mem = torch.export.Dim("mem", min=2, max=64)
    path = FIXTURES / "tiny_mha_cross_weights_dynamo.onnx"
    torch.onnx.export(
        cross, (torch.randn(2, 5, 16), torch.randn(2, 7, 8)), path, input_names=["x", "memory"],
        dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: mem}), opset_version=18, dynamo=True,
        external_data=False,
    )  # fmt: skip
    _drop_metadata(path, also={"pkg.torch.onnx.fx_node"})  # F.linear's parameter names
    cases = (
        ("tiny_torch_encoder_torchscript", Encoder(True), (2, 6, 16), {0: "batch", 1: "seq"}),
        ("tiny_torch_encoder_seq_first_torchscript", Encoder(False), (6, 2, 16), {0: "seq", 1: "batch"}),
        ("tiny_mha_weights_torchscript", Weighted(), (2, 5, 16), {0: "batch", 1: "seq"}),
    )  # fmt: skip
    for name, model, shape, axes in cases:
        torch.manual_seed(3)
        with torch.no_grad():  # distinct layers: the encoder deep-copies one
            for parameter in model.parameters():
                parameter.copy_(torch.randn_like(parameter) * 0.2)
        torch.onnx.export(
            model.eval(), (torch.randn(*shape),), FIXTURES / f"{name}.onnx", input_names=["x"],
            dynamic_axes={"x": axes}, opset_version=17, dynamo=False,
        )  # fmt: skip


def export_alternating_masks() -> None:
    """Four layers taking one of two masks in turn, as Gemma-2's sliding and global layers do:
    one loop with the masks zipped in (tiny_alternating_masks_{torchscript,dynamo})."""

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x, mask):
            return x + self.fc(x) * mask

    class Alternating(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(8, 8)
            self.layers = nn.ModuleList(Layer() for _ in range(4))

        def forward(self, x):
            near = torch.sigmoid(x.mean(-1, keepdim=True))
            x = self.embed(x)
            far = 1 - near
            for index, layer in enumerate(self.layers):
                x = layer(x, near if index % 2 == 0 else far)
            return x

    torch.manual_seed(3)
    model, x = Alternating().eval(), torch.randn(2, 5, 8)
    torch.onnx.export(
        model, (x,), FIXTURES / "tiny_alternating_masks_torchscript.onnx", input_names=["x"],
        dynamic_axes={"x": {0: "batch", 1: "seq"}}, opset_version=17, dynamo=False,
    )  # fmt: skip
    batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("seq", max=64)
    path = FIXTURES / "tiny_alternating_masks_dynamo.onnx"
    torch.onnx.export(
        model, (x,), path, input_names=["x"], dynamic_shapes=({0: batch, 1: seq},),
        opset_version=18, dynamo=True, external_data=False,
    )  # fmt: skip
    _drop_metadata(path)


def export_training_attention() -> None:
    """Self-attention with dropout on its probabilities, exported in training mode by both
    exporters (tiny_attention_training_{torchscript,dynamo}), and PyTorch's eval-mode output
    (tiny_attention_training_reference.npz)."""

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query, self.key, self.value = (nn.Linear(16, 16) for _ in range(3))
            self.dropout = nn.Dropout(0.25)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = (
                proj(x).view(b, s, 2, 8).transpose(1, 2)
                for proj in (self.query, self.key, self.value)
            )
            probs = torch.softmax(q @ k.transpose(-1, -2) / 8**0.5, dim=-1)
            return (self.dropout(probs) @ v).transpose(1, 2).reshape(b, s, 16)

    torch.manual_seed(3)
    model, x = SelfAttention(), torch.randn(2, 5, 16)
    torch.onnx.export(
        model.train(), (x,), FIXTURES / "tiny_attention_training_torchscript.onnx",
        input_names=["x"], dynamic_axes={"x": {0: "batch", 1: "seq"}}, opset_version=17,
        dynamo=False, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
    )  # fmt: skip
    batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("seq", max=64)
    path = FIXTURES / "tiny_attention_training_dynamo.onnx"
    program = torch.onnx.export(
        model.train(), (x,), input_names=["x"], dynamic_shapes=({0: batch, 1: seq},),
        opset_version=18, dynamo=True, optimize=False,
    )  # fmt: skip
    program.save(str(path), external_data=False)
    _drop_metadata(path)
    with torch.no_grad():
        eval_output = model.eval()(x)
    np.savez(
        FIXTURES / "tiny_attention_training_reference.npz",
        input=x.numpy(),
        eval=eval_output.numpy(),
    )


def export_pooling_head() -> None:
    """SigLIP's pooling head: nn.MultiheadAttention whose query is a learned probe and whose
    key and value are the tokens, both projected by parts of the packed ``in_proj_weight``
    (tiny_pooling_head_{torchscript,dynamo})."""

    class PoolingHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.probe = nn.Parameter(torch.randn(1, 1, 16))
            self.attention = nn.MultiheadAttention(16, 2, batch_first=True)

        def forward(self, x):
            query = self.probe.repeat(x.shape[0], 1, 1)
            return self.attention(query, x, x, need_weights=False)[0]

    torch.manual_seed(3)
    model, x = PoolingHead().eval(), torch.randn(2, 5, 16)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn_like(parameter) * 0.3)
    torch.onnx.export(
        model, (x,), FIXTURES / "tiny_pooling_head_torchscript.onnx", input_names=["x"],
        dynamic_axes={"x": {0: "batch", 1: "seq"}}, opset_version=17, dynamo=False,
    )  # fmt: skip
    batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("seq", min=2, max=64)
    path = FIXTURES / "tiny_pooling_head_dynamo.onnx"
    torch.onnx.export(
        model, (x,), path, input_names=["x"], dynamic_shapes=({0: batch, 1: seq},),
        opset_version=18, dynamo=True, external_data=False,
    )  # fmt: skip
    _drop_metadata(path, also={"pkg.torch.onnx.fx_node"})  # the probe's name


def export_hf_resnet() -> None:
    """HF's ResNet with stages of one and two bottleneck layers (TorchScript: no class names)."""
    _stub_torchvision_ops()
    import transformers as hf

    config = hf.ResNetConfig(
        embedding_size=8, hidden_sizes=[16, 32], depths=[1, 2], layer_type="bottleneck"
    )
    pixels = {"pixel_values": torch.randn(1, 3, 32, 32)}
    dims = {"pixel_values": {0: "batch"}}
    _export(hf.ResNetModel(config), "tiny_hf_resnet_torchscript", pixels, dims, dynamo=False)


def export_shifted_windows() -> None:
    """Swin with one stage of two blocks, the second on windows shifted by ``torch.roll``
    (tiny_swin_shifted_torchscript)."""
    _stub_torchvision_ops()
    import transformers as hf

    config = hf.SwinConfig(
        image_size=16, patch_size=2, embed_dim=8, depths=[2], num_heads=[2], window_size=4,
        attn_implementation="eager",
    )  # fmt: skip
    torch.manual_seed(4)
    pixels = {"pixel_values": torch.randn(1, 3, 16, 16)}
    model = hf.SwinModel(config, add_pooling_layer=False)
    _export(model, "tiny_swin_shifted_torchscript", pixels, {"pixel_values": {0: "batch"}}, False)


def export_post_rotary_norms() -> None:
    """HunYuan: the query and key normalized after their rotary embedding
    (tiny_hunyuan_torchscript)."""
    _stub_torchvision_ops()
    import transformers as hf

    config = hf.HunYuanDenseV1Config(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=8, pad_token_id=0,
        attn_implementation="eager",
    )  # fmt: skip
    torch.manual_seed(5)
    tokens = {"input_ids": torch.randint(1, 32, (1, 5))}
    dims = {"input_ids": {0: "batch", 1: "sequence"}}
    _export(hf.HunYuanDenseV1Model(config), "tiny_hunyuan_torchscript", tokens, dims, False)


def export_layers_without_rotary() -> None:
    """SmolLM3 with four layers, the fourth without the rotary embedding
    (tiny_smollm3_torchscript)."""
    _stub_torchvision_ops()
    import transformers as hf

    config = hf.SmolLM3Config(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=4,
        num_attention_heads=2, num_key_value_heads=1, pad_token_id=0,
        no_rope_layer_interval=4, attn_implementation="eager",
    )  # fmt: skip
    torch.manual_seed(6)
    tokens = {"input_ids": torch.randint(1, 32, (1, 5))}
    dims = {"input_ids": {0: "batch", 1: "sequence"}}
    _export(hf.SmolLM3Model(config), "tiny_smollm3_torchscript", tokens, dims, False)


def _drop_metadata(path: Path, also: set[str] | None = None) -> None:
    """Keep only the module scopes and classes of each node (what the converter reads), and
    the keys in ``also``."""
    import onnx

    model = onnx.load(path)
    keep = {"pkg.torch.onnx.name_scopes", "pkg.torch.onnx.class_hierarchy", *(also or ())}
    for node in model.graph.node:
        props = [p for p in node.metadata_props if p.key in keep]
        del node.metadata_props[:]
        node.metadata_props.extend(props)
        node.doc_string = ""
    onnx.save(model, path)


if __name__ == "__main__":
    if "--transformers-only" not in sys.argv:
        export_tiny_llama()
    export_transformers()
    export_t5()
    export_phi3()
    export_gemma2_kv()
    export_olmo2()
    export_torch_encoder()
    export_hf_resnet()
    export_torch_attention_torchscript()
    export_alternating_masks()
    export_training_attention()
    export_pooling_head()
    export_shifted_windows()
    export_post_rotary_norms()
    export_layers_without_rotary()
    for path in sorted(FIXTURES.glob("tiny_*.onnx")):
        print(f"{path.name}: {path.stat().st_size // 1024} KB")
