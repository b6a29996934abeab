"""The starting side of the fresh-process compiles: folders, processes, answers.

Each run of a case is a pair in one new, empty cache folder, after a
reference compile (`reference.py`: how fast the machine compiles now): a cold
compile (nothing cached), then a warm one (what the cold one stored),
each a new Python process running the user's test again
(`python -m pytest <node id>`) up to the case. The folder is the process's
Inductor and Triton cache (`_torch.compile_cost.compiling_env`: never the
user's, and no remote cache), created for the pair and removed after it.
The process's command line keeps what decides how the test is found and
run (`-p` plugins, `--import-mode`, `-c`, `--rootdir`, `--confcutdir`), and
drops the rest of `addopts` and `PYTEST_ADDOPTS` (reports it would write,
`-n`, the gate's flags): it writes nothing but its answer.
"""

from __future__ import annotations

import json
import os
import pickle
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..._torch.compile_cost import compiling_env
from ...common.named_cases import CaseFailure
from ...common.terminal import Progress
from ..facts.block import CompileRuns
from ..facts.runs import CompileRun
from .reference import reference_cpu_s
from .request import ENV, Request

#: options of the user's command line that the compiling processes keep (each takes a value)
KEPT_OPTIONS = ("-p", "--import-mode", "-c", "--config-file", "--rootdir", "--confcutdir")
#: seconds one compiling process may take (a cold compile of a large model on a loaded machine)
TIMEOUT_S = 3600.0
#: lines of a failed process's output a failure shows
TAIL = 25


def kept_options(arguments: Iterable[str]) -> list[str]:
    """The `KEPT_OPTIONS` among `arguments`, with their values (`-p x`, `-px`, `--import-mode=x`)."""
    kept: list[str] = []
    words = list(arguments)
    for i, word in enumerate(words):
        for option in KEPT_OPTIONS:
            if word == option and i + 1 < len(words):
                kept += [word, words[i + 1]]
            elif word.startswith(option + "=") or (
                option == "-p"
                and word.startswith("-p")
                and len(word) > 2
                and not word.startswith("--")
            ):
                kept.append(word)
    return kept


def child_arguments(ini_addopts: Sequence[str], invocation: Sequence[str]) -> list[str]:
    """What a compiling process's pytest gets besides the node id: the kept options of the
    ini's addopts, `PYTEST_ADDOPTS` and the command line, in pytest's order."""
    env_addopts = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    return kept_options([*ini_addopts, *env_addopts, *invocation])


@dataclass
class FreshCompiles:
    """Runs one case's cold and warm compiles in fresh processes, pair by pair."""

    nodeid: str
    rootdir: Path
    arguments: list[str] = field(default_factory=list)
    progress: Progress = field(default_factory=Progress)
    timeout_s: float = TIMEOUT_S

    def measure(
        self, case: int, name: str, earlier: Sequence[Any], pairs: int, runs: CompileRuns
    ) -> None:
        """Add `pairs` cold/warm pairs of case number `case` to `runs`."""
        with tempfile.TemporaryDirectory(prefix="pytest-torchcompile-compile-time-") as work:
            folder = Path(work)
            with (folder / "earlier.pickle").open("wb") as handle:
                pickle.dump(list(earlier), handle)
            for pair in range(pairs):
                cache = folder / f"cache-{pair}"
                cache.mkdir()
                with self.progress.stage(f"compile time: reference compile {pair + 1} of {pairs}"):
                    reference = reference_cpu_s()
                for side in ("cold", "warm"):
                    doing = (
                        f"compile time: {side} compile {pair + 1} of {pairs}, in a fresh process"
                    )
                    with self.progress.stage(doing):
                        run = self._run(case, side, name, folder, cache)
                    contention = replace(run.contention, reference_s=reference)
                    runs.side(side).append(replace(run, contention=contention))
                shutil.rmtree(cache, ignore_errors=True)  # the pair's cache: this run's own folder

    def _run(self, case: int, side: str, name: str, folder: Path, cache: Path) -> CompileRun:
        answer, log, request = (
            folder / "answer.json",
            folder / f"{side}.log",
            folder / "request.json",
        )
        answer.unlink(missing_ok=True)
        Request(self.nodeid, case, side, str(answer), str(folder / "earlier.pickle")).write(request)
        env = compiling_env(os.environ, str(cache))
        env.pop("PYTEST_ADDOPTS", None)
        env[ENV] = str(request)
        command = [
            sys.executable,
            "-m",
            "pytest",
            self.nodeid,
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            f"--basetemp={folder / 'basetemp'}",
            *self.arguments,
        ]
        with log.open("w", encoding="utf-8") as output:
            try:
                code = subprocess.run(
                    command,
                    cwd=self.rootdir,
                    env=env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    timeout=self.timeout_s,
                    check=False,
                ).returncode
            except subprocess.TimeoutExpired:
                code = None
        return _answer(answer, log, side, name, code)


def _answer(answer: Path, log: Path, side: str, name: str, code: int | None) -> CompileRun:
    """The compiling process's answer; a `CaseFailure` saying what went wrong without one."""
    if answer.is_file():
        data = json.loads(answer.read_text(encoding="utf-8"))
        if "error" in data:
            raise CaseFailure(f"the {side} compile in a fresh process failed: {data['error']}")
        return CompileRun.from_json(data["run"])
    ended = f"ran past {TIMEOUT_S:.0f} s" if code is None else f"exit {code}"
    tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-TAIL:])
    raise CaseFailure(
        f"the {side} compile's fresh process ended without an answer ({ended}): it runs the test again "
        f"up to {name}, so the test must reach {name} the same way in a new process; its output ends:\n{tail}"
    )
