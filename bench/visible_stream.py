"""Time to first visible token vs the raw token it waits for, and the filter's cost per event.

    python -m bench.visible_stream [--runs 10] [--pacing-ms 20]

Starts its own `langgraph dev` in a temporary folder, with the offline model paced
like a hosted one (``OFFLINE_TOKEN_DELAY_MS``, default 20 ms before every token;
``--pacing-ms 0`` for the unpaced model), asks `campus_supervisor` a library
question (routed: the supervisor transfers it) and a cafeteria question (direct:
the supervisor answers) ``--runs`` times each over ``runs.stream`` with
`graphs.common.visible`'s stream settings, one client, and marks, from the moment
the run is requested:

* ``raw``: the first model text token of any kind;
* ``answer_raw``: the first raw token of the answer the user sees (the last model
  message that ended with text, no tool call, and is not routing narration);
* ``answer_end``: that message's last chunk;
* ``visible``: the first token the filter releases;
* ``end``: the end of the stream;

then the first token event of the SSE route (``POST /visible/{graph}/stream``).
Issue 15's target: ``visible`` at most 50 ms after ``answer_raw``, routed and direct.
Last, the filter's own CPU cost: every part of the event dumps in
tests/fixtures/campus_events/ replayed through `VisibleTextFilter`, against
``orjson.loads`` of the same parts (what the SDK pays to decode each event anyway).
The server's queue wait (about 1 s per run here, see `bench.floor_probe`) is
in every server figure. Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from langgraph_sdk import get_client

from bench.harness import (
    REPO_ROOT,
    Figure,
    bench_server,
    percentile,
    render_table,
    repo_graphs,
)
from graphs.common.visible import (
    SUPERVISOR_TAG,
    VisibleTextFilter,
    is_route_tool,
    open_run_stream,
)

DUMPS = REPO_ROOT / "tests" / "fixtures" / "campus_events"
GRAPH = "campus_supervisor"
QUESTIONS = {"routed": "3층 좌석 남았어?", "direct": "오늘 학식 메뉴 뭐야?"}
ANSWER_SLACK_MS = 50.0
"""Issue 15's target: the first visible token at most this long after the answer's first raw token."""
DEFAULT_PACING_MS = 20.0
"""The offline model's pacing in these figures (ms before each token), as a hosted model streams."""


@dataclass
class RawMarks:
    """When the raw stream reached each mark (seconds from the request), part by part."""

    marks: dict[str, float] = field(default_factory=dict)
    _messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    _routed: bool = False

    def feed(self, event: str, data: Any, now: float) -> None:
        """Update the marks with one stream part received at ``now``."""
        if not event.startswith("messages") or not isinstance(data, (list, tuple)) or len(data) != 2:
            return
        message, metadata = data
        if message.get("type") != "AIMessageChunk":
            return
        supervisor = SUPERVISOR_TAG in ((metadata or {}).get("tags") or ())
        key = str(message.get("id"))
        if key not in self._messages and not supervisor:
            self._routed = False  # another agent speaks: the supervisor's next words are not narration
        state = self._messages.setdefault(key, {"tool": False, "first": None})
        calls = [*(message.get("tool_call_chunks") or ()), *(message.get("tool_calls") or ())]
        state["tool"] |= bool(calls)
        if supervisor and any(is_route_tool(call.get("name")) for call in calls):
            self._routed = True
        if message.get("content"):
            self.marks.setdefault("raw", now)
            if state["first"] is None:
                state["first"] = now
        if message.get("chunk_position") == "last":
            answer = state["first"] is not None and not state["tool"] and not (supervisor and self._routed)
            if answer:  # latest wins: the answer the user sees is the last one
                self.marks["answer_raw"], self.marks["answer_end"] = state["first"], now


async def _one_run(client: Any, text: str) -> dict[str, float]:
    thread = await client.threads.create()
    text_filter = VisibleTextFilter()
    raw = RawMarks()
    marks = raw.marks
    start = time.perf_counter()
    async for part in open_run_stream(
        client, thread["thread_id"], GRAPH, input={"messages": [{"role": "user", "content": text}]}
    ):
        now = time.perf_counter() - start
        raw.feed(part.event, part.data, now)
        if text_filter.feed(part.event, part.data):
            marks.setdefault("visible", now)
    marks["end"] = time.perf_counter() - start
    if text_filter.finish():
        marks.setdefault("visible", marks["end"])
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


async def server_marks(url: str, runs: int) -> dict[str, dict[str, list[float]]]:
    """Per question: every mark of every run (ms), and the SSE route's first token (ms)."""
    client = get_client(url=url)
    out: dict[str, dict[str, list[float]]] = {}
    try:
        for label, text in QUESTIONS.items():
            await _one_run(client, text)  # warm-up: imports, first model build
            results = [await _one_run(client, text) for _ in range(runs)]
            keys = sorted({key for result in results for key in result})
            out[label] = {key: [r[key] * 1000 for r in results if key in r] for key in keys}
            out[label]["sse"] = [await _one_sse(url, text) * 1000 for _ in range(runs)]
            out[label]["gap"] = [(r["visible"] - r["answer_raw"]) * 1000 for r in results]
    finally:
        await client.aclose()
    return out


