"""Export the two eager-attention transformers the onnxruntime-optimizer tests use (needs torch
and transformers; the tests do not).

    python tools/make_contrib_fixtures.py      # writes tests/fixtures/tiny_{bert,gpt2}_eager.onnx

onnxruntime's transformer optimizer recognises attention written out as MatMul/Softmax (Hugging
Face's ``attn_implementation="eager"``): the BERT becomes EmbedLayerNormalization, Attention,
SkipLayerNormalization and BiasGelu, and under quantize_dynamic QEmbedLayerNormalization and
QAttention; the GPT-2 gives FastGelu and SkipLayerNormalization. TorchScript exporter, opset 14,
dynamic batch and sequence; toy sizes (hidden 32, 2 heads, 2 layers) keep each file below 200 KB.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
AXES = {0: "batch", 1: "sequence"}


def distinct_values(model: nn.Module) -> nn.Module:
    """Random weights everywhere (zero biases would be merged by the exporter)."""
    with torch.no_grad():
        for parameter in model.parameters():
            offset = 0.1 if parameter.dim() == 1 else 0.0
            parameter.copy_(torch.randn_like(parameter) * 0.05 + offset)
    return model.eval()


class Bert(nn.Module):
    """BertModel with token types, returning the last hidden state."""

    def __init__(self):
        super().__init__()
        from transformers import BertConfig, BertModel

        config = BertConfig(
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=32,
            attn_implementation="eager",
        )
        self.bert = BertModel(config, add_pooling_layer=False)

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        )
        return out.last_hidden_state


class Gpt2(nn.Module):
    """GPT2Model without a cache, returning the last hidden state."""

    def __init__(self):
        super().__init__()
        from transformers import GPT2Config, GPT2Model

        config = GPT2Config(
            vocab_size=100,
            n_embd=32,
            n_layer=2,
            n_head=2,
            n_positions=32,
            bos_token_id=0,
            eos_token_id=0,
            attn_implementation="eager",
        )
        self.gpt = GPT2Model(config)

    def forward(self, input_ids, attention_mask):
        out = self.gpt(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        return out.last_hidden_state


def main() -> None:
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 5:] = 0
    token_types = torch.zeros(2, 8, dtype=torch.int64)
    token_types[:, 4:] = 1
    bert_inputs = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        distinct_values(Bert()),
        (ids, mask, token_types),
        FIXTURES / "tiny_bert_eager.onnx",
        dynamo=False,
        opset_version=14,
        input_names=bert_inputs,
        output_names=["last_hidden_state"],
        dynamic_axes=dict.fromkeys(bert_inputs, AXES),
    )
    gpt_inputs = ["input_ids", "attention_mask"]
    torch.onnx.export(
        distinct_values(Gpt2()),
        (ids, mask),
        FIXTURES / "tiny_gpt2_eager.onnx",
        dynamo=False,
        opset_version=14,
        input_names=gpt_inputs,
        output_names=["last_hidden_state"],
        dynamic_axes=dict.fromkeys(gpt_inputs, AXES),
    )


if __name__ == "__main__":
    main()
