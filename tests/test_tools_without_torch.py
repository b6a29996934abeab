"""The command-line tools where torch is not installed: a CI job that only compares two sets.

`pyproject.toml` requires torch (the plugin compiles models), so a job
without torch installs the package with `pip install --no-deps`; the tools
(`python -m pytest_torchcompile diff`, `merge-baselines`) then run on the
standard library alone: no torch, pytest, syrupy or depyf. This builds the
checkout's wheel, installs it that way into a fresh venv (offline: nothing
is fetched) and runs both commands there, as docs/ci.md's `diff` job does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.docs.test_ci_blocks import blocks

SETS = REPO / "snapshots"
#: what the package needs, and nothing it needs may be among them
ABSENT = ("torch", "pytest", "syrupy", "depyf")


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding only pip and this checkout's wheel, installed with `--no-deps`; its python."""
    work = tmp_path_factory.mktemp("no-torch")
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "pytest_torchcompile",
        source / "pytest_torchcompile",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    offline = ["--no-deps", "--no-index", "-q"]
    pip = [sys.executable, "-m", "pip"]
    build = [*pip, "wheel", *offline, "--no-build-isolation", "-w", str(work / "dist"), str(source)]
    run(build)
    (wheel,) = (work / "dist").glob("pytest_torchcompile-*.whl")
    venv.create(work / "venv", with_pip=True)
    python = work / "venv" / "bin" / "python"
    run([str(python), "-m", "pip", "install", *offline, str(wheel)])
    return python


def run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run with no PYTHONPATH, so the venv sees its own site-packages only."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done


def test_the_venv_has_no_torch_nor_the_plugins_dependencies(bare_venv: Path) -> None:
    probe = f"import importlib.util as u; print([m for m in {ABSENT!r} if u.find_spec(m)])"
    assert run([str(bare_venv), "-c", probe]).stdout.strip() == "[]"


def test_diff_runs_where_torch_is_not_installed(bare_venv: Path, tmp_path: Path) -> None:
    done = run(
        [
            str(bare_venv),
            "-m",
            "pytest_torchcompile",
            "diff",
            str(SETS / "2.13" / "cpu" / "fixtures" / "test_zoo"),
            str(SETS / "2.15" / "cpu" / "fixtures" / "test_zoo"),
            "--markdown",
            "report.md",
            "--html",
            "report.html",
            "--json",
            "report.json",
        ],
        cwd=tmp_path,
    )
    assert "10 cases: 3 behaviour changed, 7 text only, 0 unchanged" in done.stdout
    assert (tmp_path / "report.md").read_text().startswith("**Snapshot diff**")
    assert "<html" in (tmp_path / "report.html").read_text()
    assert (tmp_path / "report.json").stat().st_size > 0


def test_merge_baselines_runs_where_torch_is_not_installed(bare_venv: Path, tmp_path: Path) -> None:
    machine = {
        "cpu": "Some CPU",
        "cuda": None,
        "device": "cpu",
        "threads": 1,
        "torch": "2.13.0",
        "triton": None,
    }
    record = {"counters": {"graph_count": 1}, "metrics": {}, "settings": {"iterations": 8}}
    base, run_1 = tmp_path / "base", tmp_path / "run-1"
    base.mkdir()
    run_1.mkdir()
    data = {"cases": {"t::a": record}, "format": 1, "machine": machine}
    (run_1 / "some-cpu-1t-x.json").write_text(json.dumps(data))
    done = run(
        [str(bare_venv), "-m", "pytest_torchcompile", "merge-baselines", str(base), str(run_1)]
    )
    assert done.stdout == "some-cpu-1t-x.json: 1 case(s) from 1 run(s)\n"
    assert json.loads((base / "some-cpu-1t-x.json").read_text())["cases"]["t::a"] == record


def guide_steps() -> tuple[list[str], str]:
    """docs/ci.md's steps that need no torch, as written: the workflow's `diff` job's
    `python -m pytest_torchcompile` lines, and the generic script's no-torch section
    (its `WHEEL=` line and every `.venv-diff` line)."""
    workflow, script = (
        b for b in blocks([REPO / "docs" / "ci.md"]) if b.language in ("yaml", "bash")
    )
    steps = yaml.safe_load(workflow.text)["jobs"]["diff"]["steps"]
    job = [
        line.strip()
        for step in steps
        for line in step.get("run", "").splitlines()
        if "-m pytest_torchcompile" in line
    ]
    lines = script.text.splitlines()
    section = [line for line in lines if line.startswith("WHEEL=") or ".venv-diff" in line]
    return job, "\n".join(["set -euo pipefail", *section])


def test_the_ci_guides_diff_steps_run_as_written(bare_venv: Path, tmp_path: Path) -> None:
    """The workflow's diff job on a pull request (the base branch's checkout in ../base) and the
    generic script's diff section (it makes its own venv and installs the wheel with --no-deps)."""
    job, section = guide_steps()
    assert len(job) == 2 and "WHEEL=" in section, "docs/ci.md's diff steps moved: update this test"
    project, summary = tmp_path / "pr", tmp_path / "summary.md"
    shutil.copytree(SETS, project / "snapshots")
    shutil.copytree(SETS, tmp_path / "base" / "snapshots")
    wheel = re.search(r"^WHEEL=(\S+)$", section, re.M)[1]  # type: ignore[index]
    (project / wheel).parent.mkdir(parents=True)
    shutil.copy(next((bare_venv.parents[2] / "dist").glob("*.whl")), project / wheel)
    env = {
        "PATH": f"{bare_venv.parent}{os.pathsep}{os.environ['PATH']}",  # `python` is the venv's
        "GITHUB_STEP_SUMMARY": str(summary),
        "PIP_NO_INDEX": "1",  # offline: the wheel is a file, nothing is fetched
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    outputs = [run_shell(command, project, env) for command in job]
    assert "0 behaviour changed, 0 text only" in outputs[0]
    assert "3 behaviour changed, 7 text only" in outputs[1]
    assert summary.read_text().count("**Snapshot diff**") == 2
    assert "<html" in (project / "snapshot-diff.html").read_text()
    run_shell(section, project, env)
    assert "3 behaviour changed" in (project / "snapshot-diff.md").read_text()


def run_shell(script: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{script}:\n{done.stdout}\n{done.stderr}"
    return done.stdout
