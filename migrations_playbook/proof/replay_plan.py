"""`playbook replay --plan FILE`: the staging replay, on the threads a migration plan repaired.

A plain replay proves what the candidate does to the threads *as they are*; when the gate
blocks and a plan repairs the threads, the proof that matters is on the *repaired* threads.
So, on the staging copy (``--persistence DIR`` or ``--staging-url URL``, which runs the
candidate):

1. the plan is applied there exactly as ``playbook migrate`` applies it after a rollout
   (`repair/flow.py`'s `migrate` in its staging mode: the copy must hold every live head, the plan is
   checked against the candidate, one stamped checkpoint per blocked thread, nothing run);
2. every repaired thread is resumed there (`repair/prove.py`'s `prove_thread`): a moved interrupt must be
   asked again by the new node with the same payload, and the answer (``--resume-map``,
   ``--auto-resume``, ``--resume``, as for any replay) must land there; other repaired threads
   with pending work must run their next node;
3. every other paused thread is compared and resumed as a plain replay does (`replay.replay`
   with ``repaired``: the plan's threads are judged by their proof, not by a head the plan
   moved on purpose);
4. the gate runs on the staging copy after the plan (its findings are the report's too: a
   thread the plan leaves blocked, or blocks anew, blocks the replay).

The live server is only read. The findings: the gate's after the plan, STAGING_* from the
comparison, and per repaired thread STAGING_RESUME_FAILED (block: the step did not run, the
question was not asked again, or the plan's write did not land) or STAGING_RESUME_UNANSWERED
(warn: asked again, but no rule answers it, so not proven).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from migrations_playbook.errors import UsageError
from migrations_playbook.model import STAGING_RESUME_FAILED, STAGING_RESUME_UNANSWERED, Finding, GateReport, Severity
from migrations_playbook.proof.replay import replay
from migrations_playbook.proof.resume import ResumeRule
from migrations_playbook.repair.flow import MigrationRun, load_migration, migrate
from migrations_playbook.sources.base import Source
from migrations_playbook.sources.replay_protocol import StagingCopy


def _finding(
    findings: dict[tuple[str, str, str], Finding],
    code: str,
    severity: Severity,
    graph_id: str,
    node: str,
    message: str,
    thread_id: str,
) -> None:
    key = (code, graph_id, f"{node}|{message}")
    if key not in findings:
        findings[key] = Finding(code=code, severity=severity, graph_id=graph_id, node=node or None, message=message)
    findings[key].add_thread(thread_id)


def proof_findings(report: Any) -> tuple[list[Finding], list[str]]:
    """STAGING_* findings and notes from a staging `repair.report.MigrateReport`: a write that did not
    land, a proof that failed, a question asked again that no rule answers."""
    findings: dict[tuple[str, str, str], Finding] = {}
    notes: list[str] = []
    for outcome in report.threads:
        if outcome.action == "failed":
            _finding(
                findings,
                STAGING_RESUME_FAILED,
                "block",
                outcome.graph_id,
                "",
                f"the plan's write did not land on staging ({outcome.reason}): the repaired thread was not proven",
                outcome.thread_id,
            )
    proven = 0
    for proof in report.proofs:
        if proof.proven:
            proven += 1
            wrote = json.dumps(proof.wrote, ensure_ascii=False, default=str)
            notes.append(
                f"{proof.graph_id} {proof.thread_id}: proven at {proof.node!r}: {proof.message}"
                + (
                    f" (answer {json.dumps(proof.answer, ensure_ascii=False, default=str)} from {proof.answer_source}; "
                    f"it wrote {wrote[:160]})"
                    if proof.answer_source
                    else ""
                )
            )
        elif proof.ok:
            _finding(
                findings,
                STAGING_RESUME_UNANSWERED,
                "warn",
                proof.graph_id,
                proof.node,
                f"repaired by {report.migration} and asked again at {proof.node!r}, but not answered: {proof.message}",
                proof.thread_id,
            )
        else:
            _finding(
                findings,
                STAGING_RESUME_FAILED,
                "block",
                proof.graph_id,
                proof.node,
                f"repaired by {report.migration}, but on staging {proof.message}",
                proof.thread_id,
            )
    changed = [t for t in report.threads if t.action == "changed"]
    notes.insert(
        0,
        f"plan {report.migration} applied on staging: {len(changed)} thread(s) repaired, "
        f"{proven} of {len(report.proofs)} resumed proven",
    )
    return list(findings.values()), notes


def load(candidate: str | Path, plan_path: Path, graphs: Sequence[str]) -> MigrationRun:
    """The plan, checked against the candidate, as ``migrate`` loads it; ``--graph`` must name its graphs."""
    run = load_migration(candidate, plan_path)
    plan = run.plan
    if graphs and set(graphs) != set(plan.graphs):
        raise UsageError(
            f"--graph {', '.join(graphs)}: plan {plan.migration} is for {', '.join(plan.graphs)}; "
            "drop --graph (the plan names its graphs)"
        )
    return run


async def replay_with_plan(live: Source, copy: StagingCopy, run: MigrationRun, rule: ResumeRule, *, candidate: str) -> GateReport:
    """Apply ``run``'s plan on the staging copy (opened here), prove the repaired threads there, replay the rest."""
    plan = run.plan
    graphs = await copy.open(list(plan.graphs))
    migrated = await migrate(
        live, run, mode="staging", staging=live.staging_source(copy), rule=rule if rule.active else None, strict=False
    )
    repaired = frozenset(t.thread_id for t in migrated.threads if t.action in ("changed", "failed", "already applied"))
    rest = await replay(live, copy, graphs, rule, candidate=candidate, repaired=repaired)
    found, notes = proof_findings(migrated)
    already = [t.thread_id for t in migrated.threads if t.action == "already applied"]
    if already:
        notes.append(
            f"{len(already)} thread(s) already carried {plan.migration}'s stamp on staging (a copy used "
            f"before): not proven again, e.g. {', '.join(already[:3])}"
        )
    after = migrated.after.findings if migrated.after is not None else []
    if migrated.after is not None:
        notes.append(f"the gate on staging after the plan: {migrated.after.verdict.upper()}")
    return GateReport(
        command="replay",
        live_url=live.label,
        candidate=candidate,
        strict=False,
        graphs=rest.graphs,
        findings=sorted([*after, *rest.findings, *found], key=lambda f: (f.graph_id, f.code, f.node or "")),
        notes=[*notes, *rest.notes, *migrated.notes],
    )
