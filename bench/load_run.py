"""Concurrent runs across the four graphs on one fresh `langgraph dev`, then every thread checked.

    python -m bench.load_run [--runs 200] [--paused 4] [--checkpointer sqlite|postgres] [--postgres-uri URI]

Creates the threads first, then creates every run at once (`runs.create`, then `runs.join`
each; one client), and
afterwards reads each thread: exactly one run and it succeeded, the user's message stored
exactly once (lost and duplicated inputs are counted), the thread idle. A run that has not
answered within ``--timeout`` seconds is stuck. With ``--paused N``, N tickets are paused
at their approval before the load and answered while it runs (once a quarter of the load
has finished): each must end with two successful runs and a response.

``--checkpointer sqlite`` serves the repo's langgraph.json as it is (the custom SQLite
checkpointer, `server.persistence`); ``postgres`` swaps in
`server.postgres_checkpointer` (``AsyncPostgresSaver``) on ``--postgres-uri``, or on
a throwaway PostgreSQL server started for the run (tests/postgres_server.py). Prints one
JSON line; asserts nothing. tests/integration/test_load_postgres_server.py asserts on it;
``python -m bench --only postgres`` (bench.postgres_load) tabulates both checkpointers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from langgraph_sdk import get_client

from bench.harness import REPO_ROOT, bench_server, percentile, repo_graphs, write_config
from migrations_playbook.staging.server import DevServer

TEXTS = {
    "ticket_triage": "Please refund invoice {i}, charged twice",
    "fan_room": "오늘 경기 어땠어? {i}",
    "recycling_guide": "페트병은 어떻게 버려요? {i}",
    "campus_supervisor": "도서관 몇 시까지 열어요? {i}",
}
CONTEXTS: dict[str, dict[str, str]] = {"fan_room": {"team_name": "LG"}}
PAUSED_TEXT = "요금이 두 번 청구됐어요. 환불해 주세요 (paused {i})"

Checkpointer = Literal["sqlite", "postgres"]
CHECKPOINTERS: Final[tuple[Checkpointer, ...]] = ("sqlite", "postgres")

POSTGRES_CHECKPOINTER: Final = {"backend": "custom", "path": "server.postgres_checkpointer.postgres_checkpointer"}
"""The langgraph.json ``checkpointer`` entry of a server on PostgreSQL (`server.postgres_checkpointer`)."""

DEFAULT_TIMEOUT_S: Final = 300.0


def _one_success(statuses: Sequence[str]) -> bool:
    return list(statuses) == ["success"]


def _values(state: Any) -> dict[str, Any]:
    """A thread state's values (a graph's state is a dict here; the SDK types it as either)."""
    values = state["values"]
    return values if isinstance(values, dict) else {}


async def _pause_tickets(client: Any, count: int) -> list[tuple[str, str, dict[str, Any]]]:
    """``count`` tickets run to their approval: (thread id, text, the interrupt payload)."""
    paused = []
    for i in range(count):
        thread = await client.threads.create()
        text = PAUSED_TEXT.format(i=i)
        out = await client.runs.wait(
            thread["thread_id"], "ticket_triage", input={"messages": [{"role": "user", "content": text}]}
        )
        paused.append((thread["thread_id"], text, out["__interrupt__"][0]["value"]))
    return paused


async def load(url: str, runs: int, *, paused: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """``runs`` concurrent runs (round robin over the graphs, one new thread each), ``paused``
    tickets answered mid-load; every thread checked afterwards (see the module docstring)."""
    # Every run is created at once (the server queues them all) and then joined; a request may
    # wait for one of the client's 100 connections as long as a run may take.
    client = get_client(url=url, timeout=(10, timeout_s, 60, timeout_s))  # connect, read, write, pool
    waiting = await _pause_tickets(client, paused)
    jobs = []
    for i in range(runs):
        graph = list(TEXTS)[i % len(TEXTS)]
        thread = await client.threads.create()
        jobs.append((graph, thread["thread_id"], TEXTS[graph].format(i=i)))

    finished = 0
    quarter = asyncio.Event()
    latencies: list[float] = []
    stuck: list[str] = []

    async def timed(label: str, call: Any) -> str | None:
        nonlocal finished
        started = time.perf_counter()
        try:
            await asyncio.wait_for(call, timeout_s)
        except TimeoutError:
            stuck.append(label)
            return f"{label}: no answer within {timeout_s:.0f} s"
        except Exception as exc:  # noqa: BLE001 - counted and shown, the run's failure is the figure
            return f"{label}: {type(exc).__name__}: {str(exc)[:160]}"
        finally:
            finished += 1
            if finished >= max(1, runs // 4):
                quarter.set()
        latencies.append(time.perf_counter() - started)
        return None

    async def create_and_join(thread_id: str, graph: str, **kwargs: Any) -> None:
        run = await client.runs.create(thread_id, graph, **kwargs)
        await client.runs.join(thread_id, run["run_id"])

    def one(graph: str, thread_id: str, text: str) -> Any:
        return timed(
            f"{graph} {thread_id}",
            create_and_join(
                thread_id,
                graph,
                input={"messages": [{"role": "user", "content": text}]},
                **({"context": CONTEXTS[graph]} if graph in CONTEXTS else {}),
            ),
        )

    async def answer(thread_id: str, request: dict[str, Any]) -> str | None:
        await quarter.wait()
        resume = {"kind": request["kind"], "answer": request["options"][0]}
        return await timed(
            f"paused ticket_triage {thread_id}",
            create_and_join(thread_id, "ticket_triage", command={"resume": resume}, multitask_strategy="reject"),
        )

    started = time.perf_counter()
    outcomes = await asyncio.gather(*(one(*job) for job in jobs), *(answer(t, request) for t, _, request in waiting))
    wall = time.perf_counter() - started
    errors = [e for e in outcomes if e]
    problems = list(errors)
    lost = duplicated = not_one_success = busy = 0
    for graph, thread_id, text in jobs:
        statuses = [r["status"] for r in await client.runs.list(thread_id, limit=10)]
        thread = await client.threads.get(thread_id)
        state = await client.threads.get_state(thread_id)
        copies = [m for m in _values(state).get("messages", []) if m.get("type") == "human" and text in str(m.get("content"))]
        if not _one_success(statuses):
            not_one_success += 1
            problems.append(f"{graph} {thread_id}: runs {statuses}")
        if thread["status"] == "busy":
            busy += 1
            problems.append(f"{graph} {thread_id}: still busy")
        lost += not copies
        duplicated += len(copies) > 1
    answered = 0
    for thread_id, text, _ in waiting:
        statuses = [r["status"] for r in await client.runs.list(thread_id, limit=10)]
        thread = await client.threads.get(thread_id)
        values = _values(await client.threads.get_state(thread_id))
        copies = [m for m in values.get("messages", []) if m.get("type") == "human" and text in str(m.get("content"))]
        if statuses == ["success", "success"] and thread["status"] == "idle" and values.get("response") and len(copies) == 1:
            answered += 1
        else:
            problems.append(
                f"paused ticket {thread_id}: runs {statuses}, thread {thread['status']}, response {bool(values.get('response'))}"
            )
    await client.aclose()
    return {
        "runs": runs,
        "paused_answered_mid_load": f"{answered}/{paused}",
        "wall_s": round(wall, 1),
        "runs_per_s": round((runs + paused) / wall, 2) if wall else None,
        "p50_ms": round(percentile(latencies, 50) * 1000),
        "p95_ms": round(percentile(latencies, 95) * 1000),
        "errors": len(errors),
        "stuck": len(stuck),
        "busy_threads": busy,
        "not_exactly_one_success": not_one_success,
        "lost_inputs": lost,
        "duplicated_inputs": duplicated,
        "problems": problems[:5],
    }


def peak_rss_mb(pid: int) -> float | None:
    """Peak resident memory (VmHWM) of ``pid`` and its descendants, in MB (Linux /proc); None elsewhere."""
    proc = Path("/proc")
    if not (proc / str(pid)).exists():
        return None
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    total_kb, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        with contextlib.suppress(OSError):
            for line in (proc / str(current) / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total_kb += int(line.split()[1])
    return round(total_kb / 1024, 1)


@contextlib.contextmanager
def serve(
    checkpointer: Checkpointer, *, postgres_uri: str | None = None, env: Mapping[str, str] | None = None
) -> Iterator[DevServer]:
    """The repo's graphs, auth and routes on a fresh `langgraph dev` in a temporary folder, with
    the repo's SQLite checkpointer or `POSTGRES_CHECKPOINTER` on ``postgres_uri``."""
    extra = dict(env or {})
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(_tempdir("bench-load-config-")))
        config = write_config(tmp, repo_graphs())
        if checkpointer == "postgres":
            if postgres_uri is None:
                postgres_uri = stack.enter_context(throwaway_postgres())
            data = json.loads(config.read_text())
            data["checkpointer"] = POSTGRES_CHECKPOINTER
            config.write_text(json.dumps(data, indent=2))
            extra["CHECKPOINTER_POSTGRES_URI"] = postgres_uri
        yield stack.enter_context(bench_server({}, prefix=f"bench-load-{checkpointer}-", env=extra, config=config))


