"""A failing case replayed from its start: which stage diverged, and what fp64 says.

Only runs after a mismatch (a passing check compiles nothing extra). From
the model as it was before the first call (`pristine`) and a copy of every
call's inputs, the case is re-run with the backend of each earlier pipeline
stage (`attribution.py`), with `fallback_random` when the graph draws random
numbers, under torch's compiler bisector, and in eager float64 for the
reference that excuses rounding noise. Eager's references depend
only on the calls so far, so all of those runs share one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..._torch import config
from ..._torch.trace import trace_only_to
from ...common.capture import reset_dynamo
from ...common.capture_log import CaptureLog
from ...common.copies import clone_inputs, copy_model
from ...common.diagnose import first_line
from ..spec import MARKER, CompileSpec
from .attribution import Attribution, attribute, bisect, can_bisect, random_ops
from .calls import Inputs, observed_call
from .check import Mismatch, Tolerance, compare, format_mismatches
from .fp64 import needs_fp64, to_fp64, tolerate_with_fp64
from .observe import Observed


@dataclass
class Replay:
    """What a case needs to re-run itself: its settings, start state, calls and capture."""

    spec: CompileSpec
    pristine: Any
    calls: list[Inputs]
    log: CaptureLog
    references: dict[tuple[bool, int], Observed] = field(default_factory=dict, repr=False)

    @property
    def tolerance(self) -> Tolerance:
        spec = self.spec
        return Tolerance(
            spec.rtol, spec.atol, spec.fp64_reference, spec.fp64_multiplier, spec.check_stride
        )

    def mismatches(self, seen: Observed, eager_seen: Observed) -> list[Mismatch]:
        """Mismatches beyond tolerance, less those an fp64 reference excuses."""
        tolerance = self.tolerance
        mismatches = compare(seen, eager_seen, tolerance)
        if not needs_fp64(mismatches, tolerance):
            return mismatches
        try:
            reference = self._reference(fp64=True)
        except (
            Exception
        ) as exc:  # e.g. an op without a float64 kernel: keep the plain verdict, say why
            note = f"; no fp64 reference ({type(exc).__name__}: {first_line(exc)})"
            return [
                dataclasses.replace(m, detail=m.detail + note) if m.tensors is not None else m
                for m in mismatches
            ]
        return tolerate_with_fp64(mismatches, reference, tolerance)

    def numerics_failure(self, mismatches: list[Mismatch]) -> str:
        """The failure text: which stage diverged (or why the comparison is meaningless), then the mismatches."""
        if not any(m.comparable for m in mismatches):  # nothing diverged: no stage to blame
            return "\n".join(
                [
                    f"numerics: cannot compare compiled's results with eager's (set {MARKER}(numerics=False) to skip the check):"
                ]
                + format_mismatches(mismatches)
            )
        lines = [f"compiled ({self.spec.backend_name}) differs from eager:"]
        random = [] if self.spec.fallback_random else random_ops(self._graph_texts())
        if random and self._passes_with_fallback_random():
            lines.append(
                f"the compiled graph draws random numbers ({', '.join(random)}) from another random stream than "
                "eager, so this comparison is meaningless (with fallback_random=True it passes): set "
                "compile_snapshot(fallback_random=True) to make compiled code call eager's random ops, or use model.eval()"
            )
        else:
            lines.extend(self._attribution(fallback_random=bool(random)).lines())
            if random:
                lines.append(
                    f"(random ops {', '.join(random)}: stages re-run with fallback_random=True; it does not explain the divergence)"
                )
        return "\n".join(lines + format_mismatches(mismatches))

    def _passes_with_fallback_random(self) -> bool:
        try:
            return self._replay(self.spec.compile_kwargs(), fallback_random=True) is None
        except Exception:  # the replay could not run: it explains nothing
            return False

    def _graph_texts(self) -> list[str]:
        """AOT graphs where there are any (eval-mode dropout is gone there), else Dynamo's."""
        aot = [
            t
            for name in ("aot_forward", "aot_inference", "aot_backward")
            for t in self.log.payloads(name)
        ]
        return aot or self.log.payloads("dynamo_graph")

    def _attribution(self, fallback_random: bool) -> Attribution:
        backend, is_name = self.spec.backend_name, isinstance(self.spec.backend, str)

        def stage(stage_backend: str) -> str | None:
            kwargs = {
                "backend": stage_backend,
                "fullgraph": self.spec.fullgraph,
                "dynamic": self.spec.dynamic,
            }
            return self._replay(kwargs, fallback_random, self._requested_config(stage_backend))

        found = attribute(backend, is_name, stage)
        if self.spec.bisect and can_bisect(found, backend, is_name):
            found = dataclasses.replace(found, bisected=bisect(stage))
        return found

    def _replay(
        self,
        compile_kwargs: dict[str, object],
        fallback_random: bool,
        inductor: dict[str, object] | None = None,
    ) -> str | None:
        """Re-run the case from its start with other compile settings; describe the first mismatch, if any."""
        reference = self._reference(fp64=False)
        reset_dynamo()
        module = copy_model(self.pristine)
        compiled = torch.compile(module, **compile_kwargs)
        random = config.FALLBACK_RANDOM if fallback_random or self.spec.fallback_random else None
        with trace_only_to(None), config.patched(config.HOST_PINNED_CONFIG, inductor, random):
            for inputs in self.calls:
                _, seen = observed_call(compiled, module, clone_inputs(inputs), self.spec.grads)
        mismatches = [m for m in self.mismatches(seen, reference) if m.comparable]
        return str(mismatches[0]) if mismatches else None

    def _reference(self, fp64: bool) -> Observed:
        """Eager's observation of the last call, replayed from the case's start (in float64 if asked)."""
        key = (fp64, len(self.calls))
        if key not in self.references:
            self.references[key] = self._replay_eager(to_fp64 if fp64 else lambda value: value)
        return self.references[key]

    def _replay_eager(self, convert: Callable[[Any], Any]) -> Observed:
        """Eager from the case's start (converted, e.g. to float64); the last call's observation."""
        module = convert(copy_model(self.pristine))
        seen: Observed = {}
        for inputs in self.calls:
            _, seen = observed_call(module, module, convert(clone_inputs(inputs)), self.spec.grads)
        return seen

    def _requested_config(self, backend: str) -> dict[str, object]:
        """The requested mode and options as Inductor config, for the bisector's Inductor replays."""
        if backend != self.spec.backend_name or not isinstance(self.spec.backend, str):
            return {}
        return {
            **config.mode_options(self.spec.mode, self.spec.dynamic),
            **dict(self.spec.options or {}),
        }
