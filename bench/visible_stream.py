"""Time to first visible token vs first raw token, and the filter's cost per event.

    python -m bench.visible_stream [--runs 10]

Starts its own `langgraph dev` (offline model) in a temporary folder, asks
`campus_supervisor` a library question (transferred) and a cafeteria question
(answered by the supervisor) ``--runs`` times each over ``runs.stream`` with
`graphs.common.visible`'s stream settings, and prints, from the moment the run
is requested:

* ``raw``: the first model token of any kind (the supervisor's preamble);
* ``visible``: the first token the filter releases;
* ``end``: the end of the stream;

then the same first-visible time through the SSE route. Last, the filter's
own cost: every part of the event dumps in tests/fixtures/campus_events/
replayed through `VisibleTextFilter`, in microseconds per part.
Figures only: nothing is asserted. Queue latency of `langgraph dev` (about
0.5-1 s before a run starts) is in every server figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client

from graphs.common.visible import VisibleTextFilter, open_run_stream
from migrations_playbook.devserver import DevServer

REPO_ROOT = Path(__file__).resolve().parents[1]
DUMPS = REPO_ROOT / "tests" / "fixtures" / "campus_events"
GRAPH = "campus_supervisor"
QUESTIONS = {"library": "3층 좌석 남았어?", "cafeteria": "오늘 학식 메뉴 뭐야?"}


async def _one_run(client: Any, text: str) -> dict[str, float]:
    thread = await client.threads.create()
    text_filter = VisibleTextFilter()
    marks: dict[str, float] = {}
    start = time.perf_counter()
    async for part in open_run_stream(
        client, thread["thread_id"], GRAPH, input={"messages": [{"role": "user", "content": text}]}
    ):
        now = time.perf_counter() - start
        data = part.data
        if part.event.startswith("messages") and data[0].get("type") == "AIMessageChunk" and data[0].get("content"):
            marks.setdefault("raw", now)
        if text_filter.feed(part.event, data):
            marks.setdefault("visible", now)
    marks["end"] = time.perf_counter() - start
    return marks


async def _one_sse(url: str, text: str) -> float:
    start = time.perf_counter()
    async with (
        httpx.AsyncClient(base_url=url, timeout=60) as http,
        http.stream("POST", f"/visible/{GRAPH}/stream", json={"message": text}) as response,
    ):
        async for line in response.aiter_lines():
            if line == "event: token":
                return time.perf_counter() - start
    return float("nan")


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:7.1f} ms  (min {min(values) * 1000:7.1f}, max {max(values) * 1000:7.1f})"


async def server_figures(url: str, runs: int) -> None:
    client = get_client(url=url)
    try:
        for label, text in QUESTIONS.items():
            await _one_run(client, text)  # warm-up: imports, first model build
            results = [await _one_run(client, text) for _ in range(runs)]
            print(f"{label} ({text}), {runs} runs over runs.stream:")
            for key in ("raw", "visible", "end"):
                print(f"  first {key:<8}" if key != "end" else "  stream end    ", _ms([r[key] for r in results]))
            gaps = [r["visible"] - r["raw"] for r in results]
            print("  visible - raw  ", _ms(gaps))
            sse = [await _one_sse(url, text) for _ in range(runs)]
            print("  SSE route, first token event", _ms(sse))
    finally:
        await client.aclose()


def filter_cost(repeat: int = 200) -> None:
    turns = [t for path in sorted(DUMPS.glob("*.json")) for t in json.loads(path.read_text())["turns"]]
    parts = [(p["event"], p["data"]) for t in turns for p in t["parts"]]
    start = time.perf_counter()
    for _ in range(repeat):
        for turn in turns:
            text_filter = VisibleTextFilter()
            for part in turn["parts"]:
                text_filter.feed(part["event"], part["data"])
            text_filter.finish()
    elapsed = time.perf_counter() - start
    print(f"filter cost: {elapsed / (repeat * len(parts)) * 1e6:.2f} us per part "
          f"({len(parts)} parts from {len(turns)} recorded turns, x{repeat})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-visible-") as workdir,
        DevServer(REPO_ROOT / "langgraph.json", workdir, env={"MODEL": "offline"}) as server,
    ):
        asyncio.run(server_figures(server.url, args.runs))
    filter_cost()


if __name__ == "__main__":
    main()
