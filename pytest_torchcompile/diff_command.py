"""`python -m pytest_torchcompile diff OLD NEW`: what changed between two snapshot sets.

Reads snapshot files only, never torch, so it runs where torch is not
installed (a CI job that only has the two sets, a laptop reviewing a torch
upgrade). The exit status is 0 whatever the verdicts (the report informs; the
snapshot tests are the gate), and 2 for a bad argument, with a message that
names it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .snapshot.compare.html import report_page
from .snapshot.compare.upgrade import (
    SnapshotSetError,
    compare_sets,
    render_markdown,
    render_text,
    to_json,
)

PROG = "python -m pytest_torchcompile"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="pytest-torchcompile tools that need no torch."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    diff = commands.add_parser(
        "diff",
        help="compare two snapshot sets (two torch versions, before/after a change)",
        description=(
            "Compare two snapshot sets case by case: the counters old -> new, what moved (ops, kernels fused or "
            "only renamed, guards by kind and source, graph breaks and recompile reasons), and a verdict per case: "
            "'behaviour changed', 'text only' or 'unchanged'. Exit status 0 whatever the verdicts; 2 on bad arguments."
        ),
    )
    diff.add_argument(
        "old",
        type=Path,
        metavar="OLD",
        help="the reference snapshot folder (e.g. snapshots/2.13/cpu)",
    )
    diff.add_argument(
        "new", type=Path, metavar="NEW", help="the snapshot folder to compare with it"
    )
    diff.add_argument(
        "--markdown",
        type=Path,
        metavar="PATH",
        help="also write the report as Markdown (appended when PATH is $GITHUB_STEP_SUMMARY)",
    )
    diff.add_argument("--json", type=Path, metavar="PATH", help="also write the report as JSON")
    diff.add_argument(
        "--html",
        type=Path,
        metavar="PATH",
        help="also write the report as one self-contained HTML page, with side-by-side diffs",
    )
    merge = commands.add_parser(
        "merge-baselines",
        help="fold the perf baselines of a split suite's runners into one folder",
        description=(
            "Each runner ran `pytest --torchcompile-perf-update-baseline --splits N --group K` on the same checkout; "
            "BASE is the checkout's baseline folder, each RUN a runner's folder after its update. Per case, "
            "the record a runner changed is taken; two runners that changed one case differently are an error."
        ),
    )
    merge.add_argument("base", type=Path, metavar="BASE", help="the baseline folder to update")
    merge.add_argument(
        "runs", type=Path, nargs="+", metavar="RUN", help="a runner's baseline folder"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "merge-baselines":
        return _merge_baselines(parser, args.base, args.runs)
    try:
        report = compare_sets(args.old, args.new)
    except SnapshotSetError as exc:
        parser.error(str(exc))
    sys.stdout.write(render_text(report))
    outputs = [(args.markdown, render_markdown), (args.json, to_json), (args.html, report_page)]
    for path, render in outputs:
        if path is None:
            continue
        mode = "a" if os.environ.get("GITHUB_STEP_SUMMARY") == str(path) else "w"
        try:
            with open(path, mode, encoding="utf-8") as handle:
                handle.write(render(report))
        except OSError as exc:
            parser.error(f"cannot write {path}: {exc.strerror}")
    return 0


def _merge_baselines(parser: argparse.ArgumentParser, base: Path, runs: list[Path]) -> int:
    from .perf.baseline import BaselineWriteError, merge_runs

    missing = [str(run) for run in runs if not run.is_dir()]
    if missing:
        parser.error(f"not a folder: {', '.join(missing)}")
    try:
        lines = merge_runs(base, runs)
    except BaselineWriteError as exc:
        parser.error(str(exc))
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0
