"""campus_supervisor on a real `langgraph dev`: visible text over runs.stream and over the SSE route."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from graphs.common.visible import ANSWER_TAG, VisibleTextFilter, open_run_stream, stream_visible_text, visible_text
from migrations_playbook.staging.server import DevServer

GRAPH = "campus_supervisor"
LIBRARY_KO = "3층 좌석 남았어?"
LIBRARY_ANSWER_KO = "3층 열람실에는 80석 중 12석이 남아 있습니다."
CAFETERIA_KO = "오늘 학식 메뉴 뭐야?"
MENU_KO = "오늘 학생식당 점심은 제육볶음, 된장국, 계란말이(5,500원), 저녁은 김치볶음밥, 미역국(5,000원)입니다."
ACADEMIC_KO = "자료구조 과제 마감 언제야?"
ACADEMIC_ANSWER_KO = "자료구조 과제: 과제 1: 스택 구현 (마감 03-14)."
NARRATION = ("에이전트에게 전달했습니다", "Transferred to")


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _raw_parts(client: LangGraphClient, thread_id: str, text: str, **kwargs: Any) -> list[tuple[str, Any]]:
    return [(p.event, p.data) async for p in open_run_stream(client, thread_id, GRAPH, input=_user(text), **kwargs)]


def _text_chunks(parts: list[tuple[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(index, chunk) of every model chunk with text."""
    chunks = [(i, d[0]) for i, (e, d) in enumerate(parts) if e.startswith("messages") and d[0]["type"] == "AIMessageChunk"]
    return [(i, chunk) for i, chunk in chunks if chunk["content"]]


def _chunk_text(parts: list[tuple[str, Any]]) -> str:
    return "".join(d[0]["content"] for e, d in parts if e.startswith("messages") and d[0]["type"] == "AIMessageChunk")


