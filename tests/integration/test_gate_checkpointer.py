"""`playbook gate --checkpointer` on a real PostgreSQL server and a real SQLite file.

The live side is a self-hosted service without Agent Server: the v1 fixture
project's graphs compiled with `PostgresSaver` / `SqliteSaver` and invoked with a
``thread_id`` and ``graph_id`` metadata (tests/fixtures/gate_projects/store_seed.py),
threads left paused at a node, inside a subgraph, finished, and one with the
previous release's (old-shaped) values. The PostgreSQL server is started by the
fixture in a temporary folder (tests/postgres_server.py) and stopped at the end.
Each candidate is v1 with one change (tests/fixtures/gate_projects/variants.py);
the gate runs in-process through `cli.main`, exactly as the console script does.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from migrations_playbook.cli import main
from migrations_playbook.sources.store.open import open_store
from tests.fixtures.gate_projects import class_variants
from tests.fixtures.gate_projects.store_seed import seed, seed_classes
from tests.fixtures.gate_projects.variants import (
    BREAKING,
    HELPDESK_TRIAGE_RENAMED,
    SAFE,
    V1,
    WARN_ONLY,
    expected_ids,
    from_a_store,
    make_variant,
)
from tests.postgres_server import PostgresServer

PASSWORD = "s3cret-never-printed"
"""The PostgreSQL URIs carry it (trust auth ignores it); no output may show it."""


@dataclass(frozen=True)
class SeededStore:
    kind: str
    uri: str
    threads: dict[str, list[str]]
    """position -> thread ids."""
    dump: Any
    """() -> everything the store holds, byte for byte."""
    holds_threads: str
    """The key of `dump`'s answer that holds the threads (a sanity check on the dump)."""


def _playbook(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def locks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live (v1) code's contract locks: the checkpointer source's view of the live graph shape."""
    folder = tmp_path_factory.mktemp("v1-locks")
    assert main(["contract", "--config", str(V1 / "langgraph.json"), "--write", "--contracts-dir", str(folder)]) == 0
    return folder


def _create_database(server: PostgresServer, name: str) -> str:
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.url_for(name).replace("postgres@", f"postgres:{PASSWORD}@")


def _postgres_dump(uri: str) -> dict[str, list[str]]:
    """Every row of every table, ordered, in PostgreSQL's text form (bytea as hex)."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")
        ]
        return {t: [r[0] for r in conn.execute(f'SELECT t::text FROM "{t}" t ORDER BY 1')] for t in tables}


def _postgres_store(server: PostgresServer, name: str, seeder: Any = seed, **seed_options: Any) -> SeededStore:
    from langgraph.checkpoint.postgres import PostgresSaver

    uri = _create_database(server, name)
    with PostgresSaver.from_conn_string(uri) as saver:
        saver.setup()
        threads = seeder(saver, **seed_options)
    return SeededStore("postgres", uri, threads, lambda: _postgres_dump(uri), "checkpoints")


def _sqlite_dump(path: Path) -> dict[str, bytes]:
    """The database file's bytes, and the WAL's (a reader may create an empty one, never fill it)."""
    wal = path.with_name(path.name + "-wal")
    return {"db": path.read_bytes(), "wal": wal.read_bytes() if wal.exists() else b""}


def _sqlite_store(folder: Path, seeder: Any = seed, **seed_options: Any) -> SeededStore:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = folder / "checkpoints.db"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        threads = seeder(saver, **seed_options)
    return SeededStore("sqlite", f"sqlite:///{path}", threads, lambda: _sqlite_dump(path), "db")


