"""`server/auth.py` `_thread_to_admit`: the run handler reads the runtime's own record when it holds it.

The record's fields but values are serialized as the API serializes them, and the values are a
shallow copy (admission reads their keys and the flow version); wherever the answer could differ
from `threads.get` (another owner's thread, a thread the guard must read, a server that does not
hold the records), the API is asked as before. The real path is covered by the integration tests
that start runs (test_runtime_guard_server.py, test_ownership_server.py, ...).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from server import auth
from server.persistence import thread_records

OWNER = "alice"


class _Threads:
    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer
        self.gets = 0

    async def get(self, thread_id: str) -> dict[str, Any]:
        self.gets += 1
        assert self.answer is not None
        return self.answer


class _Client:
    def __init__(self, answer: dict[str, Any] | None = None) -> None:
        self.threads = _Threads(answer)


class _Guard:
    def __init__(self, identity: str | None) -> None:
        self._identity = identity

    async def identity(self, graph_id: str) -> str | None:
        return self._identity


def _record(*, owner: str = OWNER, stamp: str | None = "code-1") -> dict[str, Any]:
    metadata: dict[str, Any] = {"owner": owner, "graph_id": "fan_room"}
    if stamp:
        metadata[auth.CONTRACT_KEY] = stamp
    return {
        "thread_id": uuid.uuid4(),
        "created_at": datetime(2026, 12, 6, tzinfo=UTC),
        "metadata": metadata,
        "status": "idle",
        "interrupts": {},
        "values": {"messages": [{"type": "human", "content": "hi"}] * 200, "flow_version": 1},
    }


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Makes `local_thread` answer as the server does when it holds the records."""
    state: dict[str, Any] = {"local": True, "record": None}
    monkeypatch.setattr(thread_records, "local_thread", lambda thread_id: (state["local"], state["record"]))
    pytest.importorskip("langgraph_api.serde")
    return state


async def _admit(client: _Client, guard: _Guard | None, *, check_owner: bool = True) -> dict[str, Any] | None:
    return await auth._thread_to_admit(
        client,  # type: ignore[arg-type]  # a fake with threads.get
        str(uuid.uuid4()),
        owner=OWNER,
        check_owner=check_owner,
        graph_id="fan_room",
        guard=guard,  # type: ignore[arg-type]  # a fake with identity()
    )


async def test_a_held_record_is_read_without_the_api_and_its_values_are_not_serialized(held: dict[str, Any]) -> None:
    record = held["record"] = _record()
    client = _Client()

    view = await _admit(client, _Guard("code-1"))

    assert client.threads.gets == 0
    assert view is not None
    assert view["thread_id"] == str(record["thread_id"]) and view["created_at"].startswith("2026-12-06")
    assert view["metadata"] == record["metadata"] and view["status"] == "idle"
    assert view["values"] == record["values"] and view["values"] is not record["values"]
    assert view["values"]["messages"] is record["values"]["messages"]  # the runtime's own list: nothing copied


async def test_a_thread_the_runtime_does_not_have_is_none(held: dict[str, Any]) -> None:
    client = _Client()
    assert await _admit(client, None) is None
    assert client.threads.gets == 0


@pytest.mark.parametrize(
    ("local", "record", "guard", "check_owner"),
    [
        pytest.param(False, None, None, True, id="server-without-the-records"),
        pytest.param(True, _record(owner="bob"), None, True, id="another-owners-thread"),
        pytest.param(True, _record(stamp=None), _Guard("code-1"), True, id="not-yet-admitted-under-this-code"),
        pytest.param(True, _record(stamp="code-0"), _Guard("code-1"), True, id="admitted-under-other-code"),
    ],
)
async def test_the_api_is_asked_where_its_answer_could_differ(
    held: dict[str, Any], local: bool, record: dict[str, Any] | None, guard: _Guard | None, check_owner: bool
) -> None:
    held.update(local=local, record=record)
    answer = {"thread_id": "from-the-api", "values": {}}
    client = _Client(answer)

    assert await _admit(client, guard, check_owner=check_owner) == answer
    assert client.threads.gets == 1


@pytest.mark.parametrize(
    ("record", "guard", "check_owner"),
    [
        pytest.param(_record(owner="bob"), None, False, id="dev-mode-reads-every-thread"),
        pytest.param(_record(stamp=None), _Guard(None), True, id="a-graph-the-guard-does-not-serve"),
        pytest.param(_record(stamp=None), None, True, id="no-guard"),
    ],
)
async def test_the_record_is_enough_where_the_api_would_answer_the_same(
    held: dict[str, Any], record: dict[str, Any], guard: _Guard | None, check_owner: bool
) -> None:
    held["record"] = record
    client = _Client()

    view = await _admit(client, guard, check_owner=check_owner)

    assert client.threads.gets == 0
    assert view is not None and view["metadata"] == record["metadata"]
