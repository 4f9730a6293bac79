"""Inspect, second source: a self-hosted checkpointer (PostgreSQL or SQLite), read-only.

The Agent Server source (`live.py`) asks the server's API; this one reads the
checkpoint tables the service's saver wrote (`migrations_playbook.stores`) and
yields the same `ThreadSnapshot`s, so every rule and renderer works unchanged.

How a thread's status, `next`, tasks, interrupts and nested subgraph values are
derived: with LangGraph's own `get_state(subgraphs=True)` (``_prepare_state_snapshot``
and ``prepare_next_tasks``), run on a stand-in of the *live* graph compiled from its
contract lock (`migrations_playbook.standin`), with a saver that serves the thread's
already-read heads and refuses every write (`HeadsSaver`). Re-deriving triggers by
hand (``branch:to:<node>`` versions against ``versions_seen``, push tasks and their
ids, ``live`` pending-write application, nested namespaces) would copy several
hundred lines of LangGraph and drift from it; the stand-in keeps the derivation
LangGraph's, and the lock supplies the one thing the store does not hold: the live
graph's shape. No node runs. The snapshot is then put in the shape the Agent Server
API returns (`state_json`) and read by the same functions `live.py` uses.

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

A large PostgreSQL store is read by one process per core (`partitioned`): each reads a
contiguous range of thread ids in one shared snapshot and judges its threads, and the
parts' findings are merged in thread id order, as one pass would have found them.
"""

from __future__ import annotations

import binascii
import contextlib
import dataclasses
import json
import mmap
import os
import pickle
import select
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from langgraph.channels.base import BaseChannel
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import INTERRUPT, RESUME, TASKS
from langgraph.errors import EmptyChannelError

from migrations_playbook.live import pending_paths, reducers_from_lock, task_facts
from migrations_playbook.model import LiveGraph, TaskFact, ThreadSnapshot, Topology
from migrations_playbook.standin import BRANCH_TO, JOIN, LockLevel, StandIns, parse_join
from migrations_playbook.stores import Head, Store, StoreError, ThreadHeads

GRAPH_ID_KEY = "graph_id"
"""Checkpoint metadata key naming a thread's graph (Agent Server writes it on every run)."""

RETURN = "__return__"
"""The write channel of a `@task` call's recorded result (LangGraph's stored name)."""
PUSH = "__pregel_push"

Progress = Callable[[str, int, int], None]


class AttributionError(Exception):
    """A thread cannot be attributed to a graph (exit 2: pass --all-threads-are)."""


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


# -- attribution ---------------------------------------------------------------------------


@dataclasses.dataclass
class Attribution:
    """Which graph a thread belongs to."""

    single: str | None = None
    """The graph unlabeled threads belong to: ``--all-threads-are``, or the only graph there is."""
    forced: bool = False
    """``--all-threads-are``: every thread belongs to ``single``, whatever its metadata says."""

    def graph_of(self, thread: ThreadHeads) -> str:
        if self.forced and self.single:
            return self.single
        root = thread.root
        label = root.metadata.get(GRAPH_ID_KEY) if root is not None else None
        if isinstance(label, str) and label:
            return label
        if self.single:
            return self.single
        raise AttributionError(
            f"thread {thread.thread_id} has no {GRAPH_ID_KEY!r} in its checkpoint metadata and several graphs could "
            "own it: pass --all-threads-are GRAPH (every thread of the store belongs to GRAPH), or have the service "
            f"run its graphs with config={{'metadata': {{'{GRAPH_ID_KEY}': ...}}}}"
        )


# -- one thread --------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """`json.dumps` default: what the Agent Server API does with stored objects."""
    if hasattr(value, "model_dump") and not isinstance(value, type):
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "_asdict") and not isinstance(value, type):
        return value._asdict()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value)}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return repr(value)


def to_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=_jsonable, ensure_ascii=False))


