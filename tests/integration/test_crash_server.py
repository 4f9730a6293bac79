"""A SIGKILL of `langgraph dev` loses nothing a client saw acknowledged, and brings back no answered interrupt.

Issue 12, defect 6: langgraph-runtime-inmem 0.36.7 stopped writing checkpoints
after the first state read, so a crash after one resume brought threads back
with no checkpoints and an approved ticket pending again. `langgraph.json` now
names server/persistence/: checkpoints in
`.langgraph_api/checkpoints.sqlite`, the runtime's thread and run records written
on every change. Each test kills the server's process group with SIGKILL (no
flush, no shutdown hook) at one moment and restarts it in the same folder:

* right after an approval was answered (the state reads included);
* mid-conversation: chat turns, a supervisor turn and a ticket paused at its approval;
* during a run, between two of its steps (tests/fixtures/slow_project).

And since nothing waits for a flush any more, `playbook replay --persistence`
copies a running server's folder as it is (issue 12, item 11), no restart first.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from server.persistence import database_path
from tests.conftest import REPO_ROOT
from tests.integration.crashing import crash_and_restart as _crash_and_restart
from tests.integration.crashing import run_with_client as _run
from tests.integration.refusal import thread_snapshot

SLOW_PROJECT = Path(__file__).parents[1] / "fixtures" / "slow_project"
REFUND = "Please refund the double charge on my invoice"
APPROVE = {"kind": "plan_approval", "answer": "approve"}


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def _pending_kinds(state: dict[str, Any]) -> list[str]:
    return [i["value"]["kind"] for task in state["tasks"] for i in task["interrupts"]]


def _slow_config(tmp_path: Path) -> Path:
    """The slow stand-in graphs, served with this repo's checkpointer entry (absolute paths: the server runs elsewhere)."""
    config = json.loads((SLOW_PROJECT / "langgraph.json").read_text())
    config["dependencies"] = [str(SLOW_PROJECT)]
    config["graphs"] = {gid: spec.replace("./", f"{SLOW_PROJECT}/", 1) for gid, spec in config["graphs"].items()}
    config["auth"]["path"] = config["auth"]["path"].replace("./", f"{SLOW_PROJECT}/", 1)
    config["checkpointer"] = json.loads((REPO_ROOT / "langgraph.json").read_text())["checkpointer"]
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(config))
    return path


def test_an_answered_approval_stays_answered_after_a_crash(server_factory: type[DevServer], tmp_path: Path) -> None:
    server = server_factory(REPO_ROOT / "langgraph.json", tmp_path, env={"MODEL": "offline"}).start()

    async def approve(client: LangGraphClient) -> tuple[str, dict]:
        ticket = (await client.threads.create())["thread_id"]
        await client.runs.wait(ticket, "ticket_triage", input=_user(REFUND))
        assert _pending_kinds(await client.threads.get_state(ticket)) == ["plan_approval"]  # the read that stopped writes
        resumed = await client.runs.wait(ticket, "ticket_triage", command={"resume": APPROVE})
        assert resumed["approval"]["answer"] == "approve"
        return ticket, await thread_snapshot(client, ticket)

    ticket, acknowledged = _run(server, approve)
    assert database_path(tmp_path).is_file(), "checkpoints live in the server's .langgraph_api/"
    _crash_and_restart(server)

    async def after(client: LangGraphClient) -> None:
        assert await thread_snapshot(client, ticket) == acknowledged, "record, state, history and runs as acknowledged"
        assert acknowledged["thread"]["status"] == "idle" and acknowledged["thread"]["interrupts"] == {}
        assert acknowledged["state"]["tasks"] == [] and len(acknowledged["history"]) > 0
        with pytest.raises(httpx.HTTPStatusError) as second:
            await client.runs.wait(ticket, "ticket_triage", command={"resume": APPROVE})
        assert second.value.response.status_code == 409, "the approval cannot be answered a second time"
        assert await thread_snapshot(client, ticket) == acknowledged

    _run(server, after)


def test_a_crash_mid_conversation_keeps_every_turn_and_the_pending_approval(
    server_factory: type[DevServer], tmp_path: Path
) -> None:
    server = server_factory(REPO_ROOT / "langgraph.json", tmp_path, env={"MODEL": "offline"}).start()

    async def converse(client: LangGraphClient) -> dict[str, Any]:
        chat = (await client.threads.create())["thread_id"]
        await client.runs.wait(chat, "recycling_guide", input=_user("페트병 어떻게 버려?"))
        await client.threads.get_history(chat, limit=10)
        await client.runs.wait(chat, "recycling_guide", input=_user("라벨은?"))
        ticket = (await client.threads.create())["thread_id"]
        await client.runs.wait(ticket, "ticket_triage", input=_user(REFUND))
        campus = (await client.threads.create())["thread_id"]  # its supervisor runs a subgraph synchronously
        await client.runs.wait(campus, "campus_supervisor", input=_user("오늘 학식 메뉴 뭐야?"))
        threads = (chat, ticket, campus)
        return {"chat": chat, "ticket": ticket, "snapshots": {t: await thread_snapshot(client, t) for t in threads}}

    before = _run(server, converse)
    _crash_and_restart(server)

    async def after(client: LangGraphClient) -> None:
        for thread_id, snapshot in before["snapshots"].items():
            assert await thread_snapshot(client, thread_id) == snapshot
        ticket = await client.threads.get(before["ticket"])
        assert ticket["status"] == "interrupted" and _pending_kinds(await client.threads.get_state(before["ticket"])) == [
            "plan_approval"
        ]
        resumed = await client.runs.wait(before["ticket"], "ticket_triage", command={"resume": APPROVE})
        assert resumed["approval"]["answer"] == "approve", "the unanswered approval survived and resumes once"
        third = await client.runs.wait(before["chat"], "recycling_guide", input=_user("지금까지 뭐 물어봤지?"))
        turn = (await client.threads.get_state(before["chat"]))["values"]["turn"]  # not in the run's output (record 0010)
        assert third["intent_history"] == ["waste", "waste", "summary"] and turn == 3, "turn 3 sees turns 1-2"

    _run(server, after)


