"""The model-zoo architectures shipped inside the onnx wheel, with random weights.

The ``light_*`` models under ``onnx/backend/test/data/light`` keep the real architectures but
build every weight with ``ConstantOfShape`` (a constant fill), so their outputs say little. We
replace each such weight by seeded random values of the same shape (variances kept positive).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

LIGHT_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(p.stem for p in LIGHT_DIR.glob("light_*.onnx"))


def randomized_light_model(name: str, seed: int = 0) -> onnx.ModelProto:
    """The light model ``name`` with every ConstantOfShape weight replaced by random values."""
    model = onnx.load(str(LIGHT_DIR / f"{name}.onnx"))
    rng = np.random.default_rng(seed)
    inits = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    variance_inputs = {n.input[4] for n in model.graph.node if n.op_type == "BatchNormalization"}
    kept, new_inits = [], []
    for node in model.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            shape = tuple(int(d) for d in inits[node.input[0]])
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else max(shape[0], 1)
            values = rng.uniform(-1, 1, shape) * np.sqrt(3.0 / fan_in)
            if node.output[0] in variance_inputs:
                values = np.abs(values) + 0.5
            new_inits.append(numpy_helper.from_array(values.astype(np.float32), node.output[0]))
        else:
            kept.append(node)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    model.graph.initializer.extend(new_inits)
    if model.ir_version < 4:  # older IR lists every initializer among the graph inputs
        model.graph.input.extend(
            onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in new_inits
        )
    return model
