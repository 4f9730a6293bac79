"""Server CPU per run: each graph against its matched floor, in alternated blocks on one server.

    python -m bench.cpu_per_run [--blocks 8] [--runs 48] [--clients 8] [--stored 2000 10000]
    python -m bench --only cpu

Wall-clock p50 on two shared cores moved 10-30% between two runs of the same code, so it cannot
tell a 5% win from noise. What a run costs the server is its CPU time: the user + system seconds of
the `langgraph dev` process group, read from /proc before and after a block of runs. Another
process on the machine slows a run down; it does not add CPU time to the server's process.

* Per graph: blocks of the graph and of its matched floor (`bench.supersteps`: the chain of no-op
  nodes that writes as many checkpoints per turn, or the pause floor for a turn that ends paused)
  alternate, G F G F ...; in a block ``clients`` fresh conversations run in a closed loop until
  ``runs`` turns are done (turns 1 to runs/clients of each conversation). CPU per run = the
  group's CPU seconds over the block / runs. Each G block is judged against the F block next to
  it; the ratio shown is the median over those pairs, with its spread (lowest - highest).
* The same code twice: blocks of the floor against blocks of the floor (A A'), so the spread a
  ratio of identical code shows in this run is printed beside the others.
* History (chat graphs, issue 39): turn 50 against turn 5. Blocks of conversations first taken
  to turn `EARLY_FROM` (untimed) against blocks of conversations first taken to turn
  `LATE_FROM` (untimed, new ones for every block), so turns 3-8 against turns 48-53 at the
  default sizes; CPU per run of each.
* Every block runs on a store of the same size: the threads a block of fresh conversations made
  are deleted after it (untimed). The in-memory runtime scans every thread and run record on each
  run (`Runs.put`, `Threads.set_joint_status`, `Runs.next`), so without this a block's CPU grew
  with the blocks before it (the floor's from 21 to 61 ms per run over 3,200 threads) and a
  comparison measured when it ran as much as what it compared.
* Before every block the bench waits until the server is idle (`settle`), so work the last
  block or the untimed set-up left behind is not charged to it.
* Stored threads (issue 39): a second server of the same configuration is filled with
  ``--stored`` threads (each one paused run of the pause floor, made untimed; 2,000, then
  10,000), and at each size the floor's blocks alternate between it and the first server,
  whose store stays as it was: what a bigger store adds to every run, judged pair by pair like
  everything else. Before anything is stored the two servers are compared the same way, so the
  spread of two servers of identical code and store is printed beside it.
* Every ratio with a target also says whether it lies within the spread of the same code
  against itself (the floor against the floor, or the two servers with nothing stored): a
  target inside that spread is one this machine cannot tell from noise.

Wall p50 and p95 of the same turns (client side) are shown beside. Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from bench import conversations, floor, supersteps
from bench.harness import Figure, bench_server, percentile, render_table, repo_graphs
from bench.turns import GRAPHS, Conversation, conversation

MATCHED_LIMIT = 1.15
"""Issue 28: a graph's server CPU per run at most 1.15x its matched floor's, at 8 clients."""
HISTORY_LIMIT = 1.10
"""Issue 28: a multi-turn graph's CPU per run at turn 21+ at most 1.10x that of its first turns."""
STORED_THREADS = (2_000, 10_000)
"""Threads stored for the stored-threads figures (each with one paused run), in the order they are reached."""
STORED_LIMIT = 1.10
STORED_TARGET_AT = 10_000
"""Issue 39: the floor's server CPU per run with 10,000 threads stored at most 1.10x the empty store's."""
PARTS = ("matched", "history", "stored")
"""The comparisons `measure` can make besides the floor against itself (always made: every spread is read against it)."""
EARLY_FROM = 2
LATE_FROM = 47
"""Issue 39: turn 50 against turn 5. Early blocks run turns 3 to 2 + runs/clients (3-8 at 48 runs and
8 clients), late blocks turns 48 to 47 + runs/clients (48-53): centred on turns 5 and 50."""
SETTLE_WINDOW_S = 0.25
SETTLE_MAX_TICKS = 1
SETTLE_LIMIT_S = 5.0
"""Before a block: wait until the server spent at most one clock tick (10 ms) of CPU in a
quarter second (idle, it spends 6-8 ms per second), at most 5 s. Deleting the last block's
threads or taking conversations to turn 20 leaves work behind (the runtime's bookkeeping,
journal writes, garbage collection) that would otherwise be charged to the next block."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# -- the server's CPU -------------------------------------------------------------------


def group_cpu_seconds(pgid: int, proc: Path = Path("/proc")) -> float:
    """User + system CPU seconds of every live process in process group ``pgid`` (a `DevServer`
    starts `langgraph dev` in a session of its own, so the group is the server and anything it
    started), plus what the group leader collected from children that have exited."""
    total_ticks = 0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:  # exited while listed
            continue
        # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
        fields = raw[raw.rindex(")") + 2 :].split()
        if int(fields[2]) != pgid:
            continue
        utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
        total_ticks += utime + stime + (cutime + cstime if int(entry.name) == pgid else 0)
    return total_ticks / CLOCK_TICKS


@dataclass
class Block:
    """One block of runs of one graph: its CPU, wall and turn counts."""

    graph_id: str
    runs: int
    cpu_s: float
    wall_s: float
    turn_seconds: list[float] = field(default_factory=list)

    @property
    def cpu_ms_per_run(self) -> float:
        return self.cpu_s * 1000 / self.runs if self.runs else float("nan")


async def run_block(talks: Sequence[Conversation], runs: int, cpu: Callable[[], float]) -> Block:
    """``talks`` in a closed loop until ``runs`` turns are done; the server CPU over exactly that."""
    todo = runs
    seconds: list[float] = []

    async def loop(talk: Conversation) -> None:
        nonlocal todo
        while todo > 0:
            todo -= 1
            seconds.append((await talk.turn())["seconds"])

    before, started = cpu(), time.perf_counter()
    await asyncio.gather(*(loop(talk) for talk in talks))
    wall, after = time.perf_counter() - started, cpu()
    return Block(talks[0].graph_id, len(seconds), after - before, wall, seconds)


# -- measurements ------------------------------------------------------------------------


@dataclass
class Comparison:
    """Blocks of a subject and of its reference, alternated; judged pair by pair."""

    subject: str
    reference: str
    subject_blocks: list[Block] = field(default_factory=list)
    reference_blocks: list[Block] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        return [
            s.cpu_ms_per_run / r.cpu_ms_per_run
            for s, r in zip(self.subject_blocks, self.reference_blocks, strict=False)
            if r.cpu_ms_per_run > 0
        ]

    def summary(self) -> dict[str, Any]:
        def side(blocks: list[Block]) -> dict[str, Any]:
            turns = [t * 1000 for b in blocks for t in b.turn_seconds]
            return {
                "cpu_ms_per_run": statistics.median(b.cpu_ms_per_run for b in blocks) if blocks else None,
                "cpu_ms_per_run_blocks": [round(b.cpu_ms_per_run, 2) for b in blocks],
                "wall_p50_ms": percentile(turns, 50),
                "wall_p95_ms": percentile(turns, 95),
                "runs": sum(b.runs for b in blocks),
                "runs_per_s": sum(b.runs for b in blocks) / sum(b.wall_s for b in blocks) if blocks else None,
            }

        ratios = self.ratios
        return {
            "subject": self.subject,
            "reference": self.reference,
            "ratio": statistics.median(ratios) if ratios else None,
            "ratio_low": min(ratios) if ratios else None,
            "ratio_high": max(ratios) if ratios else None,
            "pairs": len(ratios),
            self.subject if self.subject != self.reference else "a": side(self.subject_blocks),
            self.reference if self.subject != self.reference else "a2": side(self.reference_blocks),
        }


async def compare(
    client: LangGraphClient,
    subject: str | Callable[[], Awaitable[list[Conversation]]],
    reference: str | Callable[[], Awaitable[list[Conversation]]],
    *,
    blocks: int,
    runs: int,
    clients: int,
    cpu: Callable[[], float],
    names: tuple[str, str] | None = None,
) -> Comparison:
    """``blocks`` blocks of each side, alternated (the side that goes first swaps every pair, so
    neither always follows the other). A side is a graph id (fresh conversations each block) or
    a coroutine function that makes the conversations a block uses (untimed). Every thread a
    block's conversations made is deleted after it."""

    async def block(side: str | Callable[[], Awaitable[list[Conversation]]], count: int) -> Block:
        return await measured_block(client, side, count, clients=clients, cpu=cpu)

    subject_name, reference_name = names or (str(subject), str(reference))
    result = Comparison(subject_name, reference_name)
    await block(subject, clients)  # warm-up: imports, first model build, caches
    await block(reference, clients)
    for number in range(blocks):
        order = ((subject, result.subject_blocks), (reference, result.reference_blocks))
        for side, into in order if number % 2 == 0 else reversed(order):
            into.append(await block(side, runs))
    return result


