"""Gate scan throughput and memory vs. a bare paged `threads.search` + `get_state` loop.

    python -m bench.gate_scan [--threads 2000 10000] [--json FILE]

Starts its own `langgraph dev` (the gate's v1 fixture project, two graphs with
threads) in a temporary folder, creates N threads per size, mixed statuses:
20% interrupted at a node (real runs), 80% idle (created with `update_state`,
which is how most idle chat threads look to the gate: values, no pending work).
Then, over the same threads:

* bare: page through `threads.search` (500 a page) and `get_state` every thread,
  16 at a time (what a hand-written scan does);
* gate: `playbook gate --format json` in a fresh process, against the unchanged
  fixture (so every check runs and nothing is found); its peak RSS is read from
  the child's own `getrusage`.

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from langgraph_sdk import get_client

from migrations_playbook.devserver import DevServer

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "gate_projects" / "v1"
INTERRUPTED_SHARE = 0.2


async def _populate(url: str, total: int) -> None:
    client = get_client(url=url)
    interrupted = int(total * INTERRUPTED_SHARE)
    runs, writes = asyncio.Semaphore(8), asyncio.Semaphore(32)

    async def paused(i: int) -> None:
        async with runs:
            thread = await client.threads.create()
            await client.runs.wait(thread["thread_id"], "helpdesk", input={"request": f"ticket {i}", "messages": []})

    async def idle(i: int) -> None:
        graph = "helpdesk" if i % 2 else "notes"
        values = (
            {"request": f"done {i}", "messages": [], "priority": "normal", "notes": ["intake", "respond"], "response": "ok"}
            if graph == "helpdesk"
            else {"messages": [{"role": "user", "content": f"note {i}"}, {"role": "ai", "content": f"noted: {i}"}]}
        )
        async with writes:
            thread = await client.threads.create(graph_id=graph)
            await client.threads.update_state(thread["thread_id"], values, as_node="respond" if graph == "helpdesk" else "echo")

    await asyncio.gather(*(paused(i) for i in range(interrupted)), *(idle(i) for i in range(total - interrupted)))
    await client.aclose()


async def _bare_scan(url: str) -> tuple[int, float]:
    client = get_client(url=url)
    semaphore = asyncio.Semaphore(16)
    started = time.perf_counter()
    count, offset = 0, 0

    async def state(thread_id: str) -> None:
        async with semaphore:
            await client.threads.get_state(thread_id)

    while True:
        page = await client.threads.search(limit=500, offset=offset)
        await asyncio.gather(*(state(t["thread_id"]) for t in page))
        count += len(page)
        if len(page) < 500:
            break
        offset += len(page)
    elapsed = time.perf_counter() - started
    await client.aclose()
    return count, elapsed


GATE_CHILD = """
import resource, sys, time
from migrations_playbook.cli import main
started = time.perf_counter()
code = main(sys.argv[1:])
print(f"BENCH elapsed={time.perf_counter() - started:.3f} maxrss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} exit={code}", file=sys.stderr)
"""


def _gate_scan(url: str, project: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", GATE_CHILD, "gate", "--live", url, "--candidate", str(project / "langgraph.json"),
         "--format", "json", "--no-progress"],
        capture_output=True, text=True, timeout=1800,
    )
    line = next(l for l in result.stderr.splitlines() if l.startswith("BENCH "))
    fields = dict(part.split("=") for part in line.split()[1:])
    report = json.loads(result.stdout)
    return {
        "threads": sum(g["threads_scanned"] for g in report["graphs"].values()),
        "seconds": float(fields["elapsed"]),
        "peak_rss_mb": int(fields["maxrss_kb"]) / 1024,
        "verdict": report["verdict"],
    }


def run(sizes: list[int]) -> list[dict]:
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
            project = Path(tmp) / "v1"
            shutil.copytree(FIXTURE, project)
            with DevServer(project / "langgraph.json", project) as server:
                started = time.perf_counter()
                asyncio.run(_populate(server.url, size))
                populate_s = time.perf_counter() - started
                bare_count, bare_s = asyncio.run(_bare_scan(server.url))
                gate = _gate_scan(server.url, project)
        row = {
            "threads": size,
            "populate_s": round(populate_s, 1),
            "bare_threads_per_s": round(bare_count / bare_s, 1),
            "gate_threads_per_s": round(gate["threads"] / gate["seconds"], 1),
            "gate_vs_bare": round((gate["threads"] / gate["seconds"]) / (bare_count / bare_s), 2),
            "gate_peak_rss_mb": round(gate["peak_rss_mb"], 1),
            "gate_verdict": gate["verdict"],
        }
        rows.append(row)
        print(
            f"{size:>6} threads: bare {row['bare_threads_per_s']:>7} thr/s | gate {row['gate_threads_per_s']:>7} thr/s "
            f"(x{row['gate_vs_bare']}) | gate peak RSS {row['gate_peak_rss_mb']} MB | populate {row['populate_s']} s",
            flush=True,
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    rows = run(args.threads)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
