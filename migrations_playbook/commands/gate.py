"""`playbook gate`: every live thread against the candidate code, over any `Source`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from migrations_playbook.errors import EXIT_BLOCKED, EXIT_PASS, UsageError
from migrations_playbook.graphcode.candidate import load_candidate_graphs
from migrations_playbook.graphcode.contract import contract_hash, strip_lock
from migrations_playbook.graphcode.describe import contract_of
from migrations_playbook.model import CandidateGraph, Finding, GateReport, LiveGraph, drawings
from migrations_playbook.render import render
from migrations_playbook.render.progress import ProgressBar
from migrations_playbook.rules.evaluate import Evaluator
from migrations_playbook.sources.base import Source, SourceRequest
from migrations_playbook.sources.factory import open_source


@dataclass(frozen=True)
class GateRequest:
    source: SourceRequest
    candidate: str
    """The candidate's langgraph.json as given (reports print it as typed)."""
    graphs: list[str] = field(default_factory=list)
    format: str = "table"
    strict: bool = False
    progress: bool = True
    """A progress bar on stderr (never with ``--format json``)."""


async def gate_report(
    request: GateRequest,
    registered: set[str],
    candidates: dict[str, CandidateGraph],
    candidate_hash: Callable[[str], str] | None = None,
) -> GateReport:
    """The gate's report: the source's threads (and assistants, where it has them) judged by the rules.
    ``candidate_hash(graph_id)``: the candidate's contract hash, to refuse live locks that are the candidate's."""
    async with open_source(request.source) as source:
        wanted = await source.graph_ids(request.graphs, owners=registered)
        live = await source.live_graphs(wanted)
        if candidate_hash is not None:
            await _refuse_candidate_locks(source, live, wanted, candidate_hash)
        assistants = {g: [a async for a in source.assistants(g)] for g in wanted} if source.supports("assistants") else {}

        accepted = candidate_accepts(request.candidate, wanted, candidate_hash) if candidate_hash is not None else {}

        def fresh() -> Evaluator:
            evaluator = Evaluator(
                live=live, candidates=candidates, registered=registered, strict=request.strict, accepted=accepted
            )
            for graph_id in wanted:
                evaluator.summary(graph_id)
                for assistant in assistants.get(graph_id, ()):
                    evaluator.add_assistant(graph_id, assistant)
            return evaluator

        progress = ProgressBar(enabled=request.format != "json" and request.progress)
        try:
            judged: Evaluator = await source.scan(wanted, live, fresh, progress=progress if progress.enabled else None)
        finally:
            progress.close()
        findings = judged.findings()
        return GateReport(
            live_url=source.label,
            candidate=request.candidate,
            strict=request.strict,
            graphs=judged.summaries,
            findings=findings,
            notes=[*source.notes(), *unverified_notes(findings)],
            drawings=drawings(wanted, live, candidates, served=source.supports("assistants")),
        )


async def _refuse_by_stamps(
    source: Source, live: Mapping[str, LiveGraph], graph_ids: Sequence[str], candidate_hash: Callable[[str], str]
) -> None:
    """A deployment that serves no contract: the runtime guard's stamps on the live threads say which code last
    ran them. Locks that are the candidate's own, while no stamped thread ran the candidate, are refused."""
    candidates = {}
    for graph_id in graph_ids:
        lock = live[graph_id].lock if graph_id in live else None
        if lock is not None and contract_hash(strip_lock(dict(lock))) == candidate_hash(graph_id):
            candidates[graph_id] = candidate_hash(graph_id)
    if not candidates:
        return
    stamps = await source.contract_stamps(sorted(candidates))
    for graph_id, given in sorted(candidates.items()):
        seen = stamps.get(graph_id) or set()
        if seen and given not in seen:
            raise UsageError(
                f"the live contract given for {graph_id} ({given}) is the candidate's own, but the live threads were "
                f"last run by {', '.join(sorted(seen))} (the runtime guard's stamps): with these locks the gate would "
                "compare the candidate with itself and pass (were they rewritten after the edit?). Pass the deployed "
                "commit's locks (`playbook contract --write` on that commit)"
            )


def candidate_accepts(
    candidate: str, graph_ids: Sequence[str], candidate_hash: Callable[[str], str]
) -> dict[tuple[str, str, str | None], str]:
    """The findings the candidate project's records accept for the candidate's code (`contract.accepted_findings`):
    its records folder as `playbook contract` resolves it; none when it has none."""
    from migrations_playbook.graphcode import settings
    from migrations_playbook.graphcode.contract import accepted_findings

    try:
        paths = settings.contract_paths(Path(candidate).resolve())
    except settings.SettingsError:
        return {}
    return accepted_findings(paths.records_dir, {g: candidate_hash(g) for g in graph_ids})


UNVERIFIED = frozenset({"CALL_ORDER_UNVERIFIED", "REDUCER_UNVERIFIED", "SEND_PAYLOAD_UNVERIFIED", "STATE_UNCHECKED"})
"""Findings that say what the gate could not check from the code and the stored state."""


def unverified_notes(findings: Sequence[Finding]) -> list[str]:
    """Where the verdict rests on evidence the gate could not verify, and what `playbook shadow` would prove."""
    unverified = [f for f in findings if f.code in UNVERIFIED]
    if not unverified:
        return []
    codes = ", ".join(sorted({f.code for f in unverified}))
    threads = sum(f.thread_count for f in unverified)
    return [
        f"this verdict rests on unverified evidence: {len(unverified)} finding(s) ({codes}) on {threads} thread(s) say what "
        "the gate could not check from the code and the stored state. `playbook shadow` runs those threads under the "
        "deployed code and the candidate on copies of the live data and shows by execution whether the candidate "
        "does worse (the gate's rules catch only the kinds of breakage they were written for)"
    ]


async def _refuse_candidate_locks(
    source: Source, live: Mapping[str, LiveGraph], graph_ids: Sequence[str], candidate_hash: Callable[[str], str]
) -> None:
    """Live locks that are the candidate's own (``--live-contract`` rewritten after the edit) compare the
    candidate with itself and pass whatever changed. Where the running deployment says which code it
    runs and it is not those locks' code, while the locks are exactly the candidate's, refuse them."""
    served = await source.contract_served()
    if not served:
        await _refuse_by_stamps(source, live, graph_ids, candidate_hash)
        return
    for graph_id in graph_ids:
        lock = live[graph_id].lock if graph_id in live else None
        if lock is None or graph_id not in served:
            continue
        given = contract_hash(strip_lock(dict(lock)))
        if given != served[graph_id] and given == candidate_hash(graph_id):
            raise UsageError(
                f"the live contract given for {graph_id} ({given}) is the candidate's own, but the live deployment "
                f"runs {served[graph_id]}: with these locks the gate would compare the candidate with itself and "
                "pass (were they rewritten after the edit?). Pass the deployed commit's locks (`playbook contract "
                "--write` on that commit), or drop --live-contract to use the ones the server serves"
            )


def run(request: GateRequest) -> int:
    registered, compiled, candidates = load_candidate_graphs(Path(request.candidate), request.graphs or None)

    def candidate_hash(graph_id: str) -> str:
        return contract_hash(contract_of(graph_id, compiled[graph_id])) if graph_id in compiled else ""

    report = asyncio.run(gate_report(request, registered, candidates, candidate_hash))
    print(render(report, request.format))
    return EXIT_BLOCKED if report.verdict == "block" else EXIT_PASS
