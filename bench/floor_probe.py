"""Where the ~1 s single-client floor of `langgraph dev` comes from, and what changes it.

    python -m bench.floor_probe [--turns 8] [--window 4]

The in-memory runtime's queue loop (langgraph_runtime_inmem 0.36.7, queue.py
``queue()`` and ops.py ``Runs.next``) polls for pending runs. A poll that follows
a poll which found nothing first sleeps 0.5 s, and it only takes runs created
*before* the poll began (``now`` is read before the sleep). A turn sent right
after the previous one returned is therefore created just after a poll began:
that poll (0.5 s) skips it and the next one (0.5 s more) takes it, so it waits
~1.0 s; a turn sent after a pause ``p`` (< 0.5 s) waits ~1.0 - ``p``. Under load
the loop polls again at once after a poll that found a run, so the wait vanishes
while runs keep coming.

This probe measures that on the floor graph (`bench.floor`), from the client and
from the server's log (``run_queue_ms``, ``run_exec_ms``):

* back-to-back turns and turns after a 250 ms pause, one client;
* the documented settings that touch the run queue, each on a fresh server
  against a default server of the same config: ``langgraph dev
  --n-jobs-per-worker 10`` (the CLI's help says its default is 10; `langgraph
  dev` actually passes 1) and ``BG_JOB_ISOLATED_LOOPS=true``, at 1 and 8 clients.

Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph_sdk import get_client

from bench import floor
from bench.harness import Figure, bench_server, percentile, render_table, server_runs
from bench.turns import conversation, many_clients, one_client, summarize

POLL_S = 0.5
"""``asyncio.sleep(0.5)`` in `langgraph_runtime_inmem.ops.Runs.next` (a literal: no setting reads it)."""
PAUSE_S = 0.25


@dataclass(frozen=True)
class Setting:
    """A documented server setting to try: ``langgraph dev`` flags and/or environment."""

    label: str
    extra_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


DEFAULT = Setting("default (langgraph dev as make run starts it)")
SETTINGS = (Setting("--n-jobs-per-worker 10", extra_args=("--n-jobs-per-worker", "10")),)
"""``BG_JOB_ISOLATED_LOOPS=true`` was probed here until crash-safe persistence
(server/persistence/) landed: it was slower at 8 clients (37.8 vs 54.8 runs/s on
2026-12-01), and with the SQLite checkpointer its runs now fail (``BlockingError``), so it
is not a setting this deployment supports (docs/durability.md)."""


async def paused_turns(url: str, turns: int, pause_s: float) -> list[float]:
    """Client-side ms of ``turns`` floor turns, each sent ``pause_s`` after the last returned."""
    client = get_client(url=url)
    try:
        talk = conversation(client, floor.GRAPH_ID)
        await talk.turn()
        out = []
        for _ in range(turns):
            await asyncio.sleep(pause_s)
            out.append((await talk.turn())["seconds"] * 1000)
        return out
    finally:
        await client.aclose()


def probe_setting(setting: Setting, *, turns: int, window_s: float) -> dict[str, Any]:
    """Floor p50 at 1 client and p50 + runs/s at 8 clients, on a fresh floor-only server."""
    with bench_server(
        {floor.GRAPH_ID: floor.MODULE_PATH}, prefix="bench-floor-", env=dict(setting.env), extra_args=setting.extra_args
    ) as server:
        single = asyncio.run(one_client(server.url, [floor.GRAPH_ID], turns))[floor.GRAPH_ID]
        many = asyncio.run(many_clients(server.url, [floor.GRAPH_ID], 8, 1, window_s))[floor.GRAPH_ID]
        runs = server_runs(server)

    def ms(result: dict) -> list[float]:
        return [s["seconds"] * 1000 for s in result["samples"]]

    return {
        "setting": setting.label,
        "one_p50_ms": percentile(ms(single), 50),
        "eight_p50_ms": percentile(ms(many), 50),
        "eight_runs_per_s": len(many["samples"]) / many["wall_s"],
        "queue_p50_ms": percentile([r["queue_ms"] for r in runs], 50),
    }


def measure(url: str, *, turns: int, window_s: float, settings: bool) -> dict[str, Any]:
    """The pause probe on ``url`` (a server that serves the floor graph), then each setting."""
    started = time.perf_counter()
    pause = asyncio.run(paused_turns(url, turns, PAUSE_S))
    out: dict[str, Any] = {"pause_s": PAUSE_S, "paused_turns_ms": pause, "settings": []}
    if settings:
        out["settings"] = [probe_setting(s, turns=turns, window_s=window_s) for s in (DEFAULT, *SETTINGS)]
    out["seconds"] = time.perf_counter() - started
    return out


def figures(probe: dict[str, Any], single_floor: dict[str, Any]) -> list[Figure]:
    """``single_floor``: the floor's 1-client summary from `bench.turns` (same server as the pause probe)."""
    turn, queue, execute = single_floor["p50_ms"], single_floor["queue_p50_ms"], single_floor["exec_p50_ms"]
    paused = percentile(probe["paused_turns_ms"], 50)
    out = [
        Figure(
            section="floor",
            name="1 client, back-to-back: floor turn p50",
            value=turn,
            unit="ms",
            reference=2 * POLL_S * 1000,
            reference_name="2 queue polls",
            note="Runs.next sleeps 0.5 s after an empty poll and takes only runs created before the poll began",
        ),
        Figure(
            section="floor",
            name="  server queue wait p50 (run_queue_ms)",
            value=queue,
            unit="ms",
            reference=turn,
            reference_name="floor turn p50",
        ),
        Figure(
            section="floor",
            name="  server exec p50 (run_exec_ms)",
            value=execute,
            unit="ms",
            reference=turn,
            reference_name="floor turn p50",
        ),
        Figure(
            section="floor",
            name="  HTTP + join (turn - queue - exec p50s)",
            value=turn - queue - execute,
            unit="ms",
            reference=turn,
            reference_name="floor turn p50",
        ),
        Figure(
            section="floor",
            name=f"1 client, {probe['pause_s'] * 1000:.0f} ms pause: floor turn p50",
            value=paused,
            unit="ms",
            reference=(2 * POLL_S - probe["pause_s"]) * 1000,
            reference_name="predicted 1 s - pause",
        ),
    ]
    settings = probe["settings"]
    if settings:
        base = settings[0]
        out.append(
            Figure(
                section="floor",
                name="default setup, floor-only server: 1 client p50",
                value=base["one_p50_ms"],
                unit="ms",
                note=f"8 clients: p50 {base['eight_p50_ms']:,.0f} ms, {base['eight_runs_per_s']:.1f} runs/s",
            )
        )
        for other in settings[1:]:
            out += [
                Figure(
                    section="floor",
                    name=f"{other['setting']}: 1 client p50",
                    value=other["one_p50_ms"],
                    unit="ms",
                    reference=base["one_p50_ms"],
                    reference_name="default",
                ),
                Figure(
                    section="floor",
                    name=f"{other['setting']}: 8 clients p50",
                    value=other["eight_p50_ms"],
                    unit="ms",
                    reference=base["eight_p50_ms"],
                    reference_name="default",
                ),
                Figure(
                    section="floor",
                    name=f"{other['setting']}: 8 clients runs/s",
                    value=other["eight_runs_per_s"],
                    unit="/s",
                    reference=base["eight_runs_per_s"],
                    reference_name="default",
                ),
            ]
    return out


def run(*, turns: int = 8, window_s: float = 4.0, settings: bool = True) -> dict[str, Any]:
    with bench_server({floor.GRAPH_ID: floor.MODULE_PATH}, prefix="bench-floor-") as server:
        single = asyncio.run(one_client(server.url, [floor.GRAPH_ID], turns))[floor.GRAPH_ID]
        runs = server_runs(server)
        probe = measure(server.url, turns=turns, window_s=window_s, settings=settings)
    return {"probe": probe, "figures": figures(probe, summarize(single, runs))}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=8, help="turns per 1-client measurement (default 8)")
    parser.add_argument("--window", type=float, default=4.0, help="seconds measured at 8 clients (default 4)")
    parser.add_argument("--no-settings", action="store_true", help="skip the server settings (one server only)")
    args = parser.parse_args(argv)
    print(render_table(run(turns=args.turns, window_s=args.window, settings=not args.no_settings)["figures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
