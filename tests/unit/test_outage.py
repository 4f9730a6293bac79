"""The checkpoint store unreachable (server/outage.py, server/postgres_checkpointer.py): the 503, the
probe before requests that would change something first, the bound on every checkpointer call, and
the timeouts' settings. tests/integration/test_postgres_outage_server.py runs it on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from server import outage, postgres_checkpointer
from server.outage import CheckpointStoreUnavailable, OutageMiddleware
from server.postgres_checkpointer import CheckpointerConfigError, Timeouts, timeouts

UNAVAILABLE = CheckpointStoreUnavailable("the checkpoint store (PostgreSQL) is unavailable: PoolTimeout")

# -- the middleware ---------------------------------------------------------------------------


async def call(
    app: Any, method: str, path: str, body: bytes = b"", root_path: str = ""
) -> tuple[int | None, dict[str, str], bytes]:
    """``app`` (wrapped in OutageMiddleware) on one request: status, headers, body."""
    sent: list[dict[str, Any]] = []
    scope = {"type": "http", "method": method, "path": path, "root_path": root_path, "query_string": b"", "headers": []}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    await OutageMiddleware(app)(scope, receive, send)
    start = next((m for m in sent if m["type"] == "http.response.start"), {})
    headers = {k.decode(): v.decode() for k, v in start.get("headers", [])}
    return start.get("status"), headers, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def raising(exc: BaseException, *, after_start: bool = False) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if after_start:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        raise exc

    return app


class Recording:
    """An app that answers 200 and records that it was called."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _wrapped_in_a_cause() -> BaseException:
    try:
        try:
            raise UNAVAILABLE
        except CheckpointStoreUnavailable as exc:
            raise RuntimeError("the run handler failed") from exc
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize(
    "exc",
    [
        pytest.param(UNAVAILABLE, id="raised"),
        pytest.param(_wrapped_in_a_cause(), id="as-a-cause"),
        pytest.param(ExceptionGroup("task group", [UNAVAILABLE]), id="in-a-group"),
    ],
)
async def test_an_unreachable_store_is_a_503_with_retry_after_and_the_message(exc: BaseException) -> None:
    status, headers, body = await call(raising(exc), "GET", "/threads/t/state")
    assert status == 503
    assert headers["retry-after"] == str(outage.RETRY_AFTER_S) and headers["content-type"] == "application/json"
    answer = json.loads(body)
    assert answer["error"] == "checkpoint_store_unavailable"
    assert "the checkpoint store (PostgreSQL) is unavailable" in answer["detail"] and "changed nothing" in answer["detail"]


async def test_other_errors_are_the_servers_own() -> None:
    with pytest.raises(ValueError, match="a bug"):
        await call(raising(ValueError("a bug")), "GET", "/threads/t/state")


async def test_an_answer_already_under_way_is_not_answered_twice() -> None:
    with pytest.raises(CheckpointStoreUnavailable):
        await call(raising(UNAVAILABLE, after_start=True), "POST", "/threads/t/runs/stream")


async def test_the_in_process_clients_requests_pass_the_outage_on_to_the_outer_request() -> None:
    """The guard reads a 5xx on its state read as a state the code cannot build: it must see the exception."""
    with pytest.raises(CheckpointStoreUnavailable):
        await call(raising(UNAVAILABLE), "GET", "/threads/t/state", root_path=outage.IN_PROCESS_ROOT)


