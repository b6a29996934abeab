"""The order `-n 2 --dist loadfile` hands test modules to the workers: the longest first.

xdist gives a worker one module at a time, by default the modules with the
most tests first; a module whose tests each run a whole suite in a
subprocess (the committed-snapshot stability checks) has few tests and runs
for minutes, and started late it can leave the other worker idle at the end
of the run; handed out longest first, the short modules even the workers out. `SLOWEST` names the modules that take longest (worker seconds from
`--durations`, CI's torch 2.13 leg), and each worker that asks for a module
gets the first of them still waiting; the rest keep xdist's order.
"""

from __future__ import annotations

from typing import Any

#: the modules that take the most worker time, longest first (re-measure with `--durations=0`
#: when the suite changes: a module's time is the sum of its tests' setup, call and teardown)
SLOWEST = (
    "tests/stability/test_committed_other_libraries_stable.py",
    "tests/stability/test_committed_real_models_stable.py",
    "tests/stability/test_committed_zoo_stable.py",
    "tests/snapshot/files/test_hostile_disk.py",
    "tests/stability/test_fresh_snapshots_stable.py",
    "tests/snapshot/fresh_process/test_fork_server.py",
    "tests/snapshot/distributed/test_compile_distributed.py",
    "tests/snapshot/test_snapshot_workflow.py",
)


def longest_first_scheduler(config: Any, log: Any) -> Any:
    """xdist's `loadfile` scheduling with the `SLOWEST` modules handed out first; None (xdist's
    own choice) for any other `--dist`."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):
        def _assign_work_unit(self, node: Any) -> None:
            waiting = next((m for m in SLOWEST if m in self.workqueue), None)
            if waiting is not None:
                self.workqueue.move_to_end(waiting, last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)
