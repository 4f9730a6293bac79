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
import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from migrations_playbook.commands.gate import GateRequest, gate_report
from migrations_playbook.commands.requests import ShadowRequest
from migrations_playbook.commands.shadow import require_copies_and_code, run_report, shadow_report
from migrations_playbook.graphcode.candidate import load_candidate_graphs
from migrations_playbook.graphcode.contract import contract_hash
from migrations_playbook.graphcode.describe import contract_of
from migrations_playbook.model import Finding, GateReport, Settled, ThreadProof, UnprovenThread

UNPROVEN_CODE = "SHADOW_UNPROVEN"
"""The shadow's finding for a thread it could not run: `check` lists those threads under ``unproven``."""


@dataclass(frozen=True)
class CheckRequest:
    shadow: ShadowRequest
    """The sources, the two codes, the threads and the answers: the shadow's flags, which the gate shares."""
    accept_unproven: bool = False


NoiseKey = tuple[str, str, str | None, str | None]
"""(code, graph id, node, field): what a rule said, wherever."""


@dataclass
class Noise:
    """What the gate's rules say of the deployed code against itself: each hit is that rule's noise."""

    threads: dict[NoiseKey, set[str]] = field(default_factory=dict)
    note: str | None = None
    """Why the deployed code could not be judged against itself, when it could not."""

    def explains(self, finding: Finding) -> bool:
        named = self.threads.get((finding.code, finding.graph_id, finding.node, finding.field))
        return named is not None and set(finding.thread_ids) <= named


def identity_noise(request: CheckRequest, deployed: Path) -> Noise:
    """The gate on the deployed code as the candidate (a process of its own: the deployed code's modules have the
    candidate's names). A block it reports there is the rule misjudging unchanged code."""
    source = request.shadow.source
    argv = [sys.executable, "-m", "migrations_playbook", "gate", "--candidate", str(deployed), "--format", "json"]
    argv.append("--no-progress")
    argv += ["--live", source.live] if source.live else ["--checkpointer", str(source.checkpointer)]
    for flag, value in (("--live-contract", source.live_contract), ("--all-threads-are", source.all_threads_are)):
        if value:
            argv += [flag, value]
    for graph_id in request.shadow.graphs:
        argv += ["--graph", graph_id]
    for name, value in source.headers.items():
        argv += ["--header", f"{name}: {value}"]
    budget = IDENTITY_TIMEOUT
    if source.deadline is not None:  # within the command's own --deadline
        budget = max(1.0, min(budget, source.deadline.left()))
        argv += ["--deadline", f"{budget:.0f}"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=budget + 30, check=False)
    except subprocess.TimeoutExpired:
        return Noise(note=f"the deployed code against itself was not judged: the gate took over {budget:.0f} s")
    if done.returncode not in (0, 1):
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return Noise(note=f"the deployed code against itself was not judged (exit {done.returncode}): {why}")
    noise = Noise()
    for found in json.loads(done.stdout).get("findings", []):
        if found.get("severity") == "block":
            key = (found["code"], found["graph_id"], found.get("node"), found.get("field"))
            noise.threads.setdefault(key, set()).update(found.get("thread_ids") or [])
    return noise


IDENTITY_TIMEOUT = 1800.0
"""The gate's run on the deployed code against itself, at most (it reads every live thread again)."""


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
    """What would let the shadow run a thread it could not (by what stopped it: the deployed code's own failure or
    unreadable state, else nothing to send: an unanswered question, or no input; never by the error's own words)."""
    if reason.startswith(("the deployed code's own", "the deployed code cannot read")):
        return (
            "the deployed code itself fails on it: fix or drain the thread (it fails the same way in production), "
            "or pass --accept-unproven"
        )
    if reason.startswith("not run: idle") or "--turn-input" in reason:
        return f"give its next turn an input: --turn-input {graph_id}=JSON; or pass --accept-unproven"
    if "question" in reason or "answer" in reason or "resume" in reason:
        return (
            "answer its question: --resume-map '{\"<thread id, node path or kind>\": <answer>}', or --resume JSON for "
            "every question; or pass --accept-unproven to let it through unproven"
        )
    if "input" in reason or "turn" in reason:
        return f"give its next turn an input: --turn-input {graph_id}=JSON; or pass --accept-unproven"
    return (
        "the deployed code itself fails on it: fix or drain the thread (it fails the same way in production), "
        "or pass --accept-unproven"
    )


def combine(gate: GateReport, shadow: GateReport, *, accept_unproven: bool, noise: Noise | None = None) -> GateReport:
    """One report: the gate's findings settled by the shadow's proofs (and by the gate's noise on the deployed
    code against itself), then the shadow's own findings."""
    noise = noise or Noise()
    settled_gate: list[Finding] = []
    for finding in gate.findings:
        settled, evidence = settle(finding, shadow.proofs)
        if settled != "proven" and finding.severity == "block" and noise.explains(finding):
            settled, evidence = (
                "disproved",
                f"{finding.code} says the same of the deployed code against itself: the rule's noise on these threads, "
                "not a change",
            )
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
    if noise.note:
        notes.append(noise.note)
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
    noise = Noise()
    if any(f.severity == "block" for f in gate.findings) and (shadow.live_code or shadow.live_ref):
        from migrations_playbook.proof.shadow.live_code import deployed_config

        with deployed_config(Path(shadow.candidate), live_code=shadow.live_code, live_ref=shadow.live_ref) as deployed:
            noise = await asyncio.to_thread(identity_noise, request, deployed)
    flagged = frozenset(t for f in gate.findings for t in f.thread_ids)
    proof = await shadow_report(shadow, include=flagged, moving=True)
    return combine(gate, proof, accept_unproven=request.accept_unproven, noise=noise)


def run(request: CheckRequest) -> int:
    require_copies_and_code(request.shadow, "check")
    return run_report(check_report(request), request.shadow.format)
