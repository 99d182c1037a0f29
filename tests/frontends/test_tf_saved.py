"""TensorFlow as saved today: SavedModel folders (tf.saved_model.save and model.export), .keras,
.h5 and .tflite files, converted through the CLI as a user would and compared with TensorFlow's
own run of the same file (TFLite: tf.lite.Interpreter) at two batch sizes."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mindconverter.check.network import run_mindspore
from mindconverter.conversion.paths import output_paths
from mindconverter.frontends import tf_saved
from mindconverter.frontends.loading import check_model_path, load_model

REPO = Path(__file__).resolve().parents[2]
FORMATS = ("saved_model", "export", "keras", "h5", "tflite")
BATCHES = (2, 3)  # converted at the first, checked at both
TOLERANCE = 1e-4  # max |MindSpore - TensorFlow| relative to the output's scale


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m mindconverter ARGS`` with this checkout's package, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "GLOG_v": "3", "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, "-m", "mindconverter", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


# --- quick checks: no TensorFlow needed --------------------------------------------------------


def test_a_folder_is_accepted_only_when_it_is_a_saved_model(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(Exception, match="code 1000002: .*SavedModel folder holds saved_model.pb"):
        check_model_path(plain)
    (plain / "saved_model.pb").write_bytes(b"\x08\x01")
    assert check_model_path(plain) == plain
    with pytest.raises(Exception, match="code 1000002"):
        check_model_path(plain, (".json",))  # only a model may be a folder


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("net.keras", b"not a zip at all", "not a Keras zip archive"),
        ("net.keras", b"\x89HDF\r\n\x1a\n" + bytes(64), "rename it to .h5"),
        ("net.h5", b"PK\x03\x04" + bytes(64), "rename it to .keras"),
        ("net.h5", b"garbage" * 10, "not an HDF5 file"),
        ("net.tflite", b"garbage" * 10, "not a TFLite flatbuffer"),
    ],
)
def test_a_file_that_is_not_its_format_is_a_coded_error(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(Exception, match=f"code 1000004: .*{message}"):
        load_model(path)


def test_the_saved_model_pb_file_itself_points_to_its_folder(tmp_path):
    folder = tmp_path / "my_model"
    folder.mkdir()
    (folder / "saved_model.pb").write_bytes(b"\x08\x01\x12\x00")
    with pytest.raises(Exception, match="code 1000010: .*pass its folder .*my_model"):
        load_model(folder / "saved_model.pb")


def test_a_keras_zip_bomb_is_refused_before_keras_reads_it(tmp_path):
    path = tmp_path / "bomb.keras"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("config.json", "{}")
        archive.writestr("model.weights.h5", bytes(120 << 20))
    assert path.stat().st_size < 1 << 20
    with pytest.raises(Exception, match="code 1000004: .*zip bomb"):
        load_model(path)


def test_a_keras_zip_with_escaping_paths_is_refused(tmp_path):
    path = tmp_path / "slip.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", "{}")
        archive.writestr("../../outside.txt", "x")
    with pytest.raises(Exception, match="code 1000004: .*paths outside the archive"):
        load_model(path)


def test_a_saved_model_linking_outside_its_folder_is_refused(tmp_path):
    folder = tmp_path / "linked"
    (folder / "variables").mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(b"\x08\x01")
    secret = tmp_path / "secret.txt"
    secret.write_text("not a weight")
    (folder / "variables" / "variables.data-00000-of-00001").symlink_to(secret)
    with pytest.raises(Exception, match="code 1000004: .*links outside the folder"):
        load_model(folder)


def test_a_corrupt_file_through_the_cli_is_one_coded_line(tmp_path):
    path = tmp_path / "net.keras"
    path.write_bytes(b"PK\x03\x04 truncated")
    out = tmp_path / "out"
    done = run_cli("--model_file", str(path), "--output", str(out))
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "code 1000004" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists() or not any(out.iterdir())


def test_a_saved_model_folder_names_the_outputs_by_its_whole_name(tmp_path):
    folder = tmp_path / "my.model"
    folder.mkdir()
    (folder / "saved_model.pb").write_bytes(b"\x08\x01")
    assert output_paths(folder, tmp_path / "out", None).script.name == "my_model.py"
    assert output_paths(tmp_path / "net.keras", tmp_path / "out", None).script.name == "net.py"


def test_missing_tensorflow_is_a_coded_error(tmp_path, monkeypatch):
    monkeypatch.setattr(tf_saved, "tf_stack_available", lambda: False)
    path = tmp_path / "net.tflite"
    path.write_bytes(bytes(4) + b"TFL3" + bytes(32))
    with pytest.raises(Exception, match="code 1000009: .*TFLite model .*needs tensorflow"):
        load_model(path)


def test_importing_the_package_does_not_import_tensorflow():
    code = (
        "import sys, mindconverter, mindconverter.frontends.tf_saved, mindconverter.cli; "
        "print('tensorflow' in sys.modules, 'keras' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert done.stdout.split() == ["False", "False"], done.stderr


# --- hostile and unusual TensorFlow files (TensorFlow needed to make them) ---------------------


@pytest.fixture(scope="module")
def tf_modules():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tf = pytest.importorskip("tensorflow")
    pytest.importorskip("tf2onnx")
    return tf, pytest.importorskip("keras")


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_a_lambda_layer_is_refused_in_safe_mode(tf_modules, tmp_path, suffix):
    _, keras = tf_modules
    inp = keras.Input((3,))
    model = keras.Model(inp, keras.layers.Lambda(lambda t: t * 2.0)(inp))
    path = tmp_path / f"lambda{suffix}"
    model.save(path)
    with pytest.raises(Exception, match="code 1000013: Keras refuses .* safe mode"):
        load_model(path)


@pytest.mark.slow
def test_a_tflite_model_declaring_huge_tensors_is_refused_before_allocation(tf_modules, tmp_path):
    tf, _ = tf_modules
    double = tf.function(lambda x: x * 2.0)
    concrete = double.get_concrete_function(tf.TensorSpec((1, 12345), tf.float32))
    data = tf.lite.TFLiteConverter.from_concrete_functions([concrete]).convert()
    marker = np.int32(12345).tobytes()
    assert marker in data
    path = tmp_path / "huge.tflite"
    path.write_bytes(data.replace(marker, np.int32(2**31 - 1).tobytes()))
    with pytest.raises(Exception, match="code 1000011: .*too large to allocate"):
        load_model(path)


@pytest.mark.slow
def test_a_saved_model_that_writes_files_is_not_loaded(tf_modules, tmp_path):
    tf, _ = tf_modules
    target = tmp_path / "written_by_the_model.txt"

    class Writer(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def serve(self, x):
            tf.io.write_file(str(target), "written")
            return {"y": x * 2.0}

    module = Writer()
    tf.saved_model.save(
        module, str(tmp_path / "writer"), signatures={"serving_default": module.serve}
    )
    with pytest.raises(Exception, match="code 1000013: .*WriteFile.*not loaded"):
        load_model(tmp_path / "writer")
    assert not target.exists()


@pytest.mark.slow
def test_the_signature_is_serving_default_or_the_only_one(tf_modules, tmp_path):
    tf, _ = tf_modules

    class Two(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
        def double(self, x):
            return {"doubled": x * 2.0}

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
        def negate(self, x):
            return {"negated": -x}

    module = Two()
    both = {"double": module.double, "negate": module.negate}
    tf.saved_model.save(module, str(tmp_path / "two"), signatures=both)
    with pytest.raises(Exception, match="code 1000013: .*no 'serving_default'.*double, negate"):
        load_model(tmp_path / "two")
    tf.saved_model.save(module, str(tmp_path / "one"), signatures={"negate": module.negate})
    model = load_model(tmp_path / "one")
    assert [out.name for out in model.graph.output] == ["negated"]
    assert [inp.name for inp in model.graph.input] == ["x"]


# --- TensorFlow models, saved every way, converted through the CLI -----------------------------


def _build_models(keras):
    """name -> (model, per-input shape without batch); random weights and BN statistics."""
    layers = keras.layers
    keras.utils.set_random_seed(0)
    image = keras.Input((8, 8, 3), name="image")
    x = layers.Conv2D(4, 3, padding="same")(image)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("gelu")(x)  # Keras 3: exact GELU, tf2onnx leaves TF's Erfc
    x = layers.Flatten()(x)
    x = layers.Dense(6, activation="gelu")(x)
    cnn = keras.Model(image, layers.Dense(3)(x), name="cnn")
    bn = cnn.layers[2]
    bn.moving_mean.assign(np.random.default_rng(1).normal(size=4).astype("float32"))
    bn.moving_variance.assign(np.random.default_rng(2).uniform(0.5, 2, size=4).astype("float32"))

    tokens = keras.Input((5, 4), name="sequence")
    y = layers.LSTM(6, return_sequences=True)(tokens)
    rnn = keras.Model(tokens, layers.GRU(3)(y), name="rnn")

    left = keras.Input((5,), name="left")
    right = keras.Input((3,), name="right")
    joined = layers.Concatenate()([left, right])
    scores = layers.Dense(4, activation="tanh", name="scores")(joined)
    gate = layers.Dense(5, activation="sigmoid", name="gate")(right)
    two = keras.Model([left, right], [scores, layers.Multiply(name="gated")([left, gate])])
    return {"cnn": (cnn, [(8, 8, 3)]), "rnn": (rnn, [(5, 4)]), "two_inputs": (two, [(5,), (3,)])}


def _save_everywhere(tf, keras, model, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True)
    paths = {
        "saved_model": folder / "tf_saved",
        "export": folder / "exported",
        "keras": folder / "net.keras",
        "h5": folder / "net.h5",
        "tflite": folder / "net.tflite",
    }
    tf.saved_model.save(model, str(paths["saved_model"]))
    model.export(str(paths["export"]), verbose=False)
    model.save(paths["keras"])
    model.save(paths["h5"])
    paths["tflite"].write_bytes(_tflite_bytes(tf, model))
    return paths


def _tflite_bytes(tf, model) -> bytes:
    """The model as TFLite flatbuffer: with its dynamic batch when TFLite's builtins allow it, else
    (a GRU's tensor lists) traced at the first batch size, as TFLite users usually do."""
    try:
        return tf.lite.TFLiteConverter.from_keras_model(model).convert()
    except Exception:  # noqa: BLE001 - the MLIR converter's ConverterError
        pass
    specs = [tf.TensorSpec((BATCHES[0], *inp.shape[1:]), inp.dtype) for inp in model.inputs]
    function = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False))
    concrete = function.get_concrete_function(*specs)
    return tf.lite.TFLiteConverter.from_concrete_functions([concrete]).convert()


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory):
    """Each model saved in each format: {(model, format): (path, input shapes)}."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tf = pytest.importorskip("tensorflow")
    pytest.importorskip("tf2onnx")
    keras = pytest.importorskip("keras")
    root = tmp_path_factory.mktemp("tf_saved")
    table = {}
    for name, (model, shapes) in _build_models(keras).items():
        for kind, path in _save_everywhere(tf, keras, model, root / name).items():
            table[(name, kind)] = (path, shapes)
    return table


def _tensorflow_run(kind: str, path: Path, feeds: list[np.ndarray]) -> list[np.ndarray]:
    """The saved file run by TensorFlow itself, outputs in the converted network's order."""
    import keras
    import tensorflow as tf

    if kind == "tflite":
        interpreter = tf.lite.Interpreter(str(path))
        details = interpreter.get_input_details()
        for detail, feed in zip(details, feeds):
            interpreter.resize_tensor_input(detail["index"], feed.shape)
        interpreter.allocate_tensors()
        for detail, feed in zip(details, feeds):
            interpreter.set_tensor(detail["index"], feed)
        interpreter.invoke()
        return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
    if kind in ("keras", "h5"):
        model = keras.saving.load_model(path, compile=False, safe_mode=True)
        result = model(feeds if len(feeds) > 1 else feeds[0], training=False)
        return [np.asarray(r) for r in (result if isinstance(result, (list, tuple)) else [result])]
    signature = tf.saved_model.load(str(path)).signatures["serving_default"]
    names = list(signature.structured_input_signature[1])
    result = signature(**{name: tf.constant(f) for name, f in zip(sorted(names), feeds)})
    return [np.asarray(result[key]) for key in sorted(result)]


