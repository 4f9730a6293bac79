"""Every command takes the common flags (--header, --no-progress, --format) where they make sense, declared once.

Parametrized over the parser's own subcommands (nested ones included), so a new command is checked without
being listed here: every command that reads a live server or a store takes all three; every ``--header``,
``--no-progress`` and ``--format`` of any command is the shared declaration (`common_flags`, commands/parser.py).
"""

from __future__ import annotations

import argparse
import importlib
import io
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from migrations_playbook import cli
from migrations_playbook.commands.parser import COMMON_FLAGS, common_flags


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, (*prefix, name))
                found.update(nested or {(*prefix, name): sub})
    return found


COMMANDS = _commands(cli.build_parser())


def _value(action: argparse.Action) -> str:
    if action.type is int:
        return "1"
    if action.choices:
        return str(next(iter(action.choices)))
    return "http://127.0.0.1:9" if "--live" in action.option_strings else "x"


def _minimal(parser: argparse.ArgumentParser) -> list[str]:
    """The fewest arguments the command parses with: its positionals, required options, and the first option
    of each required either-or group."""
    argv: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if not action.option_strings:
            argv.append(_value(action))
        elif action.required:
            argv += [action.option_strings[0], _value(action)]
    for group in parser._mutually_exclusive_groups:
        if group.required:
            first = group._group_actions[0]
            argv += [first.option_strings[0]] + ([] if first.nargs == 0 else [_value(first)])
    return argv


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {option: action for action in parser._actions for option in action.option_strings}


def _reads_a_source(parser: argparse.ArgumentParser) -> bool:
    return "--live" in _options(parser) or "--checkpointer" in _options(parser)


def test_the_walk_finds_the_commands() -> None:
    assert {("gate",), ("replay",), ("record", "new")} <= set(COMMANDS)
    assert sum(_reads_a_source(p) for p in COMMANDS.values()) >= 8


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_command_that_reads_a_source_takes_the_common_flags(path: tuple[str, ...]) -> None:
    parser = COMMANDS[path]
    base = [*path, *_minimal(parser)]
    cli.build_parser().parse_args(base)  # the minimal form parses
    if not _reads_a_source(parser):
        pytest.skip(f"{' '.join(path)} reads no server or store")
    options = _options(parser)
    for flag in COMMON_FLAGS:
        assert flag in options, f"playbook {' '.join(path)} does not take {flag}"
    fmt = "json" if "json" in (options["--format"].choices or ()) else str(options["--format"].default)
    args = cli.build_parser().parse_args([*base, "--no-progress", "--header", "X-Auth-Scheme: langsmith", "--format", fmt])
    assert args.no_progress is True
    assert args.header == ["X-Auth-Scheme: langsmith"]
    assert args.format == fmt


def _shared() -> dict[str, argparse.Action]:
    probe = argparse.ArgumentParser()
    common_flags(probe, formats=("table",))
    return _options(probe)


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_common_flags_are_the_shared_declaration(path: tuple[str, ...]) -> None:
    options, shared = _options(COMMANDS[path]), _shared()
    for flag in COMMON_FLAGS:
        if flag not in options:
            continue
        mine, theirs = options[flag], shared[flag]
        assert (type(mine), mine.help, mine.metavar, mine.dest) == (type(theirs), theirs.help, theirs.metavar, theirs.dest), (
            f"playbook {' '.join(path)} declares {flag} itself: use common_flags"
        )
        if flag == "--format":
            assert mine.default == next(iter(mine.choices or ()))


def test_replay_takes_no_progress() -> None:
    """The papercut as the newcomer hit it."""
    args = cli.build_parser().parse_args(
        ["replay", "--live", "http://x", "--candidate", "c", "--staging-url", "http://y", "--no-progress"]
    )
    assert args.no_progress is True


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Source:
    """A source of two threads that reports its reading progress, as `ApiSource.threads` does."""

    label = "fake"

    async def __aenter__(self) -> _Source:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def graph_ids(self, wanted: list[str], owners: object = None) -> list[str]:
        return ["g"]

    async def live_graphs(self, graph_ids: list[str], locks: bool = True) -> dict:
        return {}

    async def threads(self, graph_ids: list[str], *, live: object = None, progress: Any = None) -> AsyncIterator[Any]:
        from migrations_playbook.model import ThreadSnapshot

        for done in (1, 2):
            if progress is not None:
                progress("g", done, 2)
            yield ThreadSnapshot(thread_id=f"t{done}", graph_id="g", status="idle", values={})


@pytest.mark.parametrize("command", ["inflight", "snapshot"])
def test_no_progress_turns_the_bar_off(command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(f"migrations_playbook.commands.{command}")
    monkeypatch.setattr(module, "open_source", lambda request: _Source())
    drawn = {}
    for flags in ([], ["--no-progress"]):
        terminal = _Tty()
        monkeypatch.setattr(sys, "stderr", terminal)
        assert cli.main([command, "--live", "http://127.0.0.1:9", *flags]) == cli.EXIT_PASS
        capsys.readouterr()
        drawn[bool(flags)] = "scanning g: " in terminal.getvalue()
    assert drawn == {False: True, True: False}


@pytest.mark.parametrize("given", ["0", "-5", "soon", "nan", "inf"])
def test_deadline_takes_seconds_above_zero(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.build_parser().parse_args(["inflight", "--live", "http://127.0.0.1:9", "--deadline", given])
    assert exited.value.code == cli.EXIT_USAGE
    assert "--deadline: expected a number of seconds above 0" in capsys.readouterr().err


def test_deadline_defaults_to_the_budgets_default() -> None:
    from migrations_playbook.sources.budget import DEFAULT_SECONDS

    assert cli.build_parser().parse_args(["gate", "--live", "http://x", "--candidate", "c"]).deadline == DEFAULT_SECONDS
    assert cli.build_parser().parse_args(["turns", "--live", "http://x", "t", "--deadline", "2.5"]).deadline == 2.5
