"""The documentation's code blocks, run as a user would run them (sybil parsers and evaluators).

Every Markdown file the root `conftest.py` names (README.md, CONTRIBUTING.md,
docs/*.md) is parsed by sybil; each fenced block is one test:

- ```` ```python ````: a block that defines a `test_*` function is a test
  file: it is written into a new project folder and run with
  `pytest --update-snapshots`, which must pass (it records its snapshots and
  checks numerics). Any other Python block runs in the document's namespace,
  so a later block may use what an earlier one defined.
- a *walk* is a project that several blocks of one document build up and
  run, marked by the word `walk` after the fence's language (GitHub shows
  the language alone): ```` ```python walk ```` writes the file its first
  line names (`# test_first.py`), as ```` ```ini walk ```` and
  ```` ```toml walk ```` write a configuration file (`# pytest.ini`),
  ```` ```diff walk ```` applies a unified diff to the file its `+++` line
  names, and ```` ```console walk ```` runs each `$ ` line in the project:
  `pytest ...`, `python -m pytest_torchcompile ...` (the plugin's tools) or
  `cp -r SRC DST` (a copy of a folder); the lines shown under a command
  must appear in its output in that order (other lines may come between;
  `...` in a shown line stands for any text).
- any other fence (```` ```text ````, ```` ```console ````, ```` ```ini ````) is
  shown, not run.

pytest runs as `python -m pytest` with this interpreter (forked from the
worker's zygote, tests/zygote.py, where it can be), so the plugin under test is
the one this suite imports.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from sybil import Document, Example, Region
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

from tests import zygote

WALK = "walk"
#: the folder of a document's walk, in its namespace
PROJECT = "__walk_project__"
#: seconds one documented pytest command may take (a cold Inductor compile included)
TIMEOUT = 600
#: the file a ```LANGUAGE walk block writes ends so: a test file, or a configuration file
WRITTEN = {"python": ".py", "ini": ".ini", "toml": ".toml"}


def parse(document: Document) -> Iterable[Region]:
    """One region per fenced block that runs (see the module docstring)."""
    lexer = FencedCodeBlockLexer(
        r"[\w-]+(?: \w+)?", mapping={"language": "info", "source": "source"}
    )
    for region in lexer(document):
        language, _, mode = region.lexemes["info"].partition(" ")
        source = str(region.lexemes["source"])
        evaluator = _evaluator(language, mode, source)
        if evaluator is not None:
            region.parsed = region.lexemes["source"]
            region.evaluator = evaluator
            yield region


def _evaluator(language: str, mode: str, source: str):  # type: ignore[no-untyped-def]
    if mode not in ("", WALK):
        raise ValueError(f"unknown mode {mode!r} after ```{language}: the only one is {WALK!r}")
    if language == "python" and mode != WALK:
        return run_test_file if defines_tests(source) else PythonEvaluator()
    if mode == WALK and language in WRITTEN:
        return write_file
    if mode == WALK and language == "diff":
        return apply_diff
    if mode == WALK and language == "console":
        return run_commands
    if mode == WALK:
        raise ValueError(
            f"```{language} {WALK}: a walk has python, ini, toml, diff and console steps"
        )
    return None


def defines_tests(source: str) -> bool:
    tree = ast.parse(source)
    return any(
        isinstance(node, ast.FunctionDef) and node.name.startswith("test_") for node in tree.body
    )


# ---------------------------------------------------------------- a test file on its own


def run_test_file(example: Example) -> str | None:
    """Write the block as `test_example.py` of a new project; `pytest --update-snapshots` must pass."""
    with tempfile.TemporaryDirectory(prefix="doc-example-") as folder:
        project = Path(folder)
        (project / "test_example.py").write_text(str(example.parsed))
        done = pytest_in(project, ["--update-snapshots", "-p", "no:cacheprovider"])
        if done.returncode != 0:
            return f"`pytest --update-snapshots` on this block exited {done.returncode}:\n{done.stdout[-4000:]}"
    return None


# ---------------------------------------------------------------- a walk


def project_of(example: Example) -> Path:
    """The document's walk folder, made on first use and removed when the document ends."""
    if PROJECT not in example.namespace:
        folder = tempfile.TemporaryDirectory(prefix="doc-walk-")
        example.namespace[PROJECT] = Path(folder.name)
        example.namespace[PROJECT + "holder"] = folder  # removed with the namespace
    return example.namespace[PROJECT]


