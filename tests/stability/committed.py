"""The zoo and the real-model suites give byte-identical snapshots whatever ran before them.

The checks themselves; each suite's are collected by a test module of its own
(`test_committed_zoo_stable.py`, `test_committed_real_models_stable.py`,
`test_committed_other_libraries_stable.py`), so that two xdist workers run two
suites' checks at once (`--dist loadfile` keeps a module on one worker, and
each suite's runs are minutes long).

The committed snapshots of `fixtures/test_real_models.py`,
`fixtures/test_other_libraries.py` and `fixtures/test_zoo.py` (recorded by
`pytest fixtures --update-snapshots` in the project's own checkout) are
copied, one suite at a time, with the suite into another folder, and the
suite re-runs there WITHOUT `--update-snapshots` under each variation below.
A differing artifact fails that run, and the snapshot tree must be untouched.

Each run has a hash seed of its own (`PYTHONHASHSEED`, `SEEDS`), one of them
0 (hash randomisation off): a set's order, and what a library derives from it,
differs between them as it does between two CI runs.

Economy: the first run (another checkout path, an empty Inductor cache) is the
only cold one; the others reuse the cache it filled. Each variation is one
pytest process over the suite (or one test of it, for `-k`), and two
disturbances share a process where neither undoes the other: the reversed
order runs with hash randomisation off, the two xdist workers each compile a
dozen unrelated functions first, and the real-model suites' shuffled order,
after their libraries ran eagerly, runs with hash randomisation off (those
suites skip the reversed and xdist runs: another order and another process
state are what the shuffled run gives them, and the zoo runs both on every
leg; the real models are the slowest suites CI runs). The zoo's reversed run is
also on an AVX2-only CPU and its one-test-alone run on one thread (`HOSTS`), so
every torch leg varies the host without a fresh recording of its own. A
difference then names each disturbance of its run; rerun with one of them alone
(`REVERSE_ORDER=1`, `COMPILE_FIRST=1`, `SHUFFLE_SEED`, `EAGER_FIRST=1`,
`PYTHONHASHSEED`, `ATEN_CPU_CAPABILITY=avx2`, `OMP_NUM_THREADS=1`) to tell which.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from fixtures import REAL_MODELS_SNAPSHOT_DIR, other_libraries
from pytest_torchcompile.snapshot.files.placeholders import installed_torch_minor, resolve
from tests.conftest import REPO, tree_digest
from tests.stability.test_fresh_snapshots_stable import REVERSE_CONFTEST

#: the project's `torchcompile_snapshot_dir` (pyproject.toml), which each copy's ini repeats
PROJECT_FOLDER = "snapshots/{torch}/{device}"

#: the copy's conftest: the variations of `REVERSE_CONFTEST` (`REVERSE_ORDER`, `COMPILE_FIRST`), a
#: shuffled order (`SHUFFLE_SEED`), and other tests of the same libraries first (`EAGER_FIRST`:
#: every model of the real-model suites called eagerly at session start, as earlier tests that
#: used those libraries leave the process: tensordict's memo of classes, transformers' registries
#: and einops' backends filled)
VARIATIONS_CONFTEST = (
    REVERSE_CONFTEST.replace(
        "def pytest_collection_modifyitems(items):\n",
        "def pytest_collection_modifyitems(items):\n"
        "    if os.environ.get('SHUFFLE_SEED'):\n"
        "        __import__('random').Random(int(os.environ['SHUFFLE_SEED'])).shuffle(items)\n",
    )
    + """

def pytest_configure(config):
    if os.environ.get("EAGER_FIRST"):
        import importlib, inspect, torch

        for name in ("fixtures.other_libraries", "fixtures.real_models"):
            module = importlib.import_module(name)
            for build in vars(module).values():
                if inspect.isfunction(build) and build.__module__ == name and build.__annotations__.get("return") == "Case":
                    try:
                        model, args, kwargs = build()
                    except ImportError:
                        continue
                    with torch.no_grad():
                        model(*args, **kwargs)