CUT_OFF_RUNS = [
    pytest.param({"input": _user("turn two")}, 2, id="new-input"),
    # A Command is what a resume is: retried as sent, it is applied again to a thread that moved past it.
    pytest.param(
        {"command": {"update": {"messages": [{"role": "user", "content": "turn two", "id": "turn-2"}]}, "goto": "think"}},
        1,
        id="command",
    ),
]


@pytest.mark.parametrize(("request_kwargs", "input_checkpoints"), CUT_OFF_RUNS)
def test_a_run_cut_off_by_a_crash_continues_from_its_last_checkpoint(
    server_factory: type[DevServer], tmp_path: Path, request_kwargs: dict, input_checkpoints: int
) -> None:
    server = server_factory(_slow_config(tmp_path), tmp_path / "server").start()

    async def crash_point(client: LangGraphClient) -> tuple[str, str, dict]:
        thread_id = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread_id, "slow_chat", input=_user("turn one"))
        acknowledged = await thread_snapshot(client, thread_id)
        run = await client.runs.create(thread_id, "slow_chat", **request_kwargs)
        for _ in range(200):  # until the run's first step (`think`) is committed, while `reflect` sleeps
            head = await client.threads.get_state(thread_id)
            if head["values"].get("steps") == ["think"] and head["next"] == ["reflect"]:
                return thread_id, run["run_id"], acknowledged
            await asyncio.sleep(0.05)
        raise AssertionError("the slow run never committed its first step")

    thread_id, run_id, acknowledged = _run(server, crash_point)
    _crash_and_restart(server)

    async def after(client: LangGraphClient) -> None:
        assert (await client.threads.get(thread_id))["status"] == "busy", "the cut-off run is retried"
        await client.runs.join(thread_id, run_id)
        assert (await client.runs.get(thread_id, run_id))["status"] == "success"
        state = await client.threads.get_state(thread_id)
        texts = [(m["type"], m["content"]) for m in state["values"]["messages"]]
        assert texts == [
            ("human", "turn one"),
            ("ai", "echo: turn one"),
            ("human", "turn two"),
            ("ai", "echo: turn two"),
        ], "the retry finished the run, and its input is in the thread once"
        assert state["values"]["steps"] == ["think", "reflect", "answer"] and state["next"] == []
        assert (await client.threads.get(thread_id))["status"] == "idle"
        history = await client.threads.get_history(thread_id, limit=100)
        assert {c["checkpoint"]["checkpoint_id"] for c in acknowledged["history"]} <= {
            c["checkpoint"]["checkpoint_id"] for c in history
        }, "turn one is all there"
        sources = [c["metadata"]["source"] for c in history]
        assert sources.count("input") == input_checkpoints, "the retry did not start turn two over"
        thinking = [c for c in history if c["values"].get("steps") == ["think"]]
        assert len(thinking) == 2, "`think` ran once per turn: committed before the crash, it did not run again"

    _run(server, after)


def test_replay_copies_a_running_servers_folder_without_a_restart(server_factory: type[DevServer], tmp_path: Path) -> None:
    server = server_factory(REPO_ROOT / "langgraph.json", tmp_path, env={"MODEL": "offline"}).start()

    async def pause(client: LangGraphClient) -> str:
        ticket = (await client.threads.create())["thread_id"]
        await client.runs.wait(ticket, "ticket_triage", input=_user(REFUND))
        await client.threads.get_state(ticket)
        return ticket

    ticket = _run(server, pause)
    replay = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrations_playbook",
            "replay",
            "--live",
            server.url,
            "--candidate",
            str(REPO_ROOT / "langgraph.json"),
            "--persistence",
            str(tmp_path),
            "--auto-resume",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert replay.returncode == 0, replay.stderr
    report = json.loads(replay.stdout)
    assert report["verdict"] == "pass" and report["graphs"]["ticket_triage"]["by_status"] == {"interrupted": 1}

    async def live_untouched(client: LangGraphClient) -> None:
        assert _pending_kinds(await client.threads.get_state(ticket)) == ["plan_approval"], "resumed on staging only"

    _run(server, live_untouched)
