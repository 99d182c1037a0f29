"""Run the ONNX backend node test suite through mindconverter and regenerate docs/operators.md.

    python tools/run_node_suite.py                  # run every in-scope test, write the results + docs
    python tools/run_node_suite.py -k resize conv   # only tests whose name contains one of the words
    python tools/run_node_suite.py --from-results   # rebuild docs/operators.md from the saved results
    python tools/run_node_suite.py --check          # run, write nothing; exit 1 on an undocumented
                                                    # failure, a stale known failure or stale docs

    python tools/run_node_suite.py --sample 500 --seed 1   # a reproducible random sample (prints only)
    python tools/run_node_suite.py --op Resize LSTM         # only tests using these operators

Each test runs as a user runs it (``tools/node_suite_cli.py``): ``python -m mindconverter
--model_file model.onnx --shape NAME=D,D ...`` in a subprocess, every input named and shaped as the
test data has it; then the generated script and checkpoint load in a fresh MindSpore process (one
per ``--batch`` cases), run on the test's inputs and are compared with its expected outputs.
``--workers`` CLI runs and check processes go at once; a case that takes longer than ``--timeout``
seconds or kills its process is recorded as ``timeout`` / ``crash``. Writes
``docs/node_suite_results.json`` (outcome and reason per test) and ``docs/operators.md`` (every
operator: opset range, MindSpore API, suite tests passed, status, and the reason of each failing
test, from ``docs/node_suite_known_failures.json``).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools import node_suite as suite  # noqa: E402 - after the sys.path set-up above
from tools import node_suite_cli as cli  # noqa: E402

RESULTS_FILE = ROOT / "docs" / "node_suite_results.json"
OPERATORS_FILE = ROOT / "docs" / "operators.md"


# -- running ---------------------------------------------------------------------------------


def run_tests(
    tests: list[suite.NodeTest],
    data_dir: Path,
    workers: int = 2,
    timeout: float = 120.0,
    progress: bool = True,
    batch_size: int = 40,
) -> dict[str, suite.Outcome]:
    """Run ``tests`` through the CLI (``workers`` conversions at a time), then check the converted
    ones in fresh processes of ``batch_size`` cases each; returns outcome by test name."""
    outcomes: dict[str, suite.Outcome] = {}
    total = len(tests)

    def record(case: dict, outcome: suite.Outcome) -> None:
        outcomes[outcome.name] = outcome
        if progress:
            mark = "." if outcome.passed else outcome.status[0].upper()
            print(
                mark, end="" if len(outcomes) % 100 else f" {len(outcomes)}/{total}\n", flush=True
            )

    def convert(test: suite.NodeTest) -> dict | None:
        case = {"name": test.name}
        try:
            case = cli.prepare_case(test, data_dir, work_root / test.name)
            failure = cli.convert_case(case, timeout)
        except Exception as exc:
            failure = suite.Outcome(test.name, "conversion_error", f"harness error: {exc!r}")
        if failure is not None:
            record(case, failure)
            return None
        return case

    work_root = Path(tempfile.mkdtemp(prefix="node_suite_cli_"))
    try:
        with ThreadPoolExecutor(max(1, workers)) as pool:
            converted = [case for case in pool.map(convert, tests) if case is not None]
        cli.check_cases(converted, work_root, batch_size, max(1, workers), timeout, record)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    if progress:
        print(flush=True)
    return outcomes


def select_tests(
    tests: list[suite.NodeTest], words=None, ops=None, sample=None, seed=0
) -> list[suite.NodeTest]:
    """Tests whose name has one of ``words`` and whose operators include one of ``ops``; then a
    random ``sample`` of them (reproducible by ``seed``)."""
    chosen = [t for t in tests if not words or any(w.lower() in t.name.lower() for w in words)]
    if ops:
        wanted = {op.lower() for op in ops}
        chosen = [t for t in chosen if wanted & {op.lower() for op in t.op_types}]
    if sample is not None and sample < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, sample), key=lambda t: t.name)
    return chosen


# -- results ---------------------------------------------------------------------------------


def results_document(tests: list[suite.NodeTest], outcomes: dict[str, suite.Outcome]) -> dict:
    import mindspore
    import onnx

    passed = sum(1 for t in tests if outcomes[t.name].passed)
    entries = {}
    for test in tests:
        outcome = outcomes[test.name]
        entry = {"status": outcome.status, "primary_op": test.primary_op, "ops": test.op_types}
        if outcome.reason:
            entry["reason"] = outcome.reason
        if outcome.ops and not outcome.passed:
            entry["blamed_ops"] = outcome.ops
        if outcome.frozen:
            entry["frozen_inputs"] = outcome.frozen
        entries[test.name] = entry
    return {
        "onnx": onnx.__version__,
        "mindspore": mindspore.__version__,
        "in_scope": len(tests),
        "passed": passed,
        "pass_rate": round(100.0 * passed / max(len(tests), 1), 2),
        "by_status": dict(Counter(outcomes[t.name].status for t in tests).most_common()),
        "tests": entries,
    }


def merge_results(
    previous: dict | None, tests: list[suite.NodeTest], outcomes: dict[str, suite.Outcome]
) -> dict:
    """Results for all in-scope tests: this run's outcomes over the previous file's (for ``-k``)."""
    merged = {}
    old = (previous or {}).get("tests", {})
    for test in tests:
        if test.name in outcomes:
            merged[test.name] = outcomes[test.name]
        elif test.name in old:
            entry = old[test.name]
            merged[test.name] = suite.Outcome(
                test.name,
                entry["status"],
                entry.get("reason", ""),
                entry.get("blamed_ops", []),
                entry.get("frozen_inputs", []),
            )
        else:
            merged[test.name] = suite.Outcome(test.name, "not_run", "not run yet")
    return merged


# -- docs/operators.md -----------------------------------------------------------------------


def _ranges(specs) -> str:
    spans = sorted({(spec.since, spec.until) for spec in specs})
    merged: list[list[int]] = []
    for since, until in spans:
        if merged and since <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], until)
        else:
            merged.append([since, until])
    return ", ".join(
        f"{a}+" if b >= 10_000 else (f"{a}" if a == b else f"{a}-{b}") for a, b in merged
    )


def _api(specs) -> str:
    lines = []
    for spec in sorted(specs, key=lambda s: s.since):
        summary = (spec.fn.__doc__ or "").strip().split("\n\n")[0]  # the first paragraph
        line = " ".join(part.strip() for part in summary.splitlines())
        if "->" in line:
            line = line.split("->", 1)[1].strip()
        line = line.rstrip(".").replace("|", "\\|")
        if line and line not in lines:
            lines.append(line)
    return "; ".join(lines) or "?"


def operator_rows(
    registry,
    tests: list[suite.NodeTest],
    outcomes: dict[str, suite.Outcome],
    known: dict[str, suite.KnownFailure],
) -> list[dict]:
    """One row per operator: registry information, suite tally and status."""
    specs = defaultdict(list)
    for spec in registry.specs():
        key = spec.op_type if spec.domain in ("", "ai.onnx") else f"{spec.domain}:{spec.op_type}"
        specs[key].append(spec)
    direct = defaultdict(list)  # tests whose operator under test is op
    using = defaultdict(list)  # tests whose graph contains op
    for test in tests:
        if test.primary_op and test.primary_op in test.op_types:  # not the _expanded bodies
            direct[test.primary_op].append(test)
        for op in test.op_types:
            using[op].append(test)
    rows = []
    for op in sorted(set(specs) | set(direct) | set(using), key=str.lower):
        mine = direct.get(op, [])
        passed = sum(1 for t in mine if outcomes[t.name].passed)
        against, undocumented = [], []
        for test in using.get(op, []):
            outcome = outcomes[test.name]
            if outcome.passed:
                continue
            entry = known.get(test.name)
            entry = entry if entry and entry.explains(outcome) else None
            blamed = entry.ops if entry and entry.ops else outcome.ops or test.op_types
            if op not in blamed:
                continue
            against.append(test.name)
            if entry is None:
                undocumented.append(test.name)
        if op not in specs:
            status = "not supported (no mapper)"
        elif undocumented:
            status = f"not supported ({len(undocumented)} undocumented failing test(s))"
        elif mine and passed == 0:
            status = "not supported (every suite test fails, reasons below)"
        elif against:
            status = f"supported, {len(against)} documented exception(s)"
        elif not mine and not using.get(op):
            status = "supported (no suite test)"
        else:
            status = "supported"
        rows.append(
            {
                "op": op,
                "opsets": _ranges(specs[op]) if op in specs else "",
                "api": _api(specs[op]) if op in specs else "",
                "passed": passed,
                "total": len(mine),
                "used_in": len({t.name for t in using.get(op, [])} - {t.name for t in mine}),
                "failing": against,
                "status": status,
                "claimed": status.startswith("supported"),
            }
        )
    return rows


def render_operators(
    rows: list[dict],
    tests: list[suite.NodeTest],
    outcomes: dict[str, suite.Outcome],
    known: dict[str, suite.KnownFailure],
    results: dict,
    excluded: list[suite.NodeTest] = (),
) -> str:
    claimed = [row for row in rows if row["claimed"]]
    lines = [
        "# Supported ONNX operators",
        "",
        "<!-- Generated by `python tools/run_node_suite.py` from the mapper registry and the ONNX",
        "     backend node test suite run; do not edit by hand. -->",
        "",
        f"Measured with onnx {results['onnx']} node tests and MindSpore {results['mindspore']} (CPU):",
        (
            f"**{results['passed']} of {results['in_scope']} in-scope tests pass ({results['pass_rate']}%)**; "
            f"**{len(claimed)} operator types supported**."
        ),
        "",
        "How a test runs: as a user runs it. `python -m mindconverter --model_file model.onnx --shape",
        "NAME=D,D ...` converts the test's model in a subprocess, every input named and shaped as the",
        "test data has it; the generated script and checkpoint are loaded (`load_checkpoint` +",
        "`load_param_into_net`) in a fresh MindSpore process (PyNative), run on the suite's inputs,",
        "and each output must match the suite's reference: same shape and dtype, integers and",
        (
            f"booleans exactly, floats within rtol={suite.DEFAULT_RTOL:g}, atol={suite.DEFAULT_ATOL:g} "
            "(or the test's own looser tolerance)."
        ),
        "Out of scope: strings, random values, sequence/optional values at the graph's boundary and the",
        "Gradient operator (`tools.node_suite.exclusion_reason`; each group is argued at the end of this",
        "page). Small graph inputs that an exporter would store as constants (shapes, axes, pads...)",
        "are frozen into initializers in the model file before the CLI runs",
        "(`tools.node_suite.freeze_parameter_inputs` documents the rule); layer weights stay graph",
        "inputs, as the suite gives them (run-time weights).",
        "",
        "Status: *supported* = a mapper exists and every suite test using the operator passes;",
        "*supported, N documented exception(s)* = some tests fail, each for the documented reason listed",
        "below; *not supported* otherwise. *Tests* counts the tests of the operator itself (passed/total);",
        "*also in* counts other tests (mostly `_expanded` function bodies) that use it.",
        "",
        "| Operator | Opsets | MindSpore API | Tests | Also in | Status |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        tally = f"{row['passed']}/{row['total']}" if row["total"] else "-"
        lines.append(
            f"| {row['op']} | {row['opsets'] or '-'} | {row['api'] or '-'} | {tally} | "
            f"{row['used_in'] or '-'} | {row['status']} |"
        )
    failing = [t for t in tests if not outcomes[t.name].passed]
    lines += [
        "",
        f"## Failing tests ({len(failing)})",
        "",
        "Documented reason from `docs/node_suite_known_failures.json`; *(undocumented)* marks a",
        "failure nobody has explained yet, with the harness's classification.",
        "",
        "| Test | Operator | Outcome | Reason |",
        "|---|---|---|---|",
    ]
    for test in failing:
        outcome = outcomes[test.name]
        entry = known.get(test.name)
        entry = entry if entry and entry.explains(outcome) else None
        reason = entry.reason if entry else f"*(undocumented)* {outcome.reason}"
        reason = reason.replace("|", "\\|")
        lines.append(f"| {test.name} | {test.primary_op or '-'} | {outcome.status} | {reason} |")
    return "\n".join(lines + out_of_scope_lines(excluded)) + "\n"


def out_of_scope_lines(excluded: list[suite.NodeTest]) -> list[str]:
    """The excluded tests, grouped by the argument for leaving them out."""
    groups: dict[str, list[str]] = {}
    for test in excluded:
        groups.setdefault(suite.out_of_scope_argument(test.excluded), []).append(test.name)
    lines = ["", f"## Out of scope ({len(excluded)} tests)", ""]
    for why, names in groups.items():
        lines += [f"**{len(names)} tests.** {why}", "", ", ".join(sorted(names)), ""]
    return lines[:-1]


def summary_lines(tests, outcomes, rows, known) -> list[str]:
    passed = sum(1 for t in tests if outcomes[t.name].passed)
    lines = [
        f"in scope: {len(tests)}  passed: {passed}  ({100.0 * passed / max(len(tests), 1):.1f}%)",
        "by outcome: "
        + ", ".join(
            f"{k} {v}" for k, v in Counter(outcomes[t.name].status for t in tests).most_common()
        ),
        f"operators claimed: {sum(1 for r in rows if r['claimed'])}",
    ]
    failing_ops = Counter()
    for test in tests:
        if not outcomes[test.name].passed:
            failing_ops[test.primary_op or "(multi-op)"] += 1
    lines.append(
        "most failing operators: " + ", ".join(f"{op} {n}" for op, n in failing_ops.most_common(25))
    )
    undocumented = [
        t.name
        for t in tests
        if not outcomes[t.name].passed
        and not (t.name in known and known[t.name].explains(outcomes[t.name]))
    ]
    stale = [t.name for t in tests if outcomes[t.name].passed and t.name in known]
    lines.append(
        f"undocumented failures: {len(undocumented)}; known failures that now pass: {len(stale)}"
    )
    return lines


def record_unconverted(path: Path, tests, outcomes, known) -> dict[str, suite.KnownFailure]:
    """Document unconverted-operator failures with the converter's own reason."""
    raw = json.loads(path.read_text()) if path.is_file() else {}
    added = 0
    for test in tests:
        outcome = outcomes[test.name]
        if outcome.status == "unconverted" and not (
            test.name in known and known[test.name].explains(outcome)
        ):
            raw[test.name] = {
                "reason": f"not converted: {outcome.reason}",
                "ops": outcome.ops,
                "status": "unconverted",
            }
            added += 1
    raw = dict(sorted(raw.items()))
    path.write_text(json.dumps(raw, indent=1) + "\n")
    print(f"recorded {added} unconverted failure(s) in {path}")
    return suite.load_known_failures(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "-k", nargs="+", metavar="WORD", help="only tests whose name contains a word"
    )
    parser.add_argument("--op", nargs="+", metavar="OP", help="only tests using one of these ops")
    parser.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="a random sample of N tests (prints, writes no docs)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    parser.add_argument(
        "--save", type=Path, metavar="FILE", help="write this run's outcomes to FILE (JSON)"
    )
    parser.add_argument("--workers", type=int, default=2, help="CLI runs / check processes at once")
    parser.add_argument(
        "--batch", type=int, default=40, help="cases per fresh check process (default 40)"
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds per test (default 120)"
    )
    parser.add_argument(
        "--data-dir", type=Path, help="node test data folder (default: a cache folder)"
    )
    parser.add_argument(
        "--from-results", action="store_true", help="do not run; rebuild docs from the results file"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 on undocumented failures, stale known failures or stale docs",
    )
    parser.add_argument("--known-failures", type=Path, default=suite.KNOWN_FAILURES_FILE)
    parser.add_argument(
        "--record-unconverted",
        action="store_true",
        help="add every undocumented 'unconverted' failure to the known failures, with the "
        "reason the mapper (or the missing mapper) gave; other failures need a human reason",
    )
    args = parser.parse_args(argv)

    from mindconverter.mappers.registry import default_registry

    data_dir = suite.ensure_test_data(args.data_dir)
    tests = suite.in_scope_tests(data_dir)
    known = suite.load_known_failures(args.known_failures)
    previous = json.loads(RESULTS_FILE.read_text()) if RESULTS_FILE.is_file() else None
    started = time.perf_counter()
    if args.from_results:
        if previous is None:
            parser.error(f"{RESULTS_FILE} does not exist; run without --from-results first")
        outcomes = {}
    else:
        selected = select_tests(tests, args.k, args.op, args.sample, args.seed)
        print(f"running {len(selected)} node tests through the CLI", flush=True)
        outcomes = run_tests(selected, data_dir, args.workers, args.timeout, batch_size=args.batch)
    elapsed = time.perf_counter() - started
    if args.save:
        saved = {name: asdict(outcome) for name, outcome in sorted(outcomes.items())}
        args.save.write_text(json.dumps(saved, indent=1) + "\n")
    if args.sample is not None:
        for line in summary_lines(selected, outcomes, [], known):
            print(line)
        print(f"runtime: {elapsed:.0f} s (a sample: docs not written)")
        return 0
    outcomes = merge_results(previous, tests, outcomes)
    if args.record_unconverted and not args.check:
        known = record_unconverted(args.known_failures, tests, outcomes, known)
    results = results_document(tests, outcomes)
    rows = operator_rows(default_registry(), tests, outcomes, known)
    excluded = [test for test in suite.load_manifest(data_dir) if test.excluded]
    markdown = render_operators(rows, tests, outcomes, known, results, excluded)
    results_text = json.dumps(results, indent=1, sort_keys=False) + "\n"

    for line in summary_lines(tests, outcomes, rows, known):
        print(line)
    print(f"runtime: {elapsed:.0f} s")
    if args.check:
        problems = []
        undocumented = [
            t.name
            for t in tests
            if not outcomes[t.name].passed
            and not (t.name in known and known[t.name].explains(outcomes[t.name]))
        ]
        stale = [t.name for t in tests if outcomes[t.name].passed and t.name in known]
        if undocumented:
            problems.append(f"undocumented failures: {', '.join(undocumented[:20])}")
        if stale:
            problems.append(f"known failures that pass now (remove them): {', '.join(stale[:20])}")
        if not OPERATORS_FILE.is_file() or OPERATORS_FILE.read_text() != markdown:
            problems.append(f"{OPERATORS_FILE.relative_to(ROOT)} is out of date")
        for problem in problems:
            print("CHECK FAILED: " + problem)
        return 1 if problems else 0
    RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_FILE.write_text(results_text)
    OPERATORS_FILE.write_text(markdown)
    print(f"wrote {RESULTS_FILE.relative_to(ROOT)} and {OPERATORS_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
