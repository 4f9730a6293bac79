"""Inspect, second source: a self-hosted checkpointer (PostgreSQL or SQLite), read-only.

The Agent Server source (`sources/api/reads.py`) asks the server's API; this one reads the
checkpoint tables the service's saver wrote (`migrations_playbook.sources.store.tables`) and
yields the same `ThreadSnapshot`s, so every rule and renderer works unchanged.

How a thread's status, `next`, tasks, interrupts and nested subgraph values are
derived: with LangGraph's own `get_state(subgraphs=True)` (``_prepare_state_snapshot``
and ``prepare_next_tasks``), run on a stand-in of the *live* graph compiled from its
contract lock (`migrations_playbook.sources.store.standin`), with a saver that serves the thread's
already-read heads and refuses every write (`HeadsSaver`). Re-deriving triggers by
hand (``branch:to:<node>`` versions against ``versions_seen``, push tasks and their
ids, ``live`` pending-write application, nested namespaces) would copy several
hundred lines of LangGraph and drift from it; the stand-in keeps the derivation
LangGraph's, and the lock supplies the one thing the store does not hold: the live
graph's shape. No node runs. The snapshot is then put in the shape the Agent Server
API returns (`state_json`) and read by the same functions `api/reads.py` uses (`api/state.py`).

Status, as Agent Server would report it: ``error`` when a task holds an error write,
``interrupted`` when a task waits at ``interrupt()`` or the thread stopped at a static
breakpoint of the lock (``interrupt_before``/``interrupt_after``, by LangGraph's
``should_interrupt`` test), ``busy`` when work is pending otherwise (a run in
progress, or one that stopped without finishing: the store cannot tell them apart),
``idle`` when nothing is pending.

Facts the API hides are read too and put on the `TaskFact`s: a pending `Send`'s
payload (``send_payload``), the nodes a task's pending writes route to (``routes``),
the `@task` results recorded for a paused task (``recorded_results``) and the resume
values it already received (``resume_values``).

Graph attribution: checkpoint metadata key ``graph_id`` (what Agent Server writes,
and what a self-hosted service passes as ``config={"metadata": {"graph_id": ...}}``),
else the one graph the candidate registers, else the operator's
``--all-threads-are GRAPH``.

The scan that streams a store's threads through `snapshot` (`iter_snapshots`, and
`partitioned`: a large PostgreSQL store read by one process per core) is in
`migrations_playbook.sources.store.scan`.
"""

from __future__ import annotations

import binascii
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from langgraph.channels.base import BaseChannel
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import INTERRUPT, RESUME, TASKS
from langgraph.errors import EmptyChannelError

from migrations_playbook.model import LiveGraph, TaskFact, ThreadSnapshot, Topology
from migrations_playbook.sources.api.reads import reducers_from_lock
from migrations_playbook.sources.api.shape import path_str, state_json, to_json
from migrations_playbook.sources.api.state import pending_paths, task_facts
from migrations_playbook.sources.compat import DeltaChannel
from migrations_playbook.sources.store.standin import BRANCH_TO, JOIN, LockLevel, StandIns, parse_join
from migrations_playbook.sources.store.tables import Head, ThreadHeads


@dataclasses.dataclass
class ScanCounts:
    """Threads the scan saw but did not snapshot, for the report's notes."""

    skipped: dict[str, int] = dataclasses.field(default_factory=dict)
    """graph id -> threads of a graph not asked for (``--graph``)."""
    unlocked: dict[str, int] = dataclasses.field(default_factory=dict)
    """graph id -> threads of a graph no live lock describes (not scanned)."""
    read_idle: int = 0
    """Threads told idle from their row (`IdleTest`), without ``get_state``."""

    def merge(self, other: ScanCounts) -> None:
        """Add another part's counts (`partitioned`)."""
        for mine, theirs in ((self.skipped, other.skipped), (self.unlocked, other.unlocked)):
            for graph_id, count in theirs.items():
                mine[graph_id] = mine.get(graph_id, 0) + count
        self.read_idle += other.read_idle

    def notes(self, locks_dir: str) -> list[str]:
        notes = []
        for graph_id, count in sorted(self.unlocked.items()):
            notes.append(
                f"{count} thread(s) of graph {graph_id!r} were not scanned: no live lock for it in {locks_dir} "
                "(pass the deployed commit's locks)"
            )
        return notes


RETURN = "__return__"
"""The write channel of a `@task` call's recorded result (LangGraph's stored name)."""
PUSH = "__pregel_push"


