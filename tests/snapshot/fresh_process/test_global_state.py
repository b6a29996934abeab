"""The switches a compiled call ran under reach its fresh process: the program's run and the precompile round trip.

Every switch Dynamo's GLOBAL_STATE guard holds (TF32 matmul precision,
deterministic algorithms, default dtype, thread count, autocast) and
inference mode (with the inference tensors the case's copies are, made
under it) are set again in the fresh process, so its guards accept the call
the compiled model ran and it computes what that call computed. A torch
function mode on the stack is an object no fresh process can be given: the
check is refused, naming it. One pytester session (a subprocess) for all.
"""

from __future__ import annotations

from importlib.metadata import version

import pytest

#: torch 2.10-2.12's aot_compile saves only Inductor's output (see `_torch/aot.py`)
TORCH = tuple(int(part) for part in version("torch").split(".")[:2])
ROUND_TRIP_BACKEND = "aot_eager" if TORCH >= (2, 13) else "inductor"

SESSION = """
import contextlib, pytest, torch

class Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))

program = pytest.mark.compile_snapshot(backend="eager", artifacts=("summary",), run_program=True)
precompiled = pytest.mark.compile_snapshot(backend="BACKEND", artifacts=("summary",), precompile=True)

@contextlib.contextmanager
def switched():
    # every process-wide switch away from its default, given back after the test
    threads, dtype = torch.get_num_threads(), torch.get_default_dtype()
    torch.set_float32_matmul_precision("high")  # cuBLAS TF32 on: allow_tf32 in the guard
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision("highest")
        torch.use_deterministic_algorithms(False)
        torch.set_default_dtype(dtype)
        torch.set_num_threads(threads)

def started(report):
    print("STARTED", report.started)

@program
def test_program_under_process_wide_switches(compile_model):
    with switched():
        started(compile_model(Lin(), torch.randn(2, 4)).program_report)

@program
def test_program_under_inference_mode(compile_model):
    x = torch.randn(2, 4)  # made outside; the case's copies are made inside, inference tensors
    with torch.inference_mode():
        result = compile_model(Lin(), x)
    with torch.no_grad():  # the same model, now outside inference mode: its tensors stay as they are
        started(result.call(torch.randn(2, 4)).program_report)

@program
def test_program_under_a_torch_function_mode(compile_model):
    with torch.device("cpu"):
        compile_model(Lin(), torch.randn(2, 4))

@precompiled
def test_precompiled_under_switches_and_inference_mode(compile_model):
    with switched(), torch.inference_mode():
        started(compile_model(Lin(), torch.randn(2, 4)).precompile)

@precompiled
def test_precompiled_under_autocast(compile_model):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        started(compile_model(Lin(), torch.randn(2, 4)).precompile)
"""


def test_every_switch_reaches_the_fresh_process_and_a_mode_is_refused_by_name(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_switches=SESSION.replace("BACKEND", ROUND_TRIP_BACKEND))
    result = pytester.runpytest("--update-snapshots", "-s")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_program_under_a_torch_function_mode _*",
            "*run_program=True: the call ran under DeviceContext (a torch function or dispatch mode), an "
            "object no fresh process can be given: call the compiled model outside it",
        ]
    )
    # forked from the session's server, one per call
    started = [line.split("STARTED ", 1)[1] for line in result.outlines if "STARTED " in line]
    assert sorted(started) == ["['forked', 'forked']", *["['forked']"] * 3], result.outlines
