"""The gate over a self-hosted PostgreSQL checkpointer vs a bare SELECT of the same rows.

    python -m bench.checkpointer_scan [--threads 2000 20000]

Starts its own PostgreSQL server in a temporary folder (tests/postgres_server.py: initdb
+ pg_ctl on a free loopback port, stopped and removed at the end) and fills one
database the way a self-hosted service fills it: the gate's v1 fixture project compiled
with `PostgresSaver` and invoked with a ``thread_id`` (tests/fixtures/gate_projects/
store_seed.py), five template threads, then copied row for row (``INSERT ... SELECT``
in the three saver tables, new thread ids) up to each size in turn (one database: the
20,000 are the 2,000 plus 18,000 more). Every fifth thread is paused at ``triage``
(helpdesk, an ``interrupt()``), the rest idle: half helpdesk (a finished run), half
notes (a finished chat turn); 4.4 checkpoints per thread on average (their history).
``VACUUM ANALYZE`` after each fill, as autovacuum leaves a live database. Then, over
the same rows:

* the floor: a bare ``SELECT DISTINCT ON (thread_id) ... ORDER BY thread_id,
  checkpoint_id DESC`` of every thread's latest root checkpoint, streamed by a named
  cursor 500 rows a round trip (the gate's own fetch size), its ``checkpoint`` and
  ``metadata`` jsonb decoded as psycopg decodes them by default (``json.loads``), in this
  process (no interpreter start, psycopg already imported), connection included, best
  of three. Beside it, not judged, the same SELECT with both columns read as text and
  not decoded (``transfer only``): what the server and the wire cost alone;
* LangGraph's own reader, not judged: ``PostgresSaver.get_tuple`` of every thread's head
  (`saver_scan`), what reading these tables through the saver costs before anything is
  derived or checked;
* the gate: ``playbook gate --checkpointer URI --format json`` against the unchanged
  v1 fixture (every check runs and nothing is found), in a fresh process; its time is
  the command's, from ``main()`` to the report (LangGraph's import, the candidate's
  load, the locks, the scan), best of three. Beyond the floor's one row per thread it
  reads every namespace head the thread's state needs with its channel blobs and pending
  writes, decodes them with LangGraph's serializer, derives status, next, tasks and
  interrupts (an idle thread from its row, the others through ``get_state`` on a
  stand-in of the live graph), and runs every rule on the snapshot; on PostgreSQL it does
  so in one process per core (at most 4), each reading a range of thread ids in the
  snapshot the first exported (`scan.partitioned`). Its peak RSS is the sum of
  every process's own peak (``VmHWM`` of the command, plus the largest worker's times
  the workers; pages the workers share with it copy-on-write are counted twice).
  The scan's own time, inside the same run, is the call of `scan.partitioned`
  (the store's split, every part read, decoded, derived and judged, the workers'
  results back); the rest is the fixed ``startup`` (LangGraph's import, the candidate's
  load and description, the locks, the connection, the report).

The issue's targets: gate threads/s at least 0.5x the floor's, peak RSS under 300 MB. Both
rates are judged: the whole command's, and the scan's without the fixed startup (about a
second of importing LangGraph and loading the candidate, which alone is ten times the
floor's whole time at 2,000 threads). Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.harness import REPO_ROOT, Figure, render_table

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "gate_projects" / "v1"
RATIO_TARGET = 0.5
RSS_LIMIT_MB = 300.0
TEMPLATES = ("helpdesk-triage-0", "helpdesk-done", "notes-echo", "helpdesk-done", "notes-echo")
"""Thread ``i`` is a copy of ``TEMPLATES[i % 5]``: 20% paused at triage, 80% idle."""
TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
FLOOR_SQL = (
    "SELECT DISTINCT ON (thread_id) thread_id, checkpoint_id, checkpoint, metadata FROM checkpoints "
    "WHERE checkpoint_ns = '' ORDER BY thread_id, checkpoint_id DESC"
)
TRANSFER_SQL = (
    "SELECT DISTINCT ON (thread_id) thread_id, checkpoint_id, checkpoint::text, metadata::text FROM checkpoints "
    "WHERE checkpoint_ns = '' ORDER BY thread_id, checkpoint_id DESC"
)
"""The floor's rows with nothing decoded (text in, left as it came)."""
FLOOR_BATCH = 500
FLOOR_RUNS = 3
GATE_RUNS = 3
"""Each figure is the best of its runs (a busy machine only slows a run down)."""