async def measured_block(
    client: LangGraphClient,
    side: str | Callable[[], Awaitable[list[Conversation]]],
    runs: int,
    *,
    clients: int,
    cpu: Callable[[], float],
) -> Block:
    """One block: its conversations (fresh ones of a graph id, or the side's own, made untimed),
    an idle server, ``runs`` turns timed, then every thread the block made deleted."""
    talks = [conversation(client, side) for _ in range(clients)] if isinstance(side, str) else await side()
    await settle(cpu)
    measured = await run_block(talks, runs, cpu)
    await forget(client, talks)
    return measured


async def settle(
    cpu: Callable[[], float],
    *,
    window_s: float = SETTLE_WINDOW_S,
    max_ticks: int = SETTLE_MAX_TICKS,
    limit_s: float = SETTLE_LIMIT_S,
) -> bool:
    """Wait until the server is idle (see `SETTLE_WINDOW_S`); False if it was not within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        before = cpu()
        await asyncio.sleep(window_s)
        if (cpu() - before) * CLOCK_TICKS <= max_ticks + 0.5:
            return True
    return False


async def forget(client: LangGraphClient, talks: Sequence[Conversation]) -> None:
    """Delete every thread ``talks`` made (untimed: between two blocks' CPU readings)."""
    made = [thread_id for talk in talks for thread_id in talk.made]
    gate = asyncio.Semaphore(8)

    async def delete(thread_id: str) -> None:
        async with gate:
            await client.threads.delete(thread_id)

    await asyncio.gather(*(delete(thread_id) for thread_id in made))
    for talk in talks:
        talk.made.clear()


@dataclass
class Served:
    """One server the bench talks to: its client and its process group's CPU."""

    client: LangGraphClient
    cpu: Callable[[], float]


async def stored(
    empty: Served, grown: Served, *, counts: Sequence[int], blocks: int, runs: int, clients: int
) -> list[dict[str, Any]]:
    """The floor on ``grown`` with each of ``counts`` threads stored against the floor on ``empty``.

    Two servers of one configuration, so that the blocks can alternate (a store only grows):
    first both with nothing stored (the spread of two servers of identical code and store), then,
    for each count, ``grown`` is filled to it (each thread one run of the pause floor, which ends
    paused; untimed) and ``blocks`` blocks on each server alternate, pair by pair. Each block's own
    threads are deleted after it, so ``empty`` stays as it was."""

    async def one(side: Served) -> Block:
        return await measured_block(side.client, floor.GRAPH_ID, runs, clients=clients, cpu=side.cpu)

    async def alternated(subject: str) -> dict[str, Any]:
        result = Comparison(subject, "floor, nothing stored")
        for number in range(blocks):
            order = ((grown, result.subject_blocks), (empty, result.reference_blocks))
            for side, into in order if number % 2 == 0 else reversed(order):
                into.append(await one(side))
        return {**result.summary(), "stored": have}

    for side in (empty, grown):  # warm-up: imports, first model build, caches
        await measured_block(side.client, floor.GRAPH_ID, clients, clients=clients, cpu=side.cpu)
    have = 0
    out = [await alternated("floor on a second server, nothing stored")]
    for count in counts:
        print(f"[cpu_per_run] storing {count - have:,} more threads on the second server", file=sys.stderr, flush=True)
        fillers = [conversation(grown.client, floor.PAUSE_GRAPH_ID) for _ in range(clients)]
        await run_block(fillers, count - have, grown.cpu)
        have = count
        out.append(await alternated(f"floor with {count:,} threads stored"))
    return out


def aligned(turns: Sequence[conversations.Turn], shift: int) -> list[conversations.Turn]:
    """``turns`` rotated so that turn ``i + shift`` says what turn ``i`` said: a late block's timed
    turns then say what an early block's say (the conversations cycle through 5 or 7 texts, and a
    recap turn costs more than a follow-up: without this, turns 48-53 of recycling_guide were
    another mix of texts than turns 3-8)."""
    return [turns[(index - shift) % len(turns)] for index in range(len(turns))]


async def history(
    client: LangGraphClient, graph_id: str, *, blocks: int, runs: int, clients: int, cpu: Callable[[], float]
) -> Comparison:
    """Turns `LATE_FROM` + 1 onwards against turns `EARLY_FROM` + 1 onwards: each block's
    conversations are new ones first taken to that turn (untimed), so every block measures the
    same turns (a conversation carried through all blocks would be judged at turn 90 and more by
    the last)."""

    def advanced(to: int) -> Callable[[], Awaitable[list[Conversation]]]:
        async def make() -> list[Conversation]:
            talks = [conversation(client, graph_id) for _ in range(clients)]
            for talk in talks:
                talk.turns = aligned(talk.turns, to - EARLY_FROM)

            async def advance(talk: Conversation) -> None:
                while talk.done < to:
                    await talk.turn()

            await asyncio.gather(*(advance(talk) for talk in talks))
            return talks

        return make

    per = max(1, runs // clients)
    return await compare(
        client,
        advanced(LATE_FROM),
        advanced(EARLY_FROM),
        blocks=blocks,
        runs=runs,
        clients=clients,
        cpu=cpu,
        names=(
            f"{graph_id} turns {LATE_FROM + 1}-{LATE_FROM + per}",
            f"{graph_id} turns {EARLY_FROM + 1}-{EARLY_FROM + per}",
        ),
    )


def measure(
    url: str,
    pgid: int,
    matched: Mapping[str, Mapping[str, Any]],
    *,
    blocks: int = 8,
    runs: int = 48,
    clients: int = 8,
    stored_threads: Sequence[int] = STORED_THREADS,
    second: tuple[str, int] | None = None,
    parts: Sequence[str] = PARTS,
) -> dict[str, Any]:
    """``parts`` of (`PARTS`): every graph against its matched floor, the floor against itself, the chat graphs' history,
    and (with ``second``, the url and process group of a second server like the first, and
    ``stored_threads``) the floor with that many threads stored. The servers must serve the
    pause floor for the last (`cpu_server` does)."""

    def cpu() -> float:
        return group_cpu_seconds(pgid)

    async def everything() -> dict[str, Any]:
        client = get_client(url=url)
        other = get_client(url=second[0]) if second is not None else None
        try:
            out: dict[str, Any] = {"matched": {}, "history": {}}
            sizes = {"blocks": blocks, "runs": runs, "clients": clients, "cpu": cpu}
            out["same_code"] = (await compare(client, floor.GRAPH_ID, floor.GRAPH_ID, **sizes)).summary()  # type: ignore[arg-type]
            for graph_id in GRAPHS if "matched" in parts else ():
                reference = supersteps.reference_for(matched[graph_id])
                out["matched"][graph_id] = (await compare(client, graph_id, reference, **sizes)).summary()  # type: ignore[arg-type]
            for graph_id in GRAPHS if "history" in parts else ():
                if graph_id in conversations.NEW_THREAD_PER_TURN:
                    continue
                out["history"][graph_id] = (await history(client, graph_id, **sizes)).summary()  # type: ignore[arg-type]
            if other is not None and second is not None and stored_threads and "stored" in parts:
                out["stored"] = await stored(
                    Served(client, cpu),
                    Served(other, lambda: group_cpu_seconds(second[1])),
                    counts=sorted(stored_threads),
                    blocks=blocks,
                    runs=runs,
                    clients=clients,
                )
            return out
        finally:
            await client.aclose()
            if other is not None:
                await other.aclose()

    return asyncio.run(everything())


# -- figures -------------------------------------------------------------------------------


def _spread(summary: Mapping[str, Any]) -> str:
    return f"{summary['ratio_low']:.2f}x - {summary['ratio_high']:.2f}x over {summary['pairs']} block pairs"


def _wall(summary: Mapping[str, Any], subject: str, reference: str) -> str:
    mine, theirs = summary[subject], summary[reference]
    return (
        f"wall p50 {mine['wall_p50_ms']:,.0f} / {theirs['wall_p50_ms']:,.0f} ms, "
        f"p95 {mine['wall_p95_ms']:,.0f} / {theirs['wall_p95_ms']:,.0f} ms"
    )


def within_noise(ratio: float | None, control: Mapping[str, Any] | None) -> bool | None:
    """Whether ``ratio`` lies within the spread ``control`` (the same code against itself) gave:
    None when either is missing."""
    if ratio is None or control is None or control.get("ratio_low") is None:
        return None
    return bool(control["ratio_low"] <= ratio <= control["ratio_high"])


def _noise(ratio: float | None, control: Mapping[str, Any] | None, what: str) -> str:
    inside = within_noise(ratio, control)
    if inside is None or control is None:
        return ""
    where = "within" if inside else "outside"
    return f"; {where} the spread of {what} ({control['ratio_low']:.2f}x - {control['ratio_high']:.2f}x)"


def figures(result: Mapping[str, Any]) -> list[Figure]:
    """The table's CPU figures: per graph vs its matched floor, the same code twice, the history,
    the stored threads; each ratio with its spread, and each target's ratio placed against the
    spread of the same code against itself."""
    out: list[Figure] = []
    same = result["same_code"]
    out.append(
        Figure(
            section="cpu",
            name="floor vs floor (the same code twice)",
            value=same["a"]["cpu_ms_per_run"],
            unit="ms CPU/run",
            reference=same["a2"]["cpu_ms_per_run"],
            reference_name="floor again",
            ratio=same["ratio"],
            note=f"how much two blocks of identical code differ here: {_spread(same)}",
        )
    )
    itself = "the same code against itself"
    for graph_id, summary in result["matched"].items():
        reference = summary["reference"]
        out.append(
            Figure(
                section="cpu",
                name=f"{graph_id} server CPU per run (8 clients)",
                value=summary[graph_id]["cpu_ms_per_run"],
                unit="ms CPU/run",
                reference=summary[reference]["cpu_ms_per_run"],
                reference_name=reference,
                ratio=summary["ratio"],
                target=f"<= {MATCHED_LIMIT:.2f}x",
                met=summary["ratio"] is not None and summary["ratio"] <= MATCHED_LIMIT,
                note=f"{_spread(summary)}{_noise(summary['ratio'], same, itself)}; {_wall(summary, graph_id, reference)}",
            )
        )
    grown = result.get("stored")
    if isinstance(grown, Mapping):  # a result of the single-server figure (before issue 39)
        grown = [{**grown, "stored": None}]
    control = next((g for g in grown or () if not g.get("stored")), None)
    for summary in grown or ():
        subject, reference = summary["subject"], summary["reference"]
        at_target = summary.get("stored") == STORED_TARGET_AT
        out.append(
            Figure(
                section="cpu",
                name=subject,
                value=summary[subject]["cpu_ms_per_run"],
                unit="ms CPU/run",
                reference=summary[reference]["cpu_ms_per_run"],
                reference_name="floor, nothing stored",
                ratio=summary["ratio"],
                target=f"<= {STORED_LIMIT:.2f}x" if at_target else "",
                met=(summary["ratio"] is not None and summary["ratio"] <= STORED_LIMIT) if at_target else None,
                note=(
                    "two servers of identical code and store: how much they differ here; "
                    if summary is control
                    else "what stored threads add to every run (two servers, alternated blocks); "
                )
                + _spread(summary)
                + ("" if summary is control else _noise(summary["ratio"], control, "the two servers with nothing stored")),
            )
        )
    for graph_id, summary in result["history"].items():
        late, early = summary["subject"], summary["reference"]
        out.append(
            Figure(
                section="cpu",
                name=f"{graph_id} CPU per run, {late.removeprefix(f'{graph_id} ')} vs early turns",
                value=summary[late]["cpu_ms_per_run"],
                unit="ms CPU/run",
                reference=summary[early]["cpu_ms_per_run"],
                reference_name=early.removeprefix(f"{graph_id} "),
                ratio=summary["ratio"],
                target=f"<= {HISTORY_LIMIT:.2f}x",
                met=summary["ratio"] is not None and summary["ratio"] <= HISTORY_LIMIT,
                note=f"{_spread(summary)}{_noise(summary['ratio'], same, itself)}; {_wall(summary, late, early)}",
            )
        )
    return out


@contextmanager
def cpu_server(matched: Mapping[str, Mapping[str, Any]]) -> Iterator[Any]:
    """A server of its own for these figures (repo graphs, the floors and the matched references): an
    empty store, not one other sections have filled."""
    graphs = {
        **{g: repo_graphs()[g] for g in GRAPHS},
        floor.GRAPH_ID: floor.MODULE_PATH,
        floor.PAUSE_GRAPH_ID: floor.PAUSE_MODULE_PATH,  # the stored-threads figure fills the store with it
        **supersteps.reference_graphs(matched),
    }
    with bench_server(graphs, prefix="bench-cpu-") as server:
        yield server


def run(
    *,
    blocks: int = 8,
    runs: int = 48,
    clients: int = 8,
    stored_threads: Sequence[int] = STORED_THREADS,
    matched: Mapping[str, Mapping[str, Any]] | None = None,
    parts: Sequence[str] = PARTS,
) -> dict[str, Any]:
    matched = matched or supersteps.matched_chains(GRAPHS)
    stored_threads = stored_threads if "stored" in parts else ()
    with cpu_server(matched) as server, cpu_server(matched) if stored_threads else nullcontext() as second:
        assert server.process is not None
        other = (second.url, second.process.pid) if second is not None and second.process is not None else None
        result = measure(
            server.url,
            server.process.pid,
            matched,
            blocks=blocks,
            runs=runs,
            clients=clients,
            stored_threads=stored_threads,
            second=other,
            parts=parts,
        )
    return {"result": result, "figures": figures(result)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_per_run", description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=8, help="blocks per side of each comparison (default 8)")
    parser.add_argument("--runs", type=int, default=48, help="runs per block (default 48)")
    parser.add_argument("--clients", type=int, default=8, help="conversations in the closed loop (default 8)")
    parser.add_argument(
        "--stored",
        type=int,
        nargs="*",
        default=list(STORED_THREADS),
        help="threads stored for the stored-threads figures, each reached in turn (default 2000 10000; none or 0: skip them)",
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
        help="which comparisons besides the floor against itself (default: all of them)",
    )
    args = parser.parse_args(argv)
    counts = tuple(count for count in args.stored if count > 0)
    out = run(blocks=args.blocks, runs=args.runs, clients=args.clients, stored_threads=counts, parts=args.parts)
    print(render_table(out["figures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
