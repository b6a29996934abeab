"""The compile options both markers take, validated once, and the checks behind them.

`compile_snapshot` and `compile_benchmark` take the same compile keywords
(`backend`, `mode`, `dynamic`, `fullgraph`, `options`, meaning what they
mean for `torch.compile`): `CompileOptions` holds and checks them, and each
marker's spec is a subclass that adds its own keywords. Keywords are
derived from the dataclass fields (no hand-kept list), and every message
names the marker and the keyword. Also here: the number and folder checks
the settings of both wings use. Nothing here imports torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

#: the longest file or folder name the usual file systems take (ext4, XFS, APFS, NTFS: 255)
MAX_NAME_BYTES = 255

COMPILE_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

OptionsT = TypeVar("OptionsT", bound="CompileOptions")


class SpecError(ValueError):
    """A marker argument is wrong; the message names it and what is allowed."""


@dataclass(frozen=True, kw_only=True)
class CompileOptions:
    """`torch.compile`'s arguments as a marker gives them; `marker` names it in messages."""

    marker: ClassVar[str] = "torch.compile"

    backend: str | Callable[..., Any] = "inductor"
    mode: str | None = None
    dynamic: bool | None = None
    fullgraph: bool = False
    options: Mapping[str, object] | None = None

    def __post_init__(self) -> None:
        self._check_backend()
        self.check_choice("mode", self.mode, COMPILE_MODES)
        self.check_choice("dynamic", self.dynamic, (None, True, False))
        self.check_choice("fullgraph", self.fullgraph, (True, False))
        self._check_options()
        if self.mode is not None and self.options:
            raise SpecError(
                "mode= and options= cannot both be given (torch.compile takes one or the other)"
            )

    @property
    def backend_name(self) -> str:
        """The backend as a user reads it: its name, or the callable's name."""
        if isinstance(self.backend, str):
            return self.backend
        return getattr(self.backend, "__name__", type(self.backend).__name__)

    def compile_kwargs(self) -> dict[str, object]:
        """The keyword arguments for `torch.compile`, leaving out defaults."""
        kwargs: dict[str, object] = {
            "backend": self.backend,
            "fullgraph": self.fullgraph,
            "dynamic": self.dynamic,
        }
        if self.mode is not None:
            kwargs["mode"] = self.mode
        if self.options:
            kwargs["options"] = dict(self.options)
        return kwargs

    @classmethod
    def from_marker(
        cls: type[OptionsT], args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> OptionsT:
        """Build from `mark.args` / `mark.kwargs`, naming a wrong keyword and the allowed ones."""
        if args:
            raise SpecError(
                f"{cls.marker} takes keyword arguments only, got positional {args!r}; allowed keywords: {cls.allowed_keywords()}"
            )
        unknown = sorted(set(kwargs) - {f.name for f in cls.keywords()})
        if unknown:
            raise SpecError(
                f"{cls.marker} got unknown keyword {', '.join(map(repr, unknown))}; allowed keywords: {cls.allowed_keywords()}"
            )
        return cls(**kwargs)

    @classmethod
    def keywords(cls) -> list[dataclasses.Field[object]]:
        return [f for f in dataclasses.fields(cls) if f.init]

    @classmethod
    def allowed_keywords(cls) -> str:
        """The marker's keywords, derived from the dataclass (no hand-kept list)."""
        return ", ".join(f.name for f in cls.keywords())

    @classmethod
    def marker_signature(cls) -> str:
        """The marker's signature for `pytest --markers`."""
        return f"{cls.marker}({', '.join(f'{f.name}={f.default!r}' for f in cls.keywords())})"

    def check_choice(self, name: str, value: object, allowed: tuple[object, ...]) -> None:
        # `True == 1`: compare by identity for bools and None so `fullgraph=1` is refused.
        if not any(value is a or (isinstance(a, str) and value == a) for a in allowed):
            raise SpecError(
                f"{self.marker}({name}={value!r}) is not allowed; expected one of {', '.join(map(repr, allowed))}"
            )

    def _check_backend(self) -> None:
        if isinstance(self.backend, str):
            if not self.backend:
                raise SpecError(
                    f"{self.marker}(backend='') is empty; give a registered backend name such as 'inductor'"
                )
            return
        if not callable(self.backend):
            raise SpecError(
                f"{self.marker}(backend={self.backend!r}) must be a backend name (str) or a callable (gm, example_inputs) -> callable"
            )

    def _check_options(self) -> None:
        options = self.options
        if options is not None and (
            not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options)
        ):
            raise SpecError(
                f"{self.marker}(options={options!r}) must be a dict of Inductor config names to values"
            )


def check_number(name: str, value: object, low: float, high: float, example: str) -> None:
    """A ValueError naming the setting unless `low < value < high`."""
    problem = number_problem(value, low, high, example)
    if problem is not None:
        raise ValueError(f"{name}={value!r} {problem}")


def number_problem(value: object, low: float, high: float, example: str) -> str | None:
    """What is wrong with `value` as a number strictly between `low` and `high`, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value < high:
        below = f" and below {high:g}" if math.isfinite(high) else ""
        return f"must be a number above {low:g}{below} ({example})"
    return None


def folder_problem(value: str) -> str | None:
    """What no file system takes in a folder setting, said before any path is made of it:
    a NUL byte, or a name (between slashes) longer than `MAX_NAME_BYTES`; None when neither.

    Both would reach the operating system as an exception (`embedded null byte`,
    `File name too long`) from the first look at the folder.
    """
    if "\0" in value:
        return "holds a NUL byte, which no file or folder name can hold"
    for name in re.split(r"[/\\]", value):
        size = len(name.encode("utf-8", "surrogatepass"))
        if size > MAX_NAME_BYTES:
            return (
                f"has a folder name of {size} bytes ({name[:24]}...), longer than the "
                f"{MAX_NAME_BYTES} bytes file systems take: shorten it"
            )
    return None


def folder_option(
    example: str, check: Callable[[str], object] | None = None
) -> Callable[[str], str]:
    """An argparse `type=` for a folder flag: a blank value, one `folder_problem` finds wrong,
    or one `check` refuses with a ValueError (its message shown), fails at parse time."""

    def folder(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"must name a folder, e.g. {example}")
        problem = folder_problem(value)
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{value[:60]!r} {problem}")
        if check is not None:
            try:
                check(value)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
        return value

    return folder
