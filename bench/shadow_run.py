"""`playbook shadow` at scale: one run per class of thread vs every thread, on this repo's four graphs.

    python -m bench.shadow_run [--threads 250 1000] [--all-at-every-size]

Issue 24's target: ``playbook shadow`` by classes over 1,000 live threads in at most 3 minutes on
2 cores, at a cost that grows with the number of classes, not of threads.

Starts a `langgraph dev` of this repo's langgraph.json (offline model, unpaced) in a temporary
folder and fills it with live threads at mixed positions (`thread_plan`), `CONCURRENCY` threads at
a time: ticket_triage paused at its plan approval, or approved and finished; campus_supervisor
after 1-3 turns; fan_room after 1-2 turns through a run context; recycling_guide after 1-3 turns.
The texts vary a little, the state shapes stay in a handful of classes. The server is then stopped
with SIGINT (which writes its persistence) and started again on the same folder: that is the live
server. Sizes are measured in turn on one folder (the 1,000 are the 250 plus 750 more).

At each size ``python -m migrations_playbook shadow`` runs in a fresh process as a user runs it,
this checkout on both sides (``--live-code`` and ``--candidate``), ``--persistence`` the live folder:

* by classes: the default, one thread per class plus a seeded sample of 5;
* ``--all``: every thread, at the smallest size only (``--all-at-every-size``: at every size, slow).

Each figure is the command's wall time (interpreter start to exit: the live scan, three staging
servers started on copies of the folder, the runs, the comparison), with what its report says:
threads total, threads run, classes (its first note), the verdict (pass expected: the code is
identical) and the seconds per thread run. A graph whose served code differs from its committed
lock (the live server's guard logs it: a working tree in the middle of a change) is named in the
note: its threads are stamped with code the shadow's staging servers may no longer serve. Figures
only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client

from bench.harness import REPO_CONFIG, REPO_ROOT, SERVER_ENV, Figure, render_table
from migrations_playbook.staging.server import DevServer

GRAPHS = ("ticket_triage", "campus_supervisor", "fan_room", "recycling_guide")
"""Thread ``i`` belongs to ``GRAPHS[i % 4]``."""
SHADOW_ENV = {**SERVER_ENV, "OFFLINE_TOKEN_DELAY_MS": "0"}
"""The live server's and the command's (its staging servers inherit it): offline model, unpaced."""
CONCURRENCY = 24
"""Threads created at once; each thread's turns run one after the other."""
TARGET_S = 180.0
TARGET_THREADS = 1_000
"""Issue 24: by classes, 1,000 live threads in at most 3 minutes on 2 cores."""
COMMAND_TIMEOUT_S = 3600
STOP_KILLED = -9
"""`DevServer.stop`'s return code when the server had to be killed (its persistence may be incomplete)."""

APPROVE = {"kind": "plan_approval", "answer": "approve"}
TICKET_TEXTS = (
    "Please refund the double charge on my invoice",
    "Please refund the double charge on my last invoice",
    "Please refund the double charge on my March invoice",
)
CAMPUS_TEXTS = ("3층 좌석 남았어?", "오늘 학식 메뉴 뭐야?", "4층 좌석 남았어?", "내일 학식 메뉴 뭐야?")
FAN_TEXTS = ("LG 트윈스 역사 알려줘", "오늘 경기 어때?", "LG 트윈스 우승 몇 번 했어?")
RECYCLING_TEXTS = ("페트병 어떻게 버려?", "라벨은?", "뚜껑은?", "유리병은 어떻게 버려?")
FAN_CONTEXT = {"team_name": "LG"}


