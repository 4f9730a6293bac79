"""The OpenAI path on a real `langgraph dev`: `ChatOpenAI` against the OpenAI stand-in.

One server runs every graph with ``MODEL=openai:gpt-4o-mini`` and
``OPENAI_BASE_URL`` pointing at `tests/openai_standin.py`, so each model call goes
through langchain-openai's real client (the openai SDK's SSE parsing,
``beta.chat.completions.stream`` for structured output, its chunk conversion).
The stand-in decides with the offline model's rules, so every conversation must
come out exactly as it does on the offline model: each is also run in this process
on the offline model, and the visible text, the stored state, the typed approvals
and the progress events of each turn are compared. The exact texts the offline
tests assert are checked too, and the stand-in's request log proves the server
really called it (streaming, tools, ``response_format``, usage). The server
reads no ``.env`` (`config_without_dotenv`): only the dummy key and the
stand-in's URL reach it.
"""

from __future__ import annotations

import importlib
import json
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Interrupt
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from graphs.common.visible import ANSWER_TAG, VisibleTextFilter, open_run_stream, part_from_astream, visible_text
from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.integration.test_campus_supervisor_server import (
    ACADEMIC_ANSWER_KO,
    ACADEMIC_KO,
    CAFETERIA_KO,
    LIBRARY_ANSWER_KO,
    LIBRARY_KO,
    MENU_KO,
)
from tests.integration.test_fan_room_server import ROOM, TAG
from tests.integration.test_ticket_triage_server import REFUND
from tests.openai_standin import OpenAIStandIn
from tests.recycling_seed import SEED_TURNS, event_trace, expected_trace

GPT = "openai:gpt-4o-mini"
VOLATILE = frozenset({"requested_at", "answered_at", "answer_id"})
"""State fields that differ between any two runs (clock times, generated ids)."""


@dataclass
class Turn:
    """What one turn showed and left behind."""

    visible: str
    tokens: int
    values: Any
    interrupts: Any
    custom: list[dict[str, Any]]
    streamed: dict[str, str] = field(default_factory=dict)
    """Model text streamed per message id (server runs only)."""


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _resume(answer: str) -> dict[str, Any]:
    return {"resume": {"kind": "plan_approval", "answer": answer}}


def comparable(value: Any) -> Any:
    """A run's state with what must differ removed: messages reduced to type, name,
    text and tool names (ids differ), interrupts to their values, clock fields dropped.
    In-process objects and the server's JSON come out the same."""
    if isinstance(value, BaseMessage):
        value = value.model_dump()
    if isinstance(value, Interrupt):
        return comparable(value.value)
    if isinstance(value, Mapping):
        if "type" in value and "content" in value:
            calls = [call["name"] for call in value.get("tool_calls") or ()]
            return {"type": value["type"], "name": value.get("name"), "content": value["content"], "calls": calls}
        if "value" in value and "id" in value and set(value) <= {"value", "id", "response_schema"}:
            return comparable(value["value"])
        return {key: comparable(item) for key, item in value.items() if key not in VOLATILE}
    if isinstance(value, (list, tuple)):
        return [comparable(item) for item in value]
    return value


def offline_turns(graph_id: str, turns: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[Turn]:
    """The conversation in this process on the offline model (the reference)."""
    builder = importlib.import_module(f"graphs.{graph_id}.graph").builder
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"offline-{graph_id}"}}
    out = []
    for request, context in turns:
        graph_input = Command(resume=request["resume"]) if "resume" in request else request["input"]
        parts = [
            part_from_astream(part)
            for part in graph.stream(
                graph_input,
                config,
                context=builder.context_schema(**context, model="offline"),
                stream_mode=["messages", "custom"],
                subgraphs=True,
            )
        ]
        tokens = list(visible_text(parts))
        state = graph.get_state(config)
        custom = [data for event, data in parts if event.split("|", 1)[0] == "custom"]
        out.append(Turn("".join(tokens), len(tokens), comparable(state.values), comparable(state.interrupts), custom))
    return out


