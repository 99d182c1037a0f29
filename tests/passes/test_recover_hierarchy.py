"""The module tree recovered from exporter hints (dynamo metadata, TorchScript scopes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter.graph import Graph
from mindconverter.graph.module_tree import Block
from mindconverter.graph.specs import detect_inputs
from mindconverter.mappers.registry import default_registry
from mindconverter.passes import recover_hierarchy
from mindconverter.passes.context import PassContext
from mindconverter.passes.fix_shapes import parse_shape_request
from mindconverter.passes.pipeline import PIPELINE, run_passes
from tests.helpers import assert_runs_like_onnxruntime, convert_fully, make_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _tree(fixture: str, shapes: tuple[str, ...] = ("1,3,32,32",)) -> Block:
    graph = Graph(onnx.load(FIXTURES / fixture))
    context = PassContext(default_registry(), shapes=[parse_shape_request(s) for s in shapes])
    context.input_specs = detect_inputs(graph.model)
    upto = [step.name for step in PIPELINE].index("recover the module hierarchy")
    run_passes(graph, context, PIPELINE[:upto])
    assert recover_hierarchy.run(graph, context) is False  # it reads the graph, never edits it
    return context.tree


def _children(block: Block) -> dict[str, Block]:
    return {item.name: item for item in block.items if isinstance(item, Block)}


def test_dynamo_hints_give_the_source_modules_and_classes():
    tree = _tree("tiny_resnet_dynamo.onnx")
    children = _children(tree)
    assert {"layer1", "layer2", "layer3"} <= set(children)
    blocks = _children(children["layer1"])
    assert set(blocks) == {"0", "1"}
    assert {block.class_hint for block in blocks.values()} == {"BasicBlock"}
    assert children["layer1"].sequential


def test_every_mapped_node_is_in_the_tree_once():
    graph_nodes = _tree("tiny_resnet_torchscript.onnx").nodes()
    names = [mapped.node.name for mapped in graph_nodes]
    assert len(names) == len(set(names)) > 20


def test_torchscript_scopes_give_the_module_paths():
    children = _children(_tree("tiny_resnet_torchscript.onnx"))
    assert {"layer1", "layer2", "layer3"} <= set(children)


def _blocks(block: Block) -> list[Block]:
    result = [block]
    for child in block.child_blocks():
        result.extend(_blocks(child))
    return result


def test_a_node_without_scope_joins_the_block_around_it():
    # dynamo leaves the fused-qkv Split of the attention without a module scope; placed at the
    # root it would cut every block above it in two and dissolve them
    tree = _tree("tiny_gpt_dynamo.onnx", ("2,8",))
    layers = _children(_children(tree)["h"])
    assert set(layers) == {"0", "1"}
    for layer in layers.values():
        attention = _children(layer)["attn"]
        assert attention.class_hint == "CausalSelfAttention"
        splits = [m for m in attention.nodes() if m.node.op_type == "Split"]
        assert len(splits) == 1 and not splits[0].node.metadata
        assert attention.inputs[0] == layer.items[0].node.outputs[0]  # ln_1's result


def test_a_node_without_scope_joins_a_module_written_in_functional_calls(tmp_path):
    """nn.MultiheadAttention(kdim=8) (dynamo): the split of its in_proj_bias has no scope and
    feeds only the attention, whose projections are F.linear calls (no child modules): it joins
    the attention, which holds the bias, instead of the root passing the parts down."""
    tree = _tree("tiny_mha_cross_weights_dynamo.onnx", ("x=2,5,16", "memory=2,7,8"))
    attention = _children(tree)["attn"]
    assert [m.node.op_type for m in attention.nodes()].count("Split") == 1
    model = onnx.load(FIXTURES / "tiny_mha_cross_weights_dynamo.onnx")
    result = convert_fully(model, tmp_path, shape=["x=2,5,16", "memory=2,7,8"])
    assert "self.in_proj_bias = Parameter(" in result.script_path.read_text()
    rng = np.random.default_rng(5)
    for batch, seq, mem in ((2, 5, 7), (3, 4, 9)):
        feeds = {
            "x": rng.standard_normal((batch, seq, 16)).astype(np.float32),
            "memory": rng.standard_normal((batch, mem, 8)).astype(np.float32),
        }
        assert_runs_like_onnxruntime(model, result, feeds)


@pytest.mark.parametrize(
    "fixture, shapes",
    [
        ("tiny_gpt_dynamo.onnx", ("2,8",)),
        ("tiny_gpt_torchscript.onnx", ("2,8",)),
        ("tiny_bert_dynamo.onnx", ("2,8", "2,8")),
        ("tiny_dinov2_dynamo.onnx", ("1,3,28,28",)),
    ],
)
def test_blocks_read_sizes_themselves(fixture, shapes):
    tree = _tree(fixture, shapes)
    nodes = tree.nodes()
    sizes = {m.node.outputs[0] for m in nodes if m.node.op_type == "Dims"}
    blocks = _blocks(tree)[1:]
    assert len(blocks) >= 4
    for block in blocks:
        assert not set(block.inputs) & sizes, (block.path, block.inputs)
    # every size a block uses is read from a tensor of that block
    for block in blocks:
        made = {n for m in block.nodes() for n in m.node.outputs}
        held = made | set(block.inputs)
        for m in block.items:
            if not isinstance(m, Block) and m.node.op_type == "Dims":
                assert set(m.node.inputs) <= held


def test_bert_layers_take_hidden_states_and_mask_only():
    tree = _tree("tiny_bert_dynamo.onnx", ("2,8", "2,8"))
    encoder = _children(_children(tree)["bert"])["encoder"]
    layers = _children(_children(encoder)["layer"])
    assert [len(layer.inputs) for layer in layers.values()] == [2, 2, 2]
    assert len({layer.inputs[1] for layer in layers.values()}) == 1  # one shared mask


def test_layers_whose_nodes_come_in_another_order_share_one_class(tmp_path):
    """The TorchScript exporter may list one layer's nodes in another order than the next
    (``k`` before ``q``): the layers still become one class, run in one loop."""
    import numpy as np
    from onnx import helper

    from tests.helpers import assert_matches, make_model

    rng = np.random.default_rng(0)
    nodes, constants, current = [], {}, "x"
    for layer in range(2):
        scope = f"/encoder/layers.{layer}/attn"
        for part in ("q", "k"):
            constants[f"w{part}{layer}"] = rng.standard_normal((4, 4)).astype(np.float32)
        query = helper.make_node(
            "MatMul", [current, f"wq{layer}"], [f"q{layer}"], name=f"{scope}/q/MatMul"
        )
        key = helper.make_node(
            "MatMul", ["enc", f"wk{layer}"], [f"k{layer}"], name=f"{scope}/k/MatMul"
        )
        mixed = helper.make_node(
            "Add", [f"q{layer}", f"k{layer}"], [f"a{layer}"], name=f"{scope}/Add"
        )
        done = helper.make_node(
            "Relu", [f"a{layer}"], [f"h{layer}"], name=f"/encoder/layers.{layer}/act/Relu"
        )
        nodes += ([query, key] if layer == 0 else [key, query]) + [mixed, done]
        current = f"h{layer}"
    nodes.append(helper.make_node("Tanh", [current], ["y"], name="/head/Tanh"))
    model = make_model(
        nodes,
        [("x", np.float32, [2, 4]), ("enc", np.float32, [2, 4])],
        [("y", np.float32, [2, 4])],
        constants,
    )
    result = assert_matches(model, tmp_path)
    code = result.script_path.read_text()
    assert code.count("class Attention(") == 1 and "for layer in self.layers" in code, code


def test_a_block_reading_two_sizes_of_a_network_input_reads_them_from_its_own_tensors(tmp_path):
    """Two shape tuples in one block read the network's ``ids`` (a dynamo export reads sizes
    from the graph input): the block computes them from its own tensors instead of taking
    ``ids`` as an argument only for its sizes."""
    import numpy as np
    from onnx import helper

    from tests.helpers import assert_matches, make_model

    scope = "/encoder/layer.0/attn"
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["h"], name="/embed/Gather"),
        helper.make_node("MatMul", ["h", "w"], ["q"], name=f"{scope}/q/MatMul"),
        helper.make_node("Shape", ["ids"], ["size"], name=f"{scope}/Shape"),
        helper.make_node("Concat", ["size", "heads"], ["split"], axis=0, name=f"{scope}/Concat"),
        helper.make_node("Reshape", ["q", "split"], ["q4"], name=f"{scope}/Reshape"),
        helper.make_node("Relu", ["q4"], ["r"], name=f"{scope}/Relu"),
        helper.make_node("Concat", ["size", "width"], ["merge"], axis=0, name=f"{scope}/Concat_1"),
        helper.make_node("Reshape", ["r", "merge"], ["a"], name=f"{scope}/Reshape_1"),
        helper.make_node("Tanh", ["a"], ["y"], name="/encoder/layer.0/act/Tanh"),
    ]
    rng = np.random.default_rng(0)
    constants = {
        "table": rng.standard_normal((10, 4)).astype(np.float32),
        "w": rng.standard_normal((4, 4)).astype(np.float32),
        "heads": np.array([2, 2], np.int64),
        "width": np.array([4], np.int64),
    }
    model = make_model(
        nodes, [("ids", np.int64, ["batch", "seq"])], [("y", np.float32, None)], constants
    )
    feeds = {"ids": rng.integers(0, 10, (2, 3)).astype(np.int64)}
    result = assert_matches(model, tmp_path, feeds, shape=["2,3"])
    code = result.script_path.read_text()
    attention = code[code.index("class Attention(") : code.index("class AttentionLayer")]
    assert "def construct(self, hidden_states):" in attention, attention


@pytest.mark.slow
def test_what_a_first_layer_computes_for_the_others_runs_before_the_layers(tmp_path):
    """T5: block 0 owns the relative position table and hands the position bias to the other
    blocks. Computed in the encoder before the list (the table keeps its weights), every
    block has one signature and one class, run in a loop, and the numbers stay onnxruntime's
    at two shapes."""
    import numpy as np

    from tests.helpers import assert_runs_like_onnxruntime, convert_fully

    model = onnx.load(FIXTURES / "tiny_t5_encoder_torchscript.onnx")
    result = convert_fully(model, tmp_path, shape=["input_ids=2,5", "attention_mask=2,5"])
    code = result.script_path.read_text()
    assert "nn.CellList([Block(), Block()])" in code and "for layer in self.block:" in code
    rng = np.random.default_rng(5)
    for batch, seq in (2, 5), (3, 9):
        mask = np.ones((batch, seq), np.int64)
        mask[0, -2:] = 0
        feeds = {"input_ids": rng.integers(0, 40, (batch, seq)), "attention_mask": mask}
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_what_every_layer_computes_alike_runs_once_before_the_layers(tmp_path):
    """T5 through TorchScript: each decoder block's self-attention builds the same causal mask
    from the target length. Built once in the decoder before the loop, the attention keeps
    only the attention, and the numbers stay onnxruntime's at two shapes."""
    import numpy as np

    from tests.helpers import assert_runs_like_onnxruntime, convert_fully

    model = onnx.load(FIXTURES / "tiny_t5_torchscript.onnx")
    shape = ["input_ids=2,5", "attention_mask=2,5", "decoder_input_ids=2,4"]
    result = convert_fully(model, tmp_path, shape=shape)
    code = result.script_path.read_text()
    # one self-attention class for the encoder's block and the decoder's
    attention = code[code.index("class SelfAttention(") : code.index("class SelfAttentionLayer(")]
    decoder = code[code.index("class Decoder") : code.index("class Model(")]
    assert "ops.arange" not in attention and "ops.where" not in attention, attention
    assert "for layer in self.block:" in decoder and decoder.count("ops.arange") == 4, decoder
    assert "ms.Tensor(" not in decoder  # the moved mask is tidied like the rest
    rng = np.random.default_rng(7)
    for batch, source, target in (2, 5, 4), (3, 7, 6):
        mask = np.ones((batch, source), np.int64)
        mask[0, -2:] = 0
        feeds = {
            "input_ids": rng.integers(0, 40, (batch, source)),
            "attention_mask": mask,
            "decoder_input_ids": rng.integers(0, 40, (batch, target)),
        }
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_a_token_count_fixed_by_the_model_is_a_number_not_an_argument(tmp_path):
    """DINOv2 through dynamo: the export specialised the position-table interpolation away, so
    the token count (a formula over the image height) can only be 17; shape inference knows
    each head reshape gives 17 tokens. The attention reads the batch from its own input and
    writes 17 instead of taking the encoder's shape tuples as arguments."""
    import numpy as np

    from tests.helpers import assert_runs_like_onnxruntime, convert_fully

    model = onnx.load(FIXTURES / "tiny_dinov2_dynamo.onnx")
    result = convert_fully(model, tmp_path, shape=["pixel_values=1,3,28,28"])
    code = result.script_path.read_text()
    attention = code[code.index("class Dinov2Attention") : code.index("class Dinov2MLP")]
    assert "def construct(self, hidden_states):" in attention, attention
    assert "(batch_size, 17, -1, 16)" in attention
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 28, 28)).astype(np.float32)
        assert_runs_like_onnxruntime(model, result, {"pixel_values": x})