@pytest.fixture(scope="module", params=["postgres", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> SeededStore:
    if request.param == "postgres":
        return _postgres_store(request.getfixturevalue("postgres"), "v1")
    return _sqlite_store(tmp_path_factory.mktemp("sqlite-v1"))


def _gate(capsys: pytest.CaptureFixture[str], store: SeededStore, locks: Path, candidate: Path, *extra: str) -> tuple[int, dict]:
    code, out, err = _playbook(
        capsys,
        "gate",
        "--checkpointer",
        store.uri,
        "--candidate",
        str(candidate),
        "--format",
        "json",
        "--live-contract",
        str(locks),
        *extra,
    )
    assert code in (0, 1), err
    assert PASSWORD not in out + err
    return code, json.loads(out)


@pytest.mark.parametrize(
    ("edits", "extra", "exit_code", "expected"), [*BREAKING.values(), *WARN_ONLY.values()], ids=[*BREAKING, *WARN_ONLY]
)
def test_change_is_reported_from_the_store_with_code_and_thread_ids(
    capsys, store: SeededStore, locks: Path, tmp_path: Path, edits, extra, exit_code, expected
) -> None:
    expected = from_a_store(expected)
    code, report = _gate(capsys, store, locks, make_variant(tmp_path, "candidate", edits), *extra)
    assert code == exit_code, report
    assert (report["gate_result_version"], report["verdict"]) == ("1", "block" if exit_code else "pass")
    got = {(f["code"], f["severity"], f["graph_id"], f["node"], f["field"]): f for f in report["findings"]}
    for finding_code, severity, graph, node, field, position in expected:
        key = (finding_code, severity, graph, node, field)
        assert key in got, f"missing {key}; got {sorted(got)}"
        assert set(got[key]["thread_ids"]) == expected_ids(store.threads, position)
        assert got[key]["thread_count"] == len(expected_ids(store.threads, position))
    assert {k for k in got if k[1] == "block"} == {e[:5] for e in expected if e[1] == "block"}


@pytest.mark.parametrize("edits", list(SAFE.values()), ids=list(SAFE))
def test_safe_change_passes_from_the_store_with_no_finding(
    capsys, store: SeededStore, locks: Path, tmp_path: Path, edits
) -> None:
    code, report = _gate(capsys, store, locks, make_variant(tmp_path, "candidate", edits))
    assert (code, report["verdict"], report["findings"]) == (0, "pass", [])
    assert report["graphs"]["helpdesk"]["threads_scanned"] == 4
    assert report["graphs"]["helpdesk"]["by_status"] == {"idle": 1, "interrupted": 3}
    assert report["graphs"]["escalation"]["by_status"] == {"interrupted": 1}


def test_unchanged_code_passes_and_names_the_store_without_its_password(capsys, store: SeededStore, locks: Path) -> None:
    code, report = _gate(capsys, store, locks, V1 / "langgraph.json")
    assert (code, report["findings"]) == (0, [])
    assert report["live"].startswith(store.kind)
    assert {g: s["threads_scanned"] for g, s in report["graphs"].items()} == {"escalation": 1, "helpdesk": 4, "notes": 1}


def test_gate_inflight_and_snapshot_leave_every_row_byte_identical(
    capsys, store: SeededStore, locks: Path, tmp_path: Path
) -> None:
    before = store.dump()
    assert before[store.holds_threads]
    _gate(capsys, store, locks, make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED))
    for command in ("inflight", "snapshot"):
        code, _, err = _playbook(capsys, command, "--checkpointer", store.uri, "--live-contract", str(locks))
        assert code == 0, err
    after = store.dump()
    assert after == before


def test_inflight_counts_store_threads_by_status_version_and_next(capsys, store: SeededStore, locks: Path) -> None:
    code, out, err = _playbook(capsys, "inflight", "--checkpointer", store.uri, "--live-contract", str(locks), "--format", "json")
    assert code == 0, err
    rows = {
        (g, r["status"], r["flow_version"], r["next"]): r["threads"]
        for g, entries in json.loads(out)["graphs"].items()
        for r in entries
    }
    assert rows == {
        ("escalation", "interrupted", "none", "review,review:confirm"): 1,
        ("helpdesk", "idle", "1", "-"): 1,
        ("helpdesk", "interrupted", "1", "triage"): 2,
        ("helpdesk", "interrupted", "none", "triage"): 1,  # the old release's thread: no flow_version yet
        ("notes", "idle", "none", "-"): 1,
    }


def test_snapshot_of_the_store_reads_back_with_the_interrupts_and_resume_facts(capsys, store: SeededStore, locks: Path) -> None:
    from migrations_playbook.model import ThreadSnapshot

    code, out, err = _playbook(
        capsys, "snapshot", "--checkpointer", store.uri, "--live-contract", str(locks), "--graph", "escalation"
    )
    assert code == 0, err
    data = json.loads(out)
    assert set(data["graphs"]) == {"escalation"}
    (thread,) = [ThreadSnapshot.from_json(t) for t in data["threads"]]
    assert (thread.thread_id, thread.status, thread.pending) == ("escalation-review", "interrupted", ("review", "review:confirm"))
    confirm = next(t for t in thread.tasks if t.path == "review:confirm")
    assert confirm.interrupt_values == ({"kind": "confirm", "case": "C-7"},)
    assert (confirm.routes, confirm.recorded_results, confirm.resume_values) == ((), 0, ())
    assert thread.namespaces == {"review": {"case": "C-7"}}


def test_store_connection_refuses_writes(store: SeededStore) -> None:
    from migrations_playbook.sources.store.open import open_store

    opened = open_store(store.uri)
    try:
        with pytest.raises(Exception, match=r"read-only|readonly"):
            opened._conn.execute("DELETE FROM checkpoints")
    finally:
        opened.close()


# -- the class fixtures (one per finding class of the gate) -------------------------------------

NEEDS_ASSISTANTS = {"CONTEXT_INVALID"}
"""Finding codes about stored assistants: a checkpointer has none, so they are not provable from it."""
CLASS_BREAKING = {vid: v for vid, v in class_variants.BREAKING.items() if not {e[0] for e in v[1]} & NEEDS_ASSISTANTS}


@pytest.fixture(scope="module", params=["postgres", "sqlite"])
def class_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> SeededStore:
    if request.param == "postgres":
        return _postgres_store(request.getfixturevalue("postgres"), "classes", seed_classes)
    return _sqlite_store(tmp_path_factory.mktemp("sqlite-classes"), seed_classes)


@pytest.fixture(scope="module")
def class_locks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("class-locks")
    config = class_variants.CLASSES / "langgraph.json"
    assert (
        main(
            [
                "contract",
                "--config",
                str(config),
                "--write",
                "--contracts-dir",
                str(folder),
                "--records-dir",
                str(folder / "records"),
            ]
        )
        == 0
    )
    return folder


def _touched(edits: list, expected: list) -> list[str]:
    """The graphs a class variant changes: those of its edited files, and those it expects findings on."""
    specs = json.loads((class_variants.CLASSES / "langgraph.json").read_text())["graphs"]
    files = {file for file, _, _ in edits}
    touched = {graph for graph, spec in specs.items() if spec.split(":")[0].removeprefix("./") in files}
    return sorted(touched | {e[2] for e in expected})


def _class_gate(
    capsys, class_store: SeededStore, class_locks: Path, tmp_path: Path, edits: list, expected: list
) -> tuple[int, dict]:
    candidate = class_variants.make_variant(tmp_path, "candidate", edits)
    graphs = [arg for graph in _touched(edits, expected) for arg in ("--graph", graph)]
    return _gate(capsys, class_store, class_locks, candidate, *graphs)


def _real_saver(store: SeededStore) -> Any:
    """The service's own saver on the store (for the expected side only)."""
    if store.kind == "postgres":
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        return contextlib.closing(
            psycopg.connect(store.uri, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        ), PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    return contextlib.closing(sqlite3.connect(store.uri.removeprefix("sqlite://"), check_same_thread=False)), SqliteSaver


def _task_key(fact: Any) -> tuple:
    return (
        fact.path,
        fact.interrupted,
        fact.finished,
        fact.errored,
        fact.push,
        json.dumps(fact.result, sort_keys=True),
        json.dumps(list(fact.interrupt_values), sort_keys=True),
    )


@pytest.mark.parametrize("position", [s[0] for s in class_variants.STARTS])
def test_store_snapshot_matches_get_state_of_the_live_graph(class_store: SeededStore, class_locks: Path, position: str) -> None:
    """The stand-in derivation gives what LangGraph's get_state(subgraphs=True) gives on the real
    live graph over the same store (the shape the Agent Server API returns), for every position."""
    from migrations_playbook.graphcode.candidate import load_compiled
    from migrations_playbook.graphcode.contract import read_locks
    from migrations_playbook.sources.api.shape import state_json, to_json
    from migrations_playbook.sources.api.state import pending_paths, task_facts
    from migrations_playbook.sources.store.attribution import Attribution
    from migrations_playbook.sources.store.open import open_store
    from migrations_playbook.sources.store.scan import iter_snapshots

    graph_id = next(s[1] for s in class_variants.STARTS if s[0] == position)
    locks = read_locks(class_locks)
    opened = open_store(class_store.uri)
    try:
        (got,) = [t for t in iter_snapshots(opened, locks, [graph_id], Attribution()) if t.thread_id == position]
    finally:
        opened.close()
    connection, saver_class = _real_saver(class_store)
    with connection as conn:
        live_graph = load_compiled(class_variants.CLASSES / "langgraph.json", [graph_id])[graph_id]
        state = to_json(
            state_json(
                live_graph.copy(update={"checkpointer": saver_class(conn)}).get_state(
                    {"configurable": {"thread_id": position}}, subgraphs=True
                )
            )
        )
    facts, namespaces = task_facts(state)
    assert got.unreadable is None
    assert got.status == ("idle" if position.endswith("_idle") else "interrupted")
    assert (set(got.pending), got.next, namespaces) == (set(pending_paths(state)), tuple(state["next"]), got.namespaces)
    assert sorted(map(_task_key, got.tasks)) == sorted(map(_task_key, facts))
    assert got.values == (state["values"] if isinstance(state["values"], dict) else {})


def _fast_and_slow(seeded: SeededStore, lock_dir: Path) -> tuple[list[dict], list[dict], int]:
    """Every thread's snapshot with the idle fast path and without it (get_state for all), and how
    many threads the fast path read."""
    from migrations_playbook.graphcode.contract import read_locks
    from migrations_playbook.sources.store.attribution import Attribution
    from migrations_playbook.sources.store.reads import ScanCounts
    from migrations_playbook.sources.store.scan import iter_snapshots

    locks = read_locks(lock_dir)
    counts = ScanCounts()
    opened = open_store(seeded.uri)
    try:
        fast = [t.to_json() for t in iter_snapshots(opened, locks, sorted(locks), Attribution(), counts=counts)]
        slow = [t.to_json() for t in iter_snapshots(opened, locks, sorted(locks), Attribution(), fast=False)]
    finally:
        opened.close()
    assert len(slow) == sum(len(ids) for ids in seeded.threads.values())
    return fast, slow, counts.read_idle


def test_idle_threads_read_from_their_row_give_the_get_state_snapshot(store: SeededStore, locks: Path) -> None:
    """The fast path (`IdleTest`: no get_state for a thread with nothing pending) gives the snapshot
    LangGraph's get_state gives, thread for thread, at every v1 position; it reads every idle
    thread, and only those."""
    fast, slow, read_idle = _fast_and_slow(store, locks)
    assert fast == slow
    idle = [t["thread_id"] for t in slow if t["status"] == "idle"]
    assert sorted(idle) == ["helpdesk-done", "notes-echo"] and read_idle == len(idle)


def test_idle_threads_read_from_their_row_give_the_get_state_snapshot_at_every_class_position(
    class_store: SeededStore, class_locks: Path
) -> None:
    """The same over the class fixtures: joins, deferred nodes, subgraphs, Send fan-outs, static
    and dynamic breakpoints, the Functional API, messages."""
    fast, slow, read_idle = _fast_and_slow(class_store, class_locks)
    assert fast == slow
    idle = sorted(t["thread_id"] for t in slow if t["status"] == "idle")
    assert idle == sorted(s[0] for s in class_variants.STARTS if s[0].endswith("_idle")) and read_idle == len(idle)


@pytest.mark.parametrize("variant_id", list(CLASS_BREAKING), ids=list(CLASS_BREAKING))
def test_every_finding_class_is_caught_from_the_store(
    capsys, class_store: SeededStore, class_locks: Path, tmp_path: Path, variant_id: str
) -> None:
    edits, expected, _ = CLASS_BREAKING[variant_id]
    code, report = _class_gate(capsys, class_store, class_locks, tmp_path, edits, expected)
    assert (code, report["verdict"]) == (1, "block"), report["findings"]
    got = {(f["code"], f["severity"], f["graph_id"], f["node"], f["field"]): f for f in report["findings"]}
    for finding_code, severity, graph, node, field, position in expected:
        key = (finding_code, severity, graph, node, field)
        assert key in got, f"missing {key}; got {sorted(got, key=str)}"
        ids = class_variants.expected_ids(class_store.threads, position)
        assert (set(got[key]["thread_ids"]), got[key]["thread_count"]) == (ids, len(ids)), got[key]
    assert {k for k in got if k[1] == "block"} == {e[:5] for e in expected}


@pytest.mark.parametrize("variant_id", list(class_variants.SAFE), ids=list(class_variants.SAFE))
def test_safe_class_change_passes_from_the_store(
    capsys, class_store: SeededStore, class_locks: Path, tmp_path: Path, variant_id: str
) -> None:
    edits, expected, _ = class_variants.SAFE[variant_id]
    code, report = _class_gate(capsys, class_store, class_locks, tmp_path, edits, expected)
    assert (code, report["verdict"], [f for f in report["findings"] if f["severity"] == "block"]) == (0, "pass", [])


def _escalation_called_twice(saver: Any) -> dict[str, list[str]]:
    """An escalation thread whose first case finished and whose second case waits in review."""
    from langgraph.types import Command

    from migrations_playbook.graphcode.candidate import load_compiled

    graph = load_compiled(V1 / "langgraph.json", ["escalation"])["escalation"].copy(update={"checkpointer": saver})
    config = {"configurable": {"thread_id": "twice"}, "metadata": {"graph_id": "escalation"}}
    graph.invoke({"case": "C-1"}, config)
    graph.invoke(Command(resume="approve"), config)
    graph.invoke({"case": "C-2"}, config)
    return {"twice": ["twice"]}


@pytest.mark.parametrize("kind", ["postgres", "sqlite"])
def test_only_the_current_subgraph_call_is_read(request: pytest.FixtureRequest, tmp_path: Path, locks: Path, kind: str) -> None:
    """A subgraph called in an earlier step leaves its namespace behind; get_state never reads it, nor does the gate."""
    from migrations_playbook.graphcode.contract import read_locks
    from migrations_playbook.sources.store.attribution import Attribution
    from migrations_playbook.sources.store.open import open_store
    from migrations_playbook.sources.store.scan import iter_snapshots

    if kind == "postgres":
        seeded = _postgres_store(request.getfixturevalue("postgres"), "twice", _escalation_called_twice)
    else:
        seeded = _sqlite_store(tmp_path, _escalation_called_twice)
    opened = open_store(seeded.uri)
    try:
        (heads,) = list(opened.threads())
        (thread,) = list(iter_snapshots(opened, read_locks(locks), ["escalation"], Attribution()))
    finally:
        opened.close()
    assert len(heads.heads) == 2  # the root and the current call, of the three namespaces stored
    assert thread.namespaces == {"review": {"case": "C-2", "decision": "approve"}}  # the parent's state, as input
    assert (thread.status, thread.pending) == ("interrupted", ("review", "review:confirm"))


# -- attribution ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def unlabeled(tmp_path_factory: pytest.TempPathFactory) -> SeededStore:
    """A service that never stamps graph_id: only helpdesk threads, no metadata."""
    return _sqlite_store(tmp_path_factory.mktemp("sqlite-unlabeled"), label=False, only=frozenset({"helpdesk"}))


def test_unlabeled_threads_with_several_graphs_are_a_usage_error_naming_the_flag(
    capsys, unlabeled: SeededStore, locks: Path
) -> None:
    code, out, err = _playbook(
        capsys,
        "gate",
        "--checkpointer",
        unlabeled.uri,
        "--candidate",
        str(V1 / "langgraph.json"),
        "--live-contract",
        str(locks),
    )
    assert (code, out) == (2, "")
    assert "graph_id" in err and "--all-threads-are" in err and "Traceback" not in err


def test_all_threads_are_attributes_unlabeled_threads_to_the_named_graph(
    capsys, unlabeled: SeededStore, locks: Path, tmp_path: Path
) -> None:
    code, report = _gate(
        capsys,
        unlabeled,
        locks,
        make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED),
        "--all-threads-are",
        "helpdesk",
    )
    assert (code, list(report["graphs"])) == (1, ["helpdesk"])
    (finding,) = [f for f in report["findings"] if f["severity"] == "block"]
    assert (finding["code"], finding["node"]) == ("NODE_MISSING", "triage")
    assert set(finding["thread_ids"]) == set(unlabeled.threads["helpdesk_at_triage"])


def test_single_graph_candidate_owns_unlabeled_threads(capsys, unlabeled: SeededStore, locks: Path, tmp_path: Path) -> None:
    candidate = make_variant(
        tmp_path,
        "candidate",
        [
            ("langgraph.json", ',\n    "escalation": "./escalation.py:make_graph",\n    "notes": "notes_pkg.graph:graph"', ""),
        ],
    )
    code, report = _gate(capsys, unlabeled, locks, candidate, "--graph", "helpdesk")
    assert (code, report["graphs"]["helpdesk"]["threads_scanned"]) == (0, 4)


# -- errors ----------------------------------------------------------------------------------


def test_unreachable_postgres_exits_3_without_the_password(capsys, locks: Path) -> None:
    from migrations_playbook.staging.server import free_port

    uri = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/v1"
    code, out, err = _playbook(capsys, "inflight", "--checkpointer", uri, "--live-contract", str(locks))
    assert (code, out) == (3, "")
    assert "unreachable" in err and "postgresql://postgres@127.0.0.1" in err and PASSWORD not in err


def test_missing_sqlite_file_exits_3(capsys, locks: Path, tmp_path: Path) -> None:
    code, _, err = _playbook(
        capsys, "inflight", "--checkpointer", f"sqlite:///{tmp_path}/absent.db", "--live-contract", str(locks)
    )
    assert code == 3 and "no file" in err


def test_database_without_checkpointer_tables_is_a_usage_error_and_is_not_set_up(
    capsys, postgres: PostgresServer, locks: Path
) -> None:
    uri = _create_database(postgres, "empty")
    code, _, err = _playbook(capsys, "inflight", "--checkpointer", uri, "--live-contract", str(locks))
    assert code == 2 and "no checkpoints, checkpoint_blobs, checkpoint_writes table" in err
    assert _postgres_dump(uri) == {}


def test_missing_postgres_driver_names_the_package(capsys, monkeypatch: pytest.MonkeyPatch, locks: Path) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as on a machine without it: `import psycopg` fails
    code, _, err = _playbook(capsys, "inflight", "--checkpointer", "postgresql://localhost/db", "--live-contract", str(locks))
    assert code == 2 and "pip install langgraph-checkpoint-postgres" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--checkpointer", "mysql://db/x", "--live-contract", "{locks}"], "postgresql://", id="unknown-scheme"),
        pytest.param(
            ["--checkpointer", "sqlite://relative.db", "--live-contract", "{locks}"],
            "sqlite:///ABS/PATH.db",
            id="relative-sqlite",
        ),
        pytest.param(["--checkpointer", "sqlite:///x.db"], "--live-contract", id="no-live-contract"),
        pytest.param(["--checkpointer", "sqlite:///x.db", "--live", "http://127.0.0.1:1"], "not allowed with", id="two-sources"),
        pytest.param(
            ["--checkpointer", "sqlite:///x.db", "--live-contract", "{locks}", "--graph", "nope"], "no lock", id="unknown-graph"
        ),
    ],
)
def test_bad_checkpointer_arguments_exit_2_with_a_message(capsys, locks: Path, argv: list[str], message: str) -> None:
    try:
        code, out, err = _playbook(capsys, "inflight", *[a.format(locks=locks) for a in argv])
    except SystemExit as exc:  # argparse's own usage errors
        code, err = exc.code, capsys.readouterr().err
        out = ""
    assert (code, out) == (2, "")
    assert message in err and "Traceback" not in err


