"""Ownership on a real `langgraph dev` in token mode (server/auth.py).

One server for the module, started with ``AUTH_TOKENS`` (alice, bob, an operator)
in a working folder of its own. User B must get 404 or 403, never the data, for
everything of user A's thread.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook import cli
from migrations_playbook.staging.server import DevServer
from tests.integration import token_mode
from tests.integration.refusal import refusal, thread_snapshot
from tests.integration.token_mode import TOKENS

REFUND = {"messages": [{"role": "user", "content": "Please refund the double charge, it is urgent"}]}
APPROVE = {"resume": {"kind": "plan_approval", "answer": "approve"}}


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with token_mode.token_server(tmp_path_factory.mktemp("auth-server")) as server:
        yield server


@pytest.fixture
async def clients(token_server: DevServer) -> AsyncIterator[Callable[..., LangGraphClient]]:
    async for make in token_mode.token_clients(token_server):
        yield make


async def _alices_paused_thread(alice: LangGraphClient) -> str:
    thread_id = (await alice.threads.create(metadata={"case": "ownership"}))["thread_id"]
    await alice.runs.wait(thread_id, "ticket_triage", input=REFUND)
    return thread_id


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-token"),
        pytest.param({"Authorization": "Bearer tok-mallory"}, id="unknown-token"),
        pytest.param({"Authorization": "tok-alice"}, id="no-bearer-scheme"),
    ],
)
async def test_a_request_without_a_valid_token_is_refused(token_server: DevServer, headers: dict) -> None:
    async with httpx.AsyncClient(base_url=token_server.url, headers=headers) as http:
        response = await http.post("/threads/search", json={})
        created = await http.post("/threads", json={})
    assert response.status_code == created.status_code == 401
    assert "bearer token" in response.json()["detail"]


async def test_health_check_needs_no_token(token_server: DevServer) -> None:
    async with httpx.AsyncClient(base_url=token_server.url) as http:
        assert (await http.get("/ok")).status_code == 200


async def test_a_thread_is_stamped_with_its_creator_whatever_the_client_claims(clients: Callable[..., LangGraphClient]) -> None:
    alice = clients("alice")
    thread = await alice.threads.create(metadata={"owner": "bob"})
    assert thread["metadata"]["owner"] == "alice"


async def test_a_thread_created_by_a_run_is_owned_and_the_run_is_tagged(clients: Callable[..., LangGraphClient]) -> None:
    alice = clients("alice")
    thread_id = str(uuid.uuid4())
    run = await alice.runs.create(
        thread_id,
        "recycling_guide",
        input={"messages": [{"role": "user", "content": "캔은?"}]},
        if_not_exists="create",
        metadata={"owner": "bob"},
    )
    await alice.runs.join(thread_id, run["run_id"])
    assert (await alice.threads.get(thread_id))["metadata"]["owner"] == "alice"
    metadata = (await alice.runs.get(thread_id, run["run_id"]))["metadata"]
    assert metadata["owner"] == "alice"
    assert metadata["graph_id"] == "recycling_guide" and metadata["flow_version"] == 1
    assert metadata["code_version"].startswith("versioned-graphs-")


READS: dict[str, Callable[[LangGraphClient, str], Any]] = {
    "get": lambda c, t: c.threads.get(t),
    "state": lambda c, t: c.threads.get_state(t),
    "history": lambda c, t: c.threads.get_history(t),
    "runs-list": lambda c, t: c.runs.list(t),
    "copy": lambda c, t: c.threads.copy(t),
}
WRITES: dict[str, Callable[[LangGraphClient, str], Any]] = {
    "resume": lambda c, t: c.runs.wait(t, "ticket_triage", command=APPROVE),
    "runs-create": lambda c, t: c.runs.create(t, "ticket_triage", input=REFUND),
    "runs-create-if-not-exists": lambda c, t: c.runs.create(t, "ticket_triage", input=REFUND, if_not_exists="create"),
    "update-state": lambda c, t: c.threads.update_state(t, {"messages": [{"role": "user", "content": "mine now"}]}),
    "patch-metadata": lambda c, t: c.threads.update(t, metadata={"case": "stolen"}),
    "delete": lambda c, t: c.threads.delete(t),
}


@pytest.mark.parametrize("name", [*READS, *WRITES])
async def test_another_user_gets_not_found_for_everything_of_a_thread(clients: Callable[..., LangGraphClient], name: str) -> None:
    alice, bob = clients("alice"), clients("bob")
    thread_id = await _alices_paused_thread(alice)
    before = await thread_snapshot(alice, thread_id)
    status, message = await refusal((READS | WRITES)[name](bob, thread_id))
    # copy answers 409 for a thread it cannot find (the server's own convention)
    assert status in ((409,) if name == "copy" else (403, 404)), (status, message)
    assert "double charge" not in message and "plan_approval" not in message
    assert await thread_snapshot(alice, thread_id) == before


async def test_search_and_count_show_each_user_only_their_threads(clients: Callable[..., LangGraphClient]) -> None:
    alice, bob = clients("alice"), clients("bob")
    thread_id = await _alices_paused_thread(alice)
    assert thread_id in [t["thread_id"] for t in await alice.threads.search(status="interrupted", limit=100)]
    for query in ({}, {"status": "interrupted"}, {"metadata": {"owner": "alice"}}, {"metadata": {"case": "ownership"}}):
        assert thread_id not in [t["thread_id"] for t in await bob.threads.search(limit=100, **query)]
    assert await bob.threads.count(metadata={"owner": "alice"}) == 0


async def test_the_owner_cannot_hand_a_thread_to_someone_else(clients: Callable[..., LangGraphClient]) -> None:
    alice = clients("alice")
    thread_id = (await alice.threads.create())["thread_id"]
    status, message = await refusal(alice.threads.update(thread_id, metadata={"owner": "bob"}))
    assert (status, message) == (403, "a thread's owner cannot be changed")


async def test_an_operator_reads_every_thread_but_runs_on_none_of_them(clients: Callable[..., LangGraphClient]) -> None:
    alice, ops = clients("alice"), clients("ops")
    thread_id = await _alices_paused_thread(alice)
    assert (await ops.threads.get_state(thread_id))["next"] == ["triage"]
    assert thread_id in [t["thread_id"] for t in await ops.threads.search(status="interrupted", limit=1000)]
    status, _ = await refusal(ops.runs.wait(thread_id, "ticket_triage", command=APPROVE))
    assert status == 404
    assert (await alice.threads.get(thread_id))["status"] == "interrupted"


async def test_the_gate_scans_every_owners_threads_with_an_operator_token(
    token_server: DevServer, clients: Callable[..., LangGraphClient], capsys: pytest.CaptureFixture[str]
) -> None:
    await _alices_paused_thread(clients("alice"))
    argv = ["inflight", "--live", token_server.url, "--graph", "ticket_triage", "--format", "json"]
    assert await asyncio.to_thread(cli.main, [*argv, "--header", "Authorization: Bearer tok-ops"]) == cli.EXIT_PASS
    seen_by_ops = sum(row["threads"] for row in json.loads(capsys.readouterr().out)["graphs"]["ticket_triage"])
    assert await asyncio.to_thread(cli.main, [*argv, "--header", "Authorization: Bearer tok-bob"]) == cli.EXIT_PASS
    seen_by_bob = sum(row["threads"] for row in json.loads(capsys.readouterr().out)["graphs"]["ticket_triage"])
    assert seen_by_ops >= 1 and seen_by_bob == 0


async def test_studio_sees_only_what_studio_made(token_server: DevServer, clients: Callable[..., LangGraphClient]) -> None:
    """`x-auth-scheme: langsmith` (what Studio sends) is accepted by `langgraph dev` without a
    token, so in token mode it is an owner of its own and sees nobody else's thread."""
    thread_id = await _alices_paused_thread(clients("alice"))
    studio = clients(None, **{"x-auth-scheme": "langsmith"})
    assert thread_id not in [t["thread_id"] for t in await studio.threads.search(limit=1000)]
    assert (await refusal(studio.threads.get_state(thread_id)))[0] == 404
    mine = await studio.threads.create()
    assert mine["metadata"]["owner"].startswith("studio:")


