"""What a thread's state and its record say, read from the JSON the Agent Server API returns: pure, no client.

The state (``get_state(subgraphs=True)``): its tasks, nested through subgraph states (`task_facts`,
`task_ids`), the node paths it runs next (`pending_paths`), a stop at a compiled breakpoint
(`at_breakpoint`). The thread record (``threads.search``) against the state: the interrupts raised in
a node the serving code no longer has (`lost_steps`), and a record whose values a migration's
`update_state` left behind (`record_is_stale`, by the `MIGRATED_STATE_KEY` stamp).

`reads.py` applies them to every thread it reads; migrate's views, the runtime guard and the proofs
read states with them too, and so does the checkpointer source, whose snapshots are put in this
shape first (`shape.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from migrations_playbook.model import TaskFact
from migrations_playbook.sources.interrupts import PendingInterrupt


def task_facts(state: Mapping[str, Any], prefix: str = "") -> tuple[list[TaskFact], dict[str, dict[str, Any]]]:
    """The tasks of a state (nested through subgraph states) and the subgraph values by path."""
    facts: list[TaskFact] = []
    namespaces: dict[str, dict[str, Any]] = {}
    for task in state.get("tasks") or []:
        path = prefix + task["name"]
        interrupts = tuple(i.get("value") for i in task.get("interrupts") or [] if isinstance(i, Mapping))
        raw_path: Sequence[Any] = task.get("path") or ()
        facts.append(
            TaskFact(
                path=path,
                interrupted=bool(task.get("interrupts")),
                finished=task.get("result") is not None and not task.get("interrupts") and not task.get("error"),
                errored=bool(task.get("error")),
                push=bool(raw_path) and raw_path[0] == "__pregel_push",
                result=task.get("result") if isinstance(task.get("result"), dict) else None,
                interrupt_values=interrupts,
            )
        )
        nested = task.get("state")
        if isinstance(nested, Mapping) and "values" in nested:
            if isinstance(nested.get("values"), dict):
                namespaces[path] = nested["values"]
            inner, inner_ns = task_facts(nested, path + ":")
            facts.extend(inner)
            namespaces.update(inner_ns)
    return facts, namespaces


def task_ids(state: Mapping[str, Any]) -> set[str]:
    """Ids of the tasks a state reports, nested through subgraph states."""
    ids: set[str] = set()
    for task in state.get("tasks") or []:
        ids.add(str(task.get("id")))
        nested = task.get("state")
        if isinstance(nested, Mapping):
            ids |= task_ids(nested)
    return ids


LOST_STEP = "(a step the serving code no longer has)"
"""The name of a lost step when neither the record nor a lock names the node it was raised in."""


def gone_interrupt_nodes(lock: Mapping[str, Any] | None, nodes: Collection[str]) -> list[str]:
    """The live lock's interrupting root nodes that ``nodes`` (the serving code's) lacks."""
    return sorted(n for n in (lock or {}).get("interrupt_nodes") or [] if ":" not in n and n not in nodes)


def recorded_node(item: Mapping[str, Any]) -> str | None:
    """The root node a thread record's interrupt names, when it names one (older servers' ``ns``,
    ``["triage:<task id>", ...]``); the interrupts of LangGraph >= 0.6 carry only ``value`` and ``id``."""
    ns = item.get("ns")
    if isinstance(ns, Sequence) and not isinstance(ns, str) and ns and isinstance(ns[0], str):
        return ns[0].split(":", 1)[0] or None
    return None


def lost_steps(
    record: Mapping[str, Any],
    state: Mapping[str, Any],
    *,
    lock: Mapping[str, Any] | None,
    nodes: Collection[str],
    moved_from: Sequence[str] = (),
) -> list[PendingInterrupt]:
    """The interrupts a thread's record holds that were raised in a node the serving code no longer
    has: each as a `PendingInterrupt` whose ``path`` is that node (or a label when it is not known).

    A server derives a thread's ``next`` and tasks with the code it runs: after a rollout a thread
    paused in a node the new code lacks (a renamed node) shows nothing pending there. Its own record
    (``threads.search``'s ``interrupts``, keyed by task id) still holds what paused it. The match is
    by node, not by task id: `update_state` (a value-only repair) writes a new checkpoint, so the
    serving code schedules the same node again under a new task id while the record keeps the old
    one. A recorded interrupt is matched, in this order,

    1. by its task id, to a task the state reports (the same task: nothing lost);
    2. by the node the record names (``ns``, older servers): lost when ``nodes`` lacks it;
    3. by node, to a task the state schedules again (not finished, its id not in the record) in a
       node ``nodes`` has and that the live lock lists among its interrupt nodes (any such node
       when there is no lock): the step is still there;
    4. else it is lost, named by the live lock's interrupt node that ``nodes`` lacks
       (`gone_interrupt_nodes`; the plan's ``moved_from`` picks one of several), else `LOST_STEP`.

    With a lock whose interrupt nodes ``nodes`` all has, nothing is lost: every node the live code
    could pause in is still there. ``nodes`` are the serving code's (the served topology, the
    candidate a server runs, the guard's running graphs)."""
    recorded = {str(task_id): items for task_id, items in (record.get("interrupts") or {}).items() if items}
    scheduled = task_ids(state)
    unmatched = [(task_id, items) for task_id, items in recorded.items() if task_id not in scheduled]
    if not unmatched:
        return []
    interrupt_nodes: list[str] | None = list((lock or {}).get("interrupt_nodes") or []) or None
    gone = gone_interrupt_nodes(lock, nodes)
    if len(gone) > 1:
        named = [n for n in gone if n in moved_from]
        gone = named if len(named) == 1 else gone
    label = gone[0] if len(gone) == 1 else (f"(one of {', '.join(gone)})" if gone else LOST_STEP)
    roots = {n.split(":", 1)[0] for n in interrupt_nodes} if interrupt_nodes is not None else None
    again = [
        str(task.get("name"))
        for task in state.get("tasks") or []
        if str(task.get("id")) not in recorded
        and task.get("result") is None
        and not task.get("error")
        and str(task.get("name")) in nodes
        and (roots is None or str(task.get("name")) in roots)
    ]
    found: list[PendingInterrupt] = []
    for _task_id, items in unmatched:
        entries = [i for i in items if isinstance(i, Mapping)]
        named_by_record = {n for n in map(recorded_node, entries) if n is not None}
        if named_by_record:
            node: str | None = next(iter(sorted(named_by_record - set(nodes))), None)
        elif interrupt_nodes is not None and not gone:
            node = None  # every node the live code pauses in, the serving code has
        elif again:
            again.pop(0)
            node = None
        else:
            node = label
        if node is not None:
            found += [PendingInterrupt(path=node, value=i.get("value"), id=i.get("id")) for i in entries]
    return found


def lost_nodes(lost: Sequence[PendingInterrupt]) -> list[str]:
    """The nodes of `lost_steps`' interrupts, once each, in order."""
    return list(dict.fromkeys(i.path for i in lost))


def at_breakpoint(status: str, state: Mapping[str, Any]) -> bool:
    """Stopped by a compiled interrupt_before/after: interrupted with work pending, no interrupt() raised."""
    if status != "interrupted" or not state.get("next"):
        return False
    facts, _ = task_facts(state)
    return not any(f.interrupted for f in facts)


def pending_paths(state: Mapping[str, Any], prefix: str = "") -> tuple[str, ...]:
    """Node paths a thread runs next: `next`, pending tasks, and inside subgraph states."""
    paths: list[str] = [prefix + name for name in state.get("next") or []]
    for task in state.get("tasks") or []:
        path = prefix + task["name"]
        paths.append(path)
        nested = task.get("state")
        if isinstance(nested, Mapping) and "next" in nested:
            paths.extend(pending_paths(nested, path + ":"))
    return tuple(dict.fromkeys(paths))


MIGRATED_STATE_KEY = "playbook_migrated_state_at"
"""Thread metadata key `playbook migrate` stamps after it writes a thread (`update_state`): the
record's ``state_updated_at`` right after that write.

Why a stamp: `update_state` from a given checkpoint (migrate writes from the head it read) makes
Agent Server rebuild the thread record (``values``, ``interrupts``) from that base checkpoint, not
from the checkpoint it wrote, so the record keeps the pre-repair values until the thread runs
again. The state (`get_state`) has the repair; reading it for every idle thread would cost the gate
one call per thread. Metadata writes leave ``state_updated_at`` alone and every later state write
(a run, another update) moves it, so a record whose ``state_updated_at`` still equals the stamp
was last written by the migration: only those idle threads are read with `get_state`."""


def record_is_stale(thread: Mapping[str, Any]) -> bool:
    """Whether a thread record's values may predate its state: a migration wrote the thread's last
    state (`MIGRATED_STATE_KEY`), and nothing wrote its state since (or the server does not say)."""
    stamp = (thread.get("metadata") or {}).get(MIGRATED_STATE_KEY)
    if stamp is None:
        return False
    at = thread.get("state_updated_at")
    return at is None or str(at) == str(stamp)
