"""The compile-time gate's rules on runs built in torch's own formats: no pytest run, no torch, no files.

A run is what a compiling process answers (`CompileRun`): its facts as the
watch names them and its cache lookups with their key components as torch
prints them (`[hash] name: value`). The planted changes are the regression
classes of `benchmarks/compile_time.py`, whose real runs the end-to-end
tests (`test_compile_time_workflow.py`) and that harness cover.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pytest_torchcompile._torch.compile_cost import Component, Lookup, parse_components
from pytest_torchcompile.perf.compile_time.reference import compiler, reference_cpu_s
from pytest_torchcompile.perf.contention import Contention
from pytest_torchcompile.perf.facts.block import CompileBlock, CompileRuns, build_block
from pytest_torchcompile.perf.facts.keys import compact, fold_keys, moved_parts
from pytest_torchcompile.perf.facts.runs import CompileRun, Varies
from pytest_torchcompile.perf.gate import TOO_FEW_RUNS, Baseline, Gate, GateSettings, Verdict
from pytest_torchcompile.perf.record import CaseRecord, MeasuredCase
from pytest_torchcompile.perf.report.html import compile_table
from pytest_torchcompile.perf.report.outputs import benchmark_json
from pytest_torchcompile.perf.report.table import (
    RESULT_HEADER,
    next_step,
    result_header,
    result_rows,
    verdict_details,
    verdict_line,
)
from pytest_torchcompile.perf.stats import Summary

pytestmark = pytest.mark.torch_independent

GRAPH = "GraphModule()\n\ndef forward(self, x):\n    mul = torch.ops.aten.mul.Tensor(x, {scale});  x = None\n    return (mul,)"
COLD = {"fx_graph.hit": 0, "fx_graph.miss": 1, "aot_autograd.hit": 0, "aot_autograd.miss": 1}
WARM = {"fx_graph.hit": 1, "fx_graph.miss": 0, "aot_autograd.hit": 1, "aot_autograd.miss": 0}
COMMON = {
    "fx_graph.bypass": 0,
    "aot_autograd.bypass": 0,
    "autotune": 0,
    "graph_nodes": 9,
    "switch.enable_autograd_cache": "True",
    "bypass": "none",
}


def lookup(cache: str, outcome: str, scale: str = "1.5", simdlen: str = "None") -> Lookup:
    lines = [
        f"[g{hash(scale) & 0xFFFF:x}] gm: {GRAPH.format(scale=scale)}",
        "[e0] example_inputs[0]: TensorMetadata(dtype=torch.float32, shape=torch.Size([8, 16]))",
        f"[s{simdlen}] inductor_config[cpp.simdlen]: {simdlen}",
        "[t1] inductor_config[cpp.threads]: -1",
        "[v1] torch_version: 2.13",
    ]
    key = f"k-{scale}-{simdlen}"
    return Lookup(cache, outcome, key, tuple(parse_components(lines)))


def run(
    side: str,
    cpu: float,
    scale: str = "1.5",
    simdlen: str = "None",
    phases: dict[str, float] | None = None,
    **facts: int | str,
) -> CompileRun:
    outcome = "miss" if side == "cold" else "hit"
    base = COLD if side == "cold" else WARM
    return CompileRun(
        side,
        cpu,
        cpu * 3,
        cpu * 2.5,
        {**COMMON, **base, "codegen": 1 if side == "cold" else 0, **facts},
        phases or {"GraphLowering.codegen": cpu / 2, "compile_fx_inner": cpu},
        (
            lookup("aot_autograd", outcome, scale, simdlen),
            lookup("fx_graph", outcome, scale, simdlen),
        ),
        contention=Contention(waiting=0.01, pressure=0.05),
    )


TIMES = {"eager_s": 2e-4, "compiled_s": 1e-4, "compile_s": 3.0, "first_call_s": 3.1}


def record(runs: CompileRuns) -> CaseRecord:
    timing = {name: Summary.exact(value) for name, value in TIMES.items()}
    metrics = {"speedup": Summary(2.0, 1.9, 1.95, 2.05, 1.98, 2.02, 100), **timing}
    metrics.update(runs.metrics(0.95))
    counters = {"graph_count": 1, "graph_break_count": 0, "recompile_count": 0, "kernel_count": 1}
    return CaseRecord(metrics, counters, compile=runs.block(), samples=runs.samples())


def measured(cold: list[CompileRun], warm: list[CompileRun]) -> CaseRecord:
    return record(CompileRuns(cold, warm))


def steady(
    n: int = 5, cold_cpu: float = 10.0, warm_cpu: float = 2.0, **changes: object
) -> CaseRecord:
    """n pairs whose CPU times vary by a few percent, as fresh processes do here."""
    wiggle = [1.0, 1.03, 0.98, 1.05, 0.97, 1.02, 0.99, 1.04][:n]
    cold = [run("cold", cold_cpu * w, **changes) for w in wiggle]  # type: ignore[arg-type]
    warm = [run("warm", warm_cpu * w, **changes) for w in wiggle]  # type: ignore[arg-type]
    return measured(cold, warm)


def judge(now: CaseRecord, base: CaseRecord, software: str = "", same_machine: bool = True):
    baseline = Baseline(base, same_machine, "machine.json", software)
    return Gate(GateSettings(), lambda case: baseline).judge("t.py::t::case_0", now)


def rows(verdict) -> dict[str, object]:
    return {row.metric: row for row in verdict.rows}


def test_unchanged_runs_pass_every_compile_row() -> None:
    verdict = judge(steady(), steady())
    found = rows(verdict)
    assert verdict.verdict is Verdict.PASS, [(r.metric, r.verdict, r.note) for r in verdict.rows]
    for metric in ("compile facts (cold)", "compile facts (warm)", "cache keys"):
        assert found[metric].verdict is Verdict.PASS and found[metric].note == "exact"
    assert found["cold_cpu_s"].verdict is Verdict.PASS
    assert found["cold_wall_s"].verdict is Verdict.NOT_GATED  # wall time is reported only


def test_a_per_process_constant_fails_naming_the_graph_line_that_moved() -> None:
    base = steady()
    cold = [run("cold", 10.0, scale=f"1.5{i}") for i in range(5)]
    warm = [run("warm", 10.0, scale=f"1.5{i}9", **{**COLD, "codegen": 1}) for i in range(5)]
    for pair in warm:  # a warm start that found nothing: every lookup a miss
        object.__setattr__(
            pair,
            "lookups",
            tuple(Lookup(x.cache, "miss", x.key, x.components) for x in pair.lookups),
        )
    verdict = judge(measured(cold, warm), base)
    line = verdict_line(verdict)
    assert verdict.verdict is Verdict.FAIL
    assert (
        "warm start missed the FX graph cache (1 of 1 lookups), missed the AOTAutograd cache "
        "(1 of 1 lookups), ran codegen (0 -> 1): gm: x, 1.50) -> x, 1.509)" in line
    ), line
    assert "AOTAutograd cache hits 1 -> 0" in "\n".join(verdict_details(verdict))
    # the cold start's key varied from process to process: never compared with the baseline's
    assert rows(verdict)["cache keys"].verdict is Verdict.PASS


def test_a_config_change_moves_the_key_and_names_the_entry() -> None:
    verdict = judge(steady(simdlen="256"), steady())
    keys = rows(verdict)["cache keys"]
    assert keys.verdict is Verdict.FAIL
    assert keys.note.startswith(
        "AOTAutograd cache key moved since the baseline (a cache restored from it misses): "
        "inductor_config[cpp.simdlen] None -> 256"
    ), keys.note
    assert "inductor_config[cpp.simdlen] None -> 256 FAIL" in verdict_line(verdict)


def test_keys_are_not_compared_across_torch_versions() -> None:
    verdict = judge(steady(simdlen="256"), steady(), software="torch 2.13.0 -> 2.15.0")
    keys = rows(verdict)["cache keys"]
    assert keys.verdict is Verdict.NOT_GATED and "other software" in keys.note
    assert rows(verdict)["compile facts (warm)"].verdict is Verdict.PASS


def test_on_another_machine_no_compile_row_is_gated() -> None:
    verdict = judge(steady(cold_cpu=30.0), steady(), same_machine=False)
    found = rows(verdict)
    assert {found[m].verdict for m in ("compile facts (cold)", "cache keys", "cold_cpu_s")} == {
        Verdict.NOT_GATED
    }


def test_aot_cache_off_names_the_switch() -> None:
    off = {"aot_autograd.hit": 0, "joint_trace": 1, "switch.enable_autograd_cache": "False"}
    verdict = judge(steady(**off), steady())
    line = verdict_line(verdict)
    assert (
        "warm start traced the AOT joint graph (0 -> 1), stopped hitting the AOTAutograd cache "
        "(hits 1 -> 0): enable_autograd_cache True -> False" in line
    ), line


def test_autotune_on_a_warm_start_fails() -> None:
    verdict = judge(steady(autotune=2), steady())
    assert "warm start autotuned (0 -> 2)" in verdict_line(verdict)


def test_twice_the_compile_fails_on_cpu_time_naming_the_phase() -> None:
    verdict = judge(steady(cold_cpu=20.0, warm_cpu=4.0), steady())
    cold = rows(verdict)["cold_cpu_s"]
    assert cold.verdict is Verdict.FAIL and cold.change == pytest.approx(1.0, rel=0.01)
    # compile_fx_inner grew more, but it wraps codegen: the phase named is the one inside
    assert cold.note == "grew most: GraphLowering.codegen +5 s"
    assert "cold_cpu_s 10 s -> 20 s (+100.0%" in verdict_line(verdict)


#: the cold phases of the harness's `slow_codegen` plant (a burn after Inductor's codegen, outside its
#: timer) and of its baseline, as measured: the growth is in the lowering, in no phase inside it
PLANTED_BURN = {
    "compile_attempt_0": (7.26, 15.0),
    "compile_fx_inner": (5.96, 13.5),
    "GraphLowering.compile_to_module": (5.78, 13.3),
    "GraphLowering.codegen": (4.13, 4.51),
    "compile_file": (5.23, 5.18),
    "inductor_codecache_torch_key": (0.204, 0.603),
}


def test_a_growth_in_no_inner_phase_names_the_phase_that_holds_it() -> None:
    base = [run("cold", 7.3, phases={k: v[0] for k, v in PLANTED_BURN.items()}) for _ in range(5)]
    now = [run("cold", 15.0, phases={k: v[1] for k, v in PLANTED_BURN.items()}) for _ in range(5)]
    warm = [run("warm", 1.4) for _ in range(5)]
    cold = rows(judge(measured(now, warm), measured(base, warm)))["cold_cpu_s"]
    assert cold.verdict is Verdict.FAIL
    # not inductor_codecache_torch_key, which grew most of the phases inside (+0.4 s, noise)
    assert cold.note == (
        "grew most: GraphLowering.compile_to_module +7.52 s (in no phase torch times inside it)"
    )


def test_a_slower_compile_under_contention_is_inconclusive() -> None:
    slow = steady(cold_cpu=20.0)
    object.__setattr__(slow.compile, "contention", Contention(pressure=0.9))
    verdict = judge(slow, steady())
    cold = rows(verdict)["cold_cpu_s"]
    assert cold.verdict is Verdict.INCONCLUSIVE and "CPU pressure 90%" in cold.note
    assert verdict.undecided_for_contention


def compiled_at(record: CaseRecord, *references: float) -> CaseRecord:
    """`record` with each pair's reference compile (`compile_time/reference.py`) taking `references`."""
    assert record.compile is not None and record.samples is not None
    cold = [
        replace(run("cold", 10.0), contention=Contention(waiting=0.01, reference_s=r))
        for r in references
    ]
    contention = build_block(cold, cold).contention
    return replace(record, compile=replace(record.compile, contention=contention))


