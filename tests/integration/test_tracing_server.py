"""What LangSmith receives from a real `langgraph dev`: run metadata and the supervisor tag.

LangSmith's cloud cannot be reached from here; the server traces to the loopback
ingestion stand-in `tests/langsmith_recorder.py` (``LANGSMITH_ENDPOINT``), which
records exactly what the server's tracer posts.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.langsmith_recorder import TraceRecorder

CODE_VERSION = "test-sha-1234"
TURNS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("ticket_triage", "요금이 두 번 청구됐어요. 환불해 주세요", None),
    ("recycling_guide", "페트병 어떻게 버려?", None),
    ("fan_room", "LG 어때?", {"team_name": "LG"}),
    ("campus_supervisor", "학식 메뉴 뭐야?", None),
]
FLOW_VERSIONS = {graph_id: importlib.import_module(f"graphs.{graph_id}.state").CURRENT_FLOW_VERSION for graph_id, _, _ in TURNS}
"""What a new thread of each graph is stamped with (each graph's `CURRENT_FLOW_VERSION`)."""


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every graph runs one turn on a server tracing to the recorder; yields the runs as recorded."""
    with TraceRecorder() as recorder:
        env = {
            "MODEL": "offline",
            "LANGSMITH_TRACING": "true",
            "LANGSMITH_ENDPOINT": recorder.url,
            "LANGSMITH_API_KEY": "lsv2-recorder-stand-in",
            "LANGSMITH_PROJECT": "versioned-graphs-test",
            "CODE_VERSION": CODE_VERSION,
        }
        with DevServer(REPO_ROOT / "langgraph.json", tmp_path_factory.mktemp("traced"), env=env) as server:

            async def run_all() -> dict[str, dict]:
                client = get_client(url=server.url)
                api_runs = {}
                for graph_id, text, context in TURNS:
                    thread_id = (await client.threads.create())["thread_id"]
                    run = await client.runs.create(
                        thread_id, graph_id, input={"messages": [{"role": "user", "content": text}]}, context=context
                    )
                    await client.runs.join(thread_id, run["run_id"])
                    api_runs[graph_id] = await client.runs.get(thread_id, run["run_id"])
                await client.aclose()
                return api_runs

            api_runs = asyncio.run(run_all())
            recorded = recorder.wait_for(
                lambda rs: sum(1 for r in rs if r.get("parent_run_id") is None and r.get("end_time")) >= len(TURNS)
            )
    yield {"api": api_runs, "recorded": recorded}


def _metadata(run: dict[str, Any]) -> dict[str, Any]:
    return (run.get("extra") or {}).get("metadata") or {}


@pytest.mark.parametrize("graph_id", list(FLOW_VERSIONS))
def test_every_run_carries_graph_flow_and_code_version(traced: dict[str, Any], graph_id: str) -> None:
    expected = {"graph_id": graph_id, "flow_version": FLOW_VERSIONS[graph_id], "code_version": CODE_VERSION}
    api_metadata = traced["api"][graph_id]["metadata"]
    assert {k: api_metadata.get(k) for k in expected} == expected
    roots = [r for r in traced["recorded"] if r.get("parent_run_id") is None and _metadata(r).get("graph_id") == graph_id]
    assert len(roots) == 1
    assert {k: _metadata(roots[0]).get(k) for k in expected} == expected
    children = [r for r in traced["recorded"] if r.get("trace_id") == roots[0]["trace_id"] and r is not roots[0]]
    assert children and all(_metadata(r).get("graph_id") == graph_id for r in children), "child runs inherit it"


def test_the_supervisors_model_runs_carry_the_supervisor_llm_tag(traced: dict[str, Any]) -> None:
    llm_runs = [r for r in traced["recorded"] if r.get("run_type") == "llm"]
    tagged = [r for r in llm_runs if "supervisor_llm" in (r.get("tags") or [])]
    assert tagged, "the campus supervisor's model ran under its tag"
    assert {_metadata(r)["graph_id"] for r in tagged} == {"campus_supervisor"}
    assert all(_metadata(r)["langgraph_checkpoint_ns"].startswith("supervisor:") for r in tagged)
    untagged_graphs = {_metadata(r)["graph_id"] for r in llm_runs if r not in tagged}
    assert {"ticket_triage", "recycling_guide", "fan_room"} <= untagged_graphs
