"""`DevServer` on a port another process took between `free_port` and the bind.

Parallel test workers, a bench beside a test run and the shadow's three staging servers all pick
ports with `free_port`; another process can take one before `langgraph dev` binds it. A server
whose port was picked for it moves to another port; one given a port still fails, naming it.
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from migrations_playbook.staging import server as devserver
from migrations_playbook.staging.server import DevServer, ServerStartError
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.integration


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The one-node floor graph, the cheapest server to start."""
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps({"dependencies": [str(REPO_ROOT)], "graphs": {"floor": "bench.floor:graph"}}))
    return path


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering_port() -> Iterator[int]:
    """A port where something else already answers `/ok`."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def bound_port() -> Iterator[int]:
    """A port bound and listening, that never answers (the bind of `langgraph dev` fails on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _first_then_free(monkeypatch: pytest.MonkeyPatch, taken: int) -> list[int]:
    handed: list[int] = []
    real = devserver.free_port

    def free_port(host: str = "127.0.0.1") -> int:
        handed.append(taken if not handed else real(host))
        return handed[-1]

    monkeypatch.setattr(devserver, "free_port", free_port)
    return handed


@pytest.mark.parametrize("taken_by", ["answering_port", "bound_port"])
def test_a_picked_port_taken_before_the_bind_moves_the_server_to_another(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, config: Path, tmp_path: Path, taken_by: str
) -> None:
    taken = request.getfixturevalue(taken_by)
    handed = _first_then_free(monkeypatch, taken)

    with DevServer(config, tmp_path / "server") as server:
        assert server.port != taken
        assert server.is_up()

    assert handed[0] == taken


def test_a_given_port_that_answers_already_is_refused_naming_it(answering_port: int, config: Path, tmp_path: Path) -> None:
    with pytest.raises(ServerStartError, match=rf"something already answers on http://127.0.0.1:{answering_port}"):
        DevServer(config, tmp_path / "server", port=answering_port).start()


def test_a_given_port_bound_by_another_process_is_refused_not_silently_moved(
    bound_port: int, config: Path, tmp_path: Path
) -> None:
    """`langgraph dev` itself moves to another port when its port is taken (a log line, nothing else):
    a caller that asked for this port would talk to whatever holds it."""
    with pytest.raises(ServerStartError, match=rf"port {bound_port} is in use: langgraph dev would serve on \d+ instead"):
        DevServer(config, tmp_path / "server", port=bound_port).start()