async def server_turns(
    client: LangGraphClient,
    graph_id: str,
    turns: list[tuple[dict[str, Any], dict[str, Any]]],
    thread_id: str | None = None,
) -> list[Turn]:
    """The conversation on the server (on a new thread unless given one); the model is
    the server's default, ``$MODEL``."""
    thread_id = thread_id or (await client.threads.create())["thread_id"]
    out = []
    for request, context in turns:
        run_kwargs = {"command": request} if "resume" in request else {"input": request["input"]}
        text_filter = VisibleTextFilter()
        tokens: list[str] = []
        custom: list[dict[str, Any]] = []
        streamed: dict[str, str] = defaultdict(str)
        async for part in open_run_stream(
            client, thread_id, graph_id, extra_stream_modes=["custom"], context=context, **run_kwargs
        ):
            tokens.extend(text_filter.feed(part.event, part.data))
            kind = part.event.split("|", 1)[0]
            if kind == "custom":
                custom.append(part.data)
            elif kind == "messages" and part.data[0]["type"] == "AIMessageChunk":
                chunk = part.data[0]
                streamed[chunk["id"]] += chunk["content"] if isinstance(chunk["content"], str) else ""
        tokens.extend(text_filter.finish())
        state = await client.threads.get_state(thread_id)
        out.append(
            Turn(
                "".join(tokens),
                len(tokens),
                comparable(state["values"]),
                comparable(state["interrupts"]),
                custom,
                {k: v for k, v in streamed.items() if v},
            )
        )
    return out


@pytest.fixture(scope="module")
def standin() -> Iterator[OpenAIStandIn]:
    with OpenAIStandIn() as server:
        yield server


def config_without_dotenv(folder: Path) -> Path:
    """This repo's `langgraph.json` without its ``env`` file, written to ``folder``
    (dependencies made absolute). `langgraph dev` lets ``.env`` override the
    server's environment, and a developer's ``.env`` (a real ``OPENAI_API_KEY``,
    another ``OPENAI_BASE_URL`` or ``MODEL``) must never reach this lane."""
    config = json.loads((REPO_ROOT / "langgraph.json").read_text())
    config.pop("env", None)
    config["dependencies"] = [str((REPO_ROOT / dependency).resolve()) for dependency in config["dependencies"]]
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config, indent=2))
    return path


