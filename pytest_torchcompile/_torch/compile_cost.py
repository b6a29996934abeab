"""What one compile cost and what torch's caches did, read in the process that compiled.

torch keeps it in process-wide places: the outcome counters
(`torch._dynamo.utils.counters`: `fxgraph_cache_*`, `autograd_cache_*`,
`select_algorithm_autotune`), one `CompilationMetrics` per frame compile
(`get_compilation_metrics()`: node, op, guard and IR counts, Dynamo's own
compile seconds, Triton's compile microseconds on GPU), the `dynamo_timed`
phase lists (`compilation_time_metrics`: seconds per call of each phase) and
one structured-trace record per cache lookup (`fx_graph_cache_hit`,
`aotautograd_cache_miss` ...), whose JSON holds the key and its
`components`, each a line `[hash] name: value`. `watching` clears them,
catches the lookup records while a compile runs, and reads the rest after.
AOTAutograd writes its key's components only while its logger is at DEBUG
(a re-hash of each part: about 1% of a small model's warm compile here), so
the watch turns that on. torch is imported when a watch starts, not before:
the environment helpers below serve the process that starts the compiling one.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: where Inductor and Triton keep their caches (each compiling process gets a folder of its own)
CACHE_DIR_ENV = "TORCHINDUCTOR_CACHE_DIR"
TRITON_CACHE_ENV = "TRITON_CACHE_DIR"
#: variables that would make a compiling process write trace files or logs (time that is not compiling)
TRACE_ENV = ("TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCH_LOGS")
#: a remote cache would make a cold start warm: `TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE` and its kin
REMOTE_CACHE_ENV = re.compile(r"TORCHINDUCTOR_\w*REMOTE\w*")

#: the caches whose lookups are read, each with the prefix of its trace records and of its counters
CACHES: dict[str, tuple[str, str, str]] = {
    "fx_graph": ("fx_graph_cache_", "inductor", "fxgraph_cache_"),
    "aot_autograd": ("aotautograd_cache_", "aot_autograd", "autograd_cache_"),
}
#: what a lookup can find (torch's `cache_state`)
OUTCOMES = ("hit", "miss", "bypass")
#: what each cache counts: AOTAutograd also the entries a miss saved
COUNTED_OUTCOMES: dict[str, tuple[str, ...]] = {
    "fx_graph": OUTCOMES,
    "aot_autograd": (*OUTCOMES, "saved"),
}
AUTOTUNE_COUNTER = ("inductor", "select_algorithm_autotune")
#: `dynamo_timed` phases whose count is a fact: a warm start runs no codegen and no joint
#: trace; `compile_file` is one run of the C++ compiler
COUNTED_PHASES: dict[str, str] = {
    "codegen": "GraphLowering.codegen",
    "joint_trace": "aot_trace_joint_graph",
    "cpp_compiles": "compile_file",
}
#: phases that wrap others: never named as the phase that grew (the one inside it grew)
OUTER_PHASES = frozenset(
    {
        "_compile.compile_inner",
        "compile_attempt_0",
        "OutputGraph.call_user_compiler",
        "create_aot_dispatcher_function",
        "compile_fx.<locals>.fw_compiler_base",
        "compile_fx.<locals>.bw_compiler",
        "compile_fx_inner",
        "fx_codegen_and_compile",
        "GraphLowering.compile_to_fn",
        "GraphLowering.compile_to_module",
        "backward._backward_impl",
        "gc",
    }
)
#: per-frame `CompilationMetrics` counts that are facts, by the name the plugin gives them
FRAME_COUNTS: dict[str, str] = {
    "graph_nodes": "graph_node_count",
    "graph_ops": "graph_op_count",
    "guards": "guard_count",
    "ir": "ir_count",
}
FRAME_SECONDS = "entire_frame_compile_time_s"
TRITON_COMPILE_US = "triton_compile_time_us"
#: the switches that turn each cache on or off (Inductor's config, functorch's), as facts
CACHE_SWITCHES: dict[str, tuple[str, str]] = {
    "fx_graph_cache": ("torch._inductor.config", "fx_graph_cache"),
    "autotune_local_cache": ("torch._inductor.config", "autotune_local_cache"),
    "force_disable_caches": ("torch._inductor.config", "force_disable_caches"),
    "enable_autograd_cache": ("torch._functorch.config", "enable_autograd_cache"),
}
AOT_CACHE_LOGGER = "torch._functorch._aot_autograd.autograd_cache"
#: a cache key's component line: `[<hash>] <name>: <value>` (the value may span lines)
COMPONENT = re.compile(r"\[(?P<hash>[^\]]+)\] (?P<name>[^:\n]+?): (?P<value>.*)", re.DOTALL)


def compiling_env(env: Mapping[str, str], cache_folder: str) -> dict[str, str]:
    """`env` for a process that compiles with its caches in `cache_folder` and nothing else:
    no remote cache, no trace files or compile logs."""
    kept = {
        name: value
        for name, value in env.items()
        if name not in TRACE_ENV and not REMOTE_CACHE_ENV.fullmatch(name)
    }
    kept[CACHE_DIR_ENV] = f"{cache_folder}/inductor"
    kept[TRITON_CACHE_ENV] = f"{cache_folder}/triton"
    return kept


def import_compiler() -> None:
    """Import what the first compile of a process would (the modules a fork server imports
    first, `preload.MODULES`), so a timed compile times compiling, not importing."""
    from .process.preload import MODULES

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in MODULES:
            importlib.import_module(name)


@dataclass(frozen=True)
class Component:
    """One part of a cache key: its name, torch's hash of it, and its value as torch printed it."""

    name: str
    hash: str
    value: str


