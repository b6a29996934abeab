"""Why a case cannot be written as a program file: one exception, and the checks made before writing.

`write_program` never writes a file that might run differently from the
compiled model. What it cannot write as correct Python it refuses with
`ProgramRefused`, naming the frame (or the case) and the reason; the
`program` snapshot of such a case holds the same text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ...._torch.formats import GLOBAL_STATE, GLOBAL_STATE_SEPARATOR
from ...._torch.patterns.code import GPU_OUTPUT_CODE, RANDOM_OP
from ....common.capture_log import CaptureLog, FrameKey
from ..facts.data import CompileSettings

#: backends whose compiled graphs the file knows how to run.
BACKENDS = ("inductor", "aot_eager", "eager")
#: text of Inductor output code that loads frozen parameters (freezing=True) instead of taking them as inputs.
_FROZEN = "_frozen_param"


class ProgramRefused(Exception):
    """The case cannot be written as a program file that runs like the compiled model; says where and why."""

    def __init__(self, where: str, reason: str) -> None:
        self.where, self.reason = where, reason
        super().__init__(f"write_program: {where}: {reason}")


def frame_name(key: FrameKey, name: str) -> str:
    return f"frame {key.frame_id} compile {key.compile_id} ({name})"


def check_case(log: CaptureLog, backend: str, settings: CompileSettings) -> None:
    """Refuse what no frame of this case can be written with (backend, CUDA graphs, random numbers, autocast)."""
    if backend not in BACKENDS:
        raise ProgramRefused(
            "the case",
            f"backend {backend!r}: the file runs Inductor's output code, AOTAutograd's graphs and Dynamo's graphs ({', '.join(BACKENDS)})",
        )
    if settings.cudagraphs:
        raise ProgramRefused(
            "the case",
            "CUDA graphs (mode='reduce-overhead' or triton.cudagraphs): the file does not record and replay CUDA graphs yet",
        )
    graphs = [
        t for name in ("aot_forward", "aot_backward", "aot_inference") for t in log.payloads(name)
    ] or log.payloads("dynamo_graph")
    random = sorted({f"aten.{m.group(1)}" for text in graphs for m in RANDOM_OP.finditer(text)})
    # aot_eager and eager run the graph's random ops eagerly, on the generator the file seeds alike; Inductor's
    # CPU code draws its kernels' seeds from torch's default generator (`aten.randint` in `call`), which the
    # file, running that code verbatim, draws from alike
    if random and backend == "inductor" and not settings.fallback_random and _on_a_gpu(log):
        raise ProgramRefused(
            "the case",
            f"the graph draws random numbers ({', '.join(random)}) with Inductor's own generator on a GPU, which "
            "the file does not replay yet (untested); with compile_snapshot(fallback_random=True) Inductor calls "
            "eager's random ops and the file replays them",
        )
    if any(_FROZEN in code for code in log.payloads("output_code")):
        raise ProgramRefused(
            "the case",
            "Inductor froze the parameters into its code (freezing=True); the file binds parameters by name",
        )
    for key, rows in log.guards.items():
        if _autocast_on(r.code for r in rows if r.kind == GLOBAL_STATE):
            raise ProgramRefused(
                f"frame {key.frame_id} compile {key.compile_id}",
                "it was compiled under autocast, which the file does not reproduce yet",
            )


def _on_a_gpu(log: CaptureLog) -> bool:
    """Whether any of Inductor's output code runs on a GPU (Triton kernels or device buffers)."""
    return any(GPU_OUTPUT_CODE.search(code) for code in log.payloads("output_code"))


def _autocast_on(codes: Iterable[str]) -> bool:
    for code in codes:
        if GLOBAL_STATE_SEPARATOR in code:
            try:
                state = json.loads(code.split(GLOBAL_STATE_SEPARATOR, 1)[1])
            except ValueError:
                continue
            if any(state.get("autocast_state", {}).get("enabled", [])):
                return True
    return False
