"""Issue 12, defects 7 to 10, as a hostile client tries them on a real `langgraph dev`.

Each test names the defect it guards. Dev-mode tests use the session server
(`dev_server`/`client`, tests/integration/conftest.py); the token-mode tests share
one server of this module, started with ``AUTH_TOKENS`` (alice, bob, an operator).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.integration import token_mode
from tests.integration.refusal import refusal
from tests.integration.token_mode import TOKENS

STUDIO = {"x-auth-scheme": "langsmith"}


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with token_mode.token_server(tmp_path_factory.mktemp("hostile-auth")) as server:
        yield server


@pytest.fixture
async def clients(token_server: DevServer) -> AsyncIterator[Callable[..., LangGraphClient]]:
    async for make in token_mode.token_clients(token_server):
        yield make


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


# -- 7. ownership holes ---------------------------------------------------------------


async def test_7_an_assistant_cannot_claim_to_be_a_system_assistant(clients: Callable[..., LangGraphClient]) -> None:
    alice, bob = clients("alice"), clients("bob")
    status, message = await refusal(alice.assistants.create("ticket_triage", name="fake", metadata={"created_by": "system"}))
    assert status == 403 and "leave it out" in message
    assert "fake" not in [a["name"] for a in await bob.assistants.search(limit=100)]
    mine = await alice.assistants.create("ticket_triage", name="alice-own")
    status, _ = await refusal(alice.assistants.update(mine["assistant_id"], metadata={"created_by": "system"}))
    assert status == 403
    assert mine["assistant_id"] not in [a["assistant_id"] for a in await bob.assistants.search(limit=100)]


async def test_7_the_owner_cannot_hand_an_assistant_to_someone_else(clients: Callable[..., LangGraphClient]) -> None:
    alice, bob = clients("alice"), clients("bob")
    mine = await alice.assistants.create("recycling_guide", name="alice-guide")
    status, message = await refusal(alice.assistants.update(mine["assistant_id"], metadata={"owner": "bob"}))
    assert (status, message) == (403, "an assistant's owner cannot be changed")
    assert (await alice.assistants.get(mine["assistant_id"]))["metadata"]["owner"] == "alice"
    assert (await refusal(bob.assistants.get(mine["assistant_id"])))[0] in (403, 404)
    renamed = await alice.assistants.update(mine["assistant_id"], metadata={"team": "ops"})  # other metadata: fine
    assert renamed["metadata"] == {"owner": "alice", "team": "ops"}


async def test_7_an_operator_cannot_copy_another_users_thread(clients: Callable[..., LangGraphClient]) -> None:
    alice, ops = clients("alice"), clients("ops")
    thread_id = (await alice.threads.create(metadata={"case": "copy"}))["thread_id"]
    assert (await ops.threads.get(thread_id))["thread_id"] == thread_id  # operators read it
    status, message = await refusal(ops.threads.copy(thread_id))
    assert (status, message) == (409, "Conflict")  # the server's own answer for a thread it cannot find
    assert await alice.threads.count(metadata={"case": "copy"}) == 1
    own = (await ops.threads.create())["thread_id"]
    assert (await ops.threads.copy(own))["metadata"]["owner"] == "ops"
    assert (await alice.threads.copy(thread_id))["metadata"]["owner"] == "alice"


ROUTES = [
    # path, without a token, with Studio's header, with a valid token
    pytest.param("/ok", 200, 200, 200, id="ok-open"),
    pytest.param("/info", 401, 200, 200, id="info"),
    pytest.param("/docs", 401, 200, 200, id="docs"),
    pytest.param("/openapi.json", 401, 200, 200, id="openapi"),
    pytest.param("/metrics", 401, 401, 200, id="metrics"),
    pytest.param("/playbook/contract", 401, 401, 200, id="playbook-contract"),
    pytest.param(f"/internal/debug/thread/{uuid.uuid4()}", 403, 403, 403, id="internal-debug"),
]


@pytest.mark.parametrize(("path", "anonymous", "studio", "token"), ROUTES)
async def test_7_in_token_mode_only_ok_is_open(
    token_server: DevServer, path: str, anonymous: int, studio: int, token: int
) -> None:
    async with httpx.AsyncClient(base_url=token_server.url) as http:
        got = [
            (await http.get(path)).status_code,
            (await http.get(path, headers=STUDIO)).status_code,
            (await http.get(path, headers={"Authorization": f"Bearer {TOKENS['bob']}"})).status_code,
        ]
    assert got == [anonymous, studio, token]


async def test_7_no_one_can_truncate_the_server_in_token_mode(
    token_server: DevServer, clients: Callable[..., LangGraphClient]
) -> None:
    """`langgraph dev`'s inmem runtime serves POST /internal/truncate, which wipes every user's data, without auth."""
    alice = clients("alice")
    thread_id = (await alice.threads.create())["thread_id"]
    async with httpx.AsyncClient(base_url=token_server.url) as http:
        for headers in ({}, STUDIO, {"Authorization": f"Bearer {TOKENS['ops']}"}):
            assert (await http.post("/internal/truncate", headers=headers)).status_code == 403
    assert (await alice.threads.get(thread_id))["thread_id"] == thread_id


# -- 8. message ids --------------------------------------------------------------------


@pytest.mark.parametrize(("graph", "context"), [("fan_room", {"team_name": "LG"}), ("recycling_guide", None)])
async def test_8_a_plain_string_message_keeps_one_id_on_every_read(
    client: LangGraphClient, graph: str, context: dict | None
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, graph, input={"messages": ["캔은 어떻게 버려?"]}, context=context)
    reads = [[m["id"] for m in (await client.threads.get_state(thread_id))["values"]["messages"]] for _ in range(3)]
    head = (await client.threads.get_history(thread_id, limit=1))[0]
    reads.append([m["id"] for m in head["values"]["messages"]])
    assert len(reads[0]) == 2 and all(ids == reads[0] for ids in reads), reads


# -- 9. smaller holes ------------------------------------------------------------------


async def test_9_reading_or_deleting_a_missing_store_key_creates_no_namespace(client: LangGraphClient) -> None:
    label = f"absent-{uuid.uuid4().hex[:8]}"
    assert await client.store.get_item((label,), "nothing") is None
    await client.store.delete_item((label, "deeper"), "nothing")
    listed = (await client.store.list_namespaces(limit=1000))["namespaces"]
    assert not [ns for ns in listed if label in ns], listed
    await client.store.put_item((label,), "k", {"v": 1})
    assert (await client.store.get_item((label,), "k"))["value"] == {"v": 1}
    assert await client.store.get_item((label,), "other") is None


async def test_9_creating_a_thread_with_another_users_id_does_not_say_it_exists(clients: Callable[..., LangGraphClient]) -> None:
    alice, bob = clients("alice"), clients("bob")
    thread_id = (await alice.threads.create())["thread_id"]
    for if_exists in ("raise", "do_nothing"):
        status, message = await refusal(bob.threads.create(thread_id=thread_id, if_exists=if_exists))
        assert status == 409 and "exists" not in message and "leave thread_id out" in message, message
    assert (await alice.threads.get(thread_id))["metadata"]["owner"] == "alice"
    fresh = str(uuid.uuid4())
    assert (await bob.threads.create(thread_id=fresh))["thread_id"] == fresh  # a free id still works


async def test_9_creating_an_assistant_with_another_users_id_does_not_say_it_exists(
    clients: Callable[..., LangGraphClient],
) -> None:
    """Issue 37: Bob's ``POST /assistants`` with Alice's assistant id answered 409 "Assistant <id>
    already exists" while his GET of it is a 404: the neutral 409 of threads, for assistants."""
    alice, bob, ops = clients("alice"), clients("bob"), clients("ops")
    mine = (await alice.assistants.create("recycling_guide", name="alice-taken"))["assistant_id"]
    system = (await bob.assistants.search(graph_id="recycling_guide", metadata={"created_by": "system"}))[0]["assistant_id"]
    for caller, taken in ((bob, mine), (ops, mine), (bob, system)):
        for if_exists in ("raise", "do_nothing"):
            status, message = await refusal(
                caller.assistants.create("recycling_guide", assistant_id=taken, if_exists=if_exists, name="grab")
            )
            assert status == 409 and "exists" not in message and "leave assistant_id out" in message, message
    status, _ = await refusal(bob.assistants.get(mine))
    assert status == 404
    assert (await alice.assistants.get(mine))["name"] == "alice-taken"
    assert "grab" not in [a["name"] for a in await bob.assistants.search(limit=100)]
    again = await alice.assistants.create("recycling_guide", assistant_id=mine, if_exists="do_nothing")
    assert again["assistant_id"] == mine  # the owner's own id: the server's answer, as before
    fresh = str(uuid.uuid4())
    assert (await bob.assistants.create("recycling_guide", assistant_id=fresh))["assistant_id"] == fresh


