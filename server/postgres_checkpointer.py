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

**PostgreSQL down or hung** (issue 37): the saver raises `server.outage.CheckpointStoreUnavailable`,
and only it, when the database cannot be reached or does not answer in time (a psycopg
``OperationalError``: connection refused or dropped, the server shutting down, no connection
from the pool in time), and the custom app answers that with a 503 (`server.outage`). How
long that takes is bounded by two settings (seconds):

* `CONNECT_TIMEOUT_ENV` (default `DEFAULT_CONNECT_TIMEOUT_S`): a new connection, and the
  check of an idle one before the pool hands it out (one empty query), may take this long;
  libpq's ``connect_timeout`` (whole seconds, 2 at least). A ``connect_timeout`` in the URI
  is used when the variable is unset; the two set to different values is an error.
* `POOL_TIMEOUT_ENV` (default `DEFAULT_POOL_TIMEOUT_S`): how long a checkpointer call waits for
  a connection from the pool.

A checkpointer call that has not answered after both together (8 s by default) fails: a
PostgreSQL that hangs (stopped, not shut down) is an outage too, not a request that waits
forever. Connection attempts that keep failing are given up after the pool timeout, so the
next request starts a fresh one: the server serves again within seconds of PostgreSQL's
return, without a restart, and the connections the old server closed are found when they
are taken from the pool and replaced, not handed to a request. The requests that would
change something before they reach the checkpointer are checked with one round trip first
(`server.outage.PREFLIGHT`, through the probe registered here).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import selectors
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

from langgraph.checkpoint.base import BaseCheckpointSaver

from server import outage

URI_ENV: Final = "CHECKPOINTER_POSTGRES_URI"
"""The PostgreSQL connection URI (``postgresql://…``); required."""

POOL_SIZE_ENV: Final = "CHECKPOINTER_POSTGRES_POOL_SIZE"
"""Most connections one pool opens (default `DEFAULT_POOL_SIZE`)."""

DEFAULT_POOL_SIZE: Final = 10

CONNECT_TIMEOUT_ENV: Final = "CHECKPOINTER_POSTGRES_CONNECT_TIMEOUT"
"""Seconds a new connection, or the check of an idle one, may take (default `DEFAULT_CONNECT_TIMEOUT_S`)."""

DEFAULT_CONNECT_TIMEOUT_S: Final = 3

POOL_TIMEOUT_ENV: Final = "CHECKPOINTER_POSTGRES_POOL_TIMEOUT"
"""Seconds a checkpointer call waits for a connection from the pool (default `DEFAULT_POOL_TIMEOUT_S`)."""

DEFAULT_POOL_TIMEOUT_S: Final = 5.0

BOUNDED: Final = ("aget_tuple", "aput", "aput_writes", "adelete_thread", "aprune", "aget_delta_channel_history")
"""The saver's coroutine methods that read or write PostgreSQL: each fails with
`server.outage.CheckpointStoreUnavailable` when the database cannot be reached, or has not
answered within `Timeouts.call` (``alist`` too, step by step; ``setup`` without a bound)."""

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


@dataclasses.dataclass(frozen=True)
class Timeouts:
    """How long the checkpointer waits for PostgreSQL (module docstring), in seconds."""

    connect: int = DEFAULT_CONNECT_TIMEOUT_S
    """A new connection, or the check of an idle one (`CONNECT_TIMEOUT_ENV`)."""
    pool: float = DEFAULT_POOL_TIMEOUT_S
    """A connection from the pool (`POOL_TIMEOUT_ENV`)."""

    @property
    def call(self) -> float:
        """The longest a checkpointer call may take before it fails: a connection from the pool,
        then one attempt or check's worth of waiting for an answer."""
        return self.pool + self.connect


def timeouts(uri: str = "", environ: dict[str, str] | None = None) -> Timeouts:
    """`CONNECT_TIMEOUT_ENV` and `POOL_TIMEOUT_ENV` (or the URI's ``connect_timeout``), checked."""
    env = os.environ if environ is None else environ
    connect = _connect_timeout(env.get(CONNECT_TIMEOUT_ENV, "").strip(), _uri_connect_timeout(uri))
    raw = env.get(POOL_TIMEOUT_ENV, "").strip()
    pool = DEFAULT_POOL_TIMEOUT_S
    if raw:
        try:
            pool = float(raw)
        except ValueError:
            pool = -1.0
        if not 0 < pool < float("inf"):
            raise CheckpointerConfigError(f"{POOL_TIMEOUT_ENV}={raw!r} must be a positive number of seconds")
    return Timeouts(connect=connect, pool=pool)


def _uri_connect_timeout(uri: str) -> str | None:
    if not uri:
        return None
    from psycopg.conninfo import conninfo_to_dict

    try:
        value = conninfo_to_dict(uri).get("connect_timeout")
    except Exception:  # noqa: BLE001 - a URI psycopg cannot parse: the pool says why when it connects
        return None
    return None if value is None else str(value).strip()