def write_file(example: Example) -> str | None:
    source = str(example.parsed)
    first = source.splitlines()[0] if source else ""
    suffix = "|".join(re.escape(ending) for ending in WRITTEN.values())
    name = re.fullmatch(rf"#\s*([\w/.-]+(?:{suffix}))\s*", first)
    if name is None:
        return f"a {WALK} block that writes a file opens with a comment naming it (# test_first.py, # pytest.ini), not {first!r}"
    path = project_of(example) / name.group(1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return None


def apply_diff(example: Example) -> str | None:
    """Apply the block, a unified diff of one file (`--- a`/`+++ b` header, `@@` hunks)."""
    lines = str(example.parsed).splitlines()
    target = next((line[4:].strip() for line in lines if line.startswith("+++ ")), None)
    if target is None:
        return f"a ```diff {WALK} block names its file on a '+++ ' line"
    path = project_of(example) / target
    try:
        path.write_text(patched(path.read_text(), lines))
    except (OSError, ValueError) as exc:
        return f"cannot apply the diff to {target}: {exc}"
    return None


def patched(text: str, diff: list[str]) -> str:
    """`text` with each hunk of `diff` applied: its context and removed lines replaced by its
    context and added lines, found in order after the previous hunk."""
    lines = text.splitlines()
    position = 0
    for old, new in _hunks(diff):
        at = _find(lines, old, position)
        if at is None:
            raise ValueError(f"these lines are not in the file: {old}")
        lines[at : at + len(old)] = new
        position = at + len(new)
    return "\n".join(lines) + "\n"


def _hunks(diff: list[str]) -> list[tuple[list[str], list[str]]]:
    hunks: list[tuple[list[str], list[str]]] = []
    for line in diff:
        if line.startswith(("--- ", "+++ ")):
            continue
        if line.startswith("@@"):
            hunks.append(([], []))
            continue
        if not hunks:
            raise ValueError(f"a line before the first @@: {line!r}")
        old, new = hunks[-1]
        sign, body = (line[:1], line[1:]) if line else (" ", "")
        if sign in " -":
            old.append(body)
        if sign in " +":
            new.append(body)
    return hunks


def _find(lines: list[str], wanted: list[str], start: int) -> int | None:
    for at in range(start, len(lines) - len(wanted) + 1):
        if lines[at : at + len(wanted)] == wanted:
            return at
    return None


def run_commands(example: Example) -> str | None:
    """Run each `$ ` line in the walk's project; the lines shown under it must be in its output."""
    project = project_of(example)
    for command, shown in commands(str(example.parsed)):
        words = shlex.split(command)
        if words[:1] == ["pytest"]:
            output = pytest_in(project, words[1:]).stdout
        elif words[:3] == ["python", "-m", "pytest_torchcompile"]:
            output = tool_in(project, words[1:]).stdout
        elif words[:2] == ["cp", "-r"] and len(words) == 4:
            shutil.copytree(project / words[2], project / words[3])
            output = ""
        else:
            return (
                f"a ```console {WALK} block runs pytest, python -m pytest_torchcompile and cp -r SRC DST, "
                f"not {command!r}"
            )
        missing = unmatched(output.splitlines(), shown)
        if missing:
            return f"$ {command}: this line of the docs is not in the output (in order):\n  {missing}\noutput:\n{output[-6000:]}"
    return None


def commands(block: str) -> list[tuple[str, list[str]]]:
    """(command, the lines shown under it) for each `$ ` line of a console block."""
    found: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            found.append((line[2:].strip(), []))
        elif found and line.strip():
            found[-1][1].append(line)
    return found


def unmatched(output: list[str], shown: list[str]) -> str | None:
    """The first shown line that is not in `output` after the lines before it ('...' is any text)."""
    at = 0
    for line in shown:
        pattern = re.compile(".*".join(re.escape(part) for part in line.rstrip().split("...")))
        while at < len(output) and not pattern.fullmatch(output[at].rstrip()):
            at += 1
        if at == len(output):
            return line
        at += 1
    return None


def pytest_in(project: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`python -m pytest ARGS` in `project`, as a user's terminal would run it (no CI variables
    of this suite's own run, no xdist worker's environment)."""
    return zygote.run_pytest(args, project, user_environment(), TIMEOUT)


def user_environment() -> dict[str, str]:
    """This process's environment without what this suite's own run set for pytest."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_STEP_SUMMARY"))
    }
    env["COLUMNS"] = "200"  # the documented lines are whole lines
    return env


def tool_in(project: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in `project`, with this interpreter, as `pytest_in` runs pytest."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=project,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