def test_the_reference_compile_is_the_median_of_the_pairs() -> None:
    block = compiled_at(steady(), 1.2, 5.0, 1.1, 1.3, 1.25).compile
    assert block is not None and block.contention is not None
    assert block.contention.reference_s == 1.25  # one slow moment is not the machine's speed
    assert block.contention.waiting == 0.01  # the other signals: the worst


def test_an_unchanged_compile_on_a_machine_that_compiles_slower_is_inconclusive() -> None:
    """The slow morning: every compile +40-60%, every contention signal quiet; the reference
    compile, measured beside the pairs, took as much more."""
    base = compiled_at(steady(), *[1.2] * 5)
    verdict = judge(compiled_at(steady(cold_cpu=15.0, warm_cpu=2.9), *[1.75] * 5), base)
    found = rows(verdict)
    for metric in ("cold_cpu_s", "warm_cpu_s"):
        assert found[metric].verdict is Verdict.INCONCLUSIVE, found[metric]
        assert found[metric].note == (
            "this machine compiles slower than when the baseline was recorded: "
            "a fixed compile took 1.46x its CPU time (1.20 s -> 1.75 s)"
        )
    assert found["speedup"].verdict is Verdict.PASS  # a ratio taken at one moment: not touched
    assert found["compile facts (warm)"].verdict is Verdict.PASS
    assert verdict.verdict is Verdict.INCONCLUSIVE