@pytest.fixture
async def store_down() -> AsyncIterator[list[str]]:
    """A probe registered for the test's event loop that finds the store down; the list records each probe."""
    probed: list[str] = []

    async def probe() -> None:
        probed.append("probe")
        raise UNAVAILABLE

    unregister = outage.register_probe(probe)
    try:
        yield probed
    finally:
        unregister()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("POST", "/threads/t/runs", b"{}", id="runs.create"),
        pytest.param("POST", "/threads/t/runs/wait", b"{}", id="runs.wait"),
        pytest.param("POST", "/threads/t/runs/stream", b"{}", id="runs.stream"),
        pytest.param("POST", "/threads/t/state", b"{}", id="update_state"),
        pytest.param("POST", "/threads/t/copy", b"", id="copy"),
        pytest.param("DELETE", "/threads/t", b"", id="delete"),
        pytest.param("POST", "/threads/prune", b"{}", id="prune"),
        pytest.param("POST", "/visible/recycling_guide/stream", b"{}", id="visible"),
        pytest.param("POST", "/threads", b'{"supersteps": [{"updates": []}]}', id="create-with-supersteps"),
    ],
)
async def test_a_request_that_would_change_something_first_is_refused_before_the_server_sees_it(
    store_down: list[str], method: str, path: str, body: bytes
) -> None:
    app = Recording()
    status, _, _ = await call(app, method, path, body)
    assert (status, app.calls, store_down) == (503, 0, ["probe"])


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("GET", "/threads/t/state", b"", id="a-read-fails-by-itself"),
        pytest.param("POST", "/threads/t/history", b"{}", id="history"),
        pytest.param("GET", "/threads/t", b"", id="a-thread-record"),
        pytest.param("POST", "/threads/search", b"{}", id="search"),
        pytest.param("POST", "/threads", b"{}", id="a-thread-without-state"),
        pytest.param("PUT", "/store/items", b"{}", id="store"),
        pytest.param("DELETE", "/threads/t/runs/r", b"", id="a-run-deletion-keeps-checkpoints"),
        pytest.param("POST", "/runs/wait", b"{}", id="a-stateless-run-has-no-checkpointer"),
        pytest.param("POST", "/runs/batch", b"[]", id="stateless-batch"),
    ],
)
async def test_other_requests_are_not_probed(store_down: list[str], method: str, path: str, body: bytes) -> None:
    app = Recording()
    status, _, answered = await call(app, method, path, body)
    assert (status, app.calls, store_down, answered) == (200, 1, [], b"ok")


async def test_without_a_probe_nothing_is_probed() -> None:
    """The SQLite checkpointer registers none: the middleware only watches for the exception."""
    app = Recording()
    assert (await call(app, "POST", "/threads/t/runs/wait", b"{}"))[0] == 200 and app.calls == 1


# -- the bound on a call ----------------------------------------------------------------------


async def test_a_call_without_an_answer_fails_within_its_bound_and_is_cancelled() -> None:
    cancelled = asyncio.Event()

    async def hangs() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    started = asyncio.get_running_loop().time()
    with pytest.raises(CheckpointStoreUnavailable, match=r"no answer to aget_tuple within 0\.05 s"):
        await outage.within(hangs(), 0.05, "aget_tuple")
    assert asyncio.get_running_loop().time() - started < 1
    await asyncio.wait_for(cancelled.wait(), 1)


async def test_a_call_that_answers_in_time_gives_its_answer() -> None:
    async def answers() -> str:
        return "checkpoint"

    assert await outage.within(answers(), 1, "aget_tuple") == "checkpoint"


# -- the saver --------------------------------------------------------------------------------


class FakeSaver:
    """Stands in for AsyncPostgresSaver: each method does what ``self.outcome`` says."""

    def __init__(self, outcome: BaseException | str) -> None:
        self.outcome = outcome

    async def _act(self) -> str:
        if self.outcome == "hang":
            await asyncio.sleep(60)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return str(self.outcome)

    async def aget_tuple(self, config: Any) -> str:
        return await self._act()

    async def aput(self, *args: Any) -> str:
        return await self._act()

    async def setup(self) -> str:
        return await self._act()

    async def alist(self, config: Any) -> AsyncIterator[str]:
        yield "first"
        yield await self._act()


SHORT = Timeouts(connect=0, pool=0.05)


def saver(outcome: BaseException | str) -> Any:
    return postgres_checkpointer._outage_aware(FakeSaver, SHORT)(outcome)


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        pytest.param(psycopg.OperationalError("connection to server at 10.0.0.5 refused"), "OperationalError", id="refused"),
        pytest.param(psycopg.errors.AdminShutdown("terminating connection"), "AdminShutdown", id="shut-down"),
        pytest.param(PoolTimeout("couldn't get a connection after 5.00 sec"), "couldn't get a connection", id="pool"),
    ],
)
async def test_a_database_that_cannot_be_reached_is_the_outage_exception_without_its_address(
    exc: BaseException, reason: str
) -> None:
    for call_it in (lambda s: s.aget_tuple({}), lambda s: s.aput({}), lambda s: s.setup()):
        with pytest.raises(CheckpointStoreUnavailable) as raised:
            await call_it(saver(exc))
        assert f"the checkpoint store (PostgreSQL) is unavailable: {reason}" in str(raised.value)
        assert "10.0.0.5" not in str(raised.value) and raised.value.__cause__ is exc


async def test_other_database_errors_stay_what_they_are() -> None:
    with pytest.raises(psycopg.errors.UniqueViolation):
        await saver(psycopg.errors.UniqueViolation("duplicate key")).aput({})


