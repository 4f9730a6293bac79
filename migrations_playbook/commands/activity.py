"""`playbook activity`: node entries per graph over a window, from LangSmith traces."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from migrations_playbook.errors import EXIT_PASS, LiveUnreachable, UsageError
from migrations_playbook.sources import langsmith
from migrations_playbook.sources.budget import Deadline


@dataclass(frozen=True)
class ActivityRequest:
    since: str = "7d"
    until: str | None = None
    graphs: list[str] = field(default_factory=list)
    project: str | None = None
    """LangSmith tracing project (default: $LANGSMITH_PROJECT, else 'default')."""
    config: Path | None = None
    """Also list the nodes of these graphs that no run entered (0 entries)."""
    fields: bool = False
    format: str = "table"
    deadline: Deadline | None = None
    """When the command stops waiting for LangSmith (``--deadline``)."""


def run(request: ActivityRequest) -> int:
    """Node entries per graph over a window, from LangSmith traces."""
    try:
        window = langsmith.parse_since(request.since)
        until = datetime.fromisoformat(request.until) if request.until else None
        if until is not None and until.tzinfo is None:
            until = until.replace(tzinfo=UTC)
        known = None
        if request.config:
            from migrations_playbook.graphcode.candidate import load_compiled

            compiled = load_compiled(request.config.resolve())
            known = {gid: [n for n in graph.get_graph().nodes if not n.startswith("__")] for gid, graph in compiled.items()}
        project = request.project or os.environ.get(langsmith.PROJECT_ENV, "").strip() or langsmith.DEFAULT_PROJECT
        client = langsmith.make_client()
        report = langsmith.collect(
            client,
            project=project,
            window=window,
            until=until,
            graph_ids=request.graphs,
            known_nodes=known,
            fields=request.fields,
            deadline=request.deadline,
        )
    except ValueError as exc:  # ActivityError, and a malformed --until
        raise UsageError(str(exc)) from None
    except langsmith.LangSmithUnreachable as exc:
        raise LiveUnreachable(str(exc)) from None
    if request.format == "json":
        print(json.dumps(langsmith.to_json(report), indent=2))
    else:
        print(langsmith.render_table(report))
    return EXIT_PASS
