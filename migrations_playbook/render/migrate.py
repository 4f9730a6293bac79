"""`playbook migrate --format table`: the `MigrateReport` as text (``--format json`` is its `to_json`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from migrations_playbook.render.paths import scrub, scrub_json
from migrations_playbook.repair.report import MigrateReport


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) and value.startswith("<") else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render(report: MigrateReport, fmt: str, root: Path | None = None) -> str:
    """The report as ``table`` or ``json``; paths relative to ``root`` (default: the working folder)."""
    if fmt == "json":
        return json.dumps(scrub_json(report.to_json(), root), ensure_ascii=False, indent=2, default=str)
    return render_table(report, root)


def render_table(report: MigrateReport, root: Path | None = None) -> str:
    data = report.to_json()
    where = f"staging {report.staging_url} (a copy of {report.live_url})" if report.staging_url else report.live_url
    lines = [f"playbook migrate {report.migration}: {report.mode} on {where}, candidate {report.candidate}"]
    for graph_id, served in sorted(report.served.items()):
        if report.source == "checkpointer":
            lines.append(f"  {graph_id}: read in the live code's shape, written through the candidate in-process")
        else:
            lines.append(f"  {graph_id}: the server runs the {served}")
    if report.before is not None:
        lines.append(f"gate before: {report.before.verdict.upper()} ({len(report.blocked)} thread(s) blocked)")
        for finding in report.before.findings:
            if finding.severity == "block":
                where_ = " ".join(
                    p
                    for p in (
                        finding.graph_id,
                        f"node={finding.node}" if finding.node else "",
                        f"field={finding.field}" if finding.field else "",
                    )
                    if p
                )
                lines.append(f"  BLOCK {finding.code} {where_}: {finding.thread_count} thread(s)")
    lines.append("")
    for t in report.threads:
        if t.action == "no change" and not t.blocks:
            continue
        blocked = f" blocked by {', '.join(t.blocks)}" if t.blocks else ""
        lines.append(
            f"{t.thread_id}  {t.graph_id}  {t.status}{blocked}: {t.action.upper()}" + (f" ({t.reason})" if t.reason else "")
        )
        if t.base:
            lines.append(f"    pre-migration head {t.base}" + (f" -> new head {t.new_head}" if t.new_head else ""))
        if t.change is not None:
            if t.change.move is not None:
                m = t.change.move
                lines.append(
                    f"    step {m.step}: move {m.from_node} -> {m.to_node} (update_state as_node={m.as_node!r}: "
                    f"the candidate schedules {m.to_node!r}; it asks its question again when the thread is continued)"
                )
            for d in t.change.diff:
                lines.append(f"    {d.key}: {_short(d.before)} -> {_short(d.after)}  ({d.how})")
        if t.hidden or t.lost:
            lines.append(
                "    read from the thread record (the candidate hides them): "
                + ", ".join([*(f"key {k}" for k in t.hidden), *(f"lost step {n}" for n in t.lost)])
            )
    for a in report.assistants:
        lines.append(f"assistant {a.assistant_id}  {a.graph_id}: {a.action.upper()}" + (f" ({a.reason})" if a.reason else ""))
        if a.after:
            lines.append(f"    context: {_short(a.before, 80)} -> {_short(a.after, 80)}")
    for p in report.proofs:
        verdict = "PROVEN" if p.proven else "NOT PROVEN" if p.ok else "FAILED"
        lines.append(
            f"proof {p.thread_id}: {verdict} at {p.node!r}: {p.message}"
            + (f"; answer {_short(p.answer)} ({p.answer_source})" if p.answer_source else "")
            + (f"; it wrote {_short(p.wrote, 80)}" if p.wrote is not None else "")
        )
    if report.after is not None:
        lines.append(f"gate after: {report.after.verdict.upper()}")
        for finding in report.after.findings:
            if finding.severity == "block":
                lines.append(
                    f"  BLOCK {finding.code} {finding.graph_id} {finding.node or finding.field or ''}: "
                    f"{', '.join(finding.thread_ids)}"
                )
    counts = ", ".join(f"{k}: {v}" for k, v in data["counts"].items()) or "no threads"
    lines.append(f"threads: {counts}")
    for note in report.notes:
        lines.append(f"note: {note}")
    lines.append("result: " + ("OK" if report.ok else "NOT OK"))
    return scrub("\n".join(lines), root)
