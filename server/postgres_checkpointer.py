"""Checkpoints in PostgreSQL for `langgraph dev` (or any server that takes a custom checkpointer path).

    "checkpointer": {"backend": "custom", "path": "server.postgres_checkpointer.postgres_checkpointer"}

with ``CHECKPOINTER_POSTGRES_URI=postgresql://user:pw@host:5432/db`` in the server's
environment. The server enters `postgres_checkpointer` once per event loop that asks for
a checkpointer; each entry opens its own connection pool (psycopg pools belong to one
loop) around langgraph-checkpoint-postgres's `AsyncPostgresSaver`, with the Agent
Server's serializer, and creates the tables on first use.

Why: the deployment's graphs are async end to end (issue 29), and this is how that is
proven under load on a real PostgreSQL here (tests/integration/test_load_postgres_server.py,
``python -m bench --only postgres``). The server's wrapper around a custom checkpointer
forwards only the async methods, and unlike `server.persistence` this module
does not add the sync ones: a node that read checkpoints synchronously would fail the run
instead of parking a worker thread on the event loop. It forwards the saver's
``aget_delta_channel_history`` (one query for a `DeltaChannel`'s history instead of a
checkpoint read per step back), as `server.persistence` does for SQLite.

The licensed Agent Server image keeps its checkpoints in its own PostgreSQL (deploy/,
``LANGGRAPH_CHECKPOINTER`` without a path); this module is for the servers that take a
checkpointer path, `langgraph dev` among them. Thread and run records stay where the
server keeps them (`langgraph dev`: in memory, pickled to ``.langgraph_api/``).
Nothing happens at import: the pool opens when the server enters the factory.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any, Final

from langgraph.checkpoint.base import BaseCheckpointSaver

URI_ENV: Final = "CHECKPOINTER_POSTGRES_URI"
"""The PostgreSQL connection URI (``postgresql://…``); required."""

POOL_SIZE_ENV: Final = "CHECKPOINTER_POSTGRES_POOL_SIZE"
"""Most connections one pool opens (default `DEFAULT_POOL_SIZE`)."""

DEFAULT_POOL_SIZE: Final = 10

FAST_PATHS: Final = ("aget_delta_channel_history",)
"""Async methods the saver overrides with a fast path that the server's wrapper does not forward."""


class CheckpointerConfigError(RuntimeError):
    """The PostgreSQL checkpointer is named in langgraph.json but not configured."""


def pool_size(environ: dict[str, str] | None = None) -> int:
    """`POOL_SIZE_ENV` as a positive integer (default `DEFAULT_POOL_SIZE`)."""
    raw = (os.environ if environ is None else environ).get(POOL_SIZE_ENV, "").strip()
    if not raw:
        return DEFAULT_POOL_SIZE
    if not raw.isdigit() or int(raw) < 1:
        raise CheckpointerConfigError(f"{POOL_SIZE_ENV}={raw!r} must be a positive number of connections")
    return int(raw)


@contextlib.asynccontextmanager
async def postgres_checkpointer() -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The checkpointer the server enters (langgraph.json ``checkpointer.path``): see the module docstring."""
    uri = os.environ.get(URI_ENV, "").strip()
    if not uri:
        raise CheckpointerConfigError(
            f"server.postgres_checkpointer needs {URI_ENV}=postgresql://user:password@host:5432/db in the server's environment"
        )
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph_api.serde import Serializer  # type: ignore[import-untyped]  # the server's own serde; no type info
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    _forward_fast_paths()
    # The saver's own connection settings (AsyncPostgresSaver.from_conn_string): autocommit,
    # no server-side prepared statements (safe behind pgbouncer), rows as dicts.
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(uri, min_size=1, max_size=pool_size(), kwargs=kwargs, open=False) as pool:
        # The pool hands out dict-row connections (kwargs above).
        saver = _keeping_run_checkpoints(AsyncPostgresSaver)(conn=pool, serde=Serializer())
        await saver.setup()
        yield saver


def _keeping_run_checkpoints(base: type) -> type:
    """``base`` with an `adelete_for_runs` that keeps the run's checkpoints.

    ``DELETE /threads/{id}/runs/{run_id}`` calls the saver's `adelete_for_runs`; the server's
    wrapper forwards it only when the saver's class defines it, and AsyncPostgresSaver does not,
    so every run deletion was a 500 here. The auth handler has already refused another user's
    run and a run in flight (server/auth.py). The SQLite checkpointer deletes a run's
    checkpoints only when nothing stands on them (server.persistence); this one keeps
    them always, which is that policy's safe side: the run record goes, the thread's state
    (a `DeltaChannel` rebuilt from its writes, a resume's answer stored on the run's
    checkpoint) stays whole.
    """

    class KeepingSaver(base):  # type: ignore[misc]  # the base class is passed in (lazy import)
        async def adelete_for_runs(self, run_ids: Any) -> None:
            del run_ids  # the run records are the server's; the checkpoints stay (docstring above)

    KeepingSaver.__name__ = KeepingSaver.__qualname__ = f"Keeping{base.__name__}"
    return KeepingSaver


def _forward_fast_paths(adapter: type | None = None) -> None:
    """Pass `FAST_PATHS` through the server's wrapper (langgraph-api 0.16.7's
    ``_CustomCheckpointerAdapter``), which otherwise runs BaseCheckpointSaver's generic ones.
    ``adapter``: the wrapper class (default: the server's)."""
    if adapter is None:
        from langgraph_api._checkpointer._adapter import (  # type: ignore[import-untyped]  # no type info
            _CustomCheckpointerAdapter,
        )

        adapter = _CustomCheckpointerAdapter
    for name in FAST_PATHS:
        if name in vars(adapter):
            continue

        async def forward(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
            return await getattr(self._inner, _name)(*args, **kwargs)

        forward.__name__ = name
        setattr(adapter, name, forward)
