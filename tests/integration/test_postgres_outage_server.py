"""PostgreSQL stopped, or hung, under a running server (issue 37, item 6).

A real `langgraph dev` with the repo's auth, routes and guard on the PostgreSQL checkpointer
(`server.postgres_checkpointer`, as tests/integration/test_load_postgres_server.py serves it),
with a stored thread of each kind: a ticket paused at its approval and a chat of a few turns.
Then PostgreSQL goes away, and every route that reaches the checkpoint store must answer 503
with ``Retry-After`` and a body that says the store is unavailable, within `BOUND_S`
(a correctness bound, not a benchmark: the default timeouts give about 5 s), and change
nothing. The routes that do not reach the store keep answering (thread records and search,
run lists, `/store`, stateless runs). A run accepted before the outage that starts during it ends
with status ``error`` and the same message. Once PostgreSQL is back the same server serves
again, without a restart: the ticket resumes, and its approval runs exactly once; the failed
run's turn, sent again, is stored once.

* stopped: ``pg_ctl stop -m fast`` (connections refused; the pool's connections closed by the
  server), then started again on the same data;
* hung: every process of the cluster SIGSTOPped (connections accepted by the kernel, nothing
  answers), then SIGCONTed.

Before issue 37 every such request was a bare 500 ``Internal Server Error``, the reads after 30 s.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench import load_run
from migrations_playbook.staging.server import DevServer
from tests.postgres_server import PostgresServer, find_bindir

BOUND_S = 15.0
"""The longest a refusal may take (the default timeouts: about 5 s; 8 s when PostgreSQL hangs)."""
RECOVERY_S = 30.0
"""The longest the server may take to serve again once PostgreSQL is back (measured: under 1 s)."""
UNAVAILABLE = "the checkpoint store (PostgreSQL) is unavailable"
TICKET = "Please refund invoice 37, charged twice"
CHAT = ("페트병은 어떻게 버려요?", "라벨은요?", "뚜껑은요?")
REFUSED_TURN = "캔은 어떻게 버려요?"
LATE_TURN = "우유팩은요?"
LATE_S = 3
"""A run queued this many seconds ahead starts after PostgreSQL has gone (stopping it takes well under a second)."""


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


# -- PostgreSQL: stop and start, freeze and thaw ---------------------------------------------------


def _as_owner(postgres: PostgresServer, *argv: str) -> list[str]:
    """``argv`` run as the cluster's owner (tests/postgres_server.py makes it `postgres` under root)."""
    assert postgres.root is not None
    owner = pwd.getpwuid((postgres.root / "data").stat().st_uid).pw_name
    return ["runuser", "-u", owner, "--", *argv] if os.geteuid() == 0 and owner != "root" else list(argv)


def _pg_ctl(postgres: PostgresServer, *args: str) -> None:
    assert postgres.root is not None and postgres.log is not None
    command = _as_owner(postgres, str(find_bindir() / "pg_ctl"), "-D", str(postgres.root / "data"), *args)
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)


def stop(postgres: PostgresServer) -> None:
    _pg_ctl(postgres, "-m", "fast", "-w", "-t", "60", "stop")


def start_again(postgres: PostgresServer) -> None:
    """Start the stopped cluster with the options it last ran with (``restart`` reads them from
    ``postmaster.opts``; with no server running it starts one)."""
    assert postgres.log is not None
    _pg_ctl(postgres, "-l", str(postgres.log), "-w", "-t", "60", "restart")


def cluster_pids(postgres: PostgresServer) -> list[int]:
    """The postmaster and its children (backends, background workers), from /proc."""
    assert postgres.root is not None
    postmaster = int((postgres.root / "data" / "postmaster.pid").read_text().split()[0])
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == postmaster:
                children.append(int(entry.name))
    return [postmaster, *children]


