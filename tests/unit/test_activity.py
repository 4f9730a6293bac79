"""`playbook activity` against a recorded-response stand-in for LangSmith's query API.

LangSmith's cloud cannot be reached from here. `QueryStandIn` is an
``MockTransport`` handler (of the HTTP backend langsmith's generated client
uses) that plays LangSmith's two endpoints the
command uses, ``GET /api/v2/sessions`` and ``POST /api/v2/runs/query``, over
runs *recorded* from this repo's real server (tests/fixtures/langsmith/runs.json,
made by tests/fixtures/langsmith/record_runs.py through the loopback ingestion
stand-in). It applies the query's project, run type, time window, filter
(only the two expressions `activity.graph_filter` writes; anything else is a
400, so a changed query fails here) and cursor paging, as the service does.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langsmith import Langsmith

try:  # the HTTP backend langsmith's generated client uses: httpx2 when installed, else httpx
    import httpx2 as httpx
except ModuleNotFoundError:  # pragma: no cover - depends on the installed set
    import httpx  # type: ignore[no-redef]  # same API, the fallback langsmith itself uses

from migrations_playbook import cli
from migrations_playbook.sources import langsmith as activity

RECORDED = json.loads((Path(__file__).parents[1] / "fixtures" / "langsmith" / "runs.json").read_text())
PROJECT_ID = "8b7f1b8e-0000-4000-8000-00000000c0de"
UNTIL = (datetime.fromisoformat(RECORDED["recorded_at"]) + timedelta(minutes=5)).isoformat()
_ONE_GRAPH = re.compile(r'^and\(eq\(metadata_key, "graph_id"\), eq\(metadata_value, "([^"\\]*)"\)\)$')


class QueryStandIn:
    """Recorded-response stand-in for LangSmith's v2 sessions and runs-query endpoints."""

    def __init__(self, runs: list[dict[str, Any]], *, project: str = RECORDED["project"], status: int = 200) -> None:
        self.runs = runs
        self.project = project
        self.status = status
        self.queries: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("x-api-key") != "lsv2-test":
            return httpx.Response(401, json={"detail": "Invalid token"})
        if self.status != 200:
            return httpx.Response(self.status, json={"detail": "stand-in failure"})
        if request.method == "GET" and request.url.path == "/api/v2/sessions":
            name = request.url.params.get("name")
            items = [{"id": PROJECT_ID, "name": name}] if name == self.project else []
            return httpx.Response(200, json={"items": items, "next_cursor": None})
        if request.method == "POST" and request.url.path == "/api/v2/runs/query":
            return self._query(json.loads(request.content))
        return httpx.Response(404, json={"detail": f"no stand-in for {request.method} {request.url.path}"})

    def _query(self, body: dict[str, Any]) -> httpx.Response:
        self.queries.append(body)
        if body.get("project_ids") != [PROJECT_ID]:
            return httpx.Response(404, json={"detail": "project not found"})
        expression = body.get("filter")
        match = _ONE_GRAPH.match(expression or "")
        if expression != 'eq(metadata_key, "graph_id")' and match is None:
            return httpx.Response(400, json={"detail": f"stand-in does not know the filter {expression!r}"})

        def keep(run: dict[str, Any]) -> bool:
            graph_id = run["metadata"].get("graph_id")
            return graph_id is not None and (match is None or graph_id == match.group(1))

        low = datetime.fromisoformat(body["min_start_time"])
        high = datetime.fromisoformat(body["max_start_time"])
        matching = [
            run
            for run in self.runs
            if (body.get("run_type") is None or run["run_type"] == body["run_type"])
            and low <= datetime.fromisoformat(run["start_time"]) <= high
            and keep(run)
        ]
        start = int(body.get("cursor") or 0)
        size = body.get("page_size") or 100
        page = matching[start : start + size]
        fields = {s.lower() for s in body.get("selects") or ["ID"]}
        items = [{k: v for k, v in run.items() if k in fields} for run in page]
        more = start + size < len(matching)
        return httpx.Response(200, json={"items": items, "next_cursor": str(start + size) if more else None})


def _client(stand_in: QueryStandIn, key: str = "lsv2-test") -> Langsmith:
    return Langsmith(
        api_key=key,
        base_url="https://api.smith.langchain.com",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(stand_in)),
    )


def _collect(stand_in: QueryStandIn, **kwargs: Any) -> activity.ActivityReport:
    return activity.collect(
        _client(stand_in),
        project=RECORDED["project"],
        window=timedelta(days=7),
        until=datetime.fromisoformat(UNTIL),
        **kwargs,
    )


