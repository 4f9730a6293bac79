"""`playbook migrate --checkpointer URI`: the same plan, on a self-hosted checkpointer's threads.

Read: the checkpointer source (`checkpointer.py`, read-only): each thread's head as the live
code's shape derives it (a stand-in of the live lock, ``--live-contract``), so a thread paused
at a node the candidate lacks shows that node, and its values hold every key the checkpoint
holds. Nothing has to be read from a cache, as through a server running the candidate.

Write: the candidate's graph compiled in-process with a writable saver on the same database
(`SqliteSaver`, or `PostgresSaver` from langgraph-checkpoint-postgres), and LangGraph's own
``graph.update_state(config, values, as_node)``, the call Agent Server makes, with the stamp
in ``config["metadata"]`` (the saver merges it into the checkpoint metadata). So a node move
is written through the candidate's edges whatever code the service runs, which makes the
moment the operator's to choose: the service must not run the live code on these threads
afterwards (a moved thread is stranded under the live code, as an unmoved one is under the
candidate). Apply while the service is stopped for the rollout, between the old code's stop
and the candidate's start. A store cannot tell a run in progress from one that died, so every
thread with work pending and no interrupt ("busy") is skipped and named.

Afterwards the store is read again: a thread the migration stamped is judged in the
candidate's shape (a stand-in of the candidate's own contract), any other in the live one.
Rollback copies the pre-migration head (``update_state(as_node="__copy__")``), as through
the API. A store has no assistants: context steps are reported as not applicable.
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
from collections.abc import Iterator, Mapping
from typing import Any

from migrations_playbook.cli import UsageError
from migrations_playbook.sources.api import LiveUnreachable
from migrations_playbook.repair.engine import (
    HISTORY_LIMIT,
    MigrateReport,
    Mode,
    Scan,
    Served,
    ThreadOutcome,
    ThreadView,
    encode_writes,
    judge,
    plan_threads,
    stamped_by,
)
from migrations_playbook.repair.plan import BASE_KEY, MIGRATION_KEY, MOVED_KEY, Plan, PlanError
from migrations_playbook.proof.replay import PendingInterrupt

SERVED: Served = "candidate"
"""What a store write goes through: the candidate, compiled in-process."""


def sqlite_saver() -> Any:
    """langgraph-checkpoint-sqlite's ``SqliteSaver`` (to write a SQLite store), or a usage error naming
    the extra: reading a SQLite store needs nothing but Python's sqlite3, writing needs the saver."""
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        raise UsageError(
            "writing to a SQLite store (or a copy of one) goes through langgraph-checkpoint-sqlite's "
            "SqliteSaver: pip install 'langgraph-playbook[sqlite]'"
        ) from None
    return SqliteSaver


@contextlib.contextmanager
def writable_saver(uri: str) -> Iterator[Any]:
    """A saver that writes to the store (the service's own saver class)."""
    from migrations_playbook.sources.stores import redact, scrub

    if uri.startswith("sqlite:///"):
        SqliteSaver = sqlite_saver()  # noqa: N806 - a class
        connection = sqlite3.connect(uri.removeprefix("sqlite://"), check_same_thread=False)
        try:
            yield SqliteSaver(connection)
        finally:
            connection.close()
        return
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise UsageError(
            "writing to PostgreSQL needs langgraph-checkpoint-postgres: pip install 'langgraph-playbook[postgres]'"
        ) from None
    try:
        manager = PostgresSaver.from_conn_string(uri)
        saver = manager.__enter__()
    except Exception as exc:  # noqa: BLE001 - psycopg's connection errors: the store is unreachable
        raise LiveUnreachable(f"checkpointer {redact(uri)} is unreachable for writing: {scrub(str(exc), uri)}") from None
    try:
        yield saver
    finally:
        manager.__exit__(None, None, None)


def _cid(config: Mapping[str, Any] | None) -> str | None:
    return ((config or {}).get("configurable") or {}).get("checkpoint_id")


