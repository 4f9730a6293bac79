"""What a finding names: its graph, node and field, and its threads (shared by the table and Markdown)."""

from __future__ import annotations

from typing import Any


def thread_ids(finding: dict[str, Any]) -> str:
    ids = ", ".join(finding["thread_ids"])
    more = finding["thread_count"] - len(finding["thread_ids"])
    return ids + (f" (+{more} more)" if more > 0 else "")


def where(finding: dict[str, Any]) -> str:
    parts = [finding["graph_id"]]
    if finding["node"]:
        parts.append(f"node={finding['node']}")
    if finding["field"]:
        parts.append(f"field={finding['field']}")
    return " ".join(parts)
