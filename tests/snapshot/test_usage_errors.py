"""Bad marker arguments and bad models fail with a message naming what is wrong."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_torchcompile.snapshot.spec import CompileSpec, SpecError


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bakend": "eager"}, "unknown keyword 'bakend'; allowed keywords: backend, mode"),
        ({"fullgraph": "yes"}, "fullgraph='yes') is not allowed; expected one of True, False"),
        ({"fullgraph": 1}, "fullgraph=1) is not allowed"),
        (
            {"artifacts": ("summary", "asm")},
            "unknown artifact 'asm'; allowed: summary, dynamo_graph",
        ),
        ({"artifacts": "summary"}, "must be a tuple of artifact names"),
        ({"backend": 3}, "must be a backend name (str) or a callable"),
        ({"mode": "fastest"}, "mode='fastest') is not allowed"),
        ({"rtol": 1e-3}, "give both rtol= and atol=, or neither"),
        ({"atol": -1.0, "rtol": 0.0}, "atol=-1.0) must be a non-negative number"),
        ({"mode": "max-autotune", "options": {"x": 1}}, "mode= and options= cannot both be given"),
        ({"options": ["x"]}, "must be a dict of Inductor config names"),
    ],
)
def test_spec_errors_name_the_keyword(kwargs: dict, message: str) -> None:
    with pytest.raises(SpecError) as info:
        CompileSpec.from_marker((), kwargs)
    assert message in str(info.value)


def test_spec_rejects_positional_and_keeps_callable_backends() -> None:
    with pytest.raises(SpecError, match="keyword arguments only"):
        CompileSpec.from_marker(("eager",), {})

    def my_backend(gm, example_inputs):
        return gm

    spec = CompileSpec.from_marker((), {"backend": my_backend, "artifacts": ["summary", "summary"]})
    assert spec.backend_name == "my_backend"
    assert spec.artifacts == ("summary",)


def test_usage_error_fails_the_test_not_a_traceback(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest, torch

        @pytest.mark.compile_snapshot(backend="eager", artifacts=("summary", "asm"))
        def test_bad_artifact(compile_model):
            compile_model(torch.sin, torch.randn(2))

        @pytest.mark.compile_snapshot(backend="indcutor")
        def test_bad_backend(compile_model):
            compile_model(torch.sin, torch.randn(2))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*usage error: compile_snapshot(artifacts=...) has unknown artifact 'asm'; allowed: summary,*",
            "*usage error: compile_snapshot(backend='indcutor') is not a registered backend; known: *inductor*",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_plugin_module_does_not_import_torch() -> None:
    code = "import sys, pytest_torchcompile.plugin; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.fresh_interpreter  # it checks that torch is not imported
def test_help_lists_options_and_marker_without_torch(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import sys\ndef pytest_unconfigure():\n    print('TORCH LOADED' if 'torch' in sys.modules else 'NO TORCH')\n"
    )
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        ["*--update-snapshots*", "*--torchcompile-snapshot-dir*", "*NO TORCH*"]
    )
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["*compile_snapshot(backend='inductor', mode=None, *"])


def test_a_case_name_used_twice_is_a_usage_error_for_both_fixtures(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import pytest, torch

        @pytest.mark.compile_snapshot(backend="eager", artifacts=())
        def test_snapshot(compile_model):
            compile_model.case("small")(torch.sin, torch.randn(2))
            compile_model.case("small")(torch.cos, torch.randn(2))

        @pytest.mark.compile_benchmark(backend="eager", max_time=0.05)
        def test_benchmark(compile_benchmark):
            compile_benchmark.case("small")(torch.sin, torch.randn(2))
            compile_benchmark.case("small")(torch.cos, torch.randn(2))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*compile_model.case('small') is used twice in this test; give each case its own name*",
            "*compile_benchmark.case('small') is used twice in this test; give each case its own name*",
        ]
    )
