"""Every name and text the HTML pages take from a snapshot set is shown as text, never run as markup.

A snapshot folder comes with a pull request: its file names, folder names and
contents are whoever wrote it. The `diff` command's page is opened by a
reviewer, so markup in any of them must stay text in a real browser.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from pytest_torchcompile.diff_command import main
from tests.browser import opened

MARKUP = "<img src=x onerror=alert(4)>"
SUMMARY = "backend: inductor\ngraphs: {graphs}\ngraph breaks: 0\nrecompiles: 0\nkernels: 1\n"


def _case(root: Path, case: str, graphs: int, extra: dict[str, str]) -> None:
    folder = root / case
    folder.mkdir(parents=True)
    (folder / "summary.txt").write_text(SUMMARY.format(graphs=graphs) + f"note: {MARKUP}\n")
    (folder / "dynamo_graph.fx.txt").write_text(f"def forward(self, x):  # {MARKUP}\n")
    for name, text in extra.items():
        (folder / name).write_text(text)


def _sets(tmp_path: Path) -> tuple[Path, Path]:
    """OLD and NEW: one case in both (its texts carry markup), one only in NEW with markup in
    its folder name and a file named as markup; the set folders' own names carry markup too."""
    old, new = tmp_path / f"old{MARKUP}", tmp_path / f"new{MARKUP}"
    _case(old, "test_m/test_both", 1, {f"{MARKUP}.txt": "old"})
    _case(new, "test_m/test_both", 2, {f"{MARKUP}.txt": f"new {MARKUP}"})
    _case(new, f"test_m/test_{MARKUP}", 1, {f"{MARKUP}.txt": MARKUP})
    return old, new


def test_markup_in_file_folder_and_set_names_and_texts_stays_text_in_chromium(
    tmp_path: Path,
) -> None:
    old, new = _sets(tmp_path)
    page_file = tmp_path / "diff.html"
    with contextlib.redirect_stdout(io.StringIO()):
        main(["diff", str(old), str(new), "--html", str(page_file)])
    html = page_file.read_text()
    assert MARKUP not in html and "<img" not in html
    with opened(page_file) as seen:
        dialogs: list[str] = []
        seen.page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        seen.page.reload()
        seen.page.wait_for_load_state("load")
        assert seen.page.locator("img").count() == 0 and dialogs == []
        shown = seen.page.locator("body").inner_text()
        assert f"{MARKUP}.txt (NEW)" in shown  # the one-side case's file, named as text
        assert f"old{MARKUP}" in shown and f"test_m/test_{MARKUP}" in shown
        assert seen.errors == []
