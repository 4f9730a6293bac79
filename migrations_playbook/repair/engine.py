"""`playbook migrate`: repair the threads (and assistants) a change would break, through the Agent Server API.

Detect, repair, prove:

1. **Read** every thread of the plan's graphs (`threads.search`, then `get_state(subgraphs=True)`
   for each one, so a thread waiting at a node without an interrupt is seen too) and judge it
   with the gate's rules (`Evaluator`): the threads with a block finding are the ones the plan
   repairs (``"select": "blocked"``, the default).
2. **Plan** each thread's change (`migrate_plan.compute_change`, pure): values to write, the
   node to move to. A transform that raises, or a value the candidate's type rejects, stops
   everything before anything is written (exit 2).
3. **Write** (``--apply``) one new checkpoint per thread with `threads.update_state`: the
   values, and for a node move ``as_node=<the node before the new one>``, so the candidate
   schedules the new node. The checkpoint is based on the head that was read
   (``checkpoint_id``), and its metadata carries the migration id, the pre-migration head and
   the move (extra keys of the ``checkpoint`` object reach the checkpoint's configurable, and
   LangGraph's savers copy scalar configurable keys into checkpoint metadata; verified on
   `langgraph dev` 0.16.7 after every write). A thread whose head already carries the id is
   left alone, so a second ``--apply`` changes nothing. A busy thread (a run in flight: the
   server refuses the update with 409) is skipped and named. No node, model or tool runs.
4. **Gate again** with the same rules: exit 1 if a thread still blocks.

Where the writes can happen. `update_state` writes through the graph the server runs: a
value for a key the running graph does not declare is dropped, and ``as_node`` schedules the
running graph's successors. So thread steps are applied on a server that runs the candidate:
after the rollout (keep the runtime guard on meanwhile: it refuses runs on the threads that
still need the migration), or on a staging copy (``--persistence DIR``: the proof). On a
server that still runs the live code, ``--apply`` is refused before anything is written.

What a server running the candidate hides, and where migrate reads it instead. The
candidate derives `get_state` itself: a thread paused at a node it no longer has shows
``next == []`` and no task, and values of keys it no longer declares are not shown. Agent
Server's thread record (`threads.search`) still holds both from the thread's last run: the
interrupts it waits on (keyed by the old task id) and the values as they were. Migrate reads
them from there, and names a lost step from the live code's lock (``--live-contract``: its
``interrupt_nodes`` the candidate lacks), as the runtime guard does.

Rollback (``--rollback ID``) restores, per thread whose newest stamped checkpoint is still its
head, the pre-migration head as a new checkpoint: ``update_state(as_node="__copy__")`` from
that head's id, which copies its channels exactly (values and the triggers that make its
``next``); the migration's checkpoints stay in the history. A thread that moved on since (a
run after the migration) is not rolled back, and is named.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError, ConflictError, NotFoundError

from migrations_playbook.sources import api as live_side
from migrations_playbook.rules.evaluate import Evaluator
from migrations_playbook.repair.plan import (
    BASE_KEY,
    MIGRATION_KEY,
    MOVED_KEY,
    Change,
    Plan,
    PlanError,
    ThreadInfo,
    compute_change,
    transform_context,
)
from migrations_playbook.model import (
    CandidateGraph,
    GateReport,
    LiveGraph,
    TaskFact,
    ThreadSnapshot,
)
from migrations_playbook.proof.replay import PendingInterrupt, pending_interrupts

MIGRATE_RESULT_VERSION = "1"
# Assistant metadata keys. Not the checkpoint keys: Agent Server copies an assistant's metadata
# into every run through it, and so into the checkpoints those runs write (observed on
# `langgraph dev` 0.16.7), where the checkpoint keys would read as a migration's stamp.
CONTEXT_MIGRATION_KEY = "playbook_context_migration"
"""The migration that wrote the assistant's current context."""
CONTEXT_BASE_KEY = "playbook_context_base_version"
"""The assistant's version before that migration."""
ROLLED_BACK_KEY = "playbook_context_rolled_back"
"""The migration whose context change was rolled back."""
STATE_CONCURRENCY = 16
HISTORY_LIMIT = 200
"""Checkpoints read per thread when looking for a migration's stamp (rollback)."""

Served = Literal["candidate", "live code"]
Mode = Literal["dry run", "apply", "rollback", "staging"]
"""What a migrate run does: read and plan, write the plan, restore the heads, or prove the plan on staging."""
Action = Literal[
    "would change",
    "changed",
    "already applied",
    "no change",
    "skipped: busy",
    "skipped: moved on",
    "failed",
    "would restore",
    "restored",
    "already restored",
    "not migrated",
]


class MigrateRefused(Exception):
    """The command cannot run as asked at this moment (exit 2, nothing written)."""


# -- reading ---------------------------------------------------------------------------------