async def test_assistants_of_the_graphs_are_shared_and_a_users_assistant_is_private(
    clients: Callable[..., LangGraphClient],
) -> None:
    alice, bob = clients("alice"), clients("bob")
    graph_ids = {a["graph_id"] for a in await bob.assistants.search(limit=100)}
    assert {"ticket_triage", "fan_room", "recycling_guide", "campus_supervisor"} <= graph_ids
    private = await alice.assistants.create("ticket_triage", name="alice-triage")
    assert private["metadata"]["owner"] == "alice"
    assert private["assistant_id"] not in [a["assistant_id"] for a in await bob.assistants.search(limit=100)]
    assert (await refusal(bob.assistants.get(private["assistant_id"])))[0] in (403, 404)
    thread_id = (await bob.threads.create())["thread_id"]
    assert (await refusal(bob.runs.create(thread_id, private["assistant_id"], input=REFUND)))[0] == 404
    assert (await refusal(bob.assistants.update(private["assistant_id"], name="bobs")))[0] in (403, 404)


async def test_an_operator_reads_every_thread_but_not_another_users_assistants(
    clients: Callable[..., LangGraphClient],
) -> None:
    """Operators read threads (for the gate), not assistants: an assistant is its creator's (found by the API fuzz)."""
    alice, ops = clients("alice"), clients("ops")
    private = await alice.assistants.create("ticket_triage", name="alice-private")
    listed = [a["assistant_id"] for a in await ops.assistants.search(limit=1000)]
    assert private["assistant_id"] not in listed
    assert {"ticket_triage", "recycling_guide"} <= {a["graph_id"] for a in await ops.assistants.search(limit=1000)}
    assert (await refusal(ops.assistants.get(private["assistant_id"])))[0] in (403, 404)


