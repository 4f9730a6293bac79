"""One benchmark suite: every graph and the gate, side by side with the server's own floor.

    python -m bench                      # the full run (what bench/README.md shows)
    python -m bench --quick              # a small run for development (~2 min)
    python -m bench --json PATH          # write the JSON there too
    python -m bench --only turns ttfv    # some sections (development; no default JSON)
    python -m bench --only gate --gate-threads 2000 10000   # the gate at the issue's 10,000 (~5 min)
    python -m bench --only checkpointer  # the gate over PostgreSQL, 2,000 and 20,000 threads (~1 min)
    python -m bench --only shadow        # playbook shadow over 250 and 1,000 live threads (not in the full run)
    python -m bench --only cpu           # server CPU per run vs the matched floors, in alternated blocks (~4 min)
    python -m bench --only postgres      # 200 concurrent runs on SQLite vs PostgreSQL, 2 passes (not in the full run)

Starts its own `langgraph dev` servers in temporary folders (never the repo
folder): one serving the repo's graphs, the floor graph (`bench.floor`), the
step- and pause-matched references (`bench.supersteps`) and the
plain-``add_messages`` variants (`bench.baselines`), with the repo's auth and
custom routes; fresh floor-only servers for the settings probe; one serving the
gate's fixture project. Then it prints ONE table (every figure, its reference
measured in the same run, the ratio, and the issue's target where there is one)
and writes the same as JSON: bench/results/latest.json for a full run of every
section, and/or ``--json PATH``.

Sections (see each module): ``turns`` (bench.turns, bench.supersteps), ``ttfv``
(bench.visible_stream), ``floor`` (bench.floor_probe), ``checkpoints``
(bench.checkpoint_growth), ``gate`` (bench.gate_scan), ``checkpointer`` (bench.checkpointer_scan:
the gate over a PostgreSQL checkpointer vs a bare SELECT of its rows), ``guard`` (bench.guard_cost:
the runtime guard on vs off). Run only when named (``--only shadow``), as it takes several minutes
and the full run stays under 10: ``shadow`` (bench.shadow_run: `playbook shadow` by classes and
``--all`` over live threads of the four graphs at mixed positions), ``postgres`` (bench.postgres_load:
the same concurrent load across the four graphs on the SQLite checkpointer and on PostgreSQL).

Exit 0 when every section ran (targets met or not: benchmarks never fail on a
figure), 1 when a section failed (its traceback is on stderr and in the JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import (
    baselines,
    checkpoint_growth,
    checkpointer_scan,
    cpu_per_run,
    floor,
    floor_probe,
    gate_scan,
    guard_cost,
    postgres_load,
    shadow_run,
    supersteps,
    turns,
    visible_stream,
)
from bench.harness import (
    MIRRORED_KEYS,
    REPO_ROOT,
    Figure,
    bench_server,
    load_average,
    machine,
    render_table,
    repo_graphs,
    server_runs,
    targets_summary,
)
from server.persistence import database_path

RESULT_VERSION = "1"
DEFAULT_JSON = REPO_ROOT / "bench" / "results" / "latest.json"
SECTIONS = ("turns", "cpu", "ttfv", "floor", "checkpoints", "gate", "checkpointer", "guard")
"""The full run's sections."""
NAMED_ONLY = ("shadow", "postgres")
"""Sections run only when ``--only`` names them (several minutes each)."""
SECTION_ORDER = {
    name: index
    for index, name in enumerate(
        ("turns", "cpu", "ttfv", "gate", "checkpointer", "shadow", "checkpoints", "floor", "guard", "postgres")
    )
}
"""Table order: the issue's numbering (1 turns, 2 ttfv, 3 gate, 4 checkpoints, 5 floor), the gate
over a checkpointer and the shadow proof beside the gate over the API, then the guard."""


