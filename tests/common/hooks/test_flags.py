"""One option group, one prefix: a flag over its ini option, and the old spellings still work.

Each run here starts pytest in a subprocess without compiling anything (the
plugin's start-up does not import torch); a conftest prints the settings the
plugin read, so a test sees what a flag or an ini option changed.
"""

from __future__ import annotations

import pytest

from pytest_torchcompile.snapshot.compare.failure import FULL_DIFF_FLAG
from pytest_torchcompile.snapshot.plugin import FULL_DIFF

SHOW_SETTINGS = """
import pytest

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from pytest_torchcompile.perf.plugin import perf_key
    from pytest_torchcompile.snapshot.plugin import session_key

    perf = config.stash[perf_key].settings
    snapshots = config.stash[session_key]
    gate = perf.gate
    print(
        "SETTINGS",
        f"update={perf.update}",
        f"gate={'off' if gate is None else 'strict' if gate.strict else 'on'}",
        f"baseline={perf.baseline_dir.name}",
        f"report={perf.report}",
        f"json={perf.benchmark_json}",
        f"threshold={(gate.threshold if gate else None)}",
        f"threads={perf.threads}",
        f"full_diff={snapshots.full_diff}",
    )
    print("TEXT_ONLY", snapshots.text_only.action)
"""


def run(pytester: pytest.Pytester, *args: str, ini: str = "") -> pytest.RunResult:
    pytester.makeconftest(SHOW_SETTINGS)
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(test_m="def test_m():\n    pass\n")
    return pytester.runpytest("-s", "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize(
    "args, ini, setting, new",
    [
        (["--perf-update-baseline"], "", "update=True", "--torchcompile-perf-update-baseline"),
        (["--perf-gate=strict"], "", "gate=strict", "--torchcompile-perf-gate"),
        (["--perf-gate", "test_m.py"], "", "gate=on", "--torchcompile-perf-gate"),
        (["--perf-baseline-dir=bl"], "", "baseline=bl", "--torchcompile-perf-baseline-dir"),
        (["--perf-report=r.json"], "", "report=r.json", "--torchcompile-perf-report"),
        (["--perf-benchmark-json=b.json"], "", "json=b.json", "--torchcompile-perf-benchmark-json"),
        (
            [],
            "torchcompile_perf_baseline = bl",
            "baseline=bl",
            "ini torchcompile_perf_baseline_dir",
        ),
    ],
    ids=["update", "gate-strict", "gate-path", "baseline-dir", "report", "benchmark-json", "ini"],
)
def test_an_old_spelling_still_works_with_one_deprecation_line_naming_the_new(
    pytester: pytest.Pytester, args: list[str], ini: str, setting: str, new: str
) -> None:
    result = run(pytester, *args, ini=ini)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"SETTINGS*{setting}*"])
    old = args[0].split("=")[0] if args else "ini " + ini.split(" =")[0]
    warning = f"*PytestDeprecationWarning: pytest-torchcompile: {old} is deprecated: use {new}"
    result.stdout.fnmatch_lines([warning])
    assert sum("is deprecated" in line for line in result.stdout.lines) == 1


def test_the_new_spellings_say_nothing_of_deprecation(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        "--torchcompile-perf-update-baseline",
        "--torchcompile-perf-gate=strict",
        "--torchcompile-perf-baseline-dir=bl",
        "--torchcompile-perf-report=r.json",
        "--torchcompile-perf-benchmark-json=b.json",
        "--torchcompile-full-diff",
        ini="torchcompile_perf_threshold = 0.2",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "SETTINGS update=True gate=strict baseline=bl report=r.json json=b.json threshold=0.2 threads=1 full_diff=True"
        ]
    )
    assert "deprecated" not in result.stdout.str()


def test_a_flag_wins_over_its_ini_option_and_the_new_ini_name_over_the_old(
    pytester: pytest.Pytester,
) -> None:
    ini = "torchcompile_perf_threshold = 0.2\ntorchcompile_perf_threads = 1\ntorchcompile_full_diff = true"
    result = run(pytester, "--torchcompile-perf-gate", "--torchcompile-perf-threshold=0.3", ini=ini)
    result.stdout.fnmatch_lines(["SETTINGS*threshold=0.3 threads=1 full_diff=True"])
    ini = "torchcompile_perf_baseline = old\ntorchcompile_perf_baseline_dir = new"
    result = run(pytester, ini=ini)
    result.stdout.fnmatch_lines(["SETTINGS*baseline=new*"])


def test_a_bad_flag_value_fails_at_parse_time_naming_flag_and_value(
    pytester: pytest.Pytester,
) -> None:
    result = run(pytester, "--torchcompile-perf-threshold=ten")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*argument --torchcompile-perf-threshold: 'ten' is not a number"])


def test_both_wings_share_one_group_in_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    text = result.stdout.str()
    group = text.split("pytest-torchcompile (torch.compile snapshots and benchmarks):", 1)[1]
    flags = group.split("\n\n", 1)[0]
    for flag in ("--update-snapshots", "--torchcompile-snapshot-dir", "--torchcompile-perf-gate"):
        assert flag in flags
    assert "--perf-gate" not in text.replace("--torchcompile-perf-gate", "")
    assert "torch.compile snapshots (pytest-torchcompile)" not in text


def test_the_failure_text_names_the_full_diff_flag() -> None:
    assert FULL_DIFF.flag == FULL_DIFF_FLAG


@pytest.mark.torch_independent
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--torchcompile-perf-gate", "--perf-gate=sometimes"],
            "*--torchcompile-perf-gate=on and --perf-gate=sometimes: --perf-gate is the deprecated "
            "spelling of --torchcompile-perf-gate, and a run takes one: give --torchcompile-perf-gate alone",
        ),
        (
            ["--perf-baseline-dir=old", "--torchcompile-perf-baseline-dir=new"],
            "*--torchcompile-perf-baseline-dir=new and --perf-baseline-dir=old: --perf-baseline-dir is*",
        ),
        (
            ["--torchcompile-perf-report=r.json", "--perf-report=out/"],
            "*argument --perf-report: 'out/' must name a file, e.g. perf.json",
        ),
        (
            ["--update-snapshots", "--torchcompile-update-text-only"],
            "*--update-snapshots and --torchcompile-update-text-only ask for different updates: "
            "--update-snapshots writes every difference, behaviour changes included, *: give one of them",
        ),
        (
            ["--torchcompile-update-text-only", "--torchcompile-strict-text"],
            "*--torchcompile-update-text-only and --torchcompile-strict-text contradict each other: "
            "the first writes the cases whose difference is text only, the second fails them: give one of them",
        ),
    ],
    ids=["gate-bad-old-value", "baseline-dir", "report-bad-old-value", "update", "strict"],
)
def test_flags_that_contradict_each_other_are_a_usage_error_naming_both(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    """Which of two flags a run obeys would be a guess, and the other one's value would go unread."""
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "SETTINGS" not in result.stdout.str()


@pytest.mark.torch_independent
def test_the_text_only_update_is_obeyed_where_the_ini_asks_for_strict_text(
    pytester: pytest.Pytester,
) -> None:
    """The ini's `torchcompile_strict_text` is the project's rule; the flag is one run's action."""
    result = run(pytester, "--torchcompile-update-text-only", ini="torchcompile_strict_text = true")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["TEXT_ONLY update"])