# -- what the store proves that the API cannot -------------------------------------------------
#
# A live release of the class fixtures whose threads hold facts only a checkpointer shows: a
# finished sibling whose router chose END (`parallel`, topic "skip"), a pending Send whose payload
# carries a key the live worker never read (`mapper`: "weight"), and a two-question entrypoint whose
# questions name no kind (`func_steps`), one thread waiting at each question. Each candidate below
# is that release with one change; the same snapshots are judged as read from the store and as the
# Agent Server API shows them (the store-only TaskFact fields unknown).

GAIN_LIVE = [
    (
        "pending.py",
        'Literal["archive", "__end__"]:\n    return "archive"',
        'Literal["archive", "__end__"]:\n    return "__end__" if state["topic"] == "skip" else "archive"',
    ),
    (
        "pending.py",
        '    item: str\n    """The Send payload."""',
        '    item: str\n    """The Send payload."""\n'
        '    weight: NotRequired[int]\n    """Sent by fan_out; read by no live code."""',
    ),
    ("pending.py", 'Send("worker", {"item": item})', 'Send("worker", {"item": item, "weight": 2})'),
    (
        "functional.py",
        'first = interrupt({"kind": "first_question", "found": found})',
        'first = interrupt(f"first, about {found}?")',
    ),
    (
        "functional.py",
        'second = interrupt({"kind": "second_question", "first": first})',
        'second = interrupt(f"then, after {first}?")',
    ),
]
GAIN_THREADS = [
    # (thread id, graph, input, resume values)
    ("parallel_skip", "parallel", {"topic": "skip"}, []),
    ("parallel_keep", "parallel", {"topic": "keep"}, []),
    ("mapper_weighted", "mapper", {"items": ["a", "ask-b"]}, []),
    ("steps_at_first", "func_steps", {"item": "x"}, []),
    ("steps_at_second", "func_steps", {"item": "y"}, ["A1"]),
]
ARCHIVE_REMOVED = [
    (
        "pending.py",
        'Literal["archive", "__end__"]:\n    return "__end__" if state["topic"] == "skip" else "archive"',
        'Literal["__end__"]:\n    return "__end__"',
    ),
    ("pending.py", '_parallel.add_node("archive", archive)\n', ""),
    ("pending.py", '_parallel.add_edge("archive", END)\n', ""),
]
WORKER_READS = (
    "pending.py",
    "def worker(state: WorkerInput) -> dict:\n",
    'def worker(state: WorkerInput) -> dict:\n    weight = state["{key}"]\n',
)
TASK_BETWEEN_QUESTIONS = [
    (
        "functional.py",
        'first = interrupt(f"first, about {found}?")\n',
        'first = interrupt(f"first, about {found}?")\n    checked = lookup(first).result()\n',
    ),
    ("functional.py", 'second = interrupt(f"then, after {first}?")', 'second = interrupt(f"then, after {checked}?")'),
]