@pytest.mark.slow
def test_what_the_first_layer_repeats_of_shared_tables_runs_before_the_layers(tmp_path):
    """GPT-J: layer 0 repeats the sin and cos tables for every layer (later layers read its
    repeats). The tables are not the hidden states the list carries, so the repeats move
    before the list: one block class in a loop, and the numbers stay onnxruntime's."""
    import numpy as np

    from tests.helpers import assert_runs_like_onnxruntime, convert_fully

    model = onnx.load(FIXTURES / "tiny_gptj_torchscript.onnx")
    result = convert_fully(model, tmp_path, shape=["input_ids=2,5", "attention_mask=2,5"])
    code = result.script_path.read_text()
    assert "for layer in self.h:" in code and "self.h[0]" not in code
    assert "apply_partial_interleaved_rotary_pos_emb(" in code
    rng = np.random.default_rng(6)
    for batch, seq in (2, 5), (3, 9):
        mask = np.ones((batch, seq), np.int64)
        mask[0, -2:] = 0
        feeds = {"input_ids": rng.integers(0, 40, (batch, seq)), "attention_mask": mask}
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


def test_a_block_reads_sizes_from_what_it_computes_with():
    """Dynamo sizes BERT's embeddings by the attention mask, which they never read; the
    embeddings read the sizes from their input ids and take nothing else."""
    tree = _tree("tiny_bert_dynamo.onnx", ("2,8", "2,8"))
    embeddings = _children(_children(tree)["bert"])["embeddings"]
    assert embeddings.inputs == ["input_ids"]


