"""What a staging copy holds back (migrations_playbook/staging/held.py): the rewrite of the runtime's records.

Shaped like langgraph-runtime-inmem's records; tests/integration/test_staging_holds_server.py holds a real
server's work.
"""

from __future__ import annotations

import pickle
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from migrations_playbook.staging.held import CONTEXT_SENT, HeldCron, HeldRun, HeldWork, NotSendable, hold_records, sendable


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


def test_a_held_run_keeps_what_to_send_again_in_queue_order() -> None:
    """Each held run keeps its request (input or command, config less the server's own keys, context), its
    assistant and graph, in the order the queue takes them (created_at: a delayed run's is its start time)."""
    import json

    assistant = uuid.uuid4()
    records: dict[str, Any] = {
        "assistants": [{"assistant_id": assistant, "graph_id": "mailer"}],
        "runs": [
            {
                "run_id": uuid.uuid4(),
                "thread_id": uuid.uuid4(),
                "assistant_id": assistant,
                "status": "pending",
                "created_at": datetime(2030, 1, 1, tzinfo=UTC),
                "multitask_strategy": "enqueue",
                "kwargs": {
                    "input": {"to": "later"},
                    "command": None,
                    "config": {  # as langgraph-api stores a run sent a configurable: context is its copy
                        "configurable": {"run_id": "r", "graph_id": "mailer", "__pregel_node_finished": print, "tenant": "t1"},
                        "metadata": {"langgraph_host": "x"},
                        "recursion_limit": 7,
                    },
                    "context": {"tenant": "t1"},
                    "stream_mode": ["values"],
                },
            },
            {
                "run_id": "first",
                "thread_id": "t",
                "assistant_id": assistant,
                "status": "pending",
                "created_at": datetime(2020, 1, 1, tzinfo=UTC),
                "kwargs": {"command": {"resume": "yes"}, "config": {}},
            },
        ],
        "crons": [
            {
                "cron_id": uuid.uuid4(),
                "thread_id": None,
                "enabled": True,
                "payload": {
                    "assistant_id": str(assistant),
                    "input": {"to": "daily"},
                    "config": {"configurable": {"cron_id": "c"}},
                },
            }
        ],
    }
    held = hold_records(records)
    json.dumps(held)  # what the hold's process prints
    first, later = held["runs"]
    assert first["run_id"] == "first" and first["request"] == {"command": {"resume": "yes"}}
    assert later["request"] == {"input": {"to": "later"}, "config": {"recursion_limit": 7, "configurable": {"tenant": "t1"}}}
    assert (later["graph_id"], later["assistant_id"], later["unsendable"]) == ("mailer", str(assistant), None)
    (cron,) = held["crons"]
    assert (cron["graph_id"], cron["payload"], cron["thread_id"]) == ("mailer", {"input": {"to": "daily"}}, None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001", id="uuid"),
        pytest.param(datetime(2030, 1, 2, tzinfo=UTC), "2030-01-02T00:00:00+00:00", id="datetime"),
        pytest.param(("a", 1), ["a", 1], id="tuple"),
        pytest.param(
            {"m": HumanMessage(content="hi", id="m1")}, {"m": {"content": "hi", "type": "human", "id": "m1"}}, id="message"
        ),
    ],
)
def test_stored_values_are_kept_in_the_form_the_api_takes_back(value: Any, expected: Any) -> None:
    found = sendable(value)
    if isinstance(expected, dict) and "m" in expected:
        assert {k: found["m"][k] for k in expected["m"]} == expected["m"]
        assert HumanMessage(**found["m"]).content == "hi"
    else:
        assert found == expected


@pytest.mark.parametrize(
    "value", [pytest.param({"f": print}, id="function"), pytest.param({"s": {1}}, id="set"), pytest.param(b"x", id="bytes")]
)
def test_a_value_with_no_json_form_is_named_never_guessed(value: Any) -> None:
    with pytest.raises(NotSendable, match="has no JSON form"):
        sendable(value)
    records = {"runs": [{"run_id": "r", "thread_id": "t", "status": "pending", "kwargs": {"input": value}}], "crons": []}
    (run,) = hold_records(records)["runs"]
    assert run["request"] == {} and "input" in (run["unsendable"] or "")