@dataclass(frozen=True)
class GainStore:
    project: Path
    locks: dict[str, dict]
    snapshots: list[Any]


def _seed_gain_threads(project: Path) -> Any:
    from langgraph.types import Command

    from migrations_playbook.graphcode.candidate import load_compiled

    def seeder(saver: Any) -> dict[str, list[str]]:
        graphs = load_compiled(project / "langgraph.json", sorted({g for _, g, _, _ in GAIN_THREADS}))
        for thread_id, graph_id, payload, resumes in GAIN_THREADS:
            graph = graphs[graph_id].copy(update={"checkpointer": saver})
            config = {"configurable": {"thread_id": thread_id}, "metadata": {"graph_id": graph_id}}
            graph.invoke(payload, config)
            for value in resumes:
                graph.invoke(Command(resume=value), config)
        return {t: [t] for t, *_ in GAIN_THREADS}

    return seeder


@pytest.fixture(scope="module", params=["postgres", "sqlite"])
def gain_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> GainStore:
    from migrations_playbook.graphcode.contract import read_locks
    from migrations_playbook.sources.store.attribution import Attribution
    from migrations_playbook.sources.store.scan import iter_snapshots

    root = tmp_path_factory.mktemp("gain")
    project = class_variants.make_variant(root, "live", GAIN_LIVE).parent
    assert (
        main(
            [
                "contract",
                "--config",
                str(project / "langgraph.json"),
                "--write",
                "--contracts-dir",
                str(root / "locks"),
                "--records-dir",
                str(root / "records"),
            ]
        )
        == 0
    )
    seeder = _seed_gain_threads(project)
    if request.param == "postgres":
        seeded = _postgres_store(request.getfixturevalue("postgres"), "gain", seeder)
    else:
        seeded = _sqlite_store(root, seeder)
    locks = read_locks(root / "locks")
    wanted = sorted({g for _, g, _, _ in GAIN_THREADS})
    opened = open_store(seeded.uri)
    try:
        snapshots = list(iter_snapshots(opened, locks, wanted, Attribution()))
    finally:
        opened.close()
    assert sorted(s.thread_id for s in snapshots) == sorted(t for t, *_ in GAIN_THREADS)
    return GainStore(project, locks, snapshots)