@dataclass(frozen=True)
class Sizes:
    """How much each section measures."""

    turns_1_client: int
    rounds_8_clients: int
    window_s: float
    ttfv_runs: int
    floor_turns: int
    floor_settings: bool
    checkpoint_turns: int
    gate_threads: tuple[int, ...]
    checkpointer_threads: tuple[int, ...] = (2_000, 20_000)
    guard_turns_1_client: int = 2
    guard_window_s: float = 2.5
    """The guard section runs two servers twice each (on, off, on, off): smaller blocks keep the
    full run under 10 minutes; each figure is still the p50 of both passes."""
    shadow_threads: tuple[int, ...] = (250, 1_000)
    shadow_all_every_size: bool = False
    """`playbook shadow --all` is timed at the smallest of `shadow_threads` only, unless this is set."""
    cpu_blocks: int = 8
    cpu_runs: int = 48
    cpu_stored_threads: tuple[int, ...] = (2_000, 10_000)
    """`bench.cpu_per_run`: blocks per side of each comparison, runs per block (8 clients), and
    threads stored for the stored-threads figure."""
    postgres_runs: int = 200
    """Concurrent runs per pass of the postgres section (issue 29's 200)."""
    postgres_paused: int = 4
    """Tickets paused before each pass and answered during it."""


