"""Every command that reads a server, against a server that answers nonsense: exit 2 or 3, one line, no traceback.

The server is a stand-in (tests/integration/nonsense_server.py), not an Agent Server: a `http.server` on
loopback that answers the routes `playbook` reads well-formed, except the routes of a scope, where it
answers one kind of nonsense (HTML, an empty body, cut-off JSON, a scalar, lists and objects swapped,
missing keys, wrong types, a 200 carrying an error, a body shorter than its Content-Length, a garbage
event stream). Exit 1 means "blocked" and a traceback is never an answer: whatever comes back, the
command says in one line what the server answered (exit 3) or what it refused (exit 2).

The commands run in-process through `cli.main` (fast: no interpreter per case); one case per kind runs
`python -m migrations_playbook` in a subprocess, where a traceback would reach stderr as the user sees it.

A server that stalls (issue 37: the same page whatever the offset, a new page every time, headers or a body
trickled a line or a byte at a time) is the same: exit 3 in one line, within the command's ``--deadline``
(a small one here, so each case ends in seconds), never "runs until killed".
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migrations_playbook import cli
from tests.conftest import REPO_ROOT
from tests.integration.nonsense_server import KINDS, STALLS, THREAD, StandIn, nonsense_server

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


DEADLINE = 2.0
"""The ``--deadline`` of the stalling cases: seconds, so each case ends in seconds."""
SLACK = 4.0
"""What a command may take past its deadline in-process: cancelling the request in flight, closing clients."""

EVERY_COMMAND_STALLS = ("endless_pages", "header_trickle")
"""The stalls every command meets in `make test` (each command's first paged read, each command's first request
after ``/ok``); the gate meets every stall, and `make test-matrix` runs the rest."""

STALL_WORDS = {
    "endless_pages": "its paging does not advance",
    "fresh_pages": "--deadline",
    "header_trickle": "--deadline",
    "body_trickle": "--deadline",
}
"""What the one error line says for each stall: the same page again is caught as soon as it comes; the others
(a new page every time, a trickle) only the deadline ends."""


def _stall_cases() -> list[Any]:
    cases = []
    for command in COMMANDS:
        for kind in STALLS:
            kept = command == "gate" or kind in EVERY_COMMAND_STALLS
            cases.append(pytest.param(command, kind, id=f"{command}-{kind}", marks=() if kept else pytest.mark.matrix))
    return cases


@pytest.mark.timeout(90)  # before the deadline, a stalling server kept every command waiting until killed
@pytest.mark.parametrize(("command", "kind"), _stall_cases())
def test_a_stalling_server_is_exit_3_in_one_line_within_the_deadline(
    command: str,
    kind: str,
    plan: Path,
    server: StandIn,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.answer(kind, "all")
    argv = [*_argv(command, server.url, plan), "--deadline", str(DEADLINE)]
    started = time.monotonic()
    code, err = _run_in_process(argv, server.url, monkeypatch, capsys)
    took = time.monotonic() - started
    _check(code, err, command, kind)
    assert code == cli.EXIT_UNREACHABLE, err
    assert took < DEADLINE + SLACK, f"{command} on {kind}: {took:.1f}s with --deadline {DEADLINE}\n{err}"
    assert STALL_WORDS[kind] in err and server.url in err, err


DEEP_STALLS = [
    *((scope, kind) for scope in ("threads", "thread") for kind in STALLS),
    ("ok", "header_trickle"),
    ("ok", "body_trickle"),
]
"""Where a stall comes alone: the thread count and search, one thread's reads, the reachability check (not paged)."""


@pytest.mark.timeout(90)
@pytest.mark.parametrize(("scope", "kind"), DEEP_STALLS, ids=[f"{scope}-{kind}" for scope, kind in DEEP_STALLS])
def test_the_gate_on_a_server_stalling_deeper_in_is_exit_3_within_the_deadline(
    scope: str,
    kind: str,
    plan: Path,
    server: StandIn,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The reachability check (``/ok``), the thread count and search, one thread's reads: each stalls alone."""
    server.answer(kind, scope)
    started = time.monotonic()
    code, err = _run_in_process([*_argv("gate", server.url, plan), "--deadline", str(DEADLINE)], server.url, monkeypatch, capsys)
    took = time.monotonic() - started
    assert server.hit(scope), f"the gate never asked {scope}"
    _check(code, err, "gate", kind)
    assert code == cli.EXIT_UNREACHABLE and took < DEADLINE + SLACK, f"{took:.1f}s\n{err}"


@pytest.mark.parametrize("kind", ["endless_pages", "header_trickle", "body_trickle"])
def test_the_gate_as_a_user_runs_it_stops_at_the_deadline(kind: str, server: StandIn) -> None:
    """Issue 37's cases, in a subprocess, as a user runs it: exit 3 in one line, not a command that runs until
    killed. The deadline counts from the command's start (the interpreter's and the candidate's loading too)."""
    server.answer(kind, "all")
    deadline = 8
    argv = ["gate", "--live", server.url, "--candidate", CONFIG, "--deadline", str(deadline)]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    took = time.monotonic() - started
    _check(done.returncode, done.stderr, "gate", kind)
    assert done.returncode == cli.EXIT_UNREACHABLE
    assert took < deadline + 20, f"{took:.1f}s: the deadline is {deadline} s (and the interpreter's start before it)"
    assert STALL_WORDS[kind] in done.stderr and server.url in done.stderr, done.stderr
