"""Build a local corpus of real-architecture ONNX models for mindconverter (not committed).

Run with a Python that has torch (CPU), onnxscript, transformers and torchvision installed::

    python tools/corpus/build_corpus.py --out /work/corpus

What it writes into ``--out``:

- random-weight models from Hugging Face ``transformers`` definitions with tiny configurations
  (BERT, DistilBERT, RoBERTa, GPT-2, T5 encoder-decoder, ViT, Swin, wav2vec2) and from
  ``torchvision.models`` (resnet18, mobilenet_v3_small, efficientnet_b0, deeplabv3, fcn, r3d_18,
  ssdlite), each exported by the TorchScript exporter (``dynamo=False``, opset 14 or 17) and by
  the dynamo exporter (opset 18) where that works, with dynamic batch / sequence axes;
- trained ONNX files that pip packages ship (RapidOCR's PP-OCR det/cls/rec, silero-vad), copied
  from the installed packages when they are present;
- ``manifest.json``: one entry per model file with its source, exporter, opset and the concrete
  input shapes to convert with (``--shape``), plus the reason for each model that failed to export.

Nothing is downloaded: weights are random (seeded) and configs are written here. torchvision's
compiled extension may not load on a CPU-only machine; its ``nms`` operator schema is registered
here before the import so the pure-Python model definitions work.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import time
import traceback
import warnings
from pathlib import Path

import torch


def _register_torchvision_ops() -> None:
    """Define the operator schemas torchvision's Python code expects when its C++ part is missing."""
    try:
        torch.ops.torchvision.nms  # noqa: B018 - raises when the operator is missing
        return
    except (AttributeError, RuntimeError):
        pass
    lib = torch.library.Library("torchvision", "DEF")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

    def nms(boxes, scores, iou_threshold):
        order = torch.argsort(scores, descending=True)
        keep = []
        suppressed = torch.zeros(len(order), dtype=torch.bool)
        area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        for i, idx in enumerate(order.tolist()):
            if suppressed[i]:
                continue
            keep.append(idx)
            rest = order[i + 1 :]
            xx1 = torch.maximum(boxes[idx, 0], boxes[rest, 0])
            yy1 = torch.maximum(boxes[idx, 1], boxes[rest, 1])
            xx2 = torch.minimum(boxes[idx, 2], boxes[rest, 2])
            yy2 = torch.minimum(boxes[idx, 3], boxes[rest, 3])
            inter = (xx2 - xx1).clamp(min=0) * (yy2 - yy1).clamp(min=0)
            iou = inter / (area[idx] + area[rest] - inter)
            suppressed[i + 1 :] |= iou > iou_threshold
        return torch.tensor(keep, dtype=torch.int64)

    lib.impl("nms", nms, "CPU")
    lib.impl("qnms", nms, "CPU")
    _register_torchvision_ops.lib = lib  # keep the library object alive


# --- model definitions ------------------------------------------------------------------------


class TupleOutputs(torch.nn.Module):
    """Calls a Hugging Face model with keyword inputs and returns a tuple of tensors."""

    def __init__(self, model, input_names, output_keys):
        super().__init__()
        self.model = model
        self.input_names = list(input_names)
        self.output_keys = list(output_keys)

    def forward(self, *args):
        out = self.model(**dict(zip(self.input_names, args)))
        return tuple(out[key] for key in self.output_keys)


def _ids(batch, seq, vocab):
    return torch.randint(1, vocab, (batch, seq), dtype=torch.int64)