class ReadOnlyStore(Exception):
    """Something tried to write through the gate's saver (it never should)."""


# -- the saver LangGraph's get_state reads through -----------------------------------


class HeadsSaver(BaseCheckpointSaver[str]):
    """Serves `get_tuple` from the heads of the thread being derived; writes are refused."""

    def __init__(self) -> None:
        super().__init__(serde=JsonPlusSerializer())
        self.thread: ThreadHeads | None = None

    def get_tuple(self, config: Mapping[str, Any]) -> CheckpointTuple | None:
        conf = config.get("configurable") or {}
        if self.thread is None or conf.get("thread_id") != self.thread.thread_id:
            return None
        head = self.thread.heads.get(conf.get("checkpoint_ns") or "")
        if head is None or head.saved is None:
            return None
        wanted = conf.get("checkpoint_id")
        if wanted and head.saved.config["configurable"]["checkpoint_id"] != wanted:
            return None
        return head.saved

    def list(self, *args: Any, **kwargs: Any) -> Iterator[CheckpointTuple]:
        raise ReadOnlyStore("the gate reads only the latest checkpoint of each namespace")

    def put(self, *args: Any, **kwargs: Any) -> Any:
        raise ReadOnlyStore("the gate never writes a checkpoint")

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        raise ReadOnlyStore("the gate never writes")

    def delete_thread(self, *args: Any, **kwargs: Any) -> None:
        raise ReadOnlyStore("the gate never deletes")

    async def aget_tuple(self, config: Mapping[str, Any]) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        raise ReadOnlyStore("the gate never writes a checkpoint")

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        raise ReadOnlyStore("the gate never writes")


# -- the live side, from locks -------------------------------------------------------------


def live_graphs(locks: Mapping[str, Mapping[str, Any]], wanted: Sequence[str]) -> dict[str, LiveGraph]:
    return {
        graph_id: LiveGraph(
            graph_id=graph_id,
            topology=Topology.from_lock(dict(locks[graph_id])),
            reducers=reducers_from_lock(locks[graph_id]),
            lock=dict(locks[graph_id]),
        )
        for graph_id in wanted
    }


# -- one thread --------------------------------------------------------------------------------


def _routes(writes: Sequence[Any]) -> tuple[str, ...]:
    """Nodes a task's writes schedule: ``branch:to:X``, a join toward X, a `Send` to X."""
    found: set[str] = set()
    for write in writes:
        if write.channel.startswith(BRANCH_TO):
            found.add(write.channel[len(BRANCH_TO) :])
        elif write.channel.startswith(JOIN):
            parsed = parse_join(write.channel)
            if parsed:
                found.add(parsed[1])
        elif write.channel == TASKS and hasattr(write.value, "node"):
            found.add(str(write.value.node))
    return tuple(sorted(found))


def _extras(head: Head | None, task: Mapping[str, Any], sends: Sequence[Any]) -> dict[str, Any]:
    """What the store shows of one task beyond the API's view."""
    if head is None:
        return {}
    own = [w for w in head.writes if w.task_id == task["id"]]
    extras: dict[str, Any] = {"routes": _routes(own)}
    raw_path = task.get("path") or []
    index = raw_path[1] if len(raw_path) >= 2 and raw_path[0] == PUSH else None
    if isinstance(index, int) and 0 <= index < len(sends):  # a Send task: its payload is the TASKS value it came from
        extras["send_payload"] = to_json(getattr(sends[index], "arg", None))
    prefix = f"~{PUSH}, {path_str(raw_path)}, "
    extras["recorded_results"] = sum(1 for w in head.writes if w.channel == RETURN and w.task_path.startswith(prefix))
    resumes = [w.value for w in own if w.channel == RESUME]
    flat: list[Any] = []
    for value in resumes:
        flat.extend(value if isinstance(value, list) else [value])
    extras["resume_values"] = tuple(to_json(flat))
    return extras


