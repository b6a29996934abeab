"""torch.distributed as the distributed cases use it: process groups, wrappers, what ran compiled.

What a rank needs of torch beyond one compile: the process group (gloo or
NCCL, joined through a file store: no port to clash with another run), the
wrappers (DDP, FSDP2's `fully_shard`), DTensor shards read as plain local
tensors, the ops a model's forward runs in eager (a torch-function mode),
and how often each compiled frame ran (the profiler's `Torch-Compiled
Region` events). Their texts are read in `patterns/distributed.py`.
"""

from __future__ import annotations

import contextlib
import datetime
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist

from .patterns.distributed import compiled_region

# --- the process group ------------------------------------------------------


def backend_for(device: str) -> str:
    """The process group backend for ranks on `device` (`cuda`: NCCL; anything else: gloo)."""
    return "nccl" if device == "cuda" else "gloo"


def gpus() -> int:
    """How many CUDA devices this machine has (no CUDA context is created)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def join(store_file: str, rank: int, world_size: int, backend: str, timeout_s: float) -> None:
    """Join the process group through a file store; a collective waits at most `timeout_s`."""
    if backend == "nccl":
        torch.cuda.set_device(rank)
    dist.init_process_group(
        backend,
        init_method=f"file://{store_file}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=timeout_s),
    )


def leave() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def any_rank(flag: bool) -> bool:
    """Whether `flag` is true on any rank (every rank must call it: a collective)."""
    device = torch.device("cuda") if dist.get_backend() == "nccl" else torch.device("cpu")
    value = torch.tensor([int(flag)], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def barrier() -> None:
    dist.barrier()


# --- the wrappers ------------------------------------------------------------


def ddp(model: torch.nn.Module, device: str, options: dict[str, object]) -> torch.nn.Module:
    """`DistributedDataParallel(model, **options)`, on this rank's GPU for NCCL."""
    from torch.nn.parallel import DistributedDataParallel

    if device == "cuda" and "device_ids" not in options:
        options = {**options, "device_ids": [torch.cuda.current_device()]}
    return DistributedDataParallel(model, **options)


def fully_shard(module: torch.nn.Module, options: dict[str, object]) -> torch.nn.Module:
    """FSDP2's `fully_shard(module, **options)` (the module itself, now sharded)."""
    from torch.distributed.fsdp import fully_shard as shard

    return shard(module, **options)


def local(value: Any) -> Any:
    """A DTensor (FSDP2's parameters and gradients) as this rank's shard; anything else as it is.

    Compared as DTensors, two ranks would each start collectives of their own.
    """
    from torch.distributed.tensor import DTensor

    return value.to_local() if isinstance(value, DTensor) else value


# --- how much of the model ran compiled ------------------------------------


class _TensorCalls(torch.overrides.TorchFunctionMode):
    """Counts the torch functions and tensor methods called that return a tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        result = func(*args, **(kwargs or {}))
        if isinstance(result, torch.Tensor) or (
            isinstance(result, (tuple, list)) and any(isinstance(r, torch.Tensor) for r in result)
        ):
            self.calls += 1
        return result


def eager_ops(forward: Callable[[], object]) -> int:
    """The torch calls that return a tensor while `forward()` runs in eager, without autograd:
    how Dynamo counts a graph's ops (the calls it records as nodes)."""
    counting = _TensorCalls()
    with torch.no_grad(), counting:
        forward()
    return counting.calls


@contextlib.contextmanager
def compiled_runs() -> Iterator[Counter[tuple[int, int]]]:
    """While inside, count each run of a compiled frame: (frame id, compile id) -> runs,
    filled when the block ends (the profiler's events; Dynamo marks each run when it profiles)."""
    runs: Counter[tuple[int, int]] = Counter()
    activities = [torch.profiler.ProfilerActivity.CPU]
    # acc_events: one profiling cycle either way; without it torch warns that cycles are cleared
    with torch.profiler.profile(activities=activities, acc_events=True) as profile:
        yield runs
    for event in profile.events():
        region = compiled_region(event.name)
        if region is not None:
            runs[region] += 1
