"""A `langgraph dev` of this repo in token mode, for the tests that need several users.

Started with ``AUTH_TOKENS`` (alice, bob, an operator ``ops``) in a working folder of its
own; `token_clients` makes an SDK client per user (or with raw headers). Imported by the
test modules that use it (each module gets its server: module scope).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT

TOKENS = {"alice": "tok-alice", "bob": "tok-bob", "ops": "tok-ops"}
"""user -> bearer token; ``ops`` is an operator (reads every thread)."""


@contextmanager
def token_server(workdir: Path) -> Iterator[DevServer]:
    env = {
        "MODEL": "offline",
        "AUTH_TOKENS": ",".join(f"{user}:{token}" for user, token in TOKENS.items()),
        "AUTH_OPERATORS": "ops",
    }
    with DevServer(REPO_ROOT / "langgraph.json", workdir, env=env) as server:
        yield server


async def token_clients(server: DevServer) -> AsyncIterator[Callable[..., LangGraphClient]]:
    """An async generator for a fixture: ``make(user)`` or ``make(None, **headers)`` -> a client, all
    closed afterwards. A name that is not a user is sent as the token itself."""
    made: list[LangGraphClient] = []

    def make(user: str | None = None, **headers: str) -> LangGraphClient:
        if user is not None:
            headers["Authorization"] = f"Bearer {TOKENS.get(user, user)}"
        client = get_client(url=server.url, headers=headers, api_key=None)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()
