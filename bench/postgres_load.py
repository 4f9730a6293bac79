"""The same concurrent load on the SQLite checkpointer (today's default) and on PostgreSQL.

    python -m bench --only postgres            # 200 runs + 4 paused tickets per pass
    python -m bench.postgres_load [--runs 200] [--paused 4] [--passes 2]

`bench.load_run` on two fresh `langgraph dev` servers of the repo's graphs, auth and routes:
one with the repo's SQLite checkpointer (`server.persistence`), one with
`server.postgres_checkpointer` (``AsyncPostgresSaver``) on a throwaway PostgreSQL
server (tests/postgres_server.py: fsync off, like a test server, not a tuned one). Each
pass creates every run at once across the four graphs and answers the paused tickets
mid-load; passes alternate (SQLite, PostgreSQL, SQLite, ...) so a change in the machine's
load falls on both. Figures: runs per second (over the pass's wall time), p50 and p95 of a
run's time from creation to its end, the server's peak RSS, and the runs that went wrong
(errors, stuck, lost or duplicated inputs, threads without exactly one success). Nothing
is asserted (tests/integration/test_load_postgres_server.py does).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from typing import Any, Final

from bench import load_run
from bench.harness import Figure, render_table

PASSES: Final = 2
WRONG: Final = ("errors", "stuck", "busy_threads", "not_exactly_one_success", "lost_inputs", "duplicated_inputs")
"""The counts that must be 0; their sum is the "runs that went wrong" figure."""


def measure(*, runs: int, paused: int, passes: int = PASSES) -> dict[str, list[dict[str, Any]]]:
    """Every pass's `bench.load_run` result per checkpointer (one PostgreSQL server for all passes)."""
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in load_run.CHECKPOINTERS}
    with load_run.throwaway_postgres() as uri:
        for _ in range(passes):
            for checkpointer in load_run.CHECKPOINTERS:
                results[checkpointer].append(load_run.run(checkpointer, runs, paused=paused, postgres_uri=uri))
    return results


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [row[key] for row in rows if row.get(key) is not None]
    return statistics.fmean(values) if values else None


def figures(results: dict[str, list[dict[str, Any]]]) -> list[Figure]:
    sqlite, postgres = results["sqlite"], results["postgres"]
    runs, paused = postgres[0]["runs"], postgres[0]["paused_answered_mid_load"].split("/")[1]
    load = f"{runs} concurrent runs + {paused} paused, {len(postgres)} passes"
    note = "mean of the passes"
    out = [
        Figure(
            section="postgres",
            name=f"{name} ({load}), PostgreSQL",
            value=_mean(postgres, key),
            unit=unit,
            reference=_mean(sqlite, key),
            reference_name="SQLite (default)",
            note=note,
        )
        for name, key, unit in (
            ("runs per second", "runs_per_s", "runs/s"),
            ("run p50", "p50_ms", "ms"),
            ("run p95", "p95_ms", "ms"),
        )
    ]
    out.append(
        Figure(
            section="postgres",
            name=f"server peak RSS ({load}), PostgreSQL",
            value=max(row["server_peak_rss_mb"] or 0 for row in postgres),
            unit="MB",
            reference=max(row["server_peak_rss_mb"] or 0 for row in sqlite),
            reference_name="SQLite (default)",
            note="highest of the passes",
        )
    )
    out.append(
        Figure(
            section="postgres",
            name=f"runs that went wrong ({load}), PostgreSQL",
            value=sum(row[key] for row in postgres for key in WRONG),
            unit="runs",
            reference=sum(row[key] for row in sqlite for key in WRONG),
            reference_name="SQLite (default)",
            target="0",
            met=all(row[key] == 0 for row in postgres for key in WRONG),
            note="errors, stuck, lost/duplicated inputs, not exactly one success; all passes",
        )
    )
    return out


def run(*, runs: int = 200, paused: int = 4, passes: int = PASSES) -> dict[str, Any]:
    results = measure(runs=runs, paused=paused, passes=passes)
    return {"rows": results, "figures": figures(results)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.postgres_load", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--paused", type=int, default=4)
    parser.add_argument("--passes", type=int, default=PASSES)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.paused < 0 or args.passes < 1:
        parser.error("--runs and --passes must be positive, --paused 0 or more")
    print(render_table(run(runs=args.runs, paused=args.paused, passes=args.passes)["figures"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