async def test_library_question_streams_only_the_library_answer(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tokens = [t async for t in stream_visible_text(client, thread["thread_id"], GRAPH, input=_user(LIBRARY_KO))]
    assert "".join(tokens) == LIBRARY_ANSWER_KO
    assert len(tokens) > 1, "streamed as tokens"


async def test_raw_server_stream_has_text_only_in_the_answer_step_released_as_it_arrives(client: LangGraphClient) -> None:
    """Flow 2 (ADR 0002): the tool steps stream tool calls and no text; the answer step's chunks
    are tagged `answer_llm` and each is visible in the very part that brings it."""
    thread = await client.threads.create()
    parts = await _raw_parts(client, thread["thread_id"], LIBRARY_KO)
    assert _chunk_text(parts) == LIBRARY_ANSWER_KO, "no preamble, no narration"
    chunks = [(d[0], d[1]) for e, d in parts if e.startswith("messages") and d[0]["type"] == "AIMessageChunk"]
    called = [c["name"] for chunk, _ in chunks for c in chunk.get("tool_call_chunks") or () if c.get("name")]
    assert called == ["transfer_to_library", "seat_status", "ready_to_answer"]
    text_filter = VisibleTextFilter()
    released = [text_filter.feed(event, data) for event, data in parts]
    texts = [i for i, _ in _text_chunks(parts)]
    assert [i for i, tokens in enumerate(released) if tokens] == texts
    assert all(ANSWER_TAG in (parts[i][1][1].get("tags") or ()) for i in texts)
    supervisor_tags = {tuple(d[1].get("tags") or ()) for e, d in parts if e.startswith("messages|supervisor")}
    assert ("supervisor_llm",) in supervisor_tags


async def test_cafeteria_question_streams_the_supervisors_direct_answer(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tokens = [t async for t in stream_visible_text(client, thread["thread_id"], GRAPH, input=_user(CAFETERIA_KO))]
    assert "".join(tokens) == MENU_KO


def _stored(state: dict[str, Any]) -> list[dict[str, Any]]:
    return state["values"]["messages"]


def _narration(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if any(n in str(m["content"]) for n in NARRATION)]


def _transfer_pairs(messages: list[dict[str, Any]]) -> list[str]:
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or [] if c["name"].startswith("transfer_to_")]
    results = [m["tool_call_id"] for m in messages if m["type"] == "tool" and m["name"].startswith("transfer_to_")]
    return calls + results


async def test_three_turn_history_drops_routing_only_in_transfer_turns(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    expected = [(CAFETERIA_KO, MENU_KO), (LIBRARY_KO, LIBRARY_ANSWER_KO), (ACADEMIC_KO, ACADEMIC_ANSWER_KO)]
    cafeteria_turn: list[dict[str, Any]] = []
    for index, (question, answer) in enumerate(expected):
        parts = await _raw_parts(client, thread_id, question, extra_stream_modes=["tasks"])
        assert "".join(visible_text(parts)) == answer
        messages = _stored(await client.threads.get_state(thread_id))
        assert _narration(messages) == []
        assert _transfer_pairs(messages) == []
        if index == 0:
            cafeteria_turn = messages
            assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]
            assert messages[-1]["content"] == MENU_KO and messages[2]["name"] == "today_menu"
        assert messages[:4] == cafeteria_turn, "the direct answer and its tool pair stay"
        if index == 2:
            (academic_input,) = [d["input"] for e, d in parts if e == "tasks" and d.get("name") == "academic" and "input" in d]
            seen = [m["content"] for m in academic_input["messages"]]
            assert "도서관 에이전트에게 전달했습니다." not in seen
            assert LIBRARY_ANSWER_KO in seen and MENU_KO in seen


@pytest.mark.parametrize(
    ("first", "question", "reply", "answer", "agent"),
    [
        pytest.param(
            "도서관 좌석 남았어?",
            "몇 층 좌석을 확인할까요? (2층, 3층, 4층, 5층)",
            "2층",
            "2층 열람실에는 120석 중 34석이 남아 있습니다.",
            "library",
            id="floor-ko",
        ),
        pytest.param(
            "Any free seats in the library?",
            "Which floor should I check? (2, 3, 4, 5)",
            "the second floor",
            "Floor 2 reading room: 34 of 120 seats are free.",
            "library",
            id="floor-en",
        ),
        pytest.param(
            "과제 마감 언제야?",
            "어느 과목인가요? (자료구조, 운영체제)",
            "자료구조",
            ACADEMIC_ANSWER_KO,
            "academic",
            id="course-ko-not-captured-by-library",
        ),
        pytest.param(
            "When is the assignment due?",
            "Which course? (Data Structures, Operating Systems)",
            "Data Structures",
            "Data Structures assignments: Assignment 1: implement a stack (due 03-14).",
            "academic",
            id="course-en-not-captured-by-library",
        ),
    ],
)
async def test_follow_up_reply_goes_to_the_agent_that_asked(
    client: LangGraphClient, first: str, question: str, reply: str, answer: str, agent: str
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    assert "".join([t async for t in stream_visible_text(client, thread_id, GRAPH, input=_user(first))]) == question
    assert "".join([t async for t in stream_visible_text(client, thread_id, GRAPH, input=_user(reply))]) == answer
    state = await client.threads.get_state(thread_id)
    assert state["values"]["routing"]["agent"] == agent
    assert state["values"]["routing"]["by"] == "follow_up"


def _sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


async def _post(dev_server: DevServer, graph_id: str, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=dev_server.url, timeout=60) as http:
        return await http.post(f"/visible/{graph_id}/stream", **kwargs)


@pytest.mark.parametrize(
    ("question", "answer"),
    [pytest.param(LIBRARY_KO, LIBRARY_ANSWER_KO, id="library"), pytest.param(CAFETERIA_KO, MENU_KO, id="cafeteria")],
)
async def test_sse_route_serves_the_same_visible_text(
    dev_server: DevServer, client: LangGraphClient, question: str, answer: str
) -> None:
    response = await _post(dev_server, GRAPH, json={"message": question})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _sse_events(response.text)
    assert {name for name, _ in events[:-1]} == {"token"}
    assert "".join(data["text"] for _, data in events[:-1]) == answer
    done_name, done = events[-1]
    assert done_name == "done"
    state = await client.threads.get_state(done["thread_id"])
    assert _stored(state)[-1]["content"] == answer

    again = _sse_events((await _post(dev_server, GRAPH, json={"message": "2층", "thread_id": done["thread_id"]})).text)
    assert again[-1] == ("done", {"thread_id": done["thread_id"], "run_id": again[-1][1]["run_id"]})


@pytest.mark.parametrize(
    ("graph_id", "request_kwargs", "status", "error"),
    [
        pytest.param("no_such_graph", {"json": {"message": "hi"}}, 404, "unknown_graph", id="unknown-graph"),
        pytest.param(GRAPH, {"json": {"text": "hi"}}, 422, "missing_message", id="missing-message"),
        pytest.param(GRAPH, {"json": {"message": "  "}}, 422, "missing_message", id="blank-message"),
        pytest.param(GRAPH, {"json": ["hi"]}, 422, "invalid_body", id="not-an-object"),
        pytest.param(GRAPH, {"content": b"{not json"}, 400, "invalid_json", id="not-json"),
        pytest.param(GRAPH, {"json": {"message": "hi", "context": "offline"}}, 422, "invalid_context", id="bad-context"),
        pytest.param(
            GRAPH,
            {"json": {"message": "hi", "thread_id": "00000000-0000-0000-0000-000000000000"}},
            404,
            "unknown_thread",
            id="unknown-thread",
        ),
    ],
)
async def test_sse_route_rejects_bad_input_with_a_json_error(
    dev_server: DevServer, graph_id: str, request_kwargs: dict, status: int, error: str
) -> None:
    response = await _post(dev_server, graph_id, **request_kwargs)
    assert response.status_code == status
    assert response.json()["error"] == error
    assert response.json()["message"]


async def test_sse_route_ends_with_an_error_event_when_the_run_fails(dev_server: DevServer) -> None:
    response = await _post(dev_server, GRAPH, json={"message": "hi", "context": {"model": "llama:7b"}})
    ((name, data),) = _sse_events(response.text)
    assert name == "error"
    assert "unknown model spec 'llama:7b'" in data["message"]
    assert data["thread_id"]
