"""Plain-text tables for the terminal: one renderer for both wings' end-of-run tables."""

from __future__ import annotations

from collections.abc import Sequence


def align(
    header: Sequence[str], rows: Sequence[Sequence[str]], numbers_right: bool = False
) -> list[str]:
    """Columns two spaces apart, left-aligned; with `numbers_right` every column
    after the first is right-aligned (columns of numbers). No trailing blanks."""
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        rest = (c.rjust(w) if numbers_right else c.ljust(w) for c, w in zip(cells[1:], widths[1:]))
        return "  ".join([cells[0].ljust(widths[0]), *rest]).rstrip()

    return [fmt(header), *(fmt(cells) for cells in rows)]