def test_a_small_change_on_a_machine_that_compiles_slower_passes() -> None:
    """A slower machine inflates every compile: a change below the threshold there is below it."""
    base = compiled_at(steady(), *[1.42] * 5)
    found = rows(judge(compiled_at(steady(cold_cpu=10.75), *[1.8] * 5), base))
    assert found["cold_cpu_s"].verdict is Verdict.PASS, found["cold_cpu_s"]


def test_a_clear_slowdown_on_a_machine_that_compiles_faster_fails() -> None:
    """A faster machine deflates every compile: a change past the threshold there is past it."""
    base = compiled_at(steady(), *[1.75] * 5)
    found = rows(judge(compiled_at(steady(cold_cpu=20.0), *[1.2] * 5), base))
    assert found["cold_cpu_s"].verdict is Verdict.FAIL, found["cold_cpu_s"]


def test_a_machine_that_compiles_faster_cannot_hide_a_slower_compile() -> None:
    base = compiled_at(steady(), *[1.75] * 5)
    cold = rows(judge(compiled_at(steady(cold_cpu=11.0), *[1.2] * 5), base))["cold_cpu_s"]
    assert cold.verdict is Verdict.INCONCLUSIVE
    assert "this machine compiles faster than when the baseline was recorded" in cold.note


def test_a_reference_within_its_noise_leaves_the_verdicts_alone() -> None:
    base = compiled_at(steady(), *[1.2] * 5)
    assert (
        rows(judge(compiled_at(steady(), *[1.3] * 5), base))["cold_cpu_s"].verdict is Verdict.PASS
    )
    slower = judge(compiled_at(steady(cold_cpu=20.0), *[1.3] * 5), base)
    assert rows(slower)["cold_cpu_s"].verdict is Verdict.FAIL


