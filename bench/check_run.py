"""`playbook check` (and the gate alone) at 1,000 and 10,000 live threads: wall time by classes, peak memory, growth.

    python -m bench.check_run [--threads 1000 10000] [--keep DIR]

Issue 39's targets: ``check`` by classes <= 3 minutes at 10,000 threads on 2 cores, peak memory under 500 MB;
the gate alone at 10,000.

The live threads are `bench.shadow_run`'s: this repo's four graphs at mixed positions (ticket_triage paused at
its plan approval or approved and finished; campus_supervisor and recycling_guide after 1-3 turns; fan_room
after 1-2 turns through a run context), every one made by real runs on a `langgraph dev` of this repo (offline
model, unpaced), so each has the runs, inputs and answers a deployment keeps. Sizes grow on one folder (the
10,000 are the 1,000 plus 9,000 more); ``--keep DIR`` keeps the folder (outside the repo) and a later run with
the same DIR starts from the threads it already holds, so the slow part, populating, is paid once.

At each size, against the live server restarted on the folder, with this checkout on both sides (identical
code: the verdict must be pass), each in a fresh process as a user runs it:

* ``playbook gate --format json``;
* ``playbook check --persistence <live folder> --live-code <this checkout> --format json`` (by classes).

Each figure is the command's wall time (interpreter start to exit) and two peaks, sampled from /proc every
0.2 s: the command's own process (``VmHWM``: the playbook, reading every thread, classing them and comparing)
and the whole process tree (the playbook, its gate child for the deployed code's noise, and the three staging
`langgraph dev` servers it starts, each holding a copy of every thread). The check's phases are timed from its
process tree (when the staging servers come up and go). Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import REPO_CONFIG, REPO_ROOT, Figure, render_table
from bench.shadow_run import SHADOW_ENV, populate, run_counts, stale_locks, statuses
from migrations_playbook.staging.server import DevServer

TARGET_S = 180.0
TARGET_MB = 500.0
TARGET_THREADS = 10_000
"""Issue 39: check by classes <= 3 minutes at 10,000 threads on 2 cores, peak memory under 500 MB."""
COMMAND_TIMEOUT_S = 5400
SAMPLE_S = 0.2
COUNT_FILE = "bench-threads"
"""In a ``--keep`` folder: how many of `thread_plan`'s threads it holds."""


