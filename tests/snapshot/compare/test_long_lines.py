"""Long changed lines show their changed part, and changed lines are counted as git counts them.

A vision model's graph signature ran to 9,032 characters on one line, of
which one token changed (`f32[2, 3, 32, 32]` -> `f32[2, 3, 48, 48]`); the
failure printed the line twice. And the failure table said `+201 -168`
where git said `183 150` for the same change: difflib's matcher does not
look for the shortest diff, git does.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_torchcompile.snapshot.compare.changes import ChangedCases
from pytest_torchcompile.snapshot.compare.failure import compose
from pytest_torchcompile.snapshot.compare.lines import changed_lines, excerpt, shortened
from pytest_torchcompile.snapshot.files.outcome import Outcome

pytestmark = pytest.mark.torch_independent

#: a signature of 103 arguments, as Dynamo prints a timm ResNet's graph
PARAMETERS = ", ".join(
    f'L_self_modules_layer{i // 10}_modules_{i % 10}_modules_conv1_parameters_weight_: "f32[64, 64, 3, 3][576, 9, 3, 1]cpu"'
    for i in range(102)
)
SIGNATURE = f'    def forward(self, L_x_: "f32[2, 3, 32, 32][3072, 1024, 32, 1]cpu", {PARAMETERS}):'
RESIZED = SIGNATURE.replace(
    "f32[2, 3, 32, 32][3072, 1024, 32, 1]", "f32[2, 3, 48, 48][6912, 2304, 48, 1]"
)


def test_a_long_signature_shows_the_changed_argument_once_a_side() -> None:
    assert len(SIGNATURE) > 9000
    old, new = excerpt(SIGNATURE, RESIZED)
    assert old == '    def forward(self, L_x_: "f32[2, 3, 32, 32][3072, 1024, 32, 1]cpu", ...'
    assert new == '    def forward(self, L_x_: "f32[2, 3, 48, 48][6912, 2304, 48, 1]cpu", ...'


def test_the_failure_shows_the_changed_part_of_a_long_line() -> None:
    graph = "class GraphModule(torch.nn.Module):\n{}\n        return (l_x_,)\n"
    outcome = Outcome(
        Path("dynamo_graph.fx.txt"),
        "changed",
        "",
        graph.format(SIGNATURE),
        graph.format(RESIZED),
        artifact="dynamo_graph",
    )
    text = compose(ChangedCases.of([outcome]), "snapshots/test_m/test_m", full=False)
    assert max(map(len, text.splitlines())) < 300
    assert '-    def forward(self, L_x_: "f32[2, 3, 32, 32][3072, 1024, 32, 1]cpu", ...' in text
    assert '+    def forward(self, L_x_: "f32[2, 3, 48, 48][6912, 2304, 48, 1]cpu", ...' in text


def test_a_long_line_without_a_partner_keeps_its_start_and_says_its_length() -> None:
    (line,) = shortened(["+" + "x" * 1000])
    assert line.startswith("+" + "x" * 160) and line.endswith("... (1,000 characters)")
    assert shortened([" context", "-a", "+b"]) == [" context", "-a", "+b"]  # short: as they are


def test_an_argument_in_the_middle_and_characters_where_arguments_do_not_pair() -> None:
    middle = SIGNATURE.replace(
        'layer5_modules_0_modules_conv1_parameters_weight_: "f32[64,',
        'layer5_modules_0_modules_conv1_parameters_weight_: "f32[32,',
    )
    old, new = excerpt(SIGNATURE, middle)
    assert old.startswith(
        "    def forward(self, ... L_self_modules_layer5_modules_0"
    ) and old.endswith(", ...")
    assert "f32[32, 64, 3, 3]" in new and len(new) < 200
    old, new = excerpt("a" * 300 + "X" + "b" * 300, "a" * 300 + "Y" + "b" * 300)
    assert old == "... " + "a" * 40 + "X" + "b" * 40 + " ..." and new.count("Y") == 1


def numstat(tmp: Path, old: list[str], new: list[str]) -> tuple[int, int]:
    (tmp / "a").write_text("".join(f"{line}\n" for line in old))
    (tmp / "b").write_text("".join(f"{line}\n" for line in new))
    done = subprocess.run(
        ["git", "diff", "--no-index", "--numstat", "--diff-algorithm=myers", "a", "b"],
        cwd=tmp,
        capture_output=True,
        text=True,
    )
    if not done.stdout:
        return 0, 0
    added, removed, _ = done.stdout.split("\t")
    return int(added), int(removed)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_changed_lines_are_counted_as_git_counts_them(tmp_path: Path) -> None:
    rng = random.Random(3)  # random lines: difflib's counts differ from git's in 25 of these 40
    for _ in range(40):
        old = [rng.choice("abcdefg") for _ in range(rng.randint(0, 40))]
        new = [rng.choice("abcdefg") for _ in range(rng.randint(0, 40))]
        assert changed_lines(old, new) == numstat(tmp_path, old, new), (old, new)
    # a block of a kernel's body moved
    old = [f"    tmp{i} = tmp{i - 1} + {i}" for i in range(60)]
    new = old[30:] + old[:30]
    assert changed_lines(old, new) == numstat(tmp_path, old, new) == (30, 30)
