"""How much code nobody here wrote for the program file runs from it, bit for bit.

Runs each function of a corpus through `compile_model(fn, *inputs)` under
`compile_snapshot(run_program=True)`, one pytest run per backend, on the
torch and Python of the interpreter that runs this script, `torch.randn(10,
10)` per parameter (seeded), and sorts each case into:

- bitwise: the program file, run in a fresh process with torch.compile
  trapped, gave the compiled run's outputs bit for bit;
- refused: the file was not written (`write_program` said why; counted by
  reason);
- failed at run time: the file was written but raised, or its guards refused
  the inputs that ran;
- different values: the file ran and computed something else;
- other: the test failed before the program was involved (the compile itself,
  e.g. a function that needs a newer torch than the one installed);
- no frame, as PyTorch expects: a `make_test(expected_frame_count=0)` function,
  which Dynamo is meant to compile nothing of (there is no file to write);
- skipped: the test file skips it here (e.g. `requires cuda`).

The corpus is one of:

- PyTorch's own Dynamo tests, `--pytorch-tests PATH`: the `@make_test`
  functions of a file of PyTorch's `test/dynamo/` (made for
  `test_functions.py`), called as `torch._dynamo.testing.standard_test` calls
  them. Nothing of PyTorch is in this repository: take the file from a clone
  of PyTorch at the tag of the installed torch (`git clone --branch v2.13.0
  https://github.com/pytorch/pytorch`) or download it raw
  (`https://raw.githubusercontent.com/pytorch/pytorch/<tag or
  commit>/test/dynamo/test_functions.py`). It imports torch's test helpers,
  which need `pip install expecttest`. `benchmarks/data/pytorch_make_tests.py`
  says how the functions are taken out of `make_test`.
- by default, `benchmarks/data/dynamo_style_corpus.py`: small functions in the
  style of PyTorch's Dynamo unit tests, written for this project.

    python benchmarks/dynamo_corpus_runs.py                    # aot_eager, all cases
    python benchmarks/dynamo_corpus_runs.py --backend inductor --sample 20
    python benchmarks/dynamo_corpus_runs.py add slice_step     # named cases
    python benchmarks/dynamo_corpus_runs.py --pytorch-tests ~/pytorch/test/dynamo/test_functions.py \\
        --backend inductor --sample 40 --seed 0

`--sample N` takes N cases drawn with `random.Random(seed)` from the corpus
(in the corpus's order), so a seed names the same sample on every machine.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import os
import random
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"

#: one pytest test per case; `torch.randn(10, 10)` per argument, as PyTorch's `standard_test` calls them.
TEST_FILE = """
import inspect, pytest, torch
import dynamo_style_corpus as corpus
import pytorch_make_tests

NAMES = {names!r}


def case(name):
    if pytorch_make_tests.CASES:
        made = pytorch_make_tests.CASES[name]
        if made.skip:
            pytest.skip(made.skip)
        return made.fn, made.nargs
    fn = getattr(corpus, name)
    return fn, len(inspect.signature(fn).parameters)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.compile_snapshot(backend={backend!r}, artifacts=("summary",), run_program=True)
def test_case(compile_model, name):
    fn, nargs = case(name)
    torch.manual_seed(0)
    inputs = [torch.randn(10, 10) for _ in range(nargs)]
    compile_model(fn, *inputs)
"""

#: a make_test(expected_frame_count=0) function that Dynamo compiled nothing of
NO_FRAME = "no frame, as PyTorch expects"
ORDER = (
    "bitwise",
    "refused",
    "failed at run time",
    "different values",
    "other",
    NO_FRAME,
    "skipped",
)

#: a failure message -> the outcome it means (the first that matches wins)
OUTCOMES = [
    ("refused", re.compile(r"write_program: (.*)")),
    ("different values", re.compile(r"differs from the compiled run")),
    (
        "failed at run time",
        re.compile(r"the program file (raised|refused|could not|guards)|program file"),
    ),
]


def corpus_names(pytorch_tests: Path | None) -> list[str]:
    sys.path.insert(0, str(DATA))
    if pytorch_tests is not None:
        os.environ["PTC_PYTORCH_TESTS"] = str(pytorch_tests)
        import pytorch_make_tests

        if pytorch_make_tests.MISSING:
            print(f"  stood in (not in this torch): {', '.join(pytorch_make_tests.MISSING)}")
        return list(pytorch_make_tests.CASES)
    import dynamo_style_corpus as corpus

    return [
        name
        for name, fn in vars(corpus).items()
        if inspect.isfunction(fn) and fn.__module__ == corpus.__name__ and not name.startswith("_")
    ]


def sample(names: list[str], size: int, seed: int) -> list[str]:
    """`size` names drawn with `random.Random(seed)`, kept in the corpus's order."""
    if not size or size >= len(names):
        return names
    chosen = set(random.Random(seed).sample(names, size))
    return [name for name in names if name in chosen]


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


def expected_no_frame(results: dict[str, tuple[str, str]]) -> None:
    """A refusal for `nothing was compiled` of a make_test(expected_frame_count=0) function is what PyTorch expects."""
    import pytorch_make_tests

    for name, (_, reason) in results.items():
        case = pytorch_make_tests.CASES.get(name)
        if case and case.expected_frame_count == 0 and "nothing was compiled" in reason:
            results[name] = (NO_FRAME, reason)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="cases to run (default: all)")
    parser.add_argument(
        "--backend", default="aot_eager", choices=["aot_eager", "inductor", "eager"]
    )
    parser.add_argument(
        "--pytorch-tests", type=Path, default=None,
        help="a PyTorch Dynamo test file (test/dynamo/test_functions.py): run its @make_test functions",
    )  # fmt: skip
    parser.add_argument("--sample", type=int, default=0, help="this many cases, drawn with --seed")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--verbose", action="store_true", help="print each case's outcome")
    args = parser.parse_args()
    names = args.names or sample(corpus_names(args.pytorch_tests), args.sample, args.seed)
    if args.names and args.pytorch_tests is not None:
        corpus_names(args.pytorch_tests)
    results = run(names, args.backend)
    if args.pytorch_tests is not None:
        expected_no_frame(results)
    report(args, names, results)


def report(args: argparse.Namespace, names: list[str], results: dict[str, tuple[str, str]]) -> None:
    import torch

    counts = collections.Counter(outcome for outcome, _ in results.values())
    corpus = args.pytorch_tests or "benchmarks/data/dynamo_style_corpus.py"
    print(
        f"torch {torch.__version__}, Python {sys.version.split()[0]}, backend {args.backend}, {corpus}: "
        f"{len(names)} cases"
        + (f" (sample of {args.sample}, seed {args.seed})" if args.sample else "")
    )
    for outcome in ORDER:
        print(f"  {outcome}: {counts.get(outcome, 0)}")
    reasons = collections.Counter(reason_kind(r) for o, r in results.values() if o == "refused")
    for reason, n in reasons.most_common():
        print(f"    refused x{n}: {reason}")
    missing = sorted(set(names) - set(results))
    if missing:
        print(f"  no result: {', '.join(missing)}")
    for name, (outcome, reason) in sorted(results.items()):
        if args.verbose or outcome not in ("bitwise", "refused", NO_FRAME, "skipped"):
            print(f"  {name}: {outcome} {reason[:300]}")
        elif outcome == "refused":
            print(f"  {name}: refused {reason_kind(reason)[:300]}")


if __name__ == "__main__":
    main()
