"""Casts to the tensor types MindSpore cannot hold (float8, float4, float8_e8m0fnu, 2- and
4-bit integers), computed with ONNX's exact semantics and returned in the container type that
holds every value of the narrow type (see ``codegen/container_dtypes.py``)."""

from __future__ import annotations

import numpy as np

from .base import Cell, DType, Lit
from .syntax import ops

# Per float type: the NarrowFloat cell's settings (ONNX's table for Cast with ``saturate``).
FLOAT_FORMATS = {
    "float8_e4m3fn": {"mantissa_bits": 3, "min_exponent": -6, "max_value": 448.0},
    "float8_e4m3fnuz": {
        "mantissa_bits": 3,
        "min_exponent": -7,
        "max_value": 240.0,
        "unsigned_zero": True,
    },
    "float8_e5m2": {
        "mantissa_bits": 2,
        "min_exponent": -14,
        "max_value": 57344.0,
        "overflow": "inf",
    },
    "float8_e5m2fnuz": {
        "mantissa_bits": 2,
        "min_exponent": -15,
        "max_value": 57344.0,
        "unsigned_zero": True,
    },
    # float4 has neither inf nor NaN: it always saturates, and NaN becomes -0 (ONNX reference)
    "float4_e2m1fn": {"mantissa_bits": 1, "min_exponent": 0, "max_value": 6.0, "nan_value": -0.0},
}
# Per integer type: (lowest value, number of values); casts keep the low bits (two's complement).
INT_FORMATS = {"int4": (-8, 16), "uint4": (0, 16), "int2": (-2, 4), "uint2": (0, 4)}
NARROW_TYPES = {*FLOAT_FORMATS, *INT_FORMATS, "float8_e8m0fnu"}
CONTAINER_NAMES = {"int4": "int8", "int2": "int8", "uint4": "uint8", "uint2": "uint8"}


def is_narrow(dtype) -> bool:
    return dtype is not None and np.dtype(dtype).name in NARROW_TYPES


def cast_to_narrow(value, source: np.dtype, target: np.dtype, saturate: bool, round_mode: str):
    """``value`` (of ``source`` type, or its container) cast to the narrow ``target`` type."""
    name = np.dtype(target).name
    if name in FLOAT_FORMATS:
        settings = dict(FLOAT_FORMATS[name])
        if name != "float4_e2m1fn" and not saturate:
            settings["saturate"] = False
        if source.kind == "b":
            value = ops.cast(value, DType("float32"))
        return Cell(
            "NarrowFloat",
            kwargs={k: Lit(v) for k, v in settings.items()},
            args=[value],
            role="to_" + name,
        )
    if name == "float8_e8m0fnu":
        kwargs = {"round_mode": Lit(round_mode)} if round_mode != "up" else {}
        if not saturate:
            kwargs["saturate"] = Lit(False)
        return Cell("PowerOfTwo", kwargs=kwargs, args=[value], role="to_e8m0")
    low, count = INT_FORMATS[name]
    if source.kind == "f" or source.name in NARROW_TYPES:
        # beyond int64 (and inf, NaN) the reference's integer conversion keeps no low bits
        in_range = ops.lt(ops.abs(value), Lit(float(2**62)))
        value = ops.where(in_range, ops.trunc(value), Lit(0.0))
    whole = ops.cast(value, DType("int64"))
    wrapped = (whole if low == 0 else whole - Lit(low)) % Lit(count)
    if low:
        wrapped = wrapped + Lit(low)
    return ops.cast(wrapped, DType(CONTAINER_NAMES[name]))
