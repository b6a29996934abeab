"""How a rank's process starts: forked from a server that imported torch once, or a new interpreter.

A new interpreter spends seconds importing torch, Dynamo and the plugin
before it joins the process group (tens of seconds on a busy machine), and
a case starts one per rank. So ranks are forked from multiprocessing's fork
server, preloaded with the rank's module: one per pytest process (xdist
worker), started by its first distributed case and ended with it, forking
every rank of every later case in milliseconds. It imported torch under the
environment it started with, and torch reads some variables at import: a
case run under another environment (less the variables that change per test
or per rank) starts new interpreters instead, as it does where `fork` is
missing (not Linux), where the server cannot start (its socket's path, under
`TMPDIR`, too long) or `PTC_FORK_SERVER=0`. Either way the rank leads a
session of its own (so it and what it starts stop together) and writes its
output to the case's files.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Protocol

from ..fresh_process.servers import child_env, forking

RANK_MODULE = "pytest_torchcompile.snapshot.distributed.rank"
#: variables that change per test or per rank, which torch does not read at import
_PER_CALL = frozenset({"PYTEST_CURRENT_TEST", "PYTHONPATH", "RANK", "LOCAL_RANK", "WORLD_SIZE"})
#: the environment the fork server started with: multiprocessing keeps one server per process
_SERVER_ENV: list[frozenset[tuple[str, str]]] = []


class RankProcess(Protocol):
    """A started rank: its pid, its exit status once it exited (negative: the signal)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self) -> int | None: ...


def start_rank(folder: Path, index: int, world_size: int) -> RankProcess:
    env = {
        **child_env(),
        "RANK": str(index),
        "LOCAL_RANK": str(index),
        "WORLD_SIZE": str(world_size),
    }
    args = [str(folder), str(index)]
    if _server_fits(env):
        context = multiprocessing.get_context("forkserver")
        process = context.Process(target=_forked, args=(args, env), name=f"rank {index}")
        try:
            process.start()
            return _Forked(process)
        except OSError:  # no server (its socket's path too long for a long TMPDIR): interpreters
            _SERVER_ENV[:] = [frozenset({("", "the fork server did not start")})]
    with (
        open(folder / f"rank{index}.stdout", "wb") as out,
        open(folder / f"rank{index}.stderr", "wb") as err,
    ):
        return subprocess.Popen(
            [sys.executable, "-m", RANK_MODULE, *args, str(os.getpid())],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )


def _server_fits(env: dict[str, str]) -> bool:
    """Whether ranks may fork from the server: started now, or started under this environment."""
    if not forking():
        return False
    key = frozenset((k, v) for k, v in env.items() if k not in _PER_CALL)
    if not _SERVER_ENV:
        multiprocessing.get_context("forkserver").set_forkserver_preload([RANK_MODULE])
        _SERVER_ENV.append(key)
    return _SERVER_ENV[0] == key


def _forked(args: list[str], env: dict[str, str]) -> None:
    """In the forked rank: a session of its own, the case's environment and output files."""
    os.setsid()
    folder, index = Path(args[0]), args[1]
    for fd, name in ((1, f"rank{index}.stdout"), (2, f"rank{index}.stderr")):
        target = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    os.environ.clear()
    os.environ.update(env)
    from . import rank

    code = rank.main([*args, "0"])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class _Forked:
    """A forked rank as a `RankProcess`."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self.process = process

    @property
    def pid(self) -> int:
        assert self.process.pid is not None
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.exitcode

    def wait(self) -> int | None:
        self.process.join()
        return self.process.exitcode