def _mask(batch, seq):
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[-1, seq // 2 :] = 0  # a padded second sequence makes the mask matter
    return mask


def hf_models():
    """(name, module, example inputs, input names, output names, dynamic axes) for HF architectures."""
    import transformers as tf

    batch, seq, vocab = 2, 8, 99
    text_axes = {0: "batch", 1: "sequence"}
    specs = []
    common = {
        "vocab_size": vocab,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 64,
    }

    def text(name, cls, config, keys=("last_hidden_state",), with_mask=True, extra=None):
        model = cls(config).eval()
        names = ["input_ids", "attention_mask"] if with_mask else ["input_ids"]
        inputs = [_ids(batch, seq, vocab)] + ([_mask(batch, seq)] if with_mask else [])
        specs.append(
            (
                name,
                TupleOutputs(model, names, keys),
                tuple(inputs),
                names,
                list(keys),
                {n: text_axes for n in names},
            )
        )

    text("bert_tiny", tf.BertModel, tf.BertConfig(**common), ("last_hidden_state", "pooler_output"))
    text(
        "distilbert_tiny",
        tf.DistilBertModel,
        tf.DistilBertConfig(
            vocab_size=vocab,
            dim=32,
            n_layers=2,
            n_heads=2,
            hidden_dim=64,
            max_position_embeddings=64,
        ),
    )
    text("roberta_tiny", tf.RobertaModel, tf.RobertaConfig(**common, pad_token_id=1))
    text(
        "bert_tiny_cls",
        tf.BertForSequenceClassification,
        tf.BertConfig(**common, num_labels=3),
        ("logits",),
    )
    text(
        "gpt2_tiny",
        tf.GPT2LMHeadModel,
        tf.GPT2Config(
            vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=64, use_cache=False
        ),
        ("logits",),
    )
    t5 = tf.T5Model(
        tf.T5Config(
            vocab_size=vocab,
            d_model=32,
            d_kv=16,
            d_ff=64,
            num_layers=2,
            num_heads=2,
            decoder_start_token_id=0,
            use_cache=False,
        )
    ).eval()
    names = ["input_ids", "attention_mask", "decoder_input_ids"]
    specs.append(
        (
            "t5_tiny",
            TupleOutputs(t5, names, ["last_hidden_state"]),
            (_ids(batch, seq, vocab), _mask(batch, seq), _ids(batch, 5, vocab)),
            names,
            ["last_hidden_state"],
            {
                "input_ids": text_axes,
                "attention_mask": text_axes,
                "decoder_input_ids": {0: "batch", 1: "target"},
            },
        )
    )
    image_axes = {"pixel_values": {0: "batch"}}
    vit = tf.ViTModel(
        tf.ViTConfig(
            image_size=32,
            patch_size=8,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
        ),
        add_pooling_layer=False,
    ).eval()
    specs.append(
        (
            "vit_tiny",
            TupleOutputs(vit, ["pixel_values"], ["last_hidden_state"]),
            (torch.randn(1, 3, 32, 32),),
            ["pixel_values"],
            ["last_hidden_state"],
            image_axes,
        )
    )
    swin = tf.SwinModel(
        tf.SwinConfig(
            image_size=32,
            patch_size=4,
            embed_dim=16,
            depths=[1, 1],
            num_heads=[1, 2],
            window_size=4,
        )
    ).eval()
    specs.append(
        (
            "swin_tiny",
            TupleOutputs(swin, ["pixel_values"], ["last_hidden_state", "pooler_output"]),
            (torch.randn(1, 3, 32, 32),),
            ["pixel_values"],
            ["last_hidden_state", "pooler_output"],
            image_axes,
        )
    )
    w2v = tf.Wav2Vec2Model(
        tf.Wav2Vec2Config(
            vocab_size=vocab,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            conv_dim=(16, 16),
            conv_stride=(5, 2),
            conv_kernel=(10, 3),
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=2,
            do_stable_layer_norm=True,
            feat_extract_norm="layer",
        )
    ).eval()
    specs.append(
        (
            "wav2vec2_tiny",
            TupleOutputs(w2v, ["input_values"], ["last_hidden_state"]),
            (torch.randn(1, 400),),
            ["input_values"],
            ["last_hidden_state"],
            {"input_values": {0: "batch", 1: "samples"}},
        )
    )
    return specs


def torchvision_models():
    _register_torchvision_ops()
    import torchvision.models as tvm
    from torchvision.models import detection, segmentation, video

    image = {0: "batch"}
    specs = []

    def add(name, model, shape, outputs=("output",), axes=None):
        specs.append(
            (
                name,
                model.eval(),
                (torch.randn(*shape),),
                ["input"],
                list(outputs),
                {"input": axes if axes is not None else image},
            )
        )

    add("resnet18", tvm.resnet18(weights=None, num_classes=10), (1, 3, 32, 32))
    add("mobilenet_v3_small", tvm.mobilenet_v3_small(weights=None, num_classes=10), (1, 3, 32, 32))
    add("efficientnet_b0", tvm.efficientnet_b0(weights=None, num_classes=10), (1, 3, 32, 32))
    add(
        "deeplabv3_mobilenet",
        _SegOut(
            segmentation.deeplabv3_mobilenet_v3_large(
                weights=None, weights_backbone=None, num_classes=4, aux_loss=False
            )
        ),
        (1, 3, 64, 64),
    )
    add(
        "fcn_resnet50",
        _SegOut(
            segmentation.fcn_resnet50(
                weights=None, weights_backbone=None, num_classes=4, aux_loss=False
            )
        ),
        (1, 3, 32, 32),
    )
    add("r3d_18", video.r3d_18(weights=None, num_classes=5), (1, 3, 4, 32, 32))
    ssd = detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=3
    )
    add(
        "ssdlite320", _DetOut(ssd), (1, 3, 320, 320), outputs=("boxes", "scores", "labels"), axes={}
    )
    return specs


