"""What capturing costs, measured so anyone can re-run it.

Part `overhead`: a bare `torch.compile` (reset, compile, first call and
backward) against the same compile as `compile_model` makes it (the capture,
the guards and program facts read after the call, the default artifacts laid
out and normalized), measured interleaved (A B A B ...) in one process on warm
Inductor caches, with the same host-pinned Inductor config on both sides so
only the capture differs. Medians of wall time and of this process's CPU
time: on a loaded machine the CPU time is the steadier of the two (torch runs
on one thread here, and each compile starts after a garbage collection).

Part `zoo`: wall time of `pytest fixtures` (the zoo) with a cold and then a
warm Inductor cache, and how much of it is compiling (the plugin's own
"compile s" column) versus everything else.

Part `program`: what the `program` artifact adds to a case once the capture
has run: reading the guard trees from Dynamo's cache entries, then writing
the runnable file (transformed code translated and checked against its
bytecode, docs/program.md) and normalizing it, against the layout and
normalization of all other artifacts.

    python benchmarks/bench_capture.py            # all parts
    python benchmarks/bench_capture.py overhead   # one part (cold: the same, caches disabled)
    python benchmarks/bench_capture.py overhead --rounds 15
"""

from __future__ import annotations

import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def all_but_program() -> list[Any]:
    """Every artifact of the catalogue but `program`, which this script measures as a part of its own."""
    from pytest_torchcompile.snapshot.artifacts.catalogue import CATALOGUE

    return [artifact for artifact in CATALOGUE if artifact.name != "program"]


def build_all(log: Any, normalize: Any, artifacts: list[Any]) -> dict[str, str]:
    """Each artifact laid out and normalized, as the fixture does when snapshots are compared."""
    from pytest_torchcompile.snapshot.artifacts.catalogue import CaseCapture

    return {a.name: a.text(CaseCapture(log), "inductor", normalize) for a in artifacts}


def compile_once(model: Any, args: tuple[Any, ...], mode: str) -> tuple[float, float]:
    """Wall and CPU seconds for reset + compile + the first call as the fixture makes it (seeded, backward, observed).

    mode "bare": no capture; "trace": the capture's handler and hook attached
    (torch builds its trace payloads) but nothing read or laid out; "fixture":
    what `compile_model` does on top of the compile for a test without
    `artifacts=`: the capture, the guards and program facts read after the
    call (`CompileCase._run_compiled`), the result, and every default artifact
    laid out and normalized once (as the snapshot check reads them); "all":
    the same with every artifact of the catalogue but `program` (the opt-in
    ones too: `transformed_code` decompiles with depyf).
    """
    import torch

    from pytest_torchcompile._torch import config
    from pytest_torchcompile.common.capture import capturing
    from pytest_torchcompile.common.capture_log import CaptureLog
    from pytest_torchcompile.snapshot.numerics.calls import observed_call

    inputs = (args, {})
    torch._dynamo.reset()
    gc.collect()  # no mode pays for the garbage of the one before it
    started, cpu = time.perf_counter(), time.process_time()
    if mode == "bare":
        with config.patched(config.HOST_PINNED_CONFIG):
            observed_call(torch.compile(model), model, inputs, None)
    elif mode == "trace":
        with capturing(CaptureLog()):
            observed_call(torch.compile(model), model, inputs, None)
    else:
        fixture_case(model, inputs, all_but_program() if mode == "all" else None)
    return time.perf_counter() - started, time.process_time() - cpu


def fixture_case(model: Any, inputs: Any, artifacts: list[Any] | None) -> dict[str, str]:
    """The fixture's compiled call and its artifacts (the default ones, or `artifacts`), normalized."""
    import torch

    from pytest_torchcompile.snapshot.case import CompileCase
    from pytest_torchcompile.snapshot.spec import CompileSpec

    normalize = normalizer()  # one per test, as the plugin's session hands them out
    case = CompileCase(CompileSpec(), "bench", model, normalize)
    case.compiled = torch.compile(model, **case.spec.compile_kwargs())
    out, _ = case._run_compiled(inputs)
    result = case._result(out, out)
    if artifacts is None:
        return dict(result.artifacts)
    return build_all(case.log.frozen(), normalize, artifacts)


def normalizer() -> Any:
    """The session's normalizer, as the plugin builds it for a checkout at REPO."""
    import torch

    from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer

    return Normalizer.for_paths(str(REPO), str(Path(torch.__file__).parent))


def overhead(rounds: int = 7, cold: bool = False) -> None:
    """Interleaved bare / trace / fixture / all compiles; `cold` disables Inductor's caches."""
    import torch
    import torch._inductor.config as inductor_config

    from fixtures import zoo

    modes = ("bare", "trace", "fixture", "all")
    torch.set_num_threads(1)  # the capture is one thread; waiting pool threads would add noise
    with inductor_config.patch(force_disable_caches=cold):
        _overhead(zoo, modes, rounds, "cold (caches disabled)" if cold else "warm caches")


