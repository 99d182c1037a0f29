"""Unit tests of the AST path: API mappings, report format, marks, fallback and file handling."""

from __future__ import annotations

import ast
import re
import textwrap

import pytest

from mindconverter.ast_path import DEPRECATION, convert_script, convert_source, load_table
from mindconverter.ast_path import converter as converter_module
from mindconverter.errors import MindConverterError

REPORT_LINE = re.compile(
    r"^line \d+:\d+: \[(Convert|UnConvert)\] '[^']+' (is converted to '[^']+'\.|didn't convert\.)"
)


def convert(body: str):
    return convert_source(textwrap.dedent(body), "snippet.py")


def code_of(body: str) -> str:
    """The converted code, normalized by ast.unparse (quotes and line wrapping do not matter)."""
    return ast.unparse(ast.parse(convert(body).code))


# --- mappings ------------------------------------------------------------------------------


def test_table_maps_at_least_150_apis_and_templates_are_valid():
    table = load_table()
    assert table.count() >= 150
    for key, api in table.apis.items():
        assert key.startswith("torch"), key
        assert api.same or api.name_only or api.variants, key


def test_module_class_and_forward():
    code = code_of("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.fc = nn.Linear(4, 2)
            def forward(self, x):
                return self.fc(x)
        """)
    assert "class Net(nn.Cell):" in code
    assert "def construct(self, x):" in code
    assert "super(Net, self).__init__()" in code
    assert "nn.Dense(4, 2)" in code
    assert "torch" not in code


def test_conv_arguments_made_explicit():
    code = code_of("""
        import torch.nn as nn
        a = nn.Conv2d(3, 8, 3, padding=1)
        b = nn.Conv2d(3, 8, kernel_size=(1, 7), padding=(0, 3), bias=False, groups=1)
        c = nn.Conv2d(3, 8, 1)
        d = nn.Conv2d(3, 8, 3, padding='same')
        e = nn.Conv2d(3, 8, 3, padding=dilation, dilation=dilation)
        """)
    assert "nn.Conv2d(3, 8, 3, pad_mode='pad', padding=1, has_bias=True)" in code
    assert (
        "nn.Conv2d(3, 8, (1, 7), pad_mode='pad', padding=(0, 0, 3, 3), group=1, has_bias=False)"
        in code
    )
    assert "nn.Conv2d(3, 8, 1, pad_mode='valid', has_bias=True)" in code
    assert "nn.Conv2d(3, 8, 3, pad_mode='same', has_bias=True)" in code
    assert "padding=_ms_conv_padding(dilation, 2)" in code
    assert "def _ms_conv_padding(" in code


def test_layer_argument_differences():
    code = code_of("""
        import torch.nn as nn
        layers = [nn.BatchNorm2d(8, momentum=0.01), nn.BatchNorm1d(4, eps=1e-3, momentum=m),
                  nn.Dropout(0.3), nn.Dropout(), nn.MaxPool2d(3, 2, 1), nn.MaxPool2d(2),
                  nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False), nn.LeakyReLU(),
                  nn.GELU(), nn.Softmax(dim=1), nn.LayerNorm(16), nn.Embedding(10, 4),
                  nn.LSTM(8, 16, 2, batch_first=True, dropout=0), nn.ConvTranspose2d(8, 4, 4, 2, 1, bias=False),
                  nn.ReLU(inplace=True), nn.Flatten(), nn.Hardswish()]
        """)
    for expected in [
        "nn.BatchNorm2d(8, momentum=0.99)",
        "nn.BatchNorm1d(4, eps=0.001, momentum=1 - m)",
        "nn.Dropout(p=0.3)",
        "nn.Dropout(p=0.5)",
        "nn.MaxPool2d(3, stride=2, pad_mode='pad', padding=1)",
        "nn.MaxPool2d(2, stride=2)",
        "nn.AvgPool2d(3, stride=1, pad_mode='pad', padding=1, count_include_pad=False)",
        "nn.LeakyReLU(alpha=0.01)",
        "nn.GELU(approximate=False)",
        "nn.Softmax(axis=1)",
        "nn.LayerNorm((16,), epsilon=1e-05)",
        "nn.Embedding(10, 4)",
        "nn.LSTM(8, 16, num_layers=2, batch_first=True, dropout=0.0)",
        "nn.Conv2dTranspose(8, 4, 4, stride=2, pad_mode='pad', padding=1, has_bias=False)",
        "nn.ReLU()",
        "nn.Flatten()",
        "nn.HSwish()",
    ]:
        assert expected in code, expected


def test_functional_torch_and_tensor_methods():
    code = code_of("""
        import torch
        import torch.nn.functional as F
        def f(x, y):
            a = F.relu(x, inplace=True)
            b = torch.flatten(x, 1)
            c = torch.cat([x, y], 1)
            d = x.view(x.size(0), -1)
            e = x.transpose(1, 2).contiguous()
            g = F.adaptive_avg_pool2d(x, (1, 1))
            h = x.mean(dim=1, keepdim=True)
            i = torch.zeros(2, 3, dtype=torch.float32)
            j = F.dropout(x, p=0.2, training=False)
            k = x.permute(0, 2, 1)
            l = x.unsqueeze(1).chunk(2, dim=1)
            m = F.interpolate(x, scale_factor=2, mode='nearest')
            x.relu_()
            return a, b, c, d, e, g, h, i, j, k, l, m
        """)
    for expected in [
        "a = ops.relu(x)",
        "b = ops.flatten(x, start_dim=1)",
        "c = ops.cat([x, y], 1)",
        "d = x.view(x.shape[0], -1)",
        "e = x.swapaxes(1, 2)",
        "g = ops.adaptive_avg_pool2d(x, (1, 1))",
        "h = x.mean(dim=1, keepdim=True)",
        "i = ops.zeros((2, 3), dtype=mindspore.float32)",
        "j = ops.dropout(x, p=0.2, training=False)",
        "k = x.permute(0, 2, 1)",
        "m = _ms_interpolate(x, scale_factor=2, mode='nearest')",
        "x = ops.relu(x)",
    ]:
        assert expected in code, expected


def test_init_loops_use_mindspore_parameter_names():
    code = code_of("""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm2d(3)
                self.emb = nn.Embedding(5, 2)
                nn.init.normal_(self.emb.weight, 0, 0.1)
                for m in self.modules():
                    if isinstance(m, nn.Conv2d):
                        nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
                        if m.bias is not None:
                            nn.init.constant_(m.bias, 0)
                    elif isinstance(m, nn.BatchNorm2d):
                        nn.init.constant_(m.weight, 1)
                        m.bias.data.zero_()
        def weights_init(m):
            nn.init.normal_(m.weight, 0.0, 0.02)
        """)
    assert (
        "self.emb.embedding_table.set_data(ms_init.initializer(ms_init.Normal(sigma=0.1, mean=0)"
        in code
    )
    assert "for m in (cell for _, cell in self.cells_and_names()):" in code
    assert (
        "m.weight.set_data(ms_init.initializer(ms_init.HeNormal(mode='fan_out', nonlinearity='relu')"
        in code
    )
    assert (
        "m.gamma.set_data(ms_init.initializer(ms_init.Constant(1), m.gamma.shape, m.gamma.dtype))"
        in code
    )
    assert "m.beta.set_data(ops.zeros_like(m.beta))" in code
    assert "_ms_initialize(_torch_param(m, 'weight'), ms_init.Normal(sigma=0.02, mean=0.0))" in code


def test_imports_and_pretrained_loaders():
    result = convert("""
        import torch
        import torch.nn as nn
        import torch.utils.model_zoo as model_zoo
        from torch.hub import load_state_dict_from_url
        from typing import List
        import math

        def build(pretrained=False):
            model = nn.Sequential(nn.Linear(2, 2))
            if pretrained:
                model.load_state_dict(model_zoo.load_url('u'))
                model.load_state_dict(load_state_dict_from_url('u'))
            return model
        """)
    code = ast.unparse(ast.parse(result.code))
    assert "import mindspore\nfrom mindspore import nn, ops\n" in code
    assert "from typing import List" in code and "import math" in code
    assert "mindspore.load_param_into_net(model, _pretrained_weights_unavailable('u'))" in code
    assert result.code.count("[UnConvert]") == 2
    assert "export the pretrained model to ONNX" in result.report


def test_unconverted_api_is_marked_and_script_stays_importable(tmp_path):
    result = convert("""
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                y = torch.fft.rfft(x)
                return torch.special.expit(y)

        optimizer_cls = torch.optim.LBFGS
        """)
    ast.parse(result.code)
    lines = result.code.splitlines()
    report_lines = [text for text in result.report.splitlines() if "[UnConvert]" in text]
    assert len(report_lines) == 3
    for line in report_lines:
        assert REPORT_LINE.match(line), line
        number = int(line.split()[1].split(":")[0])
        assert "# [UnConvert]" in lines[number - 1]
    assert any("Suggestion: Use mindspore.experimental.optim" in text for text in report_lines)
    assert "torch = _UnconvertedAPI('torch')" in ast.unparse(ast.parse(result.code))
    namespace = {}
    exec(
        compile(result.code, "converted.py", "exec"), namespace
    )  # imports; the stand-in raises only on use
    with pytest.raises(NotImplementedError, match="torch.fft.rfft"):
        namespace["torch"].fft.rfft(1)


def test_report_format_and_positions_point_into_output():
    result = convert("""
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)
        """)
    report = result.report.splitlines()
    assert report[0] == "[Start Convert]"
    assert "[Convert Over]" in report
    assert "Converted Rate: 100.00%." in report
    converted_lines = [text for text in report if text.startswith("line ")]
    assert all(REPORT_LINE.match(text) for text in converted_lines)
    linear = next(
        text for text in converted_lines if "'nn.Linear' is converted to 'nn.Dense'" in text
    )
    number, col = map(int, linear.split()[1].rstrip(":").split(":"))
    out_line = result.code.splitlines()[number - 1]
    assert out_line[col:].startswith("nn.Dense(4, 2)")


def test_fallback_keeps_original_code_marked(monkeypatch):
    def broken(tree, name):
        raise RuntimeError("boom")

    monkeypatch.setattr(converter_module, "_convert_tree", broken)
    source = "import torch\nx = torch.ones(2)  # keep\ny = torch.fancy_new_op(x)\n"
    result = convert_source(source, "s.py")
    ast.parse(result.code)
    assert result.code.startswith("import torch\nx = torch.ones(2)  # keep  # [UnConvert]")
    assert "RuntimeError: boom" in result.report
    assert result.unconverted == 2


def test_awkward_but_valid_scripts_never_crash():
    for source in [
        "",
        "x = 1\n",
        "import torch\n",
        "from torch import *\nx = Tensor\n",
        "import torch\nif True:\n    import torch.nn as nn\n",
        "import torch\ndef f():\n    '''doc\n    string'''\n    return torch.nonexistent(1, \\\n        2)\n",
        "import torch as T\nclass A(T.nn.Module):\n    def forward(self, *a, **k):\n        return T.cat(*a, **k)\n",
        "import torch.nn as nn\nclass B(nn.Sequential):\n    pass\n",
        "async def f():\n    import torch\n    return torch.relu(x)\n",
    ]:
        result = convert_source(source, "s.py")
        ast.parse(result.code)
        assert "[Start Convert]" in result.report


# --- files ---------------------------------------------------------------------------------

SIMPLE = (
    "import torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n"
)


def test_convert_script_writes_script_and_report(tmp_path, capsys):
    src = tmp_path / "model.py"
    src.write_text(SIMPLE)
    result = convert_script(src, tmp_path / "out", tmp_path / "reports")
    assert result.script_path == tmp_path / "out" / "model.py"
    assert result.report_path == tmp_path / "reports" / "report_of_model.txt"
    assert result.script_path.exists() and result.report_path.exists()
    assert result.unconverted == 0 and result.converted_rate == 100.0
    err = capsys.readouterr().err
    assert err.startswith("[Deprecated]") and "--model_file" in err and err.strip() == DEPRECATION


def test_report_defaults_to_output_folder_and_no_silent_overwrite(tmp_path):
    src = tmp_path / "model.py"
    src.write_text(SIMPLE)
    out = tmp_path / "out"
    first = convert_script(src, out)
    assert first.report_path.parent == out
    with pytest.raises(MindConverterError) as info:
        convert_script(src, out)
    assert info.value.key == "OUTPUT_EXISTS"
    again = convert_script(src, out, overwrite=True)
    assert again.script_path.exists()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_output_never_replaces_the_input(tmp_path):
    src = tmp_path / "model.py"
    src.write_text(SIMPLE)
    with pytest.raises(MindConverterError):
        convert_script(src, tmp_path, overwrite=True)
    assert src.read_text() == SIMPLE


@pytest.mark.parametrize(
    "setup, key",
    [
        (lambda p: None, "FILE_NOT_FOUND"),
        (lambda p: p.mkdir(), "FILE_IS_DIRECTORY"),
        (lambda p: p.write_text("  \n"), "FILE_EMPTY"),
        (lambda p: p.write_text("def broken(:\n"), "SCRIPT_UNREADABLE"),
        (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary"), "SCRIPT_UNREADABLE"),
        (lambda p: p.write_bytes(b"x = '\xff\xfe'\n"), "SCRIPT_UNREADABLE"),
    ],
    ids=["missing", "directory", "empty", "syntax", "binary", "encoding"],
)
def test_input_errors(tmp_path, setup, key):
    src = tmp_path / "model.py"
    setup(src)
    with pytest.raises(MindConverterError) as info:
        convert_script(src, tmp_path / "out")
    assert info.value.key == key
    assert str(info.value).startswith("[")
    assert not (tmp_path / "out" / "model.py").exists()


def test_output_folder_that_is_a_file(tmp_path):
    src = tmp_path / "model.py"
    src.write_text(SIMPLE)
    target = tmp_path / "out"
    target.write_text("a file")
    with pytest.raises(MindConverterError) as info:
        convert_script(src, target)
    assert info.value.key == "OUTPUT_IS_FILE"


def test_docs_are_generated_from_the_mapping_files():
    from tools import gen_ast_docs as gen_docs

    assert gen_docs.DOC_PATH.read_text(encoding="utf-8") == gen_docs.render(), (
        "docs/ast_path.md is out of date: python tools/gen_ast_docs.py"
    )


def test_training_loop_calls_are_converted_or_reported():
    """Optimizers and schedulers map to MindSpore's PyTorch-like ones; loss.backward() has no
    call-for-call form and is reported with the functional recipe, so the rate counts it."""
    result = convert("""
        import torch

        def train(net, loader, loss_fn):
            opt = torch.optim.AdamW(net.parameters(), lr=3e-4, weight_decay=0.05)
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
            for x, y in loader:
                loss = loss_fn(net(x), y)
                loss.backward()
                sched.step()
        """)
    code = ast.unparse(ast.parse(result.code))
    assert (
        "mindspore.experimental.optim.AdamW(net.get_parameters(), lr=0.0003, weight_decay=0.05)"
        in code
    )
    assert "mindspore.experimental.optim.lr_scheduler.CosineAnnealingLR(opt, 10)" in code
    backward = [t for t in result.report.splitlines() if "'Tensor.backward' didn't convert" in t]
    assert len(backward) == 1 and "mindspore.value_and_grad" in backward[0]
    assert "Unconverted: 1" in result.report
