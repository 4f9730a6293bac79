"""`playbook gate --checkpointer` without ``--live-contract``, on a real PostgreSQL server and a real SQLite file.

The store is the one tests/integration/test_gate_checkpointer.py gates with the v1 locks (the v1
fixture project's threads, written by `PostgresSaver` / `SqliteSaver` through
tests/fixtures/gate_projects/store_seed.py); here no lock is given, so the live shape is what the
store itself shows (`migrations_playbook/sources/store/shape.py`). Where that shape is enough (a
thread paused at a node the candidate removed, a stored key the candidate dropped) the verdict is
the one the locks give; where it is not (reducers) the gate says what it could not check, a warning
that ``--strict`` turns into a block; and the report's note says what was and was not derived.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.gate_projects.variants import (
    BREAKING,
    HELPDESK_TRIAGE_RENAMED,
    V1,
    WARN_ONLY,
    expected_ids,
    from_a_store,
    make_variant,
)
from tests.integration.test_gate_checkpointer import PASSWORD, SeededStore, _playbook, _postgres_store, _sqlite_store
from tests.postgres_server import PostgresServer

NOTE_START = "live shape derived from the store (no --live-contract): "
NOTE_END = "; pass --live-contract for the full check"

DERIVED_ENOUGH = ("interrupted-node-renamed", "subgraph-node-renamed", "field-renamed-strict", "graph-removed", "type-narrowed")
"""BREAKING variants (tests/fixtures/gate_projects/variants.py) whose findings need no lock: same verdict, same threads."""


@pytest.fixture(scope="module", params=["postgres", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> SeededStore:
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres")
        return _postgres_store(server, "v1_unlocked")
    return _sqlite_store(tmp_path_factory.mktemp("sqlite-v1-unlocked"))


def _gate(capsys: pytest.CaptureFixture[str], store: SeededStore, candidate: Path, *extra: str) -> tuple[int, dict]:
    code, out, err = _playbook(
        capsys, "gate", "--checkpointer", store.uri, "--candidate", str(candidate), "--format", "json", *extra
    )
    assert code in (0, 1), err
    assert PASSWORD not in out + err
    return code, json.loads(out)


def _findings(report: dict) -> dict[tuple, dict]:
    return {(f["code"], f["severity"], f["graph_id"], f["node"], f["field"]): f for f in report["findings"]}


def _derived_note(report: dict) -> str:
    (note,) = [n for n in report["notes"] if n.startswith(NOTE_START)]
    return note


@pytest.mark.parametrize("variant", DERIVED_ENOUGH)
def test_breaking_change_the_store_shows_is_blocked_naming_the_threads_without_a_lock(
    capsys, store: SeededStore, tmp_path: Path, variant: str
) -> None:
    edits, extra, exit_code, expected = BREAKING[variant]
    expected = from_a_store(expected)
    code, report = _gate(capsys, store, make_variant(tmp_path, "candidate", edits), *extra)
    assert (code, report["verdict"]) == (exit_code, "block"), report
    got = _findings(report)
    for finding_code, severity, graph, node, field, position in expected:
        key = (finding_code, severity, graph, node, field)
        assert key in got, f"missing {key}; got {sorted(got)}"
        assert set(got[key]["thread_ids"]) == expected_ids(store.threads, position)
        assert got[key]["thread_count"] == len(expected_ids(store.threads, position))
    blocks = {k for k in got if k[1] == "block"}
    # --strict (field-renamed-strict) also blocks on the unverified reducers: nothing else blocks
    assert blocks - {e[:5] for e in expected} <= {k for k in blocks if k[0] == "REDUCER_UNVERIFIED"}
    if "--strict" not in extra:
        assert {k[0] for k in blocks} == {e[0] for e in expected}


def test_removed_paused_node_exits_1_in_table_form_naming_the_threads(capsys, store: SeededStore, tmp_path: Path) -> None:
    code, out, err = _playbook(
        capsys, "gate", "--checkpointer", store.uri, "--candidate", str(make_variant(tmp_path, "c", HELPDESK_TRIAGE_RENAMED))
    )
    assert code == 1, err
    assert "BLOCK  NODE_MISSING  helpdesk node=triage  threads=3" in out
    assert all(thread in out for thread in expected_ids(store.threads, "helpdesk_at_triage"))


def test_dropped_stored_key_warns_without_strict_as_with_a_lock(capsys, store: SeededStore, tmp_path: Path) -> None:
    edits, _, exit_code, expected = WARN_ONLY["field-renamed"]
    expected = from_a_store(expected)
    code, report = _gate(capsys, store, make_variant(tmp_path, "candidate", edits))
    ((finding_code, severity, graph, node, field, position),) = expected
    found = _findings(report)[(finding_code, severity, graph, node, field)]
    assert (code, set(found["thread_ids"])) == (exit_code, expected_ids(store.threads, position))


def test_new_unguarded_read_is_a_warning_not_a_silent_pass_without_a_lock(capsys, store: SeededStore, tmp_path: Path) -> None:
    """With the locks it blocks (the live code never required the key); the store does not show what the live
    code required, so without them the read is reported, as a warning, on the threads it would break."""
    edits = BREAKING["required-key-read-ahead"][0]
    code, report = _gate(capsys, store, make_variant(tmp_path, "candidate", edits))
    found = _findings(report)[("FIELD_REQUIRED_MISSING", "warn", "helpdesk", None, "summary")]
    assert (code, set(found["thread_ids"])) == (0, expected_ids(store.threads, "helpdesk_at_triage"))


def test_unchanged_code_passes_and_the_note_says_what_was_derived_and_what_was_not(capsys, store: SeededStore) -> None:
    code, report = _gate(capsys, store, V1 / "langgraph.json")
    assert (code, report["verdict"]) == (0, "pass")
    assert {f["severity"] for f in report["findings"]} == {"warn"}
    assert {f["code"] for f in report["findings"]} == {"REDUCER_UNVERIFIED"}
    assert {g: s["threads_scanned"] for g, s in report["graphs"].items()} == {"escalation": 1, "helpdesk": 4, "notes": 1}
    assert report["graphs"]["helpdesk"]["by_status"] == {"idle": 1, "interrupted": 3}
    note = _derived_note(report)
    assert "helpdesk: nodes enrich, intake, respond, triage; state keys flow_version, messages, notes, priority, " in note
    assert "escalation subgraph review: nodes check, confirm; state keys case" in note
    assert "; not derived: reducers" in note and "edges" in note and "defer" in note and "static breakpoints" in note
    assert note.endswith(NOTE_END)


@pytest.mark.parametrize(
    ("strict", "exit_code", "severity"), [([], 0, "warn"), (["--strict"], 1, "block")], ids=["warn", "strict"]
)
def test_reducer_change_is_unverified_a_warning_and_a_block_with_strict(
    capsys, store: SeededStore, tmp_path: Path, strict: list[str], exit_code: int, severity: str
) -> None:
    edits = BREAKING["reducer-changed"][0]  # notes: operator.add -> a plain value
    code, report = _gate(capsys, store, make_variant(tmp_path, "candidate", edits), *strict)
    got = _findings(report)
    assert code == exit_code
    assert not [k for k in got if k[0] == "REDUCER_CHANGED"]  # no lock: the live reducer is unknown
    unverified = got[("REDUCER_UNVERIFIED", severity, "helpdesk", None, None)]
    assert set(unverified["thread_ids"]) == expected_ids(store.threads, "helpdesk_all")
    assert "reducers" in _derived_note(report)


def test_gate_without_a_lock_leaves_every_row_byte_identical(capsys, store: SeededStore, tmp_path: Path) -> None:
    before = store.dump()
    assert before[store.holds_threads]
    _gate(capsys, store, make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED))
    _gate(capsys, store, V1 / "langgraph.json", "--strict")
    assert store.dump() == before


def test_a_graph_neither_the_candidate_nor_the_store_has_exits_2(capsys, store: SeededStore) -> None:
    code, out, err = _playbook(
        capsys, "gate", "--checkpointer", store.uri, "--candidate", str(V1 / "langgraph.json"), "--graph", "nope"
    )
    assert (code, out) == (2, "")
    assert "nope" in err and "without --live-contract" in err and "Traceback" not in err
