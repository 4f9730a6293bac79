"""The `DeltaChannel` snapshot interval of the chat graphs' messages, chosen by measurement (issue 39).

    python -m bench.snapshot_interval [--frequencies 5 10 15 30 60] [--turns 53] [--repeats 3]

A chat graph's ``messages`` (`graphs.common.history.MessageHistory`) is a `DeltaChannel`: a
checkpoint stores each step's writes, and every ``snapshot_frequency`` updates of the channel one
full snapshot of the list. Every run starts by rebuilding the list from the nearest snapshot plus
the writes after it, so a long interval makes each run replay more writes (the history rebuild
grows until the next snapshot), and a short one makes snapshots (the whole list, so a cost that
grows with the conversation) more frequent, in CPU and in bytes.

For each interval and each chat graph this runs the bench's conversation (`bench.conversations`,
offline model) in-process on a `SqliteSaver` in a temporary file (the server's own checkpointer is
SQLite, with the same fast path for the history: `server/persistence/adapter.py`) and reads the
process's CPU time per turn (``time.process_time``: another process on the machine does not add
to it): turns 3-8 against turns 48-53, which say the same texts (from turn 46 on the conversation
says its texts again from turn 1's: they cycle through 5 or 7, and a recap costs more than a
follow-up), and the bytes the thread holds at the last turn. The
intervals alternate per repeat, and each figure is the median over the repeats.
Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver

from bench import conversations, supersteps
from graphs.common import history

CHAT_GRAPHS = ("campus_supervisor", "fan_room", "recycling_guide")
FREQUENCIES = (5, 10, 15, 30, 60)
EARLY = range(2, 8)
LATE = range(47, 53)
"""Turn indexes (0-based) timed: turns 3-8 and 48-53, as `bench.cpu_per_run` measures them on the server."""


def _set_frequency(graph: Any, frequency: int) -> int:
    """Set every `DeltaChannel` of ``graph`` and of its subgraphs to ``frequency``; how many were set."""
    changed = 0
    for _, compiled in [("", graph), *graph.get_subgraphs(recurse=True)]:
        for channel in compiled.channels.values():
            if isinstance(channel, DeltaChannel):
                channel.snapshot_frequency = frequency
                changed += 1
    return changed


def one_conversation(graph_id: str, frequency: int, turns: int) -> dict[str, Any]:
    """CPU ms per turn at `EARLY` and `LATE` turns, and the thread's bytes, for one interval."""
    with tempfile.TemporaryDirectory(prefix="bench-snapshot-") as tmp:
        path = Path(tmp) / "checkpoints.sqlite"
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            saver = SqliteSaver(conn)
            graph = supersteps._builder(graph_id).compile(checkpointer=saver)
            if _set_frequency(graph, frequency) == 0:
                raise RuntimeError(f"{graph_id} has no DeltaChannel")
            config: RunnableConfig = {"configurable": {"thread_id": "conversation"}}
            cpu_ms: list[float] = []
            base, shift = conversations.turns(graph_id, turns), LATE.start - EARLY.start
            said = [base[index] if index < shift else base[index - shift] for index in range(turns)]
            for payload, context in said:
                started = time.process_time()
                graph.invoke(payload, config, context=context)
                cpu_ms.append((time.process_time() - started) * 1000)
            stored = (
                sum(
                    conn.execute(f"SELECT coalesce(sum(length(checkpoint)) + sum(length(metadata)), 0) FROM {table}").fetchone()[
                        0
                    ]
                    for table in ("checkpoints",)
                )
                + conn.execute("SELECT coalesce(sum(length(value)), 0) FROM writes").fetchone()[0]
            )
        finally:
            conn.close()
    return {
        "early_ms": statistics.mean(cpu_ms[i] for i in EARLY if i < len(cpu_ms)),
        "late_ms": statistics.mean(cpu_ms[i] for i in LATE if i < len(cpu_ms)),
        "bytes": stored,
    }


def measure(frequencies: Sequence[int], *, turns: int, repeats: int, graphs: Sequence[str] = CHAT_GRAPHS) -> dict[str, Any]:
    """graph -> interval -> medians over ``repeats`` (intervals alternated, order reversed every repeat)."""
    raw: dict[str, dict[int, list[dict[str, Any]]]] = {g: {f: [] for f in frequencies} for g in graphs}
    for repeat in range(repeats):
        order = list(frequencies) if repeat % 2 == 0 else list(reversed(frequencies))
        for frequency in order:
            for graph_id in graphs:
                raw[graph_id][frequency].append(one_conversation(graph_id, frequency, turns))
    return {
        graph_id: {
            frequency: {key: statistics.median(r[key] for r in rows) for key in ("early_ms", "late_ms", "bytes")}
            | {"late_over_early": [round(r["late_ms"] / r["early_ms"], 3) for r in rows]}
            for frequency, rows in per.items()
        }
        for graph_id, per in raw.items()
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        f"{'graph':<20} {'interval':>8} {'turns 3-8':>10} {'turns 48-53':>12} {'ratio':>6} {'bytes at end':>13}"
        "  ratios per repeat"
    ]
    for graph_id, per in result.items():
        for frequency, row in per.items():
            mark = " (current)" if frequency == history.SNAPSHOT_FREQUENCY else ""
            lines.append(
                f"{graph_id:<20} {frequency:>8} {row['early_ms']:>8.2f}ms {row['late_ms']:>10.2f}ms "
                f"{row['late_ms'] / row['early_ms']:>5.2f}x {row['bytes']:>13,}  {row['late_over_early']}{mark}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.snapshot_interval", description=__doc__.splitlines()[0])
    parser.add_argument("--frequencies", type=int, nargs="+", default=list(FREQUENCIES))
    parser.add_argument("--turns", type=int, default=LATE.stop)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--graphs", nargs="+", default=list(CHAT_GRAPHS))
    args = parser.parse_args(argv)
    print(render(measure(args.frequencies, turns=args.turns, repeats=args.repeats, graphs=args.graphs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
