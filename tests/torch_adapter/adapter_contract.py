"""The torch adapter's contract on a real compile (run in a fresh process by test_torch_adapter.py).

Each test compiles something small and checks that what `_torch` promises
holds on the installed torch: the trace records arrive under the streams
the plugin knows, the bytecode hook sees the compile id, the guard tree
reads as rows whose code parses in the known formats, Dynamo's metrics
count compile time, errors are classified, Inductor's output code and a
graph-break record match the formats, a compile's cost and cache facts read
cold then warm (`compile_cost`), and a precompiled function saves, loads and
names the guard that rejects an input. Compiling moves Dynamo's
process-global counters, so this file is never collected with the rest of
the suite (its name does not start with `test_`).

    python -m pytest tests/torch_adapter/adapter_contract.py
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from pytest_torchcompile._torch import (
    aot,
    compile_cost,
    config,
    dynamo,
    errors,
    formats,
    guard_tree,
    metrics,
    trace,
)
from pytest_torchcompile._torch.patterns import dynamo as dynamo_names


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[trace.TraceEvent] = []

    def emit(self, record: logging.LogRecord) -> None:
        event = trace.decode(record)
        if event is not None:
            self.events.append(event)


def relu_plus_one(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x) + 1


def branchy(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:
        return x * 2
    return x - 1


def compiled_events(fn, *args, backend: str = "aot_eager", **settings) -> list[trace.TraceEvent]:
    dynamo.reset()
    handler = Collect()
    with trace.trace_only_to(handler), config.patched(settings or None):
        torch.compile(fn, backend=backend)(*args)
    return handler.events


def test_trace_records_arrive_under_the_known_streams() -> None:
    events = compiled_events(relu_plus_one, torch.randn(2, 3))
    streams = {e.stream for e in events}
    assert {"dynamo_graph", "aot_inference", "guards"} <= streams
    assert streams <= set(formats.TRACE_RECORDS.values())
    assert {(e.frame_id, e.compile_id) for e in events} == {(0, 0)}


def test_trace_only_to_detaches_other_handlers_and_puts_them_back() -> None:
    from torch._logging._internal import trace_log

    other = Collect()
    trace_log.addHandler(other)
    try:
        with trace.trace_only_to(None):
            assert other not in trace_log.handlers
        assert other in trace_log.handlers
    finally:
        trace_log.removeHandler(other)


def test_bytecode_hook_sees_both_codes_and_the_compile_id() -> None:
    dynamo.reset()
    seen = []
    with dynamo.bytecode_hook(
        lambda original, transformed: seen.append(
            (original, transformed, dynamo.current_compile_id())
        )
    ):
        torch.compile(relu_plus_one, backend="eager")(torch.randn(2, 3))
    assert dynamo.current_compile_id() is None
    ((original, transformed, compile_id),) = seen
    assert original is relu_plus_one.__code__ and compile_id == (0, 0)
    assert [n for n in transformed.co_names if dynamo_names.COMPILED_CALL.match(n)]
    assert dynamo_names.COUNTED_NAME.match(
        next(n for n in transformed.co_names if n.startswith(dynamo_names.COMPILED_FN_PREFIX))
    )


def test_guard_tree_reads_rows_in_the_known_formats() -> None:
    dynamo.reset()
    torch.compile(relu_plus_one, backend="eager")(torch.randn(2, 3))
    ((frame_id, compile_id, rows),) = list(guard_tree.cached_guards(relu_plus_one.__code__))
    assert (frame_id, compile_id) == (0, 0)
    tensor = next(r for r in rows if r.kind == formats.TENSOR_MATCH)
    match = formats.parse_tensor_match(tensor.code)
    assert match is not None and match.source == "L['x']" and match.dtype == "torch.float32"
    assert (
        match.backend_key == "CPU"
        and match.keywords["size"] == [2, 3]
        and match.keywords["stride"] == [3, 1]
    )
    state = next(r for r in rows if r.kind == formats.GLOBAL_STATE)
    assert formats.GLOBAL_STATE_SEPARATOR in state.code
    assert any(formats.ID_CHECK.search(r.code) for r in rows)  # G['torch'] is guarded by id


def test_dynamic_shapes_guard_in_the_epilogue() -> None:
    dynamo.reset()
    torch.compile(relu_plus_one, backend="eager", dynamic=True)(torch.randn(4, 3))
    ((_, _, rows),) = list(guard_tree.cached_guards(relu_plus_one.__code__))
    assert any(r.kind == guard_tree.EPILOGUE for r in rows) or any(
        "2 <= L['x'].size()[0]" in r.code for r in rows
    )


def test_metrics_count_compile_time_and_clear() -> None:
    metrics.clear()
    compiled_events(relu_plus_one, torch.randn(2, 3))
    assert metrics.frame_compile_seconds() > 0
    metrics.clear()
    assert metrics.frame_compile_seconds() == 0.0


def test_compile_cost_reads_a_cold_then_a_warm_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counters, compile metrics, phase lists and lookup records, as `watching` reads them:
    a cold compile in an empty cache folder misses and runs codegen, the same compile again
    (Dynamo's caches reset) hits on disk and runs none."""
    monkeypatch.setenv(compile_cost.CACHE_DIR_ENV, str(tmp_path))
    compile_cost.import_compiler()
    seen = []
    for _ in range(2):
        dynamo.reset()
        with torch.no_grad(), compile_cost.watching() as watched:
            torch.compile(relu_plus_one)(torch.randn(8, 16))
        seen.append(watched)
    cold, warm = seen
    assert cold.counts["fx_graph.miss"] >= 1 and warm.counts["fx_graph.hit"] >= 1
    assert cold.phase_counts["codegen"] >= 1 and warm.phase_counts["codegen"] == 0
    assert set(compile_cost.COUNTED_PHASES.values()) & set(cold.phase_seconds)
    assert cold.frame_counts["frames"] == 1 and cold.frame_counts["graph_nodes"] > 0
    assert cold.frame_seconds > 0 and warm.counts["autotune"] == 0
    fx = [x for x in warm.lookups if x.cache == "fx_graph"]
    assert fx and fx[0].outcome == "hit" and fx[0].key
    names = {c.name for c in fx[0].components}
    assert "gm" in names and any(n.startswith("inductor_config[") for n in names)
    assert all(c.hash for c in fx[0].components)
    assert warm.switches["fx_graph_cache"] in ("True", "False")
    compile_cost.reap_compile_workers()


