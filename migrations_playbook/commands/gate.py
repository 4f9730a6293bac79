"""`playbook gate`: every live thread against the candidate code, over any `Source`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from migrations_playbook.errors import EXIT_BLOCKED, EXIT_PASS
from migrations_playbook.graphcode.candidate import load_candidate
from migrations_playbook.model import CandidateGraph, GateReport
from migrations_playbook.render import render
from migrations_playbook.render.progress import ProgressBar
from migrations_playbook.rules.evaluate import Evaluator
from migrations_playbook.sources.base import SourceRequest
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


async def gate_report(request: GateRequest, registered: set[str], candidates: dict[str, CandidateGraph]) -> GateReport:
    """The gate's report: the source's threads (and assistants, where it has them) judged by the rules."""
    async with open_source(request.source) as source:
        wanted = await source.graph_ids(request.graphs, owners=registered)
        live = await source.live_graphs(wanted)
        assistants = {g: [a async for a in source.assistants(g)] for g in wanted} if source.supports("assistants") else {}

        def fresh() -> Evaluator:
            evaluator = Evaluator(live=live, candidates=candidates, registered=registered, strict=request.strict)
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
        return GateReport(
            live_url=source.label,
            candidate=request.candidate,
            strict=request.strict,
            graphs=judged.summaries,
            findings=judged.findings(),
            notes=source.notes(),
        )


def run(request: GateRequest) -> int:
    registered, candidates = load_candidate(Path(request.candidate), request.graphs or None)
    report = asyncio.run(gate_report(request, registered, candidates))
    print(render(report, request.format))
    return EXIT_BLOCKED if report.verdict == "block" else EXIT_PASS