def _api_view(snapshot: Any) -> Any:
    """The snapshot as the Agent Server API gives it: the store-only task facts unknown."""
    import dataclasses

    hidden = {"send_payload": None, "routes": None, "recorded_results": None, "resume_values": None}
    return dataclasses.replace(snapshot, tasks=tuple(dataclasses.replace(t, **hidden) for t in snapshot.tasks))


def _judged(gain: GainStore, edits: list, *, api: bool, lock_version: int | None = None) -> dict[tuple, tuple[set[str], str]]:
    """(code, graph, node, field) -> (thread ids, message) for the live release plus ``edits``."""
    import tempfile

    from migrations_playbook.graphcode.candidate import load_candidate
    from migrations_playbook.rules.evaluate import Evaluator
    from migrations_playbook.sources.store.reads import live_graphs

    locks = {g: {**lock, "lock_version": lock_version or lock["lock_version"]} for g, lock in gain.locks.items()}
    with tempfile.TemporaryDirectory() as tmp:
        registered, candidates = load_candidate(class_variants.make_variant(Path(tmp), "candidate", GAIN_LIVE + edits))
    evaluator = Evaluator(live=live_graphs(locks, sorted(locks)), candidates=candidates, registered=registered)
    for snapshot in gain.snapshots:
        evaluator.add(_api_view(snapshot) if api else snapshot)
    return {(f.code, f.graph_id, f.node, f.field): (set(f.thread_ids), f.message) for f in evaluator.findings()}


