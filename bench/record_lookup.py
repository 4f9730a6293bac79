"""This repo's per-run look-ups in the runtime's records, at 0 to 50,000 stored threads (issue 39).

    python -m bench.record_lookup [--stored 0 2000 10000 50000] [--runs 200]

Per run, the journal (`server/persistence/thread_records.py`), `thread_status` and the run
handler's admission find one thread's record and its runs: on ``Runs.put`` the runs running on
the thread, the journal row's record and runs, the settle's record and runs, and on
``Threads.set_joint_status`` the journal row's again. Until issue 39 each was a scan of both of
the runtime's lists (``store["threads"]``, ``store["runs"]``); now `RecordIndex` finds them. This
builds a store the runtime's way (one thread and one finished run per stored thread, as
`bench.cpu_per_run` stores them with the pause floor), then, for each size, times ``--runs``
runs' worth of look-ups both ways on a thread that keeps getting new runs (the index follows the
appends), in CPU time of this process. The server-level figure is `bench.cpu_per_run`'s
stored-threads comparison; this one reaches 50,000 threads, which the server bench cannot afford
here (filling a `langgraph dev` with 10,000 threads takes 10-20 minutes). Figures only.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from server.persistence.record_index import RecordIndex

SIZES = (0, 2_000, 10_000, 50_000)


class Store(dict[str, Any]):
    """The runtime's store is a dict that takes attributes (the index is kept on it)."""


def _thread(thread_id: uuid.UUID) -> dict[str, Any]:
    return {"thread_id": thread_id, "status": "interrupted", "metadata": {"graph_id": "bench_pause"}, "values": {"value": 1}}


def _run(thread_id: uuid.UUID, status: str = "interrupted") -> dict[str, Any]:
    now = datetime.now(UTC)
    return {"run_id": uuid.uuid4(), "thread_id": thread_id, "status": status, "created_at": now, "updated_at": now}


def stored(count: int) -> Store:
    store = Store(threads=[], runs=[])
    for _ in range(count):
        thread_id = uuid.uuid4()
        store["threads"].append(_thread(thread_id))
        store["runs"].append(_run(thread_id))
    return store


def scanned(store: Store, thread_id: uuid.UUID) -> int:
    """The look-ups of one run as scans (the code before issue 39; ``UUID.__eq__`` as the settle's,
    the ids' integers as the journal's)."""
    key = thread_id.int
    found = len([r["run_id"] for r in store["runs"] if r["thread_id"] == thread_id and r["status"] == "running"])  # before()
    for _ in range(2):  # the journal row on Runs.put and on set_joint_status
        found += next((1 for t in store["threads"] if t["thread_id"].int == key), 0)
        found += len([r for r in store["runs"] if r["thread_id"].int == key])
    found += next((1 for t in store["threads"] if t["thread_id"] == thread_id), 0)  # settle
    found += len([r for r in store["runs"] if r["thread_id"] == thread_id])
    return found


def indexed(index: RecordIndex, thread_id: uuid.UUID) -> int:
    """The same look-ups through the index."""
    found = len([r for r in index.runs_of(thread_id) if r["status"] == "running"])
    for _ in range(2):
        found += index.thread(thread_id) is not None
        found += len(index.runs_of(thread_id))
    found += index.thread(thread_id) is not None
    found += len(index.runs_of(thread_id))
    return found


def measure(sizes: Sequence[int], runs: int) -> list[dict[str, Any]]:
    out = []
    for size in sizes:
        row: dict[str, Any] = {"stored": size}
        for way in ("scan", "index"):
            store = stored(size)
            index = RecordIndex(store)
            talk = uuid.uuid4()
            store["threads"].append(_thread(talk))
            indexed(index, talk)  # built once, at the server's first operation (not timed)
            started = time.process_time()
            for _ in range(runs):
                store["runs"].append(_run(talk, "pending"))  # Runs.put appends, as the runtime does
                found = scanned(store, talk) if way == "scan" else indexed(index, talk)
                if found < 1:
                    raise AssertionError("the conversation's thread was not found")
            row[f"{way}_us_per_run"] = (time.process_time() - started) * 1e6 / runs
        out.append(row)
    return out


def render(rows: Sequence[dict[str, Any]]) -> str:
    lines = [f"{'threads stored':>14} {'scans, us/run':>14} {'index, us/run':>14}"]
    lines += [f"{r['stored']:>14,} {r['scan_us_per_run']:>14,.1f} {r['index_us_per_run']:>14,.1f}" for r in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.record_lookup", description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    print(render(measure(args.stored, args.runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
