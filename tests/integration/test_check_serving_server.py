"""`playbook check` against a deployment that is serving, holding runs it has not started (issue 39's bench).

A user runs `check` on production while it serves: threads at mixed positions on this repo's four graphs, and on
one thread of each graph a run delayed with ``after_seconds`` (a waiting ticket's approval, a next turn on the
others; `fan_room`'s with its run context), queued on the live server and not yet begun. On identical code the
verdict must be pass with no unproven thread, every held run driven on every side, and the live server's runs
left as they were. At 3,780 threads this check had listed threads as unproven on identical code: the staging
copies ran the runs only this server's records journal held (the hold had read the pickle alone), and a held
`fan_room` run was sent both its context and its configurable, which the API refuses.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from bench.shadow_run import APPROVE, SHADOW_ENV, populate, thread_plan
from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.playbook_cli import run_check

pytestmark = pytest.mark.integration

THREADS = 12
"""Three threads per graph (`thread_plan`: a ticket waits at its approval or is finished, chats after 1-3 turns)."""
DELAY_S = 3600
"""The held runs' delay: none of them starts while the test runs."""


async def _hold_a_run_per_graph(url: str) -> dict[str, str]:
    """On one thread of each graph, a run delayed by `DELAY_S` (a waiting ticket gets its approval). Run id ->
    graph id."""
    client = get_client(url=url)
    held: dict[str, str] = {}
    try:
        for i in range(4):
            plan = thread_plan(i)
            (thread,) = await client.threads.search(metadata={"graph_id": plan.graph_id}, limit=1)
            request: dict[str, Any] = dict(plan.runs[0])
            if thread["status"] == "interrupted":
                request = {"command": {"resume": APPROVE}}
            run = await client.runs.create(
                thread["thread_id"],
                plan.graph_id,
                context=dict(plan.context or {}) or None,
                after_seconds=DELAY_S,
                **request,
            )
            held[run["run_id"]] = plan.graph_id
    finally:
        await client.aclose()
    return held


async def _pending(url: str, run_ids: set[str]) -> set[str]:
    client = get_client(url=url)
    try:
        found = set()
        for thread in await client.threads.search(limit=100):
            found |= {r["run_id"] for r in await client.runs.list(thread["thread_id"], status="pending")}
    finally:
        await client.aclose()
    return found & run_ids


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevServer, dict[str, str]]]:
    workdir = tmp_path_factory.mktemp("serving")
    with DevServer(REPO_ROOT / "langgraph.json", workdir, env=SHADOW_ENV) as server:
        asyncio.run(populate(server.url, 0, THREADS))
        yield server, asyncio.run(_hold_a_run_per_graph(server.url))


def test_identity_on_a_serving_deployment_passes_and_drives_every_held_run(serving: tuple[DevServer, dict[str, str]]) -> None:
    server, held = serving
    code, report, stderr = run_check(server.url, Path(server.workdir), REPO_ROOT, REPO_ROOT / "langgraph.json", env=SHADOW_ENV)
    assert code == 0, json.dumps([report.get("findings"), report.get("unproven"), stderr[-3000:]])
    assert (report["verdict"], report["unproven"]) == ("pass", []), json.dumps(report, indent=1)[:4000]
    assert [f for f in report["findings"] if f["severity"] == "block"] == []
    driven = next(n for n in report["notes"] if n.startswith("shadow: held runs driven on every side"))
    assert f"{len(held)} of {len(held)} sendable held run(s)" in driven, driven
    assert all(run_id in driven for run_id in held), driven
    assert asyncio.run(_pending(server.url, set(held))) == set(held)  # the live server still holds them, unrun


def test_the_held_runs_are_in_the_servers_journal_not_only_its_pickle(serving: tuple[DevServer, dict[str, str]]) -> None:
    """What the check above had to hold: the runs the server journaled since its last pickle of its records (read
    in a process of its own, with the runtime's settings, as the hold reads them)."""
    from migrations_playbook.staging.held import JOURNAL_FILE, RUNTIME_SETTINGS

    server, held = serving
    program = (
        "import json, sys; from pathlib import Path; from migrations_playbook.staging.held import journal_rows\n"
        "rows = journal_rows(Path(sys.argv[1]))\n"
        "print(json.dumps(sorted(str(r['run_id']) for _, _, runs in rows for r in runs if r.get('status') == 'pending')))"
    )
    journal = Path(server.workdir) / ".langgraph_api" / JOURNAL_FILE
    done = subprocess.run(
        [sys.executable, "-c", program, str(journal)],
        capture_output=True,
        text=True,
        env={**os.environ, **RUNTIME_SETTINGS},
        cwd=REPO_ROOT,
        check=True,
    )
    assert set(json.loads(done.stdout)) >= set(held)