def test_store_facts_are_read_for_each_gain_thread(gain_store: GainStore) -> None:
    tasks = {(s.thread_id, t.path): t for s in gain_store.snapshots for t in s.tasks}
    assert tasks[("parallel_skip", "brancher")].routes == ()  # its router chose END
    assert tasks[("parallel_keep", "brancher")].routes == ("archive",)
    paused = next(t for (tid, path), t in tasks.items() if tid == "mapper_weighted" and t.interrupted)
    assert paused.send_payload == {"item": "ask-b", "weight": 2}
    assert (tasks[("steps_at_first", "two_step")].recorded_results, tasks[("steps_at_first", "two_step")].resume_values) == (
        1,
        (),
    )
    assert (tasks[("steps_at_second", "two_step")].recorded_results, tasks[("steps_at_second", "two_step")].resume_values) == (
        1,
        ("A1",),
    )


def test_finished_sibling_that_chose_end_does_not_block_from_the_store(gain_store: GainStore) -> None:
    key = ("PENDING_WRITE_ORPHANED", "parallel", "brancher", None)
    store, api = _judged(gain_store, ARCHIVE_REMOVED, api=False), _judged(gain_store, ARCHIVE_REMOVED, api=True)
    assert store[key][0] == {"parallel_keep"}
    assert "route to 'archive'" in store[key][1] and "may have routed" not in store[key][1]
    assert api[key][0] == {"parallel_keep", "parallel_skip"} and "may have routed" in api[key][1]


def test_send_payload_is_checked_against_its_stored_keys(gain_store: GainStore) -> None:
    key = ("SEND_PAYLOAD_INVALID", "mapper", "worker", "weight")
    reads_weight = [(WORKER_READS[0], WORKER_READS[1], WORKER_READS[2].format(key="weight"))]
    assert key not in _judged(gain_store, reads_weight, api=False)  # the payload carries it
    assert _judged(gain_store, reads_weight, api=True)[key][0] == {"mapper_weighted"}  # the lock says nobody read it

    reads_rank = [(WORKER_READS[0], WORKER_READS[1], WORKER_READS[2].format(key="rank"))]
    found = _judged(gain_store, reads_rank, api=False, lock_version=1)  # no lock of code facts: the payload is enough
    ids, message = found[("SEND_PAYLOAD_INVALID", "mapper", "worker", "rank")]
    assert ids == {"mapper_weighted"} and "carries 'item', 'weight'" in message
    assert not any(k[0] == "SEND_PAYLOAD_UNVERIFIED" for k in found)
    api = _judged(gain_store, reads_rank, api=True, lock_version=1)
    assert ("SEND_PAYLOAD_INVALID", "mapper", "worker", "rank") not in api
    assert api[("SEND_PAYLOAD_UNVERIFIED", "mapper", "worker", None)][0] == {"mapper_weighted"}


def test_call_inserted_between_two_questions_blocks_only_threads_past_the_first_from_the_store(gain_store: GainStore) -> None:
    key = ("CALL_ORDER_CHANGED", "func_steps", "two_step", None)
    store, api = _judged(gain_store, TASK_BETWEEN_QUESTIONS, api=False), _judged(gain_store, TASK_BETWEEN_QUESTIONS, api=True)
    assert store[key][0] == {"steps_at_second"}  # it answered the first question: the replay reaches the insert
    assert api[key][0] == {"steps_at_first", "steps_at_second"}  # unnamed questions: bounded by the last one


def test_call_order_unverified_is_silent_for_threads_that_recorded_nothing(gain_store: GainStore) -> None:
    key = ("CALL_ORDER_UNVERIFIED", "func_steps", "two_step", None)
    store = _judged(gain_store, [], api=False, lock_version=1)
    api = _judged(gain_store, [], api=True, lock_version=1)
    # parallel's ask and mapper's worker wait at the candidate's first question, with nothing recorded
    assert {k[1] for k in store if k[0] == "CALL_ORDER_UNVERIFIED"} == {"func_steps"}
    assert {k[1] for k in api if k[0] == "CALL_ORDER_UNVERIFIED"} == {"func_steps", "mapper", "parallel"}
    assert store[key][0] == api[key][0] == {"steps_at_first", "steps_at_second"}  # they recorded a task result


# -- replay: the candidate in-process on a throwaway copy of the store ------------------------

RESUME_MAP = '{"plan_approval": "approved", "confirm": "approve"}'