async def test_a_database_that_does_not_answer_fails_each_call_within_the_bound() -> None:
    hung = saver("hang")
    with pytest.raises(CheckpointStoreUnavailable, match="no answer to aget_tuple"):
        await asyncio.wait_for(hung.aget_tuple({}), 1)
    listing = hung.alist({})
    assert await anext(listing) == "first"
    with pytest.raises(CheckpointStoreUnavailable, match="no answer to alist"):
        await asyncio.wait_for(anext(listing), 1)


async def test_a_listing_turns_the_outage_into_the_exception_too() -> None:
    listing = saver(psycopg.OperationalError("gone")).alist({})
    assert await anext(listing) == "first"
    with pytest.raises(CheckpointStoreUnavailable, match="OperationalError"):
        await anext(listing)


async def test_a_healthy_saver_answers_as_before() -> None:
    healthy = saver("checkpoint")
    assert await healthy.aget_tuple({}) == "checkpoint"
    assert [item async for item in healthy.alist({})] == ["first", "checkpoint"]


class HungConnection:
    """A connection to a server that hangs, whose socket has something to read (a notice)."""

    def __init__(self, pgconn: Any) -> None:
        self.closed = False
        self.pgconn = pgconn

    async def execute(self, query: str) -> None:
        await asyncio.sleep(60)

    async def close(self) -> None:
        self.closed = True


class Socket:
    def __init__(self, fd: int) -> None:
        self.socket = fd


async def test_an_idle_connection_with_input_that_does_not_answer_its_check_is_closed_and_fails_it() -> None:
    """psycopg_pool replaces a connection whose check raises: a hung server's included."""
    reader, writer = os.pipe()
    try:
        os.write(writer, b"N")  # something to read: the check asks the server
        connection = HungConnection(Socket(reader))
        with pytest.raises(psycopg.OperationalError, match="no answer to a connection check"):
            await asyncio.wait_for(postgres_checkpointer._checked_within(0.05)(connection), 1)
        assert connection.closed
    finally:
        os.close(reader)
        os.close(writer)


async def test_an_idle_connection_with_nothing_to_read_is_handed_out_without_a_round_trip() -> None:
    reader, writer = os.pipe()
    try:
        connection = HungConnection(Socket(reader))  # would hang, were it asked
        await asyncio.wait_for(postgres_checkpointer._checked_within(0.05)(connection), 1)
        assert not connection.closed
    finally:
        os.close(reader)
        os.close(writer)


# -- the settings -----------------------------------------------------------------------------

CONNECT, POOL = postgres_checkpointer.CONNECT_TIMEOUT_ENV, postgres_checkpointer.POOL_TIMEOUT_ENV
WITH_TIMEOUT = "postgresql://u@h/db?connect_timeout=7"


@pytest.mark.parametrize(
    ("uri", "environ", "expected"),
    [
        pytest.param("", {}, Timeouts(connect=3, pool=5.0), id="defaults"),
        pytest.param("", {CONNECT: "2", POOL: "1.5"}, Timeouts(connect=2, pool=1.5), id="set"),
        pytest.param(WITH_TIMEOUT, {}, Timeouts(connect=7, pool=5.0), id="uri"),
        pytest.param(WITH_TIMEOUT, {CONNECT: "7"}, Timeouts(connect=7, pool=5.0), id="agree"),
    ],
)
def test_the_timeouts_come_from_the_environment_or_the_uri(uri: str, environ: dict[str, str], expected: Timeouts) -> None:
    assert timeouts(uri, environ) == expected
    assert expected.call == expected.connect + expected.pool


@pytest.mark.parametrize(
    ("uri", "environ", "message"),
    [
        pytest.param("", {CONNECT: "1"}, "2 or more", id="connect-below-libpq-minimum"),
        pytest.param("", {CONNECT: "2.5"}, "whole number", id="connect-fraction"),
        pytest.param("postgresql://u@h/db?connect_timeout=0", {}, "the URI's connect_timeout", id="uri-no-timeout"),
        pytest.param("", {POOL: "0"}, "positive number", id="pool-zero"),
        pytest.param("", {POOL: "soon"}, "positive number", id="pool-word"),
        pytest.param("", {POOL: "inf"}, "positive number", id="pool-forever"),
        pytest.param(WITH_TIMEOUT, {CONNECT: "3"}, "disagree", id="conflict"),
    ],
)
def test_a_timeout_that_cannot_bound_anything_is_refused_at_start(uri: str, environ: dict[str, str], message: str) -> None:
    with pytest.raises(CheckpointerConfigError, match=message):
        timeouts(uri, environ)
