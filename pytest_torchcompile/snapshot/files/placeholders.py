"""`{torch}`, `{device}` and `{python}` in the snapshot folder: one snapshot set per torch and device.

Compiler output depends on the torch version (every release changes graphs,
guards and generated code) and, on a GPU, on the device's compute capability
(Triton kernels are tuned and compiled for it). A suite tested on several
keeps one set per pair: `torchcompile_snapshot_dir = snapshots/{torch}/{device}`.
Dynamo's bytecode differs between Python versions too; the plugin writes the
same text for it on every Python where it can, and a suite whose snapshots
still differ (depyf's decompilation, the Python named in a `program`) keeps
one set per Python with `{python}` (`3.13`, the running interpreter's).

The template is checked when pytest starts (an unknown placeholder is a usage
error naming it) but resolved only when a test's snapshots are compared: the
entry modules must not import torch, and `{device}` is a property of the
test's cases, not of the machine (a CPU case on a GPU machine is `cpu`).
"""

from __future__ import annotations

import glob
import os
import re
import string
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: placeholder -> what it stands for (the usage error lists these).
PLACEHOLDERS: dict[str, str] = {
    "torch": "torch's major.minor version, e.g. 2.13",
    "device": "where the test's cases ran: cpu, or cuda-sm<major><minor> from the GPU's compute capability, e.g. cuda-sm90",
    "python": "the running Python's major.minor version, e.g. 3.13",
}

#: torch's device types (`torch.device(...).type`): what `{device}` resolves to besides `cpu`
#: and `cuda-sm<major><minor>` (a custom backend's own name is not known without torch)
DEVICE_TYPES = (
    "cpu", "cuda", "mps", "xpu", "meta", "hpu", "mtia", "xla", "lazy", "ipu", "maia", "ve",
    "vulkan", "metal", "hip", "fpga", "mkldnn", "ideep", "opengl", "opencl", "privateuseone",
)  # fmt: skip
_DEVICE = re.compile("(?:{})".format("|".join([r"cuda-sm\d+", *DEVICE_TYPES])))
#: `{torch}` or `{python}` resolved, alone or after a word: `2.13`, `py3.12`, `torch-2.11`
_VERSION_NAME = re.compile(r"[A-Za-z_-]*\d+\.\d+")
#: stands for a placeholder's value while a folder is matched: no path holds it
_MARK = "\0"


class PlaceholderError(ValueError):
    """The folder template names an unknown placeholder or is malformed."""


def placeholders(template: str) -> frozenset[str]:
    """The placeholders a folder template uses; raises `PlaceholderError` for unknown ones.

    `{{` and `}}` stand for literal braces, as in `str.format`.
    """
    try:
        fields = [
            (name, spec, conversion)
            for _, name, spec, conversion in string.Formatter().parse(template)
            if name is not None
        ]
    except ValueError as exc:  # an unmatched brace
        raise PlaceholderError(
            f"{template!r} is not a valid folder template ({exc}); write {{{{ and }}}} for literal braces"
        ) from None
    for name, spec, conversion in fields:
        if name not in PLACEHOLDERS:
            shown = "{" + name + "}" if name else "{}"
            raise PlaceholderError(
                f"{template!r} has unknown placeholder {shown}; known: {_known()}"
            )
        if spec or conversion:
            raise PlaceholderError(
                f"{template!r}: placeholder {{{name}}} takes no format spec or conversion; known: {_known()}"
            )
    return frozenset(name for name, _, _ in fields)


def expand_home(template: str) -> str:
    """`~/x` (or `~user/x`) as that home folder's `x`, as pytest reads its `cache_dir`; the
    rootdir rule then applies to it (a home folder outside the rootdir is refused). A template
    that does not begin with `~` is returned as it is; `PlaceholderError` for an unknown user."""
    head = re.split(r"[/\\]", template, maxsplit=1)[0]
    if not head.startswith("~"):
        return template
    home = os.path.expanduser(head)
    if home == head:
        raise PlaceholderError(
            f"{template!r} begins with {head}, the home folder of a user this machine does not have; "
            "name a folder relative to the rootdir, e.g. snapshots"
        )
    return _escape(home) + template[len(head) :]


def resolve(template: str, torch: str, device: str) -> str:
    """The folder for one torch version and device, on this Python (`{{` and `}}` become braces)."""
    return template.format(torch=torch, device=device, python=python_minor())


def resolve_some(template: str, **values: str) -> str:
    """Fill the given placeholders and `{python}`, keep the others (`{device}` stays until a case ran).

    The result is a template again: literal braces stay written `{{` and `}}`.
    """
    values.setdefault("python", python_minor())
    parts = []
    for literal, name, _, _ in string.Formatter().parse(template):
        parts.append(literal.replace("{", "{{").replace("}", "}}"))
        if name is not None:
            parts.append(_escape(values[name]) if name in values else "{" + name + "}")
    return "".join(parts)