@pytest.mark.parametrize(
    "query",
    [
        pytest.param({"limit": -1}, id="negative-limit"),
        pytest.param({"limit": 0}, id="zero-limit"),
        pytest.param({"limit": "ten"}, id="limit-not-an-integer"),
        pytest.param({"offset": -1}, id="negative-offset"),
    ],
)
async def test_9_runs_list_refuses_a_limit_or_offset_it_cannot_page_with(
    dev_server: DevServer, client: LangGraphClient, query: dict
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "recycling_guide", input=_user("캔은?"))
    async with httpx.AsyncClient(base_url=dev_server.url) as http:
        refused = await http.get(f"/threads/{thread_id}/runs", params=query)
        listed = await http.get(f"/threads/{thread_id}/runs", params={"limit": 10})
    assert refused.status_code == 422 and next(iter(query)) in refused.json()["detail"]
    assert len(listed.json()) == 1


async def test_9_visible_route_with_an_unknown_team_leaves_no_thread(dev_server: DevServer, client: LangGraphClient) -> None:
    before = await client.threads.count()
    async with httpx.AsyncClient(base_url=dev_server.url, timeout=60) as http:
        response = await http.post("/visible/fan_room/stream", json={"message": "안녕", "context": {"team_name": "Yankees"}})
    assert response.status_code == 422
    assert "context.team_name must be one of" in response.json()["message"]
    assert await client.threads.count() == before


