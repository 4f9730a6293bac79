"""Render: a gate report as a table (terminal), JSON (tools) or Markdown (records, PRs).

One module per format (`table`, `envelope` for JSON, `markdown`); `progress` is the scan's bar on stderr and
`migrate` the migrate report's table.
"""

from __future__ import annotations

from pathlib import Path

from migrations_playbook.model import GateReport

FORMATS = ("table", "json", "markdown")


def render(report: GateReport, fmt: str, root: Path | None = None) -> str:
    """``report`` in ``fmt``; paths in it relative to ``root`` (default: the working folder), never absolute
    (`render.paths`)."""
    from migrations_playbook.render import envelope, markdown, table
    from migrations_playbook.render.paths import scrub_json

    data = scrub_json(report.to_json(), root)
    if fmt == "json":
        return envelope.dumps(data)
    if fmt == "markdown":
        return markdown.markdown(data, {g: (d.topology, d.drawn_from) for g, d in report.drawings.items()})
    return table.table(data)
