"""`playbook activity`: how often each node of each graph ran, from LangSmith traces.

The evidence a removal needs (migrations_playbook/docs/rules.md: "Drain before removing a node"): the gate
says no thread is *paused* at a node, the drain monitor says no thread of the old
``flow_version`` is left; this says whether any run *entered* the node (or wrote
the field) over a window. A node with zero entries in 30 days of production
traffic is unreached, whatever the code suggests.

How it reads LangSmith: the generated ``langsmith.Langsmith`` client, with
``runs.query_v2`` (``POST /api/v2/runs/query``, the SmithDB-backed query;
``Client.list_runs`` is deprecated and goes away after 2027-01-31). LangGraph
traces one chain run per node execution, named after the node and carrying
``metadata.langgraph_node``; every run of this deployment also carries
``metadata.graph_id`` (stamped by `server/auth.py`, inherited by child
runs), which the query filters on. Subgraph nodes are reported by path
(``supervisor:model``), as the gate does.

Three layers, as the other commands: `fetch_runs` (query, paged; each page must bring runs not seen
before, `api/paging.py`), `count` (pure), `render_table` / `to_json`. The generated client is
synchronous: `collect` runs it within the command's deadline (`Deadline.call`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from migrations_playbook.errors import BadAnswer
from migrations_playbook.sources.api import answers
from migrations_playbook.sources.api.paging import PageProgress
from migrations_playbook.sources.budget import Deadline

ACTIVITY_RESULT_VERSION = "1"
PAGE_SIZE = 500
DEFAULT_ENDPOINT = "https://api.smith.langchain.com"
ENDPOINT_ENV = "LANGSMITH_ENDPOINT"
API_KEY_ENV = "LANGSMITH_API_KEY"
PROJECT_ENV = "LANGSMITH_PROJECT"
DEFAULT_PROJECT = "default"

SELECTS = ["ID", "NAME", "RUN_TYPE", "START_TIME", "METADATA", "TAGS", "TRACE_ID"]
"""Run fields read per node run (``OUTPUTS`` is added with ``--fields``)."""

_SINCE = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class ActivityError(ValueError):
    """Bad flags or a LangSmith answer that cannot be used (exit 2)."""


class LangSmithUnreachable(Exception):
    """LangSmith did not answer (exit 3)."""


def parse_since(text: str) -> timedelta:
    """``"7d"``, ``"24h"``, ``"90m"``, ``"2w"`` -> a window length."""
    match = _SINCE.match(text)
    if not match or int(match.group(1)) == 0:
        raise ActivityError(f"--since must look like 7d, 24h, 90m or 2w, got {text!r}")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def graph_filter(graph_id: str | None) -> str:
    """The LangSmith filter expression for node runs of one graph (or of any graph)."""
    if graph_id is None:
        return 'eq(metadata_key, "graph_id")'
    quoted = graph_id.replace("\\", "\\\\").replace('"', '\\"')
    return f'and(eq(metadata_key, "graph_id"), eq(metadata_value, "{quoted}"))'


NODE_TAG_PREFIX = "graph:step:"
"""LangGraph tags the run of each node execution ``graph:step:<n>``; runnables
inside a node get ``seq:step:<n>`` or nothing."""


def node_path(run: Mapping[str, Any]) -> str | None:
    """The node a run is the execution of (``supervisor:model`` inside a subgraph), or None.

    Only the node's own run counts: named after the node and tagged
    ``graph:step:<n>``. The model calls, tools and inner graphs of a node carry
    the same ``langgraph_node`` but not that tag (an agent compiled under the
    node's name, as the supervisor is, has the name but not the tag).
    """
    metadata = run.get("metadata") or {}
    node = metadata.get("langgraph_node")
    if not isinstance(node, str) or run.get("name") != node:
        return None
    if not any(isinstance(tag, str) and tag.startswith(NODE_TAG_PREFIX) for tag in run.get("tags") or ()):
        return None
    namespace = metadata.get("langgraph_checkpoint_ns")
    if not isinstance(namespace, str) or not namespace:
        return node
    names = [part.split(":", 1)[0] for part in namespace.split("|") if part]
    if not names or names[-1] != node:
        names.append(node)
    return ":".join(names)


@dataclass
class NodeActivity:
    entries: int = 0
    traces: set[str] = field(default_factory=set)
    last_seen: datetime | None = None


@dataclass
class GraphActivity:
    nodes: dict[str, NodeActivity] = field(default_factory=dict)
    fields: dict[str, int] = field(default_factory=dict)


@dataclass
class ActivityReport:
    project: str
    since: datetime
    until: datetime
    runs_scanned: int
    graphs: dict[str, GraphActivity]


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def count(
    runs: Iterable[Mapping[str, Any]],
    *,
    graph_ids: Sequence[str] = (),
    known_nodes: Mapping[str, Iterable[str]] | None = None,
    fields: bool = False,
) -> tuple[int, dict[str, GraphActivity]]:
    """Node entries (and, with ``fields``, field writes) per graph; pure.

    ``known_nodes`` (graph id -> node names) lists nodes with zero entries too.
    Runs of graphs outside ``graph_ids`` (when given) are ignored.
    """
    wanted = set(graph_ids)
    graphs: dict[str, GraphActivity] = {}
    for known_graph, known in (known_nodes or {}).items():
        if not wanted or known_graph in wanted:
            activity = graphs.setdefault(known_graph, GraphActivity())
            for known_node in known:
                activity.nodes.setdefault(known_node, NodeActivity())
    scanned = 0
    for run in runs:
        scanned += 1
        metadata = run.get("metadata") or {}
        graph_id = metadata.get("graph_id")
        path = node_path(run)
        if not isinstance(graph_id, str) or path is None or (wanted and graph_id not in wanted):
            continue
        activity = graphs.setdefault(graph_id, GraphActivity())
        node = activity.nodes.setdefault(path, NodeActivity())
        node.entries += 1
        if run.get("trace_id"):
            node.traces.add(str(run["trace_id"]))
        started = _time(run.get("start_time"))
        if started and (node.last_seen is None or started > node.last_seen):
            node.last_seen = started
        outputs = run.get("outputs")
        if fields and isinstance(outputs, Mapping):
            for key in outputs:
                activity.fields[key] = activity.fields.get(key, 0) + 1
    return scanned, graphs


# -- LangSmith -------------------------------------------------------------------------


def make_client(*, api_key: str | None = None, endpoint: str | None = None) -> Any:
    """The generated LangSmith client for ``$LANGSMITH_ENDPOINT`` with ``$LANGSMITH_API_KEY``."""
    from langsmith import Langsmith

    key = api_key or os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise ActivityError(f"set {API_KEY_ENV} (a LangSmith API key) to read traces")
    base = (endpoint or os.environ.get(ENDPOINT_ENV, "") or DEFAULT_ENDPOINT).rstrip("/")
    base = base.removesuffix("/api/v1").removesuffix("/api")
    client = Langsmith(api_key=key, base_url=base, max_retries=2)
    last = answers.LastAnswer()
    hooks = client._client.event_hooks  # its own (vendored) httpx client's
    client._client.event_hooks = {
        **hooks,
        "request": [*hooks.get("request", []), last.sent],
        "response": [*hooks.get("response", []), last],
    }
    client._playbook_last_answer = last  # type: ignore[attr-defined]  # what `fetch_runs` names when an answer cannot be read
    return client


NONSENSE = (ValueError, TypeError, AttributeError, KeyError)
"""What LangSmith's generated client raises on an answer it cannot read (pydantic's ValidationError is a ValueError)."""


def _bad(client: Any, exc: Exception) -> BadAnswer:
    last: answers.LastAnswer | None = getattr(client, "_playbook_last_answer", None)
    problem = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
    base = f"LangSmith at {getattr(client, 'base_url', '?')}"
    return last.bad(base, problem) if last is not None else BadAnswer(f"{base} answered something unreadable: {problem}")


def project_id(client: Any, name: str) -> str:
    """The id of the tracing project called ``name``."""
    page = client.sessions.list_v2(name=name, page_size=1)
    if not isinstance(page.items, list) or not all(isinstance(getattr(i, "name", None), str) for i in page.items):
        raise ValueError("the project list is not a list of projects with names")
    for session in page.items:
        if session.name == name:
            return str(session.id)
    raise ActivityError(f"LangSmith has no tracing project named {name!r} (set --project or {PROJECT_ENV})")


def fetch_runs(
    client: Any,
    *,
    project: str,
    since: datetime,
    until: datetime,
    graph_ids: Sequence[str] = (),
    fields: bool = False,
    page_size: int = PAGE_SIZE,
) -> Iterator[dict[str, Any]]:
    """The chain runs of the project's traces in the window, one query per graph (or one for all)."""
    try:
        pid = project_id(client, project)
    except ActivityError:
        raise
    except NONSENSE as exc:
        raise _bad(client, exc) from None
    selects = SELECTS + (["OUTPUTS"] if fields else [])
    queried: Sequence[str | None] = graph_ids or [None]
    for graph_id in queried:
        try:
            pages = iter(
                client.runs.query_v2(
                    project_ids=[pid],
                    run_type="CHAIN",
                    filter=graph_filter(graph_id),
                    min_start_time=since,
                    max_start_time=until,
                    selects=selects,
                    page_size=page_size,
                ).iter_pages()
            )
        except NONSENSE as exc:
            raise _bad(client, exc) from None
        progress = PageProgress(f"LangSmith at {client.base_url}", "POST /api/v2/runs/query", "runs")
        number = 0
        while True:  # pages with next_cursor
            try:
                page = next(pages)
                runs = [run.model_dump(mode="json") for run in getattr(page, "items", None) or []]
            except StopIteration:
                break
            except NONSENSE as exc:
                raise _bad(client, exc) from None
            number += 1
            progress.advance([str(run.get("id")) for run in runs], f"page {number}")
            for run in runs:
                wrong = answers.check_value(run, answers.LANGSMITH_RUN, "a run")
                if wrong is not None:
                    raise _bad(client, ValueError(wrong))
                yield run


