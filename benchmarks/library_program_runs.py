"""How the project's library models run from their program files: bitwise, refused (why), failed.

Every model of the other-library suite (`fixtures/other_libraries.py`, the
`models` extra) and, with `--real`, the transformers suite
(`fixtures/real_models.py`), is compiled under
`compile_snapshot(run_program=True)` in one pytest run, on the torch and
Python of the interpreter that runs this script, as its suite calls it
(under `no_grad` unless it trains), whatever its suite's own marker says.
Each is sorted as `benchmarks/dynamo_corpus_runs.py` sorts a corpus
function (bitwise; refused, by reason; failed at run time; different
values; other), and each file that was written is also run as a script
(`python program.py`'s entry point on random inputs, `fixtures/scripts.py`):
ran, or the first line of what it raised. The seconds are the fresh
process's load (run_path plus `load()`: kernels compiled or read from
Inductor's cache) and call, from `CompileResult.program_report`.

    python benchmarks/library_program_runs.py                # other libraries, inductor
    python benchmarks/library_program_runs.py --real         # and the transformers models
    python benchmarks/library_program_runs.py vq_codebook    # named models
    python benchmarks/library_program_runs.py --backend aot_eager
    python benchmarks/library_program_runs.py --unseen       # libraries no suite covers

`--unseen` runs the models of `benchmarks/data/unseen_library_models.py`
instead: libraries the suites do not cover (peft, MONAI, pyro, gpytorch) and
models of covered libraries the suites do not build (training where the
suite runs inference), as a new user would compile them; a model whose
library is not installed is left out, named.

The Dynamo-style corpus and PyTorch's own Dynamo tests are
`benchmarks/dynamo_corpus_runs.py`'s (docs/program.md says how to run them).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.dynamo_corpus_runs import ORDER, classify, reason_kind  # noqa: E402

TEST_FILE = """
import json, pytest, torch
from benchmarks.data import unseen_library_models
from fixtures import other_libraries, real_models
from fixtures.scripts import assert_runs_as_script

NAMES = {names!r}
OUT = {out!r}


def build(name):
    for source in (other_libraries, real_models, unseen_library_models):
        if hasattr(source, name):
            return getattr(source, name)()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.compile_snapshot(backend={backend!r}, artifacts=(), run_program=True)
def test_model(compile_model, name, tmp_path):
    model, args, kwargs = build(name)
    seen = {{"name": name}}
    try:
        with torch.set_grad_enabled("training" in name):
            result = compile_model(model, *args, **kwargs)
        report = result.program_report
        seen.update(load=report.load_seconds, call=report.call_seconds, kib=report.file_bytes / 1024)
        try:
            assert_runs_as_script(result, tmp_path)
            seen["script"] = "ran"
        except BaseException as exc:
            seen["script"] = f"{{type(exc).__name__}}: {{str(exc).strip().splitlines()[-1:]}}"
    finally:
        with open(f"{{OUT}}/{{name}}.json", "w") as file:
            json.dump(seen, file)
"""


def names(real: bool, unseen: bool = False) -> list[str]:
    from fixtures import other_libraries, real_models

    if unseen:
        return _unseen()
    found = [n for n in dir(other_libraries) if _is_builder(other_libraries, n)]
    if real:
        found += [n for n in dir(real_models) if _is_builder(real_models, n)]
    return found


def _unseen() -> list[str]:
    """The unseen models whose library is installed here; the others named on stderr."""
    import importlib.util

    from benchmarks.data.unseen_library_models import LIBRARIES

    missing = {n: lib for n, lib in LIBRARIES.items() if importlib.util.find_spec(lib) is None}
    for name, library in missing.items():
        print(f"left out {name}: {library} is not installed", file=sys.stderr)
    return [n for n in LIBRARIES if n not in missing]


def _is_builder(module: object, name: str) -> bool:
    """A model builder of the suite: a public function of the module returning a Case."""
    import inspect

    fn = getattr(module, name)
    return (
        inspect.isfunction(fn)
        and fn.__module__ == module.__name__  # type: ignore[attr-defined]
        and not name.startswith("_")
        and "Case" in str(inspect.signature(fn).return_annotation)
    )


def run(chosen: list[str], backend: str) -> tuple[dict[str, tuple[str, str]], dict[str, dict]]:
    """Each model's (outcome, reason) and what its test saw (seconds, the script's run)."""
    with tempfile.TemporaryDirectory(prefix="library-programs-") as tmp:
        folder = Path(tmp)
        (folder / "out").mkdir()
        text = TEST_FILE.format(names=chosen, backend=backend, out=str(folder / "out"))
        (folder / "test_library_programs.py").write_text(text)
        report = folder / "report.xml"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        subprocess.run(
            [sys.executable, "-m", "pytest", "test_library_programs.py", "-q", "-p", "no:cacheprovider",
             f"--junitxml={report}"],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        outcomes = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            name = case.get("name", "").removeprefix("test_model[").removesuffix("]")
            failure = case.find("failure")
            failure = failure if failure is not None else case.find("error")
            message = (
                ""
                if failure is None
                else (failure.get("message") or "") + "\n" + (failure.text or "")
            )
            outcomes[name] = classify(message) if failure is not None else ("bitwise", "")
        seen = {p.stem: json.loads(p.read_text()) for p in (folder / "out").glob("*.json")}
        return outcomes, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="models to run (default: the whole suite)")
    parser.add_argument("--real", action="store_true", help="the transformers models too")
    parser.add_argument(
        "--unseen", action="store_true", help="models of libraries no suite covers, instead"
    )
    parser.add_argument("--backend", default="inductor", choices=["aot_eager", "inductor", "eager"])
    args = parser.parse_args()
    chosen = args.names or names(args.real, args.unseen)
    outcomes, seen = run(chosen, args.backend)
    report(args.backend, chosen, outcomes, seen)


def report(backend: str, chosen: list[str], outcomes: dict, seen: dict) -> None:
    import torch

    counts = collections.Counter(outcome for outcome, _ in outcomes.values())
    print(
        f"torch {torch.__version__}, Python {sys.version.split()[0]}, backend {backend}: {len(chosen)} models"
    )
    for outcome in ORDER[:5]:
        print(f"  {outcome}: {counts.get(outcome, 0)}")
    scripts = collections.Counter(s.get("script", "not written") == "ran" for s in seen.values())
    print(f"  run as a script: {scripts.get(True, 0)} of {len(chosen)}")
    print("\n| model | program file | script | load s | call s | KiB |\n|---|---|---|---|---|---|")
    for name in chosen:
        outcome, reason = outcomes.get(name, ("no result", ""))
        what = outcome if outcome == "bitwise" else f"{outcome}: {reason_kind(reason)[:120]}"
        s = seen.get(name, {})
        load, call = s.get("load") or [0.0], s.get("call") or [0.0]
        kib = s.get("kib", 0.0)
        print(
            f"| {name} | {what} | {s.get('script', 'not written')[:80]} | {max(load):.2f} | "
            f"{max(call):.3f} | {kib:.0f} |"
        )


if __name__ == "__main__":
    main()
