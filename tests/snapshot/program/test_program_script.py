"""`python program.py` on a model as modern code writes them, defined in a test module.

The script rebuilds the module from the file's recorded layout (random
parameters, no `__init__` run) and calls it through the guards: every slot
and attribute the guards and code read must be there as the model had it.
This model has what real models have and a toy does not: a `Linear(bias=False)`
and a `LayerNorm(elementwise_affine=False)` (parameters registered as None),
an output layer tied to the embedding, a submodule shared at two paths,
submodules without parameters, a str-Enum and a config object as attributes,
integer token ids, and an input of a container type registered with torch's
pytree (a dataclass here; tensordict's classes are registered alike). Its class lives in the test module, which `python
program.py` run from another folder, in an interpreter that never imported
it, finds through the folder pytest imported it from (`IMPORT_ROOTS`).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

MODEL = """
import dataclasses
import enum

import pytest
import torch
import torch.utils._pytree as pytree
from torch import nn


class Format(str, enum.Enum):
    NLC = "NLC"
    NCL = "NCL"


class Config:
    def __init__(self, vocab, dim, scale):
        self.vocab, self.dim, self.scale = vocab, dim, scale


class Decoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config, self.format = config, Format.NCL
        self.embed = nn.Embedding(config.vocab, config.dim)
        self.proj = nn.Linear(config.dim, config.dim, bias=False)
        self.norm = nn.LayerNorm(config.dim, elementwise_affine=False)
        self.act, self.drop = nn.GELU(), nn.Dropout(0.0)
        self.blocks = nn.ModuleList([self.proj, None, self.proj])
        self.head = nn.Linear(config.dim, config.vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        x = self.embed(ids) * self.config.scale
        for block in self.blocks:
            if block is not None:
                x = self.drop(self.act(block(self.norm(x))))
        if self.format == Format.NCL:
            x = x.transpose(1, 2).transpose(1, 2)
        return self.head(x)


def build():
    torch.manual_seed(0)
    return Decoder(Config(vocab=16, dim=8, scale=0.5)), torch.randint(0, 16, (2, 5))


@dataclasses.dataclass
class Batch:
    ids: torch.Tensor
    scale: float


pytree.register_dataclass(Batch)  # a container torch flattens, as tensordict registers its classes


class OnBatches(nn.Module):
    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, batch):
        return self.decoder(batch.ids) * batch.scale


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=())
def test_no_grad(compile_model, tmp_path_factory):
    model, ids = build()
    with torch.no_grad():
        result = compile_model(model.eval(), ids)
    print("SCRIPT", result.write_program(tmp_path_factory.mktemp("files") / "no_grad.py"))


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=())
def test_batch_input(compile_model, tmp_path_factory):
    model, ids = build()
    with torch.no_grad():
        result = compile_model(OnBatches(model).eval(), Batch(ids, 2.0))
    print("SCRIPT", result.write_program(tmp_path_factory.mktemp("files") / "batch.py"))


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=())
def test_training(compile_model, tmp_path_factory):
    model, ids = build()
    result = compile_model(model, ids)
    print("SCRIPT", result.write_program(tmp_path_factory.mktemp("files") / "training.py"))
"""


def test_the_script_rebuilds_a_modern_model_from_a_test_module_in_another_folder(
    pytester: pytest.Pytester, tmp_path
) -> None:
    pytester.makepyfile(test_local_decoder=MODEL)
    ran = pytester.runpytest("-s", "-p", "no:cacheprovider")
    ran.assert_outcomes(passed=3)
    scripts = [line.split("SCRIPT ", 1)[1] for line in ran.outlines if "SCRIPT " in line]
    assert len(scripts) == 3
    # a new interpreter in another folder, whose import path lacks the test's folder
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and str(pytester.path) not in p),
    }
    for script in scripts:
        done = subprocess.run(
            [sys.executable, script], capture_output=True, text=True, cwd=tmp_path, env=env
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "ran forward (aot_eager) on random inputs of the recorded shapes:" in done.stdout
        assert "frame 0 compile 0 (forward)" in done.stdout
        assert "output: float32 [2, 5, 16]" in done.stdout
    assert "backward ran through 1 output(s)" in done.stdout  # the training file, last
    text = open(scripts[0]).read()
    assert "('bias', None)" in text and "('weight', 'tied', 'embed.weight')" in text
    assert "import_object('test_local_decoder:Format.NCL')" in text
    assert "IMPORT_ROOTS = {'test_local_decoder': " in text
    # the input of a registered container type: made from its recorded parts and random ids
    assert "pytree_value('test_local_decoder:Batch'," in open(scripts[1]).read()


HELD_NETWORK = """
import collections

