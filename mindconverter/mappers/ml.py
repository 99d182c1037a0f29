"""Classical machine-learning operators of the ``ai.onnx.ml`` domain on numeric tensors:
Binarizer, ArrayFeatureExtractor and TreeEnsemble (string-valued ones have no MindSpore form)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Call, Const, DType, Input, Lit, NodeContext, Temp, Unsupported
from .registry import mapper
from .syntax import ops

DOMAIN = "ai.onnx.ml"
# A forest becomes a (nodes x paths) matrix: keep it within a few hundred megabytes.
MAX_PATH_MATRIX = 50_000_000


@mapper("Binarizer", domain=DOMAIN)
def binarizer(ctx: NodeContext):
    """Binarizer -> 1 where x > threshold, else 0, in x's dtype."""
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    above = ops.gt(Input(0), Lit(float(ctx.attr("threshold", 0.0))))
    return ops.cast(above, DType(dtype.name))


@mapper("ArrayFeatureExtractor", domain=DOMAIN)
def array_feature_extractor(ctx: NodeContext):
    """ArrayFeatureExtractor -> gather along the last axis with the flattened indices; a vector
    gives one row (as onnxruntime does)."""
    shape = ctx.require_shape(0)
    indices = ops.reshape(Input(1), Lit((-1,)))
    picked = ops.gather(Input(0), indices, Lit(len(shape) - 1))
    if len(shape) == 1:
        return ops.unsqueeze(picked, dim=Lit(0))
    return picked


@dataclass
class _Forest:
    """The trees unrolled into root-to-leaf paths over the split nodes they test."""

    nodes: list[int]  # split node ids, in column order
    paths_true: np.ndarray  # (split nodes, paths): 1 where the path needs the test true
    paths_false: np.ndarray  # (split nodes, paths): 1 where it needs the test false
    lengths: np.ndarray  # tests on each path
    leaves: list[int]  # leaf id at the end of each path
    trees: int


def _forest(ctx: NodeContext) -> _Forest:
    true_ids, false_ids = ctx.attr("nodes_truenodeids"), ctx.attr("nodes_falsenodeids")
    true_leaf, false_leaf = ctx.attr("nodes_trueleafs"), ctx.attr("nodes_falseleafs")
    roots = list(ctx.attr("tree_roots"))
    columns: dict[int, int] = {}
    paths: list[tuple[list[tuple[int, bool]], int]] = []

    def walk(root: int) -> None:
        """Root-to-leaf paths, true branch first (a worklist: any depth, bounded work)."""
        pending: list[tuple] = [("visit", root, [], 0)]
        work = 0  # tests stored on paths and nodes visited: the path matrix is at least this
        while pending:
            kind, node, steps, depth = pending.pop()
            work += len(steps) + 1
            if work > MAX_PATH_MATRIX:
                raise Unsupported(f"TreeEnsemble paths need more than {MAX_PATH_MATRIX} tests")
            if kind == "leaf":
                paths.append((steps, node))
                continue
            if depth > len(true_ids):
                raise Unsupported("TreeEnsemble nodes form a cycle")
            if not 0 <= node < len(true_ids):
                raise Unsupported(f"TreeEnsemble names node {node}, which it does not have")
            columns.setdefault(node, len(columns))
            for branch, ids, leaf in ((False, false_ids, false_leaf), (True, true_ids, true_leaf)):
                step = [*steps, (node, branch)]
                kind = "leaf" if leaf[node] else "visit"
                pending.append((kind, int(ids[node]), step, depth + 1))

    children = [
        int(ids[n])
        for ids, leaf in ((true_ids, true_leaf), (false_ids, false_leaf))
        for n in range(len(ids))
        if not leaf[n]
    ]
    if len(set(children)) != len(children):  # a shared subtree: paths could double per level
        raise Unsupported("TreeEnsemble nodes do not form trees (a node has two parents)")
    for root in roots:
        degenerate = true_leaf[root] and false_leaf[root] and true_ids[root] == false_ids[root]
        if degenerate:
            paths.append(([], int(true_ids[root])))
        else:
            walk(int(root))
    if len(columns) * len(paths) > MAX_PATH_MATRIX:
        raise Unsupported(
            f"TreeEnsemble of {len(paths)} leaves over {len(columns)} splits is too large"
        )
    need_true = np.zeros((max(len(columns), 1), len(paths)), np.float32)
    need_false = np.zeros_like(need_true)
    for p, (steps, _) in enumerate(paths):
        for node, branch in steps:
            (need_true if branch else need_false)[columns[node], p] = 1.0
    lengths = np.array([len(steps) for steps, _ in paths], np.float32)
    return _Forest(list(columns), need_true, need_false, lengths, [p[1] for p in paths], len(roots))


