"""How `playbook check` settles the gate's findings (migrations_playbook/commands/check.py), on hand-made proofs."""

from __future__ import annotations

from typing import Any

from migrations_playbook.commands.check import Noise, combine, how_to_run, settle
from migrations_playbook.model import Finding, GateReport, GraphSummary, ThreadProof
from migrations_playbook.render import render


def _finding(code: str = "NODE_MISSING", node: str | None = "triage", threads: tuple[str, ...] = ("t1",)) -> Finding:
    finding = Finding(code=code, severity="block", graph_id="g", message="m", node=node)
    for thread in threads:
        finding.add_thread(thread)
    return finding


def _proof(**kwargs: Any) -> ThreadProof:
    return ThreadProof(graph_id="g", **kwargs)


def test_a_thread_that_went_wrong_proves_the_finding() -> None:
    settled, evidence = settle(_finding(), {"t1": _proof(ran=True, steps={"triage"}, blocks={"SHADOW_STEP_SKIPPED"})})
    assert settled == "proven" and "SHADOW_STEP_SKIPPED" in evidence


def test_a_thread_that_ran_through_the_step_alike_disproves_it() -> None:
    assert settle(_finding(), {"t1": _proof(ran=True, steps={"triage"})})[0] == "disproved"


def test_what_was_not_shown_stays_unverified() -> None:
    cases = {
        "not run": {},
        "never through the step": {"t1": _proof(ran=True, steps={"respond"})},
        "other values": {"t1": _proof(ran=True, steps={"triage"}, other_values="values.priority")},
        "could not run": {"t1": _proof(unproven="no answer fits")},
        "moved on": {"t1": _proof(ran=True, steps={"triage"}, moved="older copy")},
    }
    for why, proofs in cases.items():
        assert settle(_finding(), proofs)[0] == "unverified", why
    more = _finding(threads=tuple(f"t{i}" for i in range(Finding.MAX_IDS + 1)))
    proofs = {t: _proof(ran=True, steps={"triage"}) for t in more.thread_ids}
    assert settle(more, proofs)[0] == "unverified"  # a thread it counts but does not name was not shown


def _report(findings: list[Finding], proofs: dict[str, ThreadProof] | None = None) -> GateReport:
    return GateReport(
        live_url="http://x", candidate="c", strict=False, graphs={"g": GraphSummary()}, findings=findings, proofs=proofs or {}
    )


def test_a_block_the_gate_also_gives_the_deployed_code_against_itself_is_noise() -> None:
    gate = _report([_finding()])
    noise = Noise(threads={("NODE_MISSING", "g", "triage", None): {"t1", "t2"}})
    (finding,) = combine(gate, _report([]), accept_unproven=False, noise=noise).findings
    assert (finding.severity, finding.settled) == ("warn", "disproved") and "noise" in finding.evidence
    proven = _report([], {"t1": _proof(ran=True, steps={"triage"}, blocks={"SHADOW_RUN_FAILED"})})
    (finding,) = combine(gate, proven, accept_unproven=False, noise=noise).findings
    assert (finding.severity, finding.settled) == ("block", "proven")  # execution outranks the noise


def test_unproven_threads_block_unless_accepted() -> None:
    shadow = _report([], {"t9": _proof(unproven="the payload gives no resume_format or options")})
    report = combine(_report([]), shadow, accept_unproven=False)
    assert report.verdict == "block" and [u.thread_id for u in report.unproven or []] == ["t9"]
    assert combine(_report([]), shadow, accept_unproven=True).verdict == "pass"


def test_the_hint_for_an_unproven_thread_follows_what_stopped_it_not_the_errors_words() -> None:
    failed = how_to_run("mail", "the deployed code's own turn failed: ValueError: already answered its email")
    assert failed.startswith("the deployed code itself fails on it")
    unanswered = how_to_run("mail", "not run: the payload gives no value (no resume_format, options, ...)")
    assert "--resume-map" in unanswered
    idle = how_to_run("mail", "not run: idle, and no input checkpoint to rerun its last turn from (pass --turn-input GRAPH=JSON)")
    assert "--turn-input mail=JSON" in idle


def test_the_table_names_the_unproven_threads_and_whether_they_block() -> None:
    """The table `check` prints (end to end on a live server: test_check_server.py's table test, `make test-matrix`)."""
    shadow = _report([], {"t9": _proof(unproven="not run: the payload gives no value")})
    for accepted, verdict, says in ((False, "BLOCK", "BLOCK unless --accept-unproven"), (True, "PASS", "named, accepted")):
        report = combine(_report([]), shadow, accept_unproven=accepted)
        text = render(report, "table")
        assert text.startswith(f"playbook check: {verdict}")
        assert f"UNPROVEN  1 thread(s) could not be run ({says}" in text
        assert "thread t9 (g): not run: the payload gives no value" in text and "to run it: " in text
