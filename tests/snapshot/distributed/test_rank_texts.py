"""What a distributed case adds to its texts, and how ranks are compared: pure text, no ranks.

The records' real forms on every torch are in the adapter's contract
(`tests/torch_adapter/adapter_contract.py`); here, the plugin's reading of them.
"""

from __future__ import annotations

import dataclasses

import pytest

from pytest_torchcompile._torch.patterns.distributed import (
    break_function,
    ddp_buckets,
    name_ddp_buckets,
)
from pytest_torchcompile.snapshot.artifacts import summary
from pytest_torchcompile.snapshot.distributed.agreement import disagreement
from pytest_torchcompile.snapshot.distributed.report import Share
from pytest_torchcompile.snapshot.distributed.texts import wrapper_break

ROOT = "/home/me/project"
TORCH = "/venv/lib/python3.11/site-packages/torch"


def _record(where: str, explanation: str) -> str:
    return (
        f"Graph break in user code at {where}:12\n"
        "Graph Break Reason: Encountered graph break when attempting to trace CALL\n\n"
        f"{explanation}\n\nTraceback (most recent call last):\n"
        f'  File "{TORCH}/_dynamo/symbolic_convert.py", line 1, in wrapper\n'
        "    DistributedDataParallel FSDPModule (named in the traceback only)\n"
    )


@pytest.mark.torch_independent
@pytest.mark.parametrize(
    "where, explanation, wrapper, function",
    [
        (
            f"{TORCH}/nn/parallel/distributed.py",
            "  Developer debug context: call_method UserDefinedObjectVariable(Logger) set_runtime_stats_and_log [] {}",
            "DDP",
            "Logger.set_runtime_stats_and_log",
        ),
        (
            "/usr/lib/python3.11/contextlib.py",
            "  Developer debug context: module: torch.nn.parallel.distributed, qualname: DistributedDataParallel._inside_ddp_forward, skip reason: ...",
            "DDP",
            "DistributedDataParallel._inside_ddp_forward",
        ),
        (
            f"{TORCH}/distributed/fsdp/_fully_shard/_fsdp_common.py",
            "  Developer debug context: module: torch._dynamo.decorators, qualname: disable",
            "FSDP",
            "disable",
        ),
        (f"{ROOT}/tests/test_train.py", "graph break in loop", None, None),
        # the user's break, whose text names DDP's frames (they called the user's forward)
        (
            f"{ROOT}/tests/test_train.py",
            "  Developer debug context: module: torch.nn.parallel.distributed, qualname: DistributedDataParallel.forward",
            None,
            "DistributedDataParallel.forward",
        ),
    ],
)
def test_breaks_inside_torchs_wrappers_are_told_from_the_users(
    where: str, explanation: str, wrapper: str | None, function: str | None
) -> None:
    record = _record(where, explanation)
    assert wrapper_break(record, ROOT) == wrapper
    assert break_function(record) == function


SPLIT = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[8, 512]"):
        submod_0 = self.submod_0(L_x_)
        submod_1 = self.submod_1(submod_0)
        return (submod_1,)
    class submod_0(torch.nn.Module):
        def forward(self, L_x_): ...
    class submod_1(torch.nn.Module):
        def forward(self, x): ...
"""


@pytest.mark.torch_independent
def test_ddp_buckets_are_counted_and_named() -> None:
    assert ddp_buckets(SPLIT) == 2
    named = name_ddp_buckets(SPLIT.replace("submod_0 = ", "submod = "))  # as renumbered
    assert "bucket_0 = self.bucket_0(L_x_)" in named and "class bucket_1(" in named
    assert "submod" not in named and name_ddp_buckets(named) == named


@pytest.mark.torch_independent
def test_the_summarys_facts_follow_its_counters_and_are_not_read_as_counters() -> None:
    from pytest_torchcompile.common.counters import Counters

    counted = Counters(1, 0, 0, 0, (), (), ())
    plain = summary.write("aot_eager", counted)
    share = Share(12, 13)
    text = summary.write(
        "aot_eager", counted, [("ddp buckets", "4"), ("compiled ops", share.line())]
    )
    assert text == plain + "ddp buckets: 4\ncompiled ops: 12 of the model's 13 (92%)\n"
    read = summary.read(text)  # the facts are read as facts, the counters as before
    assert read.facts == (("ddp buckets", "4"), ("compiled ops", "12 of the model's 13 (92%)"))
    assert dataclasses.replace(read, facts=()) == summary.read(plain)
    assert Share(20, 13).line() == "13 of the model's 13 (100%)" and Share(0, 0).fraction == 1.0


RANK_0 = {
    "summary": "backend: eager\ngraphs: 2\ngraph breaks: 0\nrecompiles: 1\n  - 0/0: reason\nkernels: 0\nframes:\n",
    "guards": "# ===== frame 0 compile 0: forward =====\nTENSOR_MATCH: check_tensor(L['x'], Tensor)\n",
}


@pytest.mark.torch_independent
def test_a_rank_that_compiles_otherwise_fails_with_the_diff() -> None:
    assert disagreement([RANK_0, dict(RANK_0)]) is None
    other = {
        **RANK_0,
        "summary": RANK_0["summary"].replace("recompiles: 1\n", "recompiles: 2\n  - 0/1: other\n"),
    }
    text = disagreement([RANK_0, dict(RANK_0), other, other])
    assert text is not None
    first, why, changed, also, *rest = text.splitlines()
    assert first.startswith("rank 2 compiled differently from rank 0: recompiles 1 -> 2")
    assert "a hang waiting to happen" in why and changed.endswith("summary +2 -1")
    assert also == "(rank 3 differs from rank 0 too)"
    assert (
        "--- rank 0/summary" in rest and "+++ rank 2/summary" in rest and "+recompiles: 2" in rest
    )
    # a difference of text alone between ranks fails too
    renamed = {**RANK_0, "guards": RANK_0["guards"] + "\n"}
    assert disagreement([RANK_0, renamed]) is not None