def _replay(capsys, store: SeededStore, locks: Path, candidate: Path, *extra: str) -> tuple[int, dict]:
    code, out, err = _playbook(
        capsys,
        "replay",
        "--checkpointer",
        store.uri,
        "--candidate",
        str(candidate),
        "--live-contract",
        str(locks),
        "--format",
        "json",
        *extra,
    )
    assert code in (0, 1), err
    assert PASSWORD not in out + err
    return code, json.loads(out)


def _copies_left(store: SeededStore) -> list[str]:
    """Throwaway copies a replay left behind: databases on the server, files beside the SQLite file."""
    if store.kind == "postgres":
        import psycopg

        with psycopg.connect(store.uri, autocommit=True) as conn:
            return [r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'playbook_replay_%'")]
    import tempfile

    beside = [
        p.name for p in Path(store.uri.removeprefix("sqlite://")).parent.iterdir() if not p.name.startswith("checkpoints.db")
    ]
    return sorted(beside + [p.name for p in Path(tempfile.gettempdir()).glob("playbook-replay-*")])


def test_replay_of_unchanged_code_on_a_store_copy_resumes_every_paused_thread(capsys, store: SeededStore, locks: Path) -> None:
    code, report = _replay(capsys, store, locks, V1 / "langgraph.json", "--resume-map", RESUME_MAP)
    assert (code, report["command"], report["verdict"], report["findings"]) == (0, "replay", "pass", [])
    assert report["graphs"]["helpdesk"]["by_status"] == {"interrupted": 3}
    assert "helpdesk: 3 of 3 interrupted thread(s) resumed on staging; the paused step ran on 3" in report["notes"]
    assert "escalation: 1 of 1 interrupted thread(s) resumed on staging; the paused step ran on 1" in report["notes"]
    assert "the candidate ran in-process on" in report["notes"][0]


def test_replay_on_a_store_copy_shows_a_renamed_node_strands_paused_threads(
    capsys, store: SeededStore, locks: Path, tmp_path: Path
) -> None:
    code, report = _replay(
        capsys, store, locks, make_variant(tmp_path, "renamed", HELPDESK_TRIAGE_RENAMED), "--resume-map", RESUME_MAP
    )
    assert code == 1
    by_code = {f["code"]: f for f in report["findings"]}
    assert set(by_code) == {"STAGING_STATE_DIVERGED", "STAGING_RESUME_FAILED"}
    for finding in by_code.values():
        assert (finding["graph_id"], finding["node"]) == ("helpdesk", "triage")
        assert set(finding["thread_ids"]) == set(store.threads["helpdesk_at_triage"])
    assert "never ran" in by_code["STAGING_RESUME_FAILED"]["message"]
    assert '"next": []' in by_code["STAGING_STATE_DIVERGED"]["message"]


def test_replay_leaves_every_row_of_the_store_byte_identical_and_no_copy_behind(
    capsys, store: SeededStore, locks: Path, tmp_path: Path
) -> None:
    before, copies = store.dump(), _copies_left(store)
    _replay(capsys, store, locks, V1 / "langgraph.json", "--resume-map", RESUME_MAP)
    _replay(capsys, store, locks, make_variant(tmp_path, "renamed", HELPDESK_TRIAGE_RENAMED), "--auto-resume", "--resume", '"ok"')
    assert store.dump() == before
    assert _copies_left(store) == copies


def test_replay_without_createdb_on_postgres_is_a_usage_error_and_writes_nothing(
    capsys, postgres: PostgresServer, locks: Path
) -> None:
    import psycopg

    seeded = _postgres_store(postgres, "nocreatedb")
    with psycopg.connect(seeded.uri, autocommit=True) as conn:
        conn.execute("CREATE ROLE reader LOGIN NOCREATEDB")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    uri = seeded.uri.replace("postgres:", "reader:", 1)
    before = seeded.dump()
    code, out, err = _playbook(
        capsys,
        "replay",
        "--checkpointer",
        uri,
        "--candidate",
        str(V1 / "langgraph.json"),
        "--live-contract",
        str(locks),
        "--resume-map",
        RESUME_MAP,
    )
    assert (code, out) == (2, "")
    assert "CREATEDB" in err and "Traceback" not in err and PASSWORD not in err
    assert seeded.dump() == before


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(["--persistence", "/tmp"], "makes its own staging copy", id="checkpointer-and-persistence"),
        pytest.param(["--no-contract"], "--live-contract", id="no-live-contract"),
    ],
)
def test_bad_replay_checkpointer_arguments_exit_2_with_a_message(
    capsys, store: SeededStore, locks: Path, extra: list[str], message: str
) -> None:
    contract = [] if extra == ["--no-contract"] else ["--live-contract", str(locks)]
    code, out, err = _playbook(
        capsys,
        "replay",
        "--checkpointer",
        store.uri,
        "--candidate",
        str(V1 / "langgraph.json"),
        *contract,
        *[e for e in extra if e != "--no-contract"],
    )
    assert (code, out) == (2, "")
    assert message in err and "Traceback" not in err


def test_replay_with_neither_a_staging_copy_nor_a_checkpointer_names_them(capsys) -> None:
    with pytest.raises(SystemExit) as exited:  # argparse's own usage error, as for any required flag
        main(["replay", "--live", "http://127.0.0.1:1", "--candidate", str(V1 / "langgraph.json")])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert "--persistence" in err and "--checkpointer" in err and "Traceback" not in err


# -- a partitioned scan (PostgreSQL: ranges of thread ids in forked workers, one shared snapshot) ----