def _connect_timeout(raw: str, in_uri: str | None) -> int:
    if raw and in_uri is not None and raw != in_uri:
        raise CheckpointerConfigError(
            f"{CONNECT_TIMEOUT_ENV}={raw!r} and the URI's connect_timeout={in_uri!r} disagree: set one of them"
        )
    value = raw or in_uri
    if value is None:
        return DEFAULT_CONNECT_TIMEOUT_S
    if not value.isdigit() or int(value) < 2:
        where = CONNECT_TIMEOUT_ENV if raw else "the URI's connect_timeout"
        raise CheckpointerConfigError(
            f"{where}={value!r} must be a whole number of seconds, 2 or more (libpq waits 2 s at least)"
        )
    return int(value)


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
    limits = timeouts(uri)
    # The saver's own connection settings (AsyncPostgresSaver.from_conn_string): autocommit,
    # no server-side prepared statements (safe behind pgbouncer), rows as dicts; and how long
    # a connection attempt may take (libpq's connect_timeout).
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row, "connect_timeout": limits.connect}
    async with AsyncConnectionPool(
        uri,
        min_size=1,
        max_size=pool_size(),
        kwargs=kwargs,
        timeout=limits.pool,
        # Failing attempts are given up after this long (psycopg_pool's default, 5 minutes of
        # ever longer pauses, kept the server refusing long after PostgreSQL was back): the
        # next request starts a fresh attempt.
        reconnect_timeout=limits.pool,
        check=_checked_within(limits.connect),
        open=False,
    ) as pool:
        # The pool hands out dict-row connections (kwargs above).
        saver = _outage_aware(_keeping_run_checkpoints(AsyncPostgresSaver), limits)(conn=pool, serde=Serializer())
        await saver.setup()
        unregister = outage.register_probe(_probe(pool, limits))
        try:
            yield saver
        finally:
            unregister()


def _unavailable(exc: BaseException) -> outage.CheckpointStoreUnavailable:
    """``exc`` (a psycopg OperationalError) as the outage it is; the cause stays chained, for the log."""
    from psycopg_pool import PoolTimeout

    reason = str(exc) if isinstance(exc, PoolTimeout) else type(exc).__name__  # no host or port in a client's answer
    return outage.CheckpointStoreUnavailable(f"the checkpoint store (PostgreSQL) is unavailable: {reason}")


async def _translated(call: Awaitable[Any]) -> Any:
    """``call``'s result; a psycopg OperationalError as `server.outage.CheckpointStoreUnavailable`."""
    from psycopg import OperationalError

    try:
        return await call
    except OperationalError as exc:
        raise _unavailable(exc) from exc


def _checked_within(seconds: float) -> Callable[[Any], Awaitable[None]]:
    """The pool's check of an idle connection before it hands it out. An idle connection has
    nothing to read unless the server closed it (a restart or a shutdown sends a message,
    then closes) or sent a notice: only then is it checked with an empty query (what
    psycopg_pool's ``check_connection`` sends), which must answer within ``seconds``. A
    connection the server closed fails at once, one to a server that hangs after ``seconds``,
    and the pool replaces it; the usual case costs no round trip."""
    from psycopg import OperationalError

    async def check(conn: Any) -> None:
        if not _has_input(conn):
            return
        try:
            await outage.within(conn.execute(""), seconds, "a connection check")
        except outage.CheckpointStoreUnavailable as exc:
            await conn.close()
            raise OperationalError(str(exc)) from exc

    return check


def _has_input(conn: Any) -> bool:
    """Whether an idle connection's socket has something to read (or has none left)."""
    try:
        socket = conn.pgconn.socket
    except Exception:  # noqa: BLE001 - psycopg raises when the connection is closed: the query says why
        return True
    with selectors.DefaultSelector() as selector:
        selector.register(socket, selectors.EVENT_READ)
        return bool(selector.select(0))


def _probe(pool: Any, limits: Timeouts) -> Callable[[], Awaitable[None]]:
    """`server.outage`'s probe: an empty query on a connection from ``pool``, answered within
    `Timeouts.call` (a server that hangs accepts connections and answers nothing)."""

    async def round_trip() -> None:
        async with pool.connection() as conn:
            await conn.execute("")

    async def probe() -> None:
        await _translated(outage.within(round_trip(), limits.call, "a connection check"))

    return probe


def _outage_aware(base: type, limits: Timeouts) -> type:
    """``base`` whose `BOUNDED` methods and ``alist`` fail with
    `server.outage.CheckpointStoreUnavailable` when PostgreSQL cannot be reached or has not
    answered within `Timeouts.call` (``setup`` too, without the bound: a migration may take long)."""

    class OutageAwareSaver(base):  # type: ignore[misc]  # the base class is passed in (lazy import)
        async def setup(self) -> None:
            await _translated(super().setup())

        async def alist(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            items = super().alist(*args, **kwargs)
            abandoned = False  # a step that timed out is cancelled, and closes the listing itself
            try:
                while True:
                    try:
                        item = await _translated(outage.within(anext(items), limits.call, "alist"))
                    except StopAsyncIteration:
                        return
                    except outage.CheckpointStoreUnavailable:
                        abandoned = True
                        raise
                    yield item
            finally:
                if not abandoned:
                    await items.aclose()

    for name in BOUNDED:
        if getattr(base, name, None) not in (None, getattr(BaseCheckpointSaver, name, None)):
            setattr(OutageAwareSaver, name, _bounded(base, name, limits.call))
    OutageAwareSaver.__name__ = OutageAwareSaver.__qualname__ = f"OutageAware{base.__name__}"
    return OutageAwareSaver


def _bounded(base: type, name: str, seconds: float) -> Callable[..., Awaitable[Any]]:
    method = getattr(base, name)

    async def bounded(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await _translated(outage.within(method(self, *args, **kwargs), seconds, name))

    bounded.__name__ = bounded.__qualname__ = name
    return bounded


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