def test_a_layer_whose_output_is_sized_elsewhere_stays_in_its_module(tmp_path):
    """YOLOS: the encoder reads the patch grid's size from the projection's output; the
    projection still belongs to the patch embeddings (it is not moved out as a computation
    the embeddings share with the encoder)."""
    import numpy as np
    from onnx import helper

    from tests.helpers import assert_matches, make_model

    patch = "/embeddings/patch_embeddings"
    nodes = [
        helper.make_node(
            "Conv", ["x", "w"], ["grid"], kernel_shape=[2, 2], strides=[2, 2],
            name=f"{patch}/projection/Conv",
        ),
        helper.make_node("Reshape", ["grid", "flat"], ["cells"], name=f"{patch}/Reshape"),
        helper.make_node("Transpose", ["cells"], ["tokens"], perm=[0, 2, 1], name=f"{patch}/T"),
        helper.make_node("Relu", ["tokens"], ["h"], name="/encoder/act/Relu"),
        helper.make_node("Transpose", ["h"], ["h_t"], perm=[0, 2, 1], name="/encoder/T"),
        helper.make_node("Shape", ["grid"], ["grid_size"], name="/encoder/Shape"),
        helper.make_node("Reshape", ["h_t", "grid_size"], ["y"], name="/encoder/Reshape"),
    ]  # fmt: skip
    rng = np.random.default_rng(0)
    constants = {
        "w": rng.standard_normal((4, 3, 2, 2)).astype(np.float32),
        "flat": np.array([0, 4, -1], np.int64),
    }
    model = make_model(
        nodes, [("x", np.float32, ["batch", 3, "h", "w"])], [("y", np.float32, None)], constants
    )
    feeds = {"x": rng.standard_normal((2, 3, 8, 6)).astype(np.float32)}
    result = assert_matches(model, tmp_path, feeds, shape=["2,3,8,6"])
    code = result.script_path.read_text()
    assert "self.projection = nn.Conv2d(" in code, code


