"""Bad input never crashes the plugin: markers, models, outputs, settings, baselines.

Each test drives the plugin as a hostile user would (pytester, a fresh
process) and holds it to one rule: any bad input ends as an
ordinary test failure or a usage error (exit 4) whose first line names what
was wrong and how to fix it; never INTERNALERROR, never a traceback through
the plugin's modules; the plugin's own crash is named as such and the run
goes on. Most use backend="eager"/"aot_eager"; inductor only where the item
is Inductor's.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

from pytest_torchcompile.common.diagnose import compile_stage, first_line, rejected_arguments
from pytest_torchcompile.perf.record import CaseRecord, RecordError
from pytest_torchcompile.snapshot.numerics.check import Tolerance, compare_leaf

#: a line of a traceback that runs through the plugin's own modules
PLUGIN_FRAME = re.compile(r"pytest_torchcompile/[\w/]+\.py:\d+: ")

MODELS = """
import threading
import pytest, torch

class Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)

class Locked(Lin):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
"""


def literal(patterns: list[str]) -> list[str]:
    """fnmatch patterns with `[` and `]` taken literally (`*` stays a wildcard)."""
    return [re.sub(r"[\[\]]", lambda m: f"[{m.group()}]", p) for p in patterns]


def assert_clean(result: pytest.RunResult) -> None:
    """No INTERNALERROR, no Python traceback, no frame of the plugin's modules."""
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    assert "Traceback (most recent call last)" not in text
    assert not PLUGIN_FRAME.search(text), PLUGIN_FRAME.search(text)


def write_tests(pytester: pytest.Pytester, body: str) -> None:
    pytester.makepyfile(test_hostile=MODELS + body)


# --- the marker ----------------------------------------------------------------


def test_bad_marker_values_are_usage_errors_naming_the_keyword(pytester: pytest.Pytester) -> None:
    write_tests(
        pytester,
        """
@pytest.mark.compile_snapshot(backend="eager", artifacts=(["summary"],))
def test_nested_artifacts(compile_model):
    compile_model(Lin(), torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="eager", rtol=float("nan"), atol=float("nan"))
def test_nan_tolerances(compile_model):
    compile_model(Lin(), torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="eager", fp64_multiplier=float("nan"))
def test_nan_multiplier(compile_model):
    compile_model(Lin(), torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="aot_eager", options={"max_autotune": True})
def test_options_under_aot_eager(compile_model):
    compile_model(Lin(), torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="aot_eager", mode="max-autotune")
def test_mode_under_aot_eager(compile_model):
    compile_model(Lin(), torch.randn(2, 4))
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(
        literal(
            [
                "usage error: compile_snapshot(artifacts=...) holds ['summary'], which is not an artifact name; give a flat tuple*",
                "usage error: compile_snapshot(rtol=nan) must be a non-negative number, and finite*numerics=False*",
                "usage error: compile_snapshot(fp64_multiplier=nan) must be a finite number >= 1*",
                "usage error: compile_snapshot(options=...) does nothing with backend 'aot_eager'*use backend='inductor' or drop options=",
                "usage error: compile_snapshot(mode=...) does nothing with backend 'aot_eager'*",
            ]
        )
    )
    assert_clean(result)


def test_two_markers_on_one_test_are_a_usage_error(pytester: pytest.Pytester) -> None:
    write_tests(
        pytester,
        """
@pytest.mark.compile_snapshot(backend="eager")
@pytest.mark.compile_snapshot(backend="aot_eager")
def test_two(compile_model):
    compile_model(Lin(), torch.randn(2, 4))

@pytest.mark.compile_benchmark(backend="eager", max_time=0.05)
@pytest.mark.compile_benchmark(backend="aot_eager", max_time=0.05)
def test_two_benchmarks(compile_benchmark):
    compile_benchmark(Lin(), torch.randn(2, 4))
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        literal(
            [
                "usage error: @pytest.mark.compile_snapshot is applied 2 times to this test; keep one*",
                "usage error: @pytest.mark.compile_benchmark is applied 2 times to this test; keep one*",
            ]
        )
    )
    assert_clean(result)