def test_node_entries_are_counted_per_graph_from_recorded_traces() -> None:
    report = _collect(QueryStandIn(RECORDED["runs"]))
    nodes = {g: {n: a.entries for n, a in ga.nodes.items()} for g, ga in report.graphs.items()}
    assert nodes["ticket_triage"] == {"intake": 1, "triage": 2, "policy_check": 1, "respond": 1}
    assert nodes["recycling_guide"] == {"intake": 2, "classify": 2, "lookup": 2, "compose": 2}
    assert nodes["fan_room"] == {"intake": 1, "draft": 1, "tone": 1, "attribute": 1}
    assert nodes["campus_supervisor"]["supervisor"] == 2, "the supervisor node, not the agent run inside it"
    assert nodes["campus_supervisor"]["supervisor:model"] == 4, "subgraph nodes by path"
    assert (
        report.graphs["ticket_triage"].nodes["triage"].traces and len(report.graphs["ticket_triage"].nodes["triage"].traces) == 2
    )


def test_one_graph_is_queried_with_a_metadata_filter_and_paged() -> None:
    stand_in = QueryStandIn(RECORDED["runs"])
    report = activity.collect(
        _client(stand_in),
        project=RECORDED["project"],
        window=timedelta(days=7),
        until=datetime.fromisoformat(UNTIL),
        graph_ids=["campus_supervisor"],
    )
    assert set(report.graphs) == {"campus_supervisor"}
    (query,) = {json.dumps({k: v for k, v in q.items() if k != "cursor"}, sort_keys=True) for q in stand_in.queries}
    sent = json.loads(query)
    assert sent["filter"] == 'and(eq(metadata_key, "graph_id"), eq(metadata_value, "campus_supervisor"))'
    assert sent["run_type"] == "CHAIN"
    assert "METADATA" in sent["selects"] and "TAGS" in sent["selects"]


def test_paging_follows_next_cursor_until_the_last_page() -> None:
    stand_in = QueryStandIn(RECORDED["runs"])
    paged = _collect(stand_in, page_size=7)
    whole = _collect(QueryStandIn(RECORDED["runs"]))
    assert len(stand_in.queries) > 2
    assert activity.to_json(paged)["graphs"] == activity.to_json(whole)["graphs"]


def test_known_nodes_without_entries_are_listed_as_never_reached() -> None:
    report = _collect(QueryStandIn(RECORDED["runs"]), known_nodes={"recycling_guide": ["intake", "recap", "chat"]})
    guide = report.graphs["recycling_guide"].nodes
    assert guide["recap"].entries == 0 and guide["chat"].entries == 0
    assert "never" in activity.render_table(report)


def test_runs_outside_the_window_are_not_counted() -> None:
    report = activity.collect(
        _client(QueryStandIn(RECORDED["runs"])),
        project=RECORDED["project"],
        window=timedelta(days=7),
        until=datetime.fromisoformat(RECORDED["recorded_at"]) - timedelta(days=1),
    )
    assert report.runs_scanned == 0 and report.graphs == {}


def test_fields_written_are_counted_from_node_outputs() -> None:
    report = _collect(QueryStandIn(RECORDED["runs"]), fields=True)
    assert report.graphs["ticket_triage"].fields["sla_hours"] == 1
    assert report.graphs["ticket_triage"].fields["current_step"] == 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("7d", timedelta(days=7), id="days"),
        pytest.param("24h", timedelta(hours=24), id="hours"),
        pytest.param("90m", timedelta(minutes=90), id="minutes"),
        pytest.param("2w", timedelta(weeks=2), id="weeks"),
    ],
)
def test_since_reads_a_window_length(text: str, expected: timedelta) -> None:
    assert activity.parse_since(text) == expected


@pytest.mark.parametrize("text", ["7", "0d", "seven days", "-1d", "3y"])
def test_a_malformed_since_is_a_usage_error(text: str) -> None:
    with pytest.raises(activity.ActivityError, match="--since"):
        activity.parse_since(text)


@pytest.mark.parametrize(
    ("run", "path"),
    [
        pytest.param(
            {
                "name": "triage",
                "tags": ["graph:step:2"],
                "metadata": {"langgraph_node": "triage", "langgraph_checkpoint_ns": "triage:x"},
            },
            "triage",
            id="node",
        ),
        pytest.param(
            {
                "name": "model",
                "tags": ["graph:step:1"],
                "metadata": {"langgraph_node": "model", "langgraph_checkpoint_ns": "supervisor:a|model:b"},
            },
            "supervisor:model",
            id="subgraph-node",
        ),
        pytest.param(
            {"name": "OfflineChatModel", "tags": ["seq:step:1"], "metadata": {"langgraph_node": "model"}},
            None,
            id="model-call-in-node",
        ),
        pytest.param(
            {"name": "supervisor", "tags": ["seq:step:1", "supervisor_llm"], "metadata": {"langgraph_node": "supervisor"}},
            None,
            id="agent-named-like-its-node",
        ),
        pytest.param({"name": "ticket_triage", "tags": [], "metadata": {}}, None, id="root-run"),
    ],
)
def test_only_the_run_of_a_node_execution_is_an_entry(run: dict, path: str | None) -> None:
    assert activity.node_path(run) == path


