"""`run_program=True` on a model whose weights are tensor subclasses: the file unwraps them as AOTAutograd does.

Quantized weights (torchao's int8 configs and the like) are tensor
subclasses: Dynamo passes them to the graph as they are, and AOTAutograd's
runtime hands the compiled graph the plain tensors inside each one (what its
`__tensor_flatten__` names, depth first). The file does the same before it
calls the kernels, so an inference graph over such weights runs from the file,
bitwise; and `python program.py` makes such a weight from random inner tensors as
`__tensor_unflatten__` does. The weight here is built on torch's own stand-in for a quantized
tensor (`CustomTensorPlainOut`: two inner tensors, plain outputs), so the test
runs on every torch CI covers; `fixtures/test_other_libraries.py` runs torchao's. A training graph
runs where the subclass weights are frozen (a LoRA adapter trained over a quantized base); one
whose subclass weight takes a gradient is refused, naming why. Driven as a user drives it: pytester, the program run in a fresh process.
"""

from __future__ import annotations

import pytest

CASES = """
import subprocess, sys

import pytest, torch
from torch.testing._internal.custom_tensor import CustomTensorPlainOut
from torch.utils._python_dispatch import return_and_correct_aliasing


class Weight(CustomTensorPlainOut):
    # as a quantized weight: copies, views and moves stay weights (a module is deep-copied and
    # made a parameter, a Linear transposes its weight), every other op gives plain tensors
    KEEP = (torch.ops.aten.clone.default, torch.ops.aten.detach.default, torch.ops.aten._to_copy.default)

    @staticmethod
    def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
        return Weight(inner["elem1"], inner["elem2"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args, kwargs=None):
        kwargs = kwargs or {}
        if func in cls.KEEP or func.is_view:
            w, rest = args[0], args[1:]
            out = Weight(func(w.elem1, *rest, **kwargs), func(w.elem2, *rest, **kwargs))
            return return_and_correct_aliasing(func, args, kwargs, out) if func.is_view else out
        return super().__torch_dispatch__(func, types, args, kwargs)


def ran(result):
    print("RAN", result.program_report.ran)


class Quantized(torch.nn.Module):
    # a Linear whose weight is a subclass holding two tensors, and a plain Linear after it
    def __init__(self, requires_grad=False):
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(8, 8)
        inner = (torch.randn(8, 8), torch.randn(8, 8) * 0.01)
        self.proj.weight = torch.nn.Parameter(Weight(*inner), requires_grad=requires_grad)
        self.out = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.out(torch.relu(self.proj(x)))


@pytest.mark.compile_snapshot(backend="{backend}", artifacts=("summary",), run_program=True)
def test_quantized_inference(compile_model, tmp_path):
    torch.manual_seed(0)
    with torch.no_grad():
        result = compile_model(Quantized().eval(), torch.randn(2, 8))
    ran(result)
    path = result.write_program(tmp_path / "p.py")
    print("UNWRAPS", "flatten_subclasses(args)" in path.read_text())
    if "{backend}" == "aot_eager":  # as a script: the weight made again from random inner tensors
        script = subprocess.run([sys.executable, str(path)], capture_output=True, text=True)
        print("SCRIPT", script.returncode, script.stdout.splitlines()[:1], script.stderr[-2000:])


@pytest.mark.compile_snapshot(backend="{backend}", artifacts=("summary",), run_program=True)
def test_quantized_frozen_training(compile_model):
    # a frozen quantized weight under trained layers (a LoRA adapter over a quantized base)
    torch.manual_seed(0)
    result = compile_model(Quantized(), torch.randn(2, 8, requires_grad=True))
    ran(result)


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("program",), run_program=True)
def test_quantized_training(compile_model):
    torch.manual_seed(0)
    compile_model(Quantized(requires_grad=True), torch.randn(2, 8, requires_grad=True))
"""


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_subclass_weights_run_bitwise_in_inference(pytester: pytest.Pytester, backend: str) -> None:
    pytester.makepyfile(test_cases=CASES.replace("{backend}", backend))
    result = pytester.runpytest("--update-snapshots", "-s", "-p", "no:randomly", "-k", "inference")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RAN*'frame 0 compile 0 (forward)'*", "*UNWRAPS True*"])
    if backend == "aot_eager":
        result.stdout.fnmatch_lines(["*SCRIPT 0 ['ran *"])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_frozen_subclass_weight_runs_bitwise_in_training(
    pytester: pytest.Pytester, backend: str
) -> None:
    """Outputs and the trained layers' gradients, bit for bit: the backward's one None for the
    frozen weight is handed back as AOTAutograd hands it."""
    pytester.makepyfile(test_cases=CASES.replace("{backend}", backend))
    result = pytester.runpytest("--update-snapshots", "-s", "-p", "no:randomly", "-k", "frozen")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RAN*'frame 0 compile 0 (forward)'*"])


def test_a_subclass_weight_that_takes_a_gradient_is_refused_naming_why(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_cases=CASES.replace("{backend}", "aot_eager"))
    result = pytester.runpytest(
        "--update-snapshots", "-p", "no:randomly", "-k", "quantized_training"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*a training graph whose tensor subclass input takes a gradient*"])


def test_a_subclass_weight_whose_metadata_has_no_source_is_named_by_the_script() -> None:
    """The layout's entry for such a weight carries no metadata source: the script names the
    weight and says what to call instead of making up something else."""
    from pytest_torchcompile._torch.program.runtime_module import random_tensor

    spec = ("weight", [4, 4], [4, 1], "torch.float32", "cpu", False, None, "lib:Packed", [], None)
    with pytest.raises(
        TypeError, match=r"proj\.weight is a lib:Packed, a tensor subclass .* no Python form"
    ):
        random_tensor(spec, "proj")
