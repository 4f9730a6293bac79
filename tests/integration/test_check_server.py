"""`playbook check` end to end (issue 36): one verdict, each gate finding settled by execution.

A real `langgraph dev` serves the v1 fixture project with threads at mixed positions (tests/integration/
check_live.py: two tickets paused at `triage`, one finished, a case paused inside a subgraph, a chat). For
each change, `check` runs the gate's rules and then the shadow over the same threads:

* a paused node renamed: the gate's NODE_MISSING is **proven** (the shadow saw the threads lose the step);
* a graph removed: GRAPH_REMOVED stays a block, **unverified** (the shadow cannot run a graph the candidate
  does not serve); `make test` runs both changes in one candidate (one `check`, each finding settled on its
  own), `make test-matrix` each alone;
* the paused node turned into a subgraph asking the same question: the gate's CALL_ORDER_CHANGED block is
  **disproved** (the threads ran through `triage` on both codes and did nothing worse), so the verdict passes;
* the same code with no answer flag: the tickets get the answer their question got on the live deployment;
  the case whose question nobody answered could not be run: it is listed under ``unproven`` and blocks,
  unless ``--accept-unproven`` (it is still named);
* the same code with an answer: pass, no finding at all.

What a client reads of a run (output keys, question payloads) and a live server that moves on during `check`:
test_check_outputs_server.py (a file of its own, so the lane's two workers share the check tests).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.gate_projects import variants
from tests.integration.check_live import Checks, Live, Run, ahead_of, check_args, live_fixture
from tests.integration.check_live import check as _check
from tests.integration.check_live import gate_finding as _gate_finding
from tests.playbook_cli import playbook

pytestmark = pytest.mark.integration
__all__ = ["live_fixture"]  # the module-scoped `live` fixture, served once for this file

APPROVED = ("--resume", '"approved"')
RENAMED_AND_REMOVED = [*variants.HELPDESK_TRIAGE_RENAMED, *variants.BREAKING["graph-removed"][0]]
AHEAD: dict[str, Run] = {
    "test_a_renamed_paused_node_is_proven_and_a_removed_graph_stays_an_unverified_block": (
        lambda live: variants.make_variant(live.root, "renamed-and-removed", RENAMED_AND_REMOVED),
        APPROVED,
    ),
    "test_a_gate_block_the_threads_disprove_does_not_block": (
        lambda live: variants.make_variant(live.root, "triage-as-subgraph", variants.TRIAGE_AS_SUBGRAPH),
        APPROVED,
    ),
    "test_threads_nobody_could_run_block_and_are_named": (lambda live: live.folder / "langgraph.json", ()),
}
"""The `check` each `make test` test reads, run ahead (`check_live.ahead_of`)."""


@pytest.fixture(scope="module")
def ahead(request: pytest.FixtureRequest, live: Live) -> Iterator[Checks]:
    yield from ahead_of(request, live, AHEAD)


def test_a_renamed_paused_node_is_proven_and_a_removed_graph_stays_an_unverified_block(live: Live, ahead: Checks) -> None:
    """One candidate, two changes on different graphs: helpdesk's paused node renamed (the shadow runs its
    threads and proves NODE_MISSING) and the notes graph removed (the shadow cannot run its thread, so
    GRAPH_REMOVED stays a block, unverified). Each alone: the two `make test-matrix` tests below."""
    code, report = ahead.result("test_a_renamed_paused_node_is_proven_and_a_removed_graph_stays_an_unverified_block")
    assert (code, report["verdict"]) == (1, "block")
    missing = _gate_finding(report, "NODE_MISSING")
    assert (missing["severity"], missing["settled"]) == ("block", "proven")
    assert set(missing["thread_ids"]) == set(live.threads["helpdesk_at_triage"])
    assert any(f["code"].startswith("SHADOW_") and f["severity"] == "block" for f in report["findings"])
    gone = _gate_finding(report, "GRAPH_REMOVED")
    assert (gone["severity"], gone["settled"]) == ("block", "unverified")


@pytest.mark.matrix
def test_a_renamed_paused_node_is_proven_to_break_its_threads(live: Live) -> None:
    candidate = variants.make_variant(live.root, "renamed", variants.HELPDESK_TRIAGE_RENAMED)
    code, report = _check(live, candidate, "--resume", '"approved"')
    assert (code, report["verdict"]) == (1, "block")
    missing = _gate_finding(report, "NODE_MISSING")
    assert (missing["severity"], missing["settled"]) == ("block", "proven")
    assert set(missing["thread_ids"]) == set(live.threads["helpdesk_at_triage"])
    assert any(f["code"].startswith("SHADOW_") and f["severity"] == "block" for f in report["findings"])


def test_a_gate_block_the_threads_disprove_does_not_block(live: Live, ahead: Checks, tmp_path: Path) -> None:
    candidate = variants.make_variant(tmp_path, "triage-as-subgraph", variants.TRIAGE_AS_SUBGRAPH)
    gate = playbook(
        "gate", "--live", live.url, "--candidate", str(candidate), "--live-contract", str(live.locks), "--format", "json"
    )
    assert gate.returncode == 1 and _gate_finding(json.loads(gate.stdout), "CALL_ORDER_CHANGED")["severity"] == "block"
    code, report = ahead.result("test_a_gate_block_the_threads_disprove_does_not_block")
    assert (code, report["verdict"], report["unproven"]) == (0, "pass", []), report
    order = _gate_finding(report, "CALL_ORDER_CHANGED")
    assert (order["severity"], order["settled"]) == ("warn", "disproved")
    assert "ran through triage on both codes" in order["evidence"]
    assert [f for f in report["findings"] if f["severity"] == "block"] == []


@pytest.mark.matrix
def test_a_finding_on_threads_the_shadow_cannot_run_stays_a_block(live: Live) -> None:
    edits, _, _, _ = variants.BREAKING["graph-removed"]
    candidate = variants.make_variant(live.root, "graph-removed", edits)
    code, report = _check(live, candidate, "--resume", '"approved"')
    assert (code, report["verdict"]) == (1, "block")
    removed = _gate_finding(report, "GRAPH_REMOVED")
    assert (removed["severity"], removed["settled"]) == ("block", "unverified")


def test_threads_nobody_could_run_block_and_are_named(live: Live, ahead: Checks) -> None:
    """The tickets' free-text question was answered on the live deployment ("approved", on the finished ticket),
    so the waiting tickets get that answer with no flag; nobody ever answered the case's question in the
    escalation subgraph, so that thread could not be run. With ``--accept-unproven`` the same thread is named
    and does not block: test_check_outputs_server.py's growing payload (`make test`), the same code here
    (`make test-matrix`)."""
    paused = set(live.threads["escalation_in_subgraph"])
    code, report = ahead.result("test_threads_nobody_could_run_block_and_are_named")
    assert (code, report["verdict"], report["accept_unproven"]) == (1, "block", False)
    assert {u["thread_id"] for u in report["unproven"]} == paused
    assert any(
        n.startswith("shadow: helpdesk: 2 question(s) answered with the answer the same question") for n in report["notes"]
    )
    assert all(u["reason"] and "--resume-map" in u["how"] for u in report["unproven"])
    assert [f for f in report["findings"] if f["severity"] == "block"] == []


@pytest.mark.matrix
def test_threads_nobody_could_run_are_named_and_pass_when_accepted(live: Live) -> None:
    code, report = _check(live, live.folder / "langgraph.json", "--accept-unproven")
    assert (code, report["verdict"], report["accept_unproven"]) == (0, "pass", True)
    assert {u["thread_id"] for u in report["unproven"]} == set(live.threads["escalation_in_subgraph"])


# Identity through check: `make test` runs it on this repo's graphs (test_shadow_server.py), on the HITL agent
# and on the memory project; this fixture's run is in `make test-matrix`.
@pytest.mark.matrix
def test_the_same_code_with_its_questions_answered_passes_with_no_finding(live: Live) -> None:
    code, report = _check(live, live.folder / "langgraph.json", "--resume", '"approved"')
    assert (code, report["verdict"], report["findings"], report["unproven"]) == (0, "pass", [], [])


# The table of this same run (the same code, no answer flag): the JSON report's assertions are
# test_threads_nobody_could_run_...'s, the table's wording tests/unit/test_report_paths.py's; the CLI's table end to
# end is in `make test-matrix` (the gate's table and markdown: test_gate_server.py, in `make test`).
@pytest.mark.matrix
def test_the_table_names_the_settlement_and_the_unproven_threads(live: Live) -> None:
    result = playbook(*check_args(live, live.folder / "langgraph.json"), "--no-progress")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("playbook check: BLOCK")
    assert "UNPROVEN  1 thread(s) could not be run (BLOCK unless --accept-unproven)" in result.stdout


def test_check_without_copies_of_the_live_data_is_a_usage_error(live: Live) -> None:
    result = playbook("check", "--live", live.url, "--live-code", str(live.folder), "--candidate", str(live.folder))
    assert result.returncode == 2 and "check --live needs copies of the live data" in result.stderr
    assert "Traceback" not in result.stderr


# A block that stays unverified: `make test` keeps GRAPH_REMOVED (above); the settlement on other values is
# tests/unit/test_check_settle.py's, and this end-to-end run is in `make test-matrix`.
@pytest.mark.matrix
def test_a_narrowed_type_whose_threads_end_with_other_values_stays_a_block(live: Live) -> None:
    edits, _, _, _ = variants.BREAKING["type-narrowed"]
    code, report = _check(live, variants.make_variant(live.root, "type-narrowed", edits), "--resume", '"approved"')
    assert (code, report["verdict"]) == (1, "block")
    narrowed = _gate_finding(report, "FIELD_TYPE_MISMATCH")
    assert (narrowed["severity"], narrowed["settled"]) == ("block", "unverified")
    assert "other values" in narrowed["evidence"]


@pytest.mark.matrix
@pytest.mark.parametrize("variant", list(variants.BREAKING), ids=list(variants.BREAKING))
def test_every_breaking_variant_blocks_through_check(live: Live, variant: str) -> None:
    edits, flags, _, expected = variants.BREAKING[variant]
    code, report = _check(live, variants.make_variant(live.root, f"breaking-{variant}", edits), "--resume", '"approved"', *flags)
    assert (code, report["verdict"]) == (1, "block"), report["findings"]
    for finding_code, *_ in expected:
        assert _gate_finding(report, finding_code)["severity"] == "block"


# Removing `enrich` (no thread is at it) is meant to change what a new turn does: the shadow reruns the idle
# thread's last turn on both codes and sees `priority` no longer computed (SHADOW_DATA_LOST, and the output key
# with it). A thread born on the candidate shows the same, so it is the intended change (issue 38): a warning.
@pytest.mark.matrix
@pytest.mark.parametrize("variant", list(variants.SAFE), ids=list(variants.SAFE))
def test_every_safe_variant_passes_through_check(live: Live, variant: str) -> None:
    candidate = variants.make_variant(live.root, f"safe-{variant}", variants.SAFE[variant])
    code, report = _check(live, candidate, "--resume", '"approved"')
    assert (code, report["verdict"], report["unproven"]) == (0, "pass", []), report["findings"]
    if variant == "remove-node-no-thread-is-at":
        intended = {f["code"] for f in report["findings"] if f["code"] == "SHADOW_INTENDED_CHANGE"}
        assert intended and set(live.threads["helpdesk_idle"]) <= {
            t for f in report["findings"] if f["code"] == "SHADOW_INTENDED_CHANGE" for t in f["thread_ids"]
        }
