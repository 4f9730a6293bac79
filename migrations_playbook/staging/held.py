"""What a staging copy holds back: the runs and scheduled jobs the live server has not run yet.

A copy of a live `langgraph dev` folder carries its run queue and its crons (``.langgraph_api/
.langgraph_ops.pckl``). Served as it is, the staging server takes up every run that has not finished
(queued behind a busy run with ``multitask_strategy="enqueue"``, delayed with ``after_seconds``, or
running when the folder was copied) and fires every cron on its own, under whichever code it serves,
once per copy, with whatever those runs do to the outside world. So before a copy is served, `hold`
takes its unfinished runs out of its queue and disables its crons: nothing runs on a copy that the
proof did not send. A thread that was busy with a held run is left at its last checkpoint, with the
status that checkpoint gives it (``interrupted`` when it waits on a question, else ``idle``), as the
live server resumes it after a restart. What was held is reported (`HeldWork`), never dropped silently,
and kept whole: each held run's request (its input or command, config, context, assistant, multitask
strategy, interrupt settings, in ``created_at`` order) and each cron's payload, so the shadow can send them
itself, explicitly, on every side (`proof/shadow/held_runs.py`).

The records are pickled Python, and what they hold is not always JSON: `sendable` keeps each value in the
form the Agent Server API takes back (UUIDs and times as text, a LangChain message or a pydantic model as
its JSON form, a tuple as a list) and names any other value (a function, a set, bytes...) instead of
guessing: a run or cron holding one is reported as not sendable, with the path of the value and its type.
The runtime's own keys (``run_id``, ``thread_id``, ``graph_id``, ``assistant_id``, ``user_id``,
``cron_id``, ``langgraph_*`` and ``__*`` in ``config.configurable``, and ``config.metadata``) are left
out: the server that runs the request sets them again.

A server may journal its records between two pickles of them: this deployment's server writes each changed
thread's record and runs to ``records.sqlite`` (table ``threads``: ``thread_id``, ``seq``, ``record``, a pickle of
the thread and its runs' pickles; server/persistence/thread_records.py) and lays the rows over the pickle when it
starts. A copy of a server that is running holds its newest runs only there (the whole pickle is written at
start-up, at a graceful stop and by operations on many threads at once), so the hold lays the rows over the
pickle first, as that server does, holds the result and empties the copy's journal (`lay_journal`): held from
the pickle alone, a copy started those runs itself, under the code it served.

The file is unpickled and written in a process of its own (``python -m migrations_playbook.staging.held
FILE``), with the settings `langgraph dev` gives its runtime: the records name functions of
langgraph-api, which reads its settings when imported, and the playbook's own process keeps its
environment as it was.
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrations_playbook.errors import UsageError

OPS_FILE = ".langgraph_ops.pckl"
"""The in-memory runtime's threads, runs, assistants and crons, in a `langgraph dev` persistence folder."""
JOURNAL_FILE = "records.sqlite"
"""Beside `OPS_FILE`: a journal of thread records newer than it, when the server keeps one (`lay_journal`)."""
UNFINISHED = ("pending", "running")
"""Run statuses the runtime's queue takes up (a running run is started again after a restart)."""
RUNTIME_SETTINGS = {"REDIS_URI": "fake", "DATABASE_URI": ":memory:", "MIGRATIONS_PATH": "__inmem"}
"""What `langgraph dev` sets before its runtime starts: langgraph-api refuses to import without them."""
HOLD_TIMEOUT = 120.0


class HoldError(UsageError):
    """The copy's run queue could not be read or rewritten: serving it could run work nobody sent (exit 2)."""


@dataclass(frozen=True)
class HeldRun:
    """A run the live server had not finished, taken out of a copy's queue."""

    run_id: str
    thread_id: str | None
    status: str
    """``pending`` (queued or delayed) or ``running`` (cut off by the copy)."""
    not_before: str | None
    """When it may start (ISO time): in the future for a run delayed with ``after_seconds``."""
    multitask_strategy: str | None
    assistant_id: str | None = None
    graph_id: str | None = None
    created_at: str | None = None
    """When it was queued (ISO time; for a delayed run, when it may start): the queue takes runs in this order."""
    request: Mapping[str, Any] = field(default_factory=dict)
    """What to send again (`RUN_KEYS`: input or command, config, context, interrupt settings, ...), JSON."""
    unsendable: str | None = None
    """Why the request cannot be sent again faithfully (a value with no JSON form), else None."""