import pytest
import torch
from torch import nn


class Store:
    # tensors in nested dicts, pickled through its own state methods, as tensordict's TensorDict
    def __init__(self, tensors):
        self.tensors, self.ops, self._scratch = tensors, collections.deque(maxlen=4), object()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_scratch"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._scratch = object()


class Params(nn.Module):
    # the network's parameters registered here and held again in a Store (TensorDictParams' way)
    def __init__(self, net):
        super().__init__()
        for name, p in net.named_parameters():
            self.register_parameter(name.replace(".", "_"), p)
        self.store = Store({"first": {"weight": net[0].weight}, "last": {"weight": net[2].weight}})


class Loss(nn.Module):
    # a loss that holds its network as a plain attribute, outside _modules (torchrl's losses do)
    def __init__(self):
        super().__init__()
        net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
        self.params = Params(net)
        self.__dict__["net"] = net

    def forward(self, x):
        scale = self.params.store.tensors["last"]["weight"].abs().mean()
        return (self.net(x) * scale).pow(2).mean()


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=(), run_program=True)
def test_loss(compile_model, tmp_path_factory):
    torch.manual_seed(0)
    result = compile_model(Loss(), torch.randn(5, 4))
    print("SCRIPT", result.write_program(tmp_path_factory.mktemp("files") / "loss.py"))
"""


def test_the_script_rebuilds_a_network_held_as_an_attribute_and_tensors_held_twice(
    pytester: pytest.Pytester, tmp_path
) -> None:
    pytester.makepyfile(test_held_loss=HELD_NETWORK)
    ran = pytester.runpytest("-s", "-p", "no:cacheprovider")
    ran.assert_outcomes(passed=1)
    script = next(line.split("SCRIPT ", 1)[1] for line in ran.outlines if "SCRIPT " in line)
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "output: float32 []" in done.stdout
    assert "backward ran through 1 output(s)" in done.stdout
    text = open(script).read()
    # the network at its attribute, its parameters tied to the registered ones; the store made
    # by its own __setstate__, holding those same tensors by path
    assert (
        "'torch.nn.modules.container:Sequential', [], [], [('training', 'True')], 'attribute')"
        in text
    )
    assert "('weight', 'tied', 'params.0_weight')" in text
    assert (
        "new_object('test_held_loss:Store', {'tensors': {'first': {'weight': tree_tensor('params.0_weight')}"
        in text
    )
    assert "'ops': collections.deque([], 4)}, None, shared=0, setstate=True)" in text


SHARED_LIST = """
import pytest
import torch
from torch import nn


class Adapter(nn.Module):
    # as peft's LoRA layers: every layer holds the one list of active adapters
    def __init__(self, active):
        super().__init__()
        self.lin, self.extra = nn.Linear(4, 4), nn.Linear(4, 4)
        self._active = active

    def forward(self, x):
        for name in self._active:
            x = self.lin(x) + (self.extra(x) if name == "default" else 0)
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        active = ["default"]
        self.first, self.second = Adapter(active), Adapter(active)
        self.settings = {"active": active, "names": ["x y"]}

    def forward(self, x):
        return self.second(self.first(x))


@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=(), run_program=True)
def test_shared(compile_model, tmp_path_factory):
    torch.manual_seed(0)
    result = compile_model(Model(), torch.randn(2, 4))
    print("SCRIPT", result.write_program(tmp_path_factory.mktemp("files") / "shared.py"))
