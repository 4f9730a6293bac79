"""Fixtures that run a real Agent Server (`langgraph dev`).

Each server runs in a temporary working folder of its own (its
`.langgraph_api/` lives there; the repo is neither watched nor written), on a
free loopback port, with reload off, and is stopped gracefully (SIGINT).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.postgres_server import PostgresServer, PostgresUnavailable


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """This repo's `langgraph.json`, served by one `langgraph dev` for the session."""
    workdir = tmp_path_factory.mktemp("agent-server")
    with DevServer(REPO_ROOT / "langgraph.json", workdir, env={"MODEL": "offline"}) as server:
        yield server


@pytest.fixture
async def client(dev_server: DevServer) -> AsyncIterator[LangGraphClient]:
    """A `langgraph_sdk` client for the session's server."""
    client = get_client(url=dev_server.url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[type[DevServer]]:
    """Start extra servers (other configs, restarts); all are stopped at teardown."""
    started: list[DevServer] = []

    class _Tracked(DevServer):
        def start(self) -> DevServer:
            started.append(self)
            return super().start()

    yield _Tracked
    for server in reversed(started):
        server.stop()


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the module's own, in a temporary folder (tests/postgres_server.py); stopped
    at the end. Skipped where none can be started, except in CI, which must run these tests."""
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the PostgreSQL tests: {exc}")
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()