@dataclass(frozen=True)
class HeldCron:
    """A scheduled job, disabled in a copy."""

    cron_id: str
    thread_id: str | None
    schedule: str | None
    assistant_id: str | None = None
    graph_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    """What each firing sends (`RUN_KEYS` of the cron's stored payload), JSON."""
    unsendable: str | None = None


@dataclass(frozen=True)
class HeldWork:
    """Everything a copy holds back, and the threads whose status it set from their checkpoint."""

    runs: tuple[HeldRun, ...] = ()
    crons: tuple[HeldCron, ...] = ()
    threads_at_rest: tuple[str, ...] = ()
    """Threads that were busy with a held run: now at rest at their last checkpoint."""

    def __bool__(self) -> bool:
        return bool(self.runs or self.crons)

    def note(self) -> str | None:
        """One line for a report, or None when nothing was held."""
        if not self:
            return None
        parts = []
        if self.runs:
            by_status = {s: sum(r.status == s for r in self.runs) for s in UNFINISHED}
            parts.append(
                f"{len(self.runs)} unfinished run(s) ("
                + ", ".join(f"{n} {s}" for s, n in by_status.items() if n)
                + ", e.g. "
                + ", ".join(f"run {r.run_id} on thread {r.thread_id}" for r in self.runs[:3])
                + ")"
            )
        if self.crons:
            parts.append(f"{len(self.crons)} cron(s) (" + ", ".join(c.cron_id for c in self.crons[:3]) + ")")
        judged = f"; {len(self.threads_at_rest)} busy thread(s) judged from their last checkpoint" if self.threads_at_rest else ""
        return (
            "held on the staging copies, never run there on their own: "
            + " and ".join(parts)
            + judged
            + " (the live server still holds them and runs them under the code it serves; what the proof sends of them "
            "itself, it lists)"
        )


def hold(persistence: Path) -> HeldWork:
    """Take the unfinished runs out of the copied persistence folder ``persistence`` and disable its
    crons (in place: ``persistence`` is a copy). `HoldError` when the file cannot be rewritten."""
    ops = persistence / OPS_FILE
    if not ops.is_file():
        return HeldWork()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "migrations_playbook.staging.held", str(ops)],
            env={**os.environ, **RUNTIME_SETTINGS},
            capture_output=True,
            text=True,
            timeout=HOLD_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HoldError(f"could not read the copy's run queue ({ops.name}): {exc}") from exc
    if done.returncode != 0:
        cause = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise HoldError(
            f"could not read the copy's run queue ({ops.name}): {cause}. The copy is not served: its unfinished runs "
            "and crons would run there on their own"
        )
    found = json.loads(done.stdout)
    return HeldWork(
        runs=tuple(HeldRun(**run) for run in found["runs"]),
        crons=tuple(HeldCron(**cron) for cron in found["crons"]),
        threads_at_rest=tuple(found["threads_at_rest"]),
    )


RUN_KEYS = ("input", "command", "config", "context", "interrupt_before", "interrupt_after", "checkpoint_id")
"""What a held run's kwargs (or a cron's payload) give the run sent again; the rest (stream settings, webhook,
durability) changes how a client watches the run, not what the graph receives."""
SERVER_KEYS = frozenset({"run_id", "thread_id", "graph_id", "assistant_id", "user_id", "cron_id", "checkpoint_ns"})
"""``config.configurable`` keys the server sets on every run it makes (with ``langgraph_*`` and ``__*``)."""


class NotSendable(ValueError):
    """A stored value with no JSON form the API takes back: where it is, and its type."""