"""
)


@dataclass(frozen=True)
class Suite:
    """A committed suite: its test module, how many tests it has, a `-k` that selects one of them,
    whether its re-runs run the programs too (each forked from the session's fork server)."""

    module: str
    tests: int
    alone: str
    programs: bool = False
    #: the snapshot folder template its tests resolve on this Python (the project's ini, or the
    #: marker's `snapshot_dir`: the real models keep a set per Python from 3.12 on)
    folder: str = PROJECT_FOLDER
    #: a `-k` every run of it takes (`tests` counts what it selects), None for the whole suite
    select: str | None = None
    #: the warm runs it skips (`SEEDS`' names), to keep a CI leg short
    skips: frozenset[str] = frozenset({"reversed", "xdist"})
    #: whether its warm runs also run on other hosts (`HOSTS`): the zoo's, which every CI leg
    #: runs (the fresh-snapshot checks that vary the host run on the torch 2.13 legs alone)
    hosts: bool = False


#: the runs whose disturbance does not depend on the Python: on 3.11 alone (CI's 3.13 leg runs
#: each suite cold and reversed with hash randomisation off)
PYTHON_FREE = frozenset({"xdist", "alone", "eager_first"})


def per_python(suite: Suite, select: str, tests: int) -> Suite:
    """A real-model suite as this Python checks it: whole against the project's set on 3.11, and
    on 3.12+ against its own set (`REAL_MODELS_SNAPSHOT_DIR`), checked on CI's 3.13 leg, a few
    of the models whose set differs there (`select`, `tests` of them), cold at another path and
    reversed with hash randomisation off (what a Python changes: the frames and the order Dynamo
    guards in). A test alone and the shuffled run after the libraries ran eagerly do not depend
    on the Python and run on 3.11, and the suite's own module in the same leg checks every model."""
    if REAL_MODELS_SNAPSHOT_DIR is None:
        return suite
    return replace(
        suite,
        tests=tests,
        folder=REAL_MODELS_SNAPSHOT_DIR,
        select=select,
        skips=PYTHON_FREE,
    )


SUITES = {
    # BART alone: transformers' registry then holds only BART's classes (after the others, many more)
    "real_models": per_python(
        Suite("test_real_models.py", 10, "bart"), "bart or convnext or wav2vec2", 3
    ),
    # the einops model alone: the first of its process to parse an einops pattern; on 3.12+ two
    # models of one library whose guards (wraps, dedented docstrings, einops' comprehensions),
    # graph (a comprehension's frame) and break reasons (`CALL_KW`) differ there
    "other_libraries": per_python(
        Suite("test_other_libraries.py", 19, "einops_mixer"), "vq_codebook or vq_residual_fsq", 2
    ),
    # the zoo's small models: its programs' runs cost each re-run a few seconds
    "zoo": Suite(
        "test_zoo.py",
        10,
        "graph_break",
        programs=True,
        hosts=True,
        skips=frozenset({"eager_first"})
        | (PYTHON_FREE if REAL_MODELS_SNAPSHOT_DIR else frozenset()),
    ),
}
#: another host under a run (`Suite.hosts`), a disturbance neither undoes nor depends on the
#: run's own: another thread count (Inductor's CPU code reads it) and an AVX2-only CPU
HOSTS = {
    "alone": {"OMP_NUM_THREADS": "1"},
    "reversed": {"ATEN_CPU_CAPABILITY": "avx2"},
}
#: the hash seed of each run: another one per run, and one run with hash randomisation off
SEEDS = {
    "cold": "1",
    "reversed": "0",
    "xdist": "2",
    "alone": "3",
    "eager_first": "0",
}


@dataclass(frozen=True)
class Checkout:
    """The suite at another path, its snapshot digest, the cache its first run filled, that run's output."""

    suite: Suite
    project: Path
    digest: dict[str, str]
    cache: str
    first_run: str

    def run(self, variation: str, *args: str, **env: str) -> str:
        if variation in self.suite.skips:
            pytest.skip(
                f"{self.suite.module} on Python {sys.version_info[0]}.{sys.version_info[1]} skips the "
                f"{variation} run (Suite.skips: what it checks runs elsewhere, see the module's docstring)"
            )
        host = HOSTS.get(variation, {}) if self.suite.hosts else {}
        return run_suite(
            self.project,
            self.suite,
            *args,
            TORCHINDUCTOR_CACHE_DIR=self.cache,
            PYTHONHASHSEED=SEEDS[variation],
            **host,
            **env,
        )

    def assert_identical(self, output: str, passed: int | None = None) -> None:
        passed = self.suite.tests if passed is None else passed
        assert f"{passed} passed" in output and " failed" not in output, output
        assert tree_digest(self.project / "snapshots") == self.digest


def run_suite(cwd: Path, suite: Suite, *args: str, **env: str) -> str:
    # snapshot bytes are what the warm re-runs check; the cold run proves the programs of the
    # real models (each run of a large model's program costs seconds), every re-run the zoo's
    environ = {**os.environ, "PTC_FIXTURES_RUN_PROGRAM": "1" if suite.programs else "0", **env}
    command = [
        sys.executable,
        "-m",
        "pytest",
        f"fixtures/{suite.module}",
        "-q",
        # a difference the comparison reads as text only is a difference all the same: these
        # runs check that nothing differs, and text-only differences would pass silently
        "--torchcompile-strict-text",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore",
        *(("-k", suite.select) if suite.select else ()),
        *args,
    ]
    done = subprocess.run(
        command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=1800
    )
    return done.stdout[-6000:] + done.stderr[-2000:]


def checkout_fixture(name: str) -> Any:
    """The module-scoped `checkout` fixture of one suite of `SUITES`, for that suite's test module."""

    @pytest.fixture(scope="module")
    def checkout(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
        return checked_out(SUITES[name], tmp_path_factory)

    return checkout


def checked_out(suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    """The suite and its committed snapshots at another path, run once there with a cold cache."""
    project = tmp_path_factory.mktemp("elsewhere") / "checkout_b"
    committed = committed_set(suite)
    if not committed.is_dir():
        pytest.skip(
            f"no committed snapshots of {suite.module} for this torch and Python ({committed.relative_to(REPO)}): "
            "the real-model set is recorded on torch 2.13"
        )
    missing = missing_libraries(suite)
    if missing and not os.environ.get("CI"):
        pytest.skip(f"{suite.module} needs {', '.join(missing)}: pip install -e '.[models]'")
    copy_suite(suite, project)
    cache = str(tmp_path_factory.mktemp("inductor_cache"))
    # the cold run is the suite's plain run too (`run_here_instead`): its programs run, as there
    first_run = run_suite(
        project,
        suite,
        TORCHINDUCTOR_CACHE_DIR=cache,
        PYTHONHASHSEED=SEEDS["cold"],
        PTC_FIXTURES_RUN_PROGRAM="1",
    )
    return Checkout(suite, project, tree_digest(project / "snapshots"), cache, first_run)


#: the test of a suite's stability module that runs the whole suite against its committed set
COLD_RUN = "test_committed_snapshots_match_at_another_path_with_a_cold_cache"


def run_here_instead(items: list[pytest.Item], updating: bool) -> list[pytest.Item]:
    """The items of a suite's own test module (`fixtures/test_zoo.py`, ...) whose every test the
    cold run of its stability module, collected in the same session, runs as they are (at another
    path, with a cold cache, programs and scripts included, failing on any difference from the
    committed set): running them here too would compile each model twice, a few CI minutes. Kept
    where the cold run would not cover them: it is deselected or skips (no committed set for this
    torch and Python, a library missing), it runs part of the suite (`Suite.select`), or the run
    writes snapshots (`updating`), which the cold run never does."""
    if updating:
        return []
    collected = {item.nodeid for item in items}
    covered = set()
    for name, suite in SUITES.items():
        cold = f"tests/stability/test_committed_{name}_stable.py::{COLD_RUN}"
        if (
            cold in collected
            and suite.select is None
            and committed_set(suite).is_dir()
            and not missing_libraries(suite)
        ):
            covered.add(f"fixtures/{suite.module}")
    return [item for item in items if item.nodeid.split("::")[0] in covered]


def committed_set(suite: Suite, torch_minor: str | None = None) -> Path:
    """The suite's committed snapshot folder for this torch (or `torch_minor`) and Python."""
    torch_minor = torch_minor or installed_torch_minor() or ""
    sets = Path(resolve(suite.folder, torch=torch_minor, device="cpu"))
    return REPO / sets / "fixtures" / suite.module.removesuffix(".py")


def copy_suite(suite: Suite, project: Path, torch_minor: str | None = None) -> None:
    """The suite's models and tests, its committed set, the variations' conftest and an ini, at `project`."""
    (project / "fixtures").mkdir(parents=True)
    # the suites' models (every module but the other suites' tests) and this suite's tests
    for source in (REPO / "fixtures").glob("*.py"):
        if not source.name.startswith("test_") or source.name == suite.module:
            shutil.copy(source, project / "fixtures" / source.name)
    committed = committed_set(suite, torch_minor)
    shutil.copytree(committed, project / committed.relative_to(REPO))
    (project / "conftest.py").write_text(VARIATIONS_CONFTEST)
    (project / "pytest.ini").write_text(
        f"[pytest]\npythonpath = .\ntorchcompile_snapshot_dir = {PROJECT_FOLDER}\n"
    )


def missing_libraries(suite: Suite) -> list[str]:
    """The model libraries a suite imports that are not installed (the `models` extra)."""
    return other_libraries.missing_libraries() if suite.module == "test_other_libraries.py" else []


def test_committed_snapshots_match_at_another_path_with_a_cold_cache(checkout: Checkout) -> None:
    assert len(checkout.digest) >= 5 * checkout.suite.tests  # the default artifacts at least
    checkout.assert_identical(checkout.first_run)


def test_reversed_order_with_hash_randomisation_off(checkout: Checkout) -> None:
    checkout.assert_identical(checkout.run("reversed", REVERSE_ORDER="1"))


def test_xdist_two_workers_after_a_dozen_unrelated_compiles(checkout: Checkout) -> None:
    # each worker compiles the dozen first (the conftest's session start runs in workers)
    checkout.assert_identical(checkout.run("xdist", "-n", "2", COMPILE_FIRST="1"))


def test_shuffled_after_the_same_libraries_ran_eagerly(checkout: Checkout) -> None:
    # the slice of benchmarks/library_stability.py that CI runs (the zoo uses no library)
    checkout.assert_identical(checkout.run("eager_first", SHUFFLE_SEED="4", EAGER_FIRST="1"))


def test_one_test_alone(checkout: Checkout) -> None:
    checkout.assert_identical(checkout.run("alone", "-k", checkout.suite.alone), passed=1)
