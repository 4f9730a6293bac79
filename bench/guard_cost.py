"""What the runtime guard costs a run: the same conversations with the guard on and off.

    python -m bench.guard_cost [--turns 8] [--rounds 1] [--window 4]

Two `langgraph dev` servers serve the repo's graphs with the repo's auth, one with
``PLAYBOOK_GUARD=on`` (the default) and one with ``PLAYBOOK_GUARD=off``; each gets
the same multi-turn conversations of every chat graph (`bench.turns`), at 1 client
and at 8 clients per graph, alternating between the two servers (off, on, off, on).
Every run after a thread's first is on an existing
thread, so the guard reads its state and compares its stamp with the running
code's contract hash (threads made by this code take that fast path; a thread
from older code also runs the rules). Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from bench import turns
from bench.harness import Figure, bench_server, percentile, render_table, repo_graphs

TARGET_8 = 1.05
"""Issue 17: the guard adds at most 5% at 8 clients."""


PASSES = 2
"""Each setting is measured this many times, alternating, so a load change on the machine
falls on both sides."""


def _samples(url: str, *, turns_1: int, rounds: int, window_s: float) -> dict[str, dict[str, list[float]]]:
    graphs = list(turns.GRAPHS)
    raw = {
        "1": asyncio.run(turns.one_client(url, graphs, turns_1)),
        "8": asyncio.run(turns.many_clients(url, graphs, 8, rounds, window_s)),
    }
    return {
        clients: {g: [s["seconds"] * 1000 for s in r["samples"]] for g, r in by_graph.items()}
        for clients, by_graph in raw.items()
    }


def measure(*, turns_1: int = 8, rounds: int = 1, window_s: float = 4.0) -> dict[str, Any]:
    """p50 per setting, clients and graph, over ``PASSES`` alternating passes on two servers
    that run side by side (off, on, off, on)."""
    graphs = {g: repo_graphs()[g] for g in turns.GRAPHS}
    samples: dict[str, dict[str, dict[str, list[float]]]] = {"off": {}, "on": {}}
    with ExitStack() as stack:
        servers = {
            setting: stack.enter_context(bench_server(graphs, prefix=f"bench-guard-{setting}-", env={"PLAYBOOK_GUARD": setting}))
            for setting in ("off", "on")
        }
        for _ in range(PASSES):
            for setting, server in servers.items():
                for clients, by_graph in _samples(server.url, turns_1=turns_1, rounds=rounds, window_s=window_s).items():
                    for graph_id, values in by_graph.items():
                        samples[setting].setdefault(clients, {}).setdefault(graph_id, []).extend(values)
    return {
        setting: {clients: {g: percentile(v, 50) for g, v in by_graph.items()} for clients, by_graph in per.items()}
        for setting, per in samples.items()
    }


def figures(results: dict[str, Any]) -> list[Figure]:
    out = []
    for clients in ("1", "8"):
        for graph_id in turns.GRAPHS:
            on, off = results["on"][clients][graph_id], results["off"][clients][graph_id]
            ratio = on / off if off else None
            out.append(
                Figure(
                    section="guard",
                    name=f"{graph_id} p50, {clients} client{'s' if clients == '8' else ''}, guard on",
                    value=on,
                    unit="ms",
                    reference=off,
                    reference_name="guard off",
                    target=f"<= {TARGET_8:.2f}x" if clients == "8" else "",
                    met=(ratio <= TARGET_8) if clients == "8" and ratio is not None else None,
                )
            )
    return out


def run(*, turns_1: int = 8, rounds: int = 1, window_s: float = 4.0) -> dict[str, Any]:
    results = measure(turns_1=turns_1, rounds=rounds, window_s=window_s)
    return {"rows": results, "figures": figures(results)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.guard_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=8, help="turns per graph at 1 client")
    parser.add_argument("--rounds", type=int, default=1, help="measuring blocks per graph at 8 clients")
    parser.add_argument("--window", type=float, default=4.0, help="seconds per block at 8 clients")
    args = parser.parse_args(argv)
    if args.turns < 1 or args.rounds < 1 or args.window <= 0:
        parser.error("--turns and --rounds must be positive integers, --window a positive number")
    print(render_table(run(turns_1=args.turns, rounds=args.rounds, window_s=args.window)["figures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