def _root_config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def read_views(
    args: argparse.Namespace,
    plan: Plan,
    locks: Mapping[str, Any],
    owners: set[str],
    candidate_locks: Mapping[str, Any] | None = None,
) -> tuple[dict[str, list[ThreadView]], list[str]]:
    """Every thread of the plan's graphs as a `ThreadView`, read-only. With ``candidate_locks``,
    a thread this migration stamped is derived in the candidate's shape."""
    from migrations_playbook.sources import store as store_commands
    from migrations_playbook.sources.checkpointer import HeadsSaver, snapshot
    from migrations_playbook.sources.standin import StandIns

    views: dict[str, list[ThreadView]] = {g: [] for g in plan.graphs}
    saver = HeadsSaver()
    live_ins = {g: StandIns(locks[g], saver) for g in plan.graphs}
    new_locks: Mapping[str, Any] = candidate_locks or {}
    new_ins = {g: StandIns(new_locks[g], saver) for g in plan.graphs} if candidate_locks else {}
    with store_commands._store(args) as store:
        label = store.label
        attribution = store_commands._attribution(args, owners)
        for thread in store.threads():
            graph_id = attribution.graph_of(thread)
            if graph_id not in views:
                continue
            root = thread.root
            metadata = dict(root.metadata) if root is not None else {}
            mine = bool(new_ins) and stamped_by(metadata, plan.migration)
            lock, ins = (new_locks[graph_id], new_ins[graph_id]) if mine else (locks[graph_id], live_ins[graph_id])
            snap = snapshot(thread, graph_id, lock, ins, saver)
            head = root.saved.config["configurable"].get("checkpoint_id") if root is not None and root.saved else None
            interrupts = tuple(
                PendingInterrupt(path=task.path, value=value)
                for task in snap.tasks
                if task.interrupted
                for value in task.interrupt_values
            )
            views[graph_id].append(
                ThreadView(
                    thread_id=snap.thread_id,
                    graph_id=graph_id,
                    status=snap.status,
                    values=dict(snap.values),
                    head=head if snap.unreadable is None else None,
                    metadata=metadata,
                    next=snap.next,
                    pending=snap.pending,
                    interrupts=interrupts,
                    snapshot=snap,
                )
            )
    return views, [
        f"threads read from checkpointer {label} (read-only); the live shape from --live-contract {args.live_contract}"
    ]


def _write(graph: Any, saver: Any, outcome: ThreadOutcome, plan: Plan, candidate: Any) -> None:
    change = outcome.change
    assert change is not None and outcome.base is not None  # only "would change" outcomes get here
    latest = saver.get_tuple(_root_config(outcome.thread_id))
    if latest is None or latest.config["configurable"].get("checkpoint_id") != outcome.base:
        outcome.action, outcome.reason = "skipped: moved on", "its head changed since it was read; run migrate again"
        return
    stamp = {MIGRATION_KEY: plan.migration, BASE_KEY: outcome.base}
    graph_label = latest.metadata.get("graph_id")
    if isinstance(graph_label, str):
        stamp["graph_id"] = graph_label  # a store's threads are attributed by it; an update carries no run metadata
    if change.move is not None:
        stamp[MOVED_KEY] = f"{change.move.from_node}->{change.move.to_node}"
    config = {**_root_config(outcome.thread_id, outcome.base), "metadata": stamp}
    try:
        written = graph.update_state(
            config,
            encode_writes(change.writes, candidate) or None,
            as_node=change.move.as_node if change.move is not None else None,
        )
    except Exception as exc:  # noqa: BLE001 - LangGraph's InvalidUpdateError and the saver's errors, named per thread
        outcome.action, outcome.reason = "failed", f"update_state refused: {type(exc).__name__}: {exc}"
        return
    outcome.new_head = written["configurable"].get("checkpoint_id")
    after = saver.get_tuple(_root_config(outcome.thread_id))
    if (
        after is None
        or after.config["configurable"].get("checkpoint_id") != outcome.new_head
        or not stamped_by(after.metadata, plan.migration)
    ):
        outcome.action, outcome.reason = "failed", "written, but the new head does not carry the migration stamp"
        return
    if change.move is not None and change.move.to_node not in graph.get_state(_root_config(outcome.thread_id)).next:
        outcome.action, outcome.reason = "failed", f"written, but the candidate does not schedule {change.move.to_node!r}"
        return
    outcome.action = "changed"


