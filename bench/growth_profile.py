"""Where a run's server CPU goes as a deployment grows: py-spy on the server, by owner and call site.

    python -m bench.growth_profile [--stored 2000 10000] [--runs 96] [--late-turn 50]
    python -m bench.growth_profile --stored 0 --graphs campus_supervisor   # conversation length only

`bench.cpu_per_run` says *how much* more a run costs with threads stored or late in a
conversation; this says *who* spends it. One `langgraph dev` (the CPU server's graphs) is
sampled with py-spy (``record --nonblocking --subprocesses --format raw``: the server is never
paused, so its CPU readings stay its own) while blocks of runs go through it, and every sample
is charged to its *owner*: the innermost frame that belongs to this repo (``server/``,
``graphs/``, ``bench/``), to langgraph-runtime-inmem, to langgraph-api, to langgraph itself
(the Pregel loop, checkpoints, channels), to langchain (the model's runnable machinery) or to the
HTTP stack; the standard library and plain libraries (pickle, orjson, copy, aiosqlite) are charged
to whoever called them. Each owner's share times the block's server CPU per run gives its
milliseconds per run, so the growth of each owner is read directly:

* stored threads: the floor with 0 (the same store, before any were made) against ``--stored``
  threads stored (each one paused run of the pause floor, as `bench.cpu_per_run` makes them);
* conversation length: turns 1 to runs/clients against turns ``--late-turn`` + 1 onwards, per
  chat graph (conversations taken there untimed and unsampled).

The top call sites of this repo and of the runtime come with each profile. Figures only.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from bench import conversations, cpu_per_run, floor, supersteps
from bench.harness import REPO_ROOT
from bench.turns import GRAPHS, Conversation, conversation

HTTP_STACK = ("starlette", "uvicorn", "sse_starlette", "httpx", "httpcore")
OWNERS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("this repo", lambda path: path.startswith(str(REPO_ROOT)) and "/.venv/" not in path),
    ("langgraph-runtime-inmem", lambda path: "/langgraph_runtime_inmem/" in path),
    ("langgraph-api", lambda path: "/langgraph_api/" in path),
    ("langgraph", lambda path: "/langgraph/" in path or "/langgraph_checkpoint" in path),
    ("langchain", lambda path: "/langchain_core/" in path or "/langchain" in path),
    ("http stack", lambda path: any(f"/{name}/" in path for name in HTTP_STACK)),
    ("aiosqlite (checkpoints, journal)", lambda path: "/aiosqlite/" in path),
)
"""Who a frame belongs to, by its file; the first that matches."""
UNOWNED = "event loop and other"
EVENT_LOOP = ("/asyncio/base_events.py", "/selectors.py", "/asyncio/selector_events.py")
"""Frames of the event loop itself: a sample whose innermost owned frame lies beyond one is the
loop's (waiting, scheduling), not the code that started the loop."""
PY_SPY_RATE = 250
"""Samples per second (py-spy's default is 100): more samples for blocks of a few seconds."""


def spy_args(executable: str, pid: int) -> list[str]:
    """py-spy's command: every process of the server, never paused, full paths, collapsed stacks."""
    flags = ["--subprocesses", "--nonblocking", "--full-filenames", "--rate", str(PY_SPY_RATE), "--format", "raw"]
    return [executable, "record", "--pid", str(pid), *flags]


def py_spy() -> str:
    """The py-spy executable beside this interpreter, or on PATH."""
    here = Path(sys.executable).with_name("py-spy")
    found = str(here) if here.exists() else shutil.which("py-spy")
    if found is None:
        raise SystemExit("py-spy is not installed: pip install py-spy")
    return found


def owner_of(path: str) -> str | None:
    for name, matches in OWNERS:
        if matches(path):
            return name
    return None


def _frame(text: str) -> tuple[str, str]:
    """py-spy's raw frame ``function (path:line)`` -> (function with file and line, path)."""
    function, _, where = text.rpartition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    short = path.split("site-packages/")[-1].replace(str(REPO_ROOT) + "/", "")
    return f"{function} ({short}:{where.rstrip(')').rsplit(':', 1)[-1]})", path


