"""pytest side of benchmarks: flags and ini options, the `compile_benchmark` marker and fixture.

Loaded by `plugin.py` (`pytest_plugins`); like it, it does not import torch.
The options are read once into a `PerfSettings`, from which `pytest_configure`
makes the run's `PerfSession` (`session.py`: the hooks); the tables and files
are `report/`'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..common.files import unwritable
from ..common.hooks.flags import Given, Option, add_option_ini, get_option_ini, warn_renamed
from ..common.hooks.session import close_session, open_session
from ..common.options import folder_problem, number_problem
from .compile_time.request import from_environment
from .compile_time.runner import child_arguments
from .gate import GateSettings
from .session import XDIST_SKIP, PerfSession, PerfSettings, bench_key
from .spec import MARKER, BenchmarkSpec
from .timing import TimingSettings

if TYPE_CHECKING:
    from .fixture import CompileBenchmark

GATE_MODES = ("on", "strict")
CONTENTION_MODES = ("inconclusive", "ignore")

perf_key = pytest.StashKey[PerfSession]()


def gate_mode(given: Given) -> str | None:
    """The gate mode as given (`--torchcompile-perf-gate`, `=strict`); None without the flag.

    Checked here, not by argparse: pytest parses the command line once before
    `pytest_load_initial_conftests` gives a path after the flag back.
    """
    if given.value is not None and given.value not in GATE_MODES:
        raise pytest.UsageError(
            f"{given.source}: {given.value!r} is not a gate mode: use {GATE.flag} or {GATE.flag}=strict"
        )
    return given.value


def file_path(value: str) -> str:
    if not value.strip() or value.endswith(("/", os.sep)):
        raise ValueError("must name a file, e.g. perf.json")
    return _named(value)


def folder(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty: name a folder relative to the rootdir, e.g. perf-baselines")
    return _named(value)


def _named(value: str) -> str:
    """`value` unless no file system takes it as a name (`folder_problem`)."""
    problem = folder_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def number_between(low: float, high: float, example: str) -> Callable[[str], float]:
    """A converter to a float strictly between `low` and `high`."""

    def convert(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise ValueError("is not a number") from None
        problem = number_problem(number, low, high, example)
        if problem is not None:
            raise ValueError(problem)
        return number

    return convert


def at_least_one(value: str, why: str = "") -> int:
    """An integer of at least 1 (`why` says what more gives, in the message)."""
    try:
        count = int(value)
    except ValueError:
        raise ValueError("is not an integer") from None
    if count < 1:
        raise ValueError(f"must be at least 1{why}")
    return count


def threads(value: str) -> int:
    """At least 1 and at most this machine's CPUs: more threads than cores time the scheduler, and
    torch crashes on absurd counts (100000 ended the process with a segfault)."""
    count = at_least_one(value)
    cpus = os.cpu_count() or 1
    if count > cpus:
        raise ValueError(f"is more than this machine's {cpus} CPUs: use at most {cpus}")
    return count


def runs(value: str) -> int:
    """Cold/warm pairs per case: at least 1 (with fewer than 2 a side, compile CPU time has no interval)."""
    return at_least_one(value, " (5 or more gives compile CPU time an interval to judge with)")


def contention(value: str) -> str:
    if value not in CONTENTION_MODES:
        raise ValueError(f"is not a contention mode: use {' or '.join(CONTENTION_MODES)}")
    return value


UPDATE = Option(
    "perf_update_baseline",
    "record this run's compile_benchmark results as this machine's baseline",
    ini=False,
    flag_kwargs={"action": "store_true", "default": False},
    old_flag="--perf-update-baseline",
)
GATE = Option(
    "perf_gate",
    "compare compile_benchmark results with the baseline and fail the run on a regression; "
    "=strict also fails on INCONCLUSIVE (e.g. a missing baseline)",
    ini=False,
    flag_kwargs={"nargs": "?", "const": "on", "metavar": "strict"},
    old_flag="--perf-gate",
)
BASELINE_DIR = Option(
    "perf_baseline_dir",
    "baseline folder, relative to the rootdir (default perf-baselines)",
    default="perf-baselines",
    convert=folder,
    flag_kwargs={"metavar": "DIR"},
    old_flag="--perf-baseline-dir",
    old_ini="torchcompile_perf_baseline",
)
REPORT = Option(
    "perf_report",
    "write the benchmark and gate results as JSON",
    ini=False,
    convert=file_path,
    flag_kwargs={"metavar": "PATH"},
    old_flag="--perf-report",
)
BENCHMARK_JSON = Option(
    "perf_benchmark_json",
    "write the benchmark results in pytest-benchmark's JSON format (for pytest-benchmark compare)",
    ini=False,
    convert=file_path,
    flag_kwargs={"metavar": "PATH"},
    old_flag="--perf-benchmark-json",
)
#: the gate's own defaults: the options' (and their help's) come from them, so the two cannot part
_DEFAULTS = GateSettings()
THRESHOLD = Option(
    "perf_threshold",
    f"smallest relative regression that fails the gate (default {_DEFAULTS.threshold} = {_DEFAULTS.threshold * 100:.0f}%%)",
    default=_DEFAULTS.threshold,
    convert=number_between(0.0, 1.0, "a fraction, e.g. 0.1 for 10%"),
    flag_kwargs={"metavar": "FRACTION"},
)
CONFIDENCE = Option(
    "perf_confidence",
    f"confidence of the gate's intervals (default {_DEFAULTS.confidence})",
    default=_DEFAULTS.confidence,
    convert=number_between(0.5, 1.0, "e.g. 0.95"),
    flag_kwargs={"metavar": "LEVEL"},
)
MAX_TIME = Option(
    "perf_max_time",
    "seconds of timing per benchmark case, before re-measuring (default 1.0)",
    default=1.0,
    convert=number_between(0.0, float("inf"), "seconds of timing per measurement"),
    flag_kwargs={"metavar": "SECONDS"},
)
THREADS = Option(
    "perf_threads",
    "intra-op threads benchmarks are pinned to (default 1)",
    default=1,
    convert=threads,
    flag_kwargs={"metavar": "N"},
)
CONTENTION = Option(
    "perf_contention",
    "inconclusive (default): a regression measured under CPU contention is INCONCLUSIVE, "
    "not FAIL; ignore: judge as if the machine had been quiet",
    default=CONTENTION_MODES[0],
    convert=contention,
    flag_kwargs={"metavar": "MODE"},
)
GATE_CPU_TIMES = Option(
    "perf_gate_cpu_times",
    "also gate CPU wall times per call when the baseline is this machine's",
    default=False,
    ini_type="bool",
    flag_kwargs={"action": "store_true"},
)
COMPILE_RUNS = Option(
    "perf_compile_runs",
    "cold and warm compiles per compile_time=True case, each in a fresh process (default 5)",
    default=5,
    convert=runs,
    flag_kwargs={"metavar": "N"},
)
COMPILE_THRESHOLD = Option(
    "perf_compile_threshold",
    f"smallest growth of compile CPU time that fails the gate (default {_DEFAULTS.compile_threshold} = {_DEFAULTS.compile_threshold * 100:.0f}%%)",
    default=_DEFAULTS.compile_threshold,
    convert=number_between(0.0, 10.0, "a fraction, e.g. 0.25 for 25%"),
    flag_kwargs={"metavar": "FRACTION"},
)
OPTIONS = (
    UPDATE,
    GATE,
    BASELINE_DIR,
    REPORT,
    BENCHMARK_JSON,
    THRESHOLD,
    CONFIDENCE,
    MAX_TIME,
    THREADS,
    CONTENTION,
    GATE_CPU_TIMES,
    COMPILE_RUNS,
    COMPILE_THRESHOLD,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    for option in OPTIONS:
        add_option_ini(parser, option)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(args: list[str]) -> None:
    """`--torchcompile-perf-gate PATH` gates and runs PATH, as pytest reads any flag followed by a path.

    The flag's mode is optional (`--torchcompile-perf-gate=strict`), so
    argparse would take a path after the flag as the mode; a word after it
    that is not a mode is given back to the command line as a test path.
    """
    for i, arg in enumerate(args[:-1]):
        if arg in (GATE.flag, GATE.old_flag) and args[i + 1] not in GATE_MODES:
            args[i] = f"{arg}=on"


def settings_from_config(config: pytest.Config) -> PerfSettings:
    """Every perf flag and ini option, read and checked once."""
    mode = gate_mode(get_option_ini(config, GATE))
    gate = GateSettings(
        threshold=get_option_ini(config, THRESHOLD).value,
        confidence=get_option_ini(config, CONFIDENCE).value,
        strict=mode == "strict",
        gate_cpu_times=bool(get_option_ini(config, GATE_CPU_TIMES).value),
        ignore_contention=get_option_ini(config, CONTENTION).value == "ignore",
        compile_threshold=get_option_ini(config, COMPILE_THRESHOLD).value,
    )
    baseline = get_option_ini(config, BASELINE_DIR)
    report, bench_json = (get_option_ini(config, o).value for o in (REPORT, BENCHMARK_JSON))
    return PerfSettings(
        baseline_dir=Path(config.rootpath) / baseline.value,
        update=bool(get_option_ini(config, UPDATE).value),
        gate=gate if mode else None,
        timing=TimingSettings(
            max_time=get_option_ini(config, MAX_TIME).value, confidence=gate.confidence
        ),
        threads=get_option_ini(config, THREADS).value,
        report=Path(report) if report else None,
        benchmark_json=Path(bench_json) if bench_json else None,
        threshold=gate.threshold,
        baseline_setting=baseline.source,
        compile_runs=get_option_ini(config, COMPILE_RUNS).value,
        child_arguments=tuple(
            child_arguments(config.getini("addopts"), config.invocation_params.args)
        ),
        compiling=from_environment(),
    )


def _check_run(config: pytest.Config, settings: PerfSettings, worker: bool) -> None:
    """Before any test runs: what this run asks of benchmarks is possible."""
    if settings.compiling is not None:  # a fresh process compiling one case for compile_time=True
        return
    distributed = config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))
    if distributed and not worker and (settings.gate or settings.update):
        raise pytest.UsageError(
            f"{GATE.flag} and {UPDATE.flag} need benchmarks to run, and compile_benchmark does not run "
            "in pytest-xdist workers: run them with -n 0 (or -p no:xdist)"
        )
    if settings.update and not worker:
        _check_baseline_folder(settings)


def _check_baseline_folder(settings: PerfSettings) -> None:
    """A baseline folder an update could not write is a usage error."""
    folder = settings.baseline_dir
    blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise pytest.UsageError(
            f"{settings.baseline_setting} names {folder}, but {blocker} is a file: name a folder"
        )
    problem = unwritable(folder)
    if problem is not None:
        raise pytest.UsageError(
            f"{UPDATE.flag} cannot write the baseline folder {folder} ({settings.baseline_setting}): "
            f"{problem}; nothing was run or written"
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{BenchmarkSpec.marker_signature()}: time eager against compiled and gate on the baseline (pytest-torchcompile)",
    )
    warn_renamed(config, OPTIONS)
    settings = settings_from_config(config)
    worker = hasattr(config, "workerinput")
    _check_run(config, settings, worker)
    session = PerfSession(settings, Path(config.rootpath), worker)
    open_session(config, perf_key, session, "torchcompile-perf-session")


def pytest_unconfigure(config: pytest.Config) -> None:
    close_session(config, perf_key)


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test that uses the fixture without the marker gets the bare marker, so that
    `-m "not compile_benchmark"` leaves out every benchmark (a snapshot job's run) and
    `-m compile_benchmark` selects them all (the benchmark job's)."""
    uses_fixture = "compile_benchmark" in getattr(item, "fixturenames", ())
    if uses_fixture and item.get_closest_marker(MARKER) is None:
        item.add_marker(MARKER)


@pytest.fixture
def compile_benchmark(request: pytest.FixtureRequest) -> Iterator[CompileBenchmark]:
    """Time a model (or function) eager against compiled; returns a BenchmarkResult per call."""
    session = request.config.stash[perf_key]
    if session.worker:
        pytest.skip(XDIST_SKIP)
    benchmark = session.benchmark_for(request.node)
    request.node.stash[bench_key] = benchmark
    yield benchmark
    benchmark.release()
