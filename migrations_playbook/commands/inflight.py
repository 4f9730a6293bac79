"""`playbook inflight`: the drain monitor, threads by status x flow_version x next node, over any `Source`."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrations_playbook.errors import EXIT_PASS, UsageError
from migrations_playbook.model import GraphDrawing, GraphSummary, drawings
from migrations_playbook.render.progress import ProgressBar
from migrations_playbook.sources.base import Source, SourceRequest
from migrations_playbook.sources.factory import open_source


@dataclass(frozen=True)
class InflightRequest:
    source: SourceRequest
    graphs: list[str] = field(default_factory=list)
    format: str = "table"
    running: Path | None = None
    """The code the server runs: also count the threads its runtime guard would refuse."""
    lock_history: Path | None = None
    """With ``running``: the deployment's contract locks (with history/)."""
    progress: bool = True
    """A progress bar on stderr while the threads are read (never with ``--format json``)."""


Counts = dict[str, list[dict[str, Any]]]


def _count(buckets: dict[str, dict[tuple[str, str, str], int]], thread: Any) -> None:
    version = thread.flow_version
    key = (thread.status, "none" if version is None else str(version), ",".join(thread.pending) or "-")
    bucket = buckets[thread.graph_id]
    bucket[key] = bucket.get(key, 0) + 1


@dataclass
class Inflight:
    """What `counts` read: the rows, what the guard would refuse, and for the Markdown each graph's threads per
    node (`GraphSummary.pending_at`) and its live topology."""

    rows: Counts
    refused: dict[str, Any] | None
    label: str = ""
    summaries: dict[str, GraphSummary] = field(default_factory=dict)
    drawings: dict[str, GraphDrawing] = field(default_factory=dict)


async def counts(request: InflightRequest) -> Inflight:
    """Per graph, the threads by (status, flow_version, next); and what the guard would refuse."""
    async with open_source(request.source) as source:
        wanted = await source.graph_ids(request.graphs)
        buckets: dict[str, dict[tuple[str, str, str], int]] = {graph_id: {} for graph_id in wanted}
        summaries = {graph_id: GraphSummary() for graph_id in wanted}
        progress = ProgressBar(enabled=request.format != "json" and request.progress)
        try:
            async for thread in source.threads(wanted, progress=progress if progress.enabled else None):
                _count(buckets, thread)
                summaries.setdefault(thread.graph_id, GraphSummary()).count(thread)
        finally:
            progress.close()
        drawn = (
            drawings(wanted, await source.live_graphs(wanted, locks=False), served=source.supports("assistants"))
            if request.format == "markdown"
            else {}
        )
        rows = {
            graph_id: [{"status": s, "flow_version": v, "next": n, "threads": c} for (s, v, n), c in sorted(bucket.items())]
            for graph_id, bucket in buckets.items()
        }
        # A source without thread records (a checkpointer) has nothing the guard judges: --running is not counted there.
        refused = (
            await _guard_refusals(source, request, wanted) if request.running and source.supports("thread_records") else None
        )
        return Inflight(rows, refused, label=source.label, summaries=summaries, drawings=drawn)


async def _guard_refusals(source: Source, request: InflightRequest, graph_ids: list[str]) -> dict[str, Any]:
    from migrations_playbook.graphcode import settings
    from migrations_playbook.guard import Guard

    assert request.running is not None
    running = request.running.resolve()
    try:
        history = request.lock_history if request.lock_history else settings.contract_paths(running).contracts_dir
    except settings.SettingsError as exc:
        raise UsageError(str(exc)) from None
    guard = Guard.from_config(running, history)
    return await source.guard_refusals(guard, graph_ids)


def run(request: InflightRequest) -> int:
    found = asyncio.run(counts(request))
    data, refused = found.rows, found.refused
    if request.format == "markdown":
        from migrations_playbook.render.inflight import markdown

        print(markdown(found.label, data, refused, found.summaries, found.drawings))
        return EXIT_PASS
    if request.format == "json":
        print(json.dumps({"graphs": data, **({"refused": refused} if refused is not None else {})}, indent=2))
        return EXIT_PASS
    rows = [("graph", "status", "flow_version", "next", "threads")]
    for graph_id, entries in data.items():
        rows += [(graph_id, e["status"], e["flow_version"], e["next"], str(e["threads"])) for e in entries]
        if not entries:
            rows.append((graph_id, "-", "-", "-", "0"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    for graph_id, entry in (refused or {}).items():
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(entry["by_code"].items()))
        print(
            f"{graph_id}: the running code's guard would refuse {entry['threads']} thread(s)" + (f" ({codes})" if codes else "")
        )
    return EXIT_PASS
