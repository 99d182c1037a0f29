"""Training parity: the source PyTorch model and the converted MindSpore network trained side by
side from the same weights on the same batches, compared step by step.

:func:`compare_training` runs both; :func:`torch_trajectory` and :func:`mindspore_trajectory`
record one framework's run (losses, gradients and weights after every step) and
:func:`compare_trajectories` finds, per step, the first parameter whose gradient or value
leaves the reference. A recorded :class:`Trajectory` saves to and loads from ``.npz``, so the
PyTorch half can be recorded once and compared without torch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import make_error

LOSSES = ("mse", "cross_entropy", "l1", "output")
OPTIMIZERS = ("sgd", "momentum", "adam")
MOMENTUM = 0.9


@dataclass
class Trajectory:
    """One framework's training run: ``losses[i]`` and ``grads[i]`` of step ``i``, ``params[0]``
    the starting weights and ``params[i + 1]`` the weights after step ``i``, by parameter name."""

    losses: list[float] = field(default_factory=list)
    grads: list[dict[str, np.ndarray]] = field(default_factory=list)
    params: list[dict[str, np.ndarray]] = field(default_factory=list)

    def save(self, path: str | Path) -> None:
        arrays = {"losses": np.asarray(self.losses, np.float64)}
        for kind, steps in (("grad", self.grads), ("param", self.params)):
            for step, values in enumerate(steps):
                for name, value in values.items():
                    arrays[f"{kind}/{step}/{name}"] = value
        np.savez_compressed(path, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        with np.load(path, allow_pickle=False) as data:
            result = cls(losses=[float(v) for v in data["losses"]])
            for key in data.files:
                kind, _, rest = key.partition("/")
                if kind not in ("grad", "param"):
                    continue
                step, _, name = rest.partition("/")
                steps = result.grads if kind == "grad" else result.params
                while len(steps) <= int(step):
                    steps.append({})
                steps[int(step)][name] = np.asarray(data[key])
        return result


@dataclass
class Divergence:
    """The first parameter that left the reference at one step."""

    what: str  # "gradient" or "value"
    name: str  # the MindSpore parameter name
    source_name: str  # its PyTorch name ("" when not known)
    max_abs_error: float
    script_line: str = ""  # "<script>:<line>: <code>" where the parameter's cell is created


@dataclass
class StepComparison:
    step: int
    reference_loss: float
    loss: float
    divergence: Divergence | None

    @property
    def ok(self) -> bool:
        return self.divergence is None and _close(self.loss, self.reference_loss, 1e-4, 1e-6)


@dataclass
class TrainingComparison:
    """Per step: both losses and the first parameter that diverged (None: none did)."""

    steps: list[StepComparison]
    start: Divergence | None = None  # a starting weight that already differs

    @property
    def ok(self) -> bool:
        return self.start is None and all(step.ok for step in self.steps)

    def text(self) -> str:
        lines = ["step  PyTorch loss    MindSpore loss  first divergence"]
        if self.start is not None:
            lines.append(f"start {'':15} {'':15} {_describe(self.start)}")
        for step in self.steps:
            found = _describe(step.divergence) if step.divergence else "-"
            lines.append(f"{step.step:<5} {step.reference_loss:<15.8g} {step.loss:<15.8g} {found}")
        lines.append("training matches" if self.ok else "training diverges")
        return "\n".join(lines)


def _describe(found: Divergence) -> str:
    source = f" (PyTorch {found.source_name})" if found.source_name else ""
    where = f", created at {found.script_line}" if found.script_line else ""
    return f"{found.what} of {found.name}{source} off by {found.max_abs_error:.3g}{where}"


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    return abs(a - b) <= atol + rtol * abs(b)


def _check_choices(loss_fn: str, optimizer: str, lr: float, steps: int) -> None:
    if loss_fn not in LOSSES:
        raise make_error("BAD_ARGUMENT", f"loss_fn must be one of {', '.join(LOSSES)}.")
    if optimizer not in OPTIMIZERS:
        raise make_error("BAD_ARGUMENT", f"optimizer must be one of {', '.join(OPTIMIZERS)}.")
    if not isinstance(lr, (int, float)) or not lr > 0:
        raise make_error("BAD_ARGUMENT", "lr must be a positive number.")
    if not isinstance(steps, int) or steps < 1:
        raise make_error("BAD_ARGUMENT", "steps must be a positive whole number.")


def _split(batch: Sequence[np.ndarray], loss_fn: str) -> tuple[list[np.ndarray], object]:
    """A batch's network inputs and its label (none for loss_fn="output")."""
    items = [np.asarray(item) for item in batch]
    if loss_fn == "output":
        return items, None
    if len(items) < 2:
        raise make_error("BAD_ARGUMENT", "each batch holds the inputs, then the label.")
    return items[:-1], items[-1]