@pytest.mark.slow
def test_different_sublayers_of_a_list_are_taken_out_by_name(tmp_path):
    """T5Block's ``layer`` holds a self-attention, a cross-attention and a feed-forward
    sublayer, each called once: ``construct`` takes them out of the list by the module each
    wraps instead of calling ``self.layer[0]``, ``self.layer[1]``; GRAPH_MODE runs it."""
    from tests.helpers import convert_fully

    model = onnx.load(FIXTURES / "tiny_t5_torchscript.onnx")
    shape = ["input_ids=2,5", "attention_mask=2,5", "decoder_input_ids=2,4"]
    result = convert_fully(model, tmp_path, shape=shape, verify=True, graph_mode=True)
    code = result.script_path.read_text()
    assert "self.layer[" not in code
    assert "self_attention, dense_relu_dense = self.layer" in code
    assert "self_attention, enc_dec_attention, dense_relu_dense = self.layer" in code
    assert "class EncDecAttentionLayer(nn.Cell):" in code


def test_a_value_every_layer_computes_alike_stays_where_a_later_node_reads_it(tmp_path):
    """Each layer adds arange(seq) to the hidden states; a node after the list reads layer
    1's float copy of it. That copy is not dropped for layer 0's (which moves before the list):
    the node after the list would read a value nothing makes."""
    import numpy as np
    from onnx import helper

    from tests.helpers import assert_matches, make_model

    nodes, hidden = [], "x"
    for index in range(2):
        scope = f"/layers.{index}"
        nodes += [
            helper.make_node("Shape", [hidden], [f"shape{index}"], name=f"{scope}/Shape"),
            helper.make_node(
                "Gather", [f"shape{index}", "one"], [f"n{index}"], axis=0, name=f"{scope}/Gather"
            ),
            helper.make_node(
                "Range", ["zero", f"n{index}", "step"], [f"r{index}"], name=f"{scope}/Range"
            ),
            helper.make_node("Cast", [f"r{index}"], [f"f{index}"], to=1, name=f"{scope}/Cast"),
            helper.make_node("Add", [hidden, f"f{index}"], [f"a{index}"], name=f"{scope}/Add"),
            helper.make_node("Tanh", [f"a{index}"], [f"h{index}"], name=f"{scope}/act/Tanh"),
        ]
        hidden = f"h{index}"
    nodes.append(helper.make_node("Mul", ["h1", "f1"], ["y"], name="/head/Mul"))
    constants = {
        "one": np.array(1, np.int64),
        "zero": np.array(0, np.int64),
        "step": np.array(1, np.int64),
    }
    model = make_model(
        nodes,
        [("x", np.float32, ["batch", "seq"])],
        [("y", np.float32, ["batch", "seq"])],
        constants,
    )
    for batch, seq in (2, 3), (3, 5):
        feeds = {"x": np.ones((batch, seq), np.float32)}
        assert_matches(model, tmp_path / str(seq), feeds, shape=["2,3"])


