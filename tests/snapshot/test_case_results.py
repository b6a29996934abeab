"""What a case's result holds and costs: compile time, lazy artifacts, failures that cannot be swallowed."""

from __future__ import annotations

import pytest

CASES = """
import time
import pytest, torch
from pytest_torchcompile.snapshot.artifacts import catalogue

def slow_backend(gm, example_inputs):
    def run(*args):
        time.sleep(3.0)  # run time of the compiled call, not compile time
        return gm(*args)
    return run

@pytest.mark.compile_snapshot(backend=slow_backend, artifacts=("summary",))
def test_compile_seconds_leave_out_the_run(compile_model):
    result = compile_model(torch.sin, torch.ones(3))
    assert 0 < result.compile_seconds < 3.0, result.compile_seconds

@pytest.mark.compile_snapshot(backend="eager", artifacts=("summary", "transformed_code"))
def test_artifacts_are_built_when_read(compile_model, monkeypatch):
    built = []
    real = catalogue.transformed_code
    monkeypatch.setattr(catalogue, "transformed_code", lambda log: built.append(1) or real(log))
    first = compile_model(torch.sin, torch.ones(3))
    second = first.call(torch.ones(2, 2))  # a recompile
    second.call(torch.ones(2, 2))
    assert built == []
    assert "recompiles: 0" in first.artifacts["summary"] and "recompiles: 1" in second.artifacts["summary"]
    assert second.artifacts["transformed_code"] == second.artifacts["transformed_code"] and built == [1]

@pytest.mark.compile_snapshot(backend="eager")
def test_a_failing_case_is_not_swallowed(compile_model):
    try:
        compile_model(lambda x: x @ torch.ones(3, 5), torch.ones(2, 4))
    except Exception:
        pass
"""


def test_case_results(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cases=CASES)
    result = pytester.runpytest("--update-snapshots", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*test_a_failing_case_is_not_swallowed*", "*[[]case_0[]] eager run failed*"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
