"""Render: a gate report as a table (terminal), JSON (tools) or Markdown (records, PRs).

One module per format (`table`, `envelope` for JSON, `markdown`); `progress` is the scan's bar on stderr and
`migrate` the migrate report's table.
"""

from __future__ import annotations

from migrations_playbook.model import GateReport

FORMATS = ("table", "json", "markdown")


def render(report: GateReport, fmt: str) -> str:
    from migrations_playbook.render import envelope, markdown, table

    if fmt == "json":
        return envelope.as_json(report)
    if fmt == "markdown":
        return markdown.markdown(report.to_json())
    return table.table(report.to_json())
