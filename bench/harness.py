"""What every benchmark shares: the server it talks to, its statistics, its table.

* `bench_server`: a `langgraph dev` in a temporary folder (never the repo), from a
  langgraph.json written there: the graphs asked for (by module path) plus the
  server-level settings of the repo's own langgraph.json (``auth``, ``http``...),
  so what is measured is the deployment as `make run` serves it. The repo's
  langgraph.json is read, never changed.
* `server_runs`: the server's own per-run timings (``run_queue_ms``,
  ``run_exec_ms``) parsed from its log.
* `Figure`, `percentile`, `ratio`, `render_table`: pure, so they are unit tested
  (tests/unit/test_bench_harness.py).
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from migrations_playbook.staging.server import DevServer

REPO_ROOT = Path(__file__).resolve().parents[1]
REPO_CONFIG = REPO_ROOT / "langgraph.json"

SERVER_ENV = {"MODEL": "offline", "AUTH_TOKENS": "", "AUTH_OPERATORS": ""}
"""Offline model; auth (when langgraph.json enables it) in its dev mode: no tokens."""

MIRRORED_KEYS = ("auth", "http", "store", "checkpointer", "python_version")
"""Server-level settings copied from the repo's langgraph.json into the bench config."""

VERSIONED_PACKAGES = ("langgraph", "langgraph-api", "langgraph-runtime-inmem", "langgraph-cli", "langgraph-sdk")


# -- servers --------------------------------------------------------------------------


def repo_graphs() -> dict[str, str]:
    """graph id -> module path, as the repo's langgraph.json lists them."""
    return dict(json.loads(REPO_CONFIG.read_text())["graphs"])


def write_config(folder: Path, graphs: Mapping[str, str], *, mirror_repo: bool = True) -> Path:
    """A langgraph.json in ``folder`` serving ``graphs`` (and the repo's server settings)."""
    config: dict[str, Any] = {"dependencies": [str(REPO_ROOT)], "graphs": dict(graphs)}
    if mirror_repo:
        repo = json.loads(REPO_CONFIG.read_text())
        config.update({key: repo[key] for key in MIRRORED_KEYS if key in repo})
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config, indent=2))
    return path


@contextmanager
def bench_server(
    graphs: Mapping[str, str],
    *,
    prefix: str = "bench-",
    mirror_repo: bool = True,
    env: Mapping[str, str] | None = None,
    extra_args: tuple[str, ...] = (),
    config: Path | None = None,
    workdir: Path | None = None,
) -> Iterator[DevServer]:
    """`langgraph dev` serving ``graphs`` from a temporary folder; stopped (SIGINT) on exit.

    ``config`` and ``workdir``: serve that langgraph.json from that folder instead (a
    temporary copy of a project whose graphs are file paths relative to it).
    """
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        folder = Path(tmp)
        path = config or write_config(folder, graphs, mirror_repo=mirror_repo)
        where = workdir or folder / "server"
        with DevServer(path, where, env={**SERVER_ENV, **(env or {})}, extra_args=extra_args) as server:
            yield server


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FIELD = re.compile(r"(\w+)=(\S+)")
_RUN_ENDED = ("Background run succeeded", "Background run interrupted")


def parse_run_log(text: str) -> list[dict[str, Any]]:
    """One dict per finished run in a `langgraph dev` log (colours stripped):
    ``graph_id``, ``queue_ms`` (created -> started), ``exec_ms`` (started -> ended)."""
    runs = []
    for line in _ANSI.sub("", text).splitlines():
        if not any(marker in line for marker in _RUN_ENDED):
            continue
        fields = dict(_FIELD.findall(line))
        if "run_exec_ms" not in fields:
            continue
        runs.append(
            {
                "graph_id": fields.get("graph_id"),
                "run_id": fields.get("run_id"),
                "queue_ms": int(fields.get("run_wait_time_ms", 0)),
                "exec_ms": int(fields["run_exec_ms"]),
            }
        )
    return runs


def server_runs(server: DevServer, run_ids: set[str] | None = None) -> list[dict[str, Any]]:
    """`parse_run_log` of the server's log so far, optionally only ``run_ids``."""
    runs = parse_run_log(server.log_path.read_text(errors="replace"))
    return runs if run_ids is None else [r for r in runs if r["run_id"] in run_ids]