def signal_all(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            continue


# -- the server and its stored threads ------------------------------------------------------------


@pytest.fixture(scope="module")
def server(postgres: PostgresServer) -> Iterator[DevServer]:
    """The repo's langgraph.json on PostgreSQL, with the default timeouts (logs in a temporary folder)."""
    with load_run.serve("postgres", postgres_uri=postgres.url) as served:
        yield served


def stored_threads(client: httpx.Client) -> dict[str, Any]:
    """A ticket paused at its approval and a chat of `CHAT`'s turns (the guard has stamped it:
    its next run reads no state before it is created)."""
    ticket = client.post("/threads", json={}).json()["thread_id"]
    paused = client.post(f"/threads/{ticket}/runs/wait", json={"assistant_id": "ticket_triage", "input": _user(TICKET)})
    request = paused.json()["__interrupt__"][0]["value"]
    chat = client.post("/threads", json={}).json()["thread_id"]
    for text in CHAT:
        turn = client.post(f"/threads/{chat}/runs/wait", json={"assistant_id": "recycling_guide", "input": _user(text)})
        turn.raise_for_status()
    resume = {"kind": request["kind"], "answer": "approve"}
    checkpoint = client.get(f"/threads/{ticket}/state").json()["checkpoint"]["checkpoint_id"]
    late = client.post("/threads", json={}).json()["thread_id"]
    first = client.post(f"/threads/{late}/runs/wait", json={"assistant_id": "recycling_guide", "input": _user(CHAT[0])})
    first.raise_for_status()
    return {"ticket": ticket, "chat": chat, "late": late, "resume": resume, "checkpoint": checkpoint}


def queue_late_run(client: httpx.Client, threads: dict[str, Any]) -> str:
    """A turn accepted while PostgreSQL is up, that starts (`LATE_S` later) once it is gone."""
    body = {"assistant_id": "recycling_guide", "input": _user(LATE_TURN), "after_seconds": LATE_S}
    queued = client.post(f"/threads/{threads['late']}/runs", json=body)
    queued.raise_for_status()
    return str(queued.json()["run_id"])


def failed_run(client: httpx.Client, thread_id: str, run_id: str) -> tuple[str, Any]:
    """The run's status once it has ended (during the outage: within `BOUND_S` of its start), and its join."""
    deadline = time.monotonic() + LATE_S + BOUND_S * 2
    while (status := client.get(f"/threads/{thread_id}/runs/{run_id}").json()["status"]) in ("pending", "running"):
        assert time.monotonic() < deadline, f"the late run is still {status}"
        time.sleep(0.5)
    return status, client.get(f"/threads/{thread_id}/runs/{run_id}/join").json()


def refused_requests(threads: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    """(id, method, path, body): every route that reaches the checkpoint store, on the stored threads."""
    ticket, chat, resume = threads["ticket"], threads["chat"], {"resume": threads["resume"]}
    turn = _user(REFUSED_TURN)
    first_state = [{"updates": [{"values": turn, "as_node": "__input__"}]}]
    seeded = {"metadata": {"graph_id": "recycling_guide"}, "supersteps": first_state}
    return [
        ("get_state", "GET", f"/threads/{ticket}/state", None),
        ("get_state_at", "GET", f"/threads/{ticket}/state/{threads['checkpoint']}", None),
        ("history", "POST", f"/threads/{ticket}/history", {"limit": 10}),
        ("update_state", "POST", f"/threads/{ticket}/state", {"values": {"response": "overwritten"}}),
        ("copy", "POST", f"/threads/{ticket}/copy", None),
        ("runs.create resume", "POST", f"/threads/{ticket}/runs", {"assistant_id": "ticket_triage", "command": resume}),
        ("runs.wait resume", "POST", f"/threads/{ticket}/runs/wait", {"assistant_id": "ticket_triage", "command": resume}),
        ("runs.stream resume", "POST", f"/threads/{ticket}/runs/stream", {"assistant_id": "ticket_triage", "command": resume}),
        ("runs.wait chat", "POST", f"/threads/{chat}/runs/wait", {"assistant_id": "recycling_guide", "input": turn}),
        ("runs.stream chat", "POST", f"/threads/{chat}/runs/stream", {"assistant_id": "recycling_guide", "input": turn}),
        ("visible stream", "POST", "/visible/recycling_guide/stream", {"thread_id": chat, "message": REFUSED_TURN}),
        ("visible stream, new thread", "POST", "/visible/recycling_guide/stream", {"message": REFUSED_TURN}),
        ("threads.create with supersteps", "POST", "/threads", seeded),
        ("threads.delete", "DELETE", f"/threads/{chat}", None),
    ]


def records(client: httpx.Client, threads: dict[str, Any]) -> dict[str, Any]:
    """What the server keeps outside PostgreSQL (its thread and run records): readable during the outage."""
    found = client.post("/threads/search", json={"limit": 100}).json()
    return {
        "threads": sorted(t["thread_id"] for t in found),
        **{
            name: {
                "status": client.get(f"/threads/{threads[name]}").json()["status"],
                "runs": [(r["run_id"], r["status"]) for r in client.get(f"/threads/{threads[name]}/runs").json()],
            }
            for name in ("ticket", "chat")
        },
    }


def stored_state(client: httpx.Client, threads: dict[str, Any]) -> dict[str, Any]:
    """The threads' state in PostgreSQL: head checkpoint, history and values."""
    snapshot = {}
    for name in ("ticket", "chat"):
        state = client.get(f"/threads/{threads[name]}/state").json()
        history = client.post(f"/threads/{threads[name]}/history", json={"limit": 100}).json()
        snapshot[name] = {
            "checkpoint": state["checkpoint"]["checkpoint_id"],
            "values": state["values"],
            "history": [h["checkpoint"]["checkpoint_id"] for h in history],
        }
    return snapshot


def answers_during_outage(url: str, requests: list[tuple[str, str, str, Any]]) -> dict[str, dict[str, Any]]:
    """Each request sent at once (the bound holds for concurrent requests too), on a fresh
    connection: status, the body's error and detail, Retry-After, seconds taken."""

    async def one(method: str, path: str, body: Any) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=url, timeout=BOUND_S * 2) as client:
            started = time.monotonic()
            try:  # a whole answer within twice the bound (a stream's heartbeats do not count as one)
                response = await asyncio.wait_for(client.request(method, path, json=body), BOUND_S * 2)
            except (httpx.TransportError, TimeoutError) as exc:  # no answer in time, or the connection dropped
                return {"status": None, "error": type(exc).__name__, "seconds": round(time.monotonic() - started, 1)}
            took = round(time.monotonic() - started, 1)
        try:
            payload = response.json()
        except ValueError:
            payload = {"text": response.text[:200]}
        payload = payload if isinstance(payload, dict) else {"body": str(payload)[:200]}
        return {
            "status": response.status_code,
            "error": payload.get("error"),
            "detail": str(payload.get("detail", payload))[:200],
            "retry_after": response.headers.get("retry-after"),
            "seconds": took,
        }

    async def every() -> list[dict[str, Any]]:
        return await asyncio.gather(*(one(method, path, body) for _, method, path, body in requests))

    return dict(zip([name for name, *_ in requests], asyncio.run(every()), strict=True))


def assert_refused_with_the_message(answers: dict[str, dict[str, Any]]) -> None:
    wrong = {
        name: answer
        for name, answer in answers.items()
        if answer["status"] != 503
        or answer["error"] != "checkpoint_store_unavailable"
        or UNAVAILABLE not in answer["detail"]
        or not (answer["retry_after"] or "").isdigit()
        or answer["seconds"] >= BOUND_S
    }
    assert not wrong, "not a 503 naming the checkpoint store within the bound:\n" + "\n".join(
        f"  {name}: {answer}" for name, answer in wrong.items()
    )


def wait_until_served(client: httpx.Client, thread_id: str) -> float:
    """Seconds until the thread's state is served again; fails after `RECOVERY_S`."""
    started = time.monotonic()
    while True:
        status = client.get(f"/threads/{thread_id}/state").status_code
        if status == 200:
            return time.monotonic() - started
        assert time.monotonic() - started < RECOVERY_S, f"still {status} {RECOVERY_S:.0f} s after PostgreSQL came back"
        time.sleep(0.5)


def assert_resumes_once(client: httpx.Client, threads: dict[str, Any], before: dict[str, Any]) -> None:
    """The ticket's approval runs exactly once, and the chat continues without the refused turn."""
    ticket, chat = threads["ticket"], threads["chat"]
    resume = {"assistant_id": "ticket_triage", "command": {"resume": threads["resume"]}}
    resumed = client.post(f"/threads/{ticket}/runs/wait", json=resume)
    assert resumed.status_code == 200, resumed.text[:300]
    values = resumed.json()
    assert values["approval"]["answer"] == "approve" and values["response"]
    replies = [m for m in values["messages"] if m["type"] == "ai"]
    assert len(replies) == 1, f"the approved ticket was answered {len(replies)} times"
    assert [r["status"] for r in client.get(f"/threads/{ticket}/runs").json()] == ["success", "success"]
    again = client.post(f"/threads/{ticket}/runs/wait", json=resume)
    assert again.status_code == 409, "the approval was answered: nothing left to resume"

    turn = client.post(f"/threads/{chat}/runs/wait", json={"assistant_id": "recycling_guide", "input": _user("유리병은요?")})
    assert turn.status_code == 200, turn.text[:300]
    asked = [m["content"] for m in client.get(f"/threads/{chat}/state").json()["values"]["messages"] if m["type"] == "human"]
    assert asked == [*CHAT, "유리병은요?"], "the refused turn left nothing behind"
    assert len(client.get(f"/threads/{chat}/runs").json()) == len(before["chat"]["runs"]) + 1


@pytest.mark.parametrize("outage", ["stopped", "hung"])
def test_every_route_to_the_store_is_a_503_that_says_so_and_the_thread_resumes_once_after(
    outage: str, server: DevServer, postgres: PostgresServer
) -> None:
    with httpx.Client(base_url=server.url, timeout=120) as client:
        threads = stored_threads(client)
        before = records(client, threads)
        stored = stored_state(client, threads)
        assert before["ticket"]["status"] == "interrupted" and before["chat"]["status"] == "idle"

        late_run = queue_late_run(client, threads)
        frozen: list[int] = []
        if outage == "stopped":
            stop(postgres)
        else:
            frozen = cluster_pids(postgres)
            signal_all(frozen, signal.SIGSTOP)
        try:
            answers = answers_during_outage(server.url, refused_requests(threads))
            assert_refused_with_the_message(answers)
            # what does not reach the store keeps answering, and shows the refused requests left nothing
            during = records(client, threads)
            store_item = client.put("/store/items", json={"namespace": ["outage"], "key": "k", "value": {"v": 1}})
            stateless = client.post("/runs/wait", json={"assistant_id": "recycling_guide", "input": _user(REFUSED_TURN)})
            late_status, late_join = failed_run(client, threads["late"], late_run)
        finally:
            if outage == "stopped":
                start_again(postgres)
            else:
                signal_all(frozen, signal.SIGCONT)

        assert during == before, "a refused request created, changed or deleted a thread or a run"
        assert store_item.status_code == 204, "the store (in memory under `langgraph dev`) does not reach PostgreSQL"
        assert stateless.status_code == 200, "a stateless run has no checkpointer: served during the outage"
        # a run accepted before the outage fails on it, and says why
        assert late_status == "error"
        assert late_join["__error__"]["error"] == "CheckpointStoreUnavailable"
        assert UNAVAILABLE in late_join["__error__"]["message"]

        recovered = wait_until_served(client, threads["ticket"])
        print(f"{outage}: refused in {sorted({a['seconds'] for a in answers.values()})} s; served again after {recovered:.1f} s")
        assert stored_state(client, threads) == stored, "the checkpoints changed during the outage"
        assert records(client, threads) == before
        assert_resumes_once(client, threads, before)
        # the late turn applied nothing: sent again, it is there once
        late = threads["late"]
        again = client.post(f"/threads/{late}/runs/wait", json={"assistant_id": "recycling_guide", "input": _user(LATE_TURN)})
        assert again.status_code == 200, again.text[:300]
        messages = client.get(f"/threads/{late}/state").json()["values"]["messages"]
        assert [m["content"] for m in messages if m["type"] == "human"] == [CHAT[0], LATE_TURN]
