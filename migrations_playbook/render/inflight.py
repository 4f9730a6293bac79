"""`playbook inflight --format markdown`: the drain monitor's rows as a table, what the running code's guard would
refuse, and each graph with live threads drawn with the threads at each node (`render.mermaid`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from migrations_playbook.model import GraphDrawing, GraphSummary
from migrations_playbook.render.mermaid import sections
from migrations_playbook.render.paths import scrub


def markdown(
    label: str,
    rows: Mapping[str, list[dict[str, Any]]],
    refused: Mapping[str, Any] | None,
    summaries: Mapping[str, GraphSummary],
    drawings: Mapping[str, GraphDrawing],
    root: Path | None = None,
) -> str:
    """``rows``: graph id -> the inflight rows (status, flow_version, next, threads); ``summaries``: the threads per
    node; ``drawings``: the live topology of each graph. Paths relative to ``root`` (`render.paths`)."""
    total = sum(s.threads_scanned for s in summaries.values())
    lines = [
        f"**Inflight** (live `{scrub(label, root)}`): {total} thread(s)",
        "",
        "| graph | status | flow_version | next | threads |",
        "|---|---|---|---|---|",
    ]
    for graph_id, entries in rows.items():
        for e in entries:
            lines.append(f"| `{graph_id}` | {e['status']} | {e['flow_version']} | {e['next']} | {e['threads']} |")
        if not entries:
            lines.append(f"| `{graph_id}` | - | - | - | 0 |")
    for graph_id, entry in (refused or {}).items():
        codes = ", ".join(f"`{code}`: {n}" for code, n in sorted(entry["by_code"].items()))
        lines.append(
            f"\n> `{graph_id}`: the running code's guard would refuse {entry['threads']} thread(s)"
            + (f" ({codes})" if codes else "")
        )
    data = {
        "graphs": {
            graph_id: {"threads_scanned": summary.threads_scanned, "pending_at": summary.pending_at}
            for graph_id, summary in sorted(summaries.items())
        },
        "findings": [],
    }
    lines += sections(data, {g: (d.topology, d.drawn_from) for g, d in drawings.items()})
    return "\n".join(lines)