def state_json(snapshot: Any) -> dict[str, Any]:
    """A `StateSnapshot` in the shape `GET /threads/{id}/state?subgraphs=true` returns it
    (langgraph-api's ``state_snapshot_to_thread_state``), plus each level's namespace."""
    from langgraph.types import StateSnapshot

    return {
        "values": snapshot.values,
        "next": list(snapshot.next),
        "checkpoint_ns": ((snapshot.config or {}).get("configurable") or {}).get("checkpoint_ns", ""),
        "tasks": [
            {
                "id": task.id,
                "name": task.name,
                "path": list(task.path),
                "error": f"{type(task.error).__name__}: {task.error}" if task.error is not None else None,
                "interrupts": [{"value": i.value, "id": i.id} for i in task.interrupts],
                "state": state_json(task.state) if isinstance(task.state, StateSnapshot) else None,
                "result": task.result,
            }
            for task in snapshot.tasks
        ],
    }


def path_str(path: Any) -> str:
    """A task path as the savers store it beside its writes (``~__pregel_pull, triage``):
    LangGraph's ``task_path_str`` (a tuple is ``~`` and its parts, an int 10 digits)."""
    if isinstance(path, tuple | list):
        return "~" + ", ".join(path_str(part) for part in path)
    if isinstance(path, int):
        return f"{path:010d}"
    return str(path)


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


def _level_of(ns: str) -> str:
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
        (_level_of(ns), channel)
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


# -- the scan --------------------------------------------------------------------------------


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


def iter_snapshots(
    store: Store,
    locks: Mapping[str, Mapping[str, Any]],
    wanted: Sequence[str],
    attribution: Attribution,
    *,
    counts: ScanCounts | None = None,
    progress: Progress | None = None,
    label: str = "threads",
    fast: bool = True,
    total: int | None = None,
) -> Iterator[ThreadSnapshot]:
    """Every thread of the store that belongs to a ``wanted`` graph, as a snapshot, streamed
    (``fast=False``: every thread through ``get_state``, the reference the fast path is tested against).
    ``total``: the progress bar's total when the caller knows it (else the store counts)."""
    saver = HeadsSaver()
    stand_ins = {graph_id: StandIns(locks[graph_id], saver) for graph_id in wanted}
    counts = counts if counts is not None else ScanCounts()
    if total is None:
        total = store.count_threads() if progress else 0
    done = 0
    for thread in store.threads():
        done += 1
        if progress and (done % 200 == 0 or done == total):
            progress(label, done, max(total, done))
        graph_id = attribution.graph_of(thread)
        if graph_id not in stand_ins:
            bucket = counts.unlocked if graph_id not in locks else counts.skipped
            bucket[graph_id] = bucket.get(graph_id, 0) + 1
            continue
        yield snapshot(thread, graph_id, locks[graph_id], stand_ins[graph_id], saver, fast=fast, counts=counts)
    if progress and done and done % 200:
        progress(label, done, max(total, done))


# -- a partitioned scan ------------------------------------------------------------------------

MAX_WORKERS = 4
"""At most this many processes read one store (fewer on a machine with fewer cores)."""

R = TypeVar("R")


def workers() -> int:
    """Processes a partitioned scan uses here: one per core this process may run on, at most
    `MAX_WORKERS`; 1 where processes cannot be forked (then the scan stays in this process)."""
    if not hasattr(os, "fork") or sys.platform != "linux":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores))


