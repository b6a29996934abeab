"""Snapshots are byte-identical across processes, paths, order, caches, hosts.

A representative subset of the zoo (a training model, a graph break, a
recompile with automatic dynamic shapes, dynamic=True) is recorded once on Inductor; every
test below re-runs it under one variation WITHOUT --update-snapshots. A
differing artifact fails that run, and the snapshot tree must be untouched.
Every run has a hash seed of its own (`PYTHONHASHSEED`), one of them 0 (randomisation off).
Two variations that neither undo nor depend on each other share a run (another
process on one thread, another path on an AVX2 host, other compiles first in
reversed order, a cold cache under two xdist workers): a difference names both;
rerun with one of them alone to tell which.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, tree_digest

SUBSET = """
import os
import pytest, torch
from models import zoo

inductor = pytest.mark.compile_snapshot(backend="inductor")

@inductor
def test_training(compile_model):
    model, args, _ = zoo.mlp_training()
    compile_model(model, *args)

@inductor
def test_graph_break(compile_model):
    model, args, _ = zoo.graph_break()
    assert compile_model(model, *args).graph_break_count == 1

@inductor
def test_dynamic(compile_model):
    (model, args, _), second, _third = zoo.two_shapes()
    assert compile_model(model, *args).call(*second).recompile_count == 1

@pytest.mark.compile_snapshot(backend="inductor", dynamic=True)
def test_dynamic_true(compile_model):
    model, args, _ = zoo.dynamic_shapes()
    compile_model(model, *args)

@inductor
def test_transformer_block(compile_model):
    model, args, _ = zoo.transformer_block()
    with torch.no_grad():
        compile_model(model, *args)
"""

REVERSE_CONFTEST = '''
import os

def pytest_collection_modifyitems(items):
    if os.environ.get("REVERSE_ORDER"):
        items.reverse()

def pytest_sessionstart(session):
    """Other compiles first: Dynamo's process-global counters move on."""
    if os.environ.get("COMPILE_FIRST"):
        import torch
        for n in range(12):
            torch._dynamo.reset()
            torch.compile(lambda x: x * max(x.shape[0], n) + len(x), backend="eager")(torch.randn(3))
'''


def run_pytest(cwd: Path, *args: str, seed: str, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest in `cwd` with hash seed `seed` (each run another, `PYTHONHASHSEED`)."""
    environ = {**os.environ, "PYTHONHASHSEED": seed, **env}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore",
        # the re-runs check that nothing differs: a text-only difference fails them too
        *(() if "--update-snapshots" in args else ("--torchcompile-strict-text",)),
        *args,
    ]
    return subprocess.run(
        command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    """The subset recorded once: (project dir, snapshot digest, shared cache dir)."""
    project = tmp_path_factory.mktemp("checkout_a")
    cache = str(tmp_path_factory.mktemp("inductor_cache"))
    # in a subfolder, so a cache filled from another checkout path shows as a foreign path
    (project / "models").mkdir()
    (project / "models" / "__init__.py").write_text("")
    shutil.copy(REPO / "fixtures" / "zoo.py", project / "models" / "zoo.py")
    (project / "test_subset.py").write_text(SUBSET)
    (project / "conftest.py").write_text(REVERSE_CONFTEST)
    (project / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    done = run_pytest(project, "--update-snapshots", seed="1", TORCHINDUCTOR_CACHE_DIR=cache)
    assert done.returncode == 0, done.stdout[-3000:]
    return project, tree_digest(project / "snapshots"), cache


def assert_identical(
    project: Path, digest: dict[str, str], *args: str, seed: str, **env: str
) -> None:
    done = run_pytest(project, *args, seed=seed, **env)
    assert done.returncode == 0, done.stdout[-4000:]
    assert "5 passed" in done.stdout
    assert tree_digest(project / "snapshots") == digest


def test_second_process_on_one_thread(recorded) -> None:
    project, digest, cache = recorded
    for name in (
        "test_training/aot_backward.fx.txt",
        "test_graph_break/wrapper_code.code.txt",
        "test_dynamic/guards.guards.txt",
    ):
        assert f"test_subset/{name}" in digest
    assert_identical(project, digest, seed="0", TORCHINDUCTOR_CACHE_DIR=cache, OMP_NUM_THREADS="1")


def test_other_compiles_earlier_in_reversed_order(recorded) -> None:
    project, digest, cache = recorded
    assert_identical(
        project,
        digest,
        seed="2",
        TORCHINDUCTOR_CACHE_DIR=cache,
        COMPILE_FIRST="1",
        REVERSE_ORDER="1",
    )


def test_other_checkout_path_on_an_avx2_host(recorded, tmp_path: Path) -> None:
    project, digest, cache = recorded
    other = tmp_path / "somewhere" / "else" / "checkout_b"
    shutil.copytree(project, other)
    assert_identical(
        other, digest, seed="3", TORCHINDUCTOR_CACHE_DIR=cache, ATEN_CPU_CAPABILITY="avx2"
    )


def test_one_test_alone(recorded) -> None:
    project, digest, cache = recorded
    done = run_pytest(
        project, "-k", "test_transformer_block", seed="4", TORCHINDUCTOR_CACHE_DIR=cache
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-4000:]
    assert tree_digest(project / "snapshots") == digest


def test_cold_inductor_cache_under_two_xdist_workers(recorded, tmp_path: Path) -> None:
    project, digest, _ = recorded
    cold = str(tmp_path / "cold")
    assert_identical(project, digest, "-n", "2", seed="6", TORCHINDUCTOR_CACHE_DIR=cold)
