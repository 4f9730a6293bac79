"""CLI surface of `playbook` that needs no server: usage errors, headers, progress bar."""

from __future__ import annotations

import io

import pytest

from migrations_playbook import cli
from migrations_playbook.errors import UsageError
from migrations_playbook.render.progress import ProgressBar
from migrations_playbook.sources.api.source import wanted_graphs


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([], id="no-command"),
        pytest.param(["gate", "--candidate", "x.json"], id="gate-without-live"),
        pytest.param(["contract"], id="contract-without-mode"),
        pytest.param(["replay", "--live", "http://x", "--candidate", "c"], id="replay-without-source"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == cli.EXIT_USAGE
    assert "playbook: error:" in capsys.readouterr().err


def test_bad_header_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["inflight", "--live", "http://127.0.0.1:9", "--header", "no-colon"])
    assert code == cli.EXIT_USAGE
    assert "--header must look like 'Name: value'" in capsys.readouterr().err


def test_replay_resume_must_be_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["replay", "--live", "http://x", "--candidate", "c", "--staging-url", "http://y", "--resume", "{not json"])
    assert code == cli.EXIT_USAGE
    assert "--resume must be JSON" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("asked", "expected"),
    [
        pytest.param([], ["fan_room", "ticket_triage"], id="default-is-every-served-graph-sorted"),
        pytest.param(["ticket_triage"], ["ticket_triage"], id="a-served-graph"),
    ],
)
def test_wanted_graphs(asked: list[str], expected: list[str]) -> None:
    served = {"ticket_triage": "a1", "fan_room": "a2"}
    assert wanted_graphs(asked, served) == expected


def test_a_graph_the_server_does_not_serve_is_a_usage_error_naming_what_it_serves() -> None:
    with pytest.raises(UsageError, match=r"graph\(s\) nope not on the live server; it serves: fan_room, ticket_triage"):
        wanted_graphs(["ticket_triage", "nope"], {"ticket_triage": "a1", "fan_room": "a2"})


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Tty()
    monkeypatch.setattr("sys.stderr", terminal)
    bar = ProgressBar(enabled=True)
    bar("helpdesk", 50, 200)
    bar.close()
    assert "scanning helpdesk: [#######" in terminal.getvalue() and "50/200" in terminal.getvalue()

    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    quiet = ProgressBar(enabled=True)
    quiet("helpdesk", 50, 200)
    quiet.close()
    assert pipe.getvalue() == ""
    monkeypatch.setattr("sys.stderr", terminal)
    assert ProgressBar(enabled=False).enabled is False