@dataclass
class ThreadView:
    """One thread as migrate sees it: what the gate judges, and what the plan reads and writes."""

    thread_id: str
    graph_id: str
    status: str
    values: dict[str, Any]
    """The values the plan reads: the head's, plus keys only the thread record still shows."""
    head: str | None
    metadata: dict[str, Any]
    """The head checkpoint's metadata."""
    next: tuple[str, ...]
    pending: tuple[str, ...]
    """Node paths the thread was going to run, named as the code that paused it names them."""
    interrupts: tuple[PendingInterrupt, ...]
    """The questions it waits on (a lost step's from the thread record)."""
    snapshot: ThreadSnapshot
    lost: tuple[str, ...] = ()
    """Steps the serving code no longer schedules (read from the thread record)."""
    hidden: tuple[str, ...] = ()
    """Keys read from the thread record because the serving code does not show them."""
    assistant_id: str | None = None
    blocks: tuple[str, ...] = ()
    """The block finding codes the gate gives this thread."""

    @property
    def info(self) -> ThreadInfo:
        return ThreadInfo(self.thread_id, self.graph_id, self.status, self.pending, dict(self.metadata))


def lost_steps(
    record: Mapping[str, Any],
    state: Mapping[str, Any],
    lock: Mapping[str, Any] | None,
    candidate: CandidateGraph,
    moved_from: Sequence[str] = (),
) -> list[tuple[str, PendingInterrupt]]:
    """The interrupts a thread's record holds for tasks the serving code does not schedule, each with
    the node it was raised in: the live lock's interrupt node the candidate lacks (if one), else the
    plan's ``from`` among them (if one), else a label that says it is not known."""
    scheduled = live_side.task_ids(state)
    gone = live_side.gone_interrupt_nodes(lock, candidate.topology.nodes)
    if len(gone) > 1:
        named = [n for n in gone if n in moved_from]
        gone = named if len(named) == 1 else gone
    name = gone[0] if len(gone) == 1 else (f"(one of {', '.join(gone)})" if gone else "(a step the candidate no longer has)")
    found = []
    for task_id, items in (record.get("interrupts") or {}).items():
        if str(task_id) in scheduled:
            continue
        for item in items or []:
            if isinstance(item, Mapping):
                found.append((name, PendingInterrupt(path=name, value=item.get("value"), id=item.get("id"))))
    return found


async def _states(client: LangGraphClient, threads: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any] | None]:
    semaphore = asyncio.Semaphore(STATE_CONCURRENCY)

    async def one(thread: Mapping[str, Any]) -> Mapping[str, Any] | None:
        async with semaphore:
            try:
                return await client.threads.get_state(thread["thread_id"], subgraphs=True)
            except NotFoundError:
                return None
            except APIStatusError as exc:
                if exc.status_code < 500:
                    raise
                return {"__unreadable__": f"{exc.status_code}: {exc.message}"}

    return list(await asyncio.gather(*(one(t) for t in threads)))


async def read_threads(
    client: LangGraphClient,
    graph_id: str,
    *,
    served: Served,
    candidate: CandidateGraph,
    lock: Mapping[str, Any] | None,
    moved_from: Sequence[str] = (),
) -> list[ThreadView]:
    """Every thread of ``graph_id`` as a `ThreadView` (all statuses, oldest first)."""
    records: list[Mapping[str, Any]] = []
    offset = 0
    while True:
        page = await client.threads.search(
            metadata={"graph_id": graph_id},
            limit=live_side.PAGE_SIZE,
            offset=offset,
            sort_by="created_at",
            sort_order="asc",
            select=["thread_id", "status", "values", "interrupts", "metadata"],
        )
        records.extend(page)
        if len(page) < live_side.PAGE_SIZE:
            break
        offset += len(page)
    views = []
    for record, state in zip(records, await _states(client, records), strict=True):
        views.append(_view(record, state, graph_id, served=served, candidate=candidate, lock=lock, moved_from=moved_from))
    return views


