"""Tensor types MindSpore cannot hold (2- and 4-bit integers, 8- and 4-bit floats), and the
narrowest MindSpore type that holds every one of their values exactly (their container)."""

from __future__ import annotations

import numpy as np

CONTAINERS = {
    "int2": np.int8,
    "int4": np.int8,
    "uint2": np.uint8,
    "uint4": np.uint8,
    "float4_e2m1fn": np.float16,
    "float8_e4m3fn": np.float16,
    "float8_e4m3fnuz": np.float16,
    "float8_e5m2": np.float16,
    "float8_e5m2fnuz": np.float16,
    "float8_e8m0fnu": np.float32,  # powers of two from 2**-127: beyond float16's range
}


def container_dtype(dtype) -> np.dtype | None:
    """The type to hold ``dtype``'s values in, or None when MindSpore has ``dtype`` itself."""
    wider = CONTAINERS.get(np.dtype(dtype).name)
    return None if wider is None else np.dtype(wider)


def held_dtype(dtype) -> np.dtype:
    """``dtype`` itself, or its container when MindSpore lacks it."""
    return container_dtype(dtype) or np.dtype(dtype)


def widened(array: np.ndarray) -> np.ndarray:
    """``array`` in a type MindSpore has (values unchanged)."""
    wider = container_dtype(np.asarray(array).dtype)
    return array if wider is None else np.asarray(array).astype(wider)


def is_floating(dtype) -> bool:
    """Whether ``dtype`` is a floating-point type, bfloat16 included (numpy's ``np.floating``
    does not count ml_dtypes' bfloat16)."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype.name == "bfloat16"
