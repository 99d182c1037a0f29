"""Generate docs/ast_path.md (user guide + mapping table) from the mapping data files.

python tools/gen_ast_docs.py            # writes docs/ast_path.md
python tools/gen_ast_docs.py --check    # exit 1 if the file is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mindconverter.ast_path.helpers import torch_display
from mindconverter.ast_path.mapping import load_table

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "ast_path.md"

GUIDE = """\
# Converting a PyTorch script (deprecated AST path)

> **Deprecated.** This path rewrites *source code* using a mapping table. It cannot convert
> weights, and it only knows the APIs listed below. Prefer the graph path: export the model with
> `torch.onnx.export(...)` and run `mindconverter --model_file model.onnx`, which writes a
> MindSpore script *and* a checkpoint and can verify the result. Every run of this path prints a
> one-line `[Deprecated]` notice on stderr saying so.

## Usage

```
mindconverter --in_file resnet.py --output out/ [--report reports/] [--overwrite]
```

```python
from mindconverter.ast_path import convert_script

result = convert_script("resnet.py", "out/", report_dir=None, overwrite=False)
result.script_path, result.report_path, result.converted, result.unconverted, result.converted_rate
```

* The converted script keeps the input's file name (`out/resnet.py`); the report is
  `report_of_resnet.txt` in `--report` (default: the output folder).
* Existing results are never replaced unless `--overwrite` (`overwrite=True`) is given; the
  converted script may never replace the input script. Both files are written atomically: they
  appear together or not at all.
* Errors use the tool's error codes (see `docs/errors.md`): a missing input is
  `FILE_NOT_FOUND`, a folder `FILE_IS_DIRECTORY`, an empty file `FILE_EMPTY`, and a file that is
  not decodable, valid Python is `SCRIPT_UNREADABLE`. No traceback is printed and the process is
  never exited from the API.

## What is converted

* **Modules**: subclasses of `nn.Module` (and of `nn.Sequential`, `nn.ModuleList`,
  `nn.ModuleDict`, or any PyTorch layer) derive from `nn.Cell` (`nn.SequentialCell`,
  `nn.CellList`, `nn.CellDict`, ...); `forward` becomes `construct` (also `self.forward(...)` and
  `super().forward(...)`); all `super().__init__()` forms keep working. Children assigned as
  attributes of an `nn.Sequential` subclass, or added with `add_module`, are run in order as in
  PyTorch.
* **Layers, functions, tensor methods, initializers**: by the table below. Argument differences
  are written out explicitly, e.g. `nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)` becomes
  `nn.Conv2d(3, 64, 7, stride=2, pad_mode='pad', padding=3, has_bias=False)`; a tuple padding
  `(0, 3)` becomes MindSpore's `(0, 0, 3, 3)`; BatchNorm `momentum=m` becomes `1 - m`;
  `nn.Linear` becomes `nn.Dense`; defaults that differ (conv bias, LeakyReLU slope, GELU
  approximation, LayerNorm epsilon, `flatten`'s start_dim, `meshgrid` indexing) are written out.
* **Values known only at run time**: when a padding is a variable, a small helper
  (`_ms_conv_padding`) converts it when the model is built. When a layer is called with
  `*args`/`**kwargs`, passed to `functools.partial`, or used as a value (`norm_layer=nn.BatchNorm2d`,
  `activation_layer=nn.ReLU` later called with `inplace=True`), the script gets a small adapter
  with PyTorch's signature (`_torch_nn_Conv2d(...)`, `class _torch_nn_ReLU(nn.ReLU)`), so every
  argument form keeps working. `isinstance` checks, base classes and annotations keep the plain
  MindSpore class.
* **Parameters**: where the layer type is known (an `isinstance` branch, an attribute assigned a
  layer in `__init__`, a subclass of a layer), PyTorch attribute names are renamed to
  MindSpore's (`bn.weight` -> `bn.gamma`, `bn.running_mean` -> `bn.moving_mean`, `emb.weight` ->
  `emb.embedding_table`, `linear.out_features` -> `linear.out_channels`). Elsewhere
  `_torch_param(cell, 'weight')` finds the parameter when the model is built.
  `nn.init.*` calls and `weight.data.normal_()`-style initialization become
  `param.set_data(initializer(...))` with `mindspore.common.initializer`.
* **Imports**: `torch`, `torch.nn as nn`, `torch.nn.functional as F`, `from torch import nn,
  Tensor` and similar are replaced by `import mindspore` / `from mindspore import nn, ops`
  (renamed `ms_nn`/`ms_ops` if the script already uses those names). Imports of other packages
  are kept.
* **Model-zoo machinery**: `model_zoo.load_url` / `load_state_dict_from_url` become a stand-in
  that raises a clear error (pretrained PyTorch weights cannot be loaded this way; convert an
  ONNX export with `--model_file` to get a checkpoint) so `pretrained=False` code paths work.
  `model.load_state_dict(sd)` becomes `mindspore.load_param_into_net(model, sd)`. Names that
  torchvision's model files import relatively (`_log_api_usage_once`, `register_model`,
  `Weights`, `_make_divisible`, `Conv2dNormActivation`, `SqueezeExcitation`, `MLP`,
  `StochasticDepth`, ...) are replaced by helpers written into the script (MindSpore versions of
  the layers, inert stand-ins for the weight registry).

