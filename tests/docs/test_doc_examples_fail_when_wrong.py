"""The docs' example runner (examples.py) catches what it should: a wrong shown line, a
diff that does not apply, a failing test block; and reads blocks as documented."""

from __future__ import annotations

from pathlib import Path

import pytest
from sybil import Sybil
from sybil.example import SybilFailure

from tests.docs.examples import commands, defines_tests, parse, patched, unmatched

WALK = """
```python walk
# test_one.py
def test_one():
    print("hello from test_one")
```

```console walk
$ pytest -s
...
...hello from test_one...
... 1 passed...
```

```diff walk
--- test_one.py
+++ test_one.py
@@
-    print("hello from test_one")
+    assert False, "broken"
```

```console walk
$ pytest
...
FAILED test_one.py::test_one - AssertionError: broken...
```

```text
not run
```
"""


def run(tmp_path: Path, text: str) -> list[str]:
    """Each example's outcome: 'ok' or the start of its failure."""
    doc = tmp_path / "doc.md"
    doc.write_text(text)
    outcomes = []
    for example in Sybil([parse], patterns=["*.md"], path=str(tmp_path)).parse(doc).examples():
        try:
            example.evaluate()
            outcomes.append("ok")
        except SybilFailure as failure:
            outcomes.append(str(failure.result).splitlines()[0])
    return outcomes


def test_a_walk_writes_runs_patches_and_matches(tmp_path: Path) -> None:
    assert run(tmp_path, WALK) == ["ok"] * 4


def test_a_line_the_output_lacks_fails_its_block(tmp_path: Path) -> None:
    text = WALK.replace("...hello from test_one...", "goodbye...")
    assert (
        run(tmp_path, text)[1]
        == "$ pytest -s: this line of the docs is not in the output (in order):"
    )


def test_a_diff_that_does_not_apply_fails(tmp_path: Path) -> None:
    text = WALK.replace('-    print("hello from test_one")', '-    print("another line")')
    assert run(tmp_path, text)[2].startswith("cannot apply the diff to test_one.py")


def test_a_failing_test_block_fails(tmp_path: Path) -> None:
    text = "```python\ndef test_x():\n    assert 1 == 2\n```\n"
    assert run(tmp_path, text)[0].startswith("`pytest --update-snapshots` on this block exited 1")


def test_plain_python_blocks_share_the_document_namespace(tmp_path: Path) -> None:
    text = "```python\nx = 2\n```\n\n```python\nassert x == 2\n```\n"
    assert run(tmp_path, text) == ["ok", "ok"]


CONFIG_AND_TOOLS = """
```ini walk
# pytest.ini
[pytest]
markers = slow
addopts = -m "not slow"
```

```python walk
# suite/test_two.py
import pytest

def test_fast():
    pass

@pytest.mark.slow
def test_slow():
    pass
```

```console walk
$ pytest suite
... 1 passed, 1 deselected...
$ cp -r suite copy
$ pytest -m slow copy
... 1 passed, 1 deselected...
$ python -m pytest_torchcompile --help
...merge-baselines...
```
"""


def test_a_walk_writes_config_files_copies_folders_and_runs_the_tools(tmp_path: Path) -> None:
    assert run(tmp_path, CONFIG_AND_TOOLS) == ["ok"] * 3


def test_a_walk_runs_no_other_command(tmp_path: Path) -> None:
    text = CONFIG_AND_TOOLS.replace("$ cp -r suite copy", "$ rm -rf suite")
    assert run(tmp_path, text)[2] == (
        "a ```console walk block runs pytest, python -m pytest_torchcompile and cp -r SRC DST, "
        "not 'rm -rf suite'"
    )
    unnamed = CONFIG_AND_TOOLS.replace("# pytest.ini\n", "")
    assert run(tmp_path, unnamed)[0].startswith(
        "a walk block that writes a file opens with a comment naming it"
    )


def test_reading_blocks() -> None:
    assert defines_tests("import pytest\n\ndef test_a():\n    pass\n")
    assert not defines_tests("def helper():\n    pass\n")
    assert commands("$ pytest -q\nline one\n\nline two\n$ pytest\n") == [
        ("pytest -q", ["line one", "line two"]),
        ("pytest", []),
    ]
    output = ["a", "ops: relu -> silu; more", "b", "c"]
    assert unmatched(output, ["ops: relu -> silu...", "c"]) is None
    assert unmatched(output, ["c", "b"]) == "b"  # in order
    assert patched("a\nb\nc\n", ["@@", " a", "-b", "+B"]) == "a\nB\nc\n"
    with pytest.raises(ValueError, match="not in the file"):
        patched("a\n", ["@@", "-x", "+y"])