def log(message: str) -> None:
    print(f"[bench shadow {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the live threads ---------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadPlan:
    """One live thread: its graph, its runs in order (each ``{"input": ...}`` or ``{"command": ...}``)
    and the run context they are given."""

    graph_id: str
    runs: tuple[Mapping[str, Any], ...]
    context: Mapping[str, Any] | None = None


def _user(text: str) -> dict[str, Any]:
    return {"input": {"messages": [{"role": "user", "content": text}]}}


def _turns(texts: Sequence[str], first: int, count: int) -> tuple[dict[str, Any], ...]:
    return tuple(_user(texts[(first + n) % len(texts)]) for n in range(count))


def thread_plan(i: int) -> ThreadPlan:
    """The ``i``-th live thread, deterministic: the graph by ``i % 4``, its position and texts by ``i // 4``."""
    graph_id, k = GRAPHS[i % len(GRAPHS)], i // len(GRAPHS)
    if graph_id == "ticket_triage":
        opening = _user(TICKET_TEXTS[k % len(TICKET_TEXTS)])
        return ThreadPlan(graph_id, (opening, {"command": {"resume": APPROVE}}) if k % 2 else (opening,))
    if graph_id == "campus_supervisor":
        return ThreadPlan(graph_id, _turns(CAMPUS_TEXTS, k, 1 + k % 3))
    if graph_id == "fan_room":
        return ThreadPlan(graph_id, _turns(FAN_TEXTS, k, 1 + k % 2), FAN_CONTEXT)
    return ThreadPlan(graph_id, _turns(RECYCLING_TEXTS, k, 1 + k % 3))


async def populate(url: str, start: int, stop: int) -> None:
    """Live threads ``start..stop-1`` (`thread_plan`), `CONCURRENCY` at a time."""
    client = get_client(url=url)
    semaphore = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        plan = thread_plan(i)
        async with semaphore:
            thread_id = (await client.threads.create(graph_id=plan.graph_id))["thread_id"]
            for run in plan.runs:
                await client.runs.wait(thread_id, plan.graph_id, context=dict(plan.context or {}) or None, **run)

    try:
        await asyncio.gather(*(one(i) for i in range(start, stop)))
    finally:
        await client.aclose()


async def statuses(url: str) -> dict[str, int]:
    """Live threads per status."""
    client = get_client(url=url)
    try:
        counts = {s: await client.threads.count(status=s) for s in ("idle", "interrupted", "busy", "error")}
    finally:
        await client.aclose()
    return {s: n for s, n in counts.items() if n}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STALE_LOCK = re.compile(r"the committed lock of graph '([^']+)' is stale: it says \S+, the running code is (\S+)")


def stale_locks(log_text: str) -> list[str]:
    """``graph code-hash`` for each graph a `langgraph dev` log says was served with code other than its
    committed lock (the runtime guard's warning), in order of first mention."""
    found = (f"{graph} {digest}" for graph, digest in _STALE_LOCK.findall(_ANSI.sub("", log_text)))
    return list(dict.fromkeys(found))


# -- the command ----------------------------------------------------------------------------

_RUN_NOTE = re.compile(r"^(\d+) of (\d+) thread\(s\) run on both codes \((\d+) class\(es\)")


def run_counts(notes: Sequence[str]) -> tuple[int, int, int]:
    """(threads run, threads, classes) from a shadow report's notes: the one that says
    ``X of Y thread(s) run on both codes (Z class(es); ...)``."""
    for note in notes:
        found = _RUN_NOTE.match(note)
        if found:
            run, total, classes = (int(g) for g in found.groups())
            return run, total, classes
    raise ValueError("the shadow report has no 'X of Y thread(s) run on both codes (Z class(es)' note")


def shadow(url: str, workdir: Path, *, every: bool) -> dict[str, Any]:
    """``playbook shadow`` against the live server, this checkout on both sides, in a fresh process."""
    command = [
        sys.executable,
        "-m",
        "migrations_playbook",
        "shadow",
        "--live",
        url,
        "--persistence",
        str(workdir),
        "--live-code",
        str(REPO_ROOT),
        "--candidate",
        str(REPO_CONFIG),
        "--format",
        "json",
        *(["--all"] if every else []),
    ]
    started = time.perf_counter()
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        cwd=REPO_ROOT,
        env={**os.environ, **SHADOW_ENV},
        check=False,
    )
    seconds = time.perf_counter() - started
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        report = None
    if result.returncode not in (0, 1) or report is None:
        raise RuntimeError(
            f"playbook shadow{' --all' if every else ''} failed (exit {result.returncode}) after {seconds:.0f} s:\n"
            f"{result.stdout[-1500:]}\n{result.stderr[-3000:]}"
        )
    run, total, classes = run_counts(report["notes"])
    return {
        "every": every,
        "seconds": seconds,
        "exit": result.returncode,
        "verdict": report["verdict"],
        "threads": sum(g["threads_scanned"] for g in report["graphs"].values()),
        "threads_noted": total,
        "threads_run": run,
        "classes": classes,
        "findings": [f"{f['code']} {f['graph_id']}" for f in report["findings"]],
        "notes": report["notes"],
    }


# -- measuring ------------------------------------------------------------------------------