def _view(
    record: Mapping[str, Any],
    state: Mapping[str, Any] | None,
    graph_id: str,
    *,
    served: Served,
    candidate: CandidateGraph,
    lock: Mapping[str, Any] | None,
    moved_from: Sequence[str],
) -> ThreadView:
    thread_id = str(record["thread_id"])
    status = str(record.get("status") or "idle")
    assistant_id = (record.get("metadata") or {}).get("assistant_id")
    stored_values = record.get("values")
    record_values: dict[str, Any] = stored_values if isinstance(stored_values, dict) else {}
    if state is None or "__unreadable__" in (state or {}):
        unreadable = (state or {}).get("__unreadable__") if state else None
        snapshot = ThreadSnapshot(
            thread_id=thread_id,
            graph_id=graph_id,
            status=status,
            values=dict(record_values),
            unreadable=unreadable,
            assistant_id=assistant_id,
        )
        return ThreadView(
            thread_id, graph_id, status, dict(record_values), None, {}, (), (), (), snapshot, assistant_id=assistant_id
        )
    values = dict(state.get("values") or {}) if isinstance(state.get("values"), dict) else {}
    tasks, namespaces = live_side.task_facts(state)
    pending = list(live_side.pending_paths(state))
    interrupts = list(pending_interrupts(state))
    lost: list[str] = []
    hidden: list[str] = []
    if served == "candidate":
        # The candidate derived this state: what it no longer has, only the thread record shows.
        for name, interrupt in lost_steps(record, state, lock, candidate, moved_from):
            if name not in lost:
                lost.append(name)
                tasks.append(TaskFact(path=name, interrupted=True, interrupt_values=(interrupt.value,)))
            interrupts.append(interrupt)
        pending += [n for n in lost if n not in pending]
        shared = set(values) & set(record_values)
        if all(values[k] == record_values[k] for k in shared):  # the record is this head's
            for key, value in record_values.items():
                if key not in values and key not in candidate.fields:
                    values[key] = value
                    hidden.append(key)
    snapshot = ThreadSnapshot(
        thread_id=thread_id,
        graph_id=graph_id,
        status=status,
        values=values,
        pending=tuple(pending),
        tasks=tuple(tasks),
        namespaces=namespaces,
        next=tuple(state.get("next") or ()),
        assistant_id=assistant_id,
    )
    checkpoint = state.get("checkpoint") or {}
    return ThreadView(
        thread_id=thread_id,
        graph_id=graph_id,
        status=status,
        values=values,
        head=checkpoint.get("checkpoint_id"),
        metadata=dict(state.get("metadata") or {}),
        next=tuple(state.get("next") or ()),
        pending=tuple(pending),
        interrupts=tuple(interrupts),
        snapshot=snapshot,
        lost=tuple(lost),
        hidden=tuple(hidden),
        assistant_id=assistant_id,
    )


async def served_code(
    client: LangGraphClient, graph_id: str, assistant_id: str, compiled: Any, candidate: CandidateGraph
) -> Served:
    """Whether the server runs the candidate's ``graph_id``: the same drawn nodes and edges and the same
    input and output JSON schemas. Anything else (errs towards "live code") means the live code."""
    from migrations_playbook.model import Topology

    plain, xray, schemas = await asyncio.gather(
        client.assistants.get_graph(assistant_id),
        client.assistants.get_graph(assistant_id, xray=True),
        client.assistants.get_schemas(assistant_id),
    )
    if Topology.from_drawings(plain, xray) != candidate.topology:
        return "live code"
    try:
        mine = {"input_schema": compiled.get_input_jsonschema(), "output_schema": compiled.get_output_jsonschema()}
    except Exception:  # noqa: BLE001 - a graph whose schema cannot be drawn: compare the drawing only
        return "candidate"
    for key, value in mine.items():
        if json.loads(json.dumps(value, default=str)) != schemas.get(key):
            return "live code"
    return "candidate"


# -- judging ---------------------------------------------------------------------------------


@dataclass
class Scan:
    """Everything read for one run of the command."""

    views: dict[str, list[ThreadView]]
    assistants: dict[str, list[dict[str, Any]]]
    live: dict[str, LiveGraph]
    served: dict[str, Served]


def judge(
    scan: Scan,
    candidates: Mapping[str, CandidateGraph],
    registered: set[str],
    *,
    strict: bool,
    live_url: str,
    candidate_path: str,
    notes: Sequence[str] = (),
) -> GateReport:
    """The gate over the scan (one report), and each view's own block codes (`ThreadView.blocks`)."""
    evaluator = Evaluator(live=scan.live, candidates=candidates, registered=registered, strict=strict)
    for graph_id, views in scan.views.items():
        evaluator.summary(graph_id)
        for assistant in scan.assistants.get(graph_id, []):
            evaluator.add_assistant(graph_id, assistant)
        for view in views:
            evaluator.add(view.snapshot)
            own = Evaluator(live=scan.live, candidates=candidates, registered=registered, strict=strict)
            for assistant in scan.assistants.get(graph_id, []):
                if assistant["assistant_id"] == view.assistant_id:
                    own.add_assistant(graph_id, assistant)
            own.add(view.snapshot)
            view.blocks = tuple(sorted({f.code for f in own.findings() if f.severity == "block"}))
    return GateReport(
        live_url=live_url,
        candidate=candidate_path,
        strict=strict,
        graphs=evaluator.summaries,
        findings=evaluator.findings(),
        notes=list(notes),
        command="migrate",
    )


# -- planning --------------------------------------------------------------------------------


@dataclass
class ThreadOutcome:
    """What migrate did (or would do) to one thread."""

    thread_id: str
    graph_id: str
    status: str
    action: Action
    blocks: tuple[str, ...] = ()
    change: Change | None = None
    base: str | None = None
    """The pre-migration head (rollback: the head restored)."""
    new_head: str | None = None
    reason: str = ""
    hidden: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "graph_id": self.graph_id,
            "status": self.status,
            "action": self.action,
            "blocked_by": list(self.blocks),
            "base_checkpoint": self.base,
            "new_checkpoint": self.new_head,
            "reason": self.reason,
            "read_from_thread_record": {"keys": list(self.hidden), "lost_steps": list(self.lost)},
            **(self.change.to_json() if self.change is not None else {"steps": [], "diff": [], "move": None, "writes": {}}),
        }


