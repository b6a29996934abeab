"""False alarms of the library suites' committed snapshots: hash seeds, test orders, what ran first.

Each suite (`fixtures/test_other_libraries.py`, `fixtures/test_real_models.py`) is copied with
its committed snapshot set to another folder, as `tests/stability/committed.py`
does, and re-run there WITHOUT `--update-snapshots`, once per run below, each with a hash seed
of its own (`PYTHONHASHSEED` 0 to 5; 0 is hash randomisation off):

| run | seed | order | first in the process |
|---|---|---|---|
| cold | 1 | the file's | nothing (an empty Inductor cache; the others reuse what it filled) |
| reversed | 0 | reversed | nothing |
| shuffled | 2 | shuffled | nothing |
| eager+shuffled | 3 | shuffled otherwise | every model of both suites called eagerly (`EAGER_FIRST`) |
| eager+reversed | 4 | reversed | the same |
| alone | 5 | one process per test (`-k`) | nothing |

A test that fails in any run is a false alarm (the models and the code did not change), and
every run must leave the snapshot files as they were (nothing written). The table has a row
per test and a column per run; below it, each failure's first line. Exit status 1 when
anything failed or a file changed.

    python benchmarks/library_stability.py                       # both suites, this Python
    python benchmarks/library_stability.py --suites other_libraries --runs cold,alone
    python benchmarks/library_stability.py --python ~/.cache/pytest-torchcompile/venv-torch-2.13-py3.13/bin/python

The last form runs the suites on Python 3.13 against their set for 3.12+ (as CI's py3.13 leg):
`--python` names the interpreter of the pytest runs, `--pythonpath` their PYTHONPATH (this
checkout first, so that its code shadows the copy installed there).
Timing is printed per run (wall seconds, on whatever load the machine has).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import tree_digest  # noqa: E402
from tests.stability.committed import (  # noqa: E402
    PROJECT_FOLDER,
    Suite,
    committed_set,
    copy_suite,
)

SUITES = {
    "other_libraries": Suite("test_other_libraries.py", 15, ""),
    "real_models": Suite("test_real_models.py", 10, ""),
}


@dataclass(frozen=True)
class Run:
    """One re-run: its hash seed, the variations' switches, and whether each test runs alone."""

    name: str
    seed: str
    env: tuple[tuple[str, str], ...] = ()
    alone: bool = False


#: `--select`: a `-k` expression every run takes (a part of the suites, where time is short)
SELECT: dict[str, str] = {}

RUNS = (
    Run("cold", "1"),
    Run("reversed", "0", (("REVERSE_ORDER", "1"),)),
    Run("shuffled", "2", (("SHUFFLE_SEED", "2"),)),
    Run("eager+shuffled", "3", (("SHUFFLE_SEED", "3"), ("EAGER_FIRST", "1"))),
    Run("eager+reversed", "4", (("REVERSE_ORDER", "1"), ("EAGER_FIRST", "1"))),
    Run("alone", "5", alone=True),
)


def pytest_run(
    python: str, project: Path, suite: Suite, run: Run, cache: str, select: str | None = None
) -> dict[str, str]:
    select = select or SELECT.get("k")
    """One pytest process over the suite (or one test of it): test name -> '' or its failure's first line."""
    report = project / f"report-{time.monotonic_ns()}.xml"
    env = {
        **os.environ,
        "PYTHONHASHSEED": run.seed,
        "TORCHINDUCTOR_CACHE_DIR": cache,
        **dict(run.env),
    }
    command = [python, "-m", "pytest", f"fixtures/{suite.module}", "-q", "-p", "no:cacheprovider"]
    command += ["-W", "ignore", f"--junitxml={report}", *(("-k", select) if select else ())]
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    if not report.exists():
        return {"(collection)": (done.stdout + done.stderr).strip().splitlines()[-1]}
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        problem = case.find("failure")
        problem = problem if problem is not None else case.find("error")
        outcomes[case.get("name", "")] = (
            "" if problem is None else (problem.get("message") or "failed").splitlines()[0][:160]
        )
        if case.find("skipped") is not None:
            outcomes[case.get("name", "")] = "skipped"
    report.unlink()
    return outcomes