def test_a_run_sent_a_context_is_sent_its_context_alone() -> None:
    """langgraph-api copies a sent context into ``config.configurable`` (marked ``__context_provided__``) and
    refuses a request with both (400 "Cannot specify both configurable and context"): the held run of a graph
    with a context schema was refused on every side, and its thread listed as unproven on identical code."""
    records: dict[str, Any] = {
        "runs": [
            {
                "run_id": "r1",
                "thread_id": "t1",
                "status": "pending",
                "kwargs": {
                    "input": {"messages": [{"role": "user", "content": "hi"}]},
                    "config": {
                        "configurable": {"team_name": "LG", "__context_provided__": True, "thread_id": "t1", "run_id": "r1"},
                        "recursion_limit": 25,
                    },
                    "context": {"team_name": "LG"},
                },
            }
        ],
        "threads": [{"thread_id": "t1", "status": "busy"}],
    }
    (run,) = hold_records(records)["runs"]
    assert run["request"] == {
        "input": {"messages": [{"role": "user", "content": "hi"}]},
        "config": {"recursion_limit": 25},
        "context": {"team_name": "LG"},
    }


def _journal(path: Any, rows: list[tuple[str, int, Any, list[dict[str, Any]]]]) -> None:
    """A journal as this repo's server writes it (server/persistence/thread_records.py): one row per thread, its
    record and its runs' pickles."""
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE threads (thread_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, record BLOB NOT NULL)")
    conn.executemany(
        "INSERT INTO threads VALUES (?, ?, ?)",
        [(t, seq, pickle.dumps((thread, [pickle.dumps(r) for r in runs]))) for t, seq, thread, runs in rows],
    )
    conn.commit()
    conn.close()


def test_the_journal_is_laid_over_the_pickle_before_the_hold(tmp_path: Any) -> None:
    """A server that is running keeps its newest runs only in its journal: the hold lays the rows over the
    pickle as the server does at start-up (a journaled thread's record and runs replace the pickle's; a row
    with no record deletes the thread), holds what results, and empties the copy's journal."""
    import sqlite3

    from migrations_playbook.staging.held import JOURNAL_FILE, OPS_FILE, clear_journal, lay_journal, main

    t1, t2, t3 = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)
    records: dict[str, Any] = {
        "threads": [{"thread_id": t, "status": "idle"} for t in (t1, t2, t3)],
        "runs": [
            {"run_id": "old", "thread_id": t1, "status": "success"},
            {"run_id": "gone", "thread_id": t3, "status": "success"},
        ],
        "crons": [],
    }
    journal = tmp_path / JOURNAL_FILE
    newer = [{"run_id": "old", "thread_id": t1, "status": "success"}, {"run_id": "new", "thread_id": t1, "status": "pending"}]
    _journal(journal, [(str(t1), 5, {"thread_id": t1, "status": "busy"}, newer), (str(t3), 6, None, [])])
    laid = dict(records)
    assert lay_journal(laid, journal) == 2
    assert sorted(str(t["thread_id"]) for t in laid["threads"]) == [str(t1), str(t2)]
    assert [r["run_id"] for r in laid["runs"]] == ["old", "new"]

    (tmp_path / OPS_FILE).write_bytes(pickle.dumps(records))
    assert main([str(tmp_path / OPS_FILE)]) == 0
    held = pickle.loads((tmp_path / OPS_FILE).read_bytes())
    assert [r["run_id"] for r in held["runs"]] == ["old"]
    assert {str(t["thread_id"]): t["status"] for t in held["threads"]} == {str(t1): "idle", str(t2): "idle"}
    assert sqlite3.connect(journal).execute("SELECT count(*) FROM threads").fetchone() == (0,)
    clear_journal(journal)  # idempotent


def test_a_journal_of_another_shape_is_left_alone(tmp_path: Any) -> None:
    import sqlite3

    from migrations_playbook.staging.held import lay_journal

    conn = sqlite3.connect(tmp_path / "records.sqlite")
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    assert lay_journal({"threads": [], "runs": []}, tmp_path / "records.sqlite") == 0
    assert lay_journal({"threads": [], "runs": []}, tmp_path / "missing.sqlite") == 0


@pytest.mark.parametrize("context_sent", [True, False], ids=["context", "configurable"])
def test_a_run_sent_from_a_checkpoint_is_sent_from_it_again(context_sent: bool) -> None:
    """The API keeps the checkpoint a run was sent to start from in its configurable: a run queued on a fork (a
    rerun of an earlier turn) is sent from that checkpoint, not from the head, whichever of context and
    configurable it carried."""
    configurable: dict[str, Any] = {"checkpoint_id": "cp-1", "thread_id": "t1", "tier": "gold"}
    if context_sent:
        configurable[CONTEXT_SENT] = True
    kwargs = {"input": {"q": 1}, "config": {"configurable": configurable}, "context": {"tier": "gold"}}
    records: dict[str, Any] = {"runs": [{"run_id": "r", "thread_id": "t1", "status": "pending", "kwargs": kwargs}]}
    (run,) = hold_records(records)["runs"]
    sent = {"context": {"tier": "gold"}} if context_sent else {"config": {"configurable": {"tier": "gold"}}}
    assert run["request"] == {"input": {"q": 1}, **sent, "checkpoint_id": "cp-1"}
