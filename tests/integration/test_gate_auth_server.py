"""`playbook` against a server with the project's own custom auth (tests/fixtures/auth_project).

Exit 1 means "blocked" and nothing else: a request the server refuses (no token, a
token it rejects, its auth handler failing with a 500) is exit 2 with the server's
status and message, never a traceback; the accepted token gives a normal pass.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from migrations_playbook import cli
from migrations_playbook.staging.server import DevServer
from tests.playbook_cli import playbook

AUTH_PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "auth_project"
GOOD = "Authorization: Bearer playbook-reader"


@dataclass(frozen=True)
class AuthServer:
    url: str
    config: Path
    thread_id: str
    """A thread paused at `approve` (created with the accepted token)."""


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthServer]:
    project = tmp_path_factory.mktemp("auth") / "project"
    shutil.copytree(AUTH_PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))

    async def populate(url: str) -> str:
        client = get_client(url=url, headers={"Authorization": GOOD.partition(": ")[2]})
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], "intake", input={"request": "new laptop"})
        await client.aclose()
        return thread["thread_id"]

    with DevServer(project / "langgraph.json", project) as server:
        yield AuthServer(url=server.url, config=project / "langgraph.json", thread_id=asyncio.run(populate(server.url)))


_playbook = partial(playbook, timeout=120)


def _command(name: str, server: AuthServer) -> list[str]:
    return {
        "gate": ["gate", "--live", server.url, "--candidate", str(server.config), "--format", "json"],
        "inflight": ["inflight", "--live", server.url],
        "snapshot": ["snapshot", "--live", server.url],
        "turns": ["turns", "--live", server.url, server.thread_id],
        "rerun": ["rerun", "--live", server.url, server.thread_id, "--turn", "1", "--input", "hi"],
    }[name]


NO_TOKEN = ([], "401: Authorization header missing")
UNKNOWN_TOKEN = (["--header", "Authorization: Bearer not-a-token"], "500: Internal Server Error (the server failed")
OTHER_SCHEME = (["--header", "Authorization: Basic cGxheWJvb2s="], "401: unsupported scheme 'Basic'")


@pytest.mark.parametrize("command", ["gate", "inflight", "snapshot"])
@pytest.mark.parametrize(("header", "message"), [NO_TOKEN, UNKNOWN_TOKEN], ids=["no-token", "unknown-token-500"])
def test_a_refused_request_exits_2_with_the_servers_message(auth_server: AuthServer, command: str, header, message) -> None:
    result = _playbook(*_command(command, auth_server), *header)

    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("argv", "header", "message"),
    [
        pytest.param(["gate"], *OTHER_SCHEME, id="gate-other-scheme"),
        pytest.param(["inflight"], *OTHER_SCHEME, id="inflight-other-scheme"),
        pytest.param(["snapshot"], *OTHER_SCHEME, id="snapshot-other-scheme"),
        pytest.param(["turns"], *NO_TOKEN, id="turns-no-token"),
        pytest.param(["turns"], *UNKNOWN_TOKEN, id="turns-unknown-token-500"),
        pytest.param(["rerun"], *NO_TOKEN, id="rerun-no-token"),
        pytest.param(["replay"], *NO_TOKEN, id="replay-no-token"),
    ],
)
def test_every_command_that_talks_to_the_server_reports_a_refusal_as_exit_2(
    auth_server: AuthServer, argv: list[str], header: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process (`cli.main`, the same code `python -m migrations_playbook` runs), to keep the lane short."""
    if argv == ["replay"]:
        argv = ["replay", "--live", auth_server.url, "--staging-url", auth_server.url, "--candidate", str(auth_server.config)]
    else:
        argv = _command(argv[0], auth_server)

    code = cli.main([*argv, *header])

    out, err = capsys.readouterr()
    assert (code, out) == (cli.EXIT_USAGE, ""), err
    assert message in err


def test_with_the_accepted_token_the_identity_candidate_passes_with_no_block(auth_server: AuthServer) -> None:
    result = _playbook(*_command("gate", auth_server), "--header", GOOD)

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "pass"
    assert [f for f in report["findings"] if f["severity"] == "block"] == []
    assert report["graphs"]["intake"]["threads_scanned"] == 1


@pytest.mark.parametrize("command", ["inflight", "snapshot"])
def test_with_the_accepted_token_read_commands_succeed(auth_server: AuthServer, command: str) -> None:
    result = _playbook(*_command(command, auth_server), "--header", GOOD)

    assert result.returncode == 0, result.stderr
    assert "intake" in result.stdout
