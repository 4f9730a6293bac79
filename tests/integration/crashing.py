"""Helpers for tests that SIGKILL a `langgraph dev` and start it again on the same folder
(tests/integration/test_crash_server.py, test_durability_server.py, test_lifecycle_defects_server.py,
test_stored_data_server.py)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer

T = TypeVar("T")


def run_with_client(server: DevServer, work: Callable[[LangGraphClient], Awaitable[T]]) -> T:
    """``work`` with a fresh langgraph-sdk client on ``server``, on an event loop of its own."""

    async def with_client() -> T:
        client = get_client(url=server.url)
        try:
            return await work(client)
        finally:
            await client.aclose()

    return asyncio.run(with_client())


def kill(server: DevServer) -> None:
    """SIGKILL the whole process group (the CLI and the server it runs): no flush, no shutdown hook."""
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=10)
    server.process = None


def crash_and_restart(server: DevServer) -> None:
    """`kill`, then start again in the same folder."""
    kill(server)
    server.start()
