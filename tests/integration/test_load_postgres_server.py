"""The deployment under concurrent load, on its SQLite checkpointer and on PostgreSQL (issue 29).

`bench.load_run` serves the repo's langgraph.json on a fresh `langgraph dev` (auth, routes,
guard as `make run` has them), with the repo's SQLite checkpointer or with
`server.postgres_checkpointer` (``AsyncPostgresSaver``, whose sync methods the
server's wrapper does not have) on the test PostgreSQL server. It creates every run at
once across the four graphs, answers paused tickets while the load runs, and reads every
thread afterwards.

Sized for `make test` (`DEFAULT_RUNS` runs, a couple of paused tickets: well under a minute
per checkpointer); ``LOAD_RUNS=200`` runs the issue's 200 (`make test-load`).
"""

from __future__ import annotations

import os

import pytest

from bench import load_run
from tests.postgres_server import PostgresServer

DEFAULT_RUNS = 48
PAUSED = 2
STUCK_AFTER_S = 120.0
"""A run that has not finished this long after it was created is stuck (a healthy one takes seconds)."""


def _runs() -> int:
    raw = os.environ.get("LOAD_RUNS", "").strip()
    return int(raw) if raw else DEFAULT_RUNS


@pytest.mark.parametrize("checkpointer", load_run.CHECKPOINTERS)
def test_concurrent_runs_across_the_four_graphs_each_finish_exactly_once(
    checkpointer: load_run.Checkpointer, postgres: PostgresServer
) -> None:
    runs = _runs()
    uri = postgres.url if checkpointer == "postgres" else None
    result = load_run.run(checkpointer, runs, paused=PAUSED, postgres_uri=uri, timeout_s=STUCK_AFTER_S)

    summary = {key: result[key] for key in ("wall_s", "runs_per_s", "p50_ms", "p95_ms", "server_peak_rss_mb")}
    print(f"{checkpointer}: {runs} runs + {PAUSED} paused tickets: {summary}")
    counts = {
        key: result[key]
        for key in ("errors", "stuck", "busy_threads", "not_exactly_one_success", "lost_inputs", "duplicated_inputs")
    }
    assert counts == dict.fromkeys(counts, 0), f"{checkpointer}: {counts}; first problems: {result['problems']}"
    assert result["paused_answered_mid_load"] == f"{PAUSED}/{PAUSED}", result["problems"]
    assert result["runs"] == runs


async def test_a_run_deleted_on_postgres_goes_and_the_threads_state_stays(postgres: PostgresServer) -> None:
    """`DELETE /threads/{id}/runs/{run_id}` calls the saver's `adelete_for_runs`, which
    AsyncPostgresSaver lacks: a 500 before. The run goes; its checkpoints stay (the policy's safe side)."""
    from langgraph_sdk import get_client

    with load_run.serve("postgres", postgres_uri=postgres.url) as server:
        client = get_client(url=server.url)
        try:
            thread = await client.threads.create()
            run = await client.runs.create(
                thread["thread_id"], "recycling_guide", input={"messages": [{"role": "user", "content": "페트병 어떻게 버려?"}]}
            )
            await client.runs.join(thread["thread_id"], run["run_id"])
            assert (await client.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"
            before = await client.threads.get_state(thread["thread_id"])

            await client.runs.delete(thread["thread_id"], run["run_id"])

            assert [r["run_id"] for r in await client.runs.list(thread["thread_id"])] == []
            after = await client.threads.get_state(thread["thread_id"])
            assert after["checkpoint"] == before["checkpoint"]
            assert after["values"] == before["values"] and before["values"]
        finally:
            await client.aclose()
