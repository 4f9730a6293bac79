"""Render: a gate report as a table (terminal), JSON (tools) or Markdown (records, PRs)."""

from __future__ import annotations

import json
from typing import Any

from migrations_playbook.model import GateReport

FORMATS = ("table", "json", "markdown")


def render(report: GateReport, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report.to_json(), ensure_ascii=False, indent=2)
    if fmt == "markdown":
        return _markdown(report.to_json())
    return _table(report.to_json())


def _ids(finding: dict[str, Any]) -> str:
    ids = ", ".join(finding["thread_ids"])
    more = finding["thread_count"] - len(finding["thread_ids"])
    return ids + (f" (+{more} more)" if more > 0 else "")


def _where(finding: dict[str, Any]) -> str:
    parts = [finding["graph_id"]]
    if finding["node"]:
        parts.append(f"node={finding['node']}")
    if finding["field"]:
        parts.append(f"field={finding['field']}")
    return " ".join(parts)


def _table(data: dict[str, Any]) -> str:
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
        lines.append(f"{finding['severity'].upper():5}  {finding['code']}  {_where(finding)}  threads={finding['thread_count']}")
        lines.append(f"       {finding['message']}")
        if finding.get("help"):
            lines.append(f"       fix: {finding['help']}")
        lines.append(f"       threads: {_ids(finding)}")
        if finding.get("assistant_ids"):
            lines.append(f"       assistants: {', '.join(finding['assistant_ids'])}")
    for note in data.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _markdown(data: dict[str, Any]) -> str:
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
            lines.append(
                f"| {f['severity']} | `{f['code']}` | {_where(f)} | {f['thread_count']}: {_ids(f)}{assistants} "
                f"| {f['message']} | {f.get('help') or ''} |"
            )
    else:
        lines.append("No findings.")
    for note in data.get("notes", []):
        lines.append(f"\n> {note}")
    return "\n".join(lines)