def _facts(
    state: Mapping[str, Any], thread: ThreadHeads, sends: Mapping[str, Sequence[Any]], prefix: str = ""
) -> tuple[list[TaskFact], dict[str, dict[str, Any]]]:
    """`live.task_facts`, task by task, with the store's extra facts on each."""
    facts: list[TaskFact] = []
    namespaces: dict[str, dict[str, Any]] = {}
    head = thread.heads.get(state.get("checkpoint_ns") or "")
    for task in state.get("tasks") or []:
        (fact,), _ = task_facts({"tasks": [{**task, "state": None}]}, prefix)
        facts.append(dataclasses.replace(fact, **_extras(head, task, sends.get(state.get("checkpoint_ns") or "", ()))))
        nested = task.get("state")
        if isinstance(nested, Mapping) and "values" in nested:
            path = prefix + task["name"]
            if isinstance(nested.get("values"), dict):
                namespaces[path] = nested["values"]
            inner, inner_ns = _facts(nested, thread, sends, path + ":")
            facts.extend(inner)
            namespaces.update(inner_ns)
    return facts, namespaces


def _any_task(state: Mapping[str, Any], test: Callable[[Mapping[str, Any]], bool]) -> bool:
    for task in state.get("tasks") or []:
        if test(task):
            return True
        nested = task.get("state")
        if isinstance(nested, Mapping) and _any_task(nested, test):
            return True
    return False


def _at_breakpoint(head: Head | None, stored: _Stored, level: LockLevel, pending: Sequence[str]) -> bool:
    """LangGraph's ``should_interrupt`` on the stored checkpoint: a channel changed since the last
    interrupt, and a pending node is a breakpoint (before), or the step just run had one (after)."""
    if not pending or not (level.interrupt_before or level.interrupt_after):
        return False
    null = type(next(iter(stored.versions.values()), ""))()
    if not any(version > stored.interrupt_seen.get(channel, null) for channel, version in stored.versions.items()):
        return False
    if set(pending) & level.interrupt_before:
        return True
    return bool(level.interrupt_after) and not (head is not None and head.writes)


def _levels(
    state: Mapping[str, Any], stand_ins: StandIns, prefix: str = ""
) -> Iterator[tuple[str, LockLevel, Mapping[str, Any]]]:
    """(namespace, lock level, state) for the thread and each nested subgraph state."""
    yield state.get("checkpoint_ns") or "", stand_ins.level(prefix), state
    for task in state.get("tasks") or []:
        nested = task.get("state")
        if isinstance(nested, Mapping):
            yield from _levels(nested, stand_ins, f"{prefix}:{task['name']}" if prefix else task["name"])


def level_of(ns: str) -> str:
    """``review:<id>|inner:<id>`` -> ``review:inner`` (the lock's subgraph path)."""
    return ":".join(part.split(":")[0] for part in ns.split("|")) if ns else ""


@dataclasses.dataclass(frozen=True)
class _Stored:
    """What one namespace head holds before `get_state` touches it (it applies pending writes in place)."""

    versions: dict[str, Any]
    interrupt_seen: dict[str, Any]
    sends: list[Any]

    @classmethod
    def of(cls, head: Head) -> _Stored:
        checkpoint: Mapping[str, Any] = head.saved.checkpoint if head.saved is not None else {}
        return cls(
            versions=dict(checkpoint.get("channel_versions") or {}),
            interrupt_seen=dict((checkpoint.get("versions_seen") or {}).get(INTERRUPT) or {}),
            sends=list((checkpoint.get("channel_values") or {}).get(TASKS) or ()),
        )


def _status(state: Mapping[str, Any], at_breakpoint: bool) -> str:
    if _any_task(state, lambda t: bool(t.get("error"))):
        return "error"
    if at_breakpoint or _any_task(state, lambda t: bool(t.get("interrupts"))):
        return "interrupted"
    if state["next"] or _any_task(state, lambda t: t.get("result") is None):
        return "busy"
    return "idle"