def log(message: str) -> None:
    print(f"[bench check {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- memory of a process tree -----------------------------------------------------------------


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text().split()
            found += [int(child) for child in text]
    except OSError:
        pass
    return found


def _tree(pid: int) -> list[int]:
    seen, todo = [], [pid]
    while todo:
        current = todo.pop()
        seen.append(current)
        todo += _children(current)
    return seen


@dataclass
class Peaks:
    """What the sampler saw: the root process's own peak RSS and the tree's largest summed RSS (MB)."""

    own_mb: float = 0.0
    tree_mb: float = 0.0
    processes: int = 0
    timeline: list[tuple[float, int]] = field(default_factory=list)
    """(seconds since start, processes in the tree) each time that number changed: the phases of a check (the
    playbook alone reads and classes the live threads; the staging servers come up for the shadow)."""


def sample(pid: int, peaks: Peaks, done: threading.Event) -> None:
    started = time.perf_counter()
    while not done.is_set():
        tree = [p for p in _tree(pid) if _status_kb(p, "VmRSS")]
        peaks.own_mb = max(peaks.own_mb, _status_kb(pid, "VmHWM") / 1024)
        peaks.tree_mb = max(peaks.tree_mb, sum(_status_kb(p, "VmRSS") for p in tree) / 1024)
        peaks.processes = max(peaks.processes, len(tree))
        if not peaks.timeline or peaks.timeline[-1][1] != len(tree):
            peaks.timeline.append((time.perf_counter() - started, len(tree)))
        done.wait(SAMPLE_S)


# -- one command ----------------------------------------------------------------------------


@dataclass
class Timed:
    seconds: float
    exit: int
    report: dict[str, Any]
    peaks: Peaks
    lines: list[tuple[float, str]] = field(default_factory=list)
    """The command's stderr lines, each with the seconds since it started (shown when it fails)."""


def timed(command: str, argv: Sequence[str]) -> Timed:
    full = [sys.executable, "-m", "migrations_playbook", command, *argv, "--format", "json"]
    started = time.perf_counter()
    process = subprocess.Popen(
        full,
        cwd=REPO_ROOT,
        env={**os.environ, **SHADOW_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peaks, done = Peaks(), threading.Event()
    sampler = threading.Thread(target=sample, args=(process.pid, peaks, done), daemon=True)
    sampler.start()
    lines: list[tuple[float, str]] = []

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append((time.perf_counter() - started, line.rstrip()))

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        out, _ = process.communicate(timeout=COMMAND_TIMEOUT_S)
    finally:
        done.set()
    reader.join(5)
    seconds = time.perf_counter() - started
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        report = {}
    if process.returncode not in (0, 1) or not report:
        tail = "\n".join(text for _, text in lines[-30:])
        raise RuntimeError(f"playbook {command} failed (exit {process.returncode}) after {seconds:.0f} s:\n{out[-1500:]}\n{tail}")
    return Timed(seconds, process.returncode, report, peaks, lines)


def phases(timeline: Sequence[tuple[float, int]], limit: int = 12) -> str:
    """When the process tree changed size: ``12s x4`` (four processes from 12 s on). One process: the playbook
    reading and classing the live threads (and comparing at the end); more: a gate child for the deployed code's
    noise, the staging servers of the shadow."""
    return " ".join(f"{at:.0f}s x{count}" for at, count in timeline[:limit])


# -- measuring ------------------------------------------------------------------------------


def held(folder: Path) -> int:
    found = folder / COUNT_FILE
    return int(found.read_text()) if found.is_file() else 0


def grow(folder: Path, size: int) -> float:
    have = held(folder)
    if have >= size:
        return 0.0
    log(f"populating threads {have:,}..{size - 1:,}")
    started = time.perf_counter()
    server = DevServer(REPO_CONFIG, folder, env=SHADOW_ENV).start()
    try:
        asyncio.run(populate(server.url, have, size))
    finally:
        server.stop()  # SIGINT: the persistence is written
    (folder / COUNT_FILE).write_text(str(size))
    return time.perf_counter() - started


def measure(folder: Path, sizes: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    for size in sorted(sizes):
        populate_s = grow(folder, size)
        live = DevServer(REPO_CONFIG, folder, env=SHADOW_ENV).start()
        try:
            counts = asyncio.run(statuses(live.url))
            log(f"{size:,} threads {counts}: playbook gate")
            gate = timed("gate", ["--live", live.url, "--candidate", str(REPO_CONFIG), "--no-progress"])
            log(f"gate {gate.seconds:.0f} s, {gate.peaks.own_mb:.0f} MB; playbook check")
            check = timed(
                "check",
                [
                    "--live",
                    live.url,
                    "--persistence",
                    str(folder),
                    "--live-code",
                    str(REPO_ROOT),
                    "--candidate",
                    str(REPO_CONFIG),
                ],
            )
            log(f"check {check.seconds:.0f} s, {check.peaks.own_mb:.0f} MB own, {check.peaks.tree_mb:.0f} MB tree")
        finally:
            live.stop()
        rows.append(
            {
                "threads": size,
                "populate_s": round(populate_s, 1),
                "statuses": counts,
                "stale_locks": stale_locks(live.log_path.read_text(errors="replace")),
                "gate": gate,
                "check": check,
            }
        )
    return rows


def _run_note(check: Timed) -> str:
    report = check.report
    try:
        ran, total, classes = run_counts([n.removeprefix("shadow: ") for n in report.get("notes", [])])
        shape = f"{ran:,} of {total:,} threads run, {classes} classes"
    except ValueError:
        shape = "no run count in the notes"
    blocks = [f"{f['code']} {f['graph_id']}" for f in report.get("findings", []) if f.get("severity") == "block"]
    unproven = list(report.get("unproven") or [])
    return (
        f"{shape}; verdict {report.get('verdict')}"
        + (f"; blocks on identical code: {', '.join(blocks[:4])}" if blocks else "")
        + f"; unproven {len(report.get('unproven') or [])}"
        + "".join(f" [{u.get('thread_id')} {u.get('graph_id')}: {str(u.get('reason'))[:160]}]" for u in unproven[:3])
    )


def figures(rows: Sequence[dict[str, Any]]) -> list[Figure]:
    out: list[Figure] = []
    first = rows[0] if rows else None
    for row in rows:
        n, judged = f"{row['threads']:,} threads", row["threads"] >= TARGET_THREADS
        gate, check = row["gate"], row["check"]
        growth = first if first is not None and row is not first else None
        out.append(
            Figure(
                section="check",
                name=f"{n}: check by classes",
                value=check.seconds,
                unit="s",
                reference=growth["check"].seconds if growth else None,
                reference_name=f"at {growth['threads']:,} threads" if growth else "",
                target=f"<= {TARGET_S:.0f} s" if judged else "",
                met=(check.seconds <= TARGET_S and check.report.get("verdict") == "pass") if judged else None,
                note=_run_note(check)
                + f"; processes over time: {phases(check.peaks.timeline)}; populate {row['populate_s']} s {row['statuses']}"
                + (f"; stale locks: {row['stale_locks']}" if row["stale_locks"] else ""),
            )
        )
        out.append(
            Figure(
                section="check",
                name=f"{n}: check peak memory, playbook process",
                value=check.peaks.own_mb,
                unit="MB",
                reference=growth["check"].peaks.own_mb if growth else None,
                reference_name=f"at {growth['threads']:,} threads" if growth else "",
                target=f"< {TARGET_MB:.0f} MB" if judged else "",
                met=check.peaks.own_mb < TARGET_MB if judged else None,
                note=f"the whole tree (gate child, 3 staging servers): {check.peaks.tree_mb:.0f} MB peak over "
                f"{check.peaks.processes} processes",
            )
        )
        out.append(
            Figure(
                section="check",
                name=f"{n}: gate alone",
                value=gate.seconds,
                unit="s",
                reference=growth["gate"].seconds if growth else None,
                reference_name=f"at {growth['threads']:,} threads" if growth else "",
                note=f"verdict {gate.report.get('verdict')}; peak {gate.peaks.own_mb:.0f} MB",
            )
        )
    return out


def run(sizes: Sequence[int], keep: Path | None = None) -> dict[str, Any]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        rows = measure(keep, sizes)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
            rows = measure(Path(tmp) / "live", sizes)
    return {"rows": rows, "figures": figures(rows)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.check_run", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--keep", type=Path, help="a folder outside the repo that keeps the live threads between runs")
    args = parser.parse_args(argv)
    if args.keep is not None and args.keep.resolve().is_relative_to(REPO_ROOT):
        parser.error("--keep must be outside the repo: `langgraph dev` would reload on its writes")
    print(render_table(run(args.threads, args.keep)["figures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
