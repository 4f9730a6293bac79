"""What a staging copy holds back (migrations_playbook/staging/held.py): the rewrite of the runtime's records.

Shaped like langgraph-runtime-inmem's records; tests/integration/test_staging_holds_server.py holds a real
server's work.
"""

from __future__ import annotations

import pickle
from datetime import UTC, datetime
from typing import Any

from migrations_playbook.staging.held import HeldCron, HeldRun, HeldWork, hold_records


def test_held_records_keep_finished_runs_and_disable_crons() -> None:
    """The rewrite itself, on records shaped like the runtime's."""
    records: dict[str, Any] = {
        "runs": [
            {"run_id": "a", "thread_id": "t1", "status": "success"},
            {"run_id": "b", "thread_id": "t1", "status": "pending", "created_at": datetime(2030, 1, 1, tzinfo=UTC)},
            {"run_id": "c", "thread_id": "t2", "status": "running"},
            {"run_id": "d", "thread_id": "t3", "status": "pending"},
        ],
        "threads": [
            {"thread_id": "t1", "status": "idle"},
            {"thread_id": "t2", "status": "busy", "interrupts": {}},
            {"thread_id": "t3", "status": "busy", "interrupts": {"task": [{"value": "approve?"}]}},
        ],
        "crons": [{"cron_id": "x", "thread_id": None, "schedule": "* * * * *", "enabled": True}],
    }
    held = hold_records(records)
    assert [r["run_id"] for r in records["runs"]] == ["a"]
    assert [r["run_id"] for r in held["runs"]] == ["b", "c", "d"]
    assert held["runs"][0]["not_before"] == "2030-01-01T00:00:00+00:00"
    assert records["crons"][0]["enabled"] is False and [c["cron_id"] for c in held["crons"]] == ["x"]
    assert [t["status"] for t in records["threads"]] == ["idle", "idle", "interrupted"]
    assert held["threads_at_rest"] == ["t2", "t3"]
    assert pickle.loads(pickle.dumps(records)) == records


def test_nothing_held_says_nothing() -> None:
    assert not HeldWork() and HeldWork().note() is None


def test_the_note_counts_what_was_held_by_kind() -> None:
    work = HeldWork(
        runs=(HeldRun("r1", "t1", "pending", None, "enqueue"), HeldRun("r2", "t2", "running", None, None)),
        crons=(HeldCron("c1", None, "* * * * *"),),
        threads_at_rest=("t2",),
    )
    note = work.note() or ""
    assert "2 unfinished run(s) (1 pending, 1 running" in note and "1 cron(s) (c1)" in note and "1 busy thread(s)" in note
