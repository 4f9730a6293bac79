"""The checkpointer source on a real SQLite file (no server, no socket).

A self-hosted service's threads are made with `SqliteSaver` from the v1 fixture
project (tests/fixtures/gate_projects/store_seed.py); the source reads them back
read-only through the live code's lock. The PostgreSQL half, the CLI and every
finding class are in tests/integration/test_gate_checkpointer.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from migrations_playbook.graphcode.candidate import contract_of, load_candidate, load_compiled
from migrations_playbook.graphcode.contract import lock_document
from migrations_playbook.rules.evaluate import Evaluator
from migrations_playbook.sources.api.shape import path_str
from migrations_playbook.sources.store.attribution import Attribution, AttributionError
from migrations_playbook.sources.store.open import open_store
from migrations_playbook.sources.store.reads import HeadsSaver, ReadOnlyStore, live_graphs
from migrations_playbook.sources.store.scan import iter_snapshots
from migrations_playbook.sources.store.tables import StoreError, StoreUnreachable, ThreadHeads, redact, scrub
from tests.fixtures.gate_projects.store_seed import seed
from tests.fixtures.gate_projects.variants import HELPDESK_TRIAGE_RENAMED, V1, make_variant


@pytest.fixture(scope="module")
def v1_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, list[str]]]:
    path = tmp_path_factory.mktemp("store") / "checkpoints.db"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        threads = seed(saver)
    return f"sqlite:///{path}", threads


@pytest.fixture(scope="module")
def v1_locks() -> dict[str, dict]:
    return {gid: lock_document(contract_of(gid, graph)) for gid, graph in load_compiled(V1 / "langgraph.json").items()}


def _snapshots(uri: str, locks: dict, wanted: list[str], attribution: Attribution | None = None) -> dict:
    store = open_store(uri)
    try:
        return {t.thread_id: t for t in iter_snapshots(store, locks, wanted, attribution or Attribution())}
    finally:
        store.close()


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        pytest.param("postgresql://app:hunter2@db.internal:5432/lg", "postgresql://app@db.internal:5432/lg", id="password"),
        pytest.param("postgresql://app@db/lg?sslmode=require", "postgresql://app@db/lg?sslmode=require", id="no-password"),
        pytest.param("postgres://:only-a-password@[::1]/lg", "postgres://[::1]/lg", id="ipv6-no-user"),
        pytest.param("sqlite:////srv/lg/checkpoints.db", "sqlite:////srv/lg/checkpoints.db", id="sqlite"),
    ],
)
def test_store_label_is_the_uri_without_its_password(uri: str, shown: str) -> None:
    assert redact(uri) == shown


def test_driver_messages_never_show_the_password() -> None:
    uri = "postgresql://app:hunter2@[::1/lg"
    said = scrub(f'missing "]" in URI: "{uri}" (password hunter2)', uri)
    assert "hunter2" not in said and "postgresql://app@[::1/lg" in said


def test_task_path_string_is_the_one_savers_store_beside_writes() -> None:
    from langgraph.pregel._algo import task_path_str  # the reference, private to LangGraph

    for path in (("__pregel_pull", "triage"), ("__pregel_push", 2), ("__pregel_push", ("__pregel_pull", "gather"), 1, True)):
        assert path_str(path) == task_path_str(path)
    assert path_str(["__pregel_pull", "triage"]) == "~__pregel_pull, triage"  # as the JSON-shaped state has it


def test_paused_thread_resumes_at_the_live_node_even_when_the_candidate_renamed_it(v1_store, v1_locks, tmp_path: Path) -> None:
    """The reason for the stand-in: under the candidate, LangGraph's own get_state shows no next
    step for a thread paused at a node the candidate renamed; under the live lock it shows the node."""
    uri, threads = v1_store
    thread_id = threads["helpdesk_at_triage"][0]
    snapshots = _snapshots(uri, v1_locks, ["helpdesk"])
    assert (snapshots[thread_id].status, snapshots[thread_id].pending) == ("interrupted", ("triage",))

    candidate = load_compiled(make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED), ["helpdesk"])["helpdesk"]
    with SqliteSaver.from_conn_string(uri.removeprefix("sqlite://")) as saver:
        under_candidate = candidate.copy(update={"checkpointer": saver}).get_state({"configurable": {"thread_id": thread_id}})
    assert under_candidate.next == ()


def test_snapshots_hold_status_values_and_nested_subgraph_state(v1_store, v1_locks) -> None:
    uri, _threads = v1_store
    snapshots = _snapshots(uri, v1_locks, sorted(v1_locks))
    assert {t: (s.graph_id, s.status) for t, s in snapshots.items()} == {
        "helpdesk-triage-0": ("helpdesk", "interrupted"),
        "helpdesk-triage-1": ("helpdesk", "interrupted"),
        "helpdesk-v0-triage": ("helpdesk", "interrupted"),
        "helpdesk-done": ("helpdesk", "idle"),
        "escalation-review": ("escalation", "interrupted"),
        "notes-echo": ("notes", "idle"),
    }
    old = snapshots["helpdesk-v0-triage"]
    assert "flow_version" not in old.values and old.values["notes"] == ["intake"]
    review = snapshots["escalation-review"]
    assert review.pending == ("review", "review:confirm") and review.namespaces == {"review": {"case": "C-7"}}
    assert snapshots["helpdesk-done"].pending == () and snapshots["helpdesk-done"].values["response"].startswith("done")


def test_unchanged_candidate_passes_every_thread_of_the_store(v1_store, v1_locks) -> None:
    uri, _ = v1_store
    registered, candidates = load_candidate(V1 / "langgraph.json")
    evaluator = Evaluator(live=live_graphs(v1_locks, sorted(v1_locks)), candidates=candidates, registered=registered)
    for snapshot in _snapshots(uri, v1_locks, sorted(v1_locks)).values():
        evaluator.add(snapshot)
    assert evaluator.findings() == []
    assert {g: s.threads_scanned for g, s in evaluator.summaries.items()} == {"escalation": 1, "helpdesk": 4, "notes": 1}


def test_a_checkpoint_that_cannot_be_decoded_is_reported_unreadable_and_the_scan_goes_on(
    v1_store, v1_locks, tmp_path: Path
) -> None:
    uri, _ = v1_store
    broken = tmp_path / "broken.db"
    broken.write_bytes(Path(uri.removeprefix("sqlite://")).read_bytes())
    with sqlite3.connect(broken) as conn:
        conn.execute("UPDATE checkpoints SET checkpoint = x'c1c1c1' WHERE thread_id = 'notes-echo'")
    snapshots = _snapshots(f"sqlite:///{broken}", v1_locks, sorted(v1_locks))
    assert len(snapshots) == 6
    assert "cannot be decoded" in (snapshots["notes-echo"].unreadable or "")
    assert all(s.unreadable is None for t, s in snapshots.items() if t != "notes-echo")


def test_threads_are_attributed_by_graph_id_metadata_then_the_only_graph_then_the_operator() -> None:
    from langgraph.checkpoint.base import CheckpointTuple

    from migrations_playbook.sources.store.tables import Head

    def thread(metadata: dict) -> ThreadHeads:
        saved = CheckpointTuple(config={}, checkpoint={}, metadata=metadata, parent_config=None, pending_writes=[])
        return ThreadHeads("t-1", {"": Head(ns="", saved=saved, metadata=metadata)})

    assert Attribution().graph_of(thread({"graph_id": "helpdesk"})) == "helpdesk"
    assert Attribution(single="notes").graph_of(thread({"graph_id": "helpdesk"})) == "helpdesk"
    assert Attribution(single="notes").graph_of(thread({})) == "notes"
    assert Attribution(single="notes", forced=True).graph_of(thread({"graph_id": "helpdesk"})) == "notes"
    with pytest.raises(AttributionError, match="--all-threads-are"):
        Attribution().graph_of(thread({}))


def test_the_gate_saver_refuses_every_write() -> None:
    saver = HeadsSaver()
    for write in (
        lambda: saver.put({}, {}, {}, {}),
        lambda: saver.put_writes({}, [], "task"),
        lambda: saver.delete_thread("t"),
        lambda: list(saver.list(None)),
    ):
        with pytest.raises(ReadOnlyStore):
            write()


@pytest.mark.parametrize(
    ("uri", "error", "message"),
    [
        pytest.param("mysql://db/lg", StoreError, "postgresql://", id="unknown-scheme"),
        pytest.param("sqlite://relative.db", StoreError, "absolute path", id="relative-sqlite"),
        pytest.param("sqlite:////nonexistent/x.db", StoreUnreachable, "no file", id="missing-file"),
    ],
)
def test_bad_store_uris_are_named_errors(uri: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        open_store(uri)


def test_a_sqlite_file_that_is_no_checkpointer_is_refused_and_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x)")
    before = other.read_bytes()
    with pytest.raises(StoreError, match="no checkpoints, writes table"):
        open_store(f"sqlite:///{other}")
    assert other.read_bytes() == before


def test_stand_in_reducers_are_the_live_ones_when_importable_without_project_code() -> None:
    import operator

    from langgraph.graph.message import add_messages

    from migrations_playbook.sources.store.standin import keep_last, resolve_reducer

    assert resolve_reducer("LastValue") is None
    assert resolve_reducer("BinaryOperatorAggregate(_operator.add)") is operator.add
    assert (
        resolve_reducer("BinaryOperatorAggregate(langgraph.graph.message._add_messages_wrapper.<locals>._add_messages)")
        is add_messages
    )
    assert resolve_reducer("BinaryOperatorAggregate(some_unimported_project.reducers.merge)") is keep_last


def test_idle_threads_read_from_their_row_equal_get_state(v1_store, v1_locks) -> None:
    """The idle fast path gives get_state's snapshot for every v1 thread, and reads the idle ones only."""
    from migrations_playbook.sources.store.reads import ScanCounts

    uri, _ = v1_store
    counts = ScanCounts()
    store = open_store(uri)
    try:
        fast = [t.to_json() for t in iter_snapshots(store, v1_locks, sorted(v1_locks), Attribution(), counts=counts)]
        slow = [t.to_json() for t in iter_snapshots(store, v1_locks, sorted(v1_locks), Attribution(), fast=False)]
    finally:
        store.close()
    assert fast == slow
    assert counts.read_idle == sum(1 for t in slow if t["status"] == "idle") == 2