@pytest.fixture
def split_scans(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``split(n)``: the next gates read every store in ``n`` parts (``n`` processes), however small
    it is; ``forks`` counts the workers started."""
    from migrations_playbook.sources.store import postgres as store_postgres
    from migrations_playbook.sources.store import scan

    forks: list[Any] = []
    real_fork = scan._fork

    def counted(*args: Any) -> Any:
        forks.append(args[1])
        return real_fork(*args)

    monkeypatch.setattr(store_postgres, "SHARE_MIN_THREADS", 0)
    monkeypatch.setattr(scan, "_fork", counted)

    def split(parts: int) -> None:
        monkeypatch.setattr(scan, "workers", lambda: parts)

    split.forks = forks  # type: ignore[attr-defined]
    return split


def _gate_both_ways(capsys, split_scans: Any, store: SeededStore, locks: Path, candidate: Path, *extra: str) -> tuple[dict, dict]:
    split_scans(1)
    _, whole = _gate(capsys, store, locks, candidate, *extra)
    split_scans(3)
    started = len(split_scans.forks)
    _, parts = _gate(capsys, store, locks, candidate, *extra)
    assert len(split_scans.forks) - started == 2  # this process read the first range, two workers the others
    return whole, parts


@pytest.mark.parametrize("class_store", ["postgres"], indirect=True)
@pytest.mark.parametrize("variant_id", [*CLASS_BREAKING, *class_variants.SAFE], ids=[*CLASS_BREAKING, *class_variants.SAFE])
def test_gate_read_in_parallel_parts_reports_what_one_pass_reports(
    capsys, split_scans: Any, class_store: SeededStore, class_locks: Path, tmp_path: Path, variant_id: str
) -> None:
    edits, expected, _ = {**CLASS_BREAKING, **class_variants.SAFE}[variant_id]
    candidate = class_variants.make_variant(tmp_path, "candidate", edits)
    graphs = [arg for graph in _touched(edits, expected) for arg in ("--graph", graph)]
    whole, parts = _gate_both_ways(capsys, split_scans, class_store, class_locks, candidate, *graphs)
    assert parts == whole  # the same findings, first thread ids, counts, statuses and notes, in the same order


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
@pytest.mark.parametrize(("edits", "extra", "exit_code", "expected"), [*BREAKING.values()], ids=[*BREAKING])
def test_gate_read_in_parallel_parts_reports_v1_changes_as_one_pass(
    capsys, split_scans: Any, store: SeededStore, locks: Path, tmp_path: Path, edits, extra, exit_code, expected
) -> None:
    whole, parts = _gate_both_ways(capsys, split_scans, store, locks, make_variant(tmp_path, "candidate", edits), *extra)
    assert parts == whole and whole["verdict"] == "block"


def test_parts_read_the_exported_snapshot_not_what_was_written_after_it(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from migrations_playbook.sources.store import postgres as store_postgres

    seeded = _postgres_store(postgres, "parts_snapshot")
    monkeypatch.setattr(store_postgres, "SHARE_MIN_THREADS", 0)
    exporter = store_postgres.PostgresStore(seeded.uri)
    try:
        every = [t.thread_id for t in exporter.threads()]
        parts = exporter.share(2)
        with psycopg.connect(seeded.uri, autocommit=True) as writer:  # a service writing meanwhile
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                columns = [
                    r[0]
                    for r in writer.execute(
                        "SELECT column_name FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
                        (table,),
                    )
                ]
                picked = ", ".join("'zz-late' || thread_id" if c == "thread_id" else c for c in columns)
                writer.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {picked} FROM {table}")
        read = []
        for part in parts:
            worker = store_postgres.PostgresStore(seeded.uri, part=part)
            try:
                read.append([t.thread_id for t in worker.threads()])
            finally:
                worker.close()
    finally:
        exporter.close()
    assert len(parts) == 2 and all(read)
    assert read[0] + read[1] == every  # contiguous, in order, nothing twice, nothing written after the snapshot


@pytest.fixture(scope="module")
def pg_unlabeled(postgres: PostgresServer) -> SeededStore:
    return _postgres_store(postgres, "unlabeled", label=False, only=frozenset({"helpdesk"}))


def test_an_error_in_a_worker_is_the_gates_error(capsys, split_scans: Any, pg_unlabeled: SeededStore, locks: Path) -> None:
    split_scans(3)
    code, out, err = _playbook(
        capsys,
        "gate",
        "--checkpointer",
        pg_unlabeled.uri,
        "--candidate",
        str(V1 / "langgraph.json"),
        "--live-contract",
        str(locks),
    )
    assert (code, out) == (2, "")
    assert "graph_id" in err and "--all-threads-are" in err and "Traceback" not in err and PASSWORD not in err


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_a_part_whose_worker_cannot_connect_is_read_by_the_gate_itself(
    capsys, split_scans: Any, store: SeededStore, locks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from migrations_playbook.sources.store import postgres as store_postgres
    from migrations_playbook.sources.store import tables as stores

    candidate = make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED)
    split_scans(1)
    _, whole = _gate(capsys, store, locks, candidate)
    real_init = store_postgres.PostgresStore.__init__

    def refused(self: Any, uri: str, *, part: Any = None) -> None:
        if part is not None:
            raise stores.StoreUnreachable("too many connections")
        real_init(self, uri)

    monkeypatch.setattr(store_postgres.PostgresStore, "__init__", refused)
    split_scans(3)
    _, parts = _gate(capsys, store, locks, candidate)
    assert parts == whole


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_parallel_parts_show_every_part_on_one_progress_bar(split_scans: Any, store: SeededStore, locks: Path) -> None:
    from migrations_playbook.graphcode.contract import read_locks
    from migrations_playbook.sources.store.attribution import Attribution
    from migrations_playbook.sources.store.scan import iter_snapshots, partitioned

    read = read_locks(locks)
    shown: list[tuple[str, int, int]] = []

    def ids(part: Any, progress: Any, total: int) -> list[str]:
        return [t.thread_id for t in iter_snapshots(part, read, sorted(read), Attribution(), progress=progress, total=total)]

    opened = open_store(store.uri)
    try:
        parts = partitioned(opened, ids, progress=lambda *update: shown.append(update), processes=3)
        whole = [t.thread_id for t in opened.threads()]
    finally:
        opened.close()
    assert len(parts) == 3 and [i for part in parts for i in part] == whole
    assert shown[-1] == ("threads", len(whole), len(whole))  # this process's bar counts the workers' threads too