def _rollback(saver: Any, plan: Plan, view: ThreadView) -> ThreadOutcome | None:
    history = list(saver.list(_root_config(view.thread_id), limit=HISTORY_LIMIT))
    stamped = [i for i, t in enumerate(history) if stamped_by(t.metadata, plan.migration)]
    if not stamped:
        return None
    newest = history[stamped[0]]
    base_id = newest.metadata.get(BASE_KEY) or (newest.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    base = next((t for t in history if t.config["configurable"].get("checkpoint_id") == base_id), None)
    outcome = ThreadOutcome(view.thread_id, view.graph_id, view.status, "would restore", blocks=view.blocks, base=base_id)
    if base is None:
        outcome.action, outcome.reason = (
            "failed",
            f"the pre-migration head {base_id} is not in the last {HISTORY_LIMIT} checkpoints",
        )
        return outcome
    head = history[0]
    if stamped[0] != 0:
        copy_of_base = (
            head.metadata.get("source") == "fork"
            and _cid(head.parent_config) == _cid(base.parent_config)
            and head.checkpoint["channel_values"] == base.checkpoint["channel_values"]
        )
        if copy_of_base:
            outcome.action, outcome.new_head = "already restored", head.config["configurable"].get("checkpoint_id")
        else:
            outcome.action = "skipped: moved on"
            outcome.reason = f"{stamped[0]} checkpoint(s) were written after the migration: rolling back would drop them"
        return outcome
    outcome.new_head = _copy_head(saver, view.thread_id, base, plan)
    after = saver.get_tuple(_root_config(view.thread_id))
    if after is None or after.checkpoint["channel_values"] != base.checkpoint["channel_values"]:
        outcome.action, outcome.reason = "failed", "the restored head's channels differ from the pre-migration head's"
    else:
        outcome.action = "restored"
    return outcome


def _copy_head(saver: Any, thread_id: str, base: Any, plan: Plan) -> str:
    """What ``update_state(as_node="__copy__")`` writes (the base's channels, versions and parent, as
    a new checkpoint), but keeping the base's metadata: LangGraph's copy writes only
    source/step/parents, and a store's threads are attributed by their ``graph_id`` metadata."""
    from datetime import UTC, datetime

    from langgraph.checkpoint.base import copy_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    step = int(base.metadata.get("step", -1))
    checkpoint = copy_checkpoint(base.checkpoint)
    checkpoint["id"] = str(uuid6(clock_seq=step + 1))
    checkpoint["ts"] = datetime.now(UTC).isoformat()
    metadata = {k: v for k, v in base.metadata.items() if k not in ("writes", MIGRATION_KEY, BASE_KEY, MOVED_KEY)}
    metadata.update(source="fork", step=step + 1, playbook_rolled_back=plan.migration)
    parent = base.parent_config or _root_config(thread_id)
    written = saver.put(parent, checkpoint, metadata, {})
    checkpoint_id: str = written["configurable"]["checkpoint_id"]
    return checkpoint_id


def run(
    args: argparse.Namespace, plan: Plan, registered: set[str], candidates: dict[str, Any], compiled: dict[str, Any]
) -> MigrateReport:
    """Dry run, ``--apply`` or ``--rollback`` over the store (``--persistence`` is for Agent Server)."""
    from migrations_playbook.sources import store as store_commands
    from migrations_playbook.sources.checkpointer import live_graphs
    from migrations_playbook.graphcode.contract import lock_document
    from migrations_playbook.graphcode.describe import contract_of

    if args.persistence:
        raise UsageError(
            "--persistence copies a `langgraph dev` folder; with --checkpointer, prove the plan on a copy "
            "of the database (and the candidate resuming it) instead"
        )
    locks = store_commands._locks(args)
    missing = [g for g in plan.graphs if g not in locks]
    if missing:
        raise UsageError(f"--live-contract {args.live_contract} has no lock for {', '.join(missing)}")
    mode: Mode = "rollback" if args.rollback else "apply" if args.apply else "dry run"
    candidate_locks = {g: lock_document(contract_of(g, compiled[g])) for g in plan.graphs}
    served = {g: SERVED for g in plan.graphs}
    live = live_graphs(locks, plan.graphs)

    def gate(views: dict[str, list[ThreadView]], notes: list[str]) -> Any:
        scan = Scan(views=views, assistants={}, live=live, served=served)
        return scan, judge(
            scan,
            candidates,
            registered,
            strict=args.strict,
            live_url=args.checkpointer,
            candidate_path=str(args.candidate),
            notes=notes,
        )

    views, notes_base = read_views(args, plan, locks, registered, candidate_locks)
    notes = [
        *notes_base,
        "writes go through the candidate compiled in-process with the store's saver: apply while "
        "the service is stopped for the rollout (a moved thread is stranded under the live code)",
    ]
    if any(s.op == "context" for s in plan.steps):
        notes.append("a checkpointer has no assistants: the plan's context steps do not apply here")
    scan, before = gate(views, notes)
    report = MigrateReport(
        migration=plan.migration,
        mode=mode,
        live_url=args.checkpointer,
        candidate=str(args.candidate),
        served=served,
        before=before,
        threads=[],
        notes=notes,
        blocked=[v.thread_id for vs in views.values() for v in vs if v.blocks],
        source="checkpointer",
    )
    if mode == "dry run":
        try:
            report.threads = plan_threads(plan, scan, candidates)
        except PlanError as exc:
            raise UsageError(f"{exc} (nothing was written)") from None
        return report
    if mode == "apply":
        try:
            report.threads = plan_threads(plan, scan, candidates)
        except PlanError as exc:
            raise UsageError(f"{exc} (nothing was written)") from None
    with writable_saver(args.checkpointer) as saver:
        graphs = {g: compiled[g].copy(update={"checkpointer": saver}) for g in plan.graphs}
        if mode == "apply":
            for outcome in report.threads:
                if outcome.action == "would change":
                    _write(graphs[outcome.graph_id], saver, outcome, plan, candidates.get(outcome.graph_id))
        else:
            for graph_views in views.values():
                for view in graph_views:
                    # No busy check: a moved thread waits at its new node with no interrupt, which a store
                    # reports as busy; the service is stopped for a rollback as for the apply.
                    restored = _rollback(saver, plan, view)
                    if restored is not None:
                        report.threads.append(restored)
    after_views, _ = read_views(args, plan, locks, registered, candidate_locks)
    report.after = gate(after_views, notes)[1]
    return report