def test_a_cache_regression_fails_whatever_the_machine_speed() -> None:
    base = compiled_at(steady(), *[1.2] * 5)
    off = {"aot_autograd.hit": 0, "joint_trace": 1, "switch.enable_autograd_cache": "False"}
    found = rows(judge(compiled_at(steady(**off), *[1.9] * 5), base))
    assert found["compile facts (warm)"].verdict is Verdict.FAIL
    assert found["cold_cpu_s"].verdict is Verdict.PASS  # unchanged on a slower machine


def test_a_baseline_without_a_reference_is_judged_as_before() -> None:
    slower = judge(compiled_at(steady(cold_cpu=20.0), *[1.75] * 5), steady())
    assert rows(slower)["cold_cpu_s"].verdict is Verdict.FAIL


def test_the_reference_compile_runs_here_and_is_skipped_without_a_compiler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if compiler() is None:
        pytest.skip("no C++ compiler on this machine: the reference decides nothing here")
    seconds = reference_cpu_s()
    assert seconds is not None and 0.05 < seconds < 60
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    assert reference_cpu_s() is None


def test_a_wide_interval_is_inconclusive_and_says_why() -> None:
    noisy = measured(
        [run("cold", 10.0 * w) for w in (0.6, 1.0, 1.7, 0.8, 1.6)],
        [run("warm", 2.0 * w) for w in (0.6, 1.0, 1.7, 0.8, 1.6)],
    )
    cold = rows(judge(noisy, steady()))["cold_cpu_s"]
    assert cold.verdict is Verdict.INCONCLUSIVE
    # in the change column's terms: a compile's growth, not a speedup's loss
    assert cold.note.startswith("too noisy to rule out a slowdown: +0%, interval -")
    assert cold.note.endswith("re-run or record more rounds")