@contextlib.contextmanager
def _tempdir(prefix: str) -> Iterator[str]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield folder


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A PostgreSQL server of its own for the run (tests/postgres_server.py), stopped afterwards."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tests.postgres_server import PostgresServer

    server = PostgresServer().start()
    try:
        yield server.url
    finally:
        server.stop()


def run(
    checkpointer: Checkpointer,
    runs: int,
    *,
    paused: int = 0,
    postgres_uri: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """Serve (`serve`), load (`load`), and add the server's peak RSS."""
    with serve(checkpointer, postgres_uri=postgres_uri) as server:
        result = asyncio.run(load(server.url, runs, paused=paused, timeout_s=timeout_s))
        assert server.process is not None
        result["server_peak_rss_mb"] = peak_rss_mb(server.process.pid)
    return {"checkpointer": checkpointer, **result}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load_run", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--paused", type=int, default=0, help="tickets paused before the load and answered during it")
    parser.add_argument("--checkpointer", choices=CHECKPOINTERS, default="sqlite")
    parser.add_argument("--postgres-uri", default=os.environ.get("CHECKPOINTER_POSTGRES_URI"), help="default: a throwaway server")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds before a run counts as stuck")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.paused < 0:
        parser.error("--runs must be positive and --paused 0 or more")
    result = run(args.checkpointer, args.runs, paused=args.paused, postgres_uri=args.postgres_uri, timeout_s=args.timeout)
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
