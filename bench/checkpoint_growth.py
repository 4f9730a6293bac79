"""Checkpoint bytes per turn of the chat graphs, on a local Agent Server.

    python -m bench.checkpoint_growth [--turns 50] [--baseline]

Starts its own `langgraph dev` (offline model) in a temporary folder and holds one
``--turns``-turn conversation on each chat graph (`fan_room`, `recycling_guide`)
and, with ``--baseline`` (always in `python -m bench`), on each one's plain
``add_messages`` variant (`bench.baselines`), the conversations side by side. At turns 1, 5, 20 and 50 it
records:

* ``stored``: what the server's checkpointer holds for the thread: the bytes of its
  checkpoint and metadata blobs and of its writes in the SQLite checkpointer
  (server/persistence/, read-only; ``GET /threads/{id}/storage`` reports only the
  built-in checkpointer);
* ``per_turn``: stored bytes divided by turns so far; ``added``: bytes the last turn added;
* ``messages``: bytes of the writes to the ``messages`` channel alone;
* ``values``: ``len(json.dumps(values))`` of the thread's latest state;
* ``history``: the same summed over every checkpoint `get_history` returns
  (what a store that kept every checkpoint's full values would hold).

Bytes do not depend on timing, so the conversations run concurrently.
Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from bench import baselines, conversations
from bench.harness import Figure, bench_server, render_table, repo_graphs
from server.persistence import database_path

REPORT_TURNS = (1, 5, 20, 50)
HISTORY_PAGE = 1000
GROWTH_LIMIT = 2.0
"""Target: bytes per turn at the last turn at most 2x those at turn 5 (no quadratic growth)."""


def graph_ids(baseline: bool) -> list[str]:
    return [*baselines.CHAT_GRAPHS, *(f"{g}{baselines.SUFFIX}" for g in baselines.CHAT_GRAPHS if baseline)]


def served_graphs(baseline: bool) -> dict[str, str]:
    """What the server must serve for `measure`."""
    graphs = {g: repo_graphs()[g] for g in baselines.CHAT_GRAPHS}
    return {**graphs, **(baselines.served() if baseline else {})}


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


async def _history(client: LangGraphClient, thread_id: str) -> list[dict[str, Any]]:
    """Every checkpoint of the thread, newest first (the API pages by 1,000)."""
    history: list[dict[str, Any]] = []
    while True:
        before = history[-1]["checkpoint"] if history else None
        page = await client.threads.get_history(thread_id, limit=HISTORY_PAGE, before=before)
        history.extend(page)
        if len(page) < HISTORY_PAGE:
            return history


STORED_SQL = """
SELECT (SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints WHERE thread_id = ?)
     + (SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes WHERE thread_id = ?),
       (SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes WHERE thread_id = ? AND channel = 'messages')
"""


def stored_bytes(database: Path, thread_id: str) -> tuple[int, int]:
    """(all bytes, ``messages`` write bytes) the SQLite checkpointer holds for ``thread_id`` (read-only)."""
    with sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True) as conn:
        total, messages = conn.execute(STORED_SQL, (thread_id, thread_id, thread_id)).fetchone()
    return int(total), int(messages)


async def _conversation(client: LangGraphClient, graph_id: str, turns: int, database: Path) -> list[dict[str, Any]]:
    thread_id = (await client.threads.create())["thread_id"]
    rows, previous, started = [], 0, time.perf_counter()
    for number, (payload, context) in enumerate(conversations.turns(graph_id, turns), start=1):
        await client.runs.wait(thread_id, graph_id, input=payload, context=context)
        stored, message_bytes = stored_bytes(database, thread_id)
        if number in REPORT_TURNS or number == turns:
            history = await _history(client, thread_id)
            rows.append(
                {
                    "graph": graph_id,
                    "turn": number,
                    "checkpoints": len(history),
                    "stored": stored,
                    "per_turn": stored // number,
                    "added": stored - previous,
                    "messages": message_bytes,
                    "values": _size(history[0]["values"]),
                    "history": sum(_size(h["values"]) for h in history),
                    "seconds": time.perf_counter() - started,
                }
            )
        previous = stored
    return rows


async def _measure(url: str, graphs: Sequence[str], turns: int, database: Path) -> list[dict[str, Any]]:
    client = get_client(url=url)
    try:
        results = await asyncio.gather(*(_conversation(client, g, turns, database) for g in graphs))
    finally:
        await client.aclose()
    return [row for rows in results for row in rows]


def measure(url: str, *, turns: int, baseline: bool, database: Path) -> dict[str, Any]:
    """``database``: the server's SQLite checkpointer file (`database_path` of its working folder)."""
    rows = asyncio.run(_measure(url, graph_ids(baseline), turns, database))
    return {"turns": turns, "rows": rows, "figures": figures(rows)}


