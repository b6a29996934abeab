"""`compile_distributed`: DDP and FSDP2 cases on two gloo ranks, recorded, re-run, changed, broken.

Each pytester run spawns two ranks per case (two interpreters that import
torch): the runs are few and each holds several cases. The full rehearsal
(FSDP2 over the whole model too, Inductor, another path with a cold cache,
`-n 2`, a graph break, an op swap) is `benchmarks/distributed_check.py`.
"""

from __future__ import annotations

import subprocess

import pytest
import torch

from tests.conftest import tree_digest

MODELS = """
import os
import time

import pytest
import torch
import torch.distributed as dist
from torch import nn

PLANT = os.environ.get("PLANT") == "1"


class Block(nn.Module):
    def __init__(self, width=512):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.scale = 1.0

    def forward(self, x):
        return torch.relu(self.lin(x) * self.scale)


class Net(nn.Module):
    def __init__(self, depth=4):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x.sum()
"""

WORKFLOW = (
    MODELS
    + """

def one_rank_differs():
    net = Net()
    if PLANT and dist.get_rank() == 1:
        net.layers[3].scale = 2.0  # its last layer compiles again, on rank 1 alone
    return net


@pytest.mark.compile_snapshot(backend="aot_eager")
def test_ddp(compile_distributed):
    result = compile_distributed(
        Net, torch.randn(8, 512), wrapper="ddp", bucket_cap_mb=2 if PLANT else 1
    )
    assert (result.world_size, result.backend, result.compiled_share) == (2, "gloo", 1.0)


@pytest.mark.compile_snapshot(backend="aot_eager")
def test_fsdp2_per_layer(compile_distributed):
    compile_distributed(one_rank_differs, torch.randn(8, 512), wrapper="fsdp2_per_layer")
"""
)


def test_cases_record_rerun_unchanged_and_planted_changes_fail(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_dist=WORKFLOW)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=2)
    folder = pytester.path / "snapshots" / "test_dist"
    ddp = (folder / "test_ddp" / "summary.txt").read_text()
    assert "ddp buckets: 4\n" in ddp and "compiled ops: 13 of the model's 13 (100%)" in ddp
    assert "  - [DDP: Logger.set_runtime_stats_and_log] " in ddp
    assert "graph breaks in torch's wrappers: 3 of 3 (DDP 3)" in ddp
    assert "bucket_3 = self.bucket_3(" in (folder / "test_ddp" / "ddp_split.fx.txt").read_text()
    assert not (folder / "test_fsdp2_per_layer" / "ddp_split.fx.txt").exists()
    recorded = tree_digest(pytester.path / "snapshots")

    monkeypatch.setenv("PYTHONHASHSEED", "7")
    pytester.runpytest().assert_outcomes(passed=2)
    assert tree_digest(pytester.path / "snapshots") == recorded

    monkeypatch.setenv("PLANT", "1")
    planted = pytester.runpytest()
    planted.assert_outcomes(failed=2)
    planted.stdout.fnmatch_lines(
        ["*ddp buckets 4 -> 3; ops: -bucket_3; *", "-ddp buckets: 4", "+ddp buckets: 3"]
    )
    planted.stdout.fnmatch_lines(
        ["[[]case_0] rank 1 compiled differently from rank 0: graphs 2 -> 3; recompiles 1 -> 2*"]
    )
    assert tree_digest(pytester.path / "snapshots") == recorded


FAULTS = (
    MODELS
    + """

class Crash(Net):
    def forward(self, x):
        if dist.get_rank() == 1:
            raise RuntimeError("rank 1 ran out of luck, as planted")
        return super().forward(x)


class Hang(Net):
    def forward(self, x):
        if dist.get_rank() == 1:
            time.sleep(600)
        return super().forward(x)


class Opaque(Net):
    @torch._dynamo.disable
    def forward(self, x):
        return super().forward(x)


def off_by_one(gm, example_inputs):
    def run(*args):
        return [out + 1 for out in gm(*args)]
    return run


@pytest.mark.compile_snapshot(backend="aot_eager")
def test_crash(compile_distributed):
    compile_distributed(Crash, torch.randn(8, 512))


@pytest.mark.compile_snapshot(backend="aot_eager")
def test_hang(compile_distributed):
    compile_distributed(Hang, torch.randn(8, 512), timeout=20)


@pytest.mark.compile_snapshot(backend=off_by_one)
def test_wrong(compile_distributed):
    compile_distributed(Net, torch.randn(8, 512), wrapper="fsdp2_per_layer")


@pytest.mark.compile_snapshot(backend="aot_eager")
def test_nothing(compile_distributed):
    compile_distributed(Opaque, torch.randn(8, 512))
"""
)


