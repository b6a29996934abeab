"""The plugin's flags and ini options: one group, one prefix, a flag over its ini option.

As pytest's `logging.py` does (`add_option_ini` / `get_option_ini`), a
setting is a flag `--torchcompile-NAME` and an ini option `torchcompile_NAME`
of the same name; the flag, when given, wins. A run action (an update, the
gate, a report file) is a flag alone. Each wing declares its settings as
`Option`s; a value is converted by the option's `convert`, which raises
`ValueError` with what is wrong with the value: for a flag argparse says so
at parse time, for an ini option `get_option_ini` raises a usage error
naming it, so a bad value fails before any test runs.

A renamed flag or ini option keeps working under its old name
(`old_flag`, `old_ini`): `warn_renamed` prints one deprecation warning per
old name used, naming the new one. A flag given in both spellings is a usage
error naming both (which one counts would be a guess, and the other's value
would go unread). Nothing here imports torch.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import pytest

PREFIX = "torchcompile"
GROUP_TITLE = "pytest-torchcompile (torch.compile snapshots and benchmarks)"
#: the default of an ini option the plugin reads itself: "not set in any config file"
UNSET = "\0unset"
_OLD = "_renamed_from"


@dataclass(frozen=True)
class Option:
    """One setting: the flag `--torchcompile-<name>` (dashes for underscores) and, with
    `ini`, the ini option `torchcompile_<name>` it overrides.

    `default` is the value when neither is given. `convert` turns the text
    given into the value (a `ValueError` says what is wrong with it); `ini_type`
    is pytest's ini type where pytest parses it ("bool"). `flag_kwargs` go to
    argparse (`action`, `nargs`, `const`, `metavar`). `old_flag` and `old_ini`
    are the spellings it replaced.
    """

    name: str
    help: str
    ini: bool = True
    default: object = None
    convert: Callable[[str], object] | None = None
    ini_type: str | None = None
    flag_kwargs: Mapping[str, object] = field(default_factory=dict)
    old_flag: str | None = None
    old_ini: str | None = None

    @property
    def flag(self) -> str:
        return f"--{PREFIX}-{self.name.replace('_', '-')}"

    @property
    def dest(self) -> str:
        """The flag's attribute on `config.option`, and the ini option's name."""
        return f"{PREFIX}_{self.name}"


@dataclass(frozen=True)
class Given:
    """A setting's value and how the user gave it (`--flag=V`, `ini name = 'V'`), for messages."""

    value: object
    source: str

    @property
    def by_flag(self) -> bool:
        """Given on the command line (not by an ini option or the default)."""
        return self.source.startswith("--")


def group(parser: pytest.Parser) -> pytest.OptionGroup:
    """The plugin's one option group (both wings)."""
    return parser.getgroup(PREFIX, GROUP_TITLE)


def add_option_ini(parser: pytest.Parser, option: Option) -> None:
    """Register the option's flag, its ini option, and its old spellings (hidden)."""
    kwargs = dict(option.flag_kwargs)
    if option.convert is not None and kwargs.get("action") is None:
        kwargs["type"] = flag_type(option.convert)
    shown = f"{option.help} (ini {option.dest})" if option.ini else option.help
    ini_help = option.help.replace("%%", "%")  # argparse formats a flag's help with %, pytest not
    default = None if option.ini else kwargs.pop("default", None)
    group(parser).addoption(option.flag, dest=option.dest, default=default, help=shown, **kwargs)
    if option.old_flag is not None:
        group(parser).addoption(
            option.old_flag, dest=option.dest + _OLD, default=None, help=argparse.SUPPRESS, **kwargs
        )
    if option.ini:
        parser.addini(option.dest, help=ini_help, type=option.ini_type, default=UNSET)  # type: ignore[arg-type]
    if option.old_ini is not None:
        parser.addini(
            option.old_ini,
            help=f"deprecated: use {option.dest}",
            type=option.ini_type,
            default=UNSET,  # type: ignore[arg-type]
        )


def flag_type(convert: Callable[[str], object]) -> Callable[[str], object]:
    """An argparse `type=`: `convert`'s `ValueError` as argparse's error, naming the value."""

    def parse(value: str) -> object:
        try:
            return convert(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{value!r} {exc}") from None

    return parse


def get_option_ini(config: pytest.Config, option: Option) -> Given:
    """The flag's value if given (in one spelling: both are a usage error), else the ini
    option's, else the default."""
    spelled = []
    for flag, dest in ((option.flag, option.dest), (option.old_flag, option.dest + _OLD)):
        value = config.getoption(dest, None) if flag is not None else None
        if value is not None and value is not False:
            spelled.append(Given(value, flag if value is True else f"{flag}={value}"))
    if len(spelled) > 1:
        raise pytest.UsageError(
            f"{spelled[0].source} and {spelled[1].source}: {option.old_flag} is the deprecated "
            f"spelling of {option.flag}, and a run takes one: give {option.flag} alone"
        )
    if spelled:
        return spelled[0]
    if option.ini:
        for name in (option.dest, option.old_ini):
            if name is not None and (raw := _read_ini(config, option, name)) != UNSET:
                return Given(_ini_value(option, name, raw), f"ini {name} = {raw!r}")
    return Given(option.default, f"ini {option.dest} = {option.default!r}")


def _read_ini(config: pytest.Config, option: Option, name: str) -> object:
    """The ini option as pytest reads it; a value pytest refuses (a bool that is not
    one) is a usage error naming the option."""
    try:
        return config.getini(name)
    except (ValueError, pytest.UsageError) as exc:  # pytest 9 raises UsageError, older ValueError
        hint = " (use true or false)" if option.ini_type == "bool" else ""
        raise pytest.UsageError(f"pytest-torchcompile ini option: {name}: {exc}{hint}") from None


def _ini_value(option: Option, name: str, raw: object) -> object:
    if option.convert is None or option.ini_type is not None:
        return raw
    try:
        return option.convert(str(raw).strip())
    except ValueError as exc:
        raise pytest.UsageError(
            f"pytest-torchcompile ini option: {name} = {str(raw).strip()!r} {exc}"
        ) from None


def warn_renamed(config: pytest.Config, options: Iterable[Option]) -> None:
    """One deprecation warning for each old spelling this run used, naming the new one."""
    if hasattr(config, "workerinput"):
        return  # the xdist controller has warned
    for option in options:
        used = []
        if option.old_flag is not None and config.getoption(option.dest + _OLD, None) not in (
            None,
            False,
        ):
            used.append((option.old_flag, option.flag))
        if option.old_ini is not None and config.getini(option.old_ini) != UNSET:
            used.append((f"ini {option.old_ini}", f"ini {option.dest}"))
        for old, new in used:
            config.issue_config_time_warning(
                pytest.PytestDeprecationWarning(
                    f"pytest-torchcompile: {old} is deprecated: use {new}"
                ),
                stacklevel=2,
            )