def mindspore_trajectory(
    network,
    batches: Sequence[Sequence[np.ndarray]],
    loss_fn: str = "mse",
    optimizer: str = "sgd",
    lr: float = 0.01,
    steps: int | None = None,
) -> Trajectory:
    """Train ``network`` (a MindSpore Cell) for ``steps`` optimizer steps, one batch per step
    (cycling through ``batches``), recording losses, gradients and weights."""
    import mindspore as ms
    from mindspore import nn

    steps = len(batches) if steps is None else steps
    _check_choices(loss_fn, optimizer, lr, steps)
    params = network.trainable_params()
    if optimizer == "sgd":
        opt = nn.SGD(params, learning_rate=lr)
    elif optimizer == "momentum":
        opt = nn.Momentum(params, learning_rate=lr, momentum=MOMENTUM)
    else:
        opt = nn.Adam(params, learning_rate=lr)
    loss_cell = {
        "mse": nn.MSELoss(),
        "cross_entropy": nn.CrossEntropyLoss(),
        "l1": nn.L1Loss(),
        "output": None,
    }[loss_fn]

    def forward(label, *inputs):
        output = network(*inputs)
        output = output[0] if isinstance(output, (tuple, list)) else output
        return output.mean() if loss_cell is None else loss_cell(output, label)

    step_fn = ms.value_and_grad(forward, None, opt.parameters)
    result = Trajectory(params=[_values(params)])
    for step in range(steps):
        inputs, label = _split(batches[step % len(batches)], loss_fn)
        label = ms.Tensor(label) if label is not None else ms.Tensor(0.0, ms.float32)
        loss, grads = step_fn(label, *(ms.Tensor(x) for x in inputs))
        result.grads.append({p.name: g.asnumpy() for p, g in zip(params, grads)})
        opt(grads)
        result.losses.append(float(loss.asnumpy()))
        result.params.append(_values(params))
    return result


def _values(params) -> dict[str, np.ndarray]:
    return {p.name: p.asnumpy().copy() for p in params}


def torch_trajectory(
    torch_module,
    batches: Sequence[Sequence[np.ndarray]],
    loss_fn: str = "mse",
    optimizer: str = "sgd",
    lr: float = 0.01,
    steps: int | None = None,
) -> Trajectory:
    """The same training run in PyTorch (names are the module's ``named_parameters``)."""
    try:
        import torch
    except ImportError as error:
        raise make_error("TORCH_MISSING", f"compare_training needs PyTorch ({error}).") from None
    steps = len(batches) if steps is None else steps
    _check_choices(loss_fn, optimizer, lr, steps)
    named = [(n, p) for n, p in torch_module.named_parameters() if p.requires_grad]
    tensors = [p for _, p in named]
    if optimizer == "sgd":
        opt = torch.optim.SGD(tensors, lr=lr)
    elif optimizer == "momentum":
        opt = torch.optim.SGD(tensors, lr=lr, momentum=MOMENTUM)
    else:
        opt = torch.optim.Adam(tensors, lr=lr)
    loss_cell: Callable | None = {
        "mse": torch.nn.MSELoss(),
        "cross_entropy": torch.nn.CrossEntropyLoss(),
        "l1": torch.nn.L1Loss(),
        "output": None,
    }[loss_fn]

    def values():
        return {n: p.detach().cpu().numpy().copy() for n, p in named}

    result = Trajectory(params=[values()])
    for step in range(steps):
        inputs, label = _split(batches[step % len(batches)], loss_fn)
        opt.zero_grad()
        output = torch_module(*(torch.from_numpy(np.ascontiguousarray(x)) for x in inputs))
        output = output[0] if isinstance(output, (tuple, list)) else output
        if loss_cell is None:
            loss = output.mean()
        else:
            target = torch.from_numpy(np.ascontiguousarray(label))
            loss = loss_cell(output, target.long() if loss_fn == "cross_entropy" else target)
        loss.backward()
        result.grads.append(
            {
                n: (
                    p.grad.detach().cpu().numpy().copy()
                    if p.grad is not None
                    else np.zeros(p.shape)
                )
                for n, p in named
            }
        )
        opt.step()
        result.losses.append(float(loss.detach()))
        result.params.append(values())
    return result