def collect(
    client: Any,
    *,
    project: str,
    window: timedelta,
    until: datetime | None = None,
    graph_ids: Sequence[str] = (),
    known_nodes: Mapping[str, Iterable[str]] | None = None,
    fields: bool = False,
    page_size: int = PAGE_SIZE,
    deadline: Deadline | None = None,
) -> ActivityReport:
    """Query and count, within ``deadline`` (the command's: `OutOfTime` when it passes, naming the request in
    flight); LangSmith errors become `ActivityError` / `LangSmithUnreachable`."""
    import langsmith

    end = until or datetime.now(UTC)
    start = end - window

    def read() -> tuple[int, dict[str, GraphActivity]]:
        return count(
            fetch_runs(client, project=project, since=start, until=end, graph_ids=graph_ids, fields=fields, page_size=page_size),
            graph_ids=graph_ids,
            known_nodes=known_nodes,
            fields=fields,
        )

    last: answers.LastAnswer | None = getattr(client, "_playbook_last_answer", None)
    try:
        if deadline is None:
            scanned, graphs = read()
        else:
            in_flight = (lambda: last.request) if last is not None else (lambda: "its run query")
            scanned, graphs = deadline.call(read, f"LangSmith at {client.base_url}", in_flight)
    except langsmith.APIConnectionError as exc:  # transport errors arrive wrapped in it
        raise LangSmithUnreachable(f"LangSmith at {client.base_url} is unreachable: {exc}") from exc
    except langsmith.APIStatusError as exc:
        raise ActivityError(f"LangSmith refused the query ({exc.status_code}): {exc.message}") from exc
    return ActivityReport(project=project, since=start, until=end, runs_scanned=scanned, graphs=graphs)


