"""Every command that reads a server, against a server that answers nonsense: exit 2 or 3, one line, no traceback.

The server is a stand-in (tests/integration/nonsense_server.py), not an Agent Server: a `http.server` on
loopback that answers the routes `playbook` reads well-formed, except the routes of a scope, where it
answers one kind of nonsense (HTML, an empty body, cut-off JSON, a scalar, lists and objects swapped,
missing keys, wrong types, a 200 carrying an error, a body shorter than its Content-Length, a garbage
event stream). Exit 1 means "blocked" and a traceback is never an answer: whatever comes back, the
command says in one line what the server answered (exit 3) or what it refused (exit 2).

The commands run in-process through `cli.main` (fast: no interpreter per case); one case per kind runs
`python -m migrations_playbook` in a subprocess, where a traceback would reach stderr as the user sees it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migrations_playbook import cli
from tests.conftest import REPO_ROOT
from tests.integration.nonsense_server import KINDS, THREAD, StandIn, nonsense_server

LOOSE = REPO_ROOT / "tests" / "fixtures" / "layout_projects" / "loose"
CONFIG = str(LOOSE / "langgraph.json")

COMMANDS: dict[str, list[str]] = {
    "gate": ["gate", "--live", "{url}", "--candidate", CONFIG, "--no-progress"],
    "inflight": ["inflight", "--live", "{url}"],
    "inflight-running": ["inflight", "--live", "{url}", "--running", CONFIG],
    "snapshot": ["snapshot", "--live", "{url}"],
    "migrate": ["migrate", "--live", "{url}", "--candidate", CONFIG, "--plan", "{plan}"],
    "migrate-apply": ["migrate", "--live", "{url}", "--candidate", CONFIG, "--plan", "{plan}", "--apply"],
    "migrate-rollback": ["migrate", "--live", "{url}", "--candidate", CONFIG, "--plan", "{plan}", "--rollback", "0100-greet"],
    "replay": ["replay", "--live", "{url}", "--candidate", CONFIG, "--staging-url", "{url}", "--auto-resume"],
    "shadow": [
        "shadow",
        "--live",
        "{url}",
        "--staging-url",
        "{url}",
        "--staging-url",
        "{url}",
        "--live-code",
        str(LOOSE),
        "--candidate",
        CONFIG,
    ],
    "turns": ["turns", "--live", "{url}", THREAD],
    "rerun": ["rerun", "--live", "{url}", THREAD, "--turn", "1", "--input", "hi"],
    "activity": ["activity", "--since", "1d"],
}
"""Every command of `cli.py` that reads a server (contract and rules read none)."""

PLAN = {
    "plan_version": 1,
    "migration": "0100-greet",
    "graphs": ["greeter"],
    "steps": [{"op": "set_default", "key": "greeting", "value": "hello"}],
}


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "0100-greet.plan.json"
    path.write_text(json.dumps(PLAN))
    return path


@pytest.fixture(scope="module")
def server() -> Iterator[StandIn]:
    """One stand-in for the module; each test sets what it answers (`StandIn.answer`)."""
    with nonsense_server("html") as standin:
        yield standin


def _argv(command: str, url: str, plan: Path) -> list[str]:
    return [a.format(url=url, plan=plan) for a in COMMANDS[command]]


def _check(code: int, err: str, command: str, kind: str) -> None:
    assert "Traceback" not in err, err
    assert code in (cli.EXIT_USAGE, cli.EXIT_UNREACHABLE), f"{command} on {kind}: exit {code}\n{err}"
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines, f"{command} on {kind}: nothing on stderr"
    error = [line for line in lines if line.startswith("playbook: error: ")]
    assert len(error) == 1 and error[0] == lines[-1], f"{command} on {kind}: not one error line\n{err}"


def _run_in_process(
    argv: list[str], url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
    monkeypatch.setenv("LANGSMITH_API_KEY", "lsv2-standin")
    code = cli.main(argv)  # an exception escaping here is the traceback a user would see
    return code, capsys.readouterr().err


EVERY_ROUTE_KINDS = ("html", "missing_keys", "error_payload", "sse_garbage")
"""The kinds every command meets in `make test`; the gate meets every kind, and `make test-matrix` runs the rest
(one check serves every route, so a kind that passes for the gate passes for all: the matrix proves it)."""


def _every_route_cases() -> list[Any]:
    cases = []
    for command in COMMANDS:
        for kind in KINDS:
            kept = command == "gate" or kind in EVERY_ROUTE_KINDS
            cases.append(pytest.param(command, kind, id=f"{command}-{kind}", marks=() if kept else pytest.mark.matrix))
    return cases


@pytest.mark.parametrize(("command", "kind"), _every_route_cases())
def test_a_server_answering_nonsense_on_every_route_is_one_line_and_exit_2_or_3(
    command: str,
    kind: str,
    plan: Path,
    server: StandIn,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.answer(kind, "all")
    code, err = _run_in_process(_argv(command, server.url, plan), server.url, monkeypatch, capsys)
    _check(code, err, command, kind)


DEEP_KINDS = [
    "html",
    "wrong_types",
    *(pytest.param(kind, marks=pytest.mark.matrix) for kind in ("empty", "flipped", "missing_keys", "error_payload")),
]
"""`make test` keeps two kinds on the deeper routes (every kind reaches them through the same check); `make
test-matrix` runs the rest."""


@pytest.mark.parametrize("kind", DEEP_KINDS)
@pytest.mark.parametrize("scope", ["threads", "thread"])
@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "activity"])
def test_nonsense_on_the_thread_reads_alone_is_one_line_and_exit_2_or_3(
    command: str,
    scope: str,
    kind: str,
    plan: Path,
    server: StandIn,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The server answers `/ok`, the assistants and the graph well: the nonsense comes deeper in."""
    server.answer(kind, scope)
    code, err = _run_in_process(_argv(command, server.url, plan), server.url, monkeypatch, capsys)
    if not server.hit(scope):  # the command stopped before these routes (or reads none of them): nothing to judge
        assert code != cli.EXIT_BLOCKED and "Traceback" not in err, err
        return
    _check(code, err, command, kind)


@pytest.mark.parametrize("kind", ["html", pytest.param("scalar", marks=pytest.mark.matrix), "short_body"])
def test_nonsense_on_ok_is_exit_3_naming_what_came_back(kind: str, server: StandIn) -> None:
    """In a subprocess, as a user runs it: the reachability check itself gets the nonsense."""
    server.answer(kind, "ok")
    done = subprocess.run(
        [sys.executable, "-m", "migrations_playbook", "gate", "--live", server.url, "--candidate", CONFIG],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    _check(done.returncode, done.stderr, "gate", kind)
    assert server.url in done.stderr and "/ok" in done.stderr


@pytest.mark.parametrize("kind", ["html", "missing_keys", pytest.param("cut_json", marks=pytest.mark.matrix)])
def test_the_gate_as_a_user_runs_it_says_what_came_back(kind: str, server: StandIn) -> None:
    """Issue 26's case, in a subprocess: a 200 that is not JSON, or JSON of the wrong shape."""
    server.answer(kind, "all")
    done = subprocess.run(
        [sys.executable, "-m", "migrations_playbook", "gate", "--live", server.url, "--candidate", CONFIG],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    _check(done.returncode, done.stderr, "gate", kind)
    assert done.returncode == cli.EXIT_UNREACHABLE
    assert "POST /assistants/search" in done.stderr