@dataclass
class AssistantOutcome:
    assistant_id: str
    graph_id: str
    action: str
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    step: int | None = None
    base_version: int | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "assistant_id": self.assistant_id,
            "graph_id": self.graph_id,
            "action": self.action,
            "step": self.step,
            "context_before": self.before,
            "context_after": self.after,
            "base_version": self.base_version,
            "reason": self.reason,
        }


def plan_threads(plan: Plan, scan: Scan, candidates: Mapping[str, CandidateGraph]) -> list[ThreadOutcome]:
    """Each thread's change, or why it has none (pure; a `PlanError` stops it all)."""
    outcomes = []
    for graph_id in plan.graphs:
        for view in scan.views.get(graph_id, []):
            if view.head is None:
                outcomes.append(_planned(view, graph_id, "no change", reason="its state cannot be read"))
                continue
            if stamped_by(view.metadata, plan.migration):
                outcomes.append(
                    _planned(view, graph_id, "already applied", reason=f"its head is stamped {MIGRATION_KEY}={plan.migration}")
                )
                continue
            change = compute_change(
                plan,
                view.info,
                view.values,
                blocked=bool(view.blocks),
                candidate=candidates.get(graph_id),
                thread_label=f"thread {view.thread_id}",
            )
            if change.empty:
                outcomes.append(_planned(view, graph_id, "no change"))
            elif view.status == "busy":
                outcomes.append(
                    _planned(
                        view,
                        graph_id,
                        "skipped: busy",
                        change=change,
                        reason="a run is in flight on it; run migrate again once it is done",
                    )
                )
            else:
                outcomes.append(_planned(view, graph_id, "would change", change=change))
    return outcomes


def _planned(view: ThreadView, graph_id: str, action: Action, *, change: Change | None = None, reason: str = "") -> ThreadOutcome:
    """A thread's outcome in a plan: its view's identity, blocks, head and record-only reads."""
    return ThreadOutcome(
        thread_id=view.thread_id,
        graph_id=graph_id,
        status=view.status,
        blocks=view.blocks,
        base=view.head,
        hidden=view.hidden,
        lost=view.lost,
        action=action,
        change=change,
        reason=reason,
    )


def plan_assistants(plan: Plan, scan: Scan, candidates: Mapping[str, CandidateGraph]) -> list[AssistantOutcome]:
    outcomes = []
    for step in plan.steps:
        if step.op != "context":
            continue
        candidate = candidates[step.graph]
        for assistant in scan.assistants.get(step.graph, []):
            if assistant.get("system"):
                continue
            stored = assistant.get("context") or {}
            meta = assistant.get("metadata") or {}
            item = AssistantOutcome(
                assistant["assistant_id"],
                step.graph,
                "no change",
                before=stored,
                step=step.index,
                base_version=assistant.get("version"),
            )
            if meta.get(CONTEXT_MIGRATION_KEY) == plan.migration:
                item.action, item.reason = "already applied", f"its metadata has {CONTEXT_MIGRATION_KEY}={plan.migration}"
            elif step.select == "blocked" and candidate.validate_context(stored) is None:
                item.reason = "the candidate accepts its context"
            else:
                new = transform_context(step, stored, assistant["assistant_id"])
                problem = candidate.validate_context(new)
                if problem is not None:
                    raise PlanError(
                        f"{step.label}: for assistant {assistant['assistant_id']}, the new context is still "
                        f"rejected by the candidate: {problem}"
                    )
                if new != stored:
                    item.action, item.after = "would change", new
            outcomes.append(item)
    return outcomes


# -- writing -----------------------------------------------------------------------------------


def encode_writes(writes: Mapping[str, Any], candidate: CandidateGraph | None) -> dict[str, Any]:
    """The ``values`` for update_state: a reducer channel's new value replaces the old one
    (``{"__overwrite__": value}``), except messages, which merge by id as always."""
    encoded = {}
    for key, value in writes.items():
        spec = candidate.fields.get(key) if candidate is not None else None
        reducer = spec.reducer if spec is not None else "LastValue"
        if reducer.startswith("BinaryOperatorAggregate") and "add_messages" not in reducer:
            encoded[key] = {"__overwrite__": copy.deepcopy(value)}
        else:
            encoded[key] = copy.deepcopy(value)
    return encoded


