"""Turns and rerun-from-turn-N on a real `langgraph dev` (migrations_playbook/turns.py, `playbook turns|rerun`)."""

from __future__ import annotations

import asyncio
import json

import pytest
from langgraph_sdk.client import LangGraphClient

from migrations_playbook import cli
from migrations_playbook.sources.api import turns
from migrations_playbook.staging.server import DevServer

QUESTIONS = ["페트병 어떻게 버려?", "라벨은?", "지금까지 뭐 물어봤지?"]


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


async def _guide_thread(client: LangGraphClient) -> str:
    thread_id = (await client.threads.create())["thread_id"]
    for text in QUESTIONS:
        await client.runs.wait(thread_id, "recycling_guide", input=_user(text))
    return thread_id


async def _playbook(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(cli.main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_turns_maps_each_question_to_its_checkpoint_range(
    dev_server: DevServer, client: LangGraphClient, capsys: pytest.CaptureFixture[str]
) -> None:
    thread_id = await _guide_thread(client)
    code, out, _ = await _playbook(capsys, "turns", "--live", dev_server.url, thread_id, "--format", "json")
    assert code == cli.EXIT_PASS
    data = json.loads(out)
    mapped = data["turns"]
    assert [t["text"] for t in mapped] == QUESTIONS
    history = await client.threads.get_history(thread_id, limit=100)
    assert data["head_checkpoint_id"] == history[0]["checkpoint"]["checkpoint_id"]
    assert sum(t["checkpoints"] for t in mapped) == len(history)
    assert [t["first_step"] for t in mapped] == [-1, mapped[0]["last_step"] + 1, mapped[1]["last_step"] + 1]
    runs = {r["run_id"] for r in await client.runs.list(thread_id)}
    assert all(len(t["run_ids"]) == 1 for t in mapped) and {t["run_ids"][0] for t in mapped} == runs

    code, table, _ = await _playbook(capsys, "turns", "--live", dev_server.url, thread_id)
    assert code == cli.EXIT_PASS and len(table.splitlines()) == 4 and "라벨은?" in table


async def test_rerun_forks_before_turn_two_and_leaves_the_original_branch_untouched(client: LangGraphClient) -> None:
    thread_id = await _guide_thread(client)
    history = await client.threads.get_history(thread_id, limit=100)
    original_head = history[0]["checkpoint"]["checkpoint_id"]
    original_state = await client.threads.get_state(thread_id)

    rerun = await turns.rerun_from_turn(client, thread_id, 2, "뚜껑은?")

    assert rerun.run_status == "success" and rerun.original_head == original_head
    assert [t.text for t in rerun.turns] == [QUESTIONS[0], "뚜껑은?"]
    assert rerun.turns[1].fork_from == rerun.fork_from == turns.turns_from_history(history)[0].last_checkpoint_id
    new_values = (await client.threads.get_state(thread_id))["values"]
    assert new_values["intent_history"] == ["waste", "waste"], "turns 2 and 3 of the old branch are not in the new one"

    old_head_now = await client.threads.get_state(thread_id, checkpoint_id=original_head)
    assert old_head_now["checkpoint"]["checkpoint_id"] == original_head
    # (read by id, the checkpoint key omits checkpoint_ns; everything else is identical)
    assert {k: v for k, v in old_head_now.items() if k != "checkpoint"} == {
        k: v for k, v in original_state.items() if k != "checkpoint"
    }
    after = await client.threads.get_history(thread_id, limit=200)
    old_ids = {h["checkpoint"]["checkpoint_id"] for h in history}
    assert old_ids <= {h["checkpoint"]["checkpoint_id"] for h in after}, "no checkpoint of the original branch was removed"
    old_branch = turns.turns_from_history(after, head=original_head)
    assert [t.text for t in old_branch] == QUESTIONS


async def test_rerun_reuses_the_context_of_the_turn_it_replaces(
    dev_server: DevServer, client: LangGraphClient, capsys: pytest.CaptureFixture[str]
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    for team, text in (("LG", "LG 어때?"), ("삼성", "삼성은 어때?")):
        await client.runs.wait(thread_id, "fan_room", input=_user(text), context={"team_name": team})
    code, out, err = await _playbook(
        capsys, "rerun", "--live", dev_server.url, thread_id, "--turn", "2", "--input", "삼성 투수진은?", "--format", "json"
    )
    assert code == cli.EXIT_PASS, err
    data = json.loads(out)
    assert data["run_status"] == "success"
    assert [t["text"] for t in data["turns"]] == ["LG 어때?", "삼성 투수진은?"]
    values = (await client.threads.get_state(thread_id))["values"]
    assert values["speaker"] == "삼성", "the context of the replaced turn (team 삼성) was reused"
    assert values["messages"][-1]["content"].startswith("[삼성 팬] ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(("--turn", "4", "--input", "x"), "turn 4 does not exist: the thread has 3 turn(s)", id="no-such-turn"),
        pytest.param(("--turn", "2", "--input", "  "), "needs a non-empty input text", id="empty-text"),
        pytest.param(
            ("--turn", "2", "--input", "x", "--context", "[1]"), "--context must be a JSON object", id="context-not-object"
        ),
    ],
)
async def test_rerun_refuses_bad_requests_with_a_message_and_exit_2(
    dev_server: DevServer, client: LangGraphClient, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    thread_id = await _guide_thread(client)
    before = await client.threads.get_history(thread_id, limit=100)
    code, out, err = await _playbook(capsys, "rerun", "--live", dev_server.url, thread_id, *argv)
    assert (code, out) == (cli.EXIT_USAGE, "")
    assert message in err and "Traceback" not in err
    assert await client.threads.get_history(thread_id, limit=100) == before


async def test_turns_of_an_unknown_thread_is_a_usage_error(dev_server: DevServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = await _playbook(capsys, "turns", "--live", dev_server.url, "00000000-0000-4000-8000-000000000000")
    assert code == cli.EXIT_USAGE and "not found" in err


async def test_rerun_on_a_busy_approval_thread_is_refused_by_the_server(
    dev_server: DevServer, client: LangGraphClient, capsys: pytest.CaptureFixture[str]
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "ticket_triage", input=_user("Please refund the double charge"))
    queued = await client.runs.create(
        thread_id, "ticket_triage", command={"resume": {"kind": "plan_approval", "answer": "approve"}}, after_seconds=30
    )
    try:
        code, _, err = await _playbook(
            capsys, "rerun", "--live", dev_server.url, thread_id, "--turn", "1", "--input", "환불 취소"
        )
        assert code == cli.EXIT_USAGE
        assert "the server refused the rerun (409" in err
    finally:
        await client.runs.cancel(thread_id, queued["run_id"], wait=True)


def test_turns_says_when_the_server_is_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    from migrations_playbook.staging.server import free_port

    code = cli.main(["turns", "--live", f"http://127.0.0.1:{free_port()}", "t-1"])
    assert code == cli.EXIT_UNREACHABLE
    assert "unreachable" in capsys.readouterr().err