def partitioned(
    store: Store,
    work: Callable[[Store, Progress | None, int], R],
    *,
    progress: Progress | None = None,
    label: str = "threads",
    processes: int | None = None,
) -> list[R]:
    """``work(store, progress, total)`` over the whole store, its results in thread id order.

    A store that can share its snapshot (`PostgresStore.share`) is split into contiguous ranges
    of thread ids, one per process: this one reads the first range on its own connection, forked
    copies of it (LangGraph, the candidate and the locks already loaded) read the others, each on
    a new read-only connection that imports the exported snapshot, so every part reads the same
    consistent state the whole scan would have read. A part's ``work`` returns what it found
    (picklable: findings, counts, never the threads), sent back through a pipe; memory stays
    bounded per process as in one scan. An error in a part is raised here, the first range's
    first (as one scan in thread id order would raise it); the other workers are then stopped.
    Any other store, a small one, or a machine with one core: ``work`` runs once, on the whole store.
    ``progress`` (this process only) shows the threads every part has done."""
    count = processes if processes is not None else workers()
    share = getattr(store, "share", None)
    parts = share(count) if share is not None and count > 1 else []
    total = store.count_threads() if progress else 0
    if not parts:
        return [work(store, progress, total)]
    done = memoryview(mmap.mmap(-1, 8 * len(parts))).cast("q")  # shared with the forked workers: their progress

    def counter(index: int) -> Progress:
        def report(_label: str, finished: int, _total: int) -> None:
            done[index] = finished
            if index == 0 and progress is not None:
                progress(label, sum(done), max(total, sum(done)))

        return report

    def here(part: Any, index: int) -> Any:
        """``work`` over one part in this process (its own snapshot is the exported one)."""
        store.part = part  # type: ignore[attr-defined]  # PostgresStore: threads() reads this range
        try:
            return work(store, counter(index), 0)
        finally:
            store.part = None  # type: ignore[attr-defined]  # PostgresStore, as above: back to the whole store

    def tick() -> None:
        if progress is not None:
            progress(label, sum(done), max(total, sum(done)))

    children: list[tuple[int, int]] = []
    try:
        for index, part in enumerate(parts[1:], start=1):
            children.append(_fork(store, part, work, counter(index)))
        results = [here(parts[0], 0)]
        for index in range(1, len(parts)):
            pid, reader = children.pop(0)
            found = _collect(pid, reader, tick)
            # A worker that could not connect (the server's connection limit, say): its part is read here.
            results.append(here(parts[index], index) if found is _NO_CONNECTION else found)
            tick()  # the worker counted its last threads before it answered
        return results
    finally:
        for pid, reader in children:  # an error: stop the workers not collected yet
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            with contextlib.suppress(OSError):
                os.close(reader)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)


def _fork(store: Store, part: Any, work: Callable[[Store, Progress | None, int], Any], report: Progress) -> tuple[int, int]:
    """A worker process reading ``part``: (its pid, the pipe its result comes through)."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid:
        os.close(writer)
        return pid, reader
    # The worker. It never touches the parent's connection (closing it would end the parent's
    # session) and leaves through os._exit, so no finalizer of the parent's objects runs here.
    code = 0
    try:
        os.close(reader)
        try:
            own = type(store)(store._uri, part=part)  # type: ignore[attr-defined, call-arg]  # PostgresStore
        except StoreError:
            outcome: tuple[str, Any] = ("no connection", None)
        else:
            try:
                outcome = ("ok", work(own, report, 0))
            finally:
                own.close()
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, raised there
        outcome, code = ("error", exc), 1
    try:
        try:
            payload = pickle.dumps(outcome)
        except Exception as exc:  # noqa: BLE001 - an error that does not pickle is sent as its text
            payload = pickle.dumps(("error", RuntimeError(f"{type(outcome[1]).__name__}: {outcome[1]} ({exc})")))
        with os.fdopen(writer, "wb") as out:
            out.write(payload)
    finally:
        os._exit(code)


def _collect(pid: int, reader: int, tick: Callable[[], Any]) -> Any:
    """The result a worker sends (its error raised here), showing progress while it reads; the
    worker is waited for whatever happens."""
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([reader], [], [], 0.2)
            if not ready:
                tick()
                continue
            chunk = os.read(reader, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
        raise
    finally:
        os.close(reader)
        _, status = os.waitpid(pid, 0)
    if not chunks:
        raise RuntimeError(f"a scan worker ended without a result (wait status {status})")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "error":
        raise value
    return _NO_CONNECTION if kind == "no connection" else value


_NO_CONNECTION = object()
"""`_collect`'s answer for a worker that could not open its connection."""
