"""A model or compile that goes wrong fails the test with a readable reason."""

from __future__ import annotations

import pytest


def test_eager_failure_says_so_with_the_original_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest, torch

        def broken(x):
            return x @ torch.ones(3, 5)

        @pytest.mark.compile_snapshot(backend="eager")
        def test_m(compile_model):
            compile_model(broken, torch.randn(2, 4))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*eager run failed*",
            "*in broken*",
            "*return x @ torch.ones(3, 5)*",
            "*RuntimeError: *mat1 and mat2 shapes cannot be multiplied (2x4 and 3x5)",
        ]
    )


def test_fullgraph_break_shows_reason_and_user_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest, torch

        def branchy(x):
            if x.sum() > 0:
                return x + 1
            return x - 1

        @pytest.mark.compile_snapshot(backend="eager", fullgraph=True)
        def test_m(compile_model):
            compile_model(branchy, torch.ones(3))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*fullgraph=True but Dynamo had to break the graph:*",
            "*Data-dependent branching*",
            "*if x.sum() > 0:*",
        ]
    )


def test_user_backend_error_names_the_backend(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest, torch

        def picky_backend(gm, example_inputs):
            raise NotImplementedError("picky_backend cannot lower sin")

        @pytest.mark.compile_snapshot(backend=picky_backend)
        def test_m(compile_model):
            compile_model(torch.sin, torch.ones(3))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*compile failed in stage: backend picky_backend (backend picky_backend)*",
            "*picky_backend cannot lower sin*",
        ]
    )


def test_cpp_compile_error_names_the_stage(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest, torch

        @pytest.mark.compile_snapshot(options={"cpp.inject_relu_bug_TESTING_ONLY": "compile_error"})
        def test_m(compile_model):
            compile_model(torch.relu, torch.randn(16))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*compile failed in stage: C++/Triton compile (backend inductor)*"]
    )


def test_wrong_numerics_fail_with_path_and_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest, torch

        def heads(x):
            return {"logits": torch.relu(x), "aux": (x.sum(), 3)}

        @pytest.mark.compile_snapshot(options={"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"})
        def test_m(compile_model):
            compile_model(heads, torch.linspace(-1, 1, 16).reshape(4, 4))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]case_0[]] compiled (inductor) differs from eager:",
            "diverges at stage: inductor",
            "stages re-run: dynamo ok, aot_autograd ok, decompositions ok",
            "narrowed by torch's compiler bisector: inductor lowerings*(relu)",
            "  output[[]'logits'[]][[]2, 3[]]: compiled 1.46667, eager 0.466667; max abs error 1, max rel error inf; "
            "15 of 16 elements exceed rtol=1.3e-06, atol=1e-05; fp64 reference: compiled rmse * > 3 x eager rmse * + atol",
        ]
    )
    result.stdout.no_fnmatch_line("*output[[]'aux'*")
    result.stdout.no_fnmatch_line("*DEBUG*torch.__trace*")


def test_gradients_are_compared_by_parameter_name(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest, torch

        def shift_grads(gm, example_inputs):
            # a buggy backend: the forward is right, the gradient of the weight is off
            from torch._dynamo.backends.common import aot_autograd
            def bw(g, inputs):
                for node in g.graph.nodes:
                    if node.op == "output":
                        with g.graph.inserting_before(node):
                            first = node.args[0][0]
                            bad = g.graph.call_function(torch.ops.aten.mul.Tensor, (first, 2.0))
                        node.args = ((bad, *node.args[0][1:]),)
                g.recompile()
                return g
            return aot_autograd(fw_compiler=lambda g, i: g, bw_compiler=bw)(gm, example_inputs)

        @pytest.mark.compile_snapshot(backend=shift_grads)
        def test_m(compile_model):
            torch.manual_seed(0)
            compile_model(torch.nn.Linear(4, 2), torch.randn(3, 4))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*differs from eager:*",
            "diverges at stage: shift_grads",
            "  grad of weight[[]*[]]: compiled *, eager *",
        ]
    )
    result.stdout.no_fnmatch_line("*grad of bias*")


MODEL_MISTAKES = """
import pytest, torch

def generates(x):
    yield x + 1

def exits(x):
    raise SystemExit(3)

MARK = pytest.mark.compile_snapshot(backend="eager", artifacts=())

@MARK
def test_generator(compile_model):
    compile_model(generates, torch.randn(3))

@MARK
def test_exit(compile_model):
    compile_model(exits, torch.randn(3))

@pytest.mark.compile_benchmark(backend="eager")
def test_bench_generator(compile_benchmark):
    compile_benchmark(generates, torch.randn(3))

@pytest.mark.compile_benchmark(backend="eager")
def test_bench_exit(compile_benchmark):
    compile_benchmark(exits, torch.randn(3))
"""


def test_the_models_own_mistakes_are_blamed_on_the_model(pytester: pytest.Pytester) -> None:
    """A generator is not blamed on Dynamo; `sys.exit()` in the model shows the model's line only."""
    pytester.makepyfile(test_m=MODEL_MISTAKES)
    result = pytester.runpytest()
    result.assert_outcomes(failed=4)
    generator = (
        "*[[]case_0[]] usage error: the model returned a generator (generates), whose values do not "
        "exist until it is consumed, so eager and compiled cannot be compared or timed*"
    )
    exits = [
        "*[[]case_0[]] eager run failed (the model itself raised, before any compile):",
        '*File "*test_m.py", line 7, in exits',
        "*SystemExit: 3",
    ]
    result.stdout.fnmatch_lines([generator, *exits, generator, *exits])
    text = result.stdout.str()
    assert "diverges at stage" not in text and "pytest_torchcompile/" not in text, text
