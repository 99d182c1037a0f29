"""Our checkpoint writer against MindSpore's own reader."""

from __future__ import annotations

import io

import numpy as np
import pytest

from mindconverter.outputs.checkpoint import read_checkpoint, tensor_type_name, write_checkpoint

PARAMETERS = {
    "conv.weight": np.arange(2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3) / 7,
    "bn.moving_mean": np.array([0.5, -1.25], np.float16),
    "embedding.table": np.arange(6, dtype=np.float64).reshape(3, 2),
    "steps": np.array(7, np.int64),
    "lengths": np.array([1, 2, 3], np.int32),
    "mask": np.array([True, False]),
    "codes": np.array([0, 255], np.uint8),
}


def _written(tmp_path):
    path = tmp_path / "model.ckpt"
    with open(path, "wb") as stream:
        write_checkpoint(stream, PARAMETERS.items())
    return path


def test_mindspore_reads_every_dtype_and_shape(tmp_path):
    import mindspore as ms

    loaded = ms.load_checkpoint(str(_written(tmp_path)))
    assert set(loaded) == set(PARAMETERS)
    for name, array in PARAMETERS.items():
        value = loaded[name].asnumpy()
        assert value.dtype == array.dtype and value.shape == array.shape, name
        np.testing.assert_array_equal(value, array)


def test_our_reader_round_trips(tmp_path):
    read = read_checkpoint(_written(tmp_path).read_bytes())
    assert list(read) == list(PARAMETERS)
    for name, array in PARAMETERS.items():
        np.testing.assert_array_equal(read[name], array)


def test_writing_streams_and_reports_the_bytes_written():
    stream = io.BytesIO()
    written = write_checkpoint(stream, iter(PARAMETERS.items()))  # any iterable, read once
    assert written == len(stream.getvalue()) > sum(a.nbytes for a in PARAMETERS.values())


@pytest.mark.parametrize(
    "dtype,name",
    [(np.float32, "Float32"), (np.float16, "Float16"), (np.int64, "Int64"), (np.bool_, "Bool")],
)
def test_tensor_type_names(dtype, name):
    assert tensor_type_name(np.dtype(dtype)) == name


def test_records_are_the_bytes_protobuf_would_serialise():
    """Headers are encoded by hand and tensor bytes written from memory: the file must be what
    protobuf writes for the same message (MindSpore parses it with protobuf)."""
    import ml_dtypes

    from mindconverter.outputs.checkpoint import message_classes

    parameters = {
        **PARAMETERS,
        "transposed": np.arange(12, dtype=np.float32).reshape(3, 4).T,  # not contiguous
        "big_endian": np.arange(5, dtype=">i4"),
        "empty": np.zeros((0, 3), np.float32),
        "bf16": np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16),
        "x" * 200: np.ones((300, 2), np.float32),  # multi-byte lengths
        "名前": np.array([1.5], np.float64),
    }
    stream = io.BytesIO()
    write_checkpoint(stream, parameters.items())
    checkpoint_class, _ = message_classes()
    expected = checkpoint_class()
    for name, array in parameters.items():
        value = expected.value.add(tag=name)
        value.tensor.dims.extend(array.shape)
        value.tensor.tensor_type = tensor_type_name(array.dtype)
        value.tensor.tensor_content = np.ascontiguousarray(
            array, array.dtype.newbyteorder("<")
        ).tobytes()
    assert stream.getvalue() == expected.SerializeToString()


def test_progress_is_told_each_record_size():
    sizes = []
    written = write_checkpoint(io.BytesIO(), PARAMETERS.items(), sizes.append)
    assert len(sizes) == len(PARAMETERS) and sum(sizes) == written


def test_safetensors_for_checkpoints_past_what_a_ckpt_holds(tmp_path):
    import mindspore as ms
    from safetensors.numpy import load_file

    from mindconverter.outputs.checkpoint import fits_ckpt, write_safetensors

    parameters = {**PARAMETERS, "transposed": np.arange(12, dtype=np.float32).reshape(3, 4).T}
    assert fits_ckpt(list(parameters.items()))
    path = tmp_path / "model.safetensors"
    with open(path, "wb") as stream:
        written = write_safetensors(stream, list(parameters.items()))
    assert written == path.stat().st_size
    by_library = load_file(str(path))
    by_mindspore = ms.load_checkpoint(str(path), format="safetensors")
    for name, array in parameters.items():
        np.testing.assert_array_equal(by_library[name], array)
        np.testing.assert_array_equal(by_mindspore[name].asnumpy(), array)
        assert by_mindspore[name].asnumpy().dtype == array.dtype