def read_weight_map(path: str | Path) -> dict[str, tuple[str, str]]:
    """MindSpore name -> (source name, transform) from a ``weight_map_of_<stem>.json``."""
    data = json.loads(Path(path).read_text())
    rows = next(iter(data.values()), []) if isinstance(data, dict) else []
    return {
        row["converted_weight"]["name"]: (row["source_weight"]["name"], row.get("transform", ""))
        for row in rows
    }


def compare_trajectories(
    reference: Trajectory,
    trajectory: Trajectory,
    weight_map: dict[str, tuple[str, str]] | str | Path | None = None,
    script: str | Path | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> TrainingComparison:
    """Step by step, the losses and the first MindSpore parameter whose gradient (then value)
    differs from the reference's (PyTorch) one; names are matched through ``weight_map`` (the
    converter's weight map, or its path), else taken as equal."""
    names = read_weight_map(weight_map) if isinstance(weight_map, (str, Path)) else weight_map
    names = names or {}
    lines = Path(script).read_text().splitlines() if script is not None else []
    label = Path(script).name if script is not None else ""

    def first_off(what, ours, theirs):
        for name, value in ours.items():
            source, transform = names.get(name, (name, ""))
            if source not in theirs:
                continue
            expected = _as_converted(theirs[source], transform, value.shape)
            error = float(np.max(np.abs(value - expected))) if value.size else 0.0
            if expected.shape != value.shape or not np.allclose(value, expected, rtol, atol):
                where = _creation_line(name, lines, label)
                return Divergence(what, name, source if source != name else "", error, where)
        return None

    start = first_off("value", trajectory.params[0], reference.params[0])
    steps = []
    for step in range(min(len(reference.losses), len(trajectory.losses))):
        found = first_off("gradient", trajectory.grads[step], reference.grads[step])
        found = found or first_off("value", trajectory.params[step + 1], reference.params[step + 1])
        steps.append(StepComparison(step, reference.losses[step], trajectory.losses[step], found))
    return TrainingComparison(steps, start)


def _as_converted(value: np.ndarray, transform: str, shape: tuple[int, ...]) -> np.ndarray:
    """A PyTorch weight in the converted parameter's layout (the weight map's transform)."""
    value = np.asarray(value, np.float64)
    if "transpose" in transform and value.ndim == 2:
        value = value.T
    if value.shape != shape and value.size == int(np.prod(shape)):
        value = value.reshape(shape)
    return value


def _creation_line(name: str, lines: list[str], label: str) -> str:
    """``<script>:<line>: <code>`` creating the cell (or Parameter) that holds ``name``."""
    parts = name.split(".")[:-1]
    for part in reversed(parts):  # the innermost attribute with a name (not a list index)
        if part.isdigit():
            continue
        pattern = re.compile(rf"^\s*self\.{re.escape(part)}\s*=")
        for number, line in enumerate(lines, 1):
            if pattern.match(line):
                return f"{label}:{number}: {line.strip()}"
    return ""


def compare_training(
    torch_module,
    network,
    batches: Sequence[Sequence[np.ndarray]],
    loss_fn: str = "mse",
    optimizer: str = "sgd",
    lr: float = 0.01,
    steps: int | None = None,
    weight_map: dict[str, tuple[str, str]] | str | Path | None = None,
    script: str | Path | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> TrainingComparison:
    """Train the PyTorch ``torch_module`` and the converted MindSpore ``network`` (both holding
    the same starting weights) side by side for ``steps`` optimizer steps on ``batches`` (each a
    sequence of numpy arrays: the inputs, then the label unless ``loss_fn="output"``) and compare
    them per step (see :class:`TrainingComparison`; ``.text()`` is a table). ``weight_map`` is
    the converter's ``weight_map_of_<stem>.json`` (maps parameter names); ``script`` the
    generated ``<stem>.py`` (points at the line creating a diverging parameter's cell). Put both
    models in the same mode first (``eval()`` / ``set_train(False)`` for no dropout)."""
    reference = torch_trajectory(torch_module, batches, loss_fn, optimizer, lr, steps)
    ours = mindspore_trajectory(network, batches, loss_fn, optimizer, lr, steps)
    return compare_trajectories(reference, ours, weight_map, script, rtol, atol)