@dataclass(frozen=True)
class Lookup:
    """One cache lookup: which cache, what it found, the key and its parts, why it was bypassed."""

    cache: str
    outcome: str
    key: str
    components: tuple[Component, ...]
    bypass_reason: str = ""


@dataclass
class Watched:
    """What a watched compile did; filled in when the watch ends."""

    lookups: list[Lookup] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    phase_seconds: dict[str, float] = field(default_factory=dict)
    phase_counts: dict[str, int] = field(default_factory=dict)
    frame_counts: dict[str, int] = field(default_factory=dict)
    frame_seconds: float = 0.0
    triton_compile_s: float | None = None
    switches: dict[str, str] = field(default_factory=dict)


class _LookupHandler(logging.Handler):
    def __init__(self, found: list[Lookup]) -> None:
        super().__init__(level=logging.DEBUG)
        self.found = found

    def emit(self, record: logging.LogRecord) -> None:
        lookup = _lookup(getattr(record, "metadata", None), getattr(record, "payload", None))
        if lookup is not None:
            self.found.append(lookup)


def _lookup(metadata: object, payload: object) -> Lookup | None:
    if not isinstance(metadata, dict) or not isinstance(payload, str):
        return None
    name = (metadata.get("artifact") or {}).get("name", "")
    for cache, (prefix, _, _) in CACHES.items():
        outcome = name[len(prefix) :] if name.startswith(prefix) else ""
        if outcome in OUTCOMES:
            try:
                info = json.loads(payload)
            except ValueError:
                info = {}
            return Lookup(
                cache,
                outcome,
                str(info.get("key") or ""),
                tuple(parse_components(info.get("components") or [])),
                str(info.get("cache_bypass_reason") or ""),
            )
    return None


def parse_components(lines: list[Any]) -> list[Component]:
    """A key's `components` lines as (name, hash, value); a line of another shape is kept whole."""
    parts = []
    for line in lines:
        found = COMPONENT.fullmatch(str(line))
        if found:
            parts.append(Component(found["name"], found["hash"], found["value"]))
        else:
            parts.append(Component(str(line)[:80], str(line), str(line)))
    return parts


def _record_names() -> frozenset[str]:
    return frozenset(prefix + outcome for prefix, _, _ in CACHES.values() for outcome in OUTCOMES)


@contextlib.contextmanager
def watching(options: Mapping[str, object] | None = None) -> Iterator[Watched]:
    """Clear torch's compile records, catch the cache lookups of what runs inside, read the rest after.

    `options` are the Inductor options the compile is given (`torch.compile(options=...)`),
    which Inductor's config holds only while it compiles: they count in the cache switches.
    """
    from torch._dynamo.utils import (
        clear_compilation_metrics,
        compilation_time_metrics,
        counters,
    )

    from .trace import trace_only_to

    counters.clear()
    clear_compilation_metrics()
    compilation_time_metrics.clear()
    watched = Watched()
    aot_logger = logging.getLogger(AOT_CACHE_LOGGER)
    level, propagate = aot_logger.level, aot_logger.propagate
    quiet = logging.NullHandler()
    aot_logger.setLevel(logging.DEBUG)
    aot_logger.propagate = False
    aot_logger.addHandler(quiet)
    try:
        with trace_only_to(_LookupHandler(watched.lookups), _record_names()):
            yield watched
    finally:
        aot_logger.removeHandler(quiet)
        aot_logger.setLevel(level)
        aot_logger.propagate = propagate
    _read_after(watched, options or {})


def _read_after(watched: Watched, options: Mapping[str, object]) -> None:
    from torch._dynamo.utils import compilation_time_metrics, counters, get_compilation_metrics

    for cache, (_, group, prefix) in CACHES.items():
        for outcome in COUNTED_OUTCOMES[cache]:
            watched.counts[f"{cache}.{outcome}"] = int(counters[group][prefix + outcome])
    watched.counts["autotune"] = int(counters[AUTOTUNE_COUNTER[0]][AUTOTUNE_COUNTER[1]])
    watched.phase_seconds = {name: float(sum(t)) for name, t in compilation_time_metrics.items()}
    watched.phase_counts = {
        fact: len(compilation_time_metrics.get(phase, [])) for fact, phase in COUNTED_PHASES.items()
    }
    frames = get_compilation_metrics()
    watched.frame_counts = {"frames": sum(1 for m in frames if _number(m, FRAME_SECONDS))}
    for fact, metric in FRAME_COUNTS.items():
        values = [_number(m, metric) for m in frames]
        if any(v is not None for v in values):
            watched.frame_counts[fact] = int(sum(v or 0 for v in values))
    watched.frame_seconds = float(sum(_number(m, FRAME_SECONDS) or 0 for m in frames))
    triton = [_number(m, TRITON_COMPILE_US) for m in frames]
    if any(t is not None for t in triton):
        watched.triton_compile_s = sum(t or 0 for t in triton) / 1e6
    watched.switches = cache_switches(options)


def _number(metrics: object, name: str) -> float | None:
    value = getattr(metrics, name, None)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def cache_switches(options: Mapping[str, object]) -> dict[str, str]:
    """Each cache switch as the compile saw it (an Inductor option given to it wins)."""
    found = {}
    for fact, (module, name) in CACHE_SWITCHES.items():
        if name in options:
            found[fact] = repr(options[name])
            continue
        try:
            found[fact] = repr(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):  # a switch this torch does not have
            continue
    return found


def reap_compile_workers() -> None:
    """End Inductor's compile-worker pools, waiting for them, so their CPU time is counted
    (a process's children count once they have ended). On CPU there are none."""
    try:
        from torch._inductor.async_compile import shutdown_compile_workers
    except ImportError:
        return
    shutdown_compile_workers()