GATE_CHILD = """
import re, resource, sys, time
from migrations_playbook.cli import main
started = time.perf_counter()
from migrations_playbook.sources import scan  # on the clock: it imports LangGraph, part of the command's time
scans, partitioned = [], scan.partitioned
def timed(*args, **kwargs):
    begun = time.perf_counter()
    try:
        return partitioned(*args, **kwargs)
    finally:
        scans.append(time.perf_counter() - begun)
scan.partitioned = timed  # store_commands.gate looks it up when it runs
code = main(sys.argv[1:])
elapsed = time.perf_counter() - started
try:  # VmHWM: this image's own peak (ru_maxrss keeps the parent's RSS from before exec on Linux)
    peak_kb = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
except (OSError, AttributeError):
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
worker_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest forked worker's peak
print(f"BENCH elapsed={elapsed:.3f} scan={sum(scans):.3f} peak_kb={peak_kb} worker_kb={worker_kb} "
      f"processes={scan.workers()} exit={code}", file=sys.stderr)
"""
"""`bench.gate_scan`'s child, plus the scan's own time, the forked workers' peak and how many processes read."""


def thread_id(i: int) -> str:
    return f"t{i:07d}"


# -- the store -------------------------------------------------------------------------------


def seed_templates(uri: str) -> None:
    """The v1 threads, made with `PostgresSaver` as a service makes them (tables set up first)."""
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.fixtures.gate_projects.store_seed import seed

    with PostgresSaver.from_conn_string(uri) as saver:
        saver.setup()
        seed(saver)


def stash_templates(uri: str) -> None:
    """Move the seeded rows out of the saver tables into ``template_<table>`` (which the gate
    never reads): the store then holds the numbered copies only."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        for table in TABLES:
            conn.execute(f"CREATE TABLE template_{table} AS SELECT * FROM {table}")
            conn.execute(f"DELETE FROM {table}")


def copies(start: int, stop: int) -> list[tuple[str, range]]:
    """(template, thread numbers) for threads ``start..stop-1``: thread i copies ``TEMPLATES[i % 5]``."""
    found = []
    for offset, template in enumerate(TEMPLATES):
        numbers = range(start + (offset - start) % len(TEMPLATES), stop, len(TEMPLATES))
        if numbers:
            found.append((template, numbers))
    return found


def grow(uri: str, start: int, stop: int) -> None:
    """Threads ``start..stop-1``: copies of the templates' rows in every saver table."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        for template, numbers in copies(start, stop):
            ids = (
                f"(SELECT 't' || lpad(g::text, 7, '0') AS tid "
                f"FROM generate_series({numbers.start}, {numbers.stop - 1}, {numbers.step}) g) ids"
            )
            for table in TABLES:
                columns = [
                    r[0]
                    for r in conn.execute(
                        "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                        "AND table_schema = current_schema() ORDER BY ordinal_position",
                        (table,),
                    )
                ]
                picked = ", ".join("ids.tid" if c == "thread_id" else f"x.{c}" for c in columns)
                conn.execute(
                    f"INSERT INTO {table} ({', '.join(columns)}) SELECT {picked} FROM template_{table} x, {ids} "
                    "WHERE x.thread_id = %s",
                    (template,),
                )
        conn.execute("VACUUM ANALYZE")


def count_threads(uri: str) -> tuple[int, int]:
    """(threads, checkpoint rows)."""
    import psycopg

    with psycopg.connect(uri) as conn:
        row = conn.execute("SELECT count(DISTINCT thread_id), count(*) FROM checkpoints").fetchone()
    return int(row[0]), int(row[1])


# -- the two scans ---------------------------------------------------------------------------


def floor_scan(uri: str, query: str = FLOOR_SQL) -> tuple[int, float]:
    """(rows, seconds) of the bare SELECT, connection included, best of ``FLOOR_RUNS``."""
    import psycopg

    best, rows = float("inf"), 0
    for _ in range(FLOOR_RUNS):
        started = time.perf_counter()
        with psycopg.connect(uri) as conn:
            conn.read_only = True
            with conn.cursor(name="floor", binary=True) as cursor:
                cursor.itersize = FLOOR_BATCH
                cursor.execute(query)
                rows = sum(1 for _ in cursor)
            conn.rollback()
        best = min(best, time.perf_counter() - started)
    return rows, best


