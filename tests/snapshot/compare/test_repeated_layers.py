"""A change repeated across layers is shown once in the failure block (compare/lines.py).

Unit tests on the fold (no torch): the same change in four layers reads as one
hunk and a line naming the others; a hunk that differs by a value, a dtype or
its wiring is shown whole. Then the plugin as a user drives it: a 4-layer
model whose every LayerNorm epsilon changes fails with one layer's hunk and
the line, the stored files keep every layer, and `--torchcompile-full-diff`
shows every hunk.
"""

from __future__ import annotations

import pytest

from pytest_torchcompile.snapshot.compare.failure import unified
from pytest_torchcompile.snapshot.compare.lines import folded_diff


def layer(index: int, eps: str = "1e-05", dtype: str = "f32", reads: str = "") -> list[str]:
    n = 10 * index
    return [
        f"        # File: /m.py:12 in forward, code: x = self.layers[{index}](x)",
        f"        l__self___layers_{index}_norm_weight = self.L__self___layers_{index}_norm_weight",
        f'        add_{n}: "{dtype}[2, 8]" = torch.ops.aten.add.Tensor({reads or f"arg{n}_1"}, {eps})',
        f'        rsqrt_{n}: "f32[2, 8]" = torch.ops.aten.rsqrt.default(add_{n})',
        f'        mul_{n}: "f32[2, 8]" = torch.ops.aten.mul.Tensor(rsqrt_{n}, arg{n + 1}_1)',
        f"        clone_{n} = mul_{n}",
        f"        view_{n} = clone_{n}",
        "        x = view_{n}",
        "",
    ]


def graph(*layers: list[str]) -> str:
    return "\n".join(["def forward(self):", *(line for lines in layers for line in lines)])


OLD = graph(*(layer(i) for i in range(4)))


def test_the_same_change_in_every_layer_reads_as_one_hunk_and_a_line() -> None:
    new = graph(*(layer(i, eps="1e-06") for i in range(4)))
    diff = unified(OLD, new)
    shown = folded_diff(OLD, new, shown_by="pytest --torchcompile-full-diff")
    assert sum(line.startswith("@@") for line in diff) == 4
    assert sum(line.startswith("@@") for line in shown) == 1
    assert [line for line in shown if line.startswith(("-", "+"))][2:] == [
        '-        add_0: "f32[2, 8]" = torch.ops.aten.add.Tensor(arg0_1, 1e-05)',
        '+        add_0: "f32[2, 8]" = torch.ops.aten.add.Tensor(arg0_1, 1e-06)',
    ]
    assert shown[-1] == (
        "... the same change, numbered names aside, in layers 1-3 too (at lines 13, 22, 31 of "
        "this run; shown by pytest --torchcompile-full-diff) ..."
    )


@pytest.mark.parametrize(
    ("other", "why"),
    [
        ({"eps": "1e-07"}, "another value"),
        ({"eps": "1e-06", "dtype": "f16"}, "another dtype"),
        ({"eps": "1e-06", "reads": "arg0_1"}, "reads the first layer's input: other wiring"),
    ],
)
def test_a_layer_changed_otherwise_is_shown_whole(other: dict[str, str], why: str) -> None:
    new = graph(*(layer(i, eps="1e-06") for i in range(3)), layer(3, **other))
    shown = folded_diff(OLD, new)
    assert sum(line.startswith("@@") for line in shown) == 2, why
    assert any("in layers 1-2 too (at lines 13, 22 of this run)" in line for line in shown), shown
    assert any(line.startswith("+") and "add_30" in line for line in shown), why


def test_hunks_alike_without_a_layer_index_are_counted() -> None:
    old = "\n".join(f"a_{i} = f(b_{i})" + "\n" * 9 + f"c_{i} = 1" for i in range(3))
    new = old.replace("= f(", "= g(")
    shown = folded_diff(old, new)
    assert shown[-1] == (
        "... the same change, numbered names aside, at 2 more places (at lines 11, 21 of this run) ..."
    )


def test_a_diff_without_repeats_is_unchanged() -> None:
    new = graph(layer(0, eps="1e-06"), *(layer(i) for i in range(1, 4)))
    assert folded_diff(OLD, new) == unified(OLD, new)


LAYERS = """
import pytest, torch

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.LayerNorm(8, eps={eps}), torch.nn.Linear(8, 8), torch.nn.GELU())
            for _ in range(4)
        )

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x

@pytest.mark.compile_snapshot(backend="aot_eager", artifacts=("summary", "dynamo_graph"))
def test_m(compile_model):
    torch.manual_seed(0)
    with torch.no_grad():
        compile_model(M().eval(), torch.randn(2, 8))
"""


def _failures(result: pytest.RunResult) -> str:
    """The FAILURES section alone: under a CI variable pytest repeats each whole message in the
    short test summary, which would count every line twice."""
    return result.stdout.str().split("short test summary info")[0]


def test_every_layer_changed_fails_with_the_first_layers_shown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m=LAYERS.format(eps="1e-5"))
    pytester.runpytest("--update-snapshots").assert_outcomes(passed=1)
    pytester.makepyfile(test_m=LAYERS.format(eps="1e-3"))
    failed = pytester.runpytest()
    failed.assert_outcomes(failed=1)
    out = _failures(failed)
    # layer 0 reads the graph's input (L_x_), layer 1 the residual (x): two changes, shown;
    # layers 2 and 3 read x_1 and x_2, the same change as layer 1's, numbered names aside
    assert out.count("\n+") - out.count("\n+++") == 2, out
    failed.stdout.fnmatch_lines(
        [
            "earliest pipeline stage that changed: dynamo_graph",
            "-... s_modules_0_modules_0_parameters_bias_, 1e-05)",
            "+... s_modules_0_modules_0_parameters_bias_, 0.001)",
            "-... s_modules_1_modules_0_parameters_bias_, 1e-05)",
            "+... s_modules_1_modules_0_parameters_bias_, 0.001)",
            "... the same change, numbered names aside, in layers 2-3 too (at lines 13, 17 of this "
            "run; shown by pytest --torchcompile-full-diff) ...",
        ]
    )
    full = pytester.runpytest("--torchcompile-full-diff")
    added = [line for line in _failures(full).splitlines() if line.startswith("+")]
    assert len([line for line in added if line.endswith("0.001)")]) == 4, full.stdout.str()
    stored = next(pytester.path.rglob("dynamo_graph.fx.txt")).read_text()
    assert stored.count("1e-05)") == 4  # the failure folds; the stored file keeps every layer
