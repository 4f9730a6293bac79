"""`replay --plan`'s findings from a staging migrate report (`replay_plan.proof_findings`)."""

from __future__ import annotations

from migrations_playbook.model import STAGING_RESUME_FAILED, STAGING_RESUME_UNANSWERED
from migrations_playbook.proof.replay_plan import proof_findings
from migrations_playbook.repair.prove import Proof
from migrations_playbook.repair.report import MigrateReport
from migrations_playbook.sources.repair_model import ThreadOutcome


def _report(threads: list[ThreadOutcome], proofs: list[Proof]) -> MigrateReport:
    return MigrateReport(
        migration="0009-x",
        mode="staging",
        live_url="http://live",
        candidate="c/langgraph.json",
        served={"g": "candidate"},
        before=None,
        threads=threads,
        proofs=proofs,
    )


def test_a_proven_thread_is_a_note_and_no_finding() -> None:
    report = _report(
        [ThreadOutcome("t1", "g", "interrupted", "changed")],
        [
            Proof(
                "t1",
                "g",
                "assess",
                ok=True,
                proven=True,
                answer="approved",
                answer_source="--resume",
                wrote={"notes": ["x"]},
                message="'assess' asked the pending question again and ran with the answer",
            )
        ],
    )
    findings, notes = proof_findings(report)
    assert findings == []
    assert notes[0] == "plan 0009-x applied on staging: 1 thread(s) repaired, 1 of 1 resumed proven"
    assert notes[1].startswith("g t1: proven at 'assess'") and '"approved"' in notes[1]


def test_a_failed_proof_blocks_and_an_unanswered_one_warns_per_thread() -> None:
    report = _report(
        [ThreadOutcome(t, "g", "interrupted", "changed") for t in ("t1", "t2", "t3")],
        [
            Proof("t1", "g", "assess", ok=False, message="'assess' never ran"),
            Proof("t2", "g", "assess", ok=False, message="'assess' never ran"),
            Proof("t3", "g", "assess", ok=True, proven=False, message="not answered on staging"),
        ],
    )
    findings, notes = proof_findings(report)
    by_code = {f.code: f for f in findings}
    assert set(by_code) == {STAGING_RESUME_FAILED, STAGING_RESUME_UNANSWERED}
    failed = by_code[STAGING_RESUME_FAILED]
    assert (failed.severity, failed.node, failed.thread_ids) == ("block", "assess", ["t1", "t2"])
    assert "repaired by 0009-x" in failed.message
    unanswered = by_code[STAGING_RESUME_UNANSWERED]
    assert (unanswered.severity, unanswered.thread_ids) == ("warn", ["t3"])
    assert notes[0].endswith("3 thread(s) repaired, 0 of 3 resumed proven")


def test_a_write_that_did_not_land_blocks() -> None:
    report = _report([ThreadOutcome("t1", "g", "interrupted", "failed", reason="the stamp did not land")], [])
    (finding,), _ = proof_findings(report)
    assert (finding.code, finding.severity, finding.thread_ids) == (STAGING_RESUME_FAILED, "block", ["t1"])
    assert "the stamp did not land" in finding.message
