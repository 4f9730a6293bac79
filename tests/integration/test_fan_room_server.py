"""fan_room on a real `langgraph dev`: tagged checkpoint history, tag-free stream and output."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from graphs.common.visible import stream_visible_text
from migrations_playbook.staging.server import DevServer

GRAPH = "fan_room"
ROOM = [
    ("LG", "LG 트윈스 역사 알려줘"),
    ("삼성", "삼성은 어때?"),
    ("LG", "둘 중에 어디가 더 좋아?"),
]
TAG = re.compile(r"\[[^\]]*팬\]")


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


async def _streamed_turn(
    client: LangGraphClient, thread_id: str, team: str, text: str, mode: str = "messages"
) -> tuple[dict[str, str], dict]:
    """One turn over `runs.stream`: the text streamed per message id, and the final values."""
    texts: dict[str, str] = defaultdict(str)
    final: dict = {}
    async for part in client.runs.stream(
        thread_id, GRAPH, input=_user(text), context={"team_name": team}, stream_mode=[mode, "values"]
    ):
        if part.event in ("messages/partial", "messages/complete"):
            for message in part.data:  # accumulated so far: keep the latest
                texts[message["id"]] = message["content"]
        elif part.event == "messages":  # messages-tuple: one chunk per event
            chunk, _metadata = part.data
            texts[chunk["id"]] += chunk["content"]
        elif part.event == "values":
            final = part.data
    return dict(texts), final


async def test_room_of_three_turns_stores_tagged_answers_under_the_streamed_ids(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    streamed_ids, streamed_texts = [], []
    for team, text in ROOM:
        texts, final = await _streamed_turn(client, thread_id, team, text)
        ((message_id, streamed),) = texts.items()  # exactly one message streamed: no re-emission
        assert not TAG.search(streamed), streamed
        assert final == {"answer": streamed, "speaker": team, "answer_id": message_id}
        streamed_ids.append(message_id)
        streamed_texts.append(streamed)

    state = await client.threads.get_state(thread_id)
    answers = [m for m in state["values"]["messages"] if m["type"] == "ai"]
    assert [m["id"] for m in answers] == streamed_ids
    expected = [f"[{team} 팬] {text}" for (team, _), text in zip(ROOM, streamed_texts, strict=True)]
    assert [m["content"] for m in answers] == expected
    assert all(len(TAG.findall(m["content"])) == 1 for m in answers)
    assert "LG 트윈스 팬분" in answers[1]["content"], "the 삼성 fan knows the LG fan spoke"
    assert state["values"]["flow_version"] == 1


async def test_messages_tuple_stream_carries_the_answer_once_and_untagged(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    texts, final = await _streamed_turn(client, thread_id, "KIA", "KIA는 어때?", mode="messages-tuple")
    assert texts == {final["answer_id"]: final["answer"]}
    assert not TAG.search(final["answer"])
    stored = (await client.threads.get_state(thread_id))["values"]["messages"][-1]
    assert (stored["id"], stored["content"]) == (final["answer_id"], f"[KIA 팬] {final['answer']}")


async def test_model_output_that_starts_with_tags_is_stored_with_exactly_one(client: LangGraphClient) -> None:
    """The history holds a doubly tagged answer; the model copies that prefix into its draft."""
    thread_id = (await client.threads.create(graph_id=GRAPH))["thread_id"]
    await client.threads.update_state(
        thread_id,
        {
            "messages": [
                {"role": "user", "content": "LG 어때?"},
                {"role": "assistant", "content": "[LG 팬] [LG 팬]: 잠실의 LG!", "id": "seeded-answer"},
            ]
        },
        as_node="attribute",
    )
    texts, final = await _streamed_turn(client, thread_id, "삼성", "삼성은?")
    values = (await client.threads.get_state(thread_id))["values"]
    assert values["draft"].startswith("[LG 팬] [LG 팬]: "), values["draft"]
    assert values["messages"][-1]["content"] == f"[삼성 팬] {final['answer']}"
    assert len(TAG.findall(values["messages"][-1]["content"])) == 1
    assert not TAG.search("".join(texts.values()))


@pytest.mark.parametrize(
    ("context", "message"),
    [
        pytest.param({"team_name": "Yankees"}, "unknown team 'Yankees'", id="unknown-team"),
        pytest.param({}, "needs context.team_name", id="no-team"),
    ],
)
async def test_bad_team_fails_the_run_and_stores_no_message(client: LangGraphClient, context: dict, message: str) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    run = await client.runs.create(thread_id, GRAPH, input=_user("안녕"), context=context)
    await client.runs.join(thread_id, run["run_id"])
    assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "error"
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "error"
    assert thread["error"]["error"] == "UnknownTeamError"
    assert message in thread["error"]["message"]
    assert "LG, 삼성, KIA" in thread["error"]["message"]
    assert await client.threads.get_history(thread_id) == []
    assert not (await client.threads.get_state(thread_id))["values"]


async def test_visible_text_helper_gives_the_untagged_answers(client: LangGraphClient) -> None:
    """The shared visible-text filter (graphs/common/visible.py) needs no tag rule for this graph."""
    thread_id = (await client.threads.create())["thread_id"]
    for team, text in ROOM[:2]:
        visible = "".join(
            [
                token
                async for token in stream_visible_text(client, thread_id, GRAPH, input=_user(text), context={"team_name": team})
            ]
        )
        values = (await client.threads.get_state(thread_id))["values"]
        assert visible == values["answer"]
        assert values["messages"][-1]["content"] == f"[{team} 팬] {visible}"
    assert values["draft"].startswith("[LG 팬] "), "the hidden draft did copy a tag"


def _sse_data(body: str) -> list[tuple[str, dict]]:
    lines = [line.split(": ", 1) for line in body.splitlines() if line]
    return [(event[1], json.loads(data[1])) for event, data in zip(lines[::2], lines[1::2], strict=True)]


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        pytest.param({"team_name": "롯데"}, "token", id="known-team"),
        pytest.param({"team_name": "Yankees"}, "refused", id="unknown-team"),
    ],
)
async def test_sse_route_serves_untagged_text_or_the_team_error(
    dev_server: DevServer, client: LangGraphClient, context: dict, expected: str
) -> None:
    async with httpx.AsyncClient(base_url=dev_server.url, timeout=60) as http:
        response = await http.post(f"/visible/{GRAPH}/stream", json={"message": "사직 어때?", "context": context})
    if expected == "refused":  # checked before any thread is created (issue 12, defect 9)
        assert response.status_code == 422
        assert "unknown team 'Yankees'" in response.json()["message"]
        return
    events = _sse_data(response.text)
    assert events[0][0] == expected
    assert events[-1][0] == "done"
    text = "".join(data["text"] for _, data in events[:-1])
    values = (await client.threads.get_state(events[-1][1]["thread_id"]))["values"]
    assert text == values["answer"] and not TAG.search(text)
    assert values["messages"][-1]["content"] == f"[롯데 팬] {text}"


async def test_assistant_can_fix_the_persona(client: LangGraphClient) -> None:
    assistant = await client.assistants.create(GRAPH, context={"team_name": "한화 이글스"}, name="hanwha-fan")
    thread_id = (await client.threads.create())["thread_id"]
    result = await client.runs.wait(thread_id, assistant["assistant_id"], input=_user("한화는?"))
    assert result["speaker"] == "한화"
    stored = (await client.threads.get_state(thread_id))["values"]["messages"][-1]
    assert stored["content"] == f"[한화 팬] {result['answer']}"