@pytest.fixture(scope="module")
def openai_server(standin: OpenAIStandIn, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """One `langgraph dev` for the module, every graph on ChatOpenAI -> the stand-in."""
    workdir = tmp_path_factory.mktemp("openai-path")
    env = {
        "MODEL": GPT,
        "OPENAI_BASE_URL": standin.base_url,
        "OPENAI_API_KEY": "sk-standin-dummy-not-a-key",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    with DevServer(config_without_dotenv(workdir), workdir, env=env) as server:
        yield server


@pytest.fixture
async def client(openai_server: DevServer) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=openai_server.url)
    try:
        yield client
    finally:
        await client.aclose()


@dataclass(frozen=True)
class Conversation:
    graph_id: str
    turns: list[tuple[dict[str, Any], dict[str, Any]]]
    visible: list[str] | None = None
    """Exact visible texts the offline tests assert, when they assert them."""
    tools: frozenset[str] = frozenset()
    """Tools the graph must have offered the model (sent as ``tools``)."""
    schemas: frozenset[str] = frozenset()
    """Structured-output schemas the graph must have sent as ``response_format``."""


def _text_turns(*texts: str, context: dict[str, Any] | None = None) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [({"input": _user(text)}, context or {}) for text in texts]


CONVERSATIONS = [
    pytest.param(
        Conversation(
            "campus_supervisor",
            _text_turns(CAFETERIA_KO, LIBRARY_KO, ACADEMIC_KO),
            visible=[MENU_KO, LIBRARY_ANSWER_KO, ACADEMIC_ANSWER_KO],
            tools=frozenset({"today_menu", "transfer_to_library", "transfer_to_academic", "seat_status", "assignments"}),
        ),
        id="campus-direct-then-routed",
    ),
    pytest.param(
        Conversation(
            "campus_supervisor",
            _text_turns("도서관 좌석 남았어?", "2층"),
            visible=["몇 층 좌석을 확인할까요? (2층, 3층, 4층, 5층)", "2층 열람실에는 120석 중 34석이 남아 있습니다."],
            tools=frozenset({"transfer_to_library", "seat_status"}),
        ),
        id="campus-follow-up-ko",
    ),
    pytest.param(
        Conversation(
            "campus_supervisor",
            _text_turns("When is the assignment due?", "Data Structures"),
            visible=[
                "Which course? (Data Structures, Operating Systems)",
                "Data Structures assignments: Assignment 1: implement a stack (due 03-14).",
            ],
            tools=frozenset({"transfer_to_academic", "assignments"}),
        ),
        id="campus-follow-up-en",
    ),
    pytest.param(
        Conversation(
            "ticket_triage",
            [({"input": _user(REFUND)}, {}), (_resume("approve"), {})],
            schemas=frozenset({"TicketClassification"}),
        ),
        id="ticket-approval",
    ),
    pytest.param(
        Conversation(
            "fan_room",
            [({"input": _user(text)}, {"team_name": team}) for team, text in ROOM],
        ),
        id="fan-room",
    ),
    pytest.param(
        Conversation(
            "recycling_guide",
            _text_turns(*(text for text, *_ in SEED_TURNS)),
            schemas=frozenset({"TurnAnalysis"}),
        ),
        id="recycling-seed",
    ),
]


@pytest.mark.parametrize("conversation", CONVERSATIONS)
async def test_conversation_on_chatopenai_matches_the_offline_model(
    client: LangGraphClient, standin: OpenAIStandIn, conversation: Conversation
) -> None:
    before = len(standin.requests)
    served = await server_turns(client, conversation.graph_id, conversation.turns)
    reference = offline_turns(conversation.graph_id, conversation.turns)

    for number, (got, want) in enumerate(zip(served, reference, strict=True), start=1):
        assert got.visible == want.visible, f"turn {number}: visible text"
        assert got.values == want.values, f"turn {number}: stored state"
        assert got.interrupts == want.interrupts, f"turn {number}: typed approvals"
        assert got.custom == want.custom, f"turn {number}: progress events"
        if got.visible:
            assert got.tokens > 1, f"turn {number}: streamed as tokens"
    if conversation.visible is not None:
        assert [turn.visible for turn in served] == conversation.visible

    requests = standin.requests[before:]
    assert requests, "the server never called the stand-in"
    assert [r.status for r in requests] == [200] * len(requests), [r.body for r in requests if r.status != 200]
    assert all(r.streamed and r.body["stream_options"] == {"include_usage": True} for r in requests)
    assert {r.body["model"] for r in requests} == {"gpt-4o-mini"}
    assert conversation.tools <= {name for r in requests for name in r.tool_names}
    assert conversation.schemas == {r.schema_name for r in requests} - {None}


async def test_ticket_approval_is_typed_and_the_reply_reflects_it(client: LangGraphClient) -> None:
    first, resumed = await server_turns(client, "ticket_triage", [({"input": _user(REFUND)}, {}), (_resume("approve"), {})])
    (approval,) = first.interrupts
    assert (approval["kind"], approval["options"], approval["resume_at"]) == ("plan_approval", ["approve", "reject"], "triage")
    assert first.visible == "", "the classification (JSON text on ChatOpenAI) is never shown"
    assert resumed.values["approval"]["answer"] == "approve"
    assert resumed.values["policy"]["allowed"] is True
    assert resumed.visible == resumed.values["response"]


async def test_fan_room_streams_one_untagged_message_and_stores_it_tagged_under_its_id(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    room = [({"input": _user(text)}, {"team_name": team}) for team, text in ROOM]
    turns = await server_turns(client, "fan_room", room, thread_id)
    stored = [m for m in (await client.threads.get_state(thread_id))["values"]["messages"] if m["type"] == "ai"]
    for (team, _), turn, answer in zip(ROOM, turns, stored, strict=True):
        ((message_id, streamed),) = turn.streamed.items()  # exactly one message streamed: no draft, no re-emission
        assert streamed == turn.visible == turn.values["answer"]
        assert not TAG.search(streamed)
        assert (answer["id"], answer["content"]) == (message_id, f"[{team} 팬] {streamed}")
    assert "LG 트윈스 팬분" in stored[1]["content"]


async def test_recycling_turns_emit_the_seed_progress_events(client: LangGraphClient) -> None:
    turns = await server_turns(client, "recycling_guide", _text_turns(*(text for text, *_ in SEED_TURNS)))
    for number, (turn, (_, intent, stage, _)) in enumerate(zip(turns, SEED_TURNS, strict=True), start=1):
        assert event_trace(turn.custom) == expected_trace(intent, stage), f"turn {number}"
        assert turn.custom[4]["text"] == turn.values["answer"] == turn.visible
    assert turns[-1].values["intent_history"] == [intent for _, intent, *_ in SEED_TURNS]


async def test_raw_stream_has_tool_calls_then_the_answer_step_with_usage(client: LangGraphClient) -> None:
    """ChatOpenAI's chunks (role delta, content deltas, tool-call deltas, usage) through flow 2:
    the tool steps are forced tool calls, the answer step's text is tagged and visible as it comes."""
    thread_id = (await client.threads.create())["thread_id"]
    parts = [(p.event, p.data) async for p in open_run_stream(client, thread_id, "campus_supervisor", input=_user(LIBRARY_KO))]
    chunks = [d[0] for e, d in parts if e.startswith("messages") and d[0]["type"] == "AIMessageChunk"]
    assert "".join(c["content"] for c in chunks) == LIBRARY_ANSWER_KO
    assert "".join(visible_text(parts)) == LIBRARY_ANSWER_KO
    called = [c["tool_call_chunks"][0]["name"] for c in chunks if c["tool_call_chunks"] and c["tool_call_chunks"][0].get("name")]
    assert called == ["transfer_to_library", "seat_status", "ready_to_answer"]
    assert any(c.get("usage_metadata") for c in chunks), "the usage chunk reached the stream"
    ai = [d for e, d in parts if e.startswith("messages") and d[0]["type"] == "AIMessageChunk"]
    answer_tags = {tuple(metadata.get("tags") or ()) for chunk, metadata in ai if chunk["content"]}
    assert answer_tags == {(ANSWER_TAG,)}
    tags = {tuple(d[1].get("tags") or ()) for e, d in parts if e.startswith("messages|supervisor")}
    assert ("supervisor_llm",) in tags


async def test_tags_copied_from_a_doubly_tagged_history_are_stored_once(client: LangGraphClient) -> None:
    """OpenAI splits ``[LG 팬] [LG 팬]: `` across deltas; the stored answer still has one tag."""
    thread_id = (await client.threads.create(graph_id="fan_room"))["thread_id"]
    seeded = [
        {"role": "user", "content": "LG 어때?"},
        {"role": "assistant", "content": "[LG 팬] [LG 팬]: 잠실의 LG!", "id": "seeded"},
    ]
    await client.threads.update_state(thread_id, {"messages": seeded}, as_node="attribute")
    (turn,) = await server_turns(client, "fan_room", [({"input": _user("삼성은?")}, {"team_name": "삼성"})], thread_id)
    values = (await client.threads.get_state(thread_id))["values"]
    assert values["draft"].startswith("[LG 팬] [LG 팬]: "), values["draft"]
    assert values["messages"][-1]["content"] == f"[삼성 팬] {values['answer']}"
    assert len(TAG.findall(values["messages"][-1]["content"])) == 1
    assert turn.visible == values["answer"] and not TAG.search(turn.visible)


@pytest.mark.parametrize(
    ("question", "answer"),
    [pytest.param(LIBRARY_KO, LIBRARY_ANSWER_KO, id="routed"), pytest.param(CAFETERIA_KO, MENU_KO, id="direct")],
)
async def test_sse_route_serves_the_same_visible_text(openai_server: DevServer, question: str, answer: str) -> None:
    async with httpx.AsyncClient(base_url=openai_server.url, timeout=60) as http:
        response = await http.post("/visible/campus_supervisor/stream", json={"message": question})
    assert response.status_code == 200
    events = []
    for block in response.text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    assert events[-1][0] == "done"
    assert {name for name, _ in events[:-1]} == {"token"}
    assert "".join(data["text"] for _, data in events[:-1]) == answer
