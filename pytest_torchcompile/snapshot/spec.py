"""The compile settings of one marked test, parsed and validated once.

The marker's keywords become a frozen `CompileSpec`. Everything that can be
checked without torch is checked here, at the first `compile_model` call, so a
typo fails the test with a message that names the keyword instead of a
traceback from deep inside torch. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

MARKER = "compile_snapshot"

#: artifact name -> file extension. The extension says what the file holds and
#: is never `.py`, so pytest does not try to import a snapshot.
ARTIFACT_EXTENSIONS: dict[str, str] = {
    "summary": "txt",
    "dynamo_graph": "fx.txt",
    "guards": "guards.txt",
    "aot_forward": "fx.txt",
    "aot_backward": "fx.txt",
    "aot_inference": "fx.txt",
    "post_grad_graph": "fx.txt",
    "output_code": "code.txt",
    "runtime_wrapper": "code.txt",
    "transformed_code": "code.txt",
    "program": "py.txt",
}

COMPILE_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class SpecError(ValueError):
    """A marker argument is wrong; the message names it and what is allowed."""


@dataclass(frozen=True, kw_only=True)
class CompileSpec:
    """What `compile_model` compiles with and what it checks.

    The fields mirror `torch.compile`'s arguments plus the plugin's own
    (`artifacts`, `numerics`, `grads`, `rtol`, `atol`, `precompile`, and the numerics
    settings below). `None` means "the default": for `artifacts` every
    artifact the backend produced, for `grads` on when any input or parameter
    requires grad, for tolerances the dtype-aware defaults of
    `torch.testing.assert_close`, for `fp64_reference` on for float16 and
    bfloat16 results only.

    `fp64_reference`: a result outside tolerance still passes when its error
    against a float64 run is at most `fp64_multiplier` times eager's own
    (plus atol). `fallback_random`: Inductor calls eager's random ops, so
    dropout draws the same numbers in both runs. `bisect`: after a mismatch
    in Inductor or its decompositions, ask torch's compiler bisector which
    pass or lowering did it. `check_stride`: a result laid out with other
    strides than eager's fails (as `torch.testing.assert_close(check_stride=True)`).
    """

    backend: str | Callable[..., Any] = "inductor"
    mode: str | None = None
    dynamic: bool | None = None
    fullgraph: bool = False
    options: Mapping[str, Any] | None = None
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

    def __post_init__(self) -> None:
        _check_backend(self.backend)
        _check_choice("mode", self.mode, COMPILE_MODES)
        _check_choice("dynamic", self.dynamic, (None, True, False))
        _check_choice("fullgraph", self.fullgraph, (True, False))
        _check_choice("numerics", self.numerics, (True, False))
        _check_choice("grads", self.grads, (None, True, False))
        _check_choice("fp64_reference", self.fp64_reference, (None, True, False))
        _check_choice("fallback_random", self.fallback_random, (True, False))
        _check_choice("bisect", self.bisect, (True, False))
        _check_choice("check_stride", self.check_stride, (True, False))
        _check_multiplier(self.fp64_multiplier)
        _check_choice("precompile", self.precompile, (True, False))
        _check_options(self.options)
        if self.mode is not None and self.options:
            raise SpecError("mode= and options= cannot both be given (torch.compile takes one or the other)")
        object.__setattr__(self, "artifacts", _check_artifacts(self.artifacts))
        _check_tolerances(self.rtol, self.atol)

    @property
    def backend_name(self) -> str:
        """The backend as a user reads it: its name, or the callable's name."""
        if isinstance(self.backend, str):
            return self.backend
        return getattr(self.backend, "__name__", type(self.backend).__name__)

    def compile_kwargs(self) -> dict[str, Any]:
        """The keyword arguments for `torch.compile`, leaving out defaults."""
        kwargs: dict[str, Any] = {"backend": self.backend, "fullgraph": self.fullgraph, "dynamic": self.dynamic}
        if self.mode is not None:
            kwargs["mode"] = self.mode
        if self.options:
            kwargs["options"] = dict(self.options)
        return kwargs

    @classmethod
    def from_marker(cls, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> CompileSpec:
        """Build a spec from `mark.args` / `mark.kwargs`, rewording errors."""
        if args:
            raise SpecError(f"{MARKER} takes keyword arguments only, got positional {args!r}; allowed keywords: {allowed_keywords()}")
        unknown = sorted(set(kwargs) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise SpecError(f"{MARKER} got unknown keyword {', '.join(map(repr, unknown))}; allowed keywords: {allowed_keywords()}")
        return cls(**kwargs)


def allowed_keywords() -> str:
    """The marker's keywords, derived from the dataclass (no hand-kept list)."""
    return ", ".join(f.name for f in dataclasses.fields(CompileSpec))


def marker_signature() -> str:
    """The marker's signature for `pytest --markers`."""
    params = ", ".join(f"{f.name}={f.default!r}" for f in dataclasses.fields(CompileSpec))
    return f"{MARKER}({params})"


def _check_choice(name: str, value: object, allowed: tuple[object, ...]) -> None:
    # `True == 1`: compare by identity for bools and None so `fullgraph=1` is refused.
    if not any(value is a or (isinstance(a, str) and value == a) for a in allowed):
        raise SpecError(f"{MARKER}({name}={value!r}) is not allowed; expected one of {', '.join(map(repr, allowed))}")


def _check_backend(backend: object) -> None:
    if isinstance(backend, str):
        if not backend:
            raise SpecError(f"{MARKER}(backend='') is empty; give a registered backend name such as 'inductor'")
        return
    if not callable(backend):
        raise SpecError(
            f"{MARKER}(backend={backend!r}) must be a backend name (str) or a callable (gm, example_inputs) -> callable"
        )


def _check_options(options: object) -> None:
    if options is None:
        return
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise SpecError(f"{MARKER}(options={options!r}) must be a dict of Inductor config names to values")


def _check_artifacts(artifacts: object) -> tuple[str, ...] | None:
    if artifacts is None:
        return None
    if isinstance(artifacts, str) or not isinstance(artifacts, (tuple, list)):
        raise SpecError(f"{MARKER}(artifacts={artifacts!r}) must be a tuple of artifact names, e.g. ('summary', 'guards')")
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
        raise SpecError(f"{MARKER}: give both rtol= and atol=, or neither (as torch.testing.assert_close)")