def _batches(kind: str, path: Path) -> tuple[int, ...]:
    """The batch sizes to check: both, unless the file fixes the batch (a TFLite RNN)."""
    if kind != "tflite":
        return BATCHES
    import tensorflow as tf

    details = tf.lite.Interpreter(str(path)).get_input_details()
    return BATCHES if details[0]["shape_signature"][0] == -1 else BATCHES[:1]


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    scale = max(float(np.max(np.abs(want))), 1e-6)
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def _feeds(shapes, batch: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((batch, *shape)).astype(np.float32) for shape in shapes]


@pytest.mark.slow
@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("model_name", ["cnn", "rnn", "two_inputs"])
def test_saved_model_converts_and_matches_tensorflow(saved_models, tmp_path, model_name, kind):
    path, shapes = saved_models[(model_name, kind)]
    # the CNN's GELUs are ONNX operators, so onnxruntime can check it too (--verify)
    script = _convert_and_compare(
        kind, path, shapes, tmp_path / "out", model_name, model_name == "cnn"
    )
    if model_name == "cnn":
        code = script.read_text()
        assert code.count("nn.GELU(approximate=False)") == 2 and "erfc" not in code, code


@pytest.mark.slow
def test_a_grouped_convolution_keras_compiles_with_xla_is_inlined(tf_modules, tmp_path):
    _, keras = tf_modules
    keras.utils.set_random_seed(3)
    inp = keras.Input((6, 6, 4), name="image")
    x = keras.layers.Conv2D(4, 3, groups=2, padding="same")(inp)
    model = keras.Model(inp, keras.layers.GlobalAveragePooling2D()(x))
    path = tmp_path / "grouped.keras"
    model.save(path)
    _convert_and_compare("keras", path, [(6, 6, 4)], tmp_path / "out", "grouped", verify=True)


def _convert_and_compare(kind, path, shapes, out, label, verify) -> Path:
    """Convert through the CLI at the first batch size and compare MindSpore with TensorFlow at
    each batch size the file allows; returns the script."""
    shape_args = [",".join(map(str, (BATCHES[0], *shape))) for shape in shapes]
    extra = ["--verify"] if verify else []
    done = run_cli("--model_file", str(path), "--shape", *shape_args, "--output", str(out), *extra)
    assert done.returncode == 0, done.stderr + done.stdout
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    script, checkpoint = out / f"{stem}.py", out / f"{stem}.ckpt"
    assert script.is_file() and checkpoint.is_file()
    assert not verify or "Verification MATCH" in done.stdout, done.stdout
    report = (out / f"report_of_{stem}.txt").read_text()
    assert "UnConvert" not in report, report
    errors = []
    for seed, batch in enumerate(_batches(kind, path)):
        feeds = _feeds(shapes, batch, seed)
        want = _tensorflow_run(kind, path, feeds)
        got = run_mindspore(script, checkpoint, feeds)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape, (g.shape, w.shape)
            errors.append(_relative_error(g, w))
    print(f"{label} {kind}: max relative error {max(errors):.2e}")
    assert max(errors) < TOLERANCE, errors
    return script
