"""Which cases run from their program file, bit for bit, and how long the file takes to load.

For the zoo's 10 cases and the 10 real models, on the torch of the Python
that runs this script:

1. a pytest run compiles each case under the plugin (Inductor, as the
   committed snapshots), writes its program file (`write_program`) or
   records why it was refused, and saves what the compiled run observed
   (outputs, gradients, buffers);
2. per program file, two fresh processes with torch.compile trapped build
   the model again from its fixture (so a model that cannot be pickled is
   measured too), load the file and replay the case's calls: the first with
   an empty Inductor cache (cold: every kernel's C++ is compiled), the second
   with the cache the first filled (warm). Each compares its last call with
   the compiled run, bit for bit.

    python benchmarks/program_runs.py                 # all 20 cases, Markdown table on stdout
    python benchmarks/program_runs.py zoo             # the zoo only
    python benchmarks/program_runs.py mlp_training    # named cases
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ZOO = [
    "mlp_training", "graph_break", "convbn_inference", "transformer_block", "buffer_mutation",
    "custom_autograd", "function_with_kwargs", "nested_outputs", "dynamic_shapes", "two_shapes",
]  # fmt: skip
REAL = [
    "opt_lm", "qwen2_lm", "phi_lm", "gpt_neox_lm", "roberta_training",
    "bart_seq2seq", "convnext_vision", "deit_vision", "wav2vec2_audio", "mixtral_moe",
]  # fmt: skip
#: cases that run without grad, as their committed tests do
NO_GRAD = {
    "convbn_inference",
    "transformer_block",
    "buffer_mutation",
    "nested_outputs",
} | set(REAL) - {"roberta_training"}

TEST = """
import json, sys, torch, pytest
sys.path.insert(0, {repo!r})
from benchmarks.program_runs import calls_of
from pytest_torchcompile.snapshot.numerics.calls import wants_grads
from pytest_torchcompile.snapshot.numerics.check import argument_names, observe
from pytest_torchcompile.snapshot.program.layout.refusals import ProgramRefused

@pytest.mark.parametrize("name", {names!r})
@pytest.mark.compile_snapshot(backend="inductor", artifacts=(), dynamic={dynamic!r})
def test_case(compile_model, name):
    model, calls, grad = calls_of(name)
    with torch.set_grad_enabled(grad):
        (args, kwargs), *more = calls
        result = compile_model(model, *args, **kwargs)
        for args, kwargs in more:
            result = result.call(*args, **kwargs)
    grads = wants_grads(None, model, args, kwargs, result.output)
    torch.save(observe(result.output, model, argument_names(model, args, kwargs), grads), {out!r} + f"/{{name}}.seen.pt")
    try:
        result.write_program({out!r} + f"/{{name}}.py")
    except ProgramRefused as exc:
        print("REFUSED", json.dumps([name, str(exc)]))
"""


def calls_of(
    name: str,
) -> tuple[Any, list[tuple[tuple[Any, ...], dict[str, Any]]], bool]:
    """(model, the case's calls in order, grad mode) as its committed test makes them."""
    from fixtures import real_models, zoo

    if name == "two_shapes":
        (model, args, kwargs), second, third = zoo.two_shapes()
        return model, [(args, kwargs), (second, {}), (third, {})], True
    if name == "qwen2_lm":
        model, args, kwargs = real_models.qwen2_lm()
        return model, [(args, kwargs), ((), real_models.qwen2_second_length())], False
    model, args, kwargs = getattr(zoo if name in ZOO else real_models, name)()
    return model, [(args, kwargs)], name not in NO_GRAD


def compile_and_write(names: list[str], out: Path) -> dict[str, str]:
    """Compile the cases under the plugin (one pytest run per dynamic setting); name -> refusal reason."""
    refused: dict[str, str] = {}
    for dynamic, chosen in (
        (True, [n for n in names if n == "dynamic_shapes"]),
        (None, [n for n in names if n != "dynamic_shapes"]),
    ):
        if not chosen:
            continue
        with tempfile.TemporaryDirectory() as folder:
            test = Path(folder) / "test_program_runs.py"
            test.write_text(
                TEST.format(repo=str(REPO), names=chosen, dynamic=dynamic, out=str(out))
            )
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            }
            command = [
                sys.executable,
                "-m",
                "pytest",
                str(test),
                "-q",
                "-s",
                "-p",
                "no:cacheprovider",
                "--rootdir",
                folder,
                *_plugin(),
            ]
            done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
            for line in done.stdout.splitlines():
                if "REFUSED " in line:  # pytest's progress may share the line
                    name, reason = json.loads(line.split("REFUSED ", 1)[1])
                    refused[name] = reason
            if done.returncode not in (0, 1):
                sys.stderr.write(done.stdout[:3000] + done.stderr[:3000])
    return refused


