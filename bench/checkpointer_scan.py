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
  checkpoint_id DESC`` of every thread's latest root checkpoint (checkpoint and
  metadata jsonb decoded by psycopg), streamed by a named cursor 500 rows a round trip
  (the gate's own fetch size), best of three;
* the gate: ``playbook gate --checkpointer URI --format json`` against the unchanged
  v1 fixture (every check runs and nothing is found), in a fresh process; its time is
  the command's, from ``main()`` to the report (LangGraph's import, the candidate's
  load, the locks, the scan), and its peak RSS the child's own ``VmHWM``; best of two.
  The same command on an empty database gives the fixed part (``startup``, best of
  three), so the per-thread rate without it is shown beside (not judged).

The issue's targets: gate threads/s at least 0.5x the floor's, peak RSS under 300 MB.
Figures only: nothing is asserted.
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

from bench.gate_scan import GATE_CHILD
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
FLOOR_BATCH = 500
FLOOR_RUNS = 3
GATE_RUNS = 2
STARTUP_RUNS = 3
"""Each figure is the best of its runs (a busy machine only slows a run down); the startup's best
is the smallest, so the rate without it errs low."""


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
                columns = [r[0] for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                    "AND table_schema = current_schema() ORDER BY ordinal_position", (table,),
                )]
                picked = ", ".join("ids.tid" if c == "thread_id" else f"x.{c}" for c in columns)
                conn.execute(
                    f"INSERT INTO {table} ({', '.join(columns)}) SELECT {picked} FROM template_{table} x, {ids} "
                    "WHERE x.thread_id = %s", (template,),
                )
        conn.execute("VACUUM ANALYZE")


def count_threads(uri: str) -> tuple[int, int]:
    """(threads, checkpoint rows)."""
    import psycopg

    with psycopg.connect(uri) as conn:
        row = conn.execute("SELECT count(DISTINCT thread_id), count(*) FROM checkpoints").fetchone()
    return int(row[0]), int(row[1])


# -- the two scans ---------------------------------------------------------------------------


def floor_scan(uri: str) -> tuple[int, float]:
    """(rows, seconds) of the bare SELECT, connection included, best of ``FLOOR_RUNS``."""
    import psycopg

    best, rows = float("inf"), 0
    for _ in range(FLOOR_RUNS):
        started = time.perf_counter()
        with psycopg.connect(uri) as conn:
            conn.read_only = True
            with conn.cursor(name="floor", binary=True) as cursor:
                cursor.itersize = FLOOR_BATCH
                cursor.execute(FLOOR_SQL)
                rows = sum(1 for _ in cursor)
            conn.rollback()
        best = min(best, time.perf_counter() - started)
    return rows, best


def gate_scan(uri: str, project: Path, locks: Path) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", GATE_CHILD, "gate", "--checkpointer", uri, "--candidate", str(project / "langgraph.json"),
         "--live-contract", str(locks), "--format", "json", "--no-progress"],
        capture_output=True, text=True, timeout=1800, cwd=REPO_ROOT, check=False,
    )
    line = next((l for l in result.stderr.splitlines() if l.startswith("BENCH ")), None)
    if line is None or not result.stdout.strip():
        raise RuntimeError(f"playbook gate failed (exit {result.returncode}):\n{result.stderr[-2000:]}")
    fields = dict(part.split("=") for part in line.split()[1:])
    report = json.loads(result.stdout)
    return {
        "threads": sum(g["threads_scanned"] for g in report["graphs"].values()),
        "seconds": float(fields["elapsed"]),
        "peak_rss_mb": int(fields["peak_kb"]) / 1024,
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
            conn.execute("CREATE DATABASE empty")
        uri, empty = server.url_for("bench"), server.url_for("empty")
        for database in (uri, empty):
            seed_templates(database)
            stash_templates(database)
        startup = min(gate_scan(empty, project, locks)["seconds"] for _ in range(STARTUP_RUNS))
        have = 0
        for size in sorted(sizes):
            started = time.perf_counter()
            grow(uri, have, size)
            populate_s, have = time.perf_counter() - started, size
            threads, checkpoints = count_threads(uri)
            floor_rows, floor_s = floor_scan(uri)
            gate = min((gate_scan(uri, project, locks) for _ in range(GATE_RUNS)), key=lambda run: run["seconds"])
            rows.append(
                {
                    "threads": size,
                    "threads_in_store": threads,
                    "checkpoint_rows": checkpoints,
                    "populate_s": round(populate_s, 1),
                    "floor_rows": floor_rows,
                    "floor_seconds": floor_s,
                    "floor_threads_per_s": floor_rows / floor_s,
                    "gate_threads": gate["threads"],
                    "gate_seconds": gate["seconds"],
                    "gate_threads_per_s": gate["threads"] / gate["seconds"],
                    "gate_startup_seconds": startup,
                    "gate_scan_threads_per_s": gate["threads"] / max(gate["seconds"] - startup, 1e-9),
                    "gate_peak_rss_mb": gate["peak_rss_mb"],
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
        out += [
            Figure(section="checkpointer", name=f"{n}: gate rate", value=gate, unit="thr/s", reference=floor,
                   reference_name="bare SELECT (floor)", target=f">= {RATIO_TARGET:.2f}x",
                   met=gate / floor >= RATIO_TARGET,
                   note=f"gate verdict {row['gate_verdict']} ({row['gate_findings']} findings), "
                        f"{row['gate_threads']:,} threads in {row['gate_seconds']:.2f} s, of which "
                        f"{row['gate_startup_seconds']:.2f} s startup (the same command on an empty store); "
                        f"floor {row['floor_rows']:,} rows in {row['floor_seconds']:.2f} s; "
                        f"{row['checkpoint_rows']:,} checkpoint rows; populate {row['populate_s']} s"),
            Figure(section="checkpointer", name=f"{n}: gate rate, startup excluded", value=row["gate_scan_threads_per_s"],
                   unit="thr/s", reference=floor, reference_name="bare SELECT (floor)"),
            Figure(section="checkpointer", name=f"{n}: gate peak RSS", value=row["gate_peak_rss_mb"], unit="MB",
                   target=f"< {RSS_LIMIT_MB:.0f} MB", met=row["gate_peak_rss_mb"] < RSS_LIMIT_MB),
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
