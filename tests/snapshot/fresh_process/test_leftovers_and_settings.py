"""What a killed run leaves is removed by the next one, never a live run's; a bad setting is a usage error.

A pytest killed with SIGKILL cannot remove its fresh-process folders (the
pickled model and inputs, the fork server's log). The next session removes
them as it starts: only the plugin's own names, this user's, whose owner is
dead (the lock it held is free, its pid gone). A folder another run still
holds, one without its lock file, one whose pid lives, and anything not
named as the plugin names its folders stay.
"""

from __future__ import annotations

import fcntl
import os
import sys

import pytest

from pytest_torchcompile.snapshot.fresh_process.settings import FORK_VARIABLE, TIMEOUT_VARIABLE

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the fork server runs on Linux")

KILLED = """
import os, signal, pytest, torch

class Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary",), run_program=True)
def test_killed_after_a_program_run(compile_model):
    compile_model(Lin(), torch.randn(2, 4))
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_runs_folders_go_at_the_next_start_and_no_live_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = pytester.mkdir("temp")
    monkeypatch.setenv("TMPDIR", str(temp))
    # what must stay: a live run's folder (its lock held here), one without a lock file (its pid
    # long gone), one whose lock is free but whose pid is alive (this process), another name
    live = temp / f"torchcompile_program_{os.getpid()}_live0001"
    unlocked = temp / "torchcompile_precompile_999999999_nolock01"
    alive = temp / f"torchcompile_forkserver_{os.getpid()}_alive001"
    other = temp / "torchcompile_other_999999999_abcdefgh"
    for folder in (live, unlocked, alive, other):
        folder.mkdir()
        (folder / "call.pt").write_bytes(b"kept")
    for folder in (live, alive, other):
        (folder / "owner.lock").touch()
    held = os.open(live / "owner.lock", os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        pytester.makepyfile(test_killed=KILLED)
        pytester.runpytest("--update-snapshots")
        left = sorted(p.name for p in temp.iterdir() if p not in (live, unlocked, alive, other))
        assert [name.split("_")[1] for name in left] == ["forkserver", "program"], left
        pytester.makepyfile(test_killed="def test_nothing():\n    pass\n")
        pytester.runpytest().assert_outcomes(passed=1)
        assert sorted(temp.iterdir()) == sorted([live, unlocked, alive, other])
        assert all((f / "call.pt").read_bytes() == b"kept" for f in temp.iterdir())
    finally:
        os.close(held)


@pytest.mark.torch_independent
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        (TIMEOUT_VARIABLE, "nan"),
        (TIMEOUT_VARIABLE, "inf"),
        (TIMEOUT_VARIABLE, "1e309"),
        (FORK_VARIABLE, "yes"),
    ],
)
def test_a_setting_that_is_not_one_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-torchcompile: {variable}='{value}'*give *"])
