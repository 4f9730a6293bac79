"""A gate report as terminal text."""

from __future__ import annotations

from typing import Any

from migrations_playbook.render.where import thread_ids, where


def table(data: dict[str, Any]) -> str:
    lines = [f"playbook {data['command']}: {data['verdict'].upper()}  (live {data['live']}, candidate {data['candidate']})", ""]
    rows = [("graph", "threads", "statuses", "in candidate")]
    for graph_id, graph in data["graphs"].items():
        statuses = ", ".join(f"{k}={v}" for k, v in graph["by_status"].items()) or "-"
        rows.append((graph_id, str(graph["threads_scanned"]), statuses, "yes" if graph["in_candidate"] else "NO"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    lines.append("")
    if not data["findings"]:
        lines.append("no findings")
    for finding in data["findings"]:
        lines.append(f"{finding['severity'].upper():5}  {finding['code']}  {where(finding)}  threads={finding['thread_count']}")
        lines.append(f"       {finding['message']}")
        if finding.get("help"):
            lines.append(f"       fix: {finding['help']}")
        lines.append(f"       threads: {thread_ids(finding)}")
        if finding.get("assistant_ids"):
            lines.append(f"       assistants: {', '.join(finding['assistant_ids'])}")
        if finding.get("settled"):
            lines.append(f"       settled: {finding['settled']}: {finding['evidence']}")
    if data.get("unproven"):
        blocks = "named, accepted (--accept-unproven)" if data.get("accept_unproven") else "BLOCK unless --accept-unproven"
        lines.append("")
        lines.append(f"UNPROVEN  {len(data['unproven'])} thread(s) could not be run ({blocks})")
        for thread in data["unproven"]:
            lines.append(f"       thread {thread['thread_id']} ({thread['graph_id']}): {thread['reason']}")
            lines.append(f"       to run it: {thread['how']}")
    for note in data.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines)
