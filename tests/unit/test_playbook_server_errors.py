"""What `playbook` exits with when the live server refuses or stops answering.

Exit 1 means "blocked" and nothing else: a refused request is exit 2 with the
server's status and message, a server that stops answering is exit 3, never a
traceback. The live server is an `httpx.MockTransport` (no sockets).
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
import pytest_socket
from langgraph_sdk.client import LangGraphClient

from migrations_playbook import cli
from migrations_playbook.sources.api import reads as live

Handler = Callable[[httpx.Request], httpx.Response]
URL = "http://live.test"


@pytest.fixture(autouse=True)
def unix_sockets_only() -> None:
    """The commands run `asyncio.run`, whose event loop needs a unix socketpair (its
    self-pipe); the network stays blocked (pytest-socket restores itself at teardown)."""
    pytest_socket.enable_socket()  # the guard subclasses whatever socket class is installed: start from the real one
    pytest_socket.disable_socket(allow_unix_socket=True)


def _serve(monkeypatch: pytest.MonkeyPatch, refuse: Handler) -> None:
    """Answer /ok; every other request goes to ``refuse``."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/ok":
            return httpx.Response(200, json={"ok": True})
        return refuse(request)

    def connect(url: str, headers: dict | None = None, *, deadline: object = None) -> LangGraphClient:
        return LangGraphClient(httpx.AsyncClient(base_url=url, headers=headers, transport=httpx.MockTransport(handler)))

    monkeypatch.setattr(live, "connect", connect)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        pytest.param(
            httpx.Response(401, json={"detail": "Authorization header missing"}),
            "refused POST /assistants/search: 401: Authorization header missing (pass a token",
            id="401-json-detail",
        ),
        pytest.param(httpx.Response(403, json={"message": "not yours"}), "403: not yours (pass a token", id="403-json-message"),
        pytest.param(httpx.Response(422, text="bad limit"), "422: bad limit", id="422-text-body"),
        pytest.param(httpx.Response(500, text=""), "500 Internal Server Error (the server failed", id="500-empty-body"),
        pytest.param(httpx.Response(502, text="<html>bad gateway</html>"), "502: <html>bad gateway</html>", id="502-html-body"),
    ],
)
@pytest.mark.parametrize(
    "command", [["inflight"], ["snapshot"], ["gate", "--candidate", "{config}"]], ids=["inflight", "snapshot", "gate"]
)
def test_a_refused_whole_server_call_exits_2_with_status_and_message(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    response: httpx.Response,
    expected: str,
    command: list[str],
    repo_root,
) -> None:
    _serve(monkeypatch, lambda request: response)
    config = str(repo_root / "tests" / "fixtures" / "layout_projects" / "loose" / "langgraph.json")

    code = cli.main([*(c.format(config=config) for c in command), "--live", URL])

    out, err = capsys.readouterr()
    assert (code, out) == (cli.EXIT_USAGE, "")
    assert f"playbook: error: live server {URL} " in err and expected in err


def test_a_refusal_on_a_thread_read_names_the_request(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _serve(monkeypatch, lambda request: httpx.Response(401, json={"detail": "token expired"}))

    code = cli.main(["turns", "--live", URL, "t-1"])

    assert code == cli.EXIT_USAGE
    assert "refused POST /threads/t-1/history: 401: token expired" in capsys.readouterr().err


def test_a_server_that_stops_answering_midway_exits_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def drop(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset by peer", request=request)

    _serve(monkeypatch, drop)

    code = cli.main(["inflight", "--live", URL])

    assert code == cli.EXIT_UNREACHABLE
    assert f"live server {URL} stopped answering: ReadError: connection reset by peer" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("error", "exit_code", "expected"),
    [
        pytest.param(
            httpx.HTTPStatusError(
                "x",
                request=httpx.Request("POST", "http://staging.test:8123/threads/search"),
                response=httpx.Response(404, json={"detail": "no such route"}),
            ),
            cli.EXIT_USAGE,
            "server http://staging.test:8123 refused POST /threads/search: 404: no such route",
            id="status-error",
        ),
        pytest.param(
            httpx.ConnectError("refused", request=httpx.Request("GET", "http://staging.test:8123/ok")),
            cli.EXIT_UNREACHABLE,
            "server http://staging.test:8123 is unreachable: ConnectError: refused",
            id="transport-error",
        ),
    ],
)
def test_server_errors_outside_the_live_client_are_mapped_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: Exception, exit_code: int, expected: str
) -> None:
    """`replay` talks to two servers with its own clients: `main` maps what they raise."""

    def failing_replay(args: object) -> int:
        raise error

    monkeypatch.setattr(cli, "_replay", failing_replay)

    code = cli.main(["replay", "--live", URL, "--candidate", "c", "--staging-url", "http://staging.test:8123"])

    err = capsys.readouterr().err
    assert code == exit_code and expected in err and "Traceback" not in err
