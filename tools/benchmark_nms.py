"""NonMaxSuppression over a box count known only at run time: time and peak memory of the
converted script, comparing the boxes a block at a time (what the script does in PyNative mode)
and all pairs at once (what it did before, and still does in GRAPH_MODE).

    python tools/benchmark_nms.py [--boxes 3000] [--repeat 2]

The model keeps the boxes over a score threshold (NonZero, as torchvision's detectors do), then
runs NonMaxSuppression with max_output_boxes_per_class = 2**63 - 1. The "all pairs" variant is
the same generated script with its NonMaxSuppressionInBlocks cell told it is not in PyNative
mode. Each run is a fresh process; the two variants alternate. Prints wall time and peak
resident memory per run.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUN = """
import os, resource, sys, time
import numpy as np
os.environ["GLOG_v"] = "3"
from mindconverter.check.network import run_mindspore
feeds = np.load(sys.argv[2])
started = time.perf_counter()
run_mindspore(sys.argv[1], sys.argv[1].replace(".py", ".ckpt"), [feeds["boxes"], feeds["scores"]])
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{seconds:.2f} s, peak {peak:.0f} MB")
"""


def nms_model(count: int) -> onnx.ModelProto:
    """Boxes over a score threshold, then NMS with an unbounded per-class limit."""
    from tests.helpers import make_model

    nodes = [
        helper.make_node("Greater", ["scores", "threshold"], ["over"]),
        helper.make_node("NonZero", ["over"], ["where"]),
        helper.make_node("Squeeze", ["where", "zero"], ["kept"]),
        helper.make_node("Gather", ["boxes", "kept"], ["kept_boxes"], axis=0),
        helper.make_node("Gather", ["scores", "kept"], ["kept_scores"], axis=0),
        helper.make_node("Unsqueeze", ["kept_boxes", "zero"], ["batched_boxes"]),
        helper.make_node("Unsqueeze", ["kept_scores", "zero_one"], ["batched_scores"]),
        helper.make_node(
            "NonMaxSuppression", ["batched_boxes", "batched_scores", "limit", "iou"], ["selected"]
        ),
    ]
    return make_model(
        nodes,
        [("boxes", np.float32, [count, 4]), ("scores", np.float32, [count])],
        [("selected", np.int64, None)],
        {
            "threshold": np.array(0.1, np.float32),
            "zero": np.array([0], np.int64),
            "zero_one": np.array([0, 1], np.int64),
            "limit": np.array([2**63 - 1], np.int64),
            "iou": np.array([0.5], np.float32),
        },
        opset=13,
    )


def all_pairs_variant(script: Path) -> Path:
    """The script with NonMaxSuppressionInBlocks comparing every pair at once."""
    text = script.read_text()
    patched, count = re.subn(
        r"self\.eager = ms\.get_context\(\"mode\"\) == ms\.PYNATIVE_MODE",
        "self.eager = False",
        text,
    )
    if not count:
        raise SystemExit("no NonMaxSuppressionInBlocks cell found in the script")
    target = script.with_name("all_pairs.py")
    target.write_text(patched)
    target.with_suffix(".ckpt").write_bytes(script.with_suffix(".ckpt").read_bytes())
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boxes", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    from mindconverter import convert

    work = Path(tempfile.mkdtemp(prefix="benchmark_nms_"))
    onnx.save(nms_model(args.boxes), work / "nms.onnx")
    result = convert(work / "nms.onnx", output=work / "out")
    rng = np.random.default_rng(0)
    corner = rng.random((args.boxes, 2)).astype(np.float32) * 500
    boxes = np.concatenate([corner, corner + 10 + 40 * rng.random((args.boxes, 2))], 1)
    np.savez(
        work / "feeds.npz",
        boxes=boxes.astype(np.float32),
        scores=rng.random(args.boxes, np.float32),
    )
    variants = {"a block at a time": result.script_path}
    variants["all pairs at once"] = all_pairs_variant(Path(result.script_path))
    print(f"NonMaxSuppression over up to {args.boxes} boxes kept at run time")
    for round_ in range(args.repeat):
        for label, script in variants.items():
            run = subprocess.run(
                [sys.executable, "-c", RUN, str(script), str(work / "feeds.npz")],
                capture_output=True,
                text=True,
            )
            lines = run.stdout.strip().splitlines()
            print(f"round {round_ + 1}  {label:26} {lines[-1] if lines else 'failed'}", flush=True)


if __name__ == "__main__":
    main()