def test_a_compile_that_may_be_slower_says_by_how_much_as_the_change_column() -> None:
    slower = measured(
        [run("cold", 11.0 * w) for w in (0.6, 1.0, 1.7, 0.8, 1.6)],
        [run("warm", 2.0 * w) for w in (0.6, 1.0, 1.7, 0.8, 1.6)],
    )
    cold = rows(judge(slower, steady()))["cold_cpu_s"]
    assert cold.verdict is Verdict.INCONCLUSIVE and cold.change > 0
    assert cold.note.startswith(f"possibly slower: +{round(cold.change * 100)}%, interval -")


def test_one_run_a_side_is_inconclusive_and_says_to_run_more() -> None:
    verdict = judge(steady(n=1), steady(n=1))
    assert rows(verdict)["cold_cpu_s"].note == TOO_FEW_RUNS
    assert not verdict.to_remeasure  # measuring once more cannot give an interval
    assert "torchcompile_perf_compile_runs" in next_step(verdict, "t.py::t")


def test_a_slower_compile_is_remeasured_before_it_fails() -> None:
    assert judge(steady(cold_cpu=16.0), steady()).to_remeasure == {"cold_cpu_s"}  # +60%
    assert not judge(steady(cold_cpu=10.5), steady()).to_remeasure  # +5%: a PASS


def test_a_fact_that_varies_between_baseline_runs_is_never_compared() -> None:
    base = steady()
    flaky = [run("cold", 10.0, cpp_compiles=n) for n in (3, 3, 4, 3, 3)]
    warm = [run("warm", 2.0) for _ in range(5)]
    base = measured(flaky, warm)
    assert base.compile is not None and isinstance(base.compile.cold.facts["cpp_compiles"], Varies)
    now = measured([run("cold", 10.0, cpp_compiles=7) for _ in range(5)], warm)
    assert rows(judge(now, base))["compile facts (cold)"].verdict is Verdict.PASS


def test_the_block_round_trips_through_json_compactly() -> None:
    stored = steady().to_json(samples=False)
    text = json.dumps(stored)
    back = CaseRecord.from_json(json.loads(text))
    assert back.compile is not None
    assert back.compile.to_json() == CompileBlock.from_json(stored["compile_time"]).to_json()
    keys = stored["compile_time"]["keys"]
    assert keys[1]["parts"]["inductor_config"] == "=0"  # the config group stored once per case
    assert keys[0]["parts"]["gm"].startswith("#")  # a graph is kept as its hash


def test_a_damaged_block_names_the_field() -> None:
    stored = steady().to_json(samples=False)
    stored["compile_time"]["runs"] = "five"
    with pytest.raises(ValueError, match="compile_time: damaged"):
        CaseRecord.from_json(stored)


