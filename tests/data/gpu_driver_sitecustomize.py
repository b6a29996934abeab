"""A `sitecustomize` that plays a GPU driver: importing Inductor's compile_fx starts a thread.

As the CUDA driver does on an H100 with torch 2.11, in the fork server's
processes alone (the server, and the children it forks). Put on the import
path of a pytest session (`PYTHONPATH`) by `tests/snapshot/fresh_process/
test_fork_server.py` and `benchmarks/fresh_runs.py --server-without-inductor`.
"""

import importlib.abc
import importlib.machinery
import sys
import threading
import time


class Driver(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch._inductor.compile_fx":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            threading.Thread(target=time.sleep, args=(3600,), daemon=True, name="driver").start()

        spec.loader.exec_module = exec_module
        return spec


if "pytest_torchcompile.snapshot.fresh_process.zygote" in sys.orig_argv:
    sys.meta_path.insert(0, Driver())
