"""A migration record skeleton as Markdown (`playbook record new`): the front matter `contract.check` reads,
filled; what changed per graph, filled from the lock diff; every line a person must write marked with
`record.PLACEHOLDER`, which the check refuses until it is replaced."""

from __future__ import annotations

from migrations_playbook.graphcode.record import PLACEHOLDER, SECTIONS, RecordDraft


def skeleton(draft: RecordDraft, date: str) -> str:
    graphs = ", ".join(f"`{g.graph_id}`" for g in draft.graphs)
    lines = [
        "---",
        f"id: {draft.record_id}",
        f"date: {date}",
        f"gate: {PLACEHOLDER} the gate's verdict on the live threads (pass; or block, then pass after ...)",
        "contracts:",
        *(f"  - {g.graph_id} {g.new_hash}" for g in draft.graphs),
        "---",
        f"# {draft.number} {graphs}: {PLACEHOLDER} the change in one line",
        "",
        f"## {SECTIONS[0]}",
        f"{PLACEHOLDER} what changed and why, and how the threads that are live now keep working "
        "(additive fields, a `flow_version` branch, add-then-remove, a migration plan).",
        "",
        "Contract diff (from the locks, as `playbook contract --write` prints it):",
    ]
    for g in draft.graphs:
        since = {"recorded": "since the last recorded lock", "committed": "since the committed lock"}.get(g.base, "")
        head = f"{g.old_hash} -> {g.new_hash}" if g.old_hash else g.new_hash
        lines += ["", f"`{g.graph_id}` {head}" + (f" ({since})" if since else "") + ":", ""]
        lines += [f"- {change}" for change in g.changes] or ["- no change the lock shows"]
    lines += [
        "",
        f"## {SECTIONS[1]}",
        f"{PLACEHOLDER} paste the gate's output: `playbook gate --live URL --candidate langgraph.json --strict "
        "--format markdown` (and the shadow's or replay's, where you ran them). To accept a finding the shadow "
        "proved harmless, add `accepts:` (`- CODE GRAPH [FIELD]`) to the front matter and paste the shadow's "
        "passing output.",
        "",
        f"## {SECTIONS[2]}",
        f"{PLACEHOLDER} how to go back: redeploy the previous commit, and what happens to threads the new code has run by then.",
        "",
    ]
    return "\n".join(lines)
