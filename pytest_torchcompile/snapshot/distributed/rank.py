"""One rank of a distributed case: `main([FOLDER, RANK, PARENT])`, forked or `python -m` this module.

It joins the process group through the case's file store, says so
(`rank<N>.joined`: the case's timeout starts once every rank has), reads the
request, then builds its models from the factory (seeded: every rank and
every model starts from the same weights), runs the eager reference (the
same wrapper, no compile) and the compiled model under the capture, each
with a backward when the case has gradients, checks numerics after the
collectives (`numerics.py`), and writes its `RankReport`. It dies with its
parent, and on SIGUSR1 writes every thread's stack to its stderr (where it
hangs, when the parent's deadline passes).
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import pickle
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..._torch import config, distributed
from ..._torch.tensors import map_tensors
from ...common.capture_log import CaptureLog
from ...common.compiling import compile_with, compiling
from ...common.copies import clone_inputs
from ...common.counters import counters
from ...common.diagnose import user_traceback
from ...common.named_cases import CaseFailure
from ..artifacts.normalize import Normalizer
from ..files.placeholders import case_device
from ..numerics.calls import SEED, Inputs
from .numerics import observed, verdict
from .report import JOINED_FILE, REQUEST_FILE, SETUP_FILE, RankReport, Share
from .request import RankRequest
from .texts import buckets, rank_texts
from .wrappers import Wrapped, wrap

_PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> int:
    folder, rank, parent = Path(argv[0]), int(argv[1]), int(argv[2])
    _die_with(parent)
    faulthandler.enable()  # a crash leaves its Python stack in the stderr the parent shows
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    setup = json.loads((folder / SETUP_FILE).read_text())
    distributed.join(
        str(folder / "store"), rank, setup["world_size"], setup["backend"], setup["timeout_s"]
    )
    (folder / JOINED_FILE.format(rank=rank)).touch()
    report = RankReport(rank)
    try:
        report = run(_request(folder), rank)
    except CaseFailure as exc:
        report.failure = str(exc)
    except BaseException as exc:  # the model's or the plugin's: the parent shows its traceback
        report.error = user_traceback(exc)
    report.save(folder)
    distributed.leave()
    return 0 if report.failure is None and report.error is None else 1


def _request(folder: Path) -> RankRequest:
    """The case as the parent pickled it; a factory whose module this process cannot import is
    the user's to fix (a test module imported under another name)."""
    try:
        request: RankRequest = pickle.loads((folder / REQUEST_FILE).read_bytes())
    except (ImportError, AttributeError) as exc:
        raise CaseFailure(
            f"usage error: the rank could not load the case ({type(exc).__name__}: {exc}): "
            "compile_distributed's model factory (and a wrapper or backend function) must be "
            "importable by its module's name in a new process; pytest's default import mode "
            "(prepend) puts a test file's folder on sys.path, --import-mode=importlib does not: "
            "there, define them in a module on sys.path"
        ) from exc
    return request


def _die_with(parent: int) -> None:
    """Exit when the parent does (Linux), so no rank outlives a killed pytest."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent and os.getppid() != parent:  # 0: forked, its parent is the fork server
        os._exit(1)


def run(request: RankRequest, rank: int) -> RankReport:
    """The case on this rank: eager reference, compiled run under the capture, numerics, texts."""
    call, spec = request.call, request.spec
    device = torch.device("cuda", rank) if call.device == "cuda" else torch.device("cpu")
    normalizer = Normalizer.for_paths(request.rootdir, str(Path(torch.__file__).parent))
    inputs: Inputs = (tuple(_inputs_on(device, call.inputs)), {})
    eager = wrap(_built(call.factory, device), call, None)
    compiled = wrap(_built(call.factory, device), call, lambda module: compile_with(module, spec))
    eager_out, eager_seen = observed(eager, clone_inputs(inputs), spec.grads)
    log = CaptureLog()
    random = config.FALLBACK_RANDOM if spec.fallback_random else None
    with distributed.compiled_runs() as runs:
        with compiling(log, spec, random, normalize=normalizer) as spent:
            out, seen = observed(compiled, clone_inputs(inputs), spec.grads)
    counted = counters(log)
    ran = sum(runs[(f.key.frame_id, f.key.compile_id)] * f.ops for f in counted.frames)
    bare = _built(call.factory, device)
    share = Share(ran, distributed.eager_ops(lambda: bare(*inputs[0])))
    fp64 = _fp64_run(call, device, inputs, spec.grads)
    texts, summary = rank_texts(
        log, counted, spec.backend_name, spec.artifacts, normalizer, share, request.rootdir
    )
    return RankReport(
        rank,
        texts=texts,
        summary=summary,
        counters=counted.as_dict(),
        device_key=case_device(compiled.module, inputs[0]),
        compile_seconds=spent.seconds,
        buckets=buckets(log),
        share=share,
        numerics=verdict(spec, seen, eager_seen, fp64, call.world_size) if spec.numerics else None,
        output=_on_cpu(out),
        eager_output=_on_cpu(eager_out),
    )


def _built(factory: Callable[[], Any], device: torch.device) -> Any:
    """A model from the factory, seeded as every rank's and every run's is, on the rank's device."""
    torch.manual_seed(SEED)
    model = factory()
    if not isinstance(model, torch.nn.Module):
        raise CaseFailure(
            f"usage error: compile_distributed's model factory returned {type(model).__name__}, "
            "not an nn.Module: the wrappers shard and synchronise a module's parameters"
        )
    return model.to(device)


def _inputs_on(device: torch.device, value: Any) -> Any:
    """The inputs on the rank's device, each tensor its own copy that keeps `requires_grad`."""
    return map_tensors(
        lambda t: t.detach().to(device, copy=True).requires_grad_(t.requires_grad), value
    )


def _on_cpu(value: Any) -> Any:
    """An output as the parent can read it: on the CPU, as this rank's shard, no autograd."""
    return map_tensors(lambda t: distributed.local(t).detach().cpu(), value)


def _fp64_run(
    call: Any, device: torch.device, inputs: Inputs, grads: bool | None
) -> Callable[[], dict[str, object]]:
    """The eager reference in float64, run when any rank asks for it (every rank then does)."""
    from ..numerics.fp64 import to_fp64

    def reference() -> dict[str, object]:
        model: Wrapped = wrap(to_fp64(_built(call.factory, device)), call, None)
        return observed(model, to_fp64(clone_inputs(inputs)), grads)[1]

    return reference


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
