"""What a staging copy holds back: the runs and scheduled jobs the live server has not run yet.

A copy of a live `langgraph dev` folder carries its run queue and its crons (``.langgraph_api/
.langgraph_ops.pckl``). Served as it is, the staging server takes up every run that has not finished
(queued behind a busy run with ``multitask_strategy="enqueue"``, delayed with ``after_seconds``, or
running when the folder was copied) and fires every cron on its own, under whichever code it serves,
once per copy, with whatever those runs do to the outside world. So before a copy is served, `hold`
takes its unfinished runs out of its queue and disables its crons: nothing runs on a copy that the
proof did not send. A thread that was busy with a held run is left at its last checkpoint, with the
status that checkpoint gives it (``interrupted`` when it waits on a question, else ``idle``), as the
live server resumes it after a restart. What was held is reported (`HeldWork`), never dropped silently.

The file is unpickled and written in a process of its own (``python -m migrations_playbook.staging.held
FILE``), with the settings `langgraph dev` gives its runtime: the records name functions of
langgraph-api, which reads its settings when imported, and the playbook's own process keeps its
environment as it was.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrations_playbook.errors import UsageError

OPS_FILE = ".langgraph_ops.pckl"
"""The in-memory runtime's threads, runs, assistants and crons, in a `langgraph dev` persistence folder."""
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


@dataclass(frozen=True)
class HeldCron:
    """A scheduled job, disabled in a copy."""

    cron_id: str
    thread_id: str | None
    schedule: str | None


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
            "held on the staging copies, never run there: "
            + " and ".join(parts)
            + judged
            + " (the live server still holds them and runs them under the code it serves)"
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
    held_threads = {str(run.get("thread_id")) for run in held}
    at_rest = []
    for thread in records.get("threads") or []:
        thread_id = str(thread.get("thread_id"))
        if thread.get("status") == "busy" and thread_id in held_threads and thread_id not in still_running:
            thread["status"] = "interrupted" if thread.get("interrupts") else "idle"
            at_rest.append(thread_id)
    return {
        "runs": [
            {
                "run_id": str(run.get("run_id")),
                "thread_id": _text(run.get("thread_id")),
                "status": str(run.get("status")),
                "not_before": _text(run.get("created_at")),
                "multitask_strategy": run.get("multitask_strategy"),
            }
            for run in held
        ],
        "crons": [
            {"cron_id": str(cron.get("cron_id")), "thread_id": _text(cron.get("thread_id")), "schedule": cron.get("schedule")}
            for cron in crons
        ],
        "threads_at_rest": sorted(at_rest),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite one copied ops file (the process `hold` starts); print what was held as JSON."""
    (path,) = argv if argv is not None else sys.argv[1:]
    ops = Path(path)
    records = pickle.loads(ops.read_bytes())
    if not isinstance(records, dict):
        raise SystemExit(f"{ops.name} holds {type(records).__name__}, not the runtime's dict of records")
    held = hold_records(records)
    written = ops.with_name(ops.name + ".held")
    written.write_bytes(pickle.dumps(records))
    written.replace(ops)
    print(json.dumps(held))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
