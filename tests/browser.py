"""Open a generated page in headless Chromium (Debian's `chromium`) and look at it as a person would.

Driven by playwright's Python package against the system browser
(`executable_path`, never `playwright install`). Where Chromium or playwright
is missing (a user's machine) the tests skip saying how to get them; under CI
(`CI` set) a missing browser fails instead, so the browser tests never
silently stop running. Screenshots go to the test's tmp folder, or to
`$PTC_SCREENSHOTS` (e.g. `docs/images`) to refresh the docs' pictures.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("PTC_CHROMIUM", "/usr/bin/chromium")
#: this machine has no network and no display: nothing may reach out or need a GPU
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL = "apt-get install -y chromium (see CONTRIBUTING.md, 'Browser tests')"


def _missing() -> str | None:
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"headless Chromium not found at {CHROMIUM}: {INSTALL}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install -e '.[dev]'"
    return None


def require_browser() -> None:
    """Skip (fail under CI) when the browser or its driver is missing."""
    missing = _missing()
    if missing is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"browser tests must run in CI: {missing}", pytrace=False)
    pytest.skip(missing)


@dataclass
class Seen:
    """An open page and what the browser complained about while loading it."""

    page: Any
    errors: list[str] = field(default_factory=list)

    def screenshot(self, name: str, fallback: Path, selector: str | None = None) -> Path:
        """The viewport (or the element `selector` finds) as `name`, in $PTC_SCREENSHOTS or `fallback`."""
        folder = Path(os.environ.get("PTC_SCREENSHOTS", fallback))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        target = self.page.locator(selector).first if selector else self.page
        target.screenshot(path=str(path))
        return path


@contextlib.contextmanager
def opened(path: Path, width: int = 1400, height: int = 1000) -> Iterator[Seen]:
    """`path` loaded in a fresh headless Chromium profile; console errors and page errors collected."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as profile, sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": width, "height": height},
            offline=True,  # a page that fetches anything shows it as an error
        )
        try:
            page = context.new_page()
            seen = Seen(page)
            page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: seen.errors.append(str(e)))
            page.on("requestfailed", lambda r: seen.errors.append(f"request failed: {r.url}"))
            page.goto(path.resolve().as_uri())
            page.wait_for_load_state("load")
            yield seen
        finally:
            context.close()
