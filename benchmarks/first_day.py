"""The first day on a library the plugin was never tuned on: false alarms, headline length, churn.

Builds a small project on x-transformers (a 2-layer `TransformerWrapper`
decoder: inference, a training step, the same model compiled twice, and a
gated MLP with a data-dependent graph break), records it, makes one-line model
changes (RMSNorm on, heads 2 -> 4) and measures, with the plugin as it was at
`--before` and with this checkout:

- false alarms: tests that fail while recording a correct compile (numerics
  against eager, with the bare marker);
- churn: snapshot lines added and removed by each one-line change (what
  `--update-snapshots` rewrites), and the files it touches, in all and per
  test (a test that failed to record has no files to churn: compare per test);
- the headline: the first line of the failure each changed test opens with
  (computed from the two recorded sets by that plugin's own comparison), its
  length;
- the failure block: the changed project run plainly against the recorded
  set, the lines of each failing test's report (what a reviewer reads in the
  CI log).

    pip install x-transformers      # in a venv of its own, with torch and this checkout's dev extra
    python benchmarks/first_day.py --before 7bbc8b8 --cache /tmp/inductor-first-day

Both plugins share one Inductor cache (`--cache`), so only the first
recording compiles cold.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from snapshot_size import REPO, package_at  # noqa: E402

PROJECT = """
import pytest, torch
import torch.nn.functional as F
from torch import nn
from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper
from x_transformers.x_transformers import FeedForward

CONFIG = dict(dim=32, depth=2, heads=2)


def decoder():
    torch.manual_seed(0)
    return TransformerWrapper(num_tokens=64, max_seq_len=16, attn_layers=Decoder(**CONFIG))


def tokens(batch=2):
    return torch.randint(0, 64, (batch, 16), generator=torch.Generator().manual_seed(1))


class GatedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.ff = FeedForward(32, glu=True)

    def forward(self, x):
        y = self.ff(x)
        if y.sum() > 0:  # data-dependent: a graph break
            y = y * 2
        return y


@pytest.mark.compile_snapshot
def test_inference(compile_model):
    with torch.no_grad():
        compile_model(decoder().eval(), tokens())


@pytest.mark.compile_snapshot
def test_training(compile_model):
    compile_model(AutoregressiveWrapper(decoder()).train(), tokens())


@pytest.mark.compile_snapshot
def test_training_twice(compile_model):
    model = AutoregressiveWrapper(decoder()).train()
    compile_model(model, tokens())
    compile_model(model, tokens(batch=3))


@pytest.mark.compile_snapshot
def test_gated_mlp(compile_model):
    compile_model(GatedMLP(), torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(2)))