def _overhead(zoo: Any, modes: tuple[str, ...], rounds: int, label: str) -> None:
    load = os.getloadavg()
    print(
        f"capture overhead, interleaved, {label}, {rounds} rounds (median seconds); "
        f"load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{'model':<20} {'clock':<5} {'bare':>7} {'+trace':>7} {'fixture':>8} {'all':>7} {'overhead':>9} "
        f"{'torch part':>11} {'ours':>6} {'all: overhead':>14}"
    )
    for name, build in (
        ("mlp_training", zoo.mlp_training),
        ("graph_break", zoo.graph_break),
        ("transformer_block", zoo.transformer_block),
    ):
        model, args, _ = build()
        for mode in modes:  # warm every cache key and code path
            compile_once(model, args, mode)
        times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
        for _ in range(rounds):
            for mode in modes:
                times[mode].append(compile_once(model, args, mode))
        for clock, which in (("wall", 0), ("cpu", 1)):
            bare, trace, fixture, every = (
                statistics.median(t[which] for t in times[mode]) for mode in modes
            )
            print(
                f"{name:<20} {clock:<5} {bare:7.3f} {trace:7.3f} {fixture:8.3f} {every:7.3f} "
                f"{100 * (fixture / bare - 1):8.1f}% {100 * (trace / bare - 1):10.1f}% "
                f"{100 * (fixture - trace) / bare:5.1f}% {100 * (every / bare - 1):13.1f}%"
            )


def zoo_walltime() -> None:
    cache = tempfile.mkdtemp(prefix="bench_inductor_cache_")
    print("zoo suite (pytest fixtures), 10 cases")
    for label in ("cold", "warm"):
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "fixtures",
                "-q",
                "-p",
                "no:cacheprovider",
                "-W",
                "ignore",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        compile_s = sum(
            float(m)
            for m in re.findall(
                r"^fixtures/\S+\s+\d+\s+\d+\s+\d+\s+\d+\s+([\d.]+)$", done.stdout, re.M
            )
        )
        status = "ok" if done.returncode == 0 else f"FAILED rc={done.returncode}"
        print(
            f"  {label}: wall {wall:6.1f} s, compiling (compile + first call, eager excluded) {compile_s:6.1f} s, rest {wall - compile_s:6.1f} s  [{status}]"
        )


def program_cost(rounds: int = 7) -> None:
    import torch

    from fixtures import zoo
    from pytest_torchcompile._torch import config
    from pytest_torchcompile.common.capture import capturing
    from pytest_torchcompile.common.capture_log import CaptureLog
    from pytest_torchcompile.snapshot.artifacts.catalogue import ARTIFACTS, CaseCapture
    from pytest_torchcompile.snapshot.artifacts.normalize import Normalizer
    from pytest_torchcompile.snapshot.emit.guards import guard_function, read_guards
    from pytest_torchcompile.snapshot.program.facts.data import CompileSettings, ProgramFacts
    from pytest_torchcompile.snapshot.program.facts.reading import collect
    from pytest_torchcompile.snapshot.program.layout.writer import program_text

    normalize = Normalizer.for_paths(str(REPO), str(Path(torch.__file__).parent))
    print(
        f"program artifact per case, inductor, warm caches, {rounds} rounds (median milliseconds)"
    )
    print(
        f"{'model':<22} {'read guards':>11} {'build+normalize':>15} {'program total':>13} {'other artifacts':>15} {'lines':>6}"
    )
    for name in (
        "mlp_training",
        "convbn_inference",
        "transformer_block",
        "graph_break",
        "dynamic_shapes",
        "function_with_kwargs",
    ):
        model, args, kwargs = getattr(zoo, name)()
        torch._dynamo.reset()
        log, facts = CaptureLog(), ProgramFacts()
        settings = CompileSettings(kernel_build=config.kernel_build_settings())
        with torch.set_grad_enabled(name in ("mlp_training", "graph_break")), capturing(log):
            torch.compile(model, dynamic=True if name == "dynamic_shapes" else None)(
                *args, **kwargs
            )
            read_guards(log)
            collect(facts, log, model, args, kwargs, settings)
        reads, builds, others = [], [], []
        for _ in range(rounds):
            others.append(_ms(lambda log=log: build_all(log, normalize, all_but_program())))
            log.guards.clear()
            guard_function.cache_clear()  # a case's first build: nothing cached
            reads.append(_ms(lambda log=log: read_guards(log)))
            builds.append(
                _ms(
                    lambda log=log, facts=facts: ARTIFACTS["program"].text(
                        CaseCapture(log, facts), "inductor", normalize
                    )
                )
            )
        r, b, o = (statistics.median(x) for x in (reads, builds, others))
        lines = len(program_text(log, facts, "inductor").splitlines())
        print(f"{name:<22} {r:11.2f} {b:15.2f} {r + b:13.2f} {o:15.2f} {lines:6d}")
    torch._dynamo.reset()


def _ms(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - started)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    rounds = 7
    if "--rounds" in arguments:
        at = arguments.index("--rounds")
        rounds = int(arguments[at + 1])
        del arguments[at : at + 2]
    parts = arguments or ["overhead", "zoo", "program"]
    if "overhead" in parts:
        overhead(rounds)
    if "cold" in parts:
        overhead(rounds=3, cold=True)
    if "zoo" in parts:
        zoo_walltime()
    if "program" in parts:
        program_cost()
