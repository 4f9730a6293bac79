"""The gate's evaluate layer on recorded snapshots (no server).

tests/fixtures/gate_snapshots/v1.json holds what `playbook snapshot` read from
the v1 fixture project's live threads (regenerate.py says how). Candidates are
the same one-change variants the integration tests run against a real server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrations_playbook.graphcode.candidate import contract_of, load_candidate, load_compiled
from migrations_playbook.graphcode.contract import lock_document
from migrations_playbook.jsonschema_types import output_types_of
from migrations_playbook.model import LiveGraph, ThreadSnapshot, Topology
from migrations_playbook.render import render
from migrations_playbook.rules.evaluate import Evaluator, _shallowest_missing, reachable
from migrations_playbook.sources.api.reads import reducers_from_lock
from migrations_playbook.sources.api.state import pending_paths
from tests.fixtures.gate_projects.variants import BREAKING, SAFE, V1, WARN_ONLY, expected_ids, make_variant

SNAPSHOT = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "gate_snapshots" / "v1.json").read_text())
POSITIONS = SNAPSHOT["positions"]


@pytest.fixture(scope="module")
def v1_locks() -> dict[str, dict]:
    return {gid: contract_of(gid, graph) for gid, graph in load_compiled(V1 / "langgraph.json").items()}


V1_OUTPUT_TYPES = {
    gid: output_types_of(graph.get_output_jsonschema()) for gid, graph in load_compiled(V1 / "langgraph.json").items()
}
"""What the live server serves as each v1 graph's output schema (`assistants.get_schemas`; the snapshot does not
record it)."""


def _evaluate(candidate_config: Path, locks: dict | None, *, strict: bool = False) -> list[dict]:
    registered, candidates = load_candidate(candidate_config)
    live = {
        gid: LiveGraph(
            graph_id=gid,
            topology=Topology.from_json(g["topology"]),
            reducers=reducers_from_lock(locks.get(gid)) if locks is not None else None,
            lock=lock_document(locks[gid]) if locks is not None and gid in locks else None,
            output_types=V1_OUTPUT_TYPES.get(gid),
        )
        for gid, g in SNAPSHOT["graphs"].items()
    }
    evaluator = Evaluator(live=live, candidates=candidates, registered=registered, strict=strict)
    for thread in SNAPSHOT["threads"]:
        evaluator.add(ThreadSnapshot.from_json(thread))
    return [f.to_json() for f in evaluator.findings()]


@pytest.mark.parametrize(
    ("edits", "extra", "exit_code", "expected"), [*BREAKING.values(), *WARN_ONLY.values()], ids=[*BREAKING, *WARN_ONLY]
)
def test_recorded_threads_against_variant(tmp_path: Path, v1_locks, edits, extra, exit_code, expected) -> None:
    findings = _evaluate(make_variant(tmp_path, "candidate", edits), v1_locks, strict="--strict" in extra)
    got = {(f["code"], f["severity"], f["graph_id"], f["node"], f["field"]): f for f in findings}
    for code, severity, graph, node, field, position in expected:
        assert set(got[(code, severity, graph, node, field)]["thread_ids"]) == expected_ids(POSITIONS, position)
    blocks = {k for k in got if k[1] == "block"}
    assert blocks == {e[:5] for e in expected if e[1] == "block"}
    assert bool(blocks) == bool(exit_code)


@pytest.mark.parametrize("edits", list(SAFE.values()), ids=list(SAFE))
def test_recorded_threads_pass_safe_variant(tmp_path: Path, v1_locks, edits) -> None:
    assert _evaluate(make_variant(tmp_path, "candidate", edits), v1_locks) == []


def test_without_a_live_lock_unverifiable_checks_are_one_warning_each(v1_locks) -> None:
    """No lock: reducers and the call order of the paused interrupt() nodes cannot be
    verified; each is said once per graph (or node), as a warning, never silently."""
    findings = _evaluate(V1 / "langgraph.json", None)
    assert [(f["code"], f["severity"], f["graph_id"], f["node"], f["thread_count"]) for f in findings] == [
        ("CALL_ORDER_UNVERIFIED", "warn", "escalation", "review:confirm", 1),
        ("REDUCER_UNVERIFIED", "warn", "escalation", None, 1),
        ("CALL_ORDER_UNVERIFIED", "warn", "helpdesk", "triage", 2),
        ("REDUCER_UNVERIFIED", "warn", "helpdesk", None, 3),
        ("REDUCER_UNVERIFIED", "warn", "notes", None, 1),
    ]


# -- pure helpers -------------------------------------------------------------------

DIAMOND = Topology(
    nodes=frozenset({"a", "b", "c", "d", "sub", "sub:x", "sub:y"}),
    edges=(
        ("__start__", "a", False),
        ("a", "b", True),
        ("a", "c", True),
        ("b", "d", False),
        ("c", "sub:x", False),
        ("sub:x", "sub:y", False),
        ("sub:y", "d", False),
        ("d", "__end__", False),
    ),
)


@pytest.mark.parametrize(
    ("start", "routers", "values", "expected"),
    [
        pytest.param("a", None, None, {"b", "c", "d", "sub:x", "sub:y"}, id="static"),
        pytest.param("a", {"a": [lambda v: {"b"}]}, {}, {"b", "d"}, id="router-picks-b"),
        pytest.param("a", {"a": [lambda v: None]}, {}, {"b", "c", "d", "sub:x", "sub:y"}, id="router-unknown-keeps-all"),
        pytest.param("sub:x", None, None, {"sub:y", "d"}, id="inside-subgraph"),
    ],
)
def test_reachable(start, routers, values, expected) -> None:
    assert reachable(DIAMOND, start, routers=routers, values=values) == expected


def test_pending_paths_follow_subgraph_states() -> None:
    state = {
        "next": ["review"],
        "tasks": [{"name": "review", "state": {"next": ["confirm"], "tasks": [{"name": "confirm", "state": None}]}}],
    }
    assert pending_paths(state) == ("review", "review:confirm")


def test_shallowest_missing_reports_the_parent_once() -> None:
    nodes = frozenset({"a"})
    assert _shallowest_missing(["review", "review:confirm", "a", "b:c"], nodes) == ["review", "b:c"]


def test_markdown_and_table_name_verdict_codes_and_threads(tmp_path: Path, v1_locks) -> None:
    from migrations_playbook.model import Finding, GateReport, GraphSummary

    finding = Finding(code="NODE_MISSING", severity="block", graph_id="g", message="m", node="n")
    for i in range(25):
        finding.add_thread(f"t{i}")
    report = GateReport(
        live_url="http://x",
        candidate="c",
        strict=False,
        graphs={"g": GraphSummary(threads_scanned=25, by_status={"interrupted": 25})},
        findings=[finding],
    )
    table = render(report, "table")
    assert "BLOCK" in table and "NODE_MISSING" in table and "t0, t1" in table and "(+5 more)" in table
    markdown = render(report, "markdown")
    assert "**Gate verdict: block**" in markdown and "| block | `NODE_MISSING` |" in markdown
    data = json.loads(render(report, "json"))
    assert data["findings"][0]["thread_id"] == "t0"
    assert len(data["findings"][0]["thread_ids"]) == 20 and data["findings"][0]["thread_count"] == 25


@pytest.mark.parametrize("status", ["busy", "error", "idle"])
def test_busy_and_errored_threads_are_checked_like_paused_ones(tmp_path: Path, v1_locks, status: str) -> None:
    """A busy thread resumes at its running node after a restart; an errored one retries its node;
    an idle one can still hold a pending interrupt (langgraph dev, after a cancelled queued resume)."""
    from tests.fixtures.gate_projects.variants import HELPDESK_TRIAGE_RENAMED

    registered, candidates = load_candidate(make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED))
    evaluator = Evaluator(live={}, candidates=candidates, registered=registered)
    evaluator.add(
        ThreadSnapshot(
            thread_id="t-1", graph_id="helpdesk", status=status, values={"request": "x", "messages": []}, pending=("triage",)
        )
    )
    evaluator.add(
        ThreadSnapshot(thread_id="t-2", graph_id="helpdesk", status="idle", values={"request": "y", "messages": []}, pending=())
    )
    (finding,) = [f for f in evaluator.findings() if f.code == "NODE_MISSING"]
    assert (finding.node, finding.thread_ids) == ("triage", ["t-1"])
    assert evaluator.summaries["helpdesk"].by_status == ({status: 1, "idle": 1} if status != "idle" else {"idle": 2})