"""
BASE = "CONFIG = dict(dim=32, depth=2, heads=2)"
CHANGES = {
    "RMSNorm on": "CONFIG = dict(dim=32, depth=2, heads=2, use_rmsnorm=True)",
    "heads 2 -> 4": "CONFIG = dict(dim=32, depth=2, heads=4)",
}


def record(code: Path, project: Path, config: str, cache: str) -> dict[str, str]:
    """`pytest --update-snapshots` on the project with `config`; test -> failure ('' when it passed).

    A correct compile that fails while recording is a false alarm.
    """
    project.mkdir(parents=True)
    (project / "test_decoder.py").write_text(PROJECT.replace(BASE, config))
    junit = project / "junit.xml"
    env = {**os.environ, "PYTHONPATH": str(code), "TORCHINDUCTOR_CACHE_DIR": cache, "CI": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command += ["-W", "ignore", f"--junitxml={junit}", "--update-snapshots"]
    subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    results = {}
    for case in ET.parse(junit).iter("testcase"):
        failure = case.find("failure")
        results[case.get("name", "")] = "" if failure is None else failure.get("message", "?")
    return results


def failures_read(code: Path, base: Path, project: Path, config: str, cache: str) -> dict[str, int]:
    """The changed project run plainly against the base's snapshots: test -> lines of its failure
    block (pytest's report of it, as a reviewer reads it in the CI log)."""
    project.mkdir(parents=True)
    (project / "test_decoder.py").write_text(PROJECT.replace(BASE, config))
    shutil.copytree(base / "snapshots", project / "snapshots")
    junit = project / "junit.xml"
    env = {**os.environ, "PYTHONPATH": str(code), "TORCHINDUCTOR_CACHE_DIR": cache, "CI": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    subprocess.run(
        [*command, "-W", "ignore", f"--junitxml={junit}"], cwd=project, env=env, capture_output=True
    )
    lines = {}
    for case in ET.parse(junit).iter("testcase"):
        failure = case.find("failure")
        if failure is not None:
            lines[case.get("name", "")] = len((failure.text or "").splitlines())
    return lines


def churn(old: Path, new: Path) -> tuple[int, int, int]:
    """(lines added, lines removed, files touched) from the snapshot set `old` to `new`."""
    added = removed = files = 0
    names = {p.relative_to(old) for p in old.rglob("*.txt")} | {
        p.relative_to(new) for p in new.rglob("*.txt")
    }
    for name in sorted(names):
        a = (old / name).read_text().splitlines() if (old / name).exists() else []
        b = (new / name).read_text().splitlines() if (new / name).exists() else []
        diff = list(difflib.unified_diff(a, b, lineterm="", n=0))[2:]
        plus = sum(1 for line in diff if line.startswith("+"))
        minus = sum(1 for line in diff if line.startswith("-"))
        added, removed, files = added + plus, removed + minus, files + bool(plus or minus)
    return added, removed, files


#: run with the plugin under test: each changed test's headline, as its failure would open
HEADLINES = """
import sys
from pathlib import Path
from pytest_torchcompile.snapshot.compare import failure
from pytest_torchcompile.snapshot.compare.behaviour import compare_case
from pytest_torchcompile.snapshot.compare.upgrade import read_case
old, new = Path(sys.argv[1]), Path(sys.argv[2])
for folder in sorted(p for p in old.iterdir() if p.is_dir()):
    a, b = read_case(folder), read_case(new / folder.name)
    if a != b:
        print(folder.name, failure.headline({"": compare_case(a, b)}), sep="\t")
"""


def headlines(code: Path, old: Path, new: Path) -> list[tuple[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(  # not from REPO: `-c` puts the working folder first on sys.path
        [sys.executable, "-c", HEADLINES, str(old), str(new)],
        cwd=old.parent,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [tuple(line.split("\t", 1)) for line in done.stdout.splitlines()]  # type: ignore[misc]


def first_line(message: str) -> str:
    """The failure's first line, after pytest's `Failed: `."""
    return re.sub(r"^Failed: ", "", message.splitlines()[0]) if message else ""


def measure(code: Path, label: str, work: Path, cache: str) -> list[str]:
    lines = [f"## {label}"]
    folders = {}
    alarms = []
    for change, config in {"base": BASE, **CHANGES}.items():
        project = work / label / re.sub(r"\W+", "_", change)
        recorded = record(code, project, config, cache)
        alarms += [(change, name, recorded[name]) for name in recorded if recorded[name]]
        folders[change] = project / "snapshots" / "test_decoder"
        lines.append(f"{change}: {len(recorded)} tests recorded")
    lines.append(f"false alarms while recording correct compiles: {len(alarms)}")
    lines += [f"  {change} {name}: {first_line(message)[:300]}" for change, name, message in alarms]
    for change in CHANGES:
        plus, minus, files = churn(folders["base"], folders[change])
        lines.append(f"{change}: {files} files, +{plus} -{minus} snapshot lines")
        for test in sorted(p.name for p in folders["base"].iterdir() if p.is_dir()):
            plus, minus, files = churn(folders["base"] / test, folders[change] / test)
            lines.append(f"  {test}: {files} files, +{plus} -{minus}")
        for name, head in headlines(code, folders["base"], folders[change]):
            lines.append(f"  {name} headline ({len(head)} chars): {head}")
        read = failures_read(
            code,
            folders["base"].parent.parent,
            work / label / f"check_{change}",
            CHANGES[change],
            cache,
        )
        for name, count in sorted(read.items()):
            lines.append(f"  {name} failure block: {count} lines")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="7bbc8b8", help="git revision of the 'before' plugin")
    parser.add_argument("--cache", help="Inductor cache folder (default: a new one, cold)")
    args = parser.parse_args()
    try:
        import x_transformers  # noqa: F401
    except ImportError:
        raise SystemExit(
            "this benchmark needs x-transformers: pip install x-transformers"
        ) from None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cache = args.cache or str(work / "inductor-cache")
        before = package_at(args.before, work / "before-code")
        for code, label in ((before, f"before ({args.before})"), (REPO, "this checkout")):
            print("\n".join(measure(code, label, work, cache)), flush=True)


if __name__ == "__main__":
    main()
