"""Name the pipeline stage that made compiled numerics diverge from eager.

torch.compile is a pipeline: Dynamo captures a graph, AOTAutograd traces
forward and backward, Inductor's decompositions and partitioner rewrite the
graph, Inductor lowers it to kernels. Each prefix of the pipeline is a
backend of its own (`eager`, `aot_eager`, `aot_eager_decomp_partition`), so
re-running the failing case with each, in order, finds the first stage whose
result diverges. That runs only after a mismatch: a passing check compiles
nothing extra.

Where torch's compiler bisector can narrow an Inductor or decomposition
failure further (which pass, which lowering, which decomposition), its answer
is added as a line of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..._torch.formats import OP_OVERLOAD
from ..._torch.patterns.code import RANDOM_OP

#: stage name -> the backend that runs the pipeline up to and including it.
STAGES: tuple[tuple[str, str], ...] = (
    ("dynamo", "eager"),
    ("aot_autograd", "aot_eager"),
    ("decompositions", "aot_eager_decomp_partition"),
    ("inductor", "inductor"),
)

#: Replays the case with a backend; returns a one-line description of the
#: divergence from eager, or None when that backend agrees with eager.
Replay = Callable[[str], "str | None"]


def random_ops(graph_texts: Iterable[str]) -> list[str]:
    """The random ops (`aten.native_dropout`, ...) that printed FX graphs call."""
    found = {f"aten.{m.group(1)}" for text in graph_texts for m in RANDOM_OP.finditer(text)}
    return sorted(found)


@dataclass(frozen=True)
class Attribution:
    """Where a divergence starts, and how each earlier stage fared."""

    stage: str
    checked: tuple[tuple[str, str], ...]  # (stage, "ok" | "diverges" | "could not run: ...")
    bisected: str | None = None

    def lines(self) -> list[str]:
        lines = [f"diverges at stage: {self.stage}"]
        if self.checked:
            lines.append(
                "stages re-run: "
                + ", ".join(f"{stage} {verdict}" for stage, verdict in self.checked)
            )
        if self.bisected:
            lines.append(f"narrowed by torch's compiler bisector: {self.bisected}")
        return lines


def stages_for(backend: str, is_name: bool) -> list[tuple[str, str]]:
    """The (stage, backend) pairs to check, ending with the requested backend.

    The stages nest only along torch's own pipeline; a custom or third-party
    backend is checked after Dynamo alone, since it may not use AOTAutograd.
    """
    backends = [b for _, b in STAGES]
    if is_name and backend in backends:
        return list(STAGES[: backends.index(backend) + 1])
    return [STAGES[0], (backend, backend)]


def attribute(backend: str, is_name: bool, replay: Replay) -> Attribution:
    """Re-run the earlier stages; the first that diverges is the culprit.

    The requested backend itself is known to diverge (that is why this
    runs), so it is not re-run: when no earlier stage diverges, it is the one.
    """
    *earlier, (last, _) = stages_for(backend, is_name)
    checked: list[tuple[str, str]] = []
    for stage, stage_backend in earlier:
        try:
            diverged = replay(stage_backend) is not None
        except Exception as exc:  # a stage that cannot run says nothing about numerics
            checked.append(
                (
                    stage,
                    f"could not run: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
                )
            )
            continue
        checked.append((stage, "diverges" if diverged else "ok"))
        if diverged:
            return Attribution(stage, tuple(checked))
    return Attribution(last, tuple(checked))


def can_bisect(attribution: Attribution, backend: str, is_name: bool) -> bool:
    """torch's bisector swaps backends by name: only for torch's own pipeline."""
    return is_name and backend == "inductor" and attribution.stage in ("decompositions", "inductor")


def bisect(replay: Replay) -> str | None:
    """Ask torch's compiler bisector which pass or lowering breaks the case.

    `replay` is called with "inductor"; the bisector overrides that backend
    and switches subsystems off between calls (`_torch/bisector.py`).
    """
    from ..._torch import bisector

    try:
        result = bisector.bisect(lambda: replay("inductor") is None)
    except (
        Exception
    ) as exc:  # the bisector is a debugging aid; its failure must not hide the mismatch
        return f"could not bisect ({type(exc).__name__}: {exc})"
    if result is None:
        return None
    parts = [result.backend]
    if result.subsystem:
        parts.append(result.subsystem)
    if result.bisect_number:
        parts.append(f"application #{result.bisect_number}")
    if result.debug_info and result.debug_info != result.subsystem:
        parts.append("(" + OP_OVERLOAD.sub(r"\1.\2", result.debug_info) + ")")
    return " ".join(parts)
