"""The runtime guard on a real `langgraph dev`: a deploy made without the gate.

v1 of tests/fixtures/guard_project (its auth installs `migrations_playbook.guard`)
is served, threads are left in the positions that break, the server stops, v2
code is written over the same folder with its locks (`contract --write` keeps
v1's in the lock history), and the same folder is served again. Each affected
thread's next run is refused with a 409 naming the thread, the finding and the
fix, and its state and history stay as they were; unaffected threads run. With
the guard off, the same resume "succeeds" and loses the step: the silent loss
the guard exists for.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "fixtures" / "guard_project"

V2_EDITS = [
    # desk: the node threads are paused at is renamed (add-then-remove skipped)
    ("desk.py", 'builder.add_node("triage", triage)', 'builder.add_node("assess", triage)'),
    ("desk.py", 'builder.add_edge("intake", "triage")', 'builder.add_edge("intake", "assess")'),
    ("desk.py", 'builder.add_edge("triage", "respond")', 'builder.add_edge("assess", "respond")'),
    # orders: the two @task calls before the interrupt swap places
    (
        "orders.py",
        '    stock = fetch("stock", state["order"]).result()\n    price = fetch("price", state["order"]).result()\n',
        '    price = fetch("price", state["order"]).result()\n    stock = fetch("stock", state["order"]).result()\n',
    ),
    # gated: the node upstream of the static breakpoint is renamed
    ("gated.py", 'builder.add_node("prepare", prepare)', 'builder.add_node("prepare_v2", prepare)'),
    ("gated.py", 'builder.add_edge(START, "prepare")', 'builder.add_edge(START, "prepare_v2")'),
    ("gated.py", 'builder.add_edge("prepare", "review")', 'builder.add_edge("prepare_v2", "review")'),
    # claims: a required field old threads lack (pydantic enforces it on the next step)
    (
        "claims.py",
        '    settled: bool = False\n    """Written by settle."""',
        '    settled: bool = False\n    """Written by settle."""\n    reviewer: str\n    """New in v2, required."""',
    ),
]


@dataclass
class Deployed:
    url: str
    threads: dict[str, str]
    """position -> thread id."""


def _playbook(*args: str) -> None:
    result = subprocess.run([sys.executable, "-m", "migrations_playbook", *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def _write_locks(project: Path, records: Path) -> None:
    _playbook(
        "contract",
        "--config",
        str(project / "langgraph.json"),
        "--write",
        "--contracts-dir",
        str(project / "contracts"),
        "--records-dir",
        str(records),
    )


async def _populate(url: str) -> dict[str, str]:
    client = get_client(url=url)

    async def start(position: str, graph: str, payload: dict[str, Any]) -> tuple[str, str]:
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], graph, input=payload)
        return position, thread["thread_id"]

    threads = dict(
        await asyncio.gather(
            start("desk_at_triage", "desk", {"request": "refund"}),
            start("desk_idle", "desk", {"request": "reset"}),
            start("orders_at_gather", "orders", {"order": "O-1"}),
            start("gated_at_review", "gated", {"doc": "draft"}),
            start("claims_at_approve", "claims", {"claim": "C-1", "amount": 5}),
        )
    )
    await client.runs.wait(threads["desk_idle"], "desk", command={"resume": "yes"})
    await client.aclose()
    return threads


def _deploy_v2(project: Path, records: Path) -> None:
    for file, old, new in V2_EDITS:
        path = project / file
        text = path.read_text()
        assert old in text, f"fixture drift: {old!r} not in {file}"
        path.write_text(text.replace(old, new))
    _write_locks(project, records)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    root = tmp_path_factory.mktemp("guard")
    project = root / "project"
    shutil.copytree(PROJECT, project)
    records = root / "records"
    _write_locks(project, records)
    with DevServer(project / "langgraph.json", project) as server:
        threads = asyncio.run(_populate(server.url))
    _deploy_v2(project, records)
    yield project, root, threads


@pytest.fixture(scope="module")
def v2(project: tuple[Path, Path, dict[str, str]]) -> Iterator[Deployed]:
    folder, _, threads = project
    with DevServer(folder / "langgraph.json", folder) as server:
        yield Deployed(url=server.url, threads=threads)


def _post_run(url: str, thread_id: str, graph: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/threads/{thread_id}/runs/wait", json={"assistant_id": graph, **body}, timeout=60)


def _thread_record(url: str, thread_id: str) -> tuple[Any, Any]:
    state = httpx.get(f"{url}/threads/{thread_id}/state", timeout=30).json()
    history = httpx.post(f"{url}/threads/{thread_id}/history", json={"limit": 50}, timeout=30).json()
    return state, history


@pytest.mark.parametrize(
    ("position", "graph", "body", "code", "where"),
    [
        pytest.param(
            "desk_at_triage", "desk", {"command": {"resume": "yes"}}, "NODE_MISSING", "node 'triage'", id="renamed-paused-node"
        ),
        pytest.param(
            "orders_at_gather",
            "orders",
            {"command": {"resume": "ok"}},
            "CALL_ORDER_CHANGED",
            "node 'gather'",
            id="reordered-task-before-resume-point",
        ),
        pytest.param(
            "gated_at_review", "gated", {"input": None}, "BREAKPOINT_STUCK", "node 'review'", id="stuck-static-breakpoint"
        ),
        pytest.param(
            "claims_at_approve",
            "claims",
            {"command": {"resume": "yes"}},
            "FIELD_REQUIRED_MISSING",
            "field 'reviewer'",
            id="required-field-old-threads-lack",
        ),
    ],
)
def test_a_run_the_running_code_cannot_do_right_is_refused_and_changes_nothing(
    v2: Deployed, position: str, graph: str, body: dict[str, Any], code: str, where: str
) -> None:
    thread_id = v2.threads[position]
    before = _thread_record(v2.url, thread_id)
    response = _post_run(v2.url, thread_id, graph, body)
    assert response.status_code == 409, response.text
    detail = response.json()["detail"]
    assert thread_id in detail and code in detail and where in detail, detail
    assert "Fix:" in detail and "playbook migrate" in detail
    assert _thread_record(v2.url, thread_id) == before


def test_an_unaffected_thread_runs_normally(v2: Deployed) -> None:
    response = _post_run(v2.url, v2.threads["desk_idle"], "desk", {"input": {"request": "again"}})
    assert response.status_code == 200, response.text
    state = httpx.get(f"{v2.url}/threads/{v2.threads['desk_idle']}/state", timeout=30).json()
    assert state["next"] == ["assess"]  # the new turn runs on the v2 graph and pauses at its renamed node


def test_a_new_thread_is_never_refused_and_is_stamped_with_the_running_code(v2: Deployed) -> None:
    thread = httpx.post(f"{v2.url}/threads", json={}, timeout=30).json()
    response = _post_run(v2.url, thread["thread_id"], "claims", {"input": {"claim": "C-9", "reviewer": "kim"}})
    assert response.status_code == 200, response.text
    state = httpx.get(f"{v2.url}/threads/{thread['thread_id']}/state", timeout=30).json()
    assert state["metadata"]["playbook_contract"].startswith("sha256:")


def test_without_the_guard_the_same_resume_silently_loses_the_step(
    project: tuple[Path, Path, dict[str, str]], v2: Deployed
) -> None:
    """The failure the guard prevents, on a copy of the same threads: 200, success, respond never ran."""
    folder, root, threads = project
    copy = root / "unguarded"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("server.log"))
    with DevServer(copy / "langgraph.json", copy, env={"PLAYBOOK_GUARD": "off"}) as server:
        response = _post_run(server.url, threads["desk_at_triage"], "desk", {"command": {"resume": "yes"}})
        assert response.status_code == 200, response.text
        state = httpx.get(f"{server.url}/threads/{threads['desk_at_triage']}/state", timeout=30).json()
    assert state["next"] == [] and "response" not in state["values"]


def test_inflight_counts_the_threads_the_running_code_would_refuse(
    project: tuple[Path, Path, dict[str, str]], v2: Deployed
) -> None:
    folder, _, threads = project
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrations_playbook",
            "inflight",
            "--live",
            v2.url,
            "--running",
            str(folder / "langgraph.json"),
            "--lock-history",
            str(folder / "contracts"),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    refused = json.loads(result.stdout)["refused"]
    expected = {
        "desk": ("NODE_MISSING", "desk_at_triage"),
        "orders": ("CALL_ORDER_CHANGED", "orders_at_gather"),
        "gated": ("BREAKPOINT_STUCK", "gated_at_review"),
        "claims": ("FIELD_REQUIRED_MISSING", "claims_at_approve"),
    }
    for graph_id, (code, position) in expected.items():
        assert refused[graph_id]["by_code"] == {code: 1}, refused[graph_id]
        assert refused[graph_id]["thread_ids"] == [threads[position]]