# -- statistics -----------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between closest ranks
    (numpy's default); NaN for no values."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be within 0..100, got {q}")
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ratio(value: float | None, reference: float | None) -> float | None:
    """``value / reference``; None when either is missing, NaN, or the reference is 0."""
    if value is None or reference is None or math.isnan(value) or math.isnan(reference) or reference == 0:
        return None
    return value / reference


# -- figures and the table ------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One line of the table: a value, its reference measured in the same run, the ratio."""

    section: str
    """Which measurement: ``turns``, ``ttfv``, ``gate``, ``checkpoints``, ``floor``."""
    name: str
    value: float | None
    unit: str
    reference: float | None = None
    reference_name: str = ""
    target: str = ""
    """The issue's target for this figure, in words (empty: informational)."""
    met: bool | None = None
    """Whether the target is met (None: no target)."""
    note: str = ""
    ratio: float | None = field(default=None)

    def __post_init__(self) -> None:
        if self.ratio is None:
            object.__setattr__(self, "ratio", ratio(self.value, self.reference))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def format_value(value: float | None, unit: str, *, signed: bool = False) -> str:
    """``1,005 ms``, ``12.5 us``, ``+3.25 B``: precision by magnitude, thousands separated."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    magnitude = abs(value)
    sign = "+" if signed else ""
    if magnitude >= 100 or float(value).is_integer():
        text = f"{value:{sign},.0f}"
    elif magnitude >= 10:
        text = f"{value:{sign},.1f}"
    else:
        text = f"{value:{sign},.2f}"
    return f"{text} {unit}".rstrip()


def verdict(met: bool | None) -> str:
    return {True: "met", False: "NOT met", None: ""}[met]


TABLE_HEADERS = ("figure", "value", "reference", "ref value", "value - ref", "ratio", "target", "")


def table_rows(figures: Sequence[Figure]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for figure in figures:
        rows.append(
            (
                figure.name,
                format_value(figure.value, figure.unit),
                figure.reference_name,
                format_value(figure.reference, figure.unit) if figure.reference_name else "",
                format_value(figure.value - figure.reference, figure.unit, signed=True)
                if figure.value is not None and figure.reference is not None
                else "",
                f"{figure.ratio:.2f}x" if figure.ratio is not None else "",
                figure.target,
                verdict(figure.met),
            )
        )
    return rows


SECTION_TITLES = {
    "turns": "1. turn latency and throughput per graph vs the floor graph (same server, runs.wait)",
    "cpu": "1b. server CPU per run (user + system of the langgraph dev process group) vs the matched floors, alternated blocks",
    "ttfv": "2. time to first visible token (campus_supervisor) and the filter's CPU cost",
    "gate": "3. gate scan vs bare paged search (+ get_state)",
    "checkpointer": "3b. gate over a PostgreSQL checkpointer vs a bare SELECT of the latest checkpoint per thread",
    "shadow": "3c. playbook shadow by classes vs --all on live threads of the four graphs",
    "checkpoints": "4. checkpoint bytes (the SQLite checkpointer's rows per thread), DeltaChannel vs plain add_messages",
    "floor": "5. the single-client floor of langgraph dev",
}


def render_table(figures: Sequence[Figure]) -> str:
    """Every figure in one plain-text table, grouped by section, columns aligned.

    Numeric columns are right-aligned; a section title line precedes its rows.
    """
    rows = table_rows(figures)
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(TABLE_HEADERS)]
    right = {1, 3, 4, 5}

    def line(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(cell.rjust(width) if i in right else cell.ljust(width) for i, (cell, width) in pairs).rstrip()

    out = [line(TABLE_HEADERS), line(["-" * w for w in widths])]
    section = None
    for figure, row in zip(figures, rows, strict=True):
        if figure.section != section:
            section = figure.section
            out.append(SECTION_TITLES.get(section, section))
        out.append(line(row))
        if figure.note:
            out.append(" " * 4 + figure.note)
    return "\n".join(out)


def targets_summary(figures: Sequence[Figure]) -> tuple[int, int]:
    """(met, total) over the figures that carry a target."""
    judged = [f for f in figures if f.met is not None]
    return sum(1 for f in judged if f.met), len(judged)


# -- the machine ----------------------------------------------------------------------


def cpu_model(cpuinfo: str) -> str:
    """The ``model name`` of /proc/cpuinfo text (first CPU), or ``unknown``."""
    for raw in cpuinfo.splitlines():
        key, _, value = raw.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return "unknown"


def load_average() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except OSError:
        return None


def machine() -> dict[str, Any]:
    """nproc, Python, CPU model, OS and the LangGraph package versions."""
    try:
        cpu = cpu_model(Path("/proc/cpuinfo").read_text())
    except OSError:
        cpu = platform.processor() or "unknown"
    versions = {}
    for package in VERSIONED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    try:
        commit = (
            subprocess.run(
                ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": sys.version.split()[0],
        "cpu": cpu,
        "platform": platform.platform(),
        "versions": versions,
        "commit": commit,
    }
