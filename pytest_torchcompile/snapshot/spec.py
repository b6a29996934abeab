"""The compile settings of one marked test, parsed and validated once.

The marker's keywords become a frozen `CompileSpec`: the compile options
shared with `compile_benchmark` (`common/options.py`) plus this marker's
own. Everything that can be checked without torch is checked here, at the
first `compile_model` call, so a typo fails the test with a message that
names the keyword instead of a traceback from deep inside torch. Nothing
here imports torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ..common.options import COMPILE_MODES, CompileOptions, SpecError, folder_problem
from .artifacts.catalogue import ARTIFACT_EXTENSIONS

__all__ = ["ARTIFACT_EXTENSIONS", "COMPILE_MODES", "MARKER", "CompileSpec", "SpecError"]

MARKER = "compile_snapshot"


@dataclass(frozen=True, kw_only=True)
class CompileSpec(CompileOptions):
    """What `compile_model` compiles with and what it checks.

    The fields mirror `torch.compile`'s arguments plus the plugin's own
    (`artifacts`, `numerics`, `grads`, `rtol`, `atol`, `precompile`, and the numerics
    settings below). `None` means "the default": for `artifacts` every
    artifact the backend produced, for `grads` on when any input or parameter
    requires grad, for tolerances the dtype-aware defaults of
    `torch.testing.assert_close`, for `fp64_reference` on for every
    floating result below float64 (`False` turns it off).

    `fp64_reference`: a result outside tolerance still passes when its error
    against a float64 run is at most `fp64_multiplier` times eager's own
    (plus atol). `fallback_random`: Inductor calls eager's random ops, so
    dropout draws the same numbers in both runs. `bisect`: after a mismatch
    in Inductor or its decompositions, ask torch's compiler bisector which
    pass or lowering did it. `check_stride`: a result laid out with other
    strides than eager's fails (as `torch.testing.assert_close(check_stride=True)`).
    `run_program`: after each call, the case's program file (`write_program`)
    runs in a fresh process with torch.compile trapped and must give the
    compiled run's results bit for bit. `snapshot_dir`: this test's snapshot
    folder template instead of the run's (`torchcompile_snapshot_dir`), for
    tests whose compiler output differs where the rest of the suite's does
    not (one set per Python for them alone).
    """

    marker: ClassVar[str] = MARKER

    artifacts: tuple[str, ...] | None = None
    numerics: bool = True
    grads: bool | None = None
    rtol: float | None = None
    atol: float | None = None
    fp64_reference: bool | None = None
    fp64_multiplier: float = 3.0
    fallback_random: bool = False
    bisect: bool = True
    check_stride: bool = False
    precompile: bool = False
    run_program: bool = False
    snapshot_dir: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in (
            "numerics",
            "fallback_random",
            "bisect",
            "check_stride",
            "precompile",
            "run_program",
        ):
            self.check_choice(name, getattr(self, name), (True, False))
        self.check_choice("grads", self.grads, (None, True, False))
        self.check_choice("fp64_reference", self.fp64_reference, (None, True, False))
        _check_multiplier(self.fp64_multiplier)
        object.__setattr__(self, "artifacts", _check_artifacts(self.artifacts))
        _check_tolerances(self.rtol, self.atol)
        _check_snapshot_dir(self.snapshot_dir)


def _check_artifacts(artifacts: object) -> tuple[str, ...] | None:
    if artifacts is None:
        return None
    if isinstance(artifacts, str) or not isinstance(artifacts, (tuple, list)):
        raise SpecError(
            f"{MARKER}(artifacts={artifacts!r}) must be a tuple of artifact names, e.g. ('summary', 'guards')"
        )
    odd = [a for a in artifacts if not isinstance(a, str)]
    if odd:
        raise SpecError(
            f"{MARKER}(artifacts=...) holds {odd[0]!r}, which is not an artifact name; give a flat tuple of names, "
            "e.g. artifacts=('summary', 'guards')"
        )
    unknown = [a for a in artifacts if a not in ARTIFACT_EXTENSIONS]
    if unknown:
        raise SpecError(
            f"{MARKER}(artifacts=...) has unknown artifact {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(ARTIFACT_EXTENSIONS)}"
        )
    return tuple(dict.fromkeys(artifacts))


def _check_snapshot_dir(template: object) -> None:
    """A folder template as `torchcompile_snapshot_dir` takes; its placeholders are checked
    where the folder is resolved (the session: `files.placeholders` is a room above this one)."""
    if template is None:
        return
    if not isinstance(template, str) or not template.strip():
        raise SpecError(
            f"{MARKER}(snapshot_dir={template!r}) must name a folder relative to the rootdir, "
            "beside the run's folder, e.g. 'snapshots-py{python}/{torch}/{device}'"
        )
    problem = folder_problem(template)
    if problem is not None:
        raise SpecError(f"{MARKER}(snapshot_dir={template[:60]!r}) {problem}")


def _is_finite_number(value: object) -> bool:
    """An int or float that is neither NaN nor infinite (`nan < 1` is False, so test it first)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _check_multiplier(value: object) -> None:
    if not _is_finite_number(value) or value < 1:  # type: ignore[operator]
        raise SpecError(
            f"{MARKER}(fp64_multiplier={value!r}) must be a finite number >= 1 (how many times eager's own error "
            "compiled may have), e.g. 3.0"
        )


def _check_tolerances(rtol: object, atol: object) -> None:
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is None:
            continue
        if not _is_finite_number(value) or value < 0:  # type: ignore[operator]
            raise SpecError(
                f"{MARKER}({name}={value!r}) must be a non-negative number, and finite, e.g. 1e-4 "
                "(to skip the numerics check, set numerics=False)"
            )
    if (rtol is None) != (atol is None):
        raise SpecError(
            f"{MARKER}: give both rtol= and atol=, or neither (as torch.testing.assert_close)"
        )