# -- the CLI -------------------------------------------------------------------------


def _run_cli(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stand_in: QueryStandIn,
    *argv: str,
    key: str = "lsv2-test",
) -> tuple[int, str, str]:
    monkeypatch.setattr(activity, "make_client", lambda **_: _client(stand_in, key))
    code = cli.main(["activity", "--until", UNTIL, "--project", RECORDED["project"], *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_prints_json_with_a_result_version(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run_cli(
        monkeypatch, capsys, QueryStandIn(RECORDED["runs"]), "--since", "7d", "--graph", "fan_room", "--format", "json"
    )
    assert code == cli.EXIT_PASS
    data = json.loads(out)
    assert data["activity_result_version"] == "1"
    assert set(data["graphs"]) == {"fan_room"}
    assert data["graphs"]["fan_room"]["nodes"]["attribute"]["entries"] == 1


@pytest.fixture
def restored_modules() -> Iterator[None]:
    """`--config` loads the graphs as the gate's candidate loader does, re-importing their
    package; put the modules other tests hold back afterwards."""
    saved = dict(sys.modules)
    yield
    for name in [n for n in sys.modules if n not in saved]:
        del sys.modules[name]
    sys.modules.update(saved)


@pytest.mark.usefixtures("restored_modules")
def test_cli_lists_unreached_nodes_of_the_config(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], repo_root: Path
) -> None:
    code, out, _ = _run_cli(
        monkeypatch,
        capsys,
        QueryStandIn(RECORDED["runs"]),
        "--graph",
        "recycling_guide",
        "--config",
        str(repo_root / "langgraph.json"),
    )
    assert code == cli.EXIT_PASS
    rows = {line.split()[1]: line.split()[2] for line in out.splitlines()[2:] if line.startswith("recycling_guide")}
    assert rows["lookup"] == "2" and rows["recap"] == "0" and rows["chat"] == "0"


@pytest.mark.parametrize(
    ("stand_in", "key", "argv", "code", "message"),
    [
        pytest.param(QueryStandIn(RECORDED["runs"]), "wrong", (), cli.EXIT_USAGE, "refused the query (401)", id="bad-key"),
        pytest.param(
            QueryStandIn(RECORDED["runs"], project="other"),
            "lsv2-test",
            (),
            cli.EXIT_USAGE,
            "no tracing project named",
            id="unknown-project",
        ),
        pytest.param(
            QueryStandIn(RECORDED["runs"]),
            "lsv2-test",
            ("--since", "soon"),
            cli.EXIT_USAGE,
            "--since must look like",
            id="bad-since",
        ),
        pytest.param(
            QueryStandIn(RECORDED["runs"], status=503),
            "lsv2-test",
            (),
            cli.EXIT_USAGE,
            "refused the query (503)",
            id="service-error",
        ),
    ],
)
def test_cli_turns_langsmith_errors_into_messages(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stand_in: QueryStandIn,
    key: str,
    argv: tuple[str, ...],
    code: int,
    message: str,
) -> None:
    got, out, err = _run_cli(monkeypatch, capsys, stand_in, *argv, key=key)
    assert got == code
    assert message in err
    assert "Traceback" not in err and out == ""


def test_cli_says_langsmith_is_unreachable_with_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("stand-in: no route to LangSmith", request=request)

    monkeypatch.setattr(
        activity,
        "make_client",
        lambda **_: Langsmith(
            api_key="k",
            base_url="https://api.smith.langchain.com",
            max_retries=0,
            http_client=httpx.Client(transport=httpx.MockTransport(unreachable)),
        ),
    )
    assert cli.main(["activity", "--project", "p"]) == cli.EXIT_UNREACHABLE
    assert "unreachable" in capsys.readouterr().err


def test_cli_without_an_api_key_says_which_variable_to_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(activity.API_KEY_ENV, raising=False)
    assert cli.main(["activity"]) == cli.EXIT_USAGE
    assert activity.API_KEY_ENV in capsys.readouterr().err