def torch_sets(base: Path, template: str, device: str) -> dict[str, Path]:
    """Every torch's snapshot set on disk for `device` (`{"2.13": <base>/snapshots/2.13/cpu}`);
    none without `{torch}`. A version is whatever folder name stands where `{torch}` does."""
    if "torch" not in placeholders(template):
        return {}
    return _sets_on_disk(base, resolve(template, torch=_MARK, device=device), "[^/\\\\]+")


def device_sets(base: Path, template: str, torch: str) -> dict[str, Path]:
    """Every device's snapshot set on disk under torch `torch` (`{"cuda-sm90": <base>/snapshots/2.13/cuda-sm90}`);
    none without `{device}`. Only a folder named as `{device}` resolves is a device's set
    (`names_a_device`): a test's own folder beside the sets (`snapshots/2.13/test_m`) is not one."""
    if "device" not in placeholders(template):
        return {}
    return _sets_on_disk(base, resolve(template, torch=torch, device=_MARK), _DEVICE.pattern)


def _sets_on_disk(base: Path, folder: str, value: str) -> dict[str, Path]:
    """The folders on disk that `folder` names with `_MARK` as a name matching `value`
    (the same name wherever it stands), by that name."""
    parts = str(base / folder).split(_MARK)
    shape = re.compile(f"({value})".join(re.escape(part) for part in parts))
    found = {}
    for path in glob.glob("*".join(glob.escape(part) for part in parts)):
        match = shape.fullmatch(path)
        names = set(match.groups()) if match else set()
        if len(names) == 1 and Path(path).is_dir():
            found[names.pop()] = Path(path)
    return dict(sorted(found.items()))


def names_a_set(name: str) -> bool:
    """A folder name as a placeholder resolves, alone or after a word: a snapshot set's folder.

    `2.13` (`{torch}`, `{python}`), `py3.12`, `torch-2.11`, `cpu`, `cuda-sm90`, `meta`.
    A test file's folder is not named so (`tests/cpu/` is the exception the stale walk
    allows: a collected test file lies in it).
    """
    return _VERSION_NAME.fullmatch(name) is not None or names_a_device(name)


def names_a_device(name: str) -> bool:
    """`cpu`, `cuda-sm90`, or another of torch's device types (`meta`, `mps`, `xpu`, ...)."""
    return _DEVICE.fullmatch(name) is not None


def set_relation(folder: Path, base: Path, template: str, torch: str) -> tuple[str, Path] | None:
    """How `folder` (a test's own snapshot folder) meets the sets of the run's `template` under
    torch `torch`, one per device: `("inside", S)` when it lies in the set `S`, `("around", S)`
    when it holds the folder `S` where sets lie; None when it is one of them or lies beside them."""
    shape = [
        re.compile(_DEVICE.pattern.join(re.escape(piece) for piece in part.split(_MARK)))
        for part in Path(
            os.path.normpath(base / resolve(template, torch=torch, device=_MARK))
        ).parts
    ]
    parts = Path(os.path.normpath(folder)).parts
    common = min(len(parts), len(shape))
    if len(parts) == len(shape) or not all(
        pattern.fullmatch(part) for pattern, part in zip(shape[:common], parts[:common])
    ):
        return None
    return ("inside" if len(parts) > len(shape) else "around"), Path(*parts[:common])


def _escape(value: str) -> str:
    return value.replace("{", "{{").replace("}", "}}")


def installed_torch_minor() -> str | None:
    """torch's major.minor from its package metadata, without importing torch (None if not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return torch_minor(version("torch"))
    except PackageNotFoundError:
        return None


def python_minor() -> str:
    """The running Python's major.minor: `3.13`."""
    return "{}.{}".format(*sys.version_info[:2])


def torch_minor(version: str) -> str:
    """`2.13.0+cpu`, `2.15.0.dev20260101+cu132` -> `2.13`, `2.15`."""
    parts = version.split("+", 1)[0].split(".")
    return ".".join(parts[:2])


def device_key(kind: str, capability: tuple[int, int] | None) -> str:
    """`cpu`; `cuda-sm90` for compute capability (9, 0); any other device type by its name."""
    if kind == "cuda" and capability is not None:
        return f"cuda-sm{capability[0]}{capability[1]}"
    return kind


def case_device(model: Any, inputs: Iterable[Any]) -> str:
    """The device key of one case: the first non-CPU tensor among the model's
    parameters and buffers and the inputs decides; all on CPU (or no tensors) is `cpu`.

    Not `torch.cuda.is_available()`: a CPU case on a GPU machine compiles to
    C++, exactly as on a CPU-only machine, and shares that snapshot set.
    """
    import torch

    from ..._torch.tensors import tree_leaves

    tensors = (
        list(model.parameters()) + list(model.buffers())
        if isinstance(model, torch.nn.Module)
        else []
    )
    tensors += [t for t in tree_leaves(list(inputs)) if isinstance(t, torch.Tensor)]
    for tensor in tensors:
        if tensor.device.type != "cpu":
            capability = (
                torch.cuda.get_device_capability(tensor.device)
                if tensor.device.type == "cuda"
                else None
            )
            return device_key(tensor.device.type, capability)
    return "cpu"


def _known() -> str:
    return "; ".join(f"{{{name}}} ({meaning})" for name, meaning in PLACEHOLDERS.items())
