"""`playbook check`: the gate's rules, then the shadow over the same threads, one report and one verdict.

The gate reads every live thread and says, from the code and the stored state, what the candidate may
break; the shadow runs threads under the deployed code and the candidate on copies of the live data and
shows what the candidate does worse. `check` runs both and settles each gate finding by execution, so a
team reads one verdict instead of reconciling two:

* **proven**: the shadow saw one of the finding's threads go wrong on the candidate. It blocks (as the
  gate said), with the shadow's own findings beside it.
* **disproved**: every thread the finding names ran on both codes, through the step it flags (its node
  ran on the deployed code), and behaved on the candidate as on the deployed code: nothing worse, and
  no other values (beyond what two runs of the deployed code differ in). Shown as a warning with that
  evidence, never a block: this is how unchanged code is never blocked by a rule that misjudged it.
* **unverified**: a thread of the finding did not run (not chosen, the deployed code could not run it,
  its step never ran, or the finding names no thread), or ran and ended with other values: it keeps
  the gate's severity.

Every thread a gate finding names runs in the shadow, whatever its sample. Every shadow finding stands.
Threads the shadow could not run at all are listed under ``unproven`` with the reason and what would
let them run; they block unless ``--accept-unproven`` (and are named either way). JSON: the gate's
envelope with ``"command": "check"``, ``settled`` and ``evidence`` on each finding, and ``unproven``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from migrations_playbook.commands.gate import GateRequest, gate_report
from migrations_playbook.commands.requests import ShadowRequest
from migrations_playbook.commands.shadow import shadow_report
from migrations_playbook.errors import EXIT_BLOCKED, EXIT_PASS, UsageError
from migrations_playbook.graphcode.candidate import load_candidate_graphs
from migrations_playbook.graphcode.contract import contract_hash
from migrations_playbook.graphcode.describe import contract_of
from migrations_playbook.model import Finding, GateReport, Settled, ThreadProof, UnprovenThread
from migrations_playbook.render import render
from migrations_playbook.staging.live_copy import StaleCopy

UNPROVEN_CODE = "SHADOW_UNPROVEN"
"""The shadow's finding for a thread it could not run: `check` lists those threads under ``unproven``."""


@dataclass(frozen=True)
class CheckRequest:
    shadow: ShadowRequest
    """The sources, the two codes, the threads and the answers: the shadow's flags, which the gate shares."""
    accept_unproven: bool = False


def settle(finding: Finding, proofs: Mapping[str, ThreadProof]) -> tuple[Settled, str]:
    """How execution settles a gate finding, and the evidence."""
    named = list(finding.thread_ids)
    if not named:
        return "unverified", "it names no thread the shadow could run (it is about the code or an assistant)"
    for thread_id in named:
        proof = proofs.get(thread_id)
        if proof is not None and proof.blocks:
            return "proven", f"thread {thread_id} went wrong on the candidate in the shadow ({', '.join(sorted(proof.blocks))})"
    if finding.thread_count > len(named):
        return "unverified", f"{finding.thread_count - len(named)} of its {finding.thread_count} threads are not named in it"
    for thread_id in named:
        proof = proofs.get(thread_id)
        if proof is None:
            return "unverified", f"thread {thread_id} was not run in the shadow"
        if proof.unproven is not None:
            return "unverified", f"thread {thread_id} could not be run: {proof.unproven}"
        if proof.moved is not None:
            return "unverified", f"thread {thread_id} ran at an older checkpoint than the live one: {proof.moved}"
        if not proof.ran:
            return "unverified", f"thread {thread_id} was not run on both codes"
        if finding.node is not None and not _ran_step(finding.node, proof):
            return "unverified", f"thread {thread_id} ran, but never through {finding.node}"
        if proof.other_values is not None:
            return (
                "unverified",
                f"thread {thread_id} ran, but ended with other values on the candidate ({proof.other_values}): "
                "not shown to behave as on the deployed code",
            )
    through = f" through {finding.node}" if finding.node else ""
    return (
        "disproved",
        f"{len(named)} thread(s) ran{through} on both codes in the shadow and the candidate did nothing worse "
        "than the deployed code",
    )


def _ran_step(node: str, proof: ThreadProof) -> bool:
    """Whether the deployed code's side ran ``node`` (a path ``parent:child`` names its last part)."""
    return node.split(":")[-1] in proof.steps or node in proof.steps


