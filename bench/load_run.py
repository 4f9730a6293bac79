"""200 concurrent runs across the four graphs on one fresh `langgraph dev`, then every thread checked.

    python -m bench.load_run [--runs 200]

Creates the threads first, then starts every run at once (`runs.wait`, one client), and
afterwards reads each thread: exactly one run and it succeeded, the user's message stored
exactly once (lost and duplicated inputs are counted). Prints one JSON line; asserts
nothing. Not part of `python -m bench` (the issue 12 closing note quotes it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client

from bench.harness import REPO_ROOT
from migrations_playbook.sources.devserver import DevServer

TEXTS = {
    "ticket_triage": "Please refund invoice {i}, charged twice",
    "fan_room": "오늘 경기 어땠어? {i}",
    "recycling_guide": "페트병은 어떻게 버려요? {i}",
    "campus_supervisor": "도서관 몇 시까지 열어요? {i}",
}
CONTEXTS: dict[str, dict[str, str]] = {"fan_room": {"team_name": "LG"}}


async def load(url: str, runs: int) -> dict[str, Any]:
    client = get_client(url=url)
    jobs = []
    for i in range(runs):
        graph = list(TEXTS)[i % len(TEXTS)]
        thread = await client.threads.create()
        jobs.append((graph, thread["thread_id"], TEXTS[graph].format(i=i)))

    async def one(graph: str, thread_id: str, text: str) -> str | None:
        try:
            await client.runs.wait(
                thread_id,
                graph,
                input={"messages": [{"role": "user", "content": text}]},
                **({"context": CONTEXTS[graph]} if graph in CONTEXTS else {}),
            )
        except Exception as exc:  # noqa: BLE001 - counted and shown, the run's failure is the figure
            return f"{graph} {thread_id}: {type(exc).__name__}: {str(exc)[:160]}"
        return None

    started = time.perf_counter()
    errors = [e for e in await asyncio.gather(*(one(*job) for job in jobs)) if e]
    wall = time.perf_counter() - started
    lost = duplicated = 0
    problems = list(errors)
    for graph, thread_id, text in jobs:
        found = await client.runs.list(thread_id, limit=10)
        state = await client.threads.get_state(thread_id)
        copies = [m for m in state["values"].get("messages", []) if m.get("type") == "human" and text in str(m.get("content"))]
        if [r["status"] for r in found] != ["success"]:
            problems.append(f"{graph} {thread_id}: runs {[r['status'] for r in found]}")
        lost += not copies
        duplicated += len(copies) > 1
    await client.aclose()
    return {
        "runs": runs,
        "wall_s": round(wall, 1),
        "errors": len(errors),
        "lost_inputs": lost,
        "duplicated_inputs": duplicated,
        "problems": problems[:5],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load_run", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="bench-load-") as folder,
        DevServer(REPO_ROOT / "langgraph.json", Path(folder)) as server,
    ):
        print(json.dumps(asyncio.run(load(server.url, args.runs)), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