def test_a_marker_is_checked_even_when_the_test_never_uses_the_fixture(
    pytester: pytest.Pytester,
) -> None:
    write_tests(
        pytester,
        """
pytestmark = pytest.mark.compile_snapshot(backend="eager")  # reaches every test here: fine where unused

@pytest.mark.compile_snapshot(backend="eager", bakend="x")
def test_typo_never_compiles():
    pass

@pytest.mark.compile_snapshot(backend="eager")
def test_marker_without_fixture():
    pass

@pytest.mark.compile_benchmark(treshold=0.2)
def test_benchmark_typo_never_runs():
    pass

def test_plain_test_under_a_module_marker():
    pass
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=3, passed=1)
    result.stdout.fnmatch_lines(
        literal(
            [
                "usage error: compile_snapshot got unknown keyword 'bakend'; allowed keywords: *",
                "usage error: @pytest.mark.compile_snapshot does nothing here: the test does not use the `compile_model` fixture;*",
                "usage error: compile_benchmark got unknown keyword 'treshold'; allowed keywords: *",
            ]
        )
    )
    assert_clean(result)


# --- the model -------------------------------------------------------------------


def test_a_model_that_is_not_callable_is_named_as_such_by_both_fixtures(
    pytester: pytest.Pytester,
) -> None:
    write_tests(
        pytester,
        """
@pytest.mark.compile_snapshot(backend="eager")
def test_number(compile_model):
    compile_model(3, torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="eager")
def test_class_not_instance(compile_model):
    compile_model(Lin, torch.randn(2, 4))

@pytest.mark.compile_benchmark(backend="eager", max_time=0.05)
def test_benchmark_number(compile_benchmark):
    compile_benchmark(3, torch.randn(2, 4))
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        literal(
            [
                "[case_0] usage error: compile_model(model, *inputs) takes an nn.Module or a function first, got int 3; pass the model first*",
                "[case_0] usage error: compile_model(model, ...) got the class Lin itself; pass an instance, e.g. Lin()",
                "[case_0] usage error: compile_benchmark(model, *inputs) takes an nn.Module or a function first, got int 3*",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*rejected the marker*")
    result.stdout.no_fnmatch_line("*eager run failed*")
    assert_clean(result)


def test_awkward_but_valid_models_compile_and_benchmark(pytester: pytest.Pytester) -> None:
    """A module holding a lock (deepcopy fails); a model with a keyword argument named `model`."""
    write_tests(
        pytester,
        """
def takes_model(x, model=None):
    return x + model

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_snapshot(compile_model):
    compile_model(Locked(), torch.randn(2, 4))

@pytest.mark.compile_benchmark(backend="eager", max_time=0.05)
def test_benchmark(compile_benchmark):
    compile_benchmark(Locked(), torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_model_keyword(compile_model):
    compile_model.case("kw")(takes_model, torch.randn(3), model=torch.ones(3))

@pytest.mark.compile_benchmark(backend="eager", max_time=0.05)
def test_benchmark_model_keyword(compile_benchmark):
    compile_benchmark(takes_model, torch.randn(3), model=torch.ones(3))
""",
    )
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=4)
    assert_clean(result)


def test_a_benchmark_model_that_raises_after_some_calls_fails_cleanly(
    pytester: pytest.Pytester,
) -> None:
    write_tests(
        pytester,
        """
CALLS = [0]

def tired(x):
    CALLS[0] += 1
    if CALLS[0] > 40:
        raise RuntimeError("tired after 40 calls")
    return x + 1

@pytest.mark.compile_benchmark(backend="eager", max_time=0.2)
def test_tired(compile_benchmark):
    compile_benchmark(torch.compiler.disable(tired), torch.randn(2, 4))
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        literal(
            [
                "[case_0] the model raised while being timed, after its first eager and compiled calls had succeeded*",
                '*File "*test_hostile.py", line *, in tired',
                "*RuntimeError: tired after 40 calls",
            ]
        )
    )
    assert_clean(result)


# --- outputs -----------------------------------------------------------------------


def test_meta_sparse_and_numpy_outputs_are_compared_not_crashed_on(
    pytester: pytest.Pytester,
) -> None:
    write_tests(
        pytester,
        """
import numpy as np

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_meta(compile_model):
    compile_model(lambda x: x * 2, torch.randn(2, 4, device="meta"))

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_sparse(compile_model):
    compile_model(lambda x: (x * 2).to_sparse(), torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_numpy(compile_model):
    compile_model(lambda x: (x * 2).numpy(), torch.randn(2, 4))
""",
    )
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(passed=3)
    assert_clean(result)


def test_numpy_arrays_are_compared_with_tolerances() -> None:
    import numpy as np

    tolerance = Tolerance()
    assert compare_leaf("output", np.ones(3), np.ones(3), tolerance) is None
    assert compare_leaf("output", np.float32(1.0), np.float32(1.0 + 1e-7), tolerance) is None
    mismatch = compare_leaf("output", np.array([1.0, 2.0]), np.array([1.0, 3.0]), tolerance)
    assert mismatch is not None and mismatch.comparable and mismatch.path == "output[1]"
    assert (
        compare_leaf(
            "output", np.array(["a"], dtype=object), np.array(["a"], dtype=object), tolerance
        )
        is None
    )


def test_sparse_meta_and_nested_tensors_compare_by_value_and_metadata() -> None:
    tolerance = Tolerance()
    a = torch.tensor([[0.0, 1.0], [2.0, 0.0]])
    assert compare_leaf("output", a.to_sparse(), a.clone().to_sparse(), tolerance) is None
    differs = compare_leaf("output", a.to_sparse(), (a * 2).to_sparse(), tolerance)
    assert differs is not None and differs.comparable and "elements exceed" in differs.detail
    layout = compare_leaf("output", a.to_sparse(), a, tolerance)
    assert layout is not None and "layout differs" in layout.detail
    assert (
        compare_leaf(
            "output", torch.empty(2, device="meta"), torch.empty(2, device="meta"), tolerance
        )
        is None
    )
    shape = compare_leaf(
        "output", torch.empty(2, device="meta"), torch.empty(3, device="meta"), tolerance
    )
    assert shape is not None and "shape differs" in shape.detail
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    assert compare_leaf("output", nested, nested.clone(), tolerance) is None
    twice = compare_leaf(
        "output", nested, torch.nested.nested_tensor([torch.ones(2), torch.ones(3) * 2]), tolerance
    )
    assert twice is not None and twice.path == "output.unbind()[1][0]"


def test_an_output_that_cannot_be_compared_says_so_without_blaming_a_stage(
    pytester: pytest.Pytester,
) -> None:
    write_tests(
        pytester,
        """
class Grumpy:
    def __eq__(self, other):
        raise TypeError("Grumpy values do not compare")

@torch.compiler.disable
def grumpy(x):
    return Grumpy()

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_grumpy(compile_model):
    compile_model(lambda x: (x + 1, grumpy(x)), torch.randn(2))
""",
    )
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        literal(
            [
                "[case_0] numerics: cannot compare compiled's results with eager's (set compile_snapshot(numerics=False) to skip the check):",
                "  output[1]: cannot compare Grumpy values (TypeError: Grumpy values do not compare)",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*diverges at stage*")
    assert_clean(result)


# --- what raised, and where ----------------------------------------------------------


def test_compiled_code_failing_at_run_time_is_not_a_compile_failure(
    pytester: pytest.Pytester,
) -> None:
    write_tests(
        pytester,
        """
def raising_backend(gm, example_inputs):
    def run(*args):
        raise RuntimeError("boom at run time")
    return run

@pytest.mark.compile_snapshot(backend=raising_backend)
def test_runtime(compile_model):
    compile_model(Lin(), torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="relu_compile_error_TESTING_ONLY")
def test_backend_compile(compile_model):
    compile_model(lambda x: torch.relu(x) + 1, torch.randn(2, 4))

@pytest.mark.compile_benchmark(backend=raising_backend, max_time=0.05)
def test_benchmark_runtime(compile_benchmark):
    compile_benchmark(Lin(), torch.randn(2, 4))
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        literal(
            [
                "[case_0] compiled code failed at run time (backend raising_backend): the compile finished*",
                '*File "*test_hostile.py", line *, in run',
                "RuntimeError: boom at run time",
                "[case_0] compile failed in stage: backend relu_compile_error_TESTING_ONLY (backend relu_compile_error_TESTING_ONLY)",
                "ReluCompileError",
                "[case_0] compiled code failed at run time (backend raising_backend)*",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*Dynamo tracing*")
    assert_clean(result)


def test_inductor_cpp_compile_error_shows_the_compiler_error_not_its_command_line(
    pytester: pytest.Pytester,
) -> None:
    write_tests(
        pytester,
        """
@pytest.mark.compile_snapshot(options={"cpp.inject_relu_bug_TESTING_ONLY": "compile_error"})
def test_cpp(compile_model):
    compile_model(lambda x: torch.relu(x) + 1, torch.randn(16))
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        literal(
            [
                "[case_0] compile failed in stage: C++/Triton compile (backend inductor)",
                "CppCompileError: the C++ compiler failed:",
                "*error:*",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*CalledProcessError*")
    assert_clean(result)


def test_a_warning_turned_error_is_not_blamed_on_the_marker(pytester: pytest.Pytester) -> None:
    """Under -W error a warning is reported as what it is, with its stage."""
    write_tests(
        pytester,
        """
import warnings

def warning_backend(gm, example_inputs):
    warnings.warn("old API", DeprecationWarning)
    return gm

@pytest.mark.compile_snapshot(backend=warning_backend)
def test_warns_while_compiling(compile_model):
    compile_model(Lin(), torch.randn(2, 4))
""",
    )
    result = pytester.runpytest("-W", "error::DeprecationWarning")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        literal(
            [
                "[case_0] compile failed in stage: backend warning_backend (backend warning_backend)",
                "DeprecationWarning: old API",
                "(a DeprecationWarning turned into an error by -W error or a filterwarnings setting*",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*usage error*")
    assert_clean(result)


def test_torchs_own_import_warning_under_w_error_is_not_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    """Importing Inductor warns (torch.jit.script_method) in torch 2.13: not the user's marker."""
    write_tests(
        pytester,
        """
@pytest.mark.compile_snapshot(artifacts=("summary",))
def test_inductor(compile_model):
    compile_model(lambda x: x + 1, torch.randn(4))
""",
    )
    result = pytester.runpytest("-W", "error::DeprecationWarning", "--update-snapshots")
    if result.ret == 0:
        pytest.skip(f"torch {torch.__version__} does not warn while importing Inductor")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        literal(
            [
                "*DeprecationWarning*",
                "*turned into an error by -W error or a filterwarnings setting*",
            ]
        )
    )
    result.stdout.no_fnmatch_line("*usage error*")
    assert_clean(result)


def test_only_torch_compiles_own_argument_checks_count_as_rejected_arguments() -> None:
    with pytest.raises(Exception) as refused:
        torch.compile(torch.sin, mode="max-autotune", options={"max_autotune": True})
    assert rejected_arguments(refused.value)
    warning = DeprecationWarning("old")
    assert not rejected_arguments(warning)


def test_stage_of_a_plain_exception_is_run_time() -> None:
    try:
        raise RuntimeError("raised by compiled code")
    except RuntimeError as exc:
        assert compile_stage(exc, "inductor") == "run time"


def test_a_long_multi_line_message_keeps_its_end() -> None:
    repr_lines = "\n".join(
        f"  (layer{i}): Linear(in_features=4, out_features=4, bias=True)" for i in range(200)
    )
    exc = TypeError(
        f"Type <class 'Local'> for object Local(\n{repr_lines}\n) cannot be saved. Please define the class at global scope."
    )
    line = first_line(exc)
    assert "\n" not in line and len(line) < 700
    assert line.startswith("TypeError: Type <class 'Local'> for object Local(")
    assert line.endswith("Please define the class at global scope.")


def test_precompile_of_a_local_class_says_the_whole_reason(pytester: pytest.Pytester) -> None:
    if not hasattr(torch.compile(torch.sin, backend="eager"), "aot_compile"):
        pytest.skip(f"torch {torch.__version__} has no aot_compile on compiled functions")
    write_tests(
        pytester,
        """
@pytest.mark.compile_snapshot(backend="aot_eager", precompile=True, fullgraph=True, artifacts=("summary",))
def test_local(compile_model):
    class Local(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x).sin()

    compile_model(Local(), torch.randn(2, 4))
""",
    )
    result = pytester.runpytest("--update-snapshots")
    result.assert_outcomes(failed=1)
    failure = [line for line in result.stdout.lines if line.startswith("[case_0] precompile:")]
    assert failure, result.stdout.str()
    assert failure[0].rstrip().endswith((".", "'")), failure[
        0
    ]  # a whole sentence, not cut inside a repr
    assert "Local" in failure[0]
    assert_clean(result)


# --- benchmark settings and baselines ---------------------------------------------------


def test_benchmark_unknown_inductor_option_is_named_in_one_short_line(
    pytester: pytest.Pytester,
) -> None:
    write_tests(
        pytester,
        """
@pytest.mark.compile_benchmark(options={"max_autotun": True}, max_time=0.05)
def test_typo(compile_benchmark):
    compile_benchmark(Lin(), torch.randn(2, 4))
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        literal(
            [
                "usage error: compile_benchmark(options=...) has unknown Inductor option 'max_autotun'; did you mean 'max_autotune'*"
            ]
        )
    )
    assert max(len(line) for line in result.stdout.lines) < 400
    assert_clean(result)


@pytest.mark.parametrize(
    "ini, message",
    [
        (
            "torchcompile_perf_threads = 100000",
            "ERROR: pytest-torchcompile ini option: torchcompile_perf_threads = '100000' is more than this machine's * CPUs: use at most *",
        ),
        (
            "torchcompile_perf_gate_cpu_times = maybe",
            "ERROR: pytest-torchcompile ini option: torchcompile_perf_gate_cpu_times: invalid truth value 'maybe' (use true or false)",
        ),
        (
            "torchcompile_perf_baseline_dir =",
            "ERROR: pytest-torchcompile ini option: torchcompile_perf_baseline_dir = '' is empty: name a folder relative to the rootdir*",
        ),
    ],
    ids=["threads", "cpu_times", "empty_baseline"],
)
def test_bad_perf_ini_values_are_usage_errors_naming_the_setting(
    pytester: pytest.Pytester, ini: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    write_tests(
        pytester,
        """
@pytest.mark.compile_benchmark(backend="eager", max_time=0.05)
def test_b(compile_benchmark):
    compile_benchmark(Lin(), torch.randn(2, 4))
""",
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(literal([message]))
    assert not (pytester.path / "test_hostile.json").exists()
    assert_clean(result)


DAMAGES = {
    "metrics_list": (lambda case: case.update(metrics=[]), "metrics: [] is not an object"),
    "counters_list": (lambda case: case.update(counters=[]), "counters: [] is not an object"),
    "median_word": (
        lambda case: case["metrics"]["speedup"].update(median="fast"),
        "metrics.speedup.median: 'fast' is not a finite non-negative number",
    ),
    "median_null": (
        lambda case: case["metrics"]["speedup"].update(median=None),
        "metrics.speedup.median: None is not a finite non-negative number",
    ),
    "ci_low_word": (
        lambda case: case["metrics"]["eager_s"].update(ci_low="x"),
        "metrics.eager_s.ci_low: 'x' is not a finite non-negative number",
    ),
    "noise_huge": (
        lambda case: case["settings"].update(noise={"speedup": 1000}),
        "settings.noise.speedup: 1000 is not a spread between 0 and 10",
    ),
}


def test_a_damaged_baseline_case_is_skipped_and_reported_once(pytester: pytest.Pytester) -> None:
    tests = "".join(
        f"""
@pytest.mark.compile_benchmark(backend="eager", max_time=0.05)
def test_{name}(compile_benchmark):
    compile_benchmark(torch.sin, torch.randn(8))
"""
        for name in DAMAGES
    )
    write_tests(pytester, tests)
    pytester.runpytest("--torchcompile-perf-update-baseline").assert_outcomes(passed=len(DAMAGES))
    (path,) = (pytester.path / "perf-baselines").glob("*.json")
    data = json.loads(path.read_text())
    for name, (damage, _) in DAMAGES.items():
        damage(data["cases"][f"test_hostile.py::test_{name}::case_0"])
    path.write_text(json.dumps(data))
    for flags in ((), ("--torchcompile-perf-gate",)):
        result = pytester.runpytest(*flags)
        result.assert_outcomes(passed=len(DAMAGES))
        for name, (_, field) in DAMAGES.items():
            expected = f"skipped the damaged baseline of test_hostile.py::test_{name}::case_0 in perf-baselines/{path.name}: {field}*"
            result.stdout.fnmatch_lines(literal([expected]))
            assert (
                sum(
                    f"test_{name}::case_0 in perf-baselines" in line for line in result.stdout.lines
                )
                == 1
            )
        assert_clean(result)


def test_record_errors_name_the_field() -> None:
    with pytest.raises(RecordError, match=r"^counters.graphs: '1' is not a count"):
        CaseRecord.from_json({"metrics": {}, "counters": {"graphs": "1"}})
    with pytest.raises(RecordError, match=r"^metrics.speedup: \[1\] is not an object"):
        CaseRecord.from_json({"metrics": {"speedup": [1]}, "counters": {}})
    with pytest.raises(RecordError, match=r"^metrics: missing"):
        CaseRecord.from_json({"counters": {}})


# --- the plugin's own crash -------------------------------------------------------------


def test_a_crash_inside_the_plugin_is_reported_and_the_run_goes_on(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
import pytest_torchcompile.snapshot.session as snapshot_session
import pytest_torchcompile.perf.session as perf_session
import pytest_torchcompile.snapshot.fixture as fixture

def broken(*args, **kwargs):
    raise ZeroDivisionError("planted bug")

snapshot_session._row = broken            # pytest_runtest_makereport
perf_session.result_rows = broken         # pytest_terminal_summary
fixture.CompileCase._result = broken     # inside the fixture
fixture.CompileModel.snapshot_texts = broken  # the snapshot check after the test
"""
    )
    write_tests(
        pytester,
        """
@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_fixture_bug(compile_model):
    compile_model(Lin(), torch.randn(2, 4))

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",))
def test_check_bug(compile_model):
    compile_model.case  # no case: the check itself crashes

def test_unmarked(compile_model):
    compile_model(Lin(), torch.randn(2, 4))

@pytest.mark.compile_benchmark(backend="eager", max_time=0.05)
def test_benchmark(compile_benchmark):
    compile_benchmark(Lin(), torch.randn(2, 4))

def test_later_tests_still_run():
    pass
""",
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=3, passed=2)
    result.stdout.fnmatch_lines(
        literal(
            [
                "[case_0] pytest-torchcompile internal error in the fixture: ZeroDivisionError: planted bug*please report it*",
                "pytest-torchcompile internal error in the snapshot check: ZeroDivisionError: planted bug*",
                "pytest-torchcompile internal error in pytest_terminal_summary: ZeroDivisionError: planted bug*",
            ]
        )
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_clean(result)


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_crash_in_a_report_hook_does_not_end_the_run(
    pytester: pytest.Pytester, workers: str
) -> None:
    """Also under xdist: the line travels with the test's report to the controller."""
    pytester.makeconftest(
        """
import pytest_torchcompile.snapshot.session as snapshot_session

def broken(*args, **kwargs):
    raise ZeroDivisionError("planted bug")

snapshot_session._row = broken
"""
    )
    write_tests(
        pytester,
        """
def test_first(compile_model):
    compile_model(Lin(), torch.randn(2, 4))

def test_second():
    pass
""",
    )
    result = pytester.runpytest("-n", workers)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        literal(
            [
                "pytest-torchcompile internal error in pytest_runtest_makereport: ZeroDivisionError: planted bug "
                "(at pytest_torchcompile/snapshot/session.py:* in *); this is a bug in pytest-torchcompile*"
            ]
        )
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert_clean(result)