def how_to_run(graph_id: str, reason: str) -> str:
    """What would let the shadow run a thread it could not."""
    if "question" in reason or "answer" in reason or "resume" in reason:
        return (
            "answer its question: --resume-map '{\"<kind>\": <answer>}' (by the payload's kind), or --resume JSON for "
            "every question; or pass --accept-unproven to let it through unproven"
        )
    if "input" in reason or "turn" in reason:
        return f"give its next turn an input: --turn-input {graph_id}=JSON; or pass --accept-unproven"
    return (
        "the deployed code itself fails on it: fix or drain the thread (it fails the same way in production), "
        "or pass --accept-unproven"
    )


def combine(gate: GateReport, shadow: GateReport, *, accept_unproven: bool) -> GateReport:
    """One report: the gate's findings settled by the shadow's proofs, then the shadow's own findings."""
    settled_gate: list[Finding] = []
    for finding in gate.findings:
        settled, evidence = settle(finding, shadow.proofs)
        severity = "warn" if settled == "disproved" else finding.severity
        settled_gate.append(dataclasses.replace(finding, severity=severity, settled=settled, evidence=evidence))
    ran = [
        dataclasses.replace(finding, settled="proven", evidence="found by running the thread on both codes")
        for finding in shadow.findings
        if finding.code != UNPROVEN_CODE
    ]
    findings = sorted(settled_gate + ran, key=lambda f: (f.severity != "block", f.graph_id, f.code, f.node or "", f.field or ""))
    unproven = [
        UnprovenThread(thread_id, proof.graph_id, proof.unproven, how_to_run(proof.graph_id, proof.unproven))
        for thread_id, proof in sorted(shadow.proofs.items())
        if proof.unproven is not None
    ]
    notes = []
    if settled_gate:
        counts = ", ".join(f"{sum(f.settled == s for f in settled_gate)} {s}" for s in ("proven", "disproved", "unverified"))
        notes.append(f"the gate's {len(settled_gate)} finding(s), settled by running their threads in the shadow: {counts}")
    if unproven:
        notes.append(
            f"{len(unproven)} thread(s) could not be run (listed under unproven): "
            + ("accepted with --accept-unproven, so they do not block" if accept_unproven else "they block (--accept-unproven)")
        )
    notes += [f"gate: {n}" for n in gate.notes] + [f"shadow: {n}" for n in shadow.notes]
    return GateReport(
        command="check",
        live_url=gate.live_url,
        candidate=gate.candidate,
        strict=gate.strict,
        graphs=dict(gate.graphs),
        findings=findings,
        notes=notes,
        drawings=gate.drawings or shadow.drawings,
        proofs=shadow.proofs,
        unproven=unproven,
        accept_unproven=accept_unproven,
    )


async def check_report(request: CheckRequest) -> GateReport:
    shadow = request.shadow
    registered, compiled, candidates = load_candidate_graphs(Path(shadow.candidate), shadow.graphs or None)

    def candidate_hash(graph_id: str) -> str:
        return contract_hash(contract_of(graph_id, compiled[graph_id])) if graph_id in compiled else ""

    gate_request = GateRequest(
        source=shadow.source,
        candidate=shadow.candidate,
        graphs=shadow.graphs,
        format=shadow.format,
        strict=shadow.strict,
        progress=shadow.format != "json",
    )
    gate = await gate_report(gate_request, registered, candidates, candidate_hash)
    flagged = frozenset(t for f in gate.findings for t in f.thread_ids)
    proof = await shadow_report(shadow, include=flagged, moving=True)
    return combine(gate, proof, accept_unproven=request.accept_unproven)


def run(request: CheckRequest) -> int:
    shadow = request.shadow
    if shadow.source.checkpointer is None and shadow.persistence is None and not shadow.staging_urls:
        raise UsageError(
            "check needs copies of the live data: --persistence DIR (the live `langgraph dev` folder) "
            "or --staging-url A --staging-url B"
        )
    if (shadow.persistence or shadow.source.checkpointer) and shadow.live_code is None and shadow.live_ref is None:
        raise UsageError("check needs the deployed code: --live-code DIR (a checkout of it) or --live-ref GIT_REF")
    try:
        report = asyncio.run(check_report(request))
    except StaleCopy as exc:
        raise UsageError(str(exc)) from None
    print(render(report, shadow.format))
    return EXIT_BLOCKED if report.verdict == "block" else EXIT_PASS