async def write_thread(client: LangGraphClient, outcome: ThreadOutcome, plan: Plan, candidate: CandidateGraph | None) -> None:
    """Write one thread's change as one new checkpoint, stamped; verify the stamp and the move landed."""
    change = outcome.change
    assert change is not None and outcome.base is not None  # only "would change" outcomes get here
    try:
        now = await client.threads.get_state(outcome.thread_id)
    except NotFoundError:
        outcome.action, outcome.reason = "failed", "the thread is gone"
        return
    if (now.get("checkpoint") or {}).get("checkpoint_id") != outcome.base:
        outcome.action, outcome.reason = "skipped: moved on", "its head changed since it was read (a run?); run migrate again"
        return
    stamp = {"checkpoint_id": outcome.base, MIGRATION_KEY: plan.migration, BASE_KEY: outcome.base}
    if change.move is not None:
        stamp[MOVED_KEY] = f"{change.move.from_node}->{change.move.to_node}"
    try:
        # ``checkpoint_id`` at the top level (older servers) is not in langgraph-sdk's ThreadUpdateStateResponse
        written: Mapping[str, Any] = await client.threads.update_state(
            outcome.thread_id,
            encode_writes(change.writes, candidate) or None,
            as_node=change.move.as_node if change.move is not None else None,
            checkpoint=stamp,  # type: ignore[arg-type]  # extra keys land in checkpoint metadata (see module doc)
        )
    except ConflictError as exc:
        outcome.action, outcome.reason = "skipped: busy", f"the server refused the update: {exc}"
        return
    except APIStatusError as exc:
        outcome.action, outcome.reason = "failed", f"the server refused the update ({exc.status_code}): {str(exc)[:300]}"
        return
    outcome.new_head = written.get("checkpoint_id") or (written.get("checkpoint") or {}).get("checkpoint_id")
    after = await client.threads.get_state(outcome.thread_id)
    landed = (after.get("metadata") or {}).get(MIGRATION_KEY) == plan.migration
    if not landed or (after.get("checkpoint") or {}).get("checkpoint_id") != outcome.new_head:
        outcome.action, outcome.reason = "failed", "written, but the new head does not carry the migration stamp"
        return
    if change.move is not None and change.move.to_node not in (after.get("next") or []):
        outcome.action = "failed"
        outcome.reason = f"written, but the thread's next is {after.get('next')}, not {change.move.to_node!r}"
        return
    outcome.action = "changed"


async def write_assistant(client: LangGraphClient, item: AssistantOutcome, plan: Plan) -> None:
    try:
        await client.assistants.update(
            item.assistant_id,
            context=item.after,
            metadata={CONTEXT_MIGRATION_KEY: plan.migration, CONTEXT_BASE_KEY: item.base_version, ROLLED_BACK_KEY: None},
        )
    except APIStatusError as exc:
        item.action, item.reason = "failed", f"the server refused the update ({exc.status_code}): {str(exc)[:300]}"
        return
    item.action = "changed"


# -- rollback ----------------------------------------------------------------------------------


def stamped_by(metadata: Mapping[str, Any] | None, migration: str) -> bool:
    """A checkpoint this migration wrote: an update (not a run, whose metadata a caller may fill)
    carrying its id."""
    metadata = metadata or {}
    return metadata.get(MIGRATION_KEY) == migration and metadata.get("source") == "update"


def _id(state: Mapping[str, Any] | None) -> str | None:
    return ((state or {}).get("checkpoint") or {}).get("checkpoint_id")


def _parent(state: Mapping[str, Any] | None) -> str | None:
    return ((state or {}).get("parent_checkpoint") or {}).get("checkpoint_id")


async def plan_rollback(client: LangGraphClient, plan: Plan, graph_id: str, views: Sequence[ThreadView]) -> list[ThreadOutcome]:
    """Per thread the migration touched: restore its pre-migration head, or say why not."""
    outcomes = []
    for view in views:
        history = await client.threads.get_history(view.thread_id, limit=HISTORY_LIMIT)
        stamped = [i for i, state in enumerate(history) if stamped_by(state.get("metadata"), plan.migration)]
        if not stamped:
            continue
        newest = history[stamped[0]]
        base_id = (newest.get("metadata") or {}).get(BASE_KEY) or _parent(newest)
        base = next((s for s in history if _id(s) == base_id), None)
        if base is None:
            base = await client.threads.get_state(view.thread_id, checkpoint_id=base_id)
        head = history[0]
        if stamped[0] == 0:
            action: Action = "skipped: busy" if view.status == "busy" else "would restore"
            outcomes.append(
                ThreadOutcome(
                    thread_id=view.thread_id,
                    graph_id=graph_id,
                    status=view.status,
                    blocks=view.blocks,
                    action=action,
                    base=base_id,
                    reason="a run is in flight on it" if view.status == "busy" else "",
                )
            )
        elif _is_copy_of(head, base):
            outcomes.append(
                ThreadOutcome(
                    thread_id=view.thread_id,
                    graph_id=graph_id,
                    status=view.status,
                    blocks=view.blocks,
                    action="already restored",
                    base=base_id,
                    new_head=_id(head),
                )
            )
        else:
            outcomes.append(
                ThreadOutcome(
                    thread_id=view.thread_id,
                    graph_id=graph_id,
                    status=view.status,
                    blocks=view.blocks,
                    action="skipped: moved on",
                    base=base_id,
                    reason=f"{stamped[0]} checkpoint(s) were written after the migration: rolling back would drop them",
                )
            )
    return outcomes


def _is_copy_of(head: Mapping[str, Any], base: Mapping[str, Any]) -> bool:
    return (
        (head.get("metadata") or {}).get("source") == "fork"
        and _parent(head) == _parent(base)
        and head.get("values") == base.get("values")
        and list(head.get("next") or []) == list(base.get("next") or [])
    )