class IdleTest:
    """Whether LangGraph's ``get_state`` would find nothing to do on a thread, told from its row.

    ``get_state`` schedules a task for each pending ``Send`` (a non-empty ``__pregel_tasks``) and
    for each node with a trigger channel that is available and newer than the node has seen
    (``_triggers`` in ``langgraph.pregel._algo``; for a node that never ran, any available
    trigger); it applies pending writes, reads subgraph states only for tasks, and migrates
    checkpoints older than format 4. A thread whose only namespace is the root, with format 4, no
    pending write, no pending ``Send`` and no trigger that is both newer than its node has seen
    and available (asked of the channel built from the stored value, as ``get_state`` builds it;
    a consumed ``branch:to:X`` moved its version on but stores nothing, a passed join stores an
    empty barrier) therefore gets ``next == ()``, no task and no interrupt: it is idle, and its
    values are the graph's output channels read from the checkpoint (``read_channels``), read here
    the same way, without building every channel, preparing tasks or hashing task ids. Anything
    unexpected in the row goes to ``get_state``.
    """

    def __init__(self, graph: Any) -> None:
        self.triggers = tuple((name, tuple(node.triggers)) for name, node in graph.nodes.items())
        self.channels: Mapping[str, BaseChannel[Any, Any, Any]] = graph.channels
        self.empty_available: dict[str, bool] = {}
        """trigger channel -> whether its empty copy is available (the spec never changes: asked once)."""
        self.select = graph.stream_channels_asis
        keys = [self.select] if isinstance(self.select, str) else list(self.select)
        specs = {k: graph.channels.get(k) for k in keys}
        self.specs = specs if all(isinstance(v, BaseChannel) for v in specs.values()) else None
        """The output channels; None when one is a managed value (``get_state`` fails there: not idle)."""

    def values(self, thread: ThreadHeads) -> Any:
        """The thread's values when it is idle, else None (then ``get_state`` decides)."""
        head = thread.root
        if len(thread.heads) != 1 or head is None or head.saved is None or head.writes or self.specs is None:
            return None
        checkpoint = head.saved.checkpoint
        try:
            if int(checkpoint["v"]) < 4 or "ts" not in checkpoint:
                return None
            binascii.unhexlify(checkpoint["id"].replace("-", ""))  # what prepare_next_tasks reads first
            stored = checkpoint["channel_values"]
            if stored.get(TASKS):
                return None
            versions: Mapping[str, Any] = checkpoint["channel_versions"]  # one type per saver (get_next_version): they compare
            if versions:  # without versions get_state considers no node at all
                seen_by = checkpoint["versions_seen"]
                null = type(next(iter(versions.values())))()
                for name, triggers in self.triggers:
                    seen = seen_by.get(name)
                    for channel in triggers:
                        if (seen is None or versions.get(channel, null) > seen.get(channel, null)) and (
                            self._available(channel, stored)
                        ):
                            return None
            channels = {}
            for key, spec in self.specs.items():
                if key not in stored and key in versions and isinstance(spec, (DeltaChannel, BinaryOperatorAggregate)):
                    return None  # a delta channel's history walk (``channels_from_checkpoint``): get_state's
                channels[key] = _channel(spec, stored, key)
            return _read(channels, self.select)
        except Exception:  # noqa: BLE001 - an odd row is get_state's to judge (and to report)
            return None

    def _available(self, channel: str, stored: Mapping[str, Any]) -> bool:
        """Whether the trigger ``channel`` built from the checkpoint (`_channel`) is available."""
        if channel in stored:
            return self.channels[channel].from_checkpoint(stored[channel]).is_available()
        known = self.empty_available.get(channel)
        if known is None:
            known = self.empty_available[channel] = self.channels[channel].copy().is_available()
        return known


def _channel(spec: BaseChannel[Any, Any, Any], stored: Mapping[str, Any], key: str) -> BaseChannel[Any, Any, Any]:
    """The channel as ``channels_from_checkpoint`` builds it: from its stored value, else empty
    (an unwritten spec's copy is ``from_checkpoint`` of nothing)."""
    return spec.from_checkpoint(stored[key]) if key in stored else spec.copy()


def _read(channels: Mapping[str, BaseChannel[Any, Any, Any]], select: str | Sequence[str]) -> Any:
    """LangGraph's ``read_channels``: one channel's value (None when empty), or the non-empty ones."""
    if isinstance(select, str):
        try:
            return channels[select].get()
        except EmptyChannelError:
            return None
    values = {}
    for key in select:
        try:  # noqa: SIM105 - once per output channel of every idle thread: contextlib.suppress costs ~0.5 µs a call
            values[key] = channels[key].get()
        except EmptyChannelError:
            pass
    return values


def _joins(thread: ThreadHeads) -> frozenset[tuple[str, str]]:
    """The ``(level, join channel)`` pairs the thread's checkpoints hold (they pick the stand-in)."""
    return frozenset(
        (level_of(ns), channel)
        for ns, head in thread.heads.items()
        if head.saved is not None  # always: `_derive` refuses a thread with an undecodable head first
        for channel in (head.saved.checkpoint.get("channel_versions") or {})
        if channel.startswith(JOIN)
    )


