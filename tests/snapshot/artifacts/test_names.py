"""A graph's names, found by one split of the text, are those a name pattern finds.

Reading an earlier version's folded files (older_forms.py) renames names through
names.py, which splits a text at its identifiers and decides on each from its
neighbours instead of running the lookbehind-led pattern below: a name found
where the pattern finds none (an attribute, a string's text, a word's tail)
would rename what is not a value.
"""

from __future__ import annotations

import re

import pytest

from pytest_torchcompile.snapshot.artifacts.names import names_in, renamed
from tests.conftest import DATA

#: a name in code, not an attribute (`aten.add`) or inside a string: what names.py must match
NAME = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)(?![\w'\"])")

TRICKY = [
    "mul = torch.ops.aten.mul.Tensor(view_9, 0.5)",  # an attribute is no name
    'x: "f32[s0, 32][32, 1]cpu" = y',  # a symbol inside an annotation is one
    "a = b['c'] + d[\"e\"] + f'g' + h\"i\"",  # quoted text and a quote's neighbours are not
    "z = 1e-05 + 2x3 + _tensor_constant0 + e5",  # a number's tail is no name
    "é1 = xé + éx + x_é",  # word characters beyond ASCII
    "",
    "x",
    ".x y. 'x x' \"",
]


def _texts() -> list[str]:
    files = sorted((DATA / "x_transformers_2.13").rglob("*.txt"))
    return TRICKY + [line for f in files for line in f.read_text().splitlines()]


def test_names_are_the_patterns() -> None:
    for text in _texts():
        assert names_in(text) == NAME.findall(text), text


@pytest.mark.parametrize("text", TRICKY)
def test_a_rename_replaces_what_the_pattern_finds(text: str) -> None:
    mapping = {name: f"{name}_new" for name in set(NAME.findall(text)) | {"c", "g", "i", "e"}}
    assert renamed(text, mapping) == NAME.sub(lambda m: mapping.get(m[1], m[1]), text)
