"""Every graph runs async end to end on a real PostgreSQL checkpointer (issue 29).

Each graph is compiled onto an `AsyncPostgresSaver` whose synchronous methods raise,
and driven with ``astream`` (messages and updates, as the server streams) on an event
loop in asyncio debug mode with a slow-callback threshold. A run fails the test when:

* anything calls the saver's sync methods: a node that invokes a compiled subgraph
  synchronously (campus_supervisor's agents before issue 29) makes the subgraph read its
  checkpoints that way, and an async saver can only serve them by parking the worker
  thread on the event loop (or not at all, in the server's wrapper);
* a model call starts on a thread other than the loop's: LangGraph ran a sync node in a
  worker thread (the graph is not async end to end there);
* one step of the loop takes longer than `SLOW_CALLBACK_S`: a node blocked the loop. The
  offline model is paced (`PACING_MS` per streamed token, time.sleep on its sync path), so
  a sync model call made on the loop's thread blocks it for a whole answer.

The four graphs run at once on one loop, as a server runs them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.types import Command

from graphs.campus_supervisor.graph import builder as campus_builder
from graphs.common import models
from graphs.fan_room.graph import builder as fan_builder
from graphs.recycling_guide.graph import builder as recycling_builder
from graphs.ticket_triage.graph import builder as ticket_builder
from tests.postgres_server import PostgresServer

PACING_MS = 40
"""The offline model's pacing here: a sync model call on the loop's thread blocks it for
(tokens x 40 ms), more than `SLOW_CALLBACK_S` for any answer of 13 tokens or more."""

SLOW_CALLBACK_S = 0.5
"""asyncio's debug-mode threshold. High enough for a busy 2-core machine (checkpoint
serialization and the offline model's decisions run on the loop, a few ms each)."""


class SyncCallRefused(AssertionError):
    """A graph called a sync method of the async saver."""


class AsyncOnlyPostgresSaver(AsyncPostgresSaver):
    """`AsyncPostgresSaver` whose sync methods raise (and record who asked)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sync_calls: list[str] = []

    def _refuse(self, name: str) -> None:
        self.sync_calls.append(f"{name} on {threading.current_thread().name}")
        raise SyncCallRefused(f"sync {name}() called on the async saver (thread {threading.current_thread().name})")

    def get_tuple(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse("get_tuple")

    def list(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse("list")

    def put(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse("put")

    def put_writes(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse("put_writes")

    def delete_thread(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse("delete_thread")


class ModelThreads(BaseCallbackHandler):
    """Records the thread each chat model call starts on. ``run_inline``: under ``ainvoke``
    the callback runs where the model runs, never in an executor of its own."""

    run_inline = True

    def __init__(self) -> None:
        self.threads: list[tuple[int, str]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.threads.append((threading.get_ident(), threading.current_thread().name))


class SlowCallbacks(logging.Handler):
    """Collects asyncio's debug-mode "Executing ... took N seconds" warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Executing") and " took " in message:
            self.seen.append(message[:300])


@pytest.fixture
def paced_offline_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The offline model paced by `PACING_MS` (models are cached per spec: cleared around the test)."""
    monkeypatch.setenv("MODEL", "offline")
    monkeypatch.setenv(models.OFFLINE_DELAY_ENV, str(PACING_MS))
    models._load.cache_clear()
    models._structured.cache_clear()
    yield
    models._load.cache_clear()
    models._structured.cache_clear()


Turns = list[tuple[Any, dict[str, Any] | None]]
"""A conversation: (input or Command, context) per run."""


async def _drive(graph: Any, thread_id: str, turns: Turns, handler: ModelThreads) -> dict[str, Any]:
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}, "callbacks": [handler]}
    for value, context in turns:
        async for _ in graph.astream(value, config, context=context, stream_mode=["messages", "updates"], subgraphs=True):
            pass
    state = await graph.aget_state(config)
    return dict(state.values)


def _human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


CASES: dict[str, tuple[Any, Turns, str]] = {
    "campus_supervisor": (
        campus_builder,
        [(_human("도서관 몇 시까지 열어요?"), None), (_human("3층 좌석 남았어?"), None), (_human("오늘 학식 메뉴 뭐야?"), None)],
        "messages",
    ),
    "ticket_triage": (
        ticket_builder,
        [
            (_human("요금이 두 번 청구됐어요. 환불해 주세요"), None),
            (Command(resume={"kind": "plan_approval", "answer": "approve"}), None),
        ],
        "response",
    ),
    "fan_room": (
        fan_builder,
        [(_human("오늘 경기 어땠어?"), {"team_name": "LG"}), (_human("내일은?"), {"team_name": "KIA"})],
        "answer",
    ),
    "recycling_guide": (recycling_builder, [(_human("페트병은 어떻게 버려요?"), None), (_human("라벨은?"), None)], "answer"),
}


def _warm_up() -> None:
    """Each conversation's first turn once, synchronously on InMemorySaver, before the measured
    loop: first-use work (imports, pydantic schemas, compiled prompts) is not a node blocking it."""
    for builder, turns, _ in CASES.values():
        value, context = turns[0]
        builder.compile(checkpointer=InMemorySaver()).invoke(
            value, {"configurable": {"thread_id": str(uuid.uuid4())}}, context=context
        )


async def _run_all(url: str) -> tuple[dict[str, Any], list[str], ModelThreads, int]:
    loop = asyncio.get_running_loop()
    loop.slow_callback_duration = SLOW_CALLBACK_S
    handler = ModelThreads()
    async with AsyncOnlyPostgresSaver.from_conn_string(url) as saver:
        assert isinstance(saver, AsyncOnlyPostgresSaver)
        await saver.setup()
        graphs = {graph_id: builder.compile(checkpointer=saver) for graph_id, (builder, _, _) in CASES.items()}
        outcomes = await asyncio.gather(
            *(_drive(graphs[g], str(uuid.uuid4()), turns, handler) for g, (_, turns, _) in CASES.items()),
            return_exceptions=True,
        )
        return dict(zip(CASES, outcomes, strict=True)), saver.sync_calls, handler, threading.get_ident()


def test_every_graph_runs_async_end_to_end_on_postgres_without_blocking_the_loop(
    postgres: PostgresServer, paced_offline_model: None
) -> None:
    _warm_up()
    slow = SlowCallbacks()
    asyncio_logger = logging.getLogger("asyncio")
    asyncio_logger.addHandler(slow)
    started = time.perf_counter()
    try:
        results, sync_calls, handler, loop_thread = asyncio.run(_run_all(postgres.url), debug=True)
    finally:
        asyncio_logger.removeHandler(slow)
    elapsed = time.perf_counter() - started

    problems = [f"{g} failed: {type(r).__name__}: {str(r)[:300]}" for g, r in results.items() if isinstance(r, BaseException)]
    problems += [f"sync saver method called: {call}" for call in sync_calls]
    off_loop = [name for ident, name in handler.threads if ident != loop_thread]
    if off_loop:
        problems.append(f"{len(off_loop)} of {len(handler.threads)} model calls ran off the loop, on {sorted(set(off_loop))}")
    problems += [f"the event loop was blocked (> {SLOW_CALLBACK_S} s): {message}" for message in slow.seen]
    for graph_id, (_, _, key) in CASES.items():
        if not isinstance(results[graph_id], BaseException) and not results[graph_id].get(key):
            problems.append(f"{graph_id}: no {key!r} in the final state {sorted(results[graph_id])}")
    assert handler.threads, "no model call was seen"
    assert problems == [], "\n".join(problems)
    assert elapsed < 120, elapsed