def test_moved_parts_read_names_from_this_run() -> None:
    base = fold_keys([[lookup("fx_graph", "miss")]])[0]
    now = compact(lookup("fx_graph", "miss", simdlen="256"))
    assert moved_parts(base, now) == ["inductor_config[cpp.simdlen] None -> 256"]
    stored = CompileBlock.from_json(
        build_block([run("cold", 1.0)], [run("warm", 1.0)]).to_json()
    ).keys[1]
    assert moved_parts(stored, compact(lookup("fx_graph", "miss", simdlen="256"))) == [
        "inductor_config[cpp.simdlen] None -> 256"
    ]


def test_a_component_line_of_another_shape_is_kept() -> None:
    assert parse_components(["no hash here"]) == [
        Component("no hash here", "no hash here", "no hash here")
    ]


def test_the_results_carry_the_compile_figures() -> None:
    now, base = steady(cold_cpu=20.0), steady()
    verdict = judge(now, base)
    cases = [MeasuredCase("t.py::t::case_0", "t.py::t", now)]
    assert result_header(cases)[-2:] == ("cold CPU s", "warm CPU s")
    assert result_rows(cases)[0][-2:] == ("20.00", "2.00")
    assert (
        result_header([MeasuredCase("a", "a", CaseRecord(now.metrics, now.counters))])
        == RESULT_HEADER
    )
    bench = benchmark_json(cases, {"device": "cpu", "cpu": "x"})["benchmarks"]
    compile_entries = {b["param"]: b for b in bench if b["param"].endswith("compile")}
    assert set(compile_entries) == {"cold-compile", "warm-compile"}
    assert compile_entries["cold-compile"]["stats"]["rounds"] == 5
    assert compile_entries["warm-compile"]["extra_info"]["caches"] == "FX 1/0/0 AOT 1/0/0"
    html = compile_table(cases, [verdict])
    assert "<td>t.py::t::case_0</td><td>20 s</td><td>2 s</td>" in html
    assert "<td>FAIL</td><td>grew most: GraphLowering.codegen +5 s</td>" in html
    assert compile_table([MeasuredCase("a", "a", CaseRecord(now.metrics, now.counters))], []) == ""


def test_a_cache_switched_off_on_inference_says_the_warm_start_stopped_hitting() -> None:
    """Inference runs no joint trace: AOTAutograd's cache off shows as hits falling, no miss."""
    off = {"aot_autograd.hit": 0, "aot_autograd.miss": 0, "switch.enable_autograd_cache": "False"}
    cold_off = {"aot_autograd.miss": 0, "switch.enable_autograd_cache": "False"}
    now = measured([run("cold", 10.0, **cold_off)] * 5, [run("warm", 2.6, **off)] * 5)
    line = verdict_line(judge(now, steady()))
    assert line.startswith(
        "perf gate FAIL for t.py::t::case_0: warm start stopped hitting the AOTAutograd cache "
        "(hits 1 -> 0): enable_autograd_cache True -> False FAIL; cold start: "
        "enable_autograd_cache True -> False, AOTAutograd cache misses 1 -> 0"
    ), line


def test_the_default_compile_threshold_is_the_one_the_help_and_docs_state(
    pytester: pytest.Pytester,
) -> None:
    """The gate a plain run builds judges by 50%, what `--help` and docs/compile-time.md say."""
    from pytest_torchcompile.perf.plugin import settings_from_config

    def threshold(*args: str) -> float:
        gate = settings_from_config(pytester.parseconfig("--torchcompile-perf-gate", *args)).gate
        assert gate is not None
        return gate.compile_threshold

    assert threshold() == 0.5
    assert threshold("--torchcompile-perf-compile-threshold=0.3") == 0.3
    pytester.makeini("[pytest]\ntorchcompile_perf_compile_threshold = 0.4\n")
    assert threshold() == 0.4