async def test_9_everyone_sending_studios_header_is_one_shared_owner(clients: Callable[..., LangGraphClient]) -> None:
    """Documented (docs/auth.md): the header carries no identity, so every
    Studio caller is the one owner ``studio:langgraph-studio-user``; no token user's thread."""
    alice = clients("alice")
    first, second = clients(None, **STUDIO), clients(None, **STUDIO)
    made = await first.threads.create()
    assert made["metadata"]["owner"] == "studio:langgraph-studio-user"
    assert (await second.threads.get(made["thread_id"]))["thread_id"] == made["thread_id"]
    assert (await refusal(alice.threads.get(made["thread_id"])))[0] == 404
    alices = (await alice.threads.create())["thread_id"]
    assert (await refusal(second.threads.get(alices)))[0] == 404


# -- 10. wrong answers -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said", "wrong"),
    [
        pytest.param("스터디룸 A 오후 3시 예약해줘", "15시", "3시는", id="ko-ohu"),
        pytest.param("Book study room A at 3pm", "15:00", "3:00 cannot", id="en-pm"),
        pytest.param("스터디룸 B 오후 12시 예약해줘", "12시", "0시", id="ko-noon"),
        pytest.param("Book study room B at 12am", "0:00 cannot be booked", "12:00", id="en-midnight"),
    ],
)
async def test_10_a_12_hour_time_is_booked_at_the_hour_the_user_meant(
    client: LangGraphClient, text: str, said: str, wrong: str
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(thread_id, "campus_supervisor", input=_user(text))
    reply = out["messages"][-1]["content"]
    assert said in reply and wrong not in reply, reply


@pytest.mark.parametrize(
    ("text", "foreign"),
    [
        pytest.param("요금이 두 번 청구됐어요. 환불해 주세요", re.compile(r"[A-Za-z]"), id="ko"),
        pytest.param("I was charged twice, please refund me", re.compile(r"[\uac00-\ud7a3]"), id="en"),
    ],
)
async def test_10_the_ticket_reply_is_in_the_customers_language_throughout(
    client: LangGraphClient, text: str, foreign: re.Pattern[str]
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "ticket_triage", input=_user(text))
    out = await client.runs.wait(thread_id, "ticket_triage", command={"resume": {"kind": "plan_approval", "answer": "approve"}})
    assert out["response"] and not foreign.search(out["response"]), out["response"]