def sendable(value: Any, path: str = "") -> Any:
    """``value`` in the JSON form the Agent Server API takes back; `NotSendable` naming a value that has none."""
    import datetime
    import uuid

    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, Mapping):
        found = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotSendable(f"{path or 'the value'} has a {type(key).__name__} key {key!r}")
            found[key] = sendable(item, f"{path}.{key}" if path else key)
        return found
    if isinstance(value, (list, tuple)):
        return [sendable(item, f"{path}[{n}]") for n, item in enumerate(value)]
    try:  # a LangChain message (or any Serializable) as the API takes it: {"type": ..., "content": ...}
        from langchain_core.messages import BaseMessage, message_to_dict

        if isinstance(value, BaseMessage):
            return sendable(message_to_dict(value)["data"], path)
    except ImportError:  # pragma: no cover - langgraph depends on langchain-core
        pass
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic model: its JSON mode
        return sendable(dump(mode="json"), path)
    raise NotSendable(f"{path or 'the value'} is a {type(value).__module__}.{type(value).__qualname__}, which has no JSON form")


CONTEXT_SENT = "__context_provided__"
"""In a run's stored ``config.configurable``: the client sent a ``context`` (langgraph-api copies it there)."""


def _request(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The part of a run's kwargs (or a cron's payload) to send again, and why it cannot be sent, if so.

    The server stores a run's ``context`` and ``config.configurable`` as copies of each other (one sent, the
    other copied from it), and refuses a request that sends both: the one the client sent is sent again
    (``context`` when the stored configurable says so, `CONTEXT_SENT`, else ``configurable``). The checkpoint a
    run was sent to start from is stored in the configurable too: it is kept as ``checkpoint_id`` either way."""
    config = kwargs.get("config")
    stored = config.get("configurable") if isinstance(config, Mapping) else None
    context_sent = isinstance(stored, Mapping) and bool(stored.get(CONTEXT_SENT))
    start_from = stored.get("checkpoint_id") if isinstance(stored, Mapping) else None
    found: dict[str, Any] = {}
    for key in RUN_KEYS:
        value = kwargs.get(key)
        if key == "context" and not context_sent and found.get("config", {}).get("configurable"):
            continue  # the server's copy of the configurable sent
        if key == "config" and isinstance(value, Mapping) and context_sent:
            value = {k: v for k, v in value.items() if k not in ("configurable", "metadata")}
        elif key == "config" and isinstance(value, Mapping):
            configurable = {
                k: v
                for k, v in (value.get("configurable") or {}).items()
                if k not in SERVER_KEYS and k != "checkpoint_id" and not str(k).startswith(("langgraph_", "__"))
            }
            value = {k: v for k, v in value.items() if k not in ("configurable", "metadata")}
            if configurable:
                value["configurable"] = configurable
        if key == "checkpoint_id" and value is None:
            value = start_from
        if value in (None, {}, []):
            continue
        found[key] = value
    try:
        return sendable(found), None
    except NotSendable as exc:
        return {}, str(exc)


def _graph_of(assistant_id: Any, kwargs: Mapping[str, Any], assistants: Mapping[str, str]) -> str | None:
    configurable = (kwargs.get("config") or {}).get("configurable") or {}
    found = configurable.get("graph_id") or assistants.get(str(assistant_id))
    return None if found is None else str(found)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def hold_records(records: dict[str, Any]) -> dict[str, Any]:
    """Rewrite the runtime's records in place: unfinished runs out, crons disabled, their busy threads at
    rest. Returns what was held (JSON-ready)."""
    runs = list(records.get("runs") or [])
    held = [run for run in runs if run.get("status") in UNFINISHED]
    records["runs"] = [run for run in runs if run.get("status") not in UNFINISHED]
    crons = []
    for cron in records.get("crons") or []:
        if cron.get("enabled", False):
            crons.append(cron)
        cron["enabled"] = False
    still_running = {str(run.get("thread_id")) for run in records["runs"] if run.get("status") in UNFINISHED}
    assistants = {str(a.get("assistant_id")): str(a.get("graph_id")) for a in records.get("assistants") or []}
    held_threads = {str(run.get("thread_id")) for run in held}
    at_rest = []
    for thread in records.get("threads") or []:
        thread_id = str(thread.get("thread_id"))
        if thread.get("status") == "busy" and thread_id in held_threads and thread_id not in still_running:
            thread["status"] = "interrupted" if thread.get("interrupts") else "idle"
            at_rest.append(thread_id)
    found_runs = []
    for run in sorted(held, key=lambda r: (r.get("created_at") is None, _text(r.get("created_at")) or "")):
        kwargs = run.get("kwargs") if isinstance(run.get("kwargs"), Mapping) else {}
        request, unsendable = _request(kwargs)
        found_runs.append(
            {
                "run_id": str(run.get("run_id")),
                "thread_id": _text(run.get("thread_id")),
                "status": str(run.get("status")),
                "not_before": _text(run.get("created_at")),
                "multitask_strategy": run.get("multitask_strategy"),
                "assistant_id": _text(run.get("assistant_id")),
                "graph_id": _graph_of(run.get("assistant_id"), kwargs, assistants),
                "created_at": _text(run.get("created_at")),
                "request": request,
                "unsendable": unsendable,
            }
        )
    found_crons = []
    for cron in crons:
        payload = cron.get("payload") if isinstance(cron.get("payload"), Mapping) else {}
        request, unsendable = _request(payload)
        found_crons.append(
            {
                "cron_id": str(cron.get("cron_id")),
                "thread_id": _text(cron.get("thread_id")),
                "schedule": cron.get("schedule"),
                "assistant_id": _text(payload.get("assistant_id")),
                "graph_id": _graph_of(payload.get("assistant_id"), payload, assistants),
                "payload": request,
                "unsendable": unsendable,
            }
        )
    return {"runs": found_runs, "crons": found_crons, "threads_at_rest": sorted(at_rest)}


def journal_rows(journal: Path) -> list[tuple[str, Any, list[Any]]]:
    """The journal's rows in the order they were written: (thread id, its record or None when deleted, its runs);
    none when ``journal`` is missing or keeps no thread records."""
    if not journal.is_file():
        return []
    conn = sqlite3.connect(journal)
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(threads)")}
        if not {"thread_id", "seq", "record"} <= columns:
            return []
        rows = conn.execute("SELECT thread_id, seq, record FROM threads ORDER BY seq").fetchall()
    finally:
        conn.close()
    found = []
    for thread_id, _, record in rows:
        thread, runs = pickle.loads(record)
        found.append((str(thread_id), thread, [pickle.loads(run) if isinstance(run, bytes) else run for run in runs]))
    return found


def lay_journal(records: dict[str, Any], journal: Path) -> int:
    """Lay the journal's rows over the pickled ``records`` in place, as the server does when it starts: each
    journaled thread's record and runs replace the pickle's (a later row wins; a row without a record deletes
    the thread). Returns the number of rows laid."""
    rows = journal_rows(journal)
    if not rows:
        return 0
    journaled: dict[str, tuple[Any, list[Any]]] = {thread_id: (thread, runs) for thread_id, thread, runs in rows}
    records["threads"] = [t for t in records.get("threads") or [] if str(t.get("thread_id")) not in journaled] + [
        thread for thread, _ in journaled.values() if thread
    ]
    records["runs"] = [r for r in records.get("runs") or [] if str(r.get("thread_id")) not in journaled] + [
        run for _, runs in journaled.values() for run in runs
    ]
    return len(rows)


def clear_journal(journal: Path) -> None:
    """Empty the copy's journal once its rows are in the held pickle: laid again at start-up, they would bring
    the held runs back. Its counters (the ``acknowledged`` table) stay, so the copy starts as after a pickle."""
    conn = sqlite3.connect(journal)
    try:
        conn.execute("DELETE FROM threads")
        conn.commit()
    finally:
        conn.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite one copied ops file (the process `hold` starts); print what was held as JSON."""
    (path,) = argv if argv is not None else sys.argv[1:]
    ops = Path(path)
    records = pickle.loads(ops.read_bytes())
    if not isinstance(records, dict):
        raise SystemExit(f"{ops.name} holds {type(records).__name__}, not the runtime's dict of records")
    journal = ops.with_name(JOURNAL_FILE)
    laid = lay_journal(records, journal)
    held = hold_records(records)
    written = ops.with_name(ops.name + ".held")
    written.write_bytes(pickle.dumps(records))
    written.replace(ops)
    if laid:
        clear_journal(journal)
    print(json.dumps(held))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