The converted script never imports mindconverter: every helper it needs is copied into it.

## What stays visible

Anything not converted keeps its original text, so nothing is silently lost:

* the line in the output script ends with `# [UnConvert] 'torch.xxx' didn't convert (see the
  report)` (or, where a line cannot take a comment, the comment goes on its own line above the
  statement);
* the report has `line L:C: [UnConvert] 'torch.xxx' didn't convert. ... Suggestion: ...` where a
  suggestion is known;
* the script remains valid Python and still imports: PyTorch names that remain in unconverted
  code are bound to stand-ins that raise `NotImplementedError` naming the API when used.

If the converter itself fails on a script (a bug), the output is the original code with every
PyTorch use marked, and the report says why.

## The report

```
[Start Convert]
line 39:11: [Convert] 'nn.Conv2d' is converted to 'nn.Conv2d'.
line 127:18: [Convert] 'nn.Linear' is converted to 'nn.Dense'.
line 183:21: [UnConvert] 'torch.utils.model_zoo.load_url' didn't convert. Replaced by the stand-in '_pretrained_weights_unavailable', which raises if called. Suggestion: ...
[Convert Over]
Converted Rate: 97.50%.
```

`line L:C` points into the **converted** script (line from 1, column from 0). After the block
the report lists the counts, the unconverted APIs and the helpers added to the script.

## Limits

* Source is regenerated with `ast.unparse`: comments of the input are not kept, and formatting
  is normalized.
* Types are inferred only locally; a PyTorch-only method called on an object whose type cannot
  be seen (for example a tensor method name that a user class also defines) may be left as is.
* Training code (`torch.optim`, `DataLoader`, `loss.backward()`) is not converted; it is marked,
  with the MindSpore replacement in the suggestion.
* Outputs of some layers differ in structure: MindSpore's `nn.MaxPool2d(return_indices=True)` and
  RNN cells return what MindSpore returns.

## Mapping table

The table is generated from the data files `mindconverter/ast_path/mappings/*.json` by
`python tools/gen_ast_docs.py`. A template names PyTorch's parameters; UPPER-CASE
words are conversion-time rules (`OPT(x)`: only when given; `DEFAULT(x, d)`; `MOMENTUM(m)` =
`1 - m`; `PAD_MODE`/`CONV_PAD`: PyTorch padding to MindSpore `pad_mode`/`padding`;
`POOL_PAD_MODE`: `'pad'` when padding/ceil_mode/dilation is given; `SHAPE(*size)`: varargs as one
tuple; `INIT(t, init)`: `t.set_data(initializer(init, t.shape, t.dtype))`; `INPLACE(x, v)`:
`x = v`, or `x.set_data(v)` on a parameter; `same`: the MindSpore tensor method takes the same
arguments).
"""


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    table = load_table()
    parts = [GUIDE]
    parts.append(f"\n**{table.count()} PyTorch APIs are mapped.**\n")
    for name, title, description, keys in table.groups:
        parts.append(f"\n### {title}\n\n{description}\n")
        if name == "externals.json":
            parts.append("\n| Imported name | Replaced by |\n| --- | --- |\n")
            for key in keys:
                entry = table.externals[key]
                helper = entry.get("helper", "")
                kind = " (stand-in that raises)" if entry.get("stub") else ""
                parts.append(f"| `{key}` | `{helper}`{kind} |\n")
            continue
        parts.append("\n| PyTorch | MindSpore | Notes |\n| --- | --- | --- |\n")
        for key in keys:
            api = table.apis[key]
            if api.same:
                target = "`same`"
            elif api.name_only is not None:
                target = f"`{api.name_only}`"
            else:
                texts = []
                for variant in api.variants:
                    cond = f" when {', '.join(variant.conds)}" if variant.conds else ""
                    texts.append(
                        f"`{_escape(variant.text)}`{cond}"
                        if variant.text
                        else f"not converted{cond}"
                    )
                target = "<br>".join(texts)
            notes = []
            if api.sig_text is not None:
                notes.append(f"signature `({_escape(api.sig_text)})`")
            if api.stub:
                notes.append("stand-in that raises; reported as not converted")
            if api.note:
                notes.append(_escape(api.note))
            if api.suggest:
                notes.append("suggestion: " + _escape(api.suggest))
            parts.append(f"| `{_escape(torch_display(key))}` | {target} | {'; '.join(notes)} |\n")
    if table.unsupported:
        parts.append(
            "\n### Known unconverted APIs and their suggestions\n\n| PyTorch | Suggestion |\n| --- | --- |\n"
        )
        for key, hint in sorted(table.unsupported.items()):
            parts.append(f"| `{key}` | {_escape(hint)} |\n")
    return "".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if the document is out of date")
    parser.add_argument("--output", type=Path, default=DOC_PATH)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(
                f"{args.output} is out of date; run python tools/gen_ast_docs.py",
                file=sys.stderr,
            )
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
