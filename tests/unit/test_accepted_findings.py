"""A record accepts a finding the shadow has proved: `contract.accepted_findings`, `contract.check` on the
``accepts`` entries, and the Evaluator reporting an accepted finding as a warning naming the record."""

from __future__ import annotations

from pathlib import Path

from migrations_playbook.graphcode.contract import SHADOW_PASSED, accepted_findings, check
from migrations_playbook.model import REDUCER_CHANGED, Finding
from migrations_playbook.rules.evaluate import Evaluator

NEW = "sha256:1111111111111111"


def _record(folder: Path, name: str, accepts: list[str], *, proof: bool = True, graph: str = "chat") -> Path:
    folder.mkdir(exist_ok=True)
    lines = ["---", f"id: {name}", "contracts:", f"  - {graph} {NEW}", "accepts:", *(f"  - {a}" for a in accepts), "---", ""]
    body = f"\n{SHADOW_PASSED} (live ...)\n" if proof else "\nno proof here\n"
    path = folder / f"{name}.md"
    path.write_text("\n".join(lines) + body)
    return path


def test_an_accepted_finding_applies_to_the_code_the_record_covers_only(tmp_path: Path) -> None:
    _record(tmp_path, "0009-x", ["REDUCER_CHANGED chat messages", "NODE_MISSING chat"])
    assert accepted_findings(tmp_path, {"chat": NEW}) == {
        ("REDUCER_CHANGED", "chat", "messages"): "0009-x",
        ("NODE_MISSING", "chat", None): "0009-x",
    }
    assert accepted_findings(tmp_path, {"chat": "sha256:other"}) == {}  # another code: nothing accepted
    assert accepted_findings(tmp_path / "none", {"chat": NEW}) == {}


def test_check_refuses_malformed_entries_graphs_not_covered_and_acceptance_without_a_shadow_proof(tmp_path: Path) -> None:
    _record(tmp_path, "a-bad", ["reducer changed"])
    _record(tmp_path, "b-other-graph", ["REDUCER_CHANGED ticket messages"])
    _record(tmp_path, "c-unproved", ["REDUCER_CHANGED chat messages"], proof=False)
    problems = [p for s in check({}, tmp_path / "contracts", tmp_path) for p in s.problems]
    assert any("a-bad.md" in p and "CODE GRAPH [FIELD]" in p for p in problems), problems
    assert any("b-other-graph.md" in p and "do not list" in p for p in problems), problems
    assert any("c-unproved.md" in p and SHADOW_PASSED in p for p in problems), problems
    assert accepted_findings(tmp_path, {"chat": NEW}) == {}  # an unproved acceptance accepts nothing


def test_the_evaluator_reports_an_accepted_block_as_a_warning_naming_the_record() -> None:
    evaluator = Evaluator(live={}, candidates={}, registered=set(), accepted={(REDUCER_CHANGED, "chat", "messages"): "0009-x"})
    finding = Finding(code=REDUCER_CHANGED, severity="block", graph_id="chat", field="messages", message="changes")
    other = Finding(code=REDUCER_CHANGED, severity="block", graph_id="chat", field="notes", message="changes")
    evaluator._findings = {("a",): finding, ("b",): other}  # type: ignore[dict-item]  # what rules would have recorded
    by_field = {f.field: f for f in evaluator.findings()}
    assert (by_field["messages"].severity, by_field["notes"].severity) == ("warn", "block")
    assert by_field["messages"].message.startswith("accepted by record 0009-x")


def test_accepts_names_a_graph_id_with_spaces(tmp_path: Path) -> None:
    _record(
        tmp_path,
        "0010-deep",
        ["REDUCER_CHANGED Deep Researcher messages", "NODE_MISSING Deep Researcher"],
        graph="Deep Researcher",
    )
    assert accepted_findings(tmp_path, {"Deep Researcher": NEW}) == {
        ("REDUCER_CHANGED", "Deep Researcher", "messages"): "0010-deep",
        ("NODE_MISSING", "Deep Researcher", None): "0010-deep",
    }
    assert [p for s in check({}, tmp_path / "contracts", tmp_path) for p in s.problems] == []