async def restore_thread(client: LangGraphClient, outcome: ThreadOutcome) -> None:
    """A new head that is an exact copy of the pre-migration head (its channels, so its values and next)."""
    try:
        # ``checkpoint_id`` at the top level: see write_thread
        written: Mapping[str, Any] = await client.threads.update_state(
            outcome.thread_id,
            None,
            as_node="__copy__",
            checkpoint={"checkpoint_id": outcome.base},  # type: ignore[arg-type]  # an id alone: langgraph-sdk's Checkpoint requires every key
        )
    except ConflictError as exc:
        outcome.action, outcome.reason = "skipped: busy", f"the server refused the update: {exc}"
        return
    except APIStatusError as exc:
        outcome.action, outcome.reason = "failed", f"the server refused the restore ({exc.status_code}): {str(exc)[:300]}"
        return
    outcome.new_head = written.get("checkpoint_id")
    after, base = await asyncio.gather(
        client.threads.get_state(outcome.thread_id),
        client.threads.get_state(outcome.thread_id, checkpoint_id=outcome.base),
    )
    if after.get("values") != base.get("values") or list(after.get("next") or []) != list(base.get("next") or []):
        outcome.action, outcome.reason = "failed", "the restored head's values or next differ from the pre-migration head's"
        return
    outcome.action = "restored"


async def rollback_assistants(client: LangGraphClient, plan: Plan, graph_id: str) -> list[AssistantOutcome]:
    """Per assistant the migration updated: its pre-migration context, written back as a new version.

    (`assistants.set_latest` would be the natural undo, but on `langgraph dev` 0.16.7
    (runtime-inmem 0.36.7) it restores the version's config and metadata and keeps the newest
    context: observed, so the old context is written back instead.)"""
    outcomes = []
    offset = 0
    while True:
        # the server's contexts are JSON objects; langgraph-sdk types them as any Input
        page: Sequence[Mapping[str, Any]] = await client.assistants.search(graph_id=graph_id, limit=100, offset=offset)
        for assistant in page:
            meta = assistant.get("metadata") or {}
            assistant_id = assistant["assistant_id"]
            if meta.get(ROLLED_BACK_KEY) == plan.migration and meta.get(CONTEXT_MIGRATION_KEY) is None:
                outcomes.append(
                    AssistantOutcome(assistant_id, graph_id, "already restored", before=assistant.get("context") or {})
                )
                continue
            if meta.get(CONTEXT_MIGRATION_KEY) != plan.migration or not isinstance(meta.get(CONTEXT_BASE_KEY), int):
                continue
            item = AssistantOutcome(
                assistant_id, graph_id, "restored", before=assistant.get("context") or {}, base_version=meta[CONTEXT_BASE_KEY]
            )
            versions: Sequence[Mapping[str, Any]] = await client.assistants.get_versions(assistant_id, limit=100)
            base = next((v for v in versions if v.get("version") == meta[CONTEXT_BASE_KEY]), None)
            if base is None:
                item.action, item.reason = "failed", f"version {meta[CONTEXT_BASE_KEY]} (before the migration) is gone"
            else:
                try:
                    restored: Mapping[str, Any] = await client.assistants.update(
                        assistant_id,
                        context=base.get("context") or {},
                        metadata={CONTEXT_MIGRATION_KEY: None, CONTEXT_BASE_KEY: None, ROLLED_BACK_KEY: plan.migration},
                    )
                    item.after = restored.get("context") or {}
                except APIStatusError as exc:
                    item.action, item.reason = "failed", f"the server refused the update ({exc.status_code}): {str(exc)[:300]}"
            outcomes.append(item)
        if len(page) < 100:
            break
        offset += len(page)
    return outcomes


# -- the proof on staging -------------------------------------------------------------------------


@dataclass
class Proof:
    """What resuming one repaired thread on staging showed."""

    thread_id: str
    graph_id: str
    node: str
    """The node the pending step must run in (the move's target, else the thread's next)."""
    ok: bool
    """Nothing went wrong: the step ran, or (unanswered) the question was asked again."""
    proven: bool = False
    """The pending step ran under the candidate (with the answer, for a question)."""
    asked_again: bool | None = None
    """For a moved interrupt: the node asked the thread's pending question again."""
    answer: Any = None
    answer_source: str | None = None
    ran: list[str] = field(default_factory=list)
    wrote: Any = None
    """What the node wrote when it ran with the answer (its update)."""
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "graph_id": self.graph_id,
            "node": self.node,
            "ok": self.ok,
            "proven": self.proven,
            "asked_again": self.asked_again,
            "answer": self.answer,
            "answer_source": self.answer_source,
            "ran": self.ran,
            "wrote": self.wrote,
            "message": self.message,
        }