FULL = Sizes(
    turns_1_client=6,
    rounds_8_clients=2,
    window_s=5.0,
    ttfv_runs=10,
    floor_turns=8,
    floor_settings=True,
    checkpoint_turns=50,
    gate_threads=(2_000, 4_000),
)
QUICK = Sizes(
    turns_1_client=3,
    rounds_8_clients=1,
    window_s=2.0,
    ttfv_runs=3,
    floor_turns=3,
    floor_settings=False,
    checkpoint_turns=20,
    gate_threads=(500,),
    checkpointer_threads=(2_000,),
    shadow_threads=(250,),
    postgres_runs=60,
    cpu_blocks=2,
    cpu_runs=16,
    cpu_stored_threads=(400,),
    postgres_paused=2,
)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Suite:
    """Runs the sections, collecting figures, details and errors."""

    def __init__(self, sizes: Sizes, sections: Sequence[str]) -> None:
        self.sizes = sizes
        self.sections = tuple(sections)
        self.figures: list[Figure] = []
        self.details: dict[str, Any] = {}
        self.errors: dict[str, str] = {}
        self.timings: dict[str, float] = {}
        self.matched: dict[str, dict[str, Any]] = {}
        """Per graph: checkpoints per turn, whether it ends paused, its chain (`bench.supersteps`)."""

    def section(self, name: str, work: Callable[[], list[Figure]]) -> None:
        if name not in self.sections:
            return
        log(f"{name}: start")
        started = time.perf_counter()
        try:
            self.figures.extend(work())
        except Exception:  # noqa: BLE001 - one failed section must not hide the others; reported below
            self.errors[name] = traceback.format_exc()
            log(f"{name}: FAILED\n{self.errors[name]}")
        self.timings[name] = round(time.perf_counter() - started, 1)
        log(f"{name}: {self.timings[name]} s")

    def run(self) -> None:
        if {"turns", "cpu"} & set(self.sections):
            self.matched = supersteps.matched_chains(turns.GRAPHS)
        graphs = {
            **{g: repo_graphs()[g] for g in turns.GRAPHS},
            floor.GRAPH_ID: floor.MODULE_PATH,
            **supersteps.reference_graphs(self.matched),
            **baselines.served(),
        }
        if {"turns", "cpu", "ttfv", "floor", "checkpoints"} & set(self.sections):
            log("starting the main server (repo graphs + floors + add_messages variants)")
            with bench_server(graphs, prefix="bench-main-") as server:
                self.details["main_server_config"] = json.loads(server.config.read_text())
                self.section("turns", lambda: self._turns(server))
                self.section("cpu", lambda: self._cpu(server))
                self.section("ttfv", lambda: self._ttfv(server.url))
                self.section("floor", lambda: self._floor(server.url))
                self.section("checkpoints", lambda: self._checkpoints(server.url, server.workdir))
        self.section("gate", self._gate)
        self.section("checkpointer", self._checkpointer)
        self.section("guard", self._guard)
        self.section("shadow", self._shadow)
        self.section("postgres", self._postgres)
        self.figures.sort(key=lambda f: SECTION_ORDER.get(f.section, len(SECTION_ORDER)))

    def _turns(self, server: Any) -> list[Figure]:
        summary = turns.measure(
            server.url,
            lambda: server_runs(server),
            turns=self.sizes.turns_1_client,
            rounds=self.sizes.rounds_8_clients,
            window_s=self.sizes.window_s,
            references=list(supersteps.reference_graphs(self.matched)),
        )
        self.details["turns"] = summary
        self.details["supersteps"] = self.matched
        return turns.figures(summary, self.matched)

    def _cpu(self, server: Any) -> list[Figure]:
        del server  # its store holds the turns section's threads: the CPU figures get a server of their own
        out = cpu_per_run.run(
            blocks=self.sizes.cpu_blocks,
            runs=self.sizes.cpu_runs,
            stored_threads=self.sizes.cpu_stored_threads,
            matched=self.matched,
        )
        self.details["cpu"] = out["result"]
        return list(out["figures"])

    def _ttfv(self, url: str) -> list[Figure]:
        # Its own server: the offline model paced like a hosted one (the shared server is unpaced).
        del url
        result = visible_stream.run(self.sizes.ttfv_runs, visible_stream.DEFAULT_PACING_MS)
        self.details["ttfv"] = {
            "pacing_ms": visible_stream.DEFAULT_PACING_MS,
            "marks_ms": result["marks_ms"],
            "filter_cost": result["filter_cost"],
        }
        return result["figures"]

    def _floor(self, url: str) -> list[Figure]:
        probe = floor_probe.measure(
            url, turns=self.sizes.floor_turns, window_s=self.sizes.window_s, settings=self.sizes.floor_settings
        )
        self.details["floor"] = probe
        single = self.details.get("turns", {}).get("1", {}).get(floor.GRAPH_ID)
        if single is None:
            raise RuntimeError("the floor section reads the floor's 1-client figures of the turns section; run both")
        return floor_probe.figures(probe, single)

    def _checkpoints(self, url: str, workdir: Path) -> list[Figure]:
        result = checkpoint_growth.measure(url, turns=self.sizes.checkpoint_turns, baseline=True, database=database_path(workdir))
        self.details["checkpoints"] = result["rows"]
        return result["figures"]

    def _gate(self) -> list[Figure]:
        result = gate_scan.run(self.sizes.gate_threads)
        self.details["gate"] = result["rows"]
        return result["figures"]

    def _checkpointer(self) -> list[Figure]:
        result = checkpointer_scan.run(self.sizes.checkpointer_threads)
        self.details["checkpointer"] = result["rows"]
        return result["figures"]

    def _guard(self) -> list[Figure]:
        result = guard_cost.run(turns_1=self.sizes.guard_turns_1_client, rounds=1, window_s=self.sizes.guard_window_s)
        self.details["guard"] = result["rows"]
        return result["figures"]

    def _shadow(self) -> list[Figure]:
        result = shadow_run.run(self.sizes.shadow_threads, all_at_every_size=self.sizes.shadow_all_every_size)
        self.details["shadow"] = result["rows"]
        return result["figures"]

    def _postgres(self) -> list[Figure]:
        result = postgres_load.run(runs=self.sizes.postgres_runs, paused=self.sizes.postgres_paused)
        self.details["postgres"] = result["rows"]
        return result["figures"]