def run_suite(
    python: str, suite: Suite, torch_minor: str, runs: list[Run], cache: str | None
) -> bool:
    """Every run of one suite at another path; prints its table; True when nothing failed or changed."""
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "elsewhere"
        cache = cache or str(Path(scratch) / "inductor_cache")
        copy_suite(suite, project, torch_minor)
        digest = tree_digest(project / "snapshots")
        results: dict[str, dict[str, str]] = {}
        seconds: dict[str, float] = {}
        changed: list[str] = []
        for run in runs:
            started = time.perf_counter()
            if run.alone:
                names = list(results.get(runs[0].name, {})) or list(
                    pytest_run(python, project, suite, runs[0], cache)
                )
                outcome = {}
                for name in names:
                    outcome |= pytest_run(python, project, suite, run, cache, select=name)
            else:
                outcome = pytest_run(python, project, suite, run, cache)
            results[run.name], seconds[run.name] = outcome, time.perf_counter() - started
            if tree_digest(project / "snapshots") != digest:
                changed.append(run.name)
                digest = tree_digest(project / "snapshots")
    return print_table(suite, runs, results, seconds, changed)


def print_table(
    suite: Suite,
    runs: list[Run],
    results: dict[str, dict[str, str]],
    seconds: dict[str, float],
    changed: list[str],
) -> bool:
    names = sorted({name for outcome in results.values() for name in outcome})
    width = max(len(n) for n in names) if names else 10
    print(f"\n{suite.module}")
    print(f"| {'test':<{width}} | " + " | ".join(f"{r.name} (seed {r.seed})" for r in runs) + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * (len(r.name) + 11) for r in runs) + "|")
    alarms, cells, notes = 0, 0, []
    for name in names:
        row = []
        for run in runs:
            outcome = results[run.name].get(name, "not run")
            row.append(
                f"{'pass' if outcome == '' else 'FAIL' if outcome != 'skipped' else 'skip':<{len(run.name) + 9}}"
            )
            cells += outcome != "skipped"
            if outcome not in ("", "skipped"):
                alarms += 1
                notes.append(f"  {name}, {run.name}: {outcome}")
        print(f"| {name:<{width}} | " + " | ".join(row) + " |")
    print(
        f"| {'seconds':<{width}} | "
        + " | ".join(f"{seconds[r.name]:<{len(r.name) + 9}.0f}" for r in runs)
        + " |"
    )
    print("\n".join(notes))
    print(
        f"{alarms} false alarm(s) in {cells} test runs; snapshot files written: "
        + (", ".join(changed) if changed else "none")
    )
    return alarms == 0 and not changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default=",".join(SUITES))
    parser.add_argument("--runs", default=",".join(r.name for r in RUNS))
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter of the pytest runs"
    )
    parser.add_argument(
        "--pythonpath", help="PYTHONPATH of the pytest runs (another venv's packages)"
    )
    parser.add_argument("--select", help="a -k expression every run takes (default: every test)")
    parser.add_argument("--cache", help="the Inductor cache the runs share (default: a new one)")
    args = parser.parse_args()
    if args.select:
        SELECT["k"] = args.select
    if args.pythonpath:
        os.environ["PYTHONPATH"] = args.pythonpath
    probe = "import sys, torch; print(f'{sys.version_info[0]}.{sys.version_info[1]}', torch.__version__)"
    python_minor, torch_version = subprocess.run(
        [args.python, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    torch_minor = ".".join(torch_version.split(".")[:2])
    runs = [r for r in RUNS if r.name in args.runs.split(",")]
    unknown = set(args.runs.split(",")) - {r.name for r in RUNS}
    if unknown:
        parser.error(
            f"--runs: no run named {', '.join(sorted(unknown))} (the runs: {', '.join(r.name for r in RUNS)})"
        )
    folder = (
        PROJECT_FOLDER
        if python_minor == "3.11"
        else f"snapshots/py{python_minor}/{{torch}}/{{device}}"
    )
    print(f"Python {python_minor}, torch {torch_version}; load average {os.getloadavg()[0]:.1f}")
    ok = True
    for name in args.suites.split(","):
        suite = replace(SUITES[name], folder=folder)
        if not committed_set(suite, torch_minor).is_dir():
            print(f"\n{suite.module}: no committed set at {committed_set(suite, torch_minor)}")
            continue
        ok &= run_suite(args.python, suite, torch_minor, runs, args.cache)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
