"""What survives a restart of `langgraph dev` (langgraph-runtime-inmem 0.36.7), on a real server.

* A graceful stop (SIGINT, what Ctrl+C and `DevServer.stop()` send) writes
  threads, runs and checkpoints: a restart in the same folder has every
  thread, its history and its pending interrupt, and resumes.
* A crash loses no checkpoint either. The runtime's own saver stops writing
  checkpoints after the first state read through the API (get_state,
  get_history; server/persistence/__init__.py says why), so `langgraph.json`
  names a SQLite checkpointer; the second test pins that a SIGKILL right after
  such a read keeps every checkpoint (tests/integration/test_crash_server.py
  has the crash at other moments).
"""

from __future__ import annotations

from pathlib import Path

from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.integration.crashing import kill, run_with_client
from tests.integration.refusal import thread_snapshot


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def _server(workdir: Path) -> DevServer:
    return DevServer(REPO_ROOT / "langgraph.json", workdir, env={"MODEL": "offline"})


def test_a_graceful_restart_keeps_threads_history_and_pending_interrupts(tmp_path: Path) -> None:
    with _server(tmp_path) as server:

        async def before(client: LangGraphClient) -> dict:
            chat = (await client.threads.create())["thread_id"]
            for text in ("페트병 어떻게 버려?", "라벨은?"):
                await client.runs.wait(chat, "recycling_guide", input=_user(text))
            ticket = (await client.threads.create())["thread_id"]
            await client.runs.wait(ticket, "ticket_triage", input=_user("Please refund the double charge"))
            # state reads on purpose: after one, 0.36.7's own saver wrote checkpoints only on a graceful stop
            return {
                "chat": chat,
                "ticket": ticket,
                **{name: await thread_snapshot(client, tid) for name, tid in (("chat_snap", chat), ("ticket_snap", ticket))},
            }

        saved = run_with_client(server, before)
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
            assert (await client.threads.get_state(saved["chat"]))["values"]["turn"] == 3  # state: not in the output

        run_with_client(server, after)


def test_a_crash_after_a_state_read_loses_no_checkpoint(tmp_path: Path) -> None:
    with _server(tmp_path) as server:

        async def read_then_more(client: LangGraphClient) -> dict[str, int]:
            early = (await client.threads.create())["thread_id"]
            await client.runs.wait(early, "recycling_guide", input=_user("페트병 어떻게 버려?"))
            await client.threads.get_history(early, limit=100)  # the read after which 0.36.7 stopped writing
            await client.runs.wait(early, "recycling_guide", input=_user("라벨은?"))
            late = (await client.threads.create())["thread_id"]
            await client.runs.wait(late, "recycling_guide", input=_user("캔은?"))
            return {tid: len(await client.threads.get_history(tid, limit=100)) for tid in (early, late)}

        seen = run_with_client(server, read_then_more)
        kill(server)
        server.start()

        async def after_crash(client: LangGraphClient) -> None:
            for thread_id, checkpoints in seen.items():
                assert checkpoints > 0
                assert len(await client.threads.get_history(thread_id, limit=100)) == checkpoints
                assert (await client.threads.get(thread_id))["status"] == "idle"

        run_with_client(server, after_crash)
