"""Precompile: `aot_compile`, then save and load the compiled function.

`torch.compile(fn, fullgraph=True).aot_compile(((args), kwargs))` compiles
ahead of time and returns an object with `save_compiled_function(path)`;
`torch.compiler.load_compiled_function(file)` loads it back, in any process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def aot_compile(fn: Any, compile_kwargs: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Compile `fn` ahead of time on these inputs (always fullgraph)."""
    return torch.compile(fn, **{**compile_kwargs, "fullgraph": True}).aot_compile((tuple(args), dict(kwargs)))


def save(compiled: Any, path: Path) -> None:
    compiled.save_compiled_function(str(path))


def load(path: Path) -> Any:
    with open(path, "rb") as handle:
        return torch.compiler.load_compiled_function(handle)
