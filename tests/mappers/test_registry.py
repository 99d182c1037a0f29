"""The mapper registry: built-ins never overlap, versions resolve against ONNX schemas."""

from __future__ import annotations

import onnx
import pytest

from mindconverter.mappers.base import Call, Input
from mindconverter.mappers.registry import (
    MapperRegistry,
    MapperSpec,
    check_no_overlaps,
    default_registry,
    schema_version,
)


def _relu(ctx):
    return Call("ops.relu", [Input(0)])


def _schema_versions(op_type: str, domain: str, onnxruntime_ops: dict) -> set[int]:
    versions, opset = set(), onnx.defs.onnx_opset_version()
    while opset >= 1:
        try:
            version = onnx.defs.get_schema(op_type, opset, domain).since_version
        except onnx.defs.SchemaError:
            break
        versions.add(version)
        opset = version - 1
    return versions | onnxruntime_ops.get((domain, op_type), set())


def _onnxruntime_versions() -> dict[tuple[str, str], set[int]]:
    """(domain, operator) -> versions of onnxruntime's own operators (com.microsoft, and the few
    it defines in the ONNX domain, e.g. SimplifiedLayerNormalization)."""
    from onnxruntime.capi.onnxruntime_pybind11_state import get_all_operator_schema

    versions: dict[tuple[str, str], set[int]] = {}
    for schema in get_all_operator_schema():
        versions.setdefault((schema.domain, schema.name), set()).add(int(schema.since_version))
    return versions


def test_every_builtin_mapper_claims_a_real_operator_without_overlap():
    registry = default_registry()  # raises on an overlap
    specs = registry.specs()
    assert len({(s.domain, s.op_type) for s in specs}) >= 175
    onnxruntime_ops = _onnxruntime_versions()
    for spec in specs:
        if spec.domain == "ai.mindconverter":  # our own operators (tf2onnx leftovers)
            continue
        versions = _schema_versions(spec.op_type, spec.domain, onnxruntime_ops)
        if spec.fn.__module__.endswith(".tf_ops"):  # tf2onnx passes these TF ops through as is
            assert not versions, f"{spec.op_type} is an ONNX operator: map it outside tf_ops"
            continue
        assert versions, f"{spec.op_type} is not an ONNX operator"
        assert spec.since == 1 or spec.since in versions, (
            f"{spec.fn.__module__}.{spec.fn.__name__}: since={spec.since} is not a version of "
            f"{spec.op_type} ({sorted(versions)})"
        )


def test_overlapping_registrations_fail_loudly():
    specs = [MapperSpec("Relu", "", 1, 13, _relu), MapperSpec("Relu", "", 13, 10_000, _relu)]
    with pytest.raises(RuntimeError, match="both claim 'Relu' for opsets 13-13"):
        check_no_overlaps(specs)
    check_no_overlaps([MapperSpec("Relu", "", 1, 12, _relu), MapperSpec("Relu", "", 13, 20, _relu)])


def test_a_mapper_serves_every_opset_where_the_operator_did_not_change():
    registry = MapperRegistry()
    registry.add(MapperSpec("Softmax", "", 13, 13, _relu))  # Softmax last changed in opset 13
    assert schema_version("Softmax", 21) == 13
    assert registry.lookup("Softmax", 21) is _relu
    assert registry.lookup("Softmax", 12) is None


def test_a_model_newer_than_the_mappers_gets_a_clear_reason():
    registry = MapperRegistry()
    registry.add(MapperSpec("Reshape", "", 5, 13, _relu))
    assert registry.lookup("Reshape", 19) is None
    reason = registry.why_missing("Reshape", 19)
    assert "opset-19 definition" in reason and "newer than" in reason and "5-13" in reason
    assert registry.why_missing("Nope", 17) == "no mapper for 'Nope' at opset 17"


def test_user_registrations_override_builtins():
    registry = default_registry()

    @registry.register("Relu")
    def my_relu(ctx):
        return Call("ops.abs", [Input(0)])

    assert registry.lookup("Relu", 17) is my_relu
    assert default_registry().lookup("Relu", 17) is not my_relu
