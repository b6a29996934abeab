"""`precompile=True`: aot_compile, save, load in a fresh process, compare with eager.

Each pytester run here is a subprocess (the project's `--runpytest=subprocess`)
and each loaded call another fresh process, so the cases are grouped into two
runs: one where the round trip works (then a call its guards reject), one with
everything that must fail before any process is started.
"""

from __future__ import annotations

from importlib.metadata import version

import pytest

from pytest_torchcompile.snapshot.case_table import PrecompileRow, format_precompile_table

MODELS = """
import pytest, torch

class Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        return torch.relu(self.lin(x)) + self.calls

class Branchy(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1

def scaled(x, *, beta=1.0):
    return torch.nn.functional.softplus(x * beta)
"""

#: torch 2.10-2.12's aot_compile saves only Inductor's output (see `_torch/aot.py`);
#: 2.13 on also saves aot_eager's, which compiles in a fraction of Inductor's time.
TORCH = tuple(int(part) for part in version("torch").split(".")[:2])
SAVES_AOT_EAGER = TORCH >= (2, 13)
ROUND_TRIP_BACKEND = "aot_eager" if SAVES_AOT_EAGER else "inductor"

ROUND_TRIP = (
    MODELS
    + """
precompiled = pytest.mark.compile_snapshot(backend="BACKEND", precompile=True, artifacts=("summary",))

@precompiled
def test_module_and_function(compile_model):
    torch.manual_seed(0)
    with torch.no_grad():  # the fresh process runs under the same grad mode
        result = compile_model(Lin(), torch.randn(2, 4))
        result = result.call(torch.randn(2, 4))  # buffer state carried into the next round trip
    report = result.precompile
    assert report.artifact_bytes > 0 and report.save_seconds > 0 and len(report.load_seconds) == 2
    assert compile_model.case("fn")(scaled, torch.randn(3), beta=2.0).precompile is not None

@precompiled
def test_rejected_by_guards(compile_model):
    torch.manual_seed(0)
    with torch.no_grad():
        result = compile_model(Lin(), torch.randn(2, 4))
        result.call(torch.randn(5, 4))
"""
)

FAILURES = (
    MODELS
    + """
@pytest.mark.compile_snapshot(backend="eager", precompile=True, artifacts=("summary",))
def test_graph_break(compile_model):
    compile_model(Branchy(), torch.ones(3))

@pytest.mark.compile_snapshot(backend="eager", precompile=True, artifacts=("summary",))
def test_local_class(compile_model):
    class Local(torch.nn.Module):
        def forward(self, x):
            return x.sin()
    compile_model(Local(), torch.ones(3))

@pytest.mark.compile_snapshot(precompile="yes")
def test_bad_value(compile_model):
    compile_model(torch.sin, torch.ones(3))
"""
)


def test_round_trip_passes_then_a_call_its_guards_reject_names_the_guard(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_pre=ROUND_TRIP.replace("BACKEND", ROUND_TRIP_BACKEND))
    result = pytester.runpytest("--update-snapshots", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]case_0[]] precompile: the loaded artifact rejected these inputs (a precompiled artifact cannot recompile); the guard that failed:",
            "*tensor 'L[[]'x'[]]' size mismatch at index 0. expected 2, actual 5",
            "*torch.compile precompile round trips (aot_compile, save, load in a fresh process)*",
            "case*artifact KiB*aot_compile s*save s*load s*calls",
            "test_pre.py::test_module_and_function [[]case_0[]]*2",
            "test_pre.py::test_module_and_function [[]fn[]]*1",
            "test_pre.py::test_rejected_by_guards [[]case_0[]]*1",
        ]
    )
    summary = (
        pytester.path / "snapshots/test_pre/test_module_and_function/case_0/summary.txt"
    ).read_text()
    assert (
        "seconds" not in summary and "KiB" not in summary
    )  # times and sizes vary: never snapshotted


def test_precompile_failures_before_any_fresh_process(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pre=FAILURES)
    result = pytester.runpytest("--update-snapshots", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*precompile=True requires fullgraph: aot_compile saves one graph, but Dynamo had to break this model's graph 1 time(s):",
            "*  - Data-dependent branching at test_pre.py:<N>",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*precompile: the model and inputs must be picklable*class importable there (defined at module level)*Local*"
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*usage error: compile_snapshot(precompile='yes') is not allowed; expected one of True, False"
        ]
    )


def test_a_torch_that_cannot_precompile_says_so_and_since_when(pytester: pytest.Pytester) -> None:
    """No torch without `aot_compile` can be installed here, so one is made by taking its loader away."""
    pytester.makeconftest("import torch\ndel torch.compiler.load_compiled_function\n")
    pytester.makepyfile(
        test_pre=MODELS
        + """
@pytest.mark.compile_snapshot(backend="eager", precompile=True, artifacts=("summary",))
def test_old_torch(compile_model):
    compile_model(scaled, torch.ones(3))
"""
    )
    result = pytester.runpytest("--update-snapshots", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]case_0[]] precompile=True: the installed torch * cannot precompile: *(torch has them since 2.10)"
        ]
    )


@pytest.mark.skipif(
    SAVES_AOT_EAGER,
    reason="torch 2.13 and later save aot_eager's output; this message is for 2.10-2.12 (CI's 2.11 leg runs it)",
)
def test_a_backend_this_torch_cannot_save_says_which_backend_can(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_pre=MODELS
        + """
@pytest.mark.compile_snapshot(backend="aot_eager", precompile=True, artifacts=("summary",))
def test_aot_eager(compile_model):
    compile_model(scaled, torch.ones(3))
"""
    )
    result = pytester.runpytest("--update-snapshots", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]case_0[]] precompile=True: the installed torch * cannot precompile backend 'aot_eager': *use backend='inductor'*"
        ]
    )


@pytest.mark.parametrize("value", [1, "yes", None])
def test_precompile_keyword_must_be_a_bool(value: object) -> None:
    from pytest_torchcompile.snapshot.spec import CompileSpec, SpecError

    with pytest.raises(
        SpecError,
        match=r"compile_snapshot\(precompile=.*\) is not allowed; expected one of True, False",
    ):
        CompileSpec(precompile=value)


def test_precompile_table_is_aligned() -> None:
    rows = [
        PrecompileRow("t.py::a", "case_0", 2048, 1.234, 0.0042, 2.5, 3),
        PrecompileRow("t.py::b", "x", 10, 0.1, 0.001, 0.3, 1),
    ]
    assert format_precompile_table(rows) == [
        "case              artifact KiB  aot_compile s  save s  load s  calls",
        "t.py::a [case_0]           2.0           1.23   0.004    2.50      3",
        "t.py::b [x]                0.0           0.10   0.001    0.30      1",
    ]
