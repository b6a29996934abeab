"""Generated code compared: kernels renamed, fused otherwise or recoded, and the wrapper's steps.

`compare_programs` reads each frame compile's output code on both sides
(`wrapper.parse_output_code`) and says what moved: a kernel renamed with the
same code is text; fused otherwise, added, removed or with other code, an
extern op called or not, and a step of `call` with other arguments are
behaviour. Pure: no files, torch or pytest.
"""

from __future__ import annotations

import difflib
from collections import Counter

from ..artifacts.compact import digest_lines
from ..artifacts.sections import GraphKey, split_sections
from .findings import Finding
from .reading.wrapper import Program, call_difference, parse_output_code

#: per frame compile (frame, compile), what each input of its AOT graphs and code is, by name
InputNames = dict[tuple[int, int], dict[str, str] | None]
#: the old side's and the new side's
Inputs = tuple[InputNames, InputNames]


def delta(old: Counter[str], new: Counter[str]) -> str:
    removed = [f"-{op}" + (f" x{n}" if n > 1 else "") for op, n in sorted((old - new).items())]
    added = [f"+{op}" + (f" x{n}" if n > 1 else "") for op, n in sorted((new - old).items())]
    return " ".join(removed + added)


def compare_programs(
    name: str,
    old: str,
    new: str,
    inputs: Inputs,
    outputs: tuple[dict[GraphKey, list[str]], dict[GraphKey, list[str]]],
) -> list[Finding]:
    """Findings on the generated code (artifact `name`), frame compile by frame compile."""
    before, after = split_sections(old), split_sections(new)
    found: list[Finding] = []
    for key in sorted(set(before) | set(after)):
        if key not in before or key not in after:
            side = "NEW" if key not in before else "OLD"
            found.append(
                _code(name, True, "generated code", f"{name} {key.label()}: only in {side}")
            )
            continue
        if before[key] == after[key]:
            continue
        frame = (key.frame, key.compile)
        programs = (
            parse_output_code(before[key], inputs[0].get(frame), outputs[0].get(key)),
            parse_output_code(after[key], inputs[1].get(frame), outputs[1].get(key)),
        )
        found += _program_findings(name, key, *programs) or [
            _code(name, False, "wrapper text", f"{name}: wrapper text only, same kernels and calls")
        ]
    return found


def _program_findings(name: str, key: GraphKey, old: Program, new: Program) -> list[Finding]:
    where = f"{name} {key.label()}"
    found = _kernel_findings(name, where, old, new)
    if old.externs() != new.externs():
        message = f"{where}: extern calls {delta(old.externs(), new.externs())}"
        found.append(_code(name, True, "extern calls", message))
    elif not any(f.behaviour for f in found) and old.steps != new.steps:
        found.append(_step_finding(name, where, old, new))
    return found


def _step_finding(name: str, where: str, old: Program, new: Program) -> Finding:
    """The wrapper calls the same kernels and ops with other arguments, or reads other values."""
    gone = [old.shown[s] for s in (old.steps - new.steps)]
    came = [new.shown[s] for s in (new.steps - old.steps)]
    if gone and came:
        change = call_difference(gone[0], came[0])
    else:
        change = f"{'removed' if gone else 'added'}: {(gone or came)[0]}"
    message = f"{where}: a call with other arguments: {change}"
    return _code(name, True, "call arguments", message, f"call arguments: {change}")


def _kernel_findings(name: str, where: str, old: Program, new: Program) -> list[Finding]:
    """Kernels renamed (text), fused otherwise, added, removed or with other code (behaviour)."""
    renamed, pairs, removed, added = _pair_kernels(old, new)
    found = [
        _code(name, False, "kernels renamed", f"{name}: kernel renamed, same code: {a} -> {b}")
        for a, b in renamed
    ]
    for a, b in pairs:
        if a.fused == b.fused:
            changed = f"same fusion, code changed ({_lines_changed(a.body, b.body)})"
            message, fact = f"{where}: kernel {b.name}: {changed}", f"kernel code changed: {b.name}"
            found.append(_code(name, True, "kernel code", message, fact))
        else:
            moved = f"fused differently: {a.name} -> {b.name}"
            message, fact = f"{where}: kernel {moved}", f"kernels {moved}"
            found.append(_code(name, True, "fusion", message, fact))
    for how, kernels in (("removed", removed), ("added", added)):
        found += [
            _code(
                name, True, "fusion", f"{where}: kernel {how}: {k.name}", f"kernels {how}: {k.name}"
            )
            for k in kernels
        ]
    return found


def _code(name: str, behaviour: bool, topic: str, message: str, fact: str = "") -> Finding:
    return Finding(behaviour, topic, message, (name,), fact)


def _pair_kernels(old: Program, new: Program):  # type: ignore[no-untyped-def]
    """(renamed pairs), (changed pairs), removed, added: same body first, then same name, then same index."""
    left, right = list(old.kernels), list(new.kernels)
    renamed: list[tuple[str, str]] = []
    for kernel in list(left):
        twin = next((k for k in right if k.body == kernel.body and k.name == kernel.name), None)
        twin = twin or next((k for k in right if k.body == kernel.body), None)
        if twin is not None:
            left.remove(kernel)
            right.remove(twin)
            if twin.name != kernel.name:
                renamed.append((kernel.name, twin.name))
    pairs = []
    for same in (
        lambda a, b: a.name == b.name,
        lambda a, b: a.name.rsplit("_", 1)[-1] == b.name.rsplit("_", 1)[-1],
    ):
        for kernel in list(left):
            twin = next((k for k in right if same(kernel, k)), None)
            if twin is not None:
                left.remove(kernel)
                right.remove(twin)
                pairs.append((kernel, twin))
    return renamed, pairs, left, right


def _lines_changed(old: str, new: str) -> str:
    stated = _stated_length(old), _stated_length(new)
    if stated[0] is not None and stated[1] is not None:  # kernel digests (wrapper_code)
        return f"{stated[0]} -> {stated[1]} lines"
    diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0))[2:]
    return f"-{sum(line.startswith('-') for line in diff)} +{sum(line.startswith('+') for line in diff)} lines"


def _stated_length(body: str) -> int | None:
    return next((n for line in body.splitlines() if (n := digest_lines(line)) is not None), None)
