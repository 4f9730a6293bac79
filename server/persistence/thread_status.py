"""A thread's record says what its runs and its head checkpoint say, after every operation that touches them.

The one rule (`settle`): a thread is ``busy`` while a run is pending or running on it
(or a run cancelled while running has not ended yet: its worker is still writing);
otherwise its status, values and interrupts are those of its head checkpoint
(``interrupted`` when the head has next steps, ``idle`` otherwise), and ``error`` stays
while the runtime's error of the last run that ended stays on the record (the runtime
clears it whenever a run ends or the state is updated).

The in-memory runtime (langgraph-runtime-inmem 0.36.7) broke it in several ways:

* ``Runs.cancel`` of a pending run (by run ids, by status, by assistant) sets the thread
  ``idle`` whatever its head says: a paused ticket whose queued resume (``after_seconds``)
  was cancelled said ``idle`` with its approval still pending, and
  ``threads.search(status="interrupted")`` missed it; the same ``idle`` also landed on a
  thread whose other run was still running or queued;
* ``action="rollback"`` of a pending run deletes it through ``Runs.delete``, which runs
  the caller's ``threads.delete`` auth event: the server's handler refuses to delete a
  run in flight (409, `server/auth.py`), so the cancel answered 409 while its control
  message stayed queued and the run vanished when a worker picked it up. A cancel the
  caller was allowed to make now deletes the runs it rolls back (`around`), and answers
  as a success;
* ``Runs.put`` marks the thread ``busy`` before it decides whether to insert;
* the operations that write checkpoints without a run (a copy, an update, a deleted run)
  set the record from another checkpoint than the head (see `thread_records`).

`thread_records._then_write` calls `before` ahead of each wrapped operation (the threads
an operation by status or by assistant touches are only known then), `around` over it,
and `settle_after` once it is done, also when it failed part-way.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from server.persistence.record_index import index_of

IN_FLIGHT = ("pending", "running")

SETTLED_AFTER = {
    ("Threads", "copy"),
    ("Threads.State", "post"),
    ("Threads.State", "bulk"),
    ("Runs", "put"),
    ("Runs", "delete"),
    ("Runs", "cancel"),
    ("Runs", "set_status"),
}
"""Operations after which the threads they touched are settled (`settle`)."""

KEEPS_ERROR = {("Runs", "put"), ("Runs", "cancel"), ("Runs", "set_status")}
"""Operations that end no run and write no checkpoint: a thread whose last run failed stays ``error``."""

_ROLLING_BACK: contextvars.ContextVar[frozenset[UUID]] = contextvars.ContextVar("rolling_back", default=frozenset())
"""The run ids a ``Runs.cancel(action="rollback")`` in this task may delete (`around`)."""

_WINDING_DOWN: dict[UUID, bool] = {}
"""run id -> its worker has ended it (``Threads.set_joint_status``), for runs that were running when a
cancel began: the runtime marks them ``interrupted`` at once, but their worker runs on for a while."""


@dataclass
class Touched:
    """What an operation touches, read before it runs."""

    thread_ids: list[UUID] = field(default_factory=list)
    running: set[UUID] = field(default_factory=set)
    """Runs running on those threads before the operation."""
    rolled_back: frozenset[UUID] = frozenset()


def before(owner: str, name: str, arguments: dict[str, Any], store: Any) -> Touched | None:
    """The threads the operation will touch, or None when it settles none (or its threads are found later)."""
    if owner == "Threads" and name == "set_joint_status":
        run_id = arguments.get("run_id")
        if run_id is not None and _uuid(run_id) in _WINDING_DOWN:
            _WINDING_DOWN[_uuid(run_id)] = True
        return None
    if (owner, name) not in SETTLED_AFTER or owner != "Runs":
        return None
    runs, index = store["runs"], index_of(store)
    if name == "cancel" and arguments.get("assistant_id") is not None:
        assistant = _uuid(arguments["assistant_id"])
        chosen = [r for r in runs if r["assistant_id"] == assistant and r["status"] in IN_FLIGHT]
        thread_ids = _unique(r["thread_id"] for r in chosen)
    elif name == "cancel" and arguments.get("status") is not None:
        wanted = IN_FLIGHT if arguments["status"] == "all" else (arguments["status"],)
        chosen = [r for r in runs if r["status"] in wanted]
        thread_ids = _unique(r["thread_id"] for r in chosen)
    elif arguments.get("thread_id") is not None:
        thread_ids = [_uuid(arguments["thread_id"])]
        run_ids = {_uuid(r) for r in arguments.get("run_ids") or ()}
        chosen = [r for r in index.runs_of(thread_ids[0]) if r["run_id"] in run_ids]
    elif name == "set_status" and arguments.get("run_id") is not None:
        run = index.run(_uuid(arguments["run_id"]))
        chosen = [run] if run is not None else []
        thread_ids = _unique(r["thread_id"] for r in chosen)
    else:
        return None  # a run on a new thread: the run makes it busy
    running = {r["run_id"] for thread_id in thread_ids for r in index.runs_of(thread_id) if r["status"] == "running"}
    touched = Touched(thread_ids, running)
    if name == "cancel":
        if arguments.get("action") == "rollback":
            touched.rolled_back = frozenset(r["run_id"] for r in chosen)
        for run_id in touched.running:
            _WINDING_DOWN.setdefault(run_id, False)
    return touched


@contextlib.contextmanager
def around(owner: str, name: str, arguments: dict[str, Any], touched: Touched | None) -> Iterator[None]:
    """Let a rollback delete the pending runs it cancels.

    ``Runs.cancel`` has checked the caller may cancel them (its ``threads.update`` event);
    the ``Runs.delete`` it then calls ran the caller's ``threads.delete`` event as well,
    whose handler refuses a run in flight. Those deletions run as the server's own.
    """
    if owner == "Runs" and name == "cancel" and touched is not None and touched.rolled_back:
        token = _ROLLING_BACK.set(touched.rolled_back)
        try:
            yield
        finally:
            _ROLLING_BACK.reset(token)
        return
    run_id = arguments.get("run_id") if owner == "Runs" and name == "delete" else None
    if run_id is not None and _uuid(run_id) in _ROLLING_BACK.get():
        from langgraph_api.utils import AuthContext  # type: ignore[import-untyped]  # the server's request context

        auth = AuthContext.set(None)
        try:
            yield
        finally:
            AuthContext.reset(auth)
        return
    yield


async def settle_after(
    owner: str, name: str, arguments: dict[str, Any], result: Any, touched: Touched | None
) -> tuple[Any, list[UUID]]:
    """Settle the threads the operation touched; its result (a copy's rows are read and handed on) and the threads."""
    conn = arguments.get("conn")
    if name == "copy":
        rows = [row async for row in result]
        thread_ids = [_uuid(row["thread_id"]) for row in rows]

        async def again() -> AsyncIterator[Any]:
            for row in rows:
                yield row

        result = again()
    elif owner == "Threads.State":
        thread_ids = [_uuid(arguments["config"]["configurable"]["thread_id"])]
    elif name == "delete":
        thread_ids = [_uuid(arguments["thread_id"])]
    else:
        thread_ids = touched.thread_ids if touched is not None else []
    try:
        for thread_id in thread_ids:
            await settle(
                conn,
                thread_id,
                running_before=touched.running if touched is not None else frozenset(),
                keep_error=(owner, name) in KEEPS_ERROR,
            )
    finally:
        for run_id in touched.running if touched is not None and name == "cancel" else ():
            _WINDING_DOWN.pop(run_id, None)
    return result, thread_ids


async def settle(conn: Any, thread_id: UUID, *, running_before: Any = frozenset(), keep_error: bool = False) -> None:
    """Set the thread's record from its runs and its head checkpoint (the rule in the module doc); write only a change."""
    from langgraph_api.utils import AuthContext  # the server's request context
    from langgraph_runtime_inmem import ops  # type: ignore[import-untyped]  # the runtime ships no type info

    if conn is None:
        return
    index = index_of(conn.store)
    thread = index.thread(thread_id)
    if thread is None:
        return
    runs = index.runs_of(thread_id)
    if any(
        r["status"] in IN_FLIGHT or (r["run_id"] in running_before and not _WINDING_DOWN.get(r["run_id"], True)) for r in runs
    ):
        if thread["status"] != "busy":
            thread.update({"status": "busy", "updated_at": datetime.now(UTC)})
        return  # the run in flight sets the rest when it ends
    # Read as the server does for itself (no caller): the operation already checked the caller's rights.
    token = AuthContext.set(None)
    try:
        state = await ops.Threads.State.get(conn, {"configurable": {"thread_id": str(thread_id)}}, subgraphs=False)
    finally:
        AuthContext.reset(token)
    head = {
        "next": list(state.next),
        "values": state.values if state.config is not None else {},
        "tasks": [{"id": task.id, "interrupts": list(task.interrupts)} for task in state.tasks],
    }
    error = thread.get("error") if keep_error else None
    status = "error" if error else "interrupted" if head["next"] else "idle"
    interrupts = {t["id"]: [ops._patch_interrupt(i) for i in t["interrupts"]] for t in head["tasks"] if t["interrupts"]}
    now = (thread["status"], thread.get("values") or {}, thread.get("interrupts") or {})
    if now == (status, head["values"] or {}, interrupts):
        return  # as it should be: a refused request leaves the record as it was, timestamps too
    await ops.Threads.set_status(conn, thread_id, head, None)
    if error:
        thread.update({"status": "error", "error": error})


def _unique(ids: Any) -> list[UUID]:
    return list(dict.fromkeys(ids))


def _uuid(value: UUID | str) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))
