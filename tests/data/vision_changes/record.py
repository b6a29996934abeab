"""Re-record the snapshots of five changes a vision team makes, for the comparison's tests.

    python tests/data/vision_changes/record.py [VENV_PYTHON]

Writes `TEST` into a fresh folder with the base settings and records both
tests with the plugin (`--update-snapshots`, Inductor, this checkout and its
`fixtures/` on PYTHONPATH); then, in a fresh folder each, makes each change
alone and records the test it touches; and packs every set as `sets.tar.xz`
beside this script:
`base/`, `activation/`, `drop_path/`, `resolution/`, `num_classes/`,
`channels_last/`, each `test_changes/<test>/<artifact files>`.
`tests/snapshot/compare/test_vision_changes.py` reads it. The models are
`fixtures/vision.py`'s (timm's modules in plain torch); nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

TEST = """
import pytest, torch
from torch import nn
from fixtures import vision


@pytest.mark.compile_snapshot(backend="inductor")
def test_resnet(compile_model):
    model, args, _ = vision.resnet(num_classes={num_classes}, act=nn.{act}, size={size}, channels_last={channels_last})
    with torch.no_grad():
        compile_model(model, *args)


@pytest.mark.compile_snapshot(backend="inductor", fallback_random=True)
def test_vit(compile_model):
    model, args, _ = vision.vit_training(drop_path_rate={drop_path})
    compile_model(model, *args)
"""
BASE = {"num_classes": 10, "act": "ReLU", "size": 32, "channels_last": False, "drop_path": 0.0}
#: each change alone, and the test it touches
CHANGES = {
    "activation": ({"act": "SiLU"}, "test_resnet"),
    "drop_path": ({"drop_path": 0.1}, "test_vit"),
    "resolution": ({"size": 48}, "test_resnet"),
    "num_classes": ({"num_classes": 20}, "test_resnet"),
    "channels_last": ({"channels_last": True}, "test_resnet"),
}


def record(project: Path, python: str, settings: dict[str, object], tests: str) -> Path:
    (project / "test_changes.py").write_text(TEST.format(**settings))
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--update-snapshots"]
    done = subprocess.run(
        [*command, "-k", tests], cwd=project, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"recording {settings} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return project / "snapshots"


def main() -> None:
    python = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        sets = Path(tmp) / "sets"
        for name, (change, test) in {"base": ({}, "test_resnet or test_vit"), **CHANGES}.items():
            project = Path(tmp) / name
            project.mkdir()
            shutil.copytree(record(project, python, {**BASE, **change}, test), sets / name)
        with tarfile.open(HERE / "sets.tar.xz", "w:xz") as archive:
            archive.add(sets, arcname=".")
    print(f"written {HERE / 'sets.tar.xz'}")


if __name__ == "__main__":
    main()