async def test_the_store_is_namespaced_under_the_caller(clients: Callable[..., LangGraphClient]) -> None:
    alice, bob = clients("alice"), clients("bob")
    await alice.store.put_item(("notes",), "k", {"v": 1})
    assert (await alice.store.get_item(("notes",), "k"))["value"] == {"v": 1}
    assert await bob.store.get_item(("notes",), "k") is None, "bob's ('notes',) is ('bob', 'notes')"
    assert (await alice.store.get_item(("alice", "notes"), "k"))["value"] == {"v": 1}


async def test_crons_are_not_offered_but_listing_them_works(clients: Callable[..., LangGraphClient]) -> None:
    alice = clients("alice")
    status, message = await refusal(alice.crons.create("ticket_triage", schedule="* * * * *", input=REFUND))
    assert (status, message) == (403, "crons are not offered by this deployment")
    assert await alice.crons.search() == []


async def test_another_user_cannot_cancel_a_run(clients: Callable[..., LangGraphClient]) -> None:
    alice, bob = clients("alice"), clients("bob")
    thread_id = await _alices_paused_thread(alice)
    queued = await alice.runs.create(thread_id, "ticket_triage", command=APPROVE, after_seconds=30)
    try:
        status, _ = await refusal(bob.runs.cancel(thread_id, queued["run_id"]))
        assert status == 404
        assert (await alice.runs.get(thread_id, queued["run_id"]))["status"] == "pending"
    finally:
        await alice.runs.cancel(thread_id, queued["run_id"], wait=True)


async def test_dev_mode_needs_no_token_stamps_the_dev_user_and_lets_studio_see_everything(dev_server: DevServer) -> None:
    """The session server runs the repo's langgraph.json without AUTH_TOKENS, as `make run` does."""
    anonymous = get_client(url=dev_server.url, api_key=None)
    studio = get_client(url=dev_server.url, api_key=None, headers={"x-auth-scheme": "langsmith"})
    try:
        thread = await anonymous.threads.create(metadata={"owner": "someone-else"})
        assert thread["metadata"]["owner"] == "dev"
        await anonymous.runs.wait(thread["thread_id"], "ticket_triage", input=REFUND)
        assert (await studio.threads.get_state(thread["thread_id"]))["next"] == ["triage"]
        studio_thread = await studio.threads.create()
        assert studio_thread["metadata"]["owner"] == "dev"
        assert (await anonymous.threads.get(studio_thread["thread_id"]))["thread_id"] == studio_thread["thread_id"]
    finally:
        await anonymous.aclose()
        await studio.aclose()


async def _sse(url: str, body: dict, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(timeout=60) as http:
        return await http.post(f"{url}/visible/fan_room/stream", json=body, headers=headers)


async def test_the_visible_text_route_applies_the_same_ownership(
    token_server: DevServer, clients: Callable[..., LangGraphClient]
) -> None:
    """The SSE route runs through the in-process client, which bypasses auth: it must check the caller itself."""
    alice = clients("alice")
    body = {"message": "LG 트윈스 역사 알려줘", "context": {"team_name": "LG"}}
    anonymous = await _sse(token_server.url, body, None)
    assert anonymous.status_code == 401

    mine = await _sse(token_server.url, body, TOKENS["alice"])
    assert mine.status_code == 200 and "event: done" in mine.text
    thread_id = json.loads(mine.text.split("event: done\ndata: ")[1].split("\n")[0])["thread_id"]
    assert (await alice.threads.get(thread_id))["metadata"]["owner"] == "alice"

    before = await thread_snapshot(alice, thread_id)
    stolen = await _sse(token_server.url, {**body, "thread_id": thread_id}, TOKENS["bob"])
    assert stolen.status_code == 404
    assert "LG" not in stolen.text
    assert await thread_snapshot(alice, thread_id) == before