def _dump_parts() -> tuple[list[list[tuple[str, Any]]], int]:
    turns = [t for path in sorted(DUMPS.glob("*.json")) for t in json.loads(path.read_text())["turns"]]
    per_turn = [[(p["event"], p["data"]) for p in t["parts"]] for t in turns]
    return per_turn, len(turns)


def filter_cost(repeat: int = 200) -> dict[str, float]:
    """Microseconds per stream part: the filter, and ``orjson.loads`` of the same parts."""
    per_turn, turn_count = _dump_parts()
    parts = sum(len(t) for t in per_turn)
    start = time.perf_counter()
    for _ in range(repeat):
        for turn in per_turn:
            text_filter = VisibleTextFilter()
            for event, data in turn:
                text_filter.feed(event, data)
            text_filter.finish()
    filter_s = time.perf_counter() - start
    encoded = [orjson.dumps(data) for turn in per_turn for _, data in turn]
    start = time.perf_counter()
    for _ in range(repeat):
        for body in encoded:
            orjson.loads(body)
    decode_s = time.perf_counter() - start
    return {
        "parts": parts,
        "turns": turn_count,
        "repeat": repeat,
        "filter_us": filter_s / (repeat * parts) * 1e6,
        "decode_us": decode_s / (repeat * parts) * 1e6,
    }


def figures(marks: dict[str, dict[str, list[float]]], cost: dict[str, float], pacing_ms: float = 0.0) -> list[Figure]:
    def p50(values: list[float]) -> float:
        return percentile(values, 50)

    paced = f", paced {pacing_ms:g} ms/token" if pacing_ms > 0 else ", unpaced"
    answers = [
        Figure(
            section="ttfv",
            name=f"{label}{paced}: first visible token p50",
            value=p50(marks[label]["visible"]),
            unit="ms",
            reference=p50(marks[label]["answer_raw"]),
            reference_name="answer's 1st raw tok",
            target=f"<= ref + {ANSWER_SLACK_MS:.0f} ms",
            met=p50(marks[label]["gap"]) <= ANSWER_SLACK_MS,
            note=f"per-run wait p50 {p50(marks[label]['gap']):.1f} ms (max {max(marks[label]['gap']):.1f}); "
            f"first raw token of any model p50 {p50(marks[label]['raw']):,.0f} ms; answer's last token "
            f"p50 {p50(marks[label]['answer_end']):,.0f} ms; stream end p50 {p50(marks[label]['end']):,.0f} ms",
        )
        for label in ("routed", "direct")
    ]
    return [
        *answers,
        *(
            Figure(
                section="ttfv",
                name=f"{label}{paced}: SSE route first token p50",
                value=p50(marks[label]["sse"]),
                unit="ms",
                reference=p50(marks[label]["visible"]),
                reference_name="SDK first visible",
            )
            for label in ("routed", "direct")
        ),
        Figure(
            section="ttfv",
            name="filter CPU per stream part",
            value=cost["filter_us"],
            unit="us",
            reference=cost["decode_us"],
            reference_name="orjson.loads per part",
            note=f"{cost['parts']} parts from {cost['turns']} recorded turns, x{cost['repeat']}",
        ),
    ]


def measure(url: str, runs: int, pacing_ms: float = 0.0) -> dict[str, Any]:
    marks = asyncio.run(server_marks(url, runs))
    cost = filter_cost()
    return {"marks_ms": marks, "filter_cost": cost, "figures": figures(marks, cost, pacing_ms)}


def run(runs: int = 10, pacing_ms: float = DEFAULT_PACING_MS) -> dict[str, Any]:
    """``pacing_ms``: the server's offline model waits this long before each token
    (``OFFLINE_TOKEN_DELAY_MS``), as a hosted model streams."""
    env = {"OFFLINE_TOKEN_DELAY_MS": f"{pacing_ms:g}"} if pacing_ms > 0 else None
    with bench_server({GRAPH: repo_graphs()[GRAPH]}, prefix="bench-visible-", env=env) as server:
        return measure(server.url, runs, pacing_ms)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.visible_stream", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per question (default 10)")
    parser.add_argument(
        "--pacing-ms",
        type=float,
        default=DEFAULT_PACING_MS,
        help=f"pace the offline model like a hosted one: ms before each token (default {DEFAULT_PACING_MS:g}; 0: unpaced)",
    )
    args = parser.parse_args(argv)
    print(render_table(run(args.runs, args.pacing_ms)["figures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
