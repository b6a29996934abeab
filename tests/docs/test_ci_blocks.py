"""The docs' blocks that cannot run here (a CI workflow, a CI script, commands of other
machines) are still checked: well-formed, and every plugin command in them one the plugin takes.

- ```` ```yaml ````: parsed (PyYAML, in the dev extra); a GitHub Actions
  workflow (a mapping with `jobs`) has `on`, and each job a `runs-on` and
  `steps`, each step `uses` or `run`, its `needs` naming jobs;
- ```` ```bash ````: `bash -n` (parsed, not run);
- in those and in ```` ```console ```` blocks, every `pytest` command's
  `--torchcompile-*` flags and `-m` markers, and every `python -m
  pytest_torchcompile` command whole, are what the plugin takes.

The guide's `diff` steps do run: `tests/test_tools_without_torch.py` runs
them as written, in a venv without torch.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pytest_torchcompile.common.hooks.flags import Option
from pytest_torchcompile.diff_command import build_parser
from pytest_torchcompile.perf.plugin import OPTIONS as PERF_OPTIONS
from pytest_torchcompile.perf.spec import MARKER as BENCHMARK_MARKER
from pytest_torchcompile.snapshot.plugin import OPTIONS as SNAPSHOT_OPTIONS
from pytest_torchcompile.snapshot.spec import MARKER as SNAPSHOT_MARKER
from tests.conftest import REPO

DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
_OPEN = re.compile(r"^```([\w-]+)(?: (\w+))?\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    mode: str
    text: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line} ```{self.language}"


def blocks(paths: list[Path] = DOCS) -> Iterator[Block]:
    """Every fenced block of the docs, with the line it opens on."""
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        start = None
        for number, line in enumerate(lines, 1):
            if start is None:
                opened = _OPEN.match(line)
                if opened:
                    start, language, mode, body = number, opened[1], opened[2] or "", []
            elif line.strip() == "```":
                yield Block(path, start, language, mode, "\n".join(body) + "\n")
                start = None
            else:
                body.append(line)


def of(language: str) -> list[Block]:
    return [b for b in blocks() if b.language == language and b.mode == ""]


# ---------------------------------------------------------------- YAML


def check_workflow(workflow: dict) -> None:
    """A GitHub Actions workflow's shape (PyYAML reads the key `on` as True)."""
    assert "on" in workflow or True in workflow, "no `on:` trigger"
    jobs = workflow["jobs"]
    for name, job in jobs.items():
        assert "runs-on" in job, f"job {name}: no runs-on"
        needs = job.get("needs", [])
        for needed in [needs] if isinstance(needs, str) else needs:
            assert needed in jobs, f"job {name} needs {needed!r}, which is no job"
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), f"job {name}: a step runs or uses: {step}"


def run_scripts(workflow: object) -> list[str]:
    """Every `run:` script of a workflow."""
    if not isinstance(workflow, dict) or "jobs" not in workflow:
        return []
    return [
        step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step
    ]


@pytest.mark.parametrize("block", of("yaml"), ids=str)
def test_yaml_blocks_are_well_formed(block: Block) -> None:
    parsed = yaml.safe_load(block.text)
    if isinstance(parsed, dict) and "jobs" in parsed:
        check_workflow(parsed)
    for script in run_scripts(parsed):
        check_commands(script, str(block))


# ---------------------------------------------------------------- shell


@pytest.mark.parametrize("block", of("bash"), ids=str)
def test_bash_blocks_parse(block: Block) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash on this machine")
    done = subprocess.run([bash, "-n"], input=block.text, capture_output=True, text=True)
    assert done.returncode == 0, f"{block}: {done.stderr}"
    check_commands(block.text, str(block))


@pytest.mark.parametrize("block", of("console"), ids=str)
def test_console_blocks_name_what_the_plugin_takes(block: Block) -> None:
    typed = [line[2:] for line in block.text.splitlines() if line.startswith("$ ")]
    check_commands("\n".join(typed), str(block))


# ---------------------------------------------------------------- commands


def known_flags(options: tuple[Option, ...] = (*SNAPSHOT_OPTIONS, *PERF_OPTIONS)) -> set[str]:
    return {"--update-snapshots"} | {o.flag for o in options}


def commands(script: str) -> Iterator[list[str]]:
    """Each simple command of a shell script, as words (comments, `&&`, `;`, `|` split off)."""
    joined = script.replace("\\\n", " ")
    for line in joined.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for word in lexer:
            if set(word) <= set(";&|"):
                if words:
                    yield words
                words = []
            else:
                words.append(word)
        if words:
            yield words


def check_commands(script: str, where: str) -> None:
    """Every pytest and pytest_torchcompile command in `script` is one the plugin takes."""
    for words in commands(script):
        for i, word in enumerate(words):
            rest = words[i + 1 :]
            if word == "pytest" and i == 0:
                check_pytest(rest, where)
            elif re.search(r"(^|/)python3?$", word) and rest[:2] == ["-m", "pytest"]:
                check_pytest(rest[2:], where)
            elif re.search(r"(^|/)python3?$", word) and rest[:2] == ["-m", "pytest_torchcompile"]:
                check_tool(rest[2:], where)


def check_pytest(args: list[str], where: str) -> None:
    flags, markers = known_flags(), {SNAPSHOT_MARKER, BENCHMARK_MARKER}
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if name.startswith("--torchcompile") or name.startswith("--perf-"):
            assert name in flags, f"{where}: pytest {' '.join(args)}: no flag {name}"
        if arg == "-m":
            named = set(re.findall(r"\w+", args[i + 1])) - {"and", "or", "not"}
            assert named <= markers, f"{where}: -m {args[i + 1]!r} names no marker of the plugin"


def check_tool(args: list[str], where: str) -> None:
    try:
        build_parser().parse_args(args)
    except SystemExit:
        pytest.fail(
            f"{where}: python -m pytest_torchcompile {' '.join(args)} is not a command it takes"
        )


# ---------------------------------------------------------------- the checks fail when wrong


def test_a_misspelt_flag_or_marker_or_tool_command_fails() -> None:
    good = 'pytest -m "not compile_benchmark" --torchcompile-perf-gate=strict --update-snapshots'
    check_commands(good, "here")
    for wrong in (
        "pytest --torchcompile-perf-gates",
        "cd x && .venv/bin/python -m pytest -m compile_benchmarks",
        "python3 -m pytest_torchcompile dif a b",
        "python -m pytest_torchcompile diff a b --markdwn x",
    ):
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            check_commands(wrong, "here")


def test_a_broken_workflow_fails() -> None:
    workflow = {True: {"push": None}, "jobs": {"a": {"runs-on": "x", "needs": "b", "steps": []}}}
    with pytest.raises(AssertionError, match="needs 'b', which is no job"):
        check_workflow(workflow)
    step = {"run": "pytest", "uses": "actions/checkout@v4"}
    with pytest.raises(AssertionError, match="a step runs or uses"):
        check_workflow({"on": "push", "jobs": {"a": {"runs-on": "x", "steps": [step]}}})


def test_the_ci_guide_has_its_workflow_and_script() -> None:
    guide = [b for b in blocks([REPO / "docs" / "ci.md"])]
    assert [b.language for b in guide if b.language in ("yaml", "bash")] == ["yaml", "bash"]
