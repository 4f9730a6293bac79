"""A gate report as Markdown (records, pull-request comments): the verdict, the graphs, the findings, the notes,
then each graph with live threads or findings drawn as a Mermaid flowchart (`render.mermaid`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from migrations_playbook.model import Topology
from migrations_playbook.render.mermaid import sections
from migrations_playbook.render.where import thread_ids, where


def markdown(data: dict[str, Any], drawings: Mapping[str, tuple[Topology | None, str]] | None = None) -> str:
    """``data``: the report's JSON; ``drawings``: graph id -> (topology, where it came from) to draw."""
    lines = [
        f"**{data['command'].capitalize()} verdict: {data['verdict']}** (live `{data['live']}`, candidate `{data['candidate']}`"
        + (", strict" if data["strict"] else "")
        + ")",
        "",
        "| graph | threads scanned | statuses | in candidate |",
        "|---|---|---|---|",
    ]
    for graph_id, graph in data["graphs"].items():
        statuses = ", ".join(f"{k}={v}" for k, v in graph["by_status"].items()) or "-"
        lines.append(
            f"| `{graph_id}` | {graph['threads_scanned']} | {statuses} | {'yes' if graph['in_candidate'] else '**no**'} |"
        )
    lines.append("")
    if data["findings"]:
        lines += ["| severity | code | where | threads | message | fix |", "|---|---|---|---|---|---|"]
        for f in data["findings"]:
            assistants = f"; assistants: {', '.join(f['assistant_ids'])}" if f.get("assistant_ids") else ""
            settled = f" ({f['settled']}: {f['evidence']})" if f.get("settled") else ""
            lines.append(
                f"| {f['severity']} | `{f['code']}` | {where(f)} | {f['thread_count']}: {thread_ids(f)}{assistants} "
                f"| {f['message']}{settled} | {f.get('help') or ''} |"
            )
    else:
        lines.append("No findings.")
    if data.get("unproven"):
        accepted = data.get("accept_unproven")
        blocks = "named, accepted with `--accept-unproven`" if accepted else "**block** unless `--accept-unproven`"
        lines += ["", f"**Unproven threads** ({len(data['unproven'])}, {blocks}):", "", "| thread | graph | why | to run it |"]
        lines.append("|---|---|---|---|")
        for u in data["unproven"]:
            lines.append(f"| `{u['thread_id']}` | `{u['graph_id']}` | {u['reason']} | {u['how']} |")
    for note in data.get("notes", []):
        lines.append(f"\n> {note}")
    lines += sections(data, drawings or {})
    return "\n".join(lines)