def _derive(
    thread: ThreadHeads, lock: Mapping[str, Any], stand_ins: StandIns, saver: HeadsSaver, *, fast: bool = True
) -> dict[str, Any]:
    """The thread's state (API shape), task facts, nested values, status and, at a breakpoint, the
    nodes it ever scheduled. Raises on a checkpoint that cannot be decoded or derived. ``fast``:
    an idle thread (`IdleTest`) is read straight from its row, without ``get_state``."""
    broken = sorted((ns, h.error) for ns, h in thread.heads.items() if h.saved is None)
    if broken:
        where = "its checkpoint" if broken[0][0] == "" else f"its subgraph checkpoint {broken[0][0]!r}"
        raise ValueError(f"{where} cannot be decoded ({broken[0][1]})")
    graph = stand_ins.get(_joins(thread))
    if fast:
        idle = stand_ins.derived.get(id(graph))
        if idle is None:
            idle = stand_ins.derived[id(graph)] = IdleTest(graph)
        values = idle.values(thread)
        if values is not None:
            state = {"values": to_json(values), "next": [], "checkpoint_ns": "", "tasks": []}
            return {"state": state, "facts": [], "namespaces": {}, "status": "idle", "ran": None, "fast": True}
    stored = {ns: _Stored.of(head) for ns, head in thread.heads.items()}
    saver.thread = thread
    try:
        state = to_json(state_json(graph.get_state({"configurable": {"thread_id": thread.thread_id}}, subgraphs=True)))
    finally:
        saver.thread = None
    facts, namespaces = _facts(state, thread, {ns: s.sends for ns, s in stored.items()})
    empty = _Stored({}, {}, [])
    at_breakpoint = any(
        _at_breakpoint(thread.heads.get(ns), stored.get(ns, empty), level, level_state.get("next") or [])
        for ns, level, level_state in _levels(state, stand_ins)
    )
    ran = None
    if at_breakpoint:  # what get_history would show: every node the thread ever scheduled
        versions = stored[""].versions
        ran = frozenset(c[len(BRANCH_TO) :] for c in versions if c.startswith(BRANCH_TO)) | ({"__start__"} & set(versions))
    return {
        "state": state,
        "facts": facts,
        "namespaces": namespaces,
        "status": _status(state, at_breakpoint),
        "ran": ran,
        "fast": False,
    }


def snapshot(
    thread: ThreadHeads,
    graph_id: str,
    lock: Mapping[str, Any],
    stand_ins: StandIns,
    saver: HeadsSaver,
    *,
    fast: bool = True,
    counts: ScanCounts | None = None,
) -> ThreadSnapshot:
    """One thread's snapshot (LangGraph's get_state on the live graph's stand-in; an idle thread read
    straight from its row unless ``fast`` is off). Never raises: a thread whose checkpoint cannot be
    decoded or derived comes back ``unreadable``."""
    return snapshot_and_state(thread, graph_id, lock, stand_ins, saver, fast=fast, counts=counts)[0]


def snapshot_and_state(
    thread: ThreadHeads,
    graph_id: str,
    lock: Mapping[str, Any],
    stand_ins: StandIns,
    saver: HeadsSaver,
    *,
    fast: bool = True,
    counts: ScanCounts | None = None,
) -> tuple[ThreadSnapshot, dict[str, Any] | None]:
    """`snapshot`, and the state it was read from in the shape ``GET /threads/{id}/state?subgraphs=true``
    returns (`state_json`, with interrupt ids); None for an unreadable thread. (A thread is derived
    once: ``get_state`` applies pending writes to the checkpoint it reads.)"""
    metadata = thread.root.metadata if thread.root is not None else {}
    assistant_id = metadata.get("assistant_id") if isinstance(metadata.get("assistant_id"), str) else None
    try:
        derived = _derive(thread, lock, stand_ins, saver, fast=fast)
    except Exception as exc:  # noqa: BLE001 - one bad checkpoint must not stop the scan: it is reported
        reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        return ThreadSnapshot(
            thread_id=thread.thread_id,
            graph_id=graph_id,
            status="error",
            values={},
            assistant_id=assistant_id,
            unreadable=f"read from the checkpointer: {reason}",
        ), None
    state, status = derived["state"], derived["status"]
    if counts is not None and derived["fast"]:
        counts.read_idle += 1
    return ThreadSnapshot(
        thread_id=thread.thread_id,
        graph_id=graph_id,
        status=status,
        values=state["values"] if isinstance(state.get("values"), dict) else {},
        pending=pending_paths(state) if status != "idle" else (),
        tasks=tuple(derived["facts"]),
        namespaces=derived["namespaces"],
        next=tuple(state.get("next") or ()),
        assistant_id=assistant_id,
        ran=derived["ran"],
    ), state
