"""The suite's forked pytest runs behave as new interpreters would, and fall back where they cannot.

Every test of this suite that runs pytest relies on it: a fork that kept the test
worker's folder, environment or module search path would test the wrong project.
"""

from __future__ import annotations

import os

import pytest

from tests import zygote

PROBE = """
import os, sys

def test_probe():
    print("CWD", os.getcwd())
    print("FLAG", os.environ.get("PTC_PROBE"))
    print("PATH0", sys.path[0])
    print("TORCH", "torch" in sys.modules)
    print("PID", os.getpid())
    assert os.environ.get("PTC_PROBE") != "fail"
"""


def _probe(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, flag: str) -> dict[str, str]:
    monkeypatch.setenv("PTC_PROBE", flag)
    pytester.makepyfile(test_probe=PROBE)
    result = pytester.runpytest("-s", "-q")
    seen = dict(
        line.split(" ", 1)
        for line in result.outlines
        if line.split(" ", 1)[0] in {"CWD", "FLAG", "PATH0", "TORCH", "PID"}
    )
    seen["ret"] = str(result.ret)
    return seen


def test_a_forked_run_has_its_folder_environment_path_and_exit_status(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    if zygote.zygote() is None:
        pytest.skip(f"every run is a new interpreter here ({zygote.OPT_OUT}=1 or no fork)")
    passed = _probe(pytester, monkeypatch, "pass")
    assert passed["CWD"] == str(pytester.path) == passed["PATH0"]
    assert passed["FLAG"] == "pass" and passed["ret"] == "0"
    assert passed["TORCH"] == "True"  # forked: torch came with the zygote
    failed = _probe(pytester, monkeypatch, "fail")
    assert failed["ret"] == "1" and failed["PID"] != passed["PID"] != str(os.getpid())


@pytest.mark.fresh_interpreter
def test_a_marked_test_runs_new_interpreters(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _probe(pytester, monkeypatch, "pass")["TORCH"] == "False"


def test_an_import_time_variable_runs_a_new_interpreter(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "PYTHONHASHSEED", "123" if os.environ.get("PYTHONHASHSEED") != "123" else "124"
    )
    assert _probe(pytester, monkeypatch, "pass")["TORCH"] == "False"


def test_the_docs_runner_forks_with_the_exact_environment(tmp_path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        "PTC_PROBE": "fail",
    }
    done = zygote.run_pytest(["-s", "-q", "-p", "no:cacheprovider"], tmp_path, env, timeout=120)
    assert done.returncode == 1 and f"CWD {tmp_path}" in done.stdout and "FLAG fail" in done.stdout