# -- render ---------------------------------------------------------------------------


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z") if moment else None


def to_json(report: ActivityReport) -> dict[str, Any]:
    return {
        "activity_result_version": ACTIVITY_RESULT_VERSION,
        "project": report.project,
        "since": _iso(report.since),
        "until": _iso(report.until),
        "runs_scanned": report.runs_scanned,
        "graphs": {
            graph_id: {
                "nodes": {
                    node: {"entries": a.entries, "traces": len(a.traces), "last_seen": _iso(a.last_seen)}
                    for node, a in sorted(activity.nodes.items())
                },
                "fields": dict(sorted(activity.fields.items())),
            }
            for graph_id, activity in sorted(report.graphs.items())
        },
    }


def render_table(report: ActivityReport) -> str:
    header = (
        f"LangSmith project {report.project}: {_iso(report.since)} .. {_iso(report.until)}, {report.runs_scanned} chain runs read"
    )
    lines = [header]
    rows = [("graph", "node", "entries", "traces", "last seen")]
    for graph_id, activity in sorted(report.graphs.items()):
        for node, a in sorted(activity.nodes.items(), key=lambda item: (-item[1].entries, item[0])):
            rows.append((graph_id, node, str(a.entries), str(len(a.traces)), _iso(a.last_seen) or "never"))
    if len(rows) == 1:
        lines.append("no node runs in the window")
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    field_rows = [
        (graph_id, name, str(n))
        for graph_id, activity in sorted(report.graphs.items())
        for name, n in sorted(activity.fields.items())
    ]
    if field_rows:
        field_rows.insert(0, ("graph", "field written", "node runs"))
        fw = [max(len(r[i]) for r in field_rows) for i in range(3)]
        lines.append("")
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, fw, strict=True)).rstrip() for row in field_rows]
    return "\n".join(lines)