async def _stream(
    client: LangGraphClient, thread_id: str, graph_id: str, **kwargs: Any
) -> tuple[dict[str, list[Any]], str | None]:
    ran: dict[str, list[Any]] = {}
    try:
        async for part in client.runs.stream(thread_id, graph_id, stream_mode="updates", stream_subgraphs=True, **kwargs):
            if part.event == "error":
                return ran, f"the run failed: {json.dumps(part.data, default=str)[:300]}"
            if part.event.startswith("updates") and isinstance(part.data, dict):
                namespace = part.event.partition("|")[2]
                prefix = ":".join(seg.split(":")[0] for seg in namespace.split("|") if seg)
                for node, update in part.data.items():
                    ran.setdefault(f"{prefix}:{node}" if prefix else node, []).append(update)
    except APIStatusError as exc:
        return ran, f"the server refused the run ({exc.status_code}): {str(exc)[:300]}"
    return ran, None


async def prove_thread(client: LangGraphClient, outcome: ThreadOutcome, view: ThreadView, rule: Any) -> Proof | None:
    """Resume a repaired thread on staging and check the pending step really runs there.

    A moved interrupt: continue the thread (no input) and check the new node asks the same
    question; then answer it (``rule``: the replay's `ResumeRule`, applied to the question as
    the live thread showed it) and check the new node ran with it and did not ask again.
    Another thread with pending work: continue it and check its next node ran."""
    from migrations_playbook.proof.replay import Answer, asked_again, same_question

    change = outcome.change
    state = await client.threads.get_state(outcome.thread_id, subgraphs=True)
    nxt = list(state.get("next") or [])
    if change is None or not nxt:
        return None
    node = change.move.to_node if change.move is not None else nxt[0]
    questions = [i for i in view.interrupts if change.move is None or i.path == change.move.from_node] or list(view.interrupts)
    proof = Proof(outcome.thread_id, outcome.graph_id, node, ok=False)
    if not questions:
        ran, error = await _stream(client, outcome.thread_id, outcome.graph_id, input=None)
        proof.ran = sorted(ran)
        proof.ok = proof.proven = error is None and node in ran
        proof.wrote = (ran.get(node) or [None])[0]
        proof.message = error or ("the pending step ran" if proof.ok else f"{node!r} never ran")
        return proof
    # 1. the question is asked again, by the new node
    ran, error = await _stream(client, outcome.thread_id, outcome.graph_id, input=None)
    proof.ran = sorted(ran)
    after = await client.threads.get_state(outcome.thread_id, subgraphs=True)
    now = pending_interrupts(after)
    original = questions[0]
    again = [i for i in now if i.path == node and same_question(i.value, original.value)]
    proof.asked_again = bool(again)
    if error is not None or not again:
        proof.message = error or (
            f"{node!r} did not ask the pending question again (it waits on "
            f"{json.dumps([i.value for i in now], default=str)[:200]})"
        )
        return proof
    # 2. the answer lands there
    answer = rule.answer(PendingInterrupt(path=node, value=original.value, id=again[0].id)) if rule is not None else None
    if not isinstance(answer, Answer):
        proof.ok = True
        proof.message = (
            f"{node!r} asked the question again; not answered on staging: "
            f"{getattr(answer, 'reason', 'pass --auto-resume, --resume-map or --resume')}"
        )
        return proof
    proof.answer, proof.answer_source = answer.value, answer.source
    ran, error = await _stream(client, outcome.thread_id, outcome.graph_id, command={"resume": answer.value})
    proof.ran = sorted(set(proof.ran) | set(ran))
    proof.wrote = (ran.get(node) or [None])[0]
    final = await client.threads.get_state(outcome.thread_id, subgraphs=True)
    asked = asked_again(answer, pending_interrupts(final)) if "__interrupt__" in ran else None
    proof.ok = proof.proven = error is None and node in ran and asked is None
    if error is not None:
        proof.message = error
    elif node not in ran:
        proof.message = f"resumed with {json.dumps(answer.value, default=str)}, but {node!r} never ran"
    elif asked is not None:
        proof.message = f"{node!r} asked the same question again after {json.dumps(answer.value, default=str)}"
    else:
        proof.message = f"{node!r} asked the pending question again and ran with the answer"
    return proof


# -- the report ---------------------------------------------------------------------------------