@pytest.mark.slow
def test_a_one_layer_list_computes_its_position_bias_before_the_layer(tmp_path):
    """T5 with one encoder block: the block's attention computes the relative position bias
    from sizes and a table alone (with two blocks the first hands it to the second, and it runs
    before the list). It runs before the list here too: the attention reads like a two-block
    model's, and the numbers stay onnxruntime's at two shapes."""
    import numpy as np

    from tests.helpers import assert_runs_like_onnxruntime, convert_fully

    model = onnx.load(FIXTURES / "tiny_t5_torchscript.onnx")
    shape = ["input_ids=2,5", "attention_mask=2,5", "decoder_input_ids=2,4"]
    result = convert_fully(model, tmp_path, shape=shape)
    code = result.script_path.read_text()
    attention = code[code.index("class SelfAttention(") : code.index("class SelfAttentionLayer(")]
    encoder = code[code.index("class Encoder(") : code.index("class EncDecAttention(")]
    assert "ops.arange" not in attention and "def construct(self, hidden_states, " in attention
    assert "self.relative_attention_bias(" in encoder, encoder
    rng = np.random.default_rng(10)
    for batch, source, target in (2, 5, 4), (3, 9, 2):
        feeds = {
            "input_ids": rng.integers(0, 40, (batch, source)),
            "attention_mask": np.ones((batch, source), np.int64),
            "decoder_input_ids": rng.integers(0, 40, (batch, target)),
        }
        assert_runs_like_onnxruntime(model, result, feeds, atol=1e-5, rtol=1e-4)


