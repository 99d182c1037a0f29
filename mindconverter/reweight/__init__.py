"""New weights for a converted script: a newer state dict or ONNX export of the same source
model becomes a checkpoint through the weight map's recorded names and transforms."""

from .reconvert import ReweightResult, new_weight, read_weight_map, reconvert_weights, torch_name

__all__ = ["ReweightResult", "new_weight", "read_weight_map", "reconvert_weights", "torch_name"]