def header(result: dict[str, Any]) -> str:
    m = result["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    load = result["load_average"]
    before = "/".join(f"{x:.2f}" for x in load["before"]) if load["before"] else "?"
    after = "/".join(f"{x:.2f}" for x in load["after"]) if load["after"] else "?"
    return (
        f"python -m bench{' --quick' if result['mode'] == 'quick' else ''}  {result['started_at']}  "
        f"({result['duration_s']:.0f} s)\n"
        f"{m['cpu']}, nproc {m['nproc']}, Python {m['python']}; {versions}\n"
        f"load average (1/5/15 min) before {before}, after {after}; offline model; commit {m['commit']}"
    )


def to_json(suite: Suite, *, mode: str, started_at: str, duration_s: float, load: dict[str, Any]) -> dict[str, Any]:
    met, total = targets_summary(suite.figures)
    return {
        "bench_result_version": RESULT_VERSION,
        "mode": mode,
        "sections": list(suite.sections),
        "started_at": started_at,
        "duration_s": round(duration_s, 1),
        "section_seconds": suite.timings,
        "machine": machine(),
        "load_average": load,
        "mirrored_from_repo_langgraph_json": list(MIRRORED_KEYS),
        "targets": {"met": met, "total": total},
        "figures": [f.to_json() for f in suite.figures],
        "details": suite.details,
        "errors": suite.errors,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for development (bench/README.md shows a full run)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the JSON here")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SECTIONS + NAMED_ONLY,
        metavar="SECTION",
        help=f"run only these sections ({', '.join(SECTIONS + NAMED_ONLY)}); floor needs turns; "
        f"{', '.join(NAMED_ONLY)} only runs when named here",
    )
    parser.add_argument(
        "--gate-threads",
        type=int,
        nargs="+",
        metavar="N",
        help="gate scan sizes (default 2000 6000; --quick 500). 10000 adds ~4 min: the in-memory "
        "server slows as it fills (2,000 -> 10,000 threads took ~170 s to populate)",
    )
    parser.add_argument(
        "--checkpointer-threads",
        type=int,
        nargs="+",
        metavar="N",
        help="checkpointer scan sizes (default 2000 20000; --quick 2000)",
    )
    parser.add_argument(
        "--shadow-threads",
        type=int,
        nargs="+",
        metavar="N",
        help="live threads for the shadow section (default 250 1000; --quick 250); --all is timed at the smallest",
    )
    parser.add_argument(
        "--shadow-all-every-size",
        action="store_true",
        help="also time `playbook shadow --all` at the larger shadow sizes (slow: every thread on three servers)",
    )
    parser.add_argument(
        "--postgres-runs", type=int, metavar="N", help="concurrent runs per pass of the postgres section (default 200; quick 60)"
    )
    args = parser.parse_args(argv)

    sections = tuple(args.only or SECTIONS)
    mode = "quick" if args.quick else "full"
    sizes = QUICK if args.quick else FULL
    if args.gate_threads:
        sizes = replace(sizes, gate_threads=tuple(args.gate_threads))
    if args.checkpointer_threads:
        sizes = replace(sizes, checkpointer_threads=tuple(args.checkpointer_threads))
    if args.shadow_threads:
        sizes = replace(sizes, shadow_threads=tuple(args.shadow_threads))
    if args.shadow_all_every_size:
        sizes = replace(sizes, shadow_all_every_size=True)
    if args.postgres_runs:
        sizes = replace(sizes, postgres_runs=args.postgres_runs)
    suite = Suite(sizes, sections)
    started_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = {"before": load_average()}
    started = time.perf_counter()
    suite.run()
    load["after"] = load_average()
    result = to_json(suite, mode=mode, started_at=started_at, duration_s=time.perf_counter() - started, load=load)

    met, total = result["targets"]["met"], result["targets"]["total"]
    print(header(result))
    print()
    print(render_table(suite.figures))
    print()
    print(f"targets met: {met} of {total}" + (f"; FAILED sections: {', '.join(suite.errors)}" if suite.errors else ""))

    paths = [args.json] if args.json else []
    if mode == "full" and sections == SECTIONS and sizes == FULL and not suite.errors:
        paths.append(DEFAULT_JSON)
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
        log(f"wrote {path}")
    return 1 if suite.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