def test_errors_are_classified() -> None:
    dynamo.reset()
    with pytest.raises(Exception) as broke:
        torch.compile(branchy, backend="eager", fullgraph=True)(torch.ones(3))
    assert errors.is_graph_break(broke.value)

    def picky(gm, example_inputs):
        raise NotImplementedError("picky")

    dynamo.reset()
    with pytest.raises(Exception) as failed:
        torch.compile(relu_plus_one, backend=picky)(torch.ones(3))
    assert errors.is_backend_failure(failed.value) and errors.raised_in(failed.value) is None
    assert type(errors.innermost(failed.value)) is NotImplementedError


def test_graph_break_record_matches_the_format() -> None:
    events = compiled_events(branchy, torch.ones(3), backend="eager")
    (reason,) = [e.payload for e in events if e.stream == "graph_break_reason"]
    assert dynamo_names.BREAK_REASON.search(reason) and dynamo_names.BREAK_AT.search(reason)


def test_inductor_output_code_matches_the_formats() -> None:
    events = compiled_events(
        relu_plus_one, torch.randn(8), backend="inductor", **config.HOST_PINNED_CONFIG
    )
    (code,) = [e.payload for e in events if e.stream == "output_code"]
    assert (
        formats.KERNEL_DEF.findall(code) and formats.AOT_KIND.search(code).group(1) == "inference"
    )
    (graph,) = [e.payload for e in events if e.stream == "dynamo_graph"]
    assert formats.FX_BODY_START in graph and formats.FX_OP_LINE.findall(graph)


def test_config_keys_the_plugin_sets_exist() -> None:
    known = set(config.inductor_options())
    for settings in (config.HOST_PINNED_CONFIG, config.FALLBACK_RANDOM, config.BENCHMARK_KERNEL):
        assert set(settings) <= known
    import torch._inductor.config as inductor_config

    with config.patched(config.FALLBACK_RANDOM, {"cpp.threads": 1}):
        assert inductor_config.fallback_random is True and inductor_config.cpp.threads == 1
    assert inductor_config.fallback_random is False


def test_precompile_round_trip_and_its_guard_failure(tmp_path: Path) -> None:
    dynamo.reset()
    x = torch.randn(2, 3)
    compiled = aot.aot_compile(relu_plus_one, {"backend": "eager"}, (x,), {})
    aot.save(compiled, tmp_path / "f.pt2")
    loaded = aot.load(tmp_path / "f.pt2")
    torch.testing.assert_close(loaded(x), relu_plus_one(x))
    with pytest.raises(Exception) as rejected:
        loaded(torch.randn(5, 3))
    guards = formats.rejected_guards(str(rejected.value))
    assert guards and "size mismatch" in guards[0]


class Layers(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(512, 512) for _ in range(3)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def test_ddp_split_wrapper_breaks_and_compiled_runs(tmp_path: Path) -> None:
    """DDP's split graph arrives as its stream, one part per bucket; DDP's own graph breaks are
    told apart from the user's; the profiler counts each run of a compiled frame; FSDP2 shards
    parameters as DTensors, read back as this rank's shard."""
    from pytest_torchcompile._torch import distributed
    from pytest_torchcompile._torch.patterns import distributed as texts

    distributed.join(str(tmp_path / "store"), 0, 1, "gloo", 60)
    try:
        dynamo.reset()
        handler = Collect()
        model = distributed.ddp(Layers(), "cpu", {"bucket_cap_mb": 1})
        with trace.trace_only_to(handler), distributed.compiled_runs() as runs:
            torch.compile(model, backend="aot_eager")(torch.randn(4, 512)).sum().backward()
        (split,) = [e.payload for e in handler.events if e.stream == "ddp_split"]
        assert texts.ddp_buckets(split) == 3
        assert "bucket_2" in texts.name_ddp_buckets(split)
        breaks = [e.payload for e in handler.events if e.stream == "graph_break_reason"]
        located = [dynamo_names.BREAK_AT.search(p).group(1).rsplit(":", 1)[0] for p in breaks]
        wrappers = [
            texts.wrapper_at(where) or texts.wrapper_named(p) for where, p in zip(located, breaks)
        ]
        assert breaks and wrappers == ["DDP"] * len(breaks)
        assert all(texts.break_function(p) for p in breaks)
        graph_frame = {
            (e.frame_id, e.compile_id) for e in handler.events if e.stream == "ddp_split"
        }
        assert set(runs) >= graph_frame and all(runs[key] == 1 for key in graph_frame)
        sharded = distributed.fully_shard(Layers(), {})
        assert type(distributed.local(next(sharded.parameters()))) is torch.Tensor
        bare, x = Layers(), torch.randn(2, 512)
        assert distributed.eager_ops(lambda: bare(x)) == 6  # 3 linear, 3 relu
    finally:
        distributed.leave()
