"""How torch prints what its distributed wrappers do under Dynamo: DDP's split graph, the graph
breaks inside DDP's and FSDP's own code, the profiler's name for a compiled frame's run."""

from __future__ import annotations

import re

#: a part of DDP's split graph (Dynamo's DDPOptimizer), `self.submod_3(...)`: one bucket
DDP_BUCKET_CALL = re.compile(r"\bself\.submod_(\d+)\(")
#: the parts' names in the split graph's text (`submod_0`, and `submod` once renumbered)
DDP_PART_NAME = re.compile(r"\bsubmod(?:_(\d+))?\b")
#: torch's wrappers by their source files, where a graph break's record locates it
WRAPPER_FILES = (
    ("FSDP", re.compile(r"torch/distributed/(?:fsdp|_composable)/")),
    ("DDP", re.compile(r"torch/nn/parallel/distributed\.py")),
)
#: torch's wrappers by the module or class a graph break's record names: a function of DDP's
#: that Dynamo skips is located at the standard library's `contextlib.py`, and its record
#: names `DistributedDataParallel._inside_ddp_forward` of `torch.nn.parallel.distributed`
WRAPPER_NAMES = (
    ("FSDP", re.compile(r"module: torch\.distributed\.(?:fsdp|_composable)\b|qualname: FSDP\w*\.")),
    (
        "DDP",
        re.compile(
            r"module: torch\.nn\.parallel\.distributed\b|qualname: DistributedDataParallel\."
        ),
    ),
)
#: where a graph-break record's own text ends and the traceback of Dynamo's frames starts
_TRACEBACK = "Traceback (most recent call last)"
#: the function a break record's debug context names (`qualname: X`), or a method call's
_BREAK_QUALNAME = re.compile(r"qualname: ([\w.<>]+)")
_BREAK_METHOD = re.compile(r"call_method \w+\((\w+)\) (\w+)")
#: the profiler's event for one run of a compiled frame: `Torch-Compiled Region: 4/0`
COMPILED_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")


def ddp_buckets(split_graph: str) -> int:
    """The parts (buckets) DDP's split graph calls, in one `optimize_ddp_split_graph` payload."""
    return len(set(DDP_BUCKET_CALL.findall(split_graph)))


def name_ddp_buckets(text: str) -> str:
    """The split graph's parts named as what they are, `bucket_0`, `bucket_1`, ...: another
    bucket size reads as buckets added or removed."""
    return DDP_PART_NAME.sub(lambda m: f"bucket_{m.group(1) or 0}", text)


def wrapper_at(path: str) -> str | None:
    """The torch wrapper (`DDP`, `FSDP`) whose source file `path` is, or None."""
    for wrapper, pattern in WRAPPER_FILES:
        if pattern.search(path):
            return wrapper
    return None


def wrapper_named(payload: str) -> str | None:
    """The torch wrapper a graph-break record's explanation names as the code Dynamo could not
    trace (`module: torch.nn.parallel.distributed, qualname: DistributedDataParallel...`), or None."""
    head = payload.split(_TRACEBACK, 1)[0]
    for wrapper, pattern in WRAPPER_NAMES:
        if pattern.search(head):
            return wrapper
    return None


def break_function(payload: str) -> str | None:
    """The function a graph-break record says Dynamo did not trace (`Logger.set_runtime_stats_and_log`)."""
    head = payload.split(_TRACEBACK, 1)[0]
    method = _BREAK_METHOD.search(head)
    if method:
        return f"{method[1]}.{method[2]}"
    qualname = _BREAK_QUALNAME.search(head)
    return qualname[1] if qualname else None


def compiled_region(event_name: str) -> tuple[int, int] | None:
    """(frame id, compile id) of a profiler event that is one run of a compiled frame, else None."""
    match = COMPILED_REGION.match(event_name)
    return (int(match[1]), int(match[2])) if match else None
