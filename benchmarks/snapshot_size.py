"""Lines of snapshot per case: the default set now against an earlier revision's.

Records the given suites twice into temporary folders, once with the plugin
as it was at `--before` (default: a12a5de, before the compact form) and once
with this checkout, then counts the lines of every case's files:

    python benchmarks/snapshot_size.py                       # real models and the zoo
    python benchmarks/snapshot_size.py --suite fixtures/test_zoo.py --markdown

A case is a folder of snapshot files (a test, or a case of a test with several).
"before" counts every file the earlier plugin wrote (it wrote all artifacts by
default, or the default set of its day); "after" counts the default set only, leaving
out the opt-in artifacts a test may name (the catalogue's `opt_in`). A test that
names `artifacts=` is recorded with those names by both, so measure defaults on
tests without it (`benchmarks/test_size_defaults.py`; the zoo's tests name every
artifact):

    python benchmarks/snapshot_size.py --before house --cache /tmp/torchinductor_$USER \
        --suite fixtures/test_real_models.py --suite benchmarks/test_size_defaults.py Both recordings share one
Inductor cache (`--cache`), so only the first compiles cold.
Prints per case before/after lines and the ratio, then totals, the median and
the largest ratio, and lines per artifact.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITES = ("fixtures/test_real_models.py", "fixtures/test_zoo.py")


def record(code_root: Path, suites: list[str], out: Path, cache: str) -> None:
    """`pytest SUITES --update-snapshots` with the plugin package imported from `code_root`."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(code_root), str(REPO)]),
        "TORCHINDUCTOR_CACHE_DIR": cache,
    }
    paths = [str(REPO / suite) for suite in suites]
    command = [
        sys.executable,
        "-m",
        "pytest",
        *paths,
        "--rootdir",
        str(REPO),
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore",
        "--update-snapshots",
        "--torchcompile-snapshot-dir",
        str(out),
    ]
    # not from REPO: `python -m` puts the working folder first on sys.path, before PYTHONPATH
    done = subprocess.run(command, cwd=out.parent, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(
            f"recording with {code_root} failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )


def package_at(revision: str, into: Path) -> Path:
    """The plugin package as it was at `revision`, unpacked under `into`."""
    archive = subprocess.run(
        ["git", "archive", revision, "pytest_torchcompile"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def cases(root: Path, leave_out: tuple[str, ...] = ()) -> dict[str, dict[str, int]]:
    """case folder (relative) -> artifact name -> lines, without the artifacts in `leave_out`."""
    found: dict[str, dict[str, int]] = {}
    for path in sorted(root.rglob("*.txt")):
        case, artifact = str(path.parent.relative_to(root)), path.name.split(".")[0]
        if artifact not in leave_out:
            found.setdefault(case, {})[artifact] = len(path.read_text().splitlines())
    return found


def report(
    before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], markdown: bool
) -> list[str]:
    rows = []
    for case in sorted(before):
        old, new = sum(before[case].values()), sum(after.get(case, {}).values())
        rows.append((case, old, new, new / old))
    ratios = [r[3] for r in rows]
    total_old, total_new = sum(r[1] for r in rows), sum(r[2] for r in rows)
    sep = " | " if markdown else "  "
    lines = [sep.join(["case", "before", "after", "after/before"])]
    if markdown:
        lines = ["| " + lines[0] + " |", "|---|---:|---:|---:|"]
    for case, old, new, ratio in rows:
        cells = [case, str(old), str(new), f"{ratio:.0%}"]
        lines.append(("| " + " | ".join(cells) + " |") if markdown else sep.join(cells))
    lines.append("")
    lines.append(
        f"total: {total_old} -> {total_new} lines ({total_new / total_old:.1%}); per case median {statistics.median(ratios):.1%}, largest {max(ratios):.1%} ({max(rows, key=lambda r: r[3])[0]})"
    )
    per_old, per_new = Counter(), Counter()
    for case in before:
        per_old.update(before[case])
        per_new.update(after.get(case, {}))
    names = [name for name, _ in (per_old + per_new).most_common()]
    lines.append(
        "per artifact: "
        + ", ".join(f"{name} {per_old.get(name, 0)} -> {per_new.get(name, 0)}" for name in names)
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before", default="a12a5de", help="git revision whose plugin records the 'before' set"
    )
    parser.add_argument(
        "--suite",
        action="append",
        help="test file(s) to record (default: the real models and the zoo)",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print the per-case table as Markdown"
    )
    parser.add_argument("--cache", help="Inductor cache folder to use (default: a new one, cold)")
    args = parser.parse_args()
    suites = args.suite or list(SUITES)
    from pytest_torchcompile.snapshot.artifacts.catalogue import CATALOGUE

    opt_in = tuple(a.name for a in CATALOGUE if a.opt_in)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cache = args.cache or str(work / "inductor-cache")
        record(package_at(args.before, work / "before-code"), suites, work / "before", cache)
        record(REPO, suites, work / "after", cache)
        for suite in suites:
            folder = Path(suite).with_suffix("")
            print(f"\n{suite}: lines per case, {args.before} -> this checkout (default artifacts)")
            print(
                "\n".join(
                    report(
                        cases(work / "before" / folder),
                        cases(work / "after" / folder, opt_in),
                        args.markdown,
                    )
                )
            )


if __name__ == "__main__":
    main()