"""


def test_the_script_makes_a_list_two_modules_hold_once(pytester: pytest.Pytester, tmp_path) -> None:
    """Dynamo guards that the two layers hold the same list (`a is b`): the layout makes it once
    and names it where it is met again, and leaves a list held once as it was."""
    pytester.makepyfile(test_shared_list=SHARED_LIST)
    ran = pytester.runpytest("-s", "-p", "no:cacheprovider")
    ran.assert_outcomes(passed=1)
    script = next(line.split("SCRIPT ", 1)[1] for line in ran.outlines if "SCRIPT " in line)
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    text = open(script).read()
    assert "('settings', \"{'active': shared_value(0, ['default']), 'names': ['x y']}\")" in text
    assert text.count("('_active', 'shared_object(0)')") == 2


class _Refuses:
    """An attribute that refuses to be pickled, as many handles do."""

    def __getstate__(self):
        raise TypeError("cannot pickle a _Refuses")


class _Stated:
    """An attribute that pickles through its own state methods."""

    def __init__(self, value: int) -> None:
        self.value, self.cache = value, object()

    def __getstate__(self):
        return {"value": self.value}

    def __setstate__(self, state):
        self.__dict__.update(state, cache=None)


def test_an_attribute_is_written_as_pickle_rebuilds_it_or_left_out_where_it_refuses() -> None:
    from pytest_torchcompile.snapshot.program.facts.module_tree import attribute_source

    assert attribute_source(_Refuses()) is None  # left out (a guard reading it names it), no error
    assert attribute_source(_Stated(3)) == (
        f"new_object('{__name__}:_Stated', {{'value': 3}}, None, shared=0, setstate=True)"
    )


def test_a_small_tensor_outside_the_tree_is_written_with_its_values() -> None:
    """kornia's jitter samples from `torch.distributions.Uniform`s whose bounds are tensors of their
    own; a large one, a non-finite one or an expanded one (whose elements share memory) has no
    source, and a guard that reads it then names it."""
    from pytest_torchcompile._torch.program.runtime_module import random_tensor
    from pytest_torchcompile.snapshot.program.facts.module_tree import attribute_source

    bounds = torch.tensor([[0.5, -1.25]], dtype=torch.float64).t()
    text = attribute_source(bounds)
    assert (
        text == "random_tensor(['', [2, 1], [1, 2], 'torch.float64', 'cpu', False, [0.5, -1.25]])"
    )
    made = eval(text, {"random_tensor": random_tensor})
    assert torch.equal(made, bounds) and made.stride() == bounds.stride()
    assert attribute_source(torch.zeros(4097)) is None
    assert attribute_source(torch.tensor([1.0, float("nan")])) is None
    assert attribute_source(torch.zeros(1).expand(3)) is None
    assert attribute_source(torch.empty(2, device="meta")) is None


class _Settings:
    """A plain object an attribute holds, written as pickle rebuilds it."""

    def __init__(self, active: list) -> None:
        self.active = active


class _Opaque:
    """An object that will not show its attributes."""

    @property
    def __dict__(self):
        raise RuntimeError("no attributes to show")


def test_a_list_held_in_two_modules_and_an_object_is_made_once() -> None:
    """Counted through the objects the layout writes (not through a module such as `numpy` an
    attribute holds), and past an object that refuses to show its attributes."""
    import types

    from pytest_torchcompile.snapshot.program.facts.module_tree import module_layout

    active = ["default"]
    root = torch.nn.Module()
    root.first, root.second = torch.nn.Module(), torch.nn.Module()
    root.first.active, root.second.settings = active, _Settings(active)
    root.second.library, root.second.opaque = types, _Opaque()
    settings = {row.path: dict(row.settings) for row in module_layout(root)}
    assert settings["first"]["active"] == "shared_value(0, ['default'])"
    assert settings["second"]["settings"] == (
        f"new_object('{__name__}:_Settings', {{'active': shared_object(0)}}, None, shared=1)"
    )
    assert settings["second"]["library"] == "import_object('types:')"