class _Cursor:
    """A cursor serving ``batches`` of rows, then raising ``error`` (if any)."""

    def __init__(self, batches: list[list[tuple]], error: Exception | None = None) -> None:
        self.batches, self.error, self.fetched = list(batches), error, 0

    def fetchmany(self, size: int) -> list[tuple]:
        if self.batches:
            self.fetched += 1
            return self.batches.pop(0)
        if self.error is not None:
            raise self.error
        return []


def test_prefetched_rows_arrive_in_order_and_a_fetch_error_reaches_the_caller() -> None:
    from migrations_playbook.sources.store.tables import _prefetched

    assert list(_prefetched(_Cursor([[(1,), (2,)], [(3,)]]))) == [(1,), (2,), (3,)]
    rows = _prefetched(_Cursor([[(1,)]], error=ConnectionError("server closed the connection")))
    assert next(rows) == (1,)
    with pytest.raises(ConnectionError, match="server closed"):
        next(rows)


def test_stopping_a_prefetched_scan_early_stops_its_helper_thread() -> None:
    import threading

    from migrations_playbook.sources.store.tables import PREFETCH_BATCHES, _prefetched

    cursor = _Cursor([[(i,)] for i in range(100)])
    rows = _prefetched(cursor)
    assert next(rows) == (0,)
    rows.close()
    assert not any(t.name == "playbook-prefetch" for t in threading.enumerate())
    assert cursor.fetched <= PREFETCH_BATCHES + 2  # it fetched ahead a little, not the whole store
