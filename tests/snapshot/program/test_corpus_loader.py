"""The corpus benchmark's loader takes `@make_test` functions out of a PyTorch-style test file.

`benchmarks/data/pytorch_make_tests.py` imports a test file given by path
(PyTorch's own is never copied here: this file, written for the test, has
the same shape) and finds each function `make_test` wrapped, with its
argument count, its expected frame count and unittest's skip; a helper of
torch's test package that the installed torch lacks is stood in and named;
each function pickles by name to the same object, as `run_program=True`
needs to hand it to a fresh process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

TESTS_FILE = """
import inspect, unittest
import torch
from torch.testing import assert_close, no_such_helper_in_any_torch

weights = torch.nn.Linear(2, 2)  # built at import: seeded alike in every process


def make_test(fn=None, expected_frame_count=1):
    if fn is None:
        return lambda fn: make_test(fn, expected_frame_count=expected_frame_count)
    nargs = len(inspect.signature(fn).parameters)

    def test_fn(self):
        return (fn, nargs, expected_frame_count)

    return test_fn


class Tests(unittest.TestCase):
    @make_test
    def test_add(a, b):
        return a + b

    @no_such_helper_in_any_torch
    @make_test
    def test_decorated(x):
        return weights(x[:, :2])

    @make_test(expected_frame_count=0)
    def test_nothing():
        return 1

    @unittest.skipIf(True, "requires cuda")
    @make_test
    def test_on_cuda(x):
        return x.cuda()

    def test_plain(self):
        pass
"""

PROBE = """
import sys, pickle, torch, pytorch_make_tests as m
print("CASES", sorted((n, c.nargs, c.expected_frame_count, c.skip) for n, c in m.CASES.items()))
print("MISSING", m.MISSING)
fn = m.CASES["test_add"].fn
print("PICKLED", pickle.loads(pickle.dumps(fn)) is fn, fn(torch.ones(1), torch.ones(1)).item())
print("WEIGHT", sys.modules[m.SOURCE_MODULE].weights.weight.sum().item())
"""


def test_make_test_functions_are_found_with_their_arguments_and_pickle_by_name(
    tmp_path: Path,
) -> None:
    source = tmp_path / "test_shaped_like_pytorchs.py"
    source.write_text(TESTS_FILE)
    env = {
        **os.environ,
        "PTC_PYTORCH_TESTS": str(source),
        "PYTHONPATH": os.pathsep.join(
            [str(REPO / "benchmarks" / "data"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    runs = [
        subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    out = runs[0]
    assert (
        "CASES [('test_add', 2, 1, ''), ('test_decorated', 1, 1, ''), "
        "('test_nothing', 0, 0, ''), ('test_on_cuda', 1, 1, 'requires cuda')]"
    ) in out
    assert "MISSING ['torch.testing.no_such_helper_in_any_torch']" in out
    assert "PICKLED True 2.0" in out
    weight = [line for line in out.splitlines() if line.startswith("WEIGHT")]
    assert weight and all(weight[0] in run for run in runs)  # the same weights in every process
