"""How long is the 12-model torch 2.13 -> 2.15 upgrade report, and how much of it comes before the first case?

Unpacks the recorded sets (`tests/data/upgrade_models/`, re-recorded by
`record.py` there), runs `python -m pytest_torchcompile diff` on them with
the plugin as it was at `--before` (default dbaaad1, before ranking and
folding) and with this checkout, and prints for each: the report's lines,
the lines above the first case's details, the longest line, and the lines
cut with `...`; for this checkout also the size of the `--html` page.

    python benchmarks/upgrade_report_length.py [--before REV] [--show]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from snapshot_size import REPO, package_at

SETS = REPO / "tests" / "data" / "upgrade_models"


def unpack(work: Path) -> tuple[Path, Path]:
    roots = []
    for version in ("2.13", "2.15"):
        with tarfile.open(SETS / f"snapshots-{version}.tar.xz") as tar:
            tar.extractall(work / version, filter="data")
        roots.append(work / version / "snapshots")
    return roots[0], roots[1]


def report(code: Path, old: Path, new: Path, *extra: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(code)}
    command = [sys.executable, "-m", "pytest_torchcompile", "diff", str(old), str(new), *extra]
    return subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout


def figures(text: str) -> str:
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if re.match(r"^test_\w+: ", line)), len(lines))
    cut = sum(line.rstrip().endswith("...") for line in lines)
    return f"{len(lines)} lines, {first} above the first case, longest {max(map(len, lines))} chars, {cut} cut with '...'"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="dbaaad1")
    parser.add_argument("--show", action="store_true", help="print this checkout's report")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        old, new = unpack(work)
        before = package_at(args.before, work / "before")
        print(f"before ({args.before}): {figures(report(before, old, new))}")
        page = work / "page.html"
        now = report(REPO, old, new, "--html", str(page))
        print(f"this checkout:   {figures(now)}; --html page {page.stat().st_size / 1e6:.1f} MB")
        if args.show:
            print(now)


if __name__ == "__main__":
    main()