def _row(rows: Sequence[dict[str, Any]], graph_id: str, turn: int) -> dict[str, Any] | None:
    return next((r for r in rows if r["graph"] == graph_id and r["turn"] == turn), None)


def figures(rows: Sequence[dict[str, Any]]) -> list[Figure]:
    out: list[Figure] = []
    for graph_id in baselines.CHAT_GRAPHS:
        plain = f"{graph_id}{baselines.SUFFIX}"
        mine = [r for r in rows if r["graph"] == graph_id]
        last = max(r["turn"] for r in mine)
        for row in mine:
            ref = _row(rows, plain, row["turn"])
            out.append(
                Figure(
                    section="checkpoints",
                    name=f"{graph_id}: bytes/turn at turn {row['turn']}",
                    value=row["per_turn"],
                    unit="B",
                    reference=ref["per_turn"] if ref else None,
                    reference_name="plain add_messages" if ref else "",
                )
            )
        final, ref_final = _row(rows, graph_id, last), _row(rows, plain, last)
        out.append(
            Figure(
                section="checkpoints",
                name=f"{graph_id}: total bytes at turn {last}",
                value=final["stored"],
                unit="B",
                reference=ref_final["stored"] if ref_final else None,
                reference_name="plain add_messages" if ref_final else "",
                note=f"{final['checkpoints']} checkpoints; values of every checkpoint {final['history']:,} B",
            )
        )
        early = _row(rows, graph_id, 5)
        if early and last > 5:
            plain_early, plain_last = _row(rows, plain, 5), _row(rows, plain, last)
            note = (
                f"plain add_messages: {plain_last['per_turn'] / plain_early['per_turn']:.2f}x"
                if plain_early and plain_last
                else ""
            )
            growth = final["per_turn"] / early["per_turn"]
            out.append(
                Figure(
                    section="checkpoints",
                    name=f"{graph_id}: bytes/turn, turn {last} vs turn 5",
                    value=final["per_turn"],
                    unit="B",
                    reference=early["per_turn"],
                    reference_name="bytes/turn at turn 5",
                    target=f"<= {GROWTH_LIMIT:.0f}x",
                    met=growth <= GROWTH_LIMIT,
                    note=note,
                )
            )
    return out


COLUMNS = (
    ("graph", "{:<30}"),
    ("turn", "{:>5}"),
    ("checkpoints", "{:>11}"),
    ("stored", "{:>10,}"),
    ("per_turn", "{:>9,}"),
    ("added", "{:>8,}"),
    ("messages", "{:>10,}"),
    ("values", "{:>8,}"),
    ("history", "{:>11,}"),
)
HEADERS = ("graph", "turn", "checkpoints", "stored", "/turn", "+turn", "msgs", "values", "history")


def render_rows(rows: Sequence[dict[str, Any]]) -> str:
    """The per-turn detail table (bytes)."""
    widths = [max(len(name), *(len(fmt.format(r[key])) for r in rows)) for (key, fmt), name in zip(COLUMNS, HEADERS, strict=True)]
    header = "  ".join(
        name.ljust(w) if i == 0 else name.rjust(w) for i, (name, w) in enumerate(zip(HEADERS, widths, strict=True))
    )
    lines = [header]
    for row in rows:
        lines.append(
            "  ".join(
                fmt.format(row[key]).rjust(w) if i else fmt.format(row[key]).ljust(w)
                for i, ((key, fmt), w) in enumerate(zip(COLUMNS, widths, strict=True))
            )
        )
    return "\n".join(lines)


def run(*, turns: int = 50, baseline: bool = True) -> dict[str, Any]:
    with bench_server(served_graphs(baseline), prefix="bench-checkpoints-") as server:
        return measure(server.url, turns=turns, baseline=baseline, database=database_path(server.workdir))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checkpoint_growth", description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=50, help="turns per conversation (default 50)")
    parser.add_argument("--baseline", action="store_true", help="also run the graphs with plain add_messages")
    args = parser.parse_args(argv)
    result = run(turns=args.turns, baseline=args.baseline)
    print(f"checkpoint growth, {args.turns}-turn conversation per graph (bytes; langgraph dev, offline model)")
    print(render_rows(result["rows"]))
    print()
    print(render_table(result["figures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
