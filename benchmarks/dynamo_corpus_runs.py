"""How much code nobody here wrote for the program file runs from it, bit for bit.

Runs every function of `benchmarks/data/dynamo_style_corpus.py` (small
functions in the style of PyTorch's Dynamo unit tests) through
`compile_model(fn, *inputs)` under `compile_snapshot(run_program=True)`, one
pytest run per backend, on the torch and Python of the interpreter that runs
this script, and sorts each case into:

- bitwise: the program file, run in a fresh process with torch.compile
  trapped, gave the compiled run's outputs bit for bit;
- refused: the file was not written (`write_program` said why; counted by
  reason);
- failed at run time: the file was written but raised, or its guards refused
  the inputs that ran;
- different values: the file ran and computed something else;
- other: the test failed before the program was involved (the compile itself).

    python benchmarks/dynamo_corpus_runs.py                    # aot_eager, all cases
    python benchmarks/dynamo_corpus_runs.py --backend inductor --sample 20
    python benchmarks/dynamo_corpus_runs.py add slice_step     # named cases
"""

from __future__ import annotations

import argparse
import collections
import inspect
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"

TEST_FILE = """
import inspect, pytest, torch
import dynamo_style_corpus as corpus

NAMES = {names!r}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.compile_snapshot(backend={backend!r}, artifacts=("summary",), run_program=True)
def test_case(compile_model, name):
    fn = getattr(corpus, name)
    torch.manual_seed(0)
    inputs = [torch.randn(10, 10) for _ in inspect.signature(fn).parameters]
    compile_model(fn, *inputs)
"""

#: a failure message -> the outcome it means (the first that matches wins)
OUTCOMES = [
    ("refused", re.compile(r"write_program: (.*)")),
    ("different values", re.compile(r"differs from the compiled run")),
    (
        "failed at run time",
        re.compile(r"the program file (raised|refused|could not|guards)|program file"),
    ),
]


def corpus_names() -> list[str]:
    sys.path.insert(0, str(DATA))
    import dynamo_style_corpus as corpus

    return [
        name
        for name, fn in vars(corpus).items()
        if inspect.isfunction(fn) and fn.__module__ == corpus.__name__ and not name.startswith("_")
    ]


def run(names: list[str], backend: str) -> dict[str, tuple[str, str]]:
    """Each case's (outcome, reason) from one pytest run."""
    with tempfile.TemporaryDirectory(prefix="dynamo-corpus-") as tmp:
        folder = Path(tmp)
        (folder / "test_corpus.py").write_text(TEST_FILE.format(names=names, backend=backend))
        report = folder / "report.xml"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(DATA), str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        subprocess.run(
            [sys.executable, "-m", "pytest", "test_corpus.py", "-q", "-p", "no:cacheprovider",
             "--update-snapshots", f"--junitxml={report}"],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        return outcomes(ET.parse(report).getroot())


def outcomes(root: ET.Element) -> dict[str, tuple[str, str]]:
    found = {}
    for case in root.iter("testcase"):
        name = re.sub(r"^test_case\[(.*)\]$", r"\1", case.get("name", ""))
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        if failure is None:
            found[name] = ("skipped", "") if case.find("skipped") is not None else ("bitwise", "")
            continue
        message = (failure.get("message") or "") + "\n" + (failure.text or "")
        found[name] = classify(message)
    return found


def classify(message: str) -> tuple[str, str]:
    for outcome, pattern in OUTCOMES:
        match = pattern.search(message)
        if match:
            reason = match.group(1) if outcome == "refused" else message.strip().splitlines()[0]
            return outcome, reason
    return "other", message.strip().splitlines()[0] if message.strip() else ""


def reason_kind(reason: str) -> str:
    """A refusal's reason without the frame it names (`frame 0 compile 0 (fn): ...`)."""
    text = re.sub(r"^(frame \d+ compile \d+ \([^)]*\)|the case): ", "", reason)
    return re.sub(r"\s+", " ", text)[:160]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="cases to run (default: all)")
    parser.add_argument(
        "--backend", default="aot_eager", choices=["aot_eager", "inductor", "eager"]
    )
    parser.add_argument(
        "--sample", type=int, default=0, help="every k-th case only, k chosen for about this many"
    )
    parser.add_argument("--verbose", action="store_true", help="print each case's outcome")
    args = parser.parse_args()
    names = args.names or corpus_names()
    if args.sample and args.sample < len(names):
        names = names[:: max(1, len(names) // args.sample)][: args.sample]
    results = run(names, args.backend)
    counts = collections.Counter(outcome for outcome, _ in results.values())
    import torch

    print(
        f"torch {torch.__version__}, Python {sys.version.split()[0]}, backend {args.backend}: {len(names)} cases"
    )
    for outcome in (
        "bitwise",
        "refused",
        "failed at run time",
        "different values",
        "other",
        "skipped",
    ):
        print(f"  {outcome}: {counts.get(outcome, 0)}")
    reasons = collections.Counter(reason_kind(r) for o, r in results.values() if o == "refused")
    for reason, n in reasons.most_common():
        print(f"    refused x{n}: {reason}")
    missing = sorted(set(names) - set(results))
    if missing:
        print(f"  no result: {', '.join(missing)}")
    for name, (outcome, reason) in sorted(results.items()):
        if args.verbose or outcome not in ("bitwise", "refused"):
            print(f"  {name}: {outcome} {reason[:200]}")


if __name__ == "__main__":
    main()
