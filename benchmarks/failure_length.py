"""How long is the failure of a one-line model change? Before and after the failure block.

Writes a one-test project (a tiny GPT-2, transformers, nothing downloaded),
records its snapshots, changes one config value (`n_layer=1` -> `2`) and runs
it again, once with the plugin as it was at `--before` (default a12a5de) and
once with this checkout. Prints the number of lines pytest printed for the
failure (from the FAILURES banner to the end of the run) and, with `--show`,
this checkout's failure text.

    python benchmarks/failure_length.py [--before REV] [--show]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from snapshot_size import REPO, package_at

TEST = """
import pytest, torch
from transformers import GPT2Config, GPT2LMHeadModel

@pytest.mark.compile_snapshot(backend="inductor")
def test_gpt2(compile_model):
    torch.manual_seed(0)
    config = GPT2Config(n_layer={layers}, n_embd=32, n_head=4, vocab_size=128, n_positions=32, bos_token_id=0, eos_token_id=0)
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        compile_model(GPT2LMHeadModel(config).eval(), input_ids=ids)
"""


def run(project: Path, code_root: Path, cache: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(code_root), "TORCHINDUCTOR_CACHE_DIR": cache}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "test_gpt2.py",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore",
        "-rf",
        *args,
    ]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True).stdout


def failure_lines(code_root: Path, project: Path, cache: str) -> list[str]:
    project.mkdir()
    (project / "test_gpt2.py").write_text(TEST.format(layers=1))
    recorded = run(project, code_root, cache, "--update-snapshots")
    if " passed" not in recorded:
        raise SystemExit(f"recording failed:\n{recorded[-3000:]}")
    (project / "test_gpt2.py").write_text(TEST.format(layers=2))
    out = run(project, code_root, cache).splitlines()
    start = next(i for i, line in enumerate(out) if "FAILURES" in line)
    return out[start:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="a12a5de")
    parser.add_argument("--show", action="store_true", help="print this checkout's failure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cache = str(work / "inductor-cache")
        before = failure_lines(
            package_at(args.before, work / "before-code"), work / "project-before", cache
        )
        after = failure_lines(REPO, work / "project-after", cache)
    print(
        f"n_layer 1 -> 2 on a tiny GPT-2: {len(before)} lines of failure at {args.before}, {len(after)} now"
    )
    if args.show:
        print("\n".join(after))


if __name__ == "__main__":
    main()
