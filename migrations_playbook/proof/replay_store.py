"""`playbook replay --checkpointer URI`: the candidate, in-process, over a throwaway copy of the store.

The self-hosted counterpart of the staging replay (`replay.py`). There is no server to
serve a copy with the candidate code, so the replay makes the copy and runs the
candidate itself:

* the copy: SQLite, the database file backed up into a temporary folder (SQLite's
  online backup, read through the gate's read-only connection); PostgreSQL, a new
  database ``playbook_replay_<random>`` on the same server (the URI's user needs the
  CREATEDB privilege), its tables made by ``PostgresSaver.setup()`` and filled with
  ``COPY`` from the gate's read-only snapshot of the live database. The copy is
  removed afterwards (the folder deleted, the database dropped), whatever happened;
* the live side: every paused thread (interrupted, busy, error) as the live code
  shows it, derived from the store read-only in the live code's shape (the
  checkpointer source: a stand-in of ``--live-contract``'s lock);
* the candidate side: the candidate's graphs compiled in-process with a saver on the
  copy (`SqliteSaver` / `PostgresSaver`), its ``get_state(subgraphs=True)``, and, when
  asked to (``--resume``, ``--resume-map``, ``--auto-resume``, as `replay.ResumeRule`
  answers each interrupt), ``stream(Command(resume=...))`` on the copy.

The comparison and the findings are the staging replay's: ``next``, pending task paths
and interrupt payloads (STAGING_STATE_DIVERGED), the resumed run and whether the paused
step ran (STAGING_RESUME_FAILED), an interrupt no value fits (STAGING_RESUME_UNANSWERED).
The original store is only read. Resuming runs the candidate's nodes (model calls, tools)
in this process, on the copy; that is why it is asked for by a flag.
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from migrations_playbook.cli import UsageError
from migrations_playbook.model import PAUSED_STATUSES, Finding, GateReport, GraphSummary
from migrations_playbook.proof.replay import (
    ResumeLedger,
    ResumePlan,
    ResumeRule,
    RunOutcome,
    _view,
    judge_resume,
    record_divergence,
)

COPY_PREFIX = "playbook_replay_"
"""Name prefix of the throwaway PostgreSQL database (dropped at the end)."""


@contextlib.contextmanager
def staging_copy(store: Any, uri: str) -> Iterator[tuple[Any, str]]:
    """(a writable saver on a copy of ``store``, where the copy is); removed on exit."""
    from migrations_playbook.sources.store_sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        from migrations_playbook.repair.store import sqlite_saver

        SqliteSaver = sqlite_saver()  # noqa: N806 - a class
        with tempfile.TemporaryDirectory(prefix="playbook-replay-") as folder:
            path = Path(folder) / "copy.db"
            store.copy_to(path)
            connection = sqlite3.connect(path, check_same_thread=False)
            try:
                yield SqliteSaver(connection), f"a copy of the SQLite file (in {folder}, deleted afterwards)"
            finally:
                connection.close()
        return
    with _postgres_copy(store, uri) as found:
        yield found


@contextlib.contextmanager
def _postgres_copy(store: Any, uri: str) -> Iterator[tuple[Any, str]]:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    from psycopg.rows import dict_row

    from migrations_playbook.sources.stores import scrub

    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise UsageError(
            "replay --checkpointer postgresql:// runs the candidate on a copy through PostgresSaver: "
            "pip install 'langgraph-playbook[postgres]'"
        ) from None
    name = f"{COPY_PREFIX}{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(uri, autocommit=True, connect_timeout=5, application_name="playbook-replay")
    except psycopg.Error as exc:
        raise UsageError(
            f"checkpointer {store.label}: cannot open a second connection for the copy: {scrub(' '.join(str(exc).split()), uri)}"
        ) from None
    try:
        try:
            admin.execute(f'CREATE DATABASE "{name}"')
        except psycopg.Error as exc:
            raise UsageError(
                f"replay --checkpointer makes a throwaway copy of the store as a new database on the same server, "
                f"and {store.label} refused it ({scrub(' '.join(str(exc).split()), uri)}): grant the URI's user "
                "CREATEDB, or replay on a SQLite copy of the store"
            ) from None
        try:
            params = conninfo_to_dict(uri)
            params["dbname"] = name
            params.pop("options", None)  # a search_path of the live database need not exist in the copy
            with psycopg.connect(
                make_conninfo("", **params), autocommit=True, prepare_threshold=0, row_factory=dict_row
            ) as connection:
                saver = PostgresSaver(connection)
                saver.setup()  # on the copy: its own tables
                store.copy_into(connection)
                yield saver, f"database {name} on the same server (a copy of the store, dropped afterwards)"
        finally:
            force = " WITH (FORCE)" if admin.info.server_version >= 130000 else ""
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"{force}')
    finally:
        admin.close()


def _config(thread_id: str, graph_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "metadata": {"graph_id": graph_id}}


def candidate_state(graph: Any, thread_id: str, graph_id: str) -> dict[str, Any]:
    """The candidate's ``get_state(subgraphs=True)`` on the copy, in the API's shape."""
    from migrations_playbook.sources.apishape import state_json, to_json

    state: dict[str, Any] = to_json(state_json(graph.get_state(_config(thread_id, graph_id), subgraphs=True)))
    return state


def resume_in_process(graph: Any, thread_id: str, graph_id: str, plan: ResumePlan) -> RunOutcome:
    """Resume one thread of the copy with the plan's value(s), as ``runs.stream(command={"resume": ...},
    stream_mode="updates", stream_subgraphs=True)`` does on a server, and collect what ran."""
    from langgraph.types import Command

    ran: set[str] = set()
    try:
        for namespace, update in graph.stream(
            Command(resume=plan.resume), _config(thread_id, graph_id), stream_mode="updates", subgraphs=True
        ):
            prefix = ":".join(part.split(":")[0] for part in namespace)
            if isinstance(update, Mapping):
                ran.update(f"{prefix}:{node}" if prefix else node for node in update)
    except Exception as exc:  # noqa: BLE001 - the candidate's failure is the finding, never a traceback
        return RunOutcome(ran=frozenset(ran), error=f"the resumed run failed: {type(exc).__name__}: {exc}")
    after = candidate_state(graph, thread_id, graph_id) if "__interrupt__" in ran else None
    return RunOutcome(ran=frozenset(ran), after=after)


def replay(args: argparse.Namespace, rule: ResumeRule) -> GateReport:
    """Compare every paused thread of the store with the candidate on a copy; resume it there when
    ``rule`` says how."""
    from migrations_playbook.sources import store as store_commands
    from migrations_playbook.graphcode.candidate import graph_specs, load_compiled, read_config
    from migrations_playbook.sources.checkpointer import HeadsSaver, snapshot_and_state
    from migrations_playbook.sources.standin import StandIns

    candidate = Path(args.candidate)
    registered = set(graph_specs(read_config(candidate.resolve())))
    locks = store_commands._locks(args)
    wanted = store_commands._wanted(args, locks)
    attribution = store_commands._attribution(args, registered)
    replayed = [g for g in wanted if g in registered]
    compiled = load_compiled(candidate, replayed) if replayed else {}
    ledger = ResumeLedger(rule)
    findings: dict[tuple[str, str, str], Finding] = {}
    summaries = {g: GraphSummary(in_candidate=g in registered) for g in wanted}
    unreadable: dict[str, int] = {}
    heads = HeadsSaver()
    stand_ins = {g: StandIns(locks[g], heads) for g in wanted}
    with store_commands._store(args) as store, staging_copy(store, args.checkpointer) as (saver, where):
        graphs = {g: graph.copy(update={"checkpointer": saver}) for g, graph in compiled.items()}
        for thread in store.threads():
            graph_id = attribution.graph_of(thread)
            if graph_id not in stand_ins:
                continue
            snap, live_state = snapshot_and_state(thread, graph_id, locks[graph_id], stand_ins[graph_id], heads)
            if snap.status not in PAUSED_STATUSES:
                continue
            summary = summaries[graph_id]
            summary.threads_scanned += 1
            summary.by_status[snap.status] = summary.by_status.get(snap.status, 0) + 1
            graph = graphs.get(graph_id)
            if live_state is None or graph is None:
                if live_state is None:
                    unreadable[graph_id] = unreadable.get(graph_id, 0) + 1
                continue
            try:
                staging_state = candidate_state(graph, snap.thread_id, graph_id)
            except Exception as exc:  # noqa: BLE001 - a candidate that cannot read the thread is a divergence
                staging_state = {"next": [f"(get_state failed: {type(exc).__name__}: {exc})"], "tasks": []}
            before, after = _view(live_state), _view(staging_state)
            record_divergence(findings, graph_id, snap.thread_id, before, after)
            if rule.active and snap.status == "interrupted":
                plan = ledger.plan(graph_id, snap.thread_id, live_state, before["pending"])
                if plan.answers:
                    outcome = resume_in_process(graph, snap.thread_id, graph_id, plan)
                    ledger.record(graph_id, snap.thread_id, before["pending"], judge_resume(plan, before["pending"], outcome))
        label = store.label
    notes = [
        f"threads read from checkpointer {label} (read-only; the live shape from --live-contract {args.live_contract}); "
        f"the candidate ran in-process on {where}",
        *ledger.notes(),
    ]
    notes += [
        f"{count} paused thread(s) of {g} could not be read (the gate names them: STATE_UNREADABLE)"
        for g, count in sorted(unreadable.items())
    ]
    notes += [
        f"graph {g} is not in the candidate (the gate says GRAPH_REMOVED): its threads were not replayed"
        for g in wanted
        if g not in registered and summaries[g].threads_scanned
    ]
    return GateReport(
        command="replay",
        live_url=label,
        candidate=str(candidate),
        strict=False,
        graphs=summaries,
        findings=sorted([*findings.values(), *ledger.findings.values()], key=lambda f: (f.graph_id, f.code, f.node or "")),
        notes=notes,
    )
