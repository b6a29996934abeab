"""pytest side of snapshots: flags and ini options, the marker, the `compile_model` fixture.

This module must not import torch: `pytest --help` in a project without
compiled models stays fast. Everything that needs torch is imported inside
the fixture. Per-run state lives in `TorchCompileSession` (`session.py`: the
hooks), registered as a plugin in `pytest_configure`; per-test state in
`item.stash`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ..common.hooks.flags import Option, add_option_ini, get_option_ini, group, warn_renamed
from ..common.hooks.session import close_session, open_session
from ..common.options import folder_option
from ..common.terminal import for_config
from .files.placeholders import placeholders
from .fresh_process.folders import remove_leftovers
from .fresh_process.settings import settings_problem
from .session import TextOnlyMode, TorchCompileSession, model_key, parse_marker
from .spec import MARKER, CompileSpec

if TYPE_CHECKING:
    from .distributed.fixture import CompileDistributed
    from .fixture import CompileModel

SNAPSHOT_DIR = Option(
    "snapshot_dir",
    "folder for snapshot files, relative to the rootdir (default snapshots); "
    "{torch} and {device} stand for torch's major.minor and the cases' device (cpu, cuda-sm90), "
    "e.g. snapshots/{torch}/{device}",
    default="snapshots",
    flag_kwargs={"type": folder_option("snapshots", placeholders), "metavar": "DIR"},
)
FULL_DIFF = Option(
    "full_diff",
    "on a snapshot failure, show the diff of every changed artifact (also on with -vv)",
    default=False,
    ini_type="bool",
    flag_kwargs={"action": "store_true"},
)
STRICT_TEXT = Option(
    "strict_text",
    "fail on any snapshot difference: a case whose verdict is `text only` (renumbering, renamed "
    "kernels, relabelled guards) fails instead of passing with a note",
    default=False,
    ini_type="bool",
    flag_kwargs={"action": "store_true"},
)
UPDATE_TEXT_ONLY = Option(
    "update_text_only",
    "write the snapshots of cases whose difference is text only; behaviour changes still fail, unwritten",
    ini=False,
    default=False,
    flag_kwargs={"action": "store_true"},
)
OPTIONS = (SNAPSHOT_DIR, FULL_DIFF, STRICT_TEXT, UPDATE_TEXT_ONLY)

session_key = pytest.StashKey[TorchCompileSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    # The user-facing contract (README, docs/design.md), syrupy's `--snapshot-update` by
    # another name: the one flag without the prefix.
    group(parser).addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        dest="update_snapshots",
        help="write new and changed snapshots, delete unused ones and stale folders (same as syrupy's --snapshot-update)",
    )
    for option in OPTIONS:
        add_option_ini(parser, option)


def pytest_configure(config: pytest.Config) -> None:
    problem = settings_problem()
    if problem is not None:
        raise pytest.UsageError(f"pytest-torchcompile: {problem}")
    remove_leftovers()  # the fresh processes' folders a killed run left (never a live run's)
    config.addinivalue_line(
        "markers",
        f"{CompileSpec.marker_signature()}: compile with torch.compile, snapshot the compiler's artifacts and check numerics against eager (pytest-torchcompile)",
    )
    warn_renamed(config, OPTIONS)
    full_diff = bool(get_option_ini(config, FULL_DIFF).value) or config.getoption("verbose") >= 2
    session = TorchCompileSession.from_config(
        config, get_option_ini(config, SNAPSHOT_DIR), full_diff, _text_only(config)
    )
    session.all_findings = config.getoption("verbose") >= 1
    open_session(config, session_key, session, "torchcompile-session")
    config.pluginmanager.register(session.housekeeping, "torchcompile-housekeeping")


def _text_only(config: pytest.Config) -> TextOnlyMode:
    """What a text-only difference does: pass (the default), fail (strict) or get written.

    `--torchcompile-update-text-only` beside `--update-snapshots` (which writes behaviour
    changes too) or `--torchcompile-strict-text` (which fails what it writes) is a usage
    error: which one the run obeys would be a guess. The ini `torchcompile_strict_text` is a
    project's standing rule, and the flag a run's one action: the flag is obeyed.
    """
    strict = get_option_ini(config, STRICT_TEXT)
    if get_option_ini(config, UPDATE_TEXT_ONLY).value:
        if config.getoption("update_snapshots"):
            raise pytest.UsageError(
                f"--update-snapshots and {UPDATE_TEXT_ONLY.flag} ask for different updates: "
                "--update-snapshots writes every difference, behaviour changes included, and "
                f"deletes unused files; {UPDATE_TEXT_ONLY.flag} writes only the cases whose "
                "difference is text only: give one of them"
            )
        if strict.value and strict.by_flag:
            raise pytest.UsageError(
                f"{UPDATE_TEXT_ONLY.flag} and {strict.source} contradict each other: the first "
                "writes the cases whose difference is text only, the second fails them: give one of them"
            )
        return TextOnlyMode(UPDATE_TEXT_ONLY.flag, STRICT_TEXT.flag, "update")
    return TextOnlyMode(UPDATE_TEXT_ONLY.flag, STRICT_TEXT.flag, "fail" if strict.value else "pass")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(session_key, None)
    if session is not None:
        session.processes.close()
        config.pluginmanager.unregister(session.housekeeping)
    close_session(config, session_key)


@pytest.fixture
def compile_model(request: pytest.FixtureRequest) -> Iterator[CompileModel]:
    """Compile a model (or function) with the marker's settings; returns a CompileResult per call."""
    from .fixture import CompileModel

    session = request.config.stash[session_key]
    spec, error = parse_marker(request.node.get_closest_marker(MARKER))
    progress = for_config(request.config).named(request.node.nodeid)
    model = CompileModel(
        spec=spec,
        spec_error=error,
        normalizer=session.normalizer(),
        progress=progress,
        processes=session.processes,
    )
    request.node.stash[model_key] = model
    yield model
    model.release()


@pytest.fixture
def compile_distributed(
    request: pytest.FixtureRequest, compile_model: CompileModel
) -> CompileDistributed:
    """Run a model factory on several ranks under DDP or FSDP2, compiled with the marker's
    settings; rank 0's artifacts are the snapshots, every other rank must match them."""
    from .distributed.fixture import CompileDistributed

    session = request.config.stash[session_key]
    return CompileDistributed(
        compile_model, str(request.config.rootpath), compile_model.progress, session.full_diff
    )
