"""What survives a restart of `langgraph dev` (langgraph-runtime-inmem 0.36.7), on a real server.

* A graceful stop (SIGINT, what Ctrl+C and `DevServer.stop()` send) writes
  threads, runs and checkpoints to `.langgraph_api/`: a restart in the same
  folder has every thread, its history and its pending interrupt, and resumes.
* A crash does not: the runtime flushes every 10 s, but after the first state
  read through the API (get_state, get_history) it stops writing checkpoints
  (threads and runs still get written). A SIGKILL then loses every checkpoint
  written since. The second test pins that finding, so the README's statement
  is checked against the installed runtime; it fails the day the runtime changes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.devserver import DevServer
from tests.conftest import REPO_ROOT
from tests.integration.refusal import thread_snapshot

T = TypeVar("T")

FLUSH_SECONDS = 10
"""langgraph-runtime-inmem's periodic flush interval."""


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def _server(workdir: Path) -> DevServer:
    return DevServer(REPO_ROOT / "langgraph.json", workdir, env={"MODEL": "offline"})


async def _with_client(server: DevServer, work: Callable[[LangGraphClient], Awaitable[T]]) -> T:
    client = get_client(url=server.url)
    try:
        return await work(client)
    finally:
        await client.aclose()


def _crash(server: DevServer) -> None:
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=10)
    server.process = None


def test_a_graceful_restart_keeps_threads_history_and_pending_interrupts(tmp_path: Path) -> None:
    with _server(tmp_path) as server:

        async def before(client: LangGraphClient) -> dict:
            chat = (await client.threads.create())["thread_id"]
            for text in ("페트병 어떻게 버려?", "라벨은?"):
                await client.runs.wait(chat, "recycling_guide", input=_user(text))
            ticket = (await client.threads.create())["thread_id"]
            await client.runs.wait(ticket, "ticket_triage", input=_user("Please refund the double charge"))
            # state reads on purpose: after one, only a graceful stop writes checkpoints
            return {"chat": chat, "ticket": ticket, **{
                name: await thread_snapshot(client, tid) for name, tid in (("chat_snap", chat), ("ticket_snap", ticket))
            }}

        saved = asyncio.run(_with_client(server, before))
        assert server.stop() is not None
        server.start()

        async def after(client: LangGraphClient) -> None:
            assert await thread_snapshot(client, saved["chat"]) == saved["chat_snap"]
            ticket_state = await thread_snapshot(client, saved["ticket"])
            assert ticket_state == saved["ticket_snap"]
            assert ticket_state["thread"]["status"] == "interrupted"
            assert ticket_state["state"]["tasks"][0]["interrupts"][0]["value"]["kind"] == "plan_approval"

            resumed = await client.runs.wait(
                saved["ticket"], "ticket_triage", command={"resume": {"kind": "plan_approval", "answer": "approve"}}
            )
            assert resumed["approval"]["answer"] == "approve" and resumed["response"]
            third = await client.runs.wait(saved["chat"], "recycling_guide", input=_user("지금까지 뭐 물어봤지?"))
            assert third["intent_history"] == ["waste", "waste", "summary"], "turn 3 sees turns 1-2"
            assert third["turn"] == 3

        asyncio.run(_with_client(server, after))


def test_a_crash_loses_every_checkpoint_written_after_the_first_state_read(tmp_path: Path) -> None:
    with _server(tmp_path) as server:

        async def first_turn(client: LangGraphClient) -> str:
            thread_id = (await client.threads.create())["thread_id"]
            await client.runs.wait(thread_id, "recycling_guide", input=_user("페트병 어떻게 버려?"))
            return thread_id

        early = asyncio.run(_with_client(server, first_turn))
        time.sleep(FLUSH_SECONDS + 1)  # one periodic flush: turn 1 reaches disk

        async def read_then_more(client: LangGraphClient) -> tuple[int, str]:
            flushed = len(await client.threads.get_history(early, limit=100))  # the first state read
            await client.runs.wait(early, "recycling_guide", input=_user("라벨은?"))
            late = (await client.threads.create())["thread_id"]
            await client.runs.wait(late, "recycling_guide", input=_user("캔은?"))
            return flushed, late

        flushed, late = asyncio.run(_with_client(server, read_then_more))
        time.sleep(FLUSH_SECONDS + 1)  # periodic flushes happen, but no longer write checkpoints
        _crash(server)
        server.start()

        async def after_crash(client: LangGraphClient) -> None:
            assert len(await client.threads.get_history(early, limit=100)) == flushed, "turn 2 is gone"
            assert (await client.threads.get(late))["status"] == "idle", "the thread record survived"
            assert await client.threads.get_history(late, limit=100) == [], "its checkpoints did not"

        asyncio.run(_with_client(server, after_crash))