def _windows_block():
    """Swin-like: the root cuts x [batch, 16, 4] into windows [4 * batch, 4, 4]; block ``blk``
    works on the windows and folds them back to [batch, 16, 4] by the image batch."""
    nodes = [
        helper.make_node("Reshape", ["x", "window_shape"], ["windows"], name="/Reshape"),
        helper.make_node("MatMul", ["windows", "w"], ["r"], name="/blk/proj/MatMul"),
        helper.make_node("Shape", ["x"], ["x_shape"], name="/blk/Shape"),
        helper.make_node("Gather", ["x_shape", "zero"], ["b"], name="/blk/Gather", axis=0),
        helper.make_node("Unsqueeze", ["b", "axis0"], ["b1"], name="/blk/Unsqueeze"),
        helper.make_node("Concat", ["b1", "rest"], ["back"], name="/blk/Concat", axis=0),
        helper.make_node("Reshape", ["r", "back"], ["y"], name="/blk/Reshape_1"),
    ]
    constants = {
        "window_shape": np.array([-1, 4, 4], np.int64),
        "zero": np.array(0, np.int64),
        "axis0": np.array([0], np.int64),
        "rest": np.array([16, 4], np.int64),
        "w": np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32),
    }
    return make_model(
        nodes, [("x", np.float32, ["batch", 16, 4])], [("y", np.float32, None)], constants
    )


def test_a_block_reads_the_image_batch_from_its_windows_not_from_the_input(tmp_path):
    model = _windows_block()
    result = convert_fully(model, tmp_path, shape=["x=2,16,4"])
    code = result.script_path.read_text()
    block = code[code.index("class Blk") : code.index("class MindSporeModel")]
    assert "def construct(self, hidden_states):" in block and "// 4" in block, block
    for batch in (2, 3):
        feeds = {"x": np.random.default_rng(batch).standard_normal((batch, 16, 4), np.float32)}
        assert_runs_like_onnxruntime(model, result, feeds)


def _cropped_cache():
    """The caller crops the cache (root code, as a sliding-window cache does); block ``model``
    appends the new step to the crop and also reads the whole cache's length."""
    nodes = [
        helper.make_node("Slice", ["past", "minus3", "big", "axis2"], ["crop"], name="/Slice"),
        helper.make_node("Concat", ["crop", "step"], ["cat"], name="/model/Concat", axis=2),
        helper.make_node("MatMul", ["cat", "w"], ["proj"], name="/model/proj/MatMul"),
        helper.make_node("Shape", ["past"], ["past_shape"], name="/model/Shape"),
        helper.make_node("Gather", ["past_shape", "two"], ["length"], name="/model/Gather"),
        helper.make_node("Cast", ["length"], ["length_f"], name="/model/Cast", to=1),
        helper.make_node("Add", ["proj", "length_f"], ["y"], name="/model/Add"),
    ]
    constants = {
        "minus3": np.array([-3], np.int64),
        "big": np.array([2**62], np.int64),
        "axis2": np.array([2], np.int64),
        "two": np.array(2, np.int64),
        "w": np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32),
    }
    inputs = [
        ("past", np.float32, ["batch", 2, "past", 4]),
        ("step", np.float32, ["batch", 2, 1, 4]),
    ]
    return make_model(nodes, inputs, [("y", np.float32, None)], constants)


def test_a_cache_cropped_by_the_caller_is_cropped_in_the_block_reading_its_length(tmp_path):
    model = _cropped_cache()
    result = convert_fully(model, tmp_path, shape=["past=1,2,5,4", "step=1,2,1,4"])
    code = result.script_path.read_text()
    block = code[code.index("class Model") : code.index("class MindSporeModel")]
    assert (
        "[:, :, -3:]" in block and "[:, :, -3:]" not in code[code.index("class MindSporeModel") :]
    )
    assert block.count("def construct(self, past, ") == 1, block
    rng = np.random.default_rng(2)
    for past in (5, 2):
        feeds = {
            "past": rng.standard_normal((1, 2, past, 4), np.float32),
            "step": rng.standard_normal((1, 2, 1, 4), np.float32),
        }
        assert_runs_like_onnxruntime(model, result, feeds)


