"""A `sitecustomize` that plays torch 2.11 on a machine whose driver sees `DRIVER_DEVICES` GPUs.

In the fork server's processes (the server, and the children it forks): torch tells the fork
server's preload that it was built with CUDA (to the rest of torch, a CPU build stays one),
`torch.cuda.is_available()` starts a thread (as asking the CUDA driver does) and answers
whether the driver sees a device, and importing Inductor's compile_fx asks it, as torch 2.11's
`_inductor/runtime/benchmarking.py` does at import; what it was told is kept in
`torch._inductor.compile_fx.ASKED`. In the process the preload asks the driver from
(`_DEVICES_SEEN`), `libcuda.so.1` is a driver that sees `DRIVER_DEVICES` devices. Put on the
import path of a pytest session (`PYTHONPATH`) by `tests/snapshot/fresh_process/test_fork_server.py`.
"""

import ctypes
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import time

PRELOAD = "pytest_torchcompile._torch.process.preload"
DEVICES = int(os.environ.get("DRIVER_DEVICES", "0"))


def driver():
    threading.Thread(target=time.sleep, args=(3600,), daemon=True, name="driver").start()
    return DEVICES > 0


class Driver(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in ("torch.backends.cuda", "torch.cuda", "torch._inductor.compile_fx"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            if name == "torch.backends.cuda":
                built = module.is_built
                module.is_built = lambda: (
                    sys._getframe(1).f_globals["__name__"] == PRELOAD or built()
                )
            elif name == "torch.cuda":
                module.is_available = driver
            else:
                module.ASKED = sys.modules["torch"].cuda.is_available()

        spec.loader.exec_module = exec_module
        return spec


class LibCuda:
    def cuInit(self, flags):
        return 0

    def cuDeviceGetCount(self, count):
        count._obj.value = DEVICES
        return 0


if "pytest_torchcompile.snapshot.fresh_process.zygote" in sys.orig_argv:
    sys.meta_path.insert(0, Driver())
elif any("cuDeviceGetCount" in arg for arg in sys.orig_argv):
    real = ctypes.CDLL
    ctypes.CDLL = lambda name, *args, **kwargs: (
        LibCuda() if name == "libcuda.so.1" else real(name, *args, **kwargs)
    )