class _SegOut(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class _DetOut(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        result = self.model(list(x))[0]
        return result["boxes"], result["scores"], result["labels"]


def randomize(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Give every weight and statistic a distinct random value.

    Fresh models start with zero biases and unit norm scales, which would hide conversion
    errors (a wrong beta of 0 is still 0) and make the TorchScript exporter merge identical
    initializers into one shared tensor.
    """
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            if not tensor.is_floating_point():
                continue
            noise = torch.randn(tensor.shape, generator=generator) * 0.2
            if name.endswith("running_var"):
                tensor.copy_(noise.abs() + 0.5)
            elif tensor.ndim == 1 and name.endswith("weight"):
                tensor.copy_(noise + 1.0)
            elif tensor.ndim >= 2:
                fan_in = max(1, tensor[0].numel())
                tensor.copy_(torch.randn(tensor.shape, generator=generator) / fan_in**0.5)
            else:
                tensor.copy_(noise)
    return module


# --- exporting --------------------------------------------------------------------------------


def export(
    name,
    module,
    args,
    input_names,
    output_names,
    dynamic_axes,
    out_dir: Path,
    exporter: str,
    opset: int,
):
    path = out_dir / f"{name}_{exporter}.onnx"
    export.notes = ""
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            torch.onnx.export(
                module,
                args,
                str(path),
                dynamo=False,
                opset_version=opset,
                input_names=input_names,
                output_names=output_names,
                dynamic_axes=dynamic_axes or None,
            )
        else:
            auto = torch.export.Dim.AUTO
            shapes = [
                {axis: auto for axis in (dynamic_axes or {}).get(n, {})} or None
                for n in input_names
            ]
            dynamic_shapes = _by_parameter(module, shapes)
            try:
                program = torch.onnx.export(
                    module,
                    args,
                    dynamo=True,
                    opset_version=opset,
                    input_names=input_names,
                    output_names=output_names,
                    dynamic_shapes=dynamic_shapes,
                    optimize=True,
                    verbose=False,
                    report=False,
                )
            except Exception:
                program = torch.onnx.export(
                    module,
                    args,
                    dynamo=True,
                    opset_version=opset,
                    input_names=input_names,
                    output_names=output_names,
                    optimize=True,
                    verbose=False,
                )
                export.notes = "dynamo export only worked with static shapes"
            external = name.startswith("bert_tiny") and not name.endswith("cls")
            program.save(str(path), external_data=external)
    return path


def _by_parameter(module, shapes: list):
    """``dynamic_shapes`` for torch.export: a tuple for plain positional parameters; keyed by
    parameter name when ``forward`` gathers the rest in ``*args`` (a decoder taking
    ``input_ids, attention_mask, *past``), the extra ones as a tuple under that name."""
    import inspect

    parameters = list(inspect.signature(module.forward).parameters.values())
    rest = next((p for p in parameters if p.kind is inspect.Parameter.VAR_POSITIONAL), None)
    if rest is None:
        return tuple(shapes)
    named = [p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    keyed = dict(zip(named, shapes))
    keyed[rest.name] = tuple(shapes[len(named) :])
    return keyed


def _entry(path: Path, name, source, exporter, args, input_names, notes=""):
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    opset = next((e.version for e in model.opset_import if e.domain in ("", "ai.onnx")), 0)
    shapes = [list(a.shape) for a in args]
    return {
        "model": name,
        "file": path.name,
        "source": source,
        "exporter": exporter,
        "opset": opset,
        "inputs": input_names,
        "shapes": shapes,
        "notes": notes,
    }


def build(out_dir: Path, only: list[str]) -> list[dict]:
    out_dir.mkdir(parents=True, exist_ok=True)
    _register_torchvision_ops()  # transformers imports torchvision too when it is installed
    torch.manual_seed(0)
    entries, failures = [], []
    groups = [("transformers", hf_models), ("torchvision", torchvision_models)]
    for source, factory in groups:
        try:
            specs = factory()
        except Exception as exc:
            failures.append({"model": source, "error": f"{type(exc).__name__}: {exc}"})
            continue
        for name, module, args, input_names, output_names, axes in specs:
            if only and name not in only:
                continue
            randomize(module).eval()  # a wrapper left in training mode makes dynamo export dropout
            for exporter, opset in (
                ("torchscript", 14 if source == "transformers" else 13),
                ("dynamo", 18),
            ):
                started = time.perf_counter()
                try:
                    path = export(
                        name,
                        module,
                        args,
                        input_names,
                        output_names,
                        axes,
                        out_dir,
                        exporter,
                        opset,
                    )
                except Exception as exc:
                    message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                    failures.append({"model": name, "exporter": exporter, "error": message})
                    print(f"  export failed: {name} [{exporter}]: {message}", flush=True)
                    if "--debug" in sys.argv:
                        traceback.print_exc()
                    continue
                entries.append(
                    _entry(path, name, source, exporter, args, input_names, export.notes)
                )
                print(f"  {path.name}: {time.perf_counter() - started:.1f}s", flush=True)
    entries += shipped_models(out_dir, only)
    return entries, failures


# --- trained models shipped in pip packages ---------------------------------------------------

SHIPPED = [
    # (package module, relative file, corpus name, input shapes)
    ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_det_infer.onnx", "ppocr_v4_det", [[1, 3, 64, 64]]),
    (
        "rapidocr_onnxruntime",
        "models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        "ppocr_mobile_cls",
        [[1, 3, 48, 192]],
    ),
    ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_rec_infer.onnx", "ppocr_v4_rec", [[1, 3, 48, 64]]),
    # the If(sr == 16000) model: its 8 kHz branch cannot run on 512 samples (it raises there)
    ("silero_vad", "data/silero_vad.onnx", "silero_vad", [[1, 512], [2, 1, 128], []]),
    (
        "silero_vad",
        "data/silero_vad_16k_op15.onnx",
        "silero_vad_16k_op15",
        [[1, 512], [2, 1, 128], []],
    ),
    (
        "silero_vad",
        "data/silero_vad_16k_sequence.onnx",
        "silero_vad_16k_sequence",
        [[2, 576], [1, 1, 128], [1, 1, 128]],
    ),
    (
        "silero_vad",
        "data/silero_vad_openvino_16k.onnx",
        "silero_vad_openvino_16k",
        [[1, 576], [2, 1, 128]],
    ),
    ("silero_vad", "data/silero_vad_half.onnx", "silero_vad_half", [[1, 512], [2, 1, 128]]),
]


def shipped_models(out_dir: Path, only: list[str]) -> list[dict]:
    import onnx

    entries = []
    for package, relative, name, shapes in SHIPPED:
        if only and name not in only:
            continue
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            print(f"  {name}: package {package} not installed, skipped", flush=True)
            continue
        source_file = Path(next(iter(spec.submodule_search_locations))) / relative
        if not source_file.exists():
            continue
        target = out_dir / f"{name}.onnx"
        shutil.copyfile(source_file, target)
        model = onnx.load(str(target), load_external_data=False)
        weights = {init.name for init in model.graph.initializer}
        inputs = [inp.name for inp in model.graph.input if inp.name not in weights]
        producer = model.producer_name or "unknown"
        opset = next((e.version for e in model.opset_import if e.domain in ("", "ai.onnx")), 0)
        entries.append(
            {
                "model": name,
                "file": target.name,
                "source": f"pip:{package.split('_')[0]}",
                "exporter": producer,
                "opset": opset,
                "inputs": inputs,
                "shapes": shapes,
                "notes": "trained weights shipped in the package",
            }
        )
        print(f"  {target.name}: copied from {package}", flush=True)
    return entries


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/work/corpus", help="corpus folder (not inside the repo)")
    parser.add_argument("--only", nargs="*", default=[], help="build only these model names")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)
    out_dir = Path(args.out)
    entries, failures = build(out_dir, args.only)
    manifest_path = out_dir / "manifest.json"
    if args.only and manifest_path.exists():  # a partial build updates the manifest it finds
        old = json.loads(manifest_path.read_text())
        keep = [e for e in old["models"] if e["model"] not in args.only]
        entries = keep + entries
        failures = [
            f
            for f in old.get("export_failures", [])
            if f["model"] not in args.only and f["model"] not in ("transformers", "torchvision")
        ] + failures
    manifest_path.write_text(json.dumps({"models": entries, "export_failures": failures}, indent=1))
    print(f"{len(entries)} model files, {len(failures)} export failures -> {manifest_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