def _layers_cropping_one_cache():
    """Two layers of one module list, each appending its step to its own cache; the first layer
    (a sliding window's) crops what it returns to the last 3 steps, the second does not."""
    nodes, constants = [], {}
    rng = np.random.default_rng(3)
    hidden = "x"
    for i in range(2):
        scope = f"/model/layers.{i}"
        constants[f"w{i}"] = rng.standard_normal((4, 4)).astype(np.float32)
        nodes += [
            helper.make_node("MatMul", [hidden, f"w{i}"], [f"h{i}"], name=f"{scope}/proj/MatMul"),
            helper.make_node("Unsqueeze", [f"h{i}", "axis1"], [f"s{i}"], name=f"{scope}/Unsqueeze"),
            helper.make_node(
                "Concat", [f"past{i}", f"s{i}"], [f"cat{i}"], name=f"{scope}/Concat", axis=1
            ),
            helper.make_node(
                "ReduceSum",
                [f"cat{i}", "axis1"],
                [f"sum{i}"],
                name=f"{scope}/ReduceSum",
                keepdims=0,
            ),
            helper.make_node("Add", [f"h{i}", f"sum{i}"], [f"t{i}"], name=f"{scope}/Add"),
        ]
        hidden = f"t{i}"
    nodes.append(
        helper.make_node(
            "Slice", ["cat0", "minus3", "big", "axis1"], ["present0"], name="/model/layers.0/Slice"
        )
    )
    nodes.append(helper.make_node("Relu", ["t1"], ["y"], name="/Relu"))
    constants.update(
        axis1=np.array([1], np.int64),
        minus3=np.array([-3], np.int64),
        big=np.array([2**62], np.int64),
    )
    inputs = [("x", np.float32, ["batch", 4])] + [
        (f"past{i}", np.float32, ["batch", "past", 4]) for i in range(2)
    ]
    outputs = [
        ("y", np.float32, None),
        ("present0", np.float32, None),
        ("cat1", np.float32, None),
    ]
    return make_model(nodes, inputs, outputs, constants)


def test_a_crop_only_some_layers_apply_to_their_results_runs_after_the_loop(tmp_path):
    model = _layers_cropping_one_cache()
    result = convert_fully(model, tmp_path, shape=["x=1,4", "past0=1,5,4", "past1=1,5,4"])
    code = result.script_path.read_text()
    assert "class Layer2" not in code and "for layer, past in zip(self.layers, pasts):" in code
    assert "out = present_pasts[0][:, -3:]" in code, code
    rng = np.random.default_rng(4)
    for past in (5, 2):
        feeds = {"x": rng.standard_normal((1, 4), np.float32)}
        feeds.update({f"past{i}": rng.standard_normal((1, past, 4), np.float32) for i in range(2)})
        assert_runs_like_onnxruntime(model, result, feeds)


def test_the_last_step_of_the_last_layer_stays_in_it_when_it_gives_the_output(tmp_path):
    """BEiT's encoder returns its last layer's residual sum: that sum is the layer's own, not
    a crop to run after the loop (both layers stay one class, run in a loop)."""
    nodes, constants, hidden = [], {}, "x"
    rng = np.random.default_rng(5)
    for i in range(2):
        scope = f"/model/layers.{i}"
        constants[f"w{i}"] = rng.standard_normal((4, 4)).astype(np.float32)
        nodes += [
            helper.make_node("MatMul", [hidden, f"w{i}"], [f"h{i}"], name=f"{scope}/proj/MatMul"),
            helper.make_node("Tanh", [f"h{i}"], [f"t{i}"], name=f"{scope}/Tanh"),
            helper.make_node("Add", [f"t{i}", hidden], [f"r{i}"], name=f"{scope}/Add"),
        ]
        hidden = f"r{i}"
    model = make_model(
        nodes, [("x", np.float32, ["batch", 4])], [("r1", np.float32, None)], constants
    )
    result = convert_fully(model, tmp_path, shape=["x=2,4"])
    code = result.script_path.read_text()
    assert "class Layers2" not in code and "class Layer2" not in code, code
    assert "nn.SequentialCell([Layer(), Layer()])" in code, code
    feeds = {"x": rng.standard_normal((3, 4), np.float32)}
    assert_runs_like_onnxruntime(model, result, feeds)


