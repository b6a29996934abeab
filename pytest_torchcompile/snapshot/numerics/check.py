"""Compare compiled results with eager ones, element by element, with paths.

`compare` takes two observations of a call (`observe.py`: everything a
user could see change, as `path -> leaf`), checks tensors with
`torch.testing.assert_close`'s dtype-aware defaults (or the marker's), other
leaves by equality, and describes each mismatch instead of raising; a leaf
that cannot be compared is said to be so, never reported as a divergence.
For results outside tolerance an fp64 reference decides (`fp64.py`:
the rule of Dynamo's `same()`).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from ..._torch.tensors import default_tolerances
from .observe import flatten

#: Python floats out of a model almost always come from float32 tensors.
PYTHON_FLOAT_TOLERANCE = (1.3e-6, 1e-5)


@dataclass(frozen=True)
class Tolerance:
    """How close is close enough: the marker's settings, resolved per leaf.

    `fp64` None (the default) and True judge every floating result below
    float64 that is outside tolerance against a float64 run, as PyTorch's own
    accuracy checks do (Dynamo's `same` with an fp64 reference): a
    correct compile reassociates reductions and fuses ops, so float32 results
    differ from eager by rounding noise that grows with the reduction depth,
    and only the error against float64 tells noise from a bug. False: the
    plain tolerances alone. `check_stride` as in `assert_close`: off
    by default, since compiled code may lay out a result differently (a KV
    cache from a decomposed `cat`) with the same values.
    """

    rtol: float | None = None
    atol: float | None = None
    fp64: bool | None = None
    multiplier: float = 3.0
    check_stride: bool = False

    def for_tensors(self, compiled: torch.Tensor, eager: torch.Tensor) -> tuple[float, float]:
        if not (compiled.is_floating_point() or compiled.is_complex()):
            return 0.0, 0.0
        if self.rtol is not None and self.atol is not None:
            return self.rtol, self.atol
        return default_tolerances(compiled, eager)

    def uses_fp64(self, dtype: torch.dtype) -> bool:
        return (
            self.fp64 is not False
            and (dtype.is_floating_point or dtype.is_complex)
            and dtype not in (torch.float64, torch.complex128)
        )


@dataclass(frozen=True)
class Mismatch:
    """One leaf where compiled and eager disagree, described for a CI log.

    `path` ends with the worst element's index for value mismatches
    (`output['logits'][3, 17]`); `leaf` is the leaf's own path, used to find
    the same leaf in an fp64 reference.
    """

    path: str
    detail: str
    leaf: str = ""
    tensors: tuple[torch.Tensor, torch.Tensor] | None = field(
        default=None, repr=False, compare=False
    )
    #: False when the two values could not be compared at all (no stage can be blamed for that)
    comparable: bool = True

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


# --- comparing ----------------------------------------------------------------


def one_sided(
    first: Mapping[str, object], second: Mapping[str, object], names: tuple[str, str]
) -> list[Mismatch]:
    """The results only one of two observations has; `names` say what each side is called."""
    one, other = names
    found = [
        Mismatch(p, f"present in {other}'s results, missing from {one}'s")
        for p in second
        if p not in first
    ]
    return found + [
        Mismatch(p, f"present in {one}'s results, missing from {other}'s")
        for p in first
        if p not in second
    ]


def compare(
    compiled: Mapping[str, object], eager: Mapping[str, object], tolerance: Tolerance
) -> list[Mismatch]:
    """Every mismatch between two observations of the same call."""
    found = one_sided(compiled, eager, ("compiled", "eager"))
    for path, leaf in compiled.items():
        if path in eager:
            mismatch = compare_leaf(path, leaf, eager[path], tolerance)
            if mismatch is not None:
                found.append(mismatch)
    return found


def compare_trees(
    compiled: object, eager: object, root: str, tolerance: Tolerance
) -> list[Mismatch]:
    """Compare two nested results directly (e.g. a precompiled artifact's output)."""
    return compare(dict(flatten(compiled, root)), dict(flatten(eager, root)), tolerance)


#: the program file's run against the compiled run: equal bit for bit (NaN equals NaN), strides aside.
BITWISE = Tolerance(rtol=0.0, atol=0.0, fp64=False, check_stride=False)


def bitwise_mismatches(program: dict[str, object], compiled: dict[str, object]) -> list[Mismatch]:
    """Every result of the program that is not bit for bit the compiled run's (NaN equals NaN)."""
    found = one_sided(program, compiled, ("the program", "the compiled run"))
    for path, value in program.items():
        if path in compiled and not _identical(value, compiled[path]):
            found.append(
                compare_leaf(path, value, compiled[path], BITWISE)
                or Mismatch(path, f"{value!r} here, {compiled[path]!r} compiled")
            )
    return found


def _identical(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape or a.device != b.device or a.layout != b.layout:
            return False
        if a.is_meta:  # a meta tensor has no values: its shape, dtype and device are all it holds
            return True
        if a.layout != torch.strided:
            a, b = a.to_dense(), b.to_dense()
        same = a == b
        if a.is_floating_point() or a.is_complex():
            same |= a.isnan() & b.isnan()
        return bool(same.all())
    try:
        return bool(a == b) or (a != a and b != b)
    except Exception:  # values without a usable ==: their reprs decide
        return repr(a) == repr(b)


def bitwise_differences(program: dict[str, object], compiled: dict[str, object]) -> list[str]:
    """`bitwise_mismatches` as the lines of a failure ([] when the program ran bit for bit the same)."""
    return format_mismatches(bitwise_mismatches(program, compiled))


def compare_leaf(
    path: str, compiled: object, eager: object, tolerance: Tolerance
) -> Mismatch | None:
    if isinstance(compiled, torch.Tensor) and isinstance(eager, torch.Tensor):
        return compare_tensors(path, compiled, eager, tolerance)
    if _is_numpy(compiled) and _is_numpy(eager):
        return compare_numpy(path, compiled, eager, tolerance)
    if isinstance(compiled, float) and isinstance(eager, float):
        rtol, atol = (
            (tolerance.rtol, tolerance.atol)
            if tolerance.rtol is not None
            else PYTHON_FLOAT_TOLERANCE
        )
        if math.isclose(compiled, eager, rel_tol=rtol, abs_tol=atol) or (
            math.isnan(compiled) and math.isnan(eager)
        ):
            return None
        return Mismatch(
            path, f"compiled {compiled!r}, eager {eager!r} (rtol={rtol:.3g}, atol={atol:.3g})", path
        )
    if type(compiled) is not type(eager):
        return Mismatch(
            path,
            f"type differs: compiled {type(compiled).__name__} {compiled!r}, eager {type(eager).__name__} {eager!r}",
            path,
        )
    try:
        equal = bool(compiled == eager)
    except (
        Exception
    ) as exc:  # an object whose == raises cannot be compared, which is itself worth saying
        return incomparable(path, f"{type(compiled).__name__} values", exc)
    return None if equal else Mismatch(path, f"compiled {compiled!r} != eager {eager!r}", path)


def incomparable(path: str, what: str, exc: BaseException) -> Mismatch:
    """A leaf the check cannot compare: a failure of its own, not a divergence."""
    reason = " ".join(str(exc).strip().splitlines()[:1])[:200]
    return Mismatch(
        path, f"cannot compare {what} ({type(exc).__name__}: {reason})", path, comparable=False
    )


def _is_numpy(value: object) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, (numpy.ndarray, numpy.generic))


def compare_numpy(
    path: str, compiled: object, eager: object, tolerance: Tolerance
) -> Mismatch | None:
    """NumPy arrays and scalars as tensors (`==` on arrays is elementwise, its truth value an error)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. a read-only array: copied anyway
            c, e = torch.tensor(compiled), torch.tensor(eager)
    except Exception:  # object or string arrays have no tensor form: equal means equal
        try:
            import numpy

            equal = bool(numpy.array_equal(compiled, eager))
        except Exception as exc:
            return incomparable(path, f"NumPy {getattr(compiled, 'dtype', '')} values", exc)
        return None if equal else Mismatch(path, f"compiled {compiled!r} != eager {eager!r}", path)
    return compare_tensors(path, c, e, tolerance)


def compare_tensors(
    path: str, c: torch.Tensor, e: torch.Tensor, tolerance: Tolerance
) -> Mismatch | None:
    """Metadata first (shape, dtype, device, layout, strides), then values; a tensor kind
    without these (a subclass, say) is reported as one that cannot be compared."""
    try:
        if c.is_nested or e.is_nested:
            return _compare_nested(path, c, e, tolerance)
        return _compare_strided(path, c, e, tolerance)
    except Exception as exc:
        return incomparable(path, f"{type(c).__name__} values", exc)


def _compare_nested(
    path: str, c: torch.Tensor, e: torch.Tensor, tolerance: Tolerance
) -> Mismatch | None:
    """Nested tensors have no single shape: compare them component by component."""
    if not (c.is_nested and e.is_nested):
        return Mismatch(
            path,
            f"layout differs: compiled {'nested' if c.is_nested else c.layout}, eager {'nested' if e.is_nested else e.layout}",
            path,
        )
    cs, es = c.unbind(), e.unbind()
    if len(cs) != len(es):
        return Mismatch(
            path,
            f"nested tensor size differs: compiled {len(cs)} components, eager {len(es)}",
            path,
        )
    for i, (ci, ei) in enumerate(zip(cs, es)):
        found = compare_tensors(f"{path}.unbind()[{i}]", ci, ei, tolerance)
        if found is not None:
            return found
    return None


def _compare_strided(
    path: str, c: torch.Tensor, e: torch.Tensor, tolerance: Tolerance
) -> Mismatch | None:
    for what in ("shape", "dtype", "device", "layout"):
        if getattr(c, what) != getattr(e, what):
            return Mismatch(
                path, f"{what} differs: compiled {getattr(c, what)}, eager {getattr(e, what)}", path
            )
    strides = (
        f"stride differs: compiled {_layout(c)}, eager {_layout(e)}"
        if _strides(c) != _strides(e)
        else ""
    )
    if strides and tolerance.check_stride:
        return Mismatch(path, strides, path)
    if c.is_meta:  # no values to compare: shape, dtype and strides are all a meta tensor has
        return None
    c, e = _dense(c.detach()), _dense(e.detach())
    rtol, atol = tolerance.for_tensors(c, e)
    close = torch.isclose(c, e, rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return None
    index, detail = describe_values(c, e, close, rtol, atol)
    return Mismatch(path + index, detail + (f"; {strides}" if strides else ""), path, (c, e))


def _dense(t: torch.Tensor) -> torch.Tensor:
    """Sparse tensors densified (isclose has no sparse kernel); quantized ones dequantized."""
    if t.layout != torch.strided:
        t = t.to_dense()
    return t.dequantize() if t.is_quantized else t


def _strides(t: torch.Tensor) -> tuple[int, ...]:
    """Strides of the dimensions that have them (size-1 dims may hold any stride)."""
    if t.layout != torch.strided:
        return ()
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


def _layout(t: torch.Tensor) -> str:
    if t.layout != torch.strided:
        return str(t.layout)
    kind = "contiguous" if t.is_contiguous() else "not contiguous"
    return f"stride {tuple(t.stride())} ({kind})"


def describe_values(
    c: torch.Tensor, e: torch.Tensor, close: torch.Tensor, rtol: float, atol: float
) -> tuple[str, str]:
    """The worst element's index, and its values, the max errors and the count."""
    cd, ed = (
        c.to(torch.float64) if not c.is_complex() else c,
        e.to(torch.float64) if not e.is_complex() else e,
    )
    abs_err = (cd - ed).abs().nan_to_num(nan=float("inf"))
    rel_err = (abs_err / ed.abs()).nan_to_num(
        nan=0.0, posinf=math.inf
    )  # inf where eager is 0, as assert_close reports
    bad = ~close
    worst = int(torch.where(bad, abs_err, torch.full_like(abs_err, -1.0)).flatten().argmax())
    index = (
        tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), c.shape)) if c.dim() else ()
    )
    where = f"[{', '.join(map(str, index))}]" if index else ""
    detail = (
        f"compiled {_scalar(c.flatten()[worst])}, eager {_scalar(e.flatten()[worst])}; "
        f"max abs error {abs_err[bad].max().item():.3g}, max rel error {rel_err[bad].max().item():.3g}; "
        f"{int(bad.sum())} of {bad.numel()} elements exceed rtol={rtol:.3g}, atol={atol:.3g}"
    )
    return where, detail


def _scalar(t: torch.Tensor) -> str:
    value = t.item()
    return (
        f"{value:.6g}"
        if isinstance(value, (float, int)) and not isinstance(value, bool)
        else str(value)
    )


# --- reporting ----------------------------------------------------------------

MAX_SHOWN = 8


def format_mismatches(mismatches: list[Mismatch]) -> list[str]:
    """One line per mismatching leaf, at most `MAX_SHOWN` of them."""
    lines = [f"  {m}" for m in mismatches[:MAX_SHOWN]]
    if len(mismatches) > MAX_SHOWN:
        lines.append(f"  ... and {len(mismatches) - MAX_SHOWN} more mismatching results")
    return lines