def test_crashing_hanging_wrong_and_uncompiled_cases_fail_with_their_own_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_dist=FAULTS)
    temp = pytester.path / "tmp"
    temp.mkdir()
    # the ranks' folders, to see that none is left; multiprocessing's fork server cannot put its
    # socket in a folder this deep, so the ranks are new interpreters here (forked in the test above)
    monkeypatch.setenv("TMPDIR", str(temp))
    result = pytester.runpytest("--durations=0")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(
        [
            "*test_crash*",
            "[[]case_0] rank 1 raised:",
            "Traceback (most recent call last):",
            '*test_dist.py", line *, in forward',
            "RuntimeError: rank 1 ran out of luck, as planted",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*test_hang*",
            "[[]case_0] ranks 0 and 1 did not finish within the case's timeout (20 s after every rank joined*",
            "rank 1:",
            "*Current thread*",
            '*test_dist.py", line * in forward',
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "[[]case_0] rank 0: compiled (off_by_one) differs from eager (the same wrapper on 2 ranks):",
            "  output: *",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "[[]case_0] compiled almost nothing: of the ops the model's forward runs, 0 of the "
            "model's 13 (0%) ran in compiled code, under min_compiled_share=0.1 (wrapper='ddp')*"
        ]
    )
    assert list(temp.iterdir()) == []
    ranks = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(temp) not in ranks


USAGE = """
import functools

import pytest
import torch
from torch import nn


def make_model():
    return nn.Linear(4, 4)


@pytest.mark.compile_snapshot(backend="eager")
def test_lambda(compile_distributed):
    compile_distributed(lambda: nn.Linear(4, 4), torch.randn(2, 4))


@pytest.mark.compile_snapshot(backend="eager")
def test_instance(compile_distributed):
    compile_distributed(nn.Linear(4, 4), torch.randn(2, 4))


@pytest.mark.compile_snapshot(backend="eager")
def test_world_size(compile_distributed):
    compile_distributed(make_model, torch.randn(2, 4), world_size=4096)


@pytest.mark.compile_snapshot(backend="eager")
def test_wrapper(compile_distributed):
    compile_distributed(make_model, torch.randn(2, 4), wrapper="zero3")


@pytest.mark.compile_snapshot(backend="eager", precompile=True, fullgraph=True)
def test_precompile(compile_distributed):
    compile_distributed(make_model, torch.randn(2, 4))
"""


@pytest.mark.torch_independent
def test_usage_errors_say_how_to_fix_them(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_usage=USAGE)
    result = pytester.runpytest()
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines_random(
        [
            "*usage error: compile_distributed(...): the model factory cannot be pickled *define it at module level, `def make_model(): return Net()`*",
            "*usage error: compile_distributed(...): the first argument is a model (Linear), and a distributed case takes a model factory*",
            "*usage error: compile_distributed(...): world_size=4096 needs 4096 rank processes, and this machine runs * at a time*",
            "*usage error: compile_distributed(...): wrapper='zero3' is not a wrapper: use one of 'ddp', 'fsdp2', 'fsdp2_per_layer'*",
            "*usage error: compile_distributed(...): compile_snapshot(precompile=True) is not for distributed cases*",
        ]
    )
    assert not (pytester.path / "snapshots").exists()


GPU = """
import pytest
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


@pytest.mark.compile_snapshot(backend="inductor")
def test_nccl(compile_distributed):
    x = torch.randn(8, 512, device="cuda")
    result = compile_distributed(Net, x, wrapper="ddp", world_size=1, bucket_cap_mb=1)
    assert result.backend == "nccl" and result.device_key.startswith("cuda-sm")
    assert result.ddp_buckets == 3 and result.kernel_count > 0
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (NCCL)")
def test_world_size_one_nccl_on_a_gpu(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntorchcompile_snapshot_dir = snapshots/{device}\n")
    pytester.makepyfile(test_gpu=GPU)
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    (folder,) = (pytester.path / "snapshots").iterdir()
    assert folder.name.startswith("cuda-sm")
    assert "ddp buckets: 3\n" in (folder / "test_gpu" / "test_nccl" / "summary.txt").read_text()
    pytester.runpytest().assert_outcomes(passed=1)
