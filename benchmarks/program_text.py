"""What writing a case's program file costs after each call: every frame proved again, or proved once.

`run_program=True` writes the program file again after every call (the
compiles so far), and each frame's Python translation is proved against its
bytecode (`program/translation/checked.py`). The proof depends on the code
object alone and is kept for as long as the code lives. One pytest session
(this script's Python, aot_eager, in a temporary folder) compiles each zoo
case, then writes its program file `--repeats` times each way, interleaved:

- `proved again`: the kept proofs dropped before each write (as every call
  of a case paid before they were kept);
- `proved once`: the proofs kept from the case's first write.

It prints per case the median seconds of a write each way and the ratio,
with the load average before and after.

    python benchmarks/program_text.py                 # every zoo case, 15 writes each way
    python benchmarks/program_text.py --repeats 30
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = [
    "mlp_training", "graph_break", "convbn_inference", "transformer_block", "buffer_mutation",
    "custom_autograd", "function_with_kwargs", "nested_outputs", "dynamic_shapes",
]  # fmt: skip

TEST = """
import json, os, sys, time, pytest, torch
sys.path.insert(0, {repo!r})
from fixtures import zoo
from pytest_torchcompile.snapshot.program.translation import checked

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",))
@pytest.mark.parametrize("name", {cases!r})
def test_case(compile_model, name, tmp_path):
    model, args, kwargs = getattr(zoo, name)()
    grad = name in ("mlp_training", "custom_autograd")
    with torch.set_grad_enabled(grad):
        result = compile_model(model, *args, **kwargs)
    times = {{"proved again": [], "proved once": []}}
    result.write_program(tmp_path / "warm.py")  # the proofs kept from here on
    for _ in range({repeats}):
        for way in times:
            if way == "proved again":
                checked._PROVED.clear()
            started = time.perf_counter()
            result.write_program(tmp_path / "program.py")
            times[way].append(time.perf_counter() - started)
    with open(os.environ["PROGRAM_TEXT_TIMES"], "a") as out:
        out.write(json.dumps([name, times]) + "\\n")
"""


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="program_text_") as folder:
        project = Path(folder)
        test = TEST.format(repo=str(REPO), cases=CASES, repeats=options.repeats)
        (project / "test_program_text.py").write_text(test)
        times = project / "times.jsonl"
        env = {**os.environ, "PROGRAM_TEXT_TIMES": str(times)}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
        before = os.getloadavg()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--update-snapshots",
             "-W", "ignore", "--rootdir", folder, str(project)],
            cwd=folder, env=env, capture_output=True, text=True,
        )  # fmt: skip
        after = os.getloadavg()
        if done.returncode != 0:
            sys.stderr.write(done.stdout[-6000:] + done.stderr[-3000:])
        rows = [json.loads(line) for line in times.read_text().splitlines()]
    print(
        f"program file write per call, aot_eager, {options.repeats} writes each way interleaved; "
        f"Python {platform.python_version()}; load average before {before[0]:.1f}, after {after[0]:.1f}"
    )
    print(f"{'case':<22} {'proved again ms':>16} {'proved once ms':>15} {'ratio':>6}")
    ratios = []
    for name, seconds in rows:
        again = statistics.median(seconds["proved again"]) * 1000
        once = statistics.median(seconds["proved once"]) * 1000
        ratios.append(again / once)
        print(f"{name:<22} {again:16.1f} {once:15.1f} {again / once:6.2f}")
    print(f"median ratio {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