@dataclass
class Profile:
    """Samples charged to owners and to the owners' innermost frames (call sites)."""

    samples: int = 0
    by_owner: collections.Counter[str] = field(default_factory=collections.Counter)
    by_site: dict[str, collections.Counter[str]] = field(default_factory=lambda: collections.defaultdict(collections.Counter))

    def add_raw(self, text: str) -> None:
        """py-spy ``--format raw``: ``frame;frame;...;innermost count`` per line (outermost first)."""
        for line in text.splitlines():
            stack, _, count_text = line.rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            count = int(count_text)
            self.samples += count
            owner, site = UNOWNED, ""
            for raw in reversed(stack.split(";")):
                label, path = _frame(raw)
                if path.endswith(EVENT_LOOP):
                    break
                found = owner_of(path)
                if found is not None:
                    owner, site = found, label
                    break
            self.by_owner[owner] += count
            if site:
                self.by_site[owner][site] += count

    def share(self, owner: str) -> float:
        return self.by_owner[owner] / self.samples if self.samples else 0.0


@dataclass
class Sampled:
    """A profiled set of blocks: the server CPU per run and where it went."""

    label: str
    cpu_ms_per_run: float
    profile: Profile

    def ms(self, owner: str) -> float:
        return self.cpu_ms_per_run * self.profile.share(owner)