def _plugin() -> list[str]:
    """`-p pytest_torchcompile.plugin` where the plugin is not installed (a venv with torch only)."""
    from importlib.metadata import entry_points

    installed = any(e.name == "torchcompile" for e in entry_points(group="pytest11"))
    return [] if installed else ["-p", "pytest_torchcompile.plugin"]


def run_child(name: str, out: Path, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, __file__, "--child", name, str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    for line in done.stdout.splitlines():
        if line.startswith("CHILD "):
            return json.loads(line[len("CHILD ") :])
    return {
        "verdict": "error",
        "detail": (done.stderr.strip().splitlines() or ["no output"])[-1],
    }


def child(name: str, out: Path) -> None:
    """Load the file with torch.compile trapped, replay the calls, compare the last one bit for bit."""
    import runpy

    import torch

    from pytest_torchcompile._torch.program.trap import trap_compilation
    from pytest_torchcompile.snapshot.numerics.calls import observed_call
    from pytest_torchcompile.snapshot.numerics.check import bitwise_mismatches

    trap_compilation()
    model, calls, grad = calls_of(name)
    started = time.perf_counter()
    program = runpy.run_path(str(out / f"{name}.py"))["load"](
        model if isinstance(model, torch.nn.Module) else None
    )
    loaded = time.perf_counter() - started
    with torch.set_grad_enabled(grad):
        for inputs in calls:
            _, seen = observed_call(program, model, inputs, None)
    mismatches = bitwise_mismatches(seen, torch.load(out / f"{name}.seen.pt", weights_only=False))
    verdict = "bitwise" if not mismatches else "differs"
    print(
        "CHILD "
        + json.dumps(
            {
                "verdict": verdict,
                "load_s": loaded,
                "detail": str(mismatches[0]) if mismatches else "",
            }
        )
    )


def measure(names: list[str]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="program_runs_") as folder:
        out = Path(folder)
        refused = compile_and_write(names, out)
        for name in names:
            if name in refused or not (out / f"{name}.py").exists():
                rows.append(
                    {
                        "case": name,
                        "verdict": "refused",
                        "detail": refused.get(name, "no file written (the compile failed)"),
                    }
                )
                continue
            cache = out / f"cache_{name}"
            cold, warm = run_child(name, out, cache), run_child(name, out, cache)
            size = (out / f"{name}.py").stat().st_size
            rows.append(
                {
                    "case": name,
                    **warm,
                    "cold_s": cold.get("load_s"),
                    "warm_s": warm.get("load_s"),
                    "kb": size // 1024,
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    import torch

    lines = [
        f"torch {torch.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPU cores",
        "",
        "| case | verdict | load cold (s) | load warm (s) | file (KiB) | why |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        cold = f"{r['cold_s']:.1f}" if r.get("cold_s") is not None else ""
        warm = f"{r['warm_s']:.1f}" if r.get("warm_s") is not None else ""
        lines.append(
            f"| {r['case']} | {r['verdict']} | {cold} | {warm} | {r.get('kb', '')} | {r.get('detail', '')} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        child(argv[1], Path(argv[2]))
        return
    names = (
        ZOO + REAL if not argv else ZOO if argv == ["zoo"] else REAL if argv == ["real"] else argv
    )
    print(table(measure(names)))


if __name__ == "__main__":
    main(sys.argv[1:])