def _stop(server: DevServer) -> None:
    if server.stop() == STOP_KILLED:
        raise RuntimeError("the live server did not stop on SIGINT in time: its persistence may be incomplete")


def measure(workdir: Path, sizes: Sequence[int], *, all_at_every_size: bool) -> list[dict[str, Any]]:
    rows, have = [], 0
    ordered = sorted(sizes)
    for size in ordered:
        log(f"{size:,} threads: populating {size - have:,} more")
        started = time.perf_counter()
        server = DevServer(REPO_CONFIG, workdir, env=SHADOW_ENV).start()
        try:
            asyncio.run(populate(server.url, have, size))
        finally:
            _stop(server)  # SIGINT: the persistence is written
        populate_s, have = time.perf_counter() - started, size
        live = DevServer(REPO_CONFIG, workdir, env=SHADOW_ENV).start()
        try:
            counts = asyncio.run(statuses(live.url))
            log(f"{size:,} threads: populated in {populate_s:.0f} s {counts}; playbook shadow by classes")
            by_classes = shadow(live.url, workdir, every=False)
            log(f"{size:,} threads: by classes {by_classes['seconds']:.0f} s, {by_classes['verdict']}")
            every = None
            if all_at_every_size or size == ordered[0]:
                log(f"{size:,} threads: playbook shadow --all")
                every = shadow(live.url, workdir, every=True)
                log(f"{size:,} threads: --all {every['seconds']:.0f} s, {every['verdict']}")
        finally:
            _stop(live)
        stale = stale_locks(live.log_path.read_text(errors="replace"))
        rows.append(
            {
                "threads": size,
                "populate_s": round(populate_s, 1),
                "statuses": counts,
                "stale_locks": stale,
                "by_classes": by_classes,
                "all": every,
            }
        )
    return rows


def _note(run: Mapping[str, Any]) -> str:
    per = run["seconds"] / run["threads_run"] if run["threads_run"] else float("nan")
    text = (
        f"{run['threads_run']:,} of {run['threads']:,} threads run, {run['classes']} classes, verdict {run['verdict']}; "
        f"{per:.2f} s per thread run"
    )
    if run["findings"]:
        text += f"; findings on identical code: {', '.join(run['findings'][:5])}"
    return text


def figures(rows: Sequence[dict[str, Any]]) -> list[Figure]:
    """Per size: the by-classes wall time (against the smallest size's: flat is the target's shape;
    judged at `TARGET_THREADS` and above), and the ``--all`` wall time where it was measured
    (against by classes on the same threads)."""
    out: list[Figure] = []
    first = rows[0] if rows else None
    for row in rows:
        n = f"{row['threads']:,} threads"
        classes = row["by_classes"]
        judged = row["threads"] >= TARGET_THREADS
        note = _note(classes) + f"; populate {row['populate_s']} s {row['statuses']}"
        if row.get("stale_locks"):
            note += f"; served code differs from its committed lock: {', '.join(row['stale_locks'])}"
        if row["all"] is None:
            note += f"; --all not measured at {row['threads']:,} (slow): --shadow-all-every-size measures it"
        reference = first["by_classes"]["seconds"] if first is not None and row is not first else None
        out.append(
            Figure(
                section="shadow",
                name=f"{n}: shadow by classes",
                value=classes["seconds"],
                unit="s",
                reference=reference,
                reference_name=f"by classes at {first['threads']:,} threads" if reference is not None and first else "",
                target=f"<= {TARGET_S:.0f} s" if judged else "",
                met=classes["seconds"] <= TARGET_S and classes["verdict"] == "pass" if judged else None,
                note=note,
            )
        )
        if row["all"] is not None:
            out.append(
                Figure(
                    section="shadow",
                    name=f"{n}: shadow --all",
                    value=row["all"]["seconds"],
                    unit="s",
                    reference=classes["seconds"],
                    reference_name="by classes, same threads",
                    note=_note(row["all"]),
                )
            )
    return out


def run(sizes: Sequence[int], *, all_at_every_size: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-shadow-") as tmp:
        rows = measure(Path(tmp) / "live", sizes, all_at_every_size=all_at_every_size)
    return {"rows": rows, "figures": figures(rows)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.shadow_run", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[250, 1000])
    parser.add_argument("--all-at-every-size", action="store_true", help="time --all at every size, not only the smallest")
    args = parser.parse_args(argv)
    print(render_table(run(args.threads, all_at_every_size=args.all_at_every_size)["figures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