def test_a_value_one_layer_of_a_list_reads_beside_its_source_stays_before_the_list(tmp_path):
    """Layer 0 adds -x to its projection of x, layer 1 adds -y to its projection of layer 0's
    result: moving -x into layer 0 (it reads x itself) would make two layer classes."""
    rng = np.random.default_rng(6)
    nodes = [
        helper.make_node("Relu", ["x"], ["first"], name="/model/Relu"),
        helper.make_node("Neg", ["first"], ["s0"], name="/model/Neg"),
        helper.make_node("Neg", ["y"], ["s1"], name="/model/Neg_1"),
    ]
    hidden, constants = "first", {}
    for i in range(2):
        constants[f"w{i}"] = rng.standard_normal((4, 4)).astype(np.float32)
        nodes += [
            helper.make_node(
                "MatMul", [hidden, f"w{i}"], [f"p{i}"], name=f"/model/layers.{i}/proj/MatMul"
            ),
            helper.make_node("Add", [f"p{i}", f"s{i}"], [f"h{i}"], name=f"/model/layers.{i}/Add"),
        ]
        hidden = f"h{i}"
    nodes.append(helper.make_node("Relu", ["h1"], ["out"], name="/Relu"))
    inputs = [("x", np.float32, ["batch", 4]), ("y", np.float32, ["batch", 4])]
    model = make_model(nodes, inputs, [("out", np.float32, None)], constants)
    result = convert_fully(model, tmp_path, shape=["x=2,4", "y=2,4"])
    code = result.script_path.read_text()
    assert "class Layers2" not in code and "class Layer2" not in code, code
    feeds = {name: rng.standard_normal((3, 4), np.float32) for name in ("x", "y")}
    assert_runs_like_onnxruntime(model, result, feeds)


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_module_running_its_layers_functionally_is_a_block_of_its_own(tmp_path, exporter):
    """``nn.MultiheadAttention`` has no child modules: it runs ``F.linear`` with its packed
    ``in_proj_weight`` and its ``out_proj``'s weight. Both projections are layers of a
    ``MultiheadAttention`` class (``in_proj``, ``out_proj``), not of the encoder layer
    (``self.self_attn = nn.Dense(...)``, ``self.self_attn_out_proj``)."""
    model = onnx.load(FIXTURES / "reweight" / f"encoder_{exporter}.onnx")
    result = convert_fully(model, tmp_path, shape=["1,5,8"])
    code = result.script_path.read_text()
    name = "MultiheadAttention" if exporter == "dynamo" else "SelfAttention"  # class or path
    attention = code.split(f"class {name}(")[1].split("\nclass ")[0]
    assert "self.in_proj = nn.Dense(" in attention and "self.out_proj = nn.Dense(" in attention
    assert f"self.self_attn = {name}()" in code, code


def test_a_layer_preparing_its_own_input_as_the_parent_does_for_its_siblings_is_one_class(
    tmp_path,
):
    """Gemma-3 with one global layer among sliding ones: the exporter prepares the value the
    sliding layers share in the first of them (moved before the layers) and the global
    layer's own in that layer. Moved out as well, every layer reads its prepared value from
    outside: one class, one loop, onnxruntime's numbers at two batch sizes."""
    import numpy as np
    from onnx import helper

    from tests.helpers import assert_matches, assert_runs_like_onnxruntime, make_model

    rng = np.random.default_rng(0)
    nodes, constants, current = [], {"axes": np.array([0], np.int64)}, "x"
    for layer, table in enumerate("aab"):
        scope = f"/encoder/layers.{layer}"
        if layer in (0, 2):  # where the first layer reading the prepared table runs
            nodes.append(
                helper.make_node(
                    "Unsqueeze", [table, "axes"], [f"prep_{table}"], name=f"{scope}/attn/Unsqueeze"
                )
            )
        constants[f"w{layer}"] = rng.standard_normal((4, 4)).astype(np.float32)
        nodes += [
            helper.make_node(
                "MatMul", [current, f"w{layer}"], [f"m{layer}"], name=f"{scope}/proj/MatMul"
            ),
            helper.make_node(
                "Mul", [f"m{layer}", f"prep_{table}"], [f"s{layer}"], name=f"{scope}/Mul"
            ),
            helper.make_node("Add", [current, f"s{layer}"], [f"h{layer}"], name=f"{scope}/Add"),
        ]
        current = f"h{layer}"
    nodes.append(helper.make_node("Tanh", [current], ["y"], name="/head/Tanh"))
    inputs = [("x", np.float32, ["batch", 4]), ("a", np.float32, [4]), ("b", np.float32, [4])]
    model = make_model(nodes, inputs, [("y", np.float32, None)], constants)
    feeds = {"x": rng.standard_normal((2, 4)).astype(np.float32)}
    feeds |= {name: rng.standard_normal(4).astype(np.float32) for name in "ab"}
    result = assert_matches(model, tmp_path, feeds, shape=["x=2,4", "a=4", "b=4"])
    code = result.script_path.read_text()
    assert "nn.CellList([Layer(), Layer(), Layer()])" in code, code
    assert "self.layers[" not in code and "in zip(self.layers, " in code, code
    assert_runs_like_onnxruntime(model, result, {**feeds, "x": feeds["x"][:1]})
