"""pytest entry point (`pytest11`): loads the two wings' plugin modules.

The snapshot wing (`compile_snapshot`, `compile_model`, `--update-snapshots`)
and the perf wing (`compile_benchmark`, the perf gate) each register their
options, marker, fixture and per-run session. Neither this module nor the
two it loads imports torch: `pytest --help` in a project without compiled
models stays fast.
"""

pytest_plugins = ["pytest_torchcompile.snapshot.plugin", "pytest_torchcompile.perf.plugin"]