@dataclass
class MigrateReport:
    migration: str
    mode: Mode
    live_url: str
    candidate: str
    served: dict[str, Served]
    before: GateReport | None
    threads: list[ThreadOutcome]
    assistants: list[AssistantOutcome] = field(default_factory=list)
    after: GateReport | None = None
    proofs: list[Proof] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    staging_url: str | None = None
    blocked: list[str] = field(default_factory=list)
    """The threads the gate blocked before the command (the ones the plan repairs)."""
    source: Literal["api", "checkpointer"] = "api"

    @property
    def uncovered(self) -> list[ThreadOutcome]:
        """Blocked threads the plan does nothing for (a thread blocked only because its assistant's
        context is rejected is covered by a context step that changes that assistant's context)."""
        fixed = {a.graph_id for a in self.assistants if a.action in ("would change", "changed", "already applied")}
        return [
            t
            for t in self.threads
            if t.action == "no change" and (set(t.blocks) - ({"CONTEXT_INVALID"} if t.graph_id in fixed else set()))
        ]

    @property
    def ok(self) -> bool:
        """Exit 0 or 1: the gate passes afterwards (dry run: the plan covers every blocked thread;
        rollback: every migrated thread is restored), and every proof held."""
        if self.mode == "rollback":
            return not any(t.action in ("failed", "skipped: busy", "skipped: moved on") for t in self.threads) and not any(
                a.action == "failed" for a in self.assistants
            )
        if self.mode == "dry run":
            return not self.uncovered
        if any(t.action == "failed" for t in self.threads) or any(a.action == "failed" for a in self.assistants):
            return False
        if self.proofs and not all(p.ok for p in self.proofs):
            return False
        return self.after is not None and self.after.verdict == "pass"

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for t in self.threads:
            counts[t.action] = counts.get(t.action, 0) + 1
        return {
            "migrate_result_version": MIGRATE_RESULT_VERSION,
            "migration": self.migration,
            "mode": self.mode,
            "live": self.live_url,
            "source": self.source,
            "staging": self.staging_url,
            "candidate": self.candidate,
            "served": dict(self.served),
            "ok": self.ok,
            "counts": dict(sorted(counts.items())),
            "blocked_before": list(self.blocked),
            "gate_before": self.before.to_json() if self.before else None,
            "gate_after": self.after.to_json() if self.after else None,
            "threads": [t.to_json() for t in self.threads],
            "assistants": [a.to_json() for a in self.assistants],
            "proofs": [p.to_json() for p in self.proofs],
            "notes": list(self.notes),
        }


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) and value.startswith("<") else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_table(report: MigrateReport) -> str:
    data = report.to_json()
    where = f"staging {report.staging_url} (a copy of {report.live_url})" if report.staging_url else report.live_url
    lines = [f"playbook migrate {report.migration}: {report.mode} on {where}, candidate {report.candidate}"]
    for graph_id, served in sorted(report.served.items()):
        if report.source == "checkpointer":
            lines.append(f"  {graph_id}: read in the live code's shape, written through the candidate in-process")
        else:
            lines.append(f"  {graph_id}: the server runs the {served}")
    if report.before is not None:
        lines.append(f"gate before: {report.before.verdict.upper()} ({len(report.blocked)} thread(s) blocked)")
        for finding in report.before.findings:
            if finding.severity == "block":
                where_ = " ".join(
                    p
                    for p in (
                        finding.graph_id,
                        f"node={finding.node}" if finding.node else "",
                        f"field={finding.field}" if finding.field else "",
                    )
                    if p
                )
                lines.append(f"  BLOCK {finding.code} {where_}: {finding.thread_count} thread(s)")
    lines.append("")
    for t in report.threads:
        if t.action == "no change" and not t.blocks:
            continue
        blocked = f" blocked by {', '.join(t.blocks)}" if t.blocks else ""
        lines.append(
            f"{t.thread_id}  {t.graph_id}  {t.status}{blocked}: {t.action.upper()}" + (f" ({t.reason})" if t.reason else "")
        )
        if t.base:
            lines.append(f"    pre-migration head {t.base}" + (f" -> new head {t.new_head}" if t.new_head else ""))
        if t.change is not None:
            if t.change.move is not None:
                m = t.change.move
                lines.append(
                    f"    step {m.step}: move {m.from_node} -> {m.to_node} (update_state as_node={m.as_node!r}: "
                    f"the candidate schedules {m.to_node!r}; it asks its question again when the thread is continued)"
                )
            for d in t.change.diff:
                lines.append(f"    {d.key}: {_short(d.before)} -> {_short(d.after)}  ({d.how})")
        if t.hidden or t.lost:
            lines.append(
                "    read from the thread record (the candidate hides them): "
                + ", ".join([*(f"key {k}" for k in t.hidden), *(f"lost step {n}" for n in t.lost)])
            )
    for a in report.assistants:
        lines.append(f"assistant {a.assistant_id}  {a.graph_id}: {a.action.upper()}" + (f" ({a.reason})" if a.reason else ""))
        if a.after:
            lines.append(f"    context: {_short(a.before, 80)} -> {_short(a.after, 80)}")
    for p in report.proofs:
        verdict = "PROVEN" if p.proven else "NOT PROVEN" if p.ok else "FAILED"
        lines.append(
            f"proof {p.thread_id}: {verdict} at {p.node!r}: {p.message}"
            + (f"; answer {_short(p.answer)} ({p.answer_source})" if p.answer_source else "")
            + (f"; it wrote {_short(p.wrote, 80)}" if p.wrote is not None else "")
        )
    if report.after is not None:
        lines.append(f"gate after: {report.after.verdict.upper()}")
        for finding in report.after.findings:
            if finding.severity == "block":
                lines.append(
                    f"  BLOCK {finding.code} {finding.graph_id} {finding.node or finding.field or ''}: "
                    f"{', '.join(finding.thread_ids)}"
                )
    counts = ", ".join(f"{k}: {v}" for k, v in data["counts"].items()) or "no threads"
    lines.append(f"threads: {counts}")
    for note in report.notes:
        lines.append(f"note: {note}")
    lines.append("result: " + ("OK" if report.ok else "NOT OK"))
    return "\n".join(lines)