async def sampled_blocks(
    label: str,
    client: LangGraphClient,
    pid: int,
    make: Callable[[], Any],
    *,
    blocks: int,
    runs: int,
    cpu: Callable[[], float],
) -> Sampled:
    """``blocks`` blocks of ``runs`` runs (conversations from ``make``, made untimed), each one
    sampled by py-spy from just before to just after its runs; threads deleted after each."""
    profile, cpu_s, done = Profile(), 0.0, 0
    for _ in range(blocks):
        talks = await make()
        await cpu_per_run.settle(cpu)
        with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as out:
            path = Path(out.name)
        spy = subprocess.Popen(
            [*spy_args(py_spy(), pid), "--output", str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await asyncio.sleep(1.0)  # py-spy attaches
        block = await cpu_per_run.run_block(talks, runs, cpu)
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
        profile.add_raw(path.read_text(errors="replace") if path.exists() else "")
        path.unlink(missing_ok=True)
        cpu_s, done = cpu_s + block.cpu_s, done + block.runs
        await cpu_per_run.forget(client, talks)
    return Sampled(label, cpu_s * 1000 / done if done else float("nan"), profile)


async def profile_growth(
    url: str,
    pid: int,
    *,
    stored: Sequence[int],
    graphs: Sequence[str],
    blocks: int,
    runs: int,
    clients: int,
    late_turn: int,
    shown: Callable[[tuple[Sampled, Sampled]], None] = lambda pair: None,
) -> list[tuple[Sampled, Sampled]]:
    """Pairs (reference, grown): the floor on the store as it is against the floor with each
    ``stored`` count of threads stored; each chat graph's first turns against its late ones."""

    def cpu() -> float:
        return cpu_per_run.group_cpu_seconds(pid)

    client = get_client(url=url)
    out: list[tuple[Sampled, Sampled]] = []
    try:

        async def fresh(graph_id: str) -> list[Conversation]:
            return [conversation(client, graph_id) for _ in range(clients)]

        async def late(graph_id: str) -> list[Conversation]:
            talks = await fresh(graph_id)
            for talk in talks:
                talk.turns = cpu_per_run.aligned(talk.turns, late_turn)  # the texts of turns 1-10

            async def advance(talk: Conversation) -> None:
                while talk.done < late_turn:
                    await talk.turn()

            await asyncio.gather(*(advance(talk) for talk in talks))
            return talks

        sizes = {"blocks": blocks, "runs": runs, "cpu": cpu}
        await sampled_blocks("warm-up", client, pid, lambda: fresh(floor.GRAPH_ID), blocks=1, runs=clients, cpu=cpu)
        for graph_id in graphs:
            early = await sampled_blocks(
                f"{graph_id} turns 1-{runs // clients}", client, pid, lambda g=graph_id: fresh(g), **sizes
            )
            late_label = f"{graph_id} turns {late_turn + 1}-{late_turn + runs // clients}"
            grown = await sampled_blocks(late_label, client, pid, lambda g=graph_id: late(g), **sizes)
            out.append((early, grown))
            shown(out[-1])
        if stored:
            empty = await sampled_blocks("floor, store as it was", client, pid, lambda: fresh(floor.GRAPH_ID), **sizes)
            have = 0
            for count in stored:
                fillers = [conversation(client, floor.PAUSE_GRAPH_ID) for _ in range(clients)]
                await cpu_per_run.run_block(fillers, count - have, cpu)
                have = count
                label = f"floor, {count:,} threads stored"
                grown = await sampled_blocks(label, client, pid, lambda: fresh(floor.GRAPH_ID), **sizes)
                out.append((empty, grown))
                shown(out[-1])
        return out
    finally:
        await client.aclose()


def report(pairs: Sequence[tuple[Sampled, Sampled]], *, top: int = 8) -> str:
    """Per pair: ms of server CPU per run by owner, reference and grown, and the growth; then the
    top call sites of this repo and of the runtime in the grown profile, with their growth."""
    lines: list[str] = []
    owners = [name for name, _ in OWNERS] + [UNOWNED]
    for reference, grown in pairs:
        lines.append(f"== {grown.label} vs {reference.label}")
        lines.append(
            f"   server CPU per run {grown.cpu_ms_per_run:.2f} ms vs {reference.cpu_ms_per_run:.2f} ms "
            f"({grown.cpu_ms_per_run / reference.cpu_ms_per_run:.2f}x); "
            f"samples {grown.profile.samples:,} / {reference.profile.samples:,}"
        )
        lines.append(f"   {'owner':<26} {'ms/run':>8} {'ref ms':>8} {'+ms':>7}  share")
        for owner in owners:
            lines.append(
                f"   {owner:<26} {grown.ms(owner):8.2f} {reference.ms(owner):8.2f} "
                f"{grown.ms(owner) - reference.ms(owner):+7.2f}  {grown.profile.share(owner):5.1%}"
            )
        for owner in ("this repo", "langgraph-runtime-inmem", "langgraph-api"):
            sites = grown.profile.by_site.get(owner) or {}
            if not sites:
                continue
            lines.append(f"   top call sites of {owner} (ms/run grown vs reference):")
            ref_sites = reference.profile.by_site.get(owner) or collections.Counter()
            for site, count in sorted(sites.items(), key=lambda kv: -kv[1])[:top]:
                ms = grown.cpu_ms_per_run * count / grown.profile.samples
                ref_ms = reference.cpu_ms_per_run * ref_sites.get(site, 0) / max(reference.profile.samples, 1)
                lines.append(f"     {ms:6.2f} {ref_ms:6.2f}  {site}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.growth_profile", description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, nargs="*", default=[2000, 10000], help="stored-thread counts (0 or none: skip)")
    parser.add_argument("--graphs", nargs="*", default=[g for g in GRAPHS if g not in conversations.NEW_THREAD_PER_TURN])
    parser.add_argument("--late-turn", type=int, default=45, help="late blocks run turns N+1 .. N+runs/clients (default 45)")
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--runs", type=int, default=80)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args(argv)
    stored = [count for count in args.stored if count > 0]
    matched = supersteps.matched_chains(GRAPHS)
    with cpu_per_run.cpu_server(matched) as server:
        assert server.process is not None
        asyncio.run(
            profile_growth(
                server.url,
                server.process.pid,
                stored=sorted(stored),
                graphs=args.graphs,
                blocks=args.blocks,
                runs=args.runs,
                clients=args.clients,
                late_turn=args.late_turn,
                shown=lambda pair: print(report([pair]), flush=True),
            )
        )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
