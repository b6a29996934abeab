"""The names in a line of printed code, read and replaced in one split of the text.

A name is an identifier that is not an attribute (`aten.add`), not inside a
string's text and not the tail of a longer word: what the pattern
`(?<![\\w.'"])[A-Za-z_]\\w*(?![\\w'"])` matches. That pattern leads with a
lookbehind, tried at every position of a text, and a replacement calls back
into Python for every name; here one split finds every identifier and a loop
decides on each from the text around it, at about half the cost.
`older_forms.py` renames a folded copy's names through here when it writes
out a file an earlier version stored folded.
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping

#: an identifier: the split keeps it; what precedes and follows it decides whether it is a name
_IDENTIFIER = re.compile(r"([A-Za-z_]\w*)")


def _is_name(before: str, after: str) -> bool:
    """Whether the identifier between these two pieces of text is a name."""
    last = before[-1:]
    if last and (last.isalnum() or last in "_.'\""):
        return False  # a word's tail (after a digit), an attribute, a string's text
    return after[:1] not in ("'", '"')


def names_in(code: str) -> list[str]:
    """Every name of `code`, in order, repeats included."""
    parts = _IDENTIFIER.split(code)
    return [parts[k] for k in range(1, len(parts), 2) if _is_name(parts[k - 1], parts[k + 1])]


def split_identifiers(code: str) -> list[str]:
    """`code` split at its identifiers: text, identifier, text, ..., text (a text may be empty).
    Its texts joined are `code` without its identifiers."""
    return _IDENTIFIER.split(code)


def name_positions(parts: list[str], wanted: Container[str]) -> list[int]:
    """Where in `parts` (`split_identifiers`) the names in `wanted` are, in order."""
    hits = [2 * k + 1 for k, part in enumerate(parts[1::2]) if part in wanted]
    # `_is_name` written out: a call per identifier of a graph costs more than the test
    return [
        k
        for k in hits
        if not (parts[k - 1][-1:] and (parts[k - 1][-1].isalnum() or parts[k - 1][-1] in "_.'\""))
        and parts[k + 1][:1] not in ("'", '"')
    ]


def renamed(code: str, mapping: Mapping[str, str]) -> str:
    """`code` with each name that `mapping` holds replaced by its value."""
    parts = _IDENTIFIER.split(code)
    for k in name_positions(parts, mapping):
        parts[k] = mapping[parts[k]]
    return "".join(parts)