def saver_scan(uri: str) -> tuple[int, float]:
    """(threads, seconds) of LangGraph's own reader over the same heads: langgraph-checkpoint-postgres's
    ``PostgresSaver.get_tuple`` of every thread's latest root checkpoint (its blobs and pending writes,
    decoded with LangGraph's serializer), the threads listed by the floor's query, one process,
    connection included. What a tool that reads these tables through the saver pays, before any
    status is derived or any rule runs."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    started = time.perf_counter()
    with psycopg.connect(uri, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        ids = [
            row["thread_id"]
            for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' ORDER BY thread_id")
        ]
        saver = PostgresSaver(conn)
        found = sum(1 for t in ids if saver.get_tuple({"configurable": {"thread_id": t, "checkpoint_ns": ""}}) is not None)
    return found, time.perf_counter() - started


def gate_scan(uri: str, project: Path, locks: Path) -> dict[str, Any]:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            GATE_CHILD,
            "gate",
            "--checkpointer",
            uri,
            "--candidate",
            str(project / "langgraph.json"),
            "--live-contract",
            str(locks),
            "--format",
            "json",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=REPO_ROOT,
        check=False,
    )
    line = next((x for x in result.stderr.splitlines() if x.startswith("BENCH ")), None)
    if line is None or not result.stdout.strip():
        raise RuntimeError(f"playbook gate failed (exit {result.returncode}):\n{result.stderr[-2000:]}")
    fields = dict(part.split("=") for part in line.split()[1:])
    report = json.loads(result.stdout)
    worker_kb = int(fields["worker_kb"])  # 0: no worker was forked (a store below SHARE_MIN_THREADS)
    processes = int(fields["processes"]) if worker_kb else 1
    return {
        "threads": sum(g["threads_scanned"] for g in report["graphs"].values()),
        "seconds": float(fields["elapsed"]),
        "scan_seconds": float(fields["scan"]),
        "processes": processes,
        "peak_rss_mb": (int(fields["peak_kb"]) + (processes - 1) * worker_kb) / 1024,
        "command_peak_rss_mb": int(fields["peak_kb"]) / 1024,
        "worker_peak_rss_mb": worker_kb / 1024,
        "verdict": report["verdict"],
        "findings": len(report["findings"]),
    }


@contextlib.contextmanager
def postgres() -> Iterator[Any]:
    sys.path.insert(0, str(REPO_ROOT))
    from tests.postgres_server import PostgresServer

    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


def write_locks(folder: Path) -> Path:
    from migrations_playbook.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["contract", "--config", str(FIXTURE / "langgraph.json"), "--write", "--contracts-dir", str(folder)])
    if code != 0:
        raise RuntimeError(f"playbook contract --write exited {code}")
    return folder


def measure(sizes: Sequence[int]) -> list[dict[str, Any]]:
    import psycopg

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-checkpointer-") as tmp, postgres() as server:
        project = Path(tmp) / "v1"
        shutil.copytree(FIXTURE, project)
        locks = write_locks(Path(tmp) / "locks")
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        uri = server.url_for("bench")
        seed_templates(uri)
        stash_templates(uri)
        have = 0
        for size in sorted(sizes):
            started = time.perf_counter()
            grow(uri, have, size)
            populate_s, have = time.perf_counter() - started, size
            threads, checkpoints = count_threads(uri)
            floor_rows, floor_s = floor_scan(uri)
            _, transfer_s = floor_scan(uri, TRANSFER_SQL)
            saver_threads, saver_s = saver_scan(uri)
            runs = [gate_scan(uri, project, locks) for _ in range(GATE_RUNS)]
            gate = min(runs, key=lambda run: run["seconds"])
            scan_s = min(run["scan_seconds"] for run in runs)
            rows.append(
                {
                    "threads": size,
                    "threads_in_store": threads,
                    "checkpoint_rows": checkpoints,
                    "populate_s": round(populate_s, 1),
                    "floor_rows": floor_rows,
                    "floor_seconds": floor_s,
                    "floor_threads_per_s": floor_rows / floor_s,
                    "transfer_seconds": transfer_s,
                    "transfer_threads_per_s": floor_rows / transfer_s,
                    "saver_seconds": saver_s,
                    "saver_threads_per_s": saver_threads / saver_s,
                    "gate_threads": gate["threads"],
                    "gate_seconds": gate["seconds"],
                    "gate_threads_per_s": gate["threads"] / gate["seconds"],
                    "gate_scan_seconds": scan_s,
                    "gate_startup_seconds": gate["seconds"] - gate["scan_seconds"],
                    "gate_scan_threads_per_s": gate["threads"] / scan_s,
                    "gate_peak_rss_mb": gate["peak_rss_mb"],
                    "gate_command_peak_rss_mb": gate["command_peak_rss_mb"],
                    "gate_worker_peak_rss_mb": gate["worker_peak_rss_mb"],
                    "gate_processes": gate["processes"],
                    "gate_verdict": gate["verdict"],
                    "gate_findings": gate["findings"],
                }
            )
    return rows


def figures(rows: Sequence[dict[str, Any]]) -> list[Figure]:
    out: list[Figure] = []
    for row in rows:
        n = f"{row['threads']:,} threads"
        gate, floor = row["gate_threads_per_s"], row["floor_threads_per_s"]
        scan = row["gate_scan_threads_per_s"]
        out += [
            Figure(
                section="checkpointer",
                name=f"{n}: gate rate, whole command",
                value=gate,
                unit="thr/s",
                reference=floor,
                reference_name="bare SELECT (floor)",
                target=f">= {RATIO_TARGET:.2f}x",
                met=gate / floor >= RATIO_TARGET,
                note=f"gate verdict {row['gate_verdict']} ({row['gate_findings']} findings), "
                f"{row['gate_threads']:,} threads in {row['gate_seconds']:.2f} s in {row['gate_processes']} "
                f"process(es), of which {row['gate_startup_seconds']:.2f} s startup (all but the scan, in that "
                f"run); floor {row['floor_rows']:,} rows in {row['floor_seconds']:.2f} s (jsonb decoded "
                f"by psycopg), {row['transfer_seconds']:.2f} s as text, undecoded; "
                f"{row['checkpoint_rows']:,} checkpoint rows; populate {row['populate_s']} s",
            ),
            Figure(
                section="checkpointer",
                name=f"{n}: gate rate, startup excluded",
                value=scan,
                unit="thr/s",
                reference=floor,
                reference_name="bare SELECT (floor)",
                target=f">= {RATIO_TARGET:.2f}x",
                met=scan / floor >= RATIO_TARGET,
            ),
            Figure(
                section="checkpointer",
                name=f"{n}: gate rate, startup excluded",
                value=scan,
                unit="thr/s",
                reference=row["transfer_threads_per_s"],
                reference_name="SELECT, transfer only",
            ),
            *(
                [
                    Figure(
                        section="checkpointer",
                        name=f"{n}: gate rate, whole command",
                        value=gate,
                        unit="thr/s",
                        reference=row["saver_threads_per_s"],
                        reference_name="PostgresSaver.get_tuple",
                        note="LangGraph's own reader of each head (blobs, writes, serde), one process: "
                        "what reading these tables through the saver costs before any status or rule",
                    )
                ]
                if "saver_threads_per_s" in row
                else []
            ),
            Figure(
                section="checkpointer",
                name=f"{n}: gate peak RSS, all processes",
                value=row["gate_peak_rss_mb"],
                unit="MB",
                target=f"< {RSS_LIMIT_MB:.0f} MB",
                met=row["gate_peak_rss_mb"] < RSS_LIMIT_MB,
                note=f"command {row['gate_command_peak_rss_mb']:.1f} MB"
                + (
                    f" + {row['gate_processes'] - 1} worker(s) of {row['gate_worker_peak_rss_mb']:.1f} MB at most"
                    if row["gate_processes"] > 1
                    else ""
                ),
            ),
        ]
    return out


def run(sizes: Sequence[int]) -> dict[str, Any]:
    rows = measure(sizes)
    return {"rows": rows, "figures": figures(rows)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checkpointer_scan", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[2000, 20000])
    args = parser.parse_args(argv)
    print(render_table(run(args.threads)["figures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
