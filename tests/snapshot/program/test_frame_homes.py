"""Where the file finds a frame's function to route calls to it (`snapshot/program/facts/homes.py`).

A library may copy a method into each subclass under the subclass's name:
kornia gives every augmentation class a `forward` of its own (the base
class's code, renamed `Class.forward`), so that Dynamo caches each apart. Its
code belongs to the base class's file, and its function to the subclass's
module; the file routes it by the subclass's name.
"""

from __future__ import annotations

import dataclasses
import sys
import types

import pytest

from pytest_torchcompile.snapshot.program.facts.homes import frame_home


class Base:
    """As kornia's `_BasicAugmentationBase`: each subclass gets a copy of `forward`, named for it."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        code = Base.forward.__code__.replace(
            co_name=f"{cls.__name__}.forward", co_qualname=f"{cls.__qualname__}.forward"
        )
        clone = types.FunctionType(code, Base.forward.__globals__, "forward")
        clone.__qualname__, clone.__module__ = f"{cls.__qualname__}.forward", cls.__module__
        cls.forward = clone

    def forward(self, x):
        return x


@pytest.fixture
def subclass_module():
    """A module of its own (another file, as kornia's `horizontal_flip.py`) holding a subclass."""
    module = types.ModuleType("ptc_test_flip")
    exec(
        "from tests.snapshot.program.test_frame_homes import Base\nclass Flip(Base): pass",
        vars(module),
    )
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def test_a_method_copied_into_a_subclass_is_routed_by_the_subclass_name(subclass_module) -> None:
    code = subclass_module.Flip.forward.__code__
    assert code.co_filename == __file__
    home = frame_home(code)
    assert home.function == "ptc_test_flip:Flip.forward", home
    assert home.why == ""


class _Raises:
    """A global named like the subclass whose attribute raises when read (a lazy object)."""

    @property
    def forward(self):
        raise ImportError("a lazy object that imports on first use")


def test_an_object_of_the_same_name_that_raises_is_passed_over(subclass_module) -> None:
    other = types.ModuleType("ptc_test_lazy")
    other.Flip = _Raises()
    sys.modules[other.__name__] = other
    try:
        home = frame_home(subclass_module.Flip.forward.__code__)
    finally:
        del sys.modules[other.__name__]
    assert home.function == "ptc_test_flip:Flip.forward", home


@dataclasses.dataclass
class _Settings:
    """A dataclass: its `__init__` is code `exec` made inside `__create_fn__`, in no file."""

    rank: int = 4
    scale: float = 1.0


def test_a_dataclass_init_is_routed_by_its_class() -> None:
    """peft's DoRA builds a dataclass inside the compiled model, and Dynamo compiles its
    generated `__init__` as a frame: the function is found by what refers to its code, and routed
    by the name the dataclass gave it (`Class.__init__`), in the class's module's globals."""
    home = frame_home(_Settings.__init__.__code__)
    assert home.why == "" and home.module == __name__
    assert [path for _, path in home.closures] == [f"{__name__}:_Settings.__init__"]