def _members(ctx: NodeContext, forest: _Forest) -> np.ndarray:
    """Per split column, its set (NaN-padded) for BRANCH_MEMBER nodes, in node order."""
    modes = np.asarray(ctx.attr("nodes_modes")).reshape(-1)
    values = ctx.attr("membership_values")
    sets, current = [], []
    for value in np.asarray(values if values is not None else []).reshape(-1):
        if np.isnan(value):
            sets.append(current)
            current = []
        else:
            current.append(float(value))
    member_nodes = [i for i, mode in enumerate(modes) if mode == 6]
    if len(sets) != len(member_nodes):
        raise Unsupported("TreeEnsemble membership_values do not match its BRANCH_MEMBER nodes")
    by_node = dict(zip(member_nodes, sets))
    width = max([len(s) for s in sets] + [1])
    table = np.full((len(forest.nodes), width), np.nan)
    for column, node in enumerate(forest.nodes):
        for j, value in enumerate(by_node.get(node, [])):
            table[column, j] = value
    return table


def _split_tests(ctx: NodeContext, forest: _Forest, dtype: np.dtype):
    """(samples, split columns) booleans: each split's test on each sample."""
    modes = np.asarray(ctx.attr("nodes_modes")).reshape(-1)[forest.nodes]
    splits = np.asarray(ctx.attr("nodes_splits")).reshape(-1)[forest.nodes].astype(dtype)
    features = np.asarray(ctx.attr("nodes_featureids"), np.int64)[forest.nodes]
    values = Temp(ops.gather(Input(0), Const(features), Lit(1)), "split_values")
    names = {0: "ops.le", 1: "ops.lt", 2: "ops.ge", 3: "ops.gt", 4: "ops.eq", 5: "ops.ne"}
    tests = None
    for mode in sorted(set(int(m) for m in modes)):
        if mode == 6:
            table = Const(_members(ctx, forest).astype(dtype))
            hit = ops.eq(ops.unsqueeze(values, dim=Lit(2)), table)
            test = ops.any(hit, Lit(2))
        elif mode in names:
            test = Call(names[mode], [values, Const(splits)])
        else:
            raise Unsupported(f"TreeEnsemble node mode {mode}")
        if len(set(int(m) for m in modes)) > 1:
            test = ops.logical_and(test, Const(modes == mode))
        tests = test if tests is None else ops.logical_or(tests, test)
    missing = ctx.attr("nodes_missing_value_tracks_true")
    if missing is not None and np.any(np.asarray(missing)[forest.nodes]):
        tracks = Const(np.asarray(missing)[forest.nodes].astype(bool))
        nan = ops.logical_and(ops.isnan(values), tracks)
        tests = ops.logical_or(tests, nan)
    return tests


def _aggregate(ctx: NodeContext, forest: _Forest, reached, dtype: np.dtype):
    targets = int(ctx.attr("n_targets"))
    target_ids = np.asarray(ctx.attr("leaf_targetids"), np.int64)[forest.leaves]
    weights = np.asarray(ctx.attr("leaf_weights")).reshape(-1)[forest.leaves].astype(dtype)
    function = int(ctx.attr("aggregate_function", 1))
    if function in (0, 1):
        table = np.zeros((len(forest.leaves), targets), dtype)
        table[np.arange(len(forest.leaves)), target_ids] = weights
        if function == 0:
            table /= forest.trees
        return ops.matmul(ops.cast(reached, DType(dtype.name)), Const(table))
    if function not in (2, 3):
        raise Unsupported(f"TreeEnsemble aggregate_function {function}")
    fill = np.finfo(dtype).max if function == 2 else np.finfo(dtype).min
    table = np.full((len(forest.leaves), targets), fill, dtype)
    table[np.arange(len(forest.leaves)), target_ids] = weights
    picked = ops.where(ops.unsqueeze(reached, dim=Lit(2)), Const(table), Lit(float(fill)))
    return (ops.amin if function == 2 else ops.amax)(picked, Lit(1))


@mapper("TreeEnsemble", since=5, domain=DOMAIN)
def tree_ensemble(ctx: NodeContext):
    """TreeEnsemble -> every split tested at once, a path reached when all its tests agree
    (counted with two matmuls), leaf weights gathered per target and aggregated."""
    if ctx.input_rank(0) != 2:
        raise Unsupported("TreeEnsemble needs a 2-D input")
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    if dtype.kind != "f":
        raise Unsupported(f"TreeEnsemble on {dtype.name} input")
    transform = int(ctx.attr("post_transform", 0))
    if transform not in (0, 1, 2):
        raise Unsupported(f"TreeEnsemble post_transform {transform}")
    forest = _forest(ctx)
    if forest.nodes:
        tests = Temp(ops.cast(_split_tests(ctx, forest, dtype), DType("float32")), "tests")
        agree = ops.matmul(tests, Const(forest.paths_true)) + ops.matmul(
            Lit(1.0) - tests, Const(forest.paths_false)
        )
        reached = ops.eq(agree, Const(forest.lengths))
    else:  # every tree is a single leaf
        rows = ops.ones_like(ops.gather(Input(0), Lit(0), Lit(1)))
        reached = ops.gt(ops.unsqueeze(rows, dim=Lit(1)), Lit(0.0))
        reached = ops.tile(reached, Lit((1, len(forest.leaves))))
    scores = _aggregate(ctx, forest, reached, dtype)
    if transform == 1:
        return ops.softmax(scores, Lit(-1))
    if transform == 2:
        return ops.sigmoid(scores)
    return scores
