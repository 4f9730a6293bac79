"""Every `playbook` command's output on the fixture projects, byte for byte, before and after a change.

    .venv/bin/python -m tests.layout_check.compare_outputs --base REV [--tree DIR] [--keep DIR]

Made for a restructure of `migrations_playbook/` that must not change behaviour. The "before"
side is a git worktree of REV (made in a temporary folder, removed afterwards); the "after"
side is ``--tree`` (default: this working tree). Both run the same fixed list of
``python -m migrations_playbook ...`` invocations (`invocations`), each with ``PYTHONPATH`` set
to its own tree and its tree as the working folder, against the SAME prepared data:

* Data is prepared once, by REV's code and REV's fixtures, in a subprocess (``--serve-data``,
  `serve_data`) that keeps the servers running until both sides are done: real `langgraph dev`
  servers (`migrations_playbook.staging.server.DevServer`) for the v1 gate project, this repo's
  graphs (offline model), the custom-auth project, the template-shaped `casebook`, the guard
  project (v1 threads, v2 served) and the context project; SQLite stores seeded the way
  tests/fixtures/gate_projects/store_seed.py seeds them; a PostgreSQL store when the machine
  has the server binaries (tests/postgres_server.py); and a loopback stand-in for LangSmith's
  query API over the recorded runs (the one tests/unit/test_activity.py uses) for `activity`.
  Thread ids are therefore the same on both sides.
* Invocations that write (``contract --write``, ``migrate --apply``/``--rollback``,
  ``snapshot --out``) write into a per-side scratch folder, onto fresh copies of the data.

Before running the list, each side is checked to import `migrations_playbook` from its own
tree, in the CLI process and in the `langgraph dev` a replay starts (a probe candidate whose
graph module records the import); exit 2 otherwise.

Each output is normalized for what is legitimately run-specific, and nothing else: the venv's,
the two trees' and the temporary folders' paths, loopback ports, the random part of temporary
names (and of the PostgreSQL replay's copy database), UUIDs and checkpoint ids (`<id-N>`: the
prepared data's ids first, in a fixed order, so a thread has the same label on both sides and in
every invocation; the others in order of first appearance), timestamps within the run (recorded
data's timestamps are data and stay) and durations. A unified diff is printed per invocation
that differs; exit 1 if any differs, 0 with "N invocations, N identical" otherwise, 2 when the
run itself could not be made (a side does not import its own tree, or the base side does not
exit as the list expects). ``--keep DIR`` writes each side's raw and normalized outputs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import difflib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
READY = "layout-check data ready"
WORKERS = 4
"""Invocations run this many at a time, both sides in one pool (a chain's in order, one after the other)."""
TIMEOUT = 300

PG_PASSWORD = "s3cret-never-printed"


# -- the invocations -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Inv:
    """One ``python -m migrations_playbook ARGS`` run. ``{tree}`` and ``{scratch}`` in an argument
    are the side's tree and scratch folder."""

    name: str
    args: tuple[str, ...]
    expect: int
    """The exit code the base side must give (a baseline that does not is no baseline)."""
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment; ``PYTHONPATH`` here is appended after the side's tree."""
    fresh: tuple[tuple[str, str], ...] = ()
    """(data path, scratch-relative path) copied before the run: a fresh copy for each side."""
    collect: tuple[str, ...] = ()
    """Scratch-relative files or folders the run writes: their contents are compared too."""
    chain: str | None = None
    """Invocations of one chain run in list order, one after the other (they share a copy)."""


def invocations(m: dict[str, Any]) -> list[Inv]:
    """The fixed list: every command, both sources, each format a command has, and the error paths."""
    url, p, t = m["urls"], m["paths"], m["threads"]
    v1, repo, auth, locks, cand, plan = url["v1"], url["repo"], url["auth"], p["v1_locks"], p["candidates"], p["plan"]
    sqlite, unlabeled = f"sqlite:///{p['store_v1']}", f"sqlite:///{p['store_unlabeled']}"
    classes = f"sqlite:///{p['store_classes']}"
    guide = t["repo"]["guide"][0]
    resume_map = '{"plan_approval": "approved", "confirm": "approve"}'
    casebook_env = (("PYTHONPATH", p["casebook_src"]),)
    activity_env = (("LANGSMITH_API_KEY", "lsv2-test"), ("LANGSMITH_ENDPOINT", url["activity"]))
    activity = ("activity", "--until", m["activity"]["until"], "--project", m["activity"]["project"])
    apply_db = "sqlite:///{scratch}/apply.db"
    ctx_tail = ("--live-contract", p["ctx_locks"], "--format", "json")

    def gate_live(*extra: str) -> tuple[str, ...]:
        return ("gate", "--live", v1, "--live-contract", locks, *extra)

    def gate_store(uri: str, *extra: str) -> tuple[str, ...]:
        return ("gate", "--checkpointer", uri, "--live-contract", locks, *extra)

    def replay_v1(candidate: str, *extra: str) -> tuple[str, ...]:
        return ("replay", "--live", v1, "--candidate", candidate, "--persistence", p["v1_project"], *extra)

    def replay_repo(*extra: str) -> tuple[str, ...]:
        return ("replay", "--live", repo, "--candidate", "{tree}/langgraph.json", "--persistence", p["repo_project"], *extra)

    def replay_store(uri: str, candidate: str, *extra: str) -> tuple[str, ...]:
        return ("replay", "--checkpointer", uri, "--live-contract", locks, "--candidate", candidate, *extra)

    def shadow_v1(candidate: str, *extra: str) -> tuple[str, ...]:
        live_code = str(Path(p["v1_config"]).parent)
        return (
            "shadow",
            "--live",
            v1,
            "--persistence",
            p["v1_project"],
            "--live-code",
            live_code,
            "--candidate",
            candidate,
            *extra,
        )

    def shadow_store(uri: str, candidate: str, *extra: str) -> tuple[str, ...]:
        live_code = str(Path(p["v1_config"]).parent)
        return (
            "shadow",
            "--checkpointer",
            uri,
            "--live-contract",
            locks,
            "--live-code",
            live_code,
            "--candidate",
            candidate,
            *extra,
        )

    def migrate(*extra: str) -> tuple[str, ...]:
        return ("migrate", "--candidate", cand["migrate"], "--plan", plan, "--live-contract", locks, *extra)

    def inflight_running(*extra: str) -> tuple[str, ...]:
        return (
            "inflight",
            "--live",
            url["guard"],
            "--running",
            p["guard_config"],
            "--lock-history",
            p["guard_contracts"],
            *extra,
        )

    invs = [
        # the parser
        Inv("help", ("--help",), 0),
        Inv("no-command", (), 2),
        Inv("migrate-help", ("migrate", "--help"), 0),
        # rules
        Inv("rules-table", ("rules",), 0),
        Inv("rules-json", ("rules", "--format", "json"), 0),
        # contract: this repo's check, fixture projects' checks and writes (into the side's scratch folder)
        Inv("contract-check-repo", ("contract", "--check"), 0),
        Inv("contract-check-changed", ("contract", "--config", cand["renamed"], "--check", "--contracts-dir", locks), 1),
        Inv(
            "contract-write-v1",
            ("contract", "--config", p["v1_config"], "--write", "--contracts-dir", "{scratch}/locks-v1"),
            0,
            collect=("locks-v1",),
        ),
        Inv(
            "contract-write-over-locks",
            ("contract", "--config", cand["migrate"], "--write", "--contracts-dir", "{scratch}/locks-over"),
            0,
            fresh=((locks, "locks-over"),),
            collect=("locks-over",),
        ),
        Inv(
            "contract-write-dependency-path",
            ("contract", "--config", p["layout_config"], "--write", "--contracts-dir", "{scratch}/locks-layout"),
            0,
            collect=("locks-layout",),
        ),
        Inv("contract-missing-config", ("contract", "--config", p["missing"] + "/langgraph.json", "--check"), 2),
        # gate --live: the v1 fixture project's threads (and other projects') against candidates
        Inv("gate-live-pass-table", gate_live("--candidate", cand["safe"]), 0),
        Inv("gate-live-block-json", gate_live("--candidate", cand["renamed"], "--format", "json"), 1),
        Inv("gate-live-block-markdown", gate_live("--candidate", cand["renamed"], "--format", "markdown"), 1),
        Inv("gate-live-strict", gate_live("--candidate", cand["field_renamed"], "--strict"), 1),
        Inv("gate-live-graph", gate_live("--candidate", cand["renamed"], "--graph", "escalation", "--graph", "notes"), 0),
        Inv("gate-live-several-findings", gate_live("--candidate", cand["migrate"], "--format", "json"), 1),
        Inv("gate-live-subgraph-node", gate_live("--candidate", cand["subgraph"]), 1),
        Inv("gate-live-no-live-contract", ("gate", "--live", v1, "--candidate", p["v1_config"], "--format", "markdown"), 0),
        Inv("gate-live-repo", ("gate", "--live", repo, "--candidate", "{tree}/langgraph.json", "--format", "json"), 0),
        Inv(
            "gate-live-auth-token",
            ("gate", "--live", auth, "--candidate", p["auth_config"], "--header", m["auth_header"], "--format", "json"),
            0,
        ),
        Inv(
            "gate-live-casebook",
            ("gate", "--live", url["casebook"], "--candidate", cand["casebook"], "--live-contract", p["casebook_locks"]),
            1,
            env=casebook_env,
        ),
        Inv(
            "gate-live-context",
            ("gate", "--live", url["ctx"], "--candidate", p["ctx_candidate"], "--live-contract", p["ctx_locks"]),
            1,
        ),
        Inv("gate-live-unknown-graph", gate_live("--candidate", p["v1_config"], "--graph", "nope"), 2),
        Inv("gate-live-missing-candidate", gate_live("--candidate", p["missing"] + "/langgraph.json"), 2),
        Inv("gate-live-import-error", gate_live("--candidate", cand["broken"]), 2),
        Inv("gate-live-bad-flag", gate_live("--candidate", p["v1_config"], "--format", "yaml"), 2),
        Inv("gate-live-auth-refused", ("gate", "--live", auth, "--candidate", p["auth_config"]), 2),
        Inv("gate-live-unreachable", ("gate", "--live", url["dead"], "--candidate", p["v1_config"]), 3),
        # gate --checkpointer: the same project's threads in self-hosted stores
        Inv("gate-sqlite-pass-table", gate_store(sqlite, "--candidate", cand["safe"]), 0),
        Inv("gate-sqlite-block-json", gate_store(sqlite, "--candidate", cand["renamed"], "--format", "json"), 1),
        Inv(
            "gate-sqlite-strict-markdown",
            gate_store(sqlite, "--candidate", cand["field_renamed"], "--strict", "--format", "markdown"),
            1,
        ),
        Inv(
            "gate-sqlite-all-threads-are",
            gate_store(unlabeled, "--candidate", p["v1_config"], "--all-threads-are", "helpdesk"),
            0,
        ),
        Inv(
            "gate-sqlite-classes",
            ("gate", "--checkpointer", classes, "--live-contract", p["classes_locks"], "--candidate", cand["classes"]),
            1,
        ),
        Inv("gate-sqlite-unlabeled", gate_store(unlabeled, "--candidate", p["v1_config"]), 2),
        # issue 25: without --live-contract the gate derives the live shape the store shows (exit 2 before)
        Inv("gate-sqlite-no-live-contract", ("gate", "--checkpointer", sqlite, "--candidate", p["v1_config"]), 0),
        # inflight
        Inv("inflight-live-table", ("inflight", "--live", v1), 0),
        Inv("inflight-live-json", ("inflight", "--live", v1, "--graph", "helpdesk", "--format", "json"), 0),
        Inv("inflight-sqlite-table", ("inflight", "--checkpointer", sqlite, "--live-contract", locks), 0),
        Inv("inflight-sqlite-json", ("inflight", "--checkpointer", sqlite, "--live-contract", locks, "--format", "json"), 0),
        Inv("inflight-running-table", inflight_running(), 0),
        Inv("inflight-running-json", inflight_running("--format", "json"), 0),
        Inv("inflight-unknown-graph", ("inflight", "--live", v1, "--graph", "nope"), 2),
        Inv(
            "inflight-sqlite-missing",
            ("inflight", "--checkpointer", f"sqlite:///{p['missing']}/x.db", "--live-contract", locks),
            3,
        ),
        # snapshot
        Inv("snapshot-live", ("snapshot", "--live", v1), 0),
        Inv(
            "snapshot-live-out",
            ("snapshot", "--live", v1, "--graph", "escalation", "--out", "{scratch}/snapshot.json"),
            0,
            collect=("snapshot.json",),
        ),
        Inv("snapshot-sqlite", ("snapshot", "--checkpointer", sqlite, "--live-contract", locks), 0),
        Inv(
            "snapshot-classes",
            ("snapshot", "--checkpointer", classes, "--live-contract", p["classes_locks"], "--graph", "mapper"),
            0,
        ),
        # replay --persistence: a second `langgraph dev` serves a copy of the live folder with the candidate
        Inv("replay-persistence-pass", replay_v1(p["v1_config"], "--resume", '"approved"'), 0),
        Inv("replay-persistence-renamed", replay_v1(cand["renamed"], "--resume", '"approved"', "--format", "markdown"), 1),
        Inv("replay-persistence-auto-resume", replay_repo("--graph", "ticket_triage", "--auto-resume", "--format", "json"), 0),
        Inv(
            "replay-persistence-resume-map",
            replay_repo(
                "--resume-map", '{"plan_approval": {"kind": "plan_approval", "answer": "reject"}}', "--resume", '"approve"'
            ),
            0,
        ),
        Inv(
            "replay-persistence-plan",
            replay_v1(cand["migrate"], "--plan", plan, "--live-contract", locks, "--resume", '"approved"', "--format", "json"),
            0,
        ),
        Inv("replay-no-staging", ("replay", "--live", v1, "--candidate", p["v1_config"]), 2),
        Inv("replay-bad-resume-map", replay_v1(p["v1_config"], "--resume-map", "[1]"), 2),
        # replay --checkpointer: the candidate in-process on a throwaway copy of the store
        Inv("replay-sqlite-json", replay_store(sqlite, p["v1_config"], "--resume-map", resume_map, "--format", "json"), 0),
        Inv("replay-sqlite-renamed", replay_store(sqlite, cand["renamed"], "--auto-resume", "--resume", '"ok"'), 1),
        Inv("replay-sqlite-and-persistence", replay_store(sqlite, p["v1_config"], "--persistence", p["v1_project"]), 2),
        # shadow: the deployed code (the v1 project) and a candidate on copies of the live threads
        Inv("shadow-persistence-identity", shadow_v1(p["v1_config"], "--format", "json"), 0),
        Inv("shadow-persistence-renamed", shadow_v1(cand["renamed"]), 1),
        Inv("shadow-sqlite-renamed", shadow_store(sqlite, cand["renamed"], "--format", "markdown"), 1),
        Inv("shadow-no-live-code", ("shadow", "--live", v1, "--persistence", p["v1_project"], "--candidate", p["v1_config"]), 2),
        # migrate: dry runs on both sources, the staging proof, apply + rollback on a fresh copy, bad plans
        Inv("migrate-live-dry-json", migrate("--live", v1, "--format", "json"), 0),
        Inv("migrate-live-apply-refused", migrate("--live", v1, "--apply"), 2),
        Inv("migrate-live-persistence", migrate("--live", v1, "--persistence", p["v1_project"], "--resume", '"approved"'), 0),
        Inv(
            "migrate-live-context",
            ("migrate", "--live", url["ctx"], "--candidate", p["ctx_candidate"], "--plan", p["ctx_plan"], *ctx_tail),
            0,
        ),
        Inv("migrate-sqlite-dry-table", migrate("--checkpointer", sqlite), 0),
        Inv(
            "migrate-sqlite-apply",
            migrate("--checkpointer", apply_db, "--apply", "--format", "json"),
            0,
            fresh=((p["store_v1"], "apply.db"),),
            chain="apply",
        ),
        Inv("migrate-sqlite-apply-again", migrate("--checkpointer", apply_db, "--apply"), 0, chain="apply"),
        Inv(
            "migrate-sqlite-rollback",
            migrate("--checkpointer", apply_db, "--rollback", m["migration"], "--format", "json"),
            0,
            chain="apply",
        ),
        *(
            Inv(f"migrate-bad-plan-{name}", ("migrate", "--live", v1, "--candidate", cand["migrate"], "--plan", path), 2)
            for name, path in p["bad_plans"].items()
        ),
        Inv(
            "migrate-sqlite-no-live-contract",
            ("migrate", "--checkpointer", sqlite, "--candidate", cand["migrate"], "--plan", plan),
            2,
        ),
        # turns / rerun
        Inv("turns-table", ("turns", "--live", repo, guide), 0),
        Inv("turns-json", ("turns", "--live", repo, guide, "--format", "json"), 0),
        Inv(
            "turns-checkpoint",
            ("turns", "--live", repo, guide, "--checkpoint", m["guide_turn2_checkpoint"], "--format", "json"),
            0,
        ),
        Inv("turns-unknown-thread", ("turns", "--live", repo, "00000000-0000-4000-8000-000000000000"), 2),
        Inv("rerun-unreachable", ("rerun", "--live", url["dead"], guide, "--turn", "2", "--input", "x"), 3),
        # activity, against the loopback stand-in of LangSmith's query API (the recorded runs)
        Inv("activity-table", activity, 0, env=activity_env),
        Inv("activity-json-fields", (*activity, "--fields", "--format", "json"), 0, env=activity_env),
        Inv(
            "activity-graph-config",
            (*activity, "--graph", "recycling_guide", "--config", "{tree}/langgraph.json"),
            0,
            env=activity_env,
        ),
    ]
    if "postgres" in p:  # the same threads in PostgreSQL (when the machine has the server binaries)
        pg = p["postgres"]
        invs += [
            Inv("gate-postgres-block-json", gate_store(pg, "--candidate", cand["renamed"], "--format", "json"), 1),
            Inv("replay-postgres-json", replay_store(pg, p["v1_config"], "--resume-map", resume_map, "--format", "json"), 0),
            Inv("migrate-postgres-dry-table", migrate("--checkpointer", pg), 0),
        ]
    names = [i.name for i in invs]
    assert len(names) == len(set(names)), "invocation names must be unique"
    return invs


# -- normalization ---------------------------------------------------------------------------

UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
PORT = re.compile(r"\b(127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\]):\d{2,5}\b")
ISO_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:ms|s)\b")
TEMP_NAME = re.compile(re.escape(tempfile.gettempdir()) + r"/([A-Za-z][\w-]*?)[a-z0-9_]{8}\b")
"""A name tempfile made (``/tmp/playbook-staging-k3j_x9a2``): its random part."""
BARE_TEMP_NAME = re.compile(r"\b(playbook-[a-z]+-)[a-z0-9_]{8}\b")
"""A temporary folder a report names without its path (``playbook-replay-190hr6k5``): its random part."""
REPLAY_DB = re.compile(r"\bplaybook_replay_[0-9a-f]+\b")
"""The database a PostgreSQL replay copies the store into."""


class Normalizer:
    """What is run-specific, for one side: its paths, and the run's time window."""

    def __init__(self, roots: list[tuple[str, str]], known: list[str], window: tuple[datetime, datetime]) -> None:
        self.roots = sorted(roots, key=lambda root: -len(root[0]))
        self.known = known
        self.window = window

    def _time(self, match: re.Match[str]) -> str:
        """Only a time within the run is run-specific (recorded data's times are data)."""
        try:
            moment = datetime.fromisoformat(match.group(0).replace(" ", "T"))
        except ValueError:
            return match.group(0)
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        return "<time>" if self.window[0] <= moment <= self.window[1] else match.group(0)

    def __call__(self, parts: list[str]) -> str:
        """``parts`` normalized as one text: ids are numbered across all of them."""
        labels: dict[str, str] = {}

        def label(match: re.Match[str]) -> str:
            return labels.setdefault(match.group(0).lower(), f"<id-{len(labels) + 1}>")

        for value in self.known:
            labels.setdefault(value.lower(), f"<id-{len(labels) + 1}>")
        out = []
        for text in parts:
            for path, name in self.roots:
                text = text.replace(path, name)
            text = REPLAY_DB.sub("playbook_replay_<random>", text)
            text = TEMP_NAME.sub(lambda match: f"<tmp>/{match.group(1)}<random>", text)
            text = BARE_TEMP_NAME.sub(lambda match: f"{match.group(1)}<random>", text)
            text = PORT.sub(r"\1:<port>", text)
            text = ISO_TIME.sub(self._time, text)
            text = UUID.sub(label, text)
            out.append(DURATION.sub("<duration>", text))
        return "".join(out)


# -- running one side ------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    files: dict[str, str]
    seconds: float


def _clean_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "OPENAI_", "PYTHON", "PLAYBOOK_")) and k not in ("MODEL", "COLUMNS")
    }
    return {
        **env,
        "MODEL": "offline",
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "COLUMNS": "130",
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "1",
    }


class Side:
    def __init__(self, label: str, tree: Path, scratch: Path) -> None:
        self.label, self.tree, self.scratch = label, tree, scratch
        scratch.mkdir(parents=True, exist_ok=True)

    def env(self, extra: tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
        env = _clean_env()
        path = [str(self.tree)]
        for key, value in extra:
            if key == "PYTHONPATH":
                path.append(value)
            else:
                env[key] = value
        env["PYTHONPATH"] = os.pathsep.join(path)
        return env

    def arg(self, value: str) -> str:
        return value.replace("{tree}", str(self.tree)).replace("{scratch}", str(self.scratch))

    def run(self, inv: Inv) -> Outcome:
        for source, target in inv.fresh:
            destination = self.scratch / target
            if destination.is_dir():
                shutil.rmtree(destination)
            if Path(source).is_dir():
                shutil.copytree(source, destination)
            else:
                shutil.copy2(source, destination)
        started = time.monotonic()
        try:
            result = subprocess.run(
                [sys.executable, "-m", "migrations_playbook", *(self.arg(a) for a in inv.args)],
                cwd=self.tree,
                env=self.env(inv.env),
                capture_output=True,
                text=True,
                errors="replace",
                stdin=subprocess.DEVNULL,
                timeout=TIMEOUT,
            )
            code, stdout, stderr = result.returncode, result.stdout, result.stderr
        except subprocess.TimeoutExpired as exc:
            code, stdout, stderr = -1, _text(exc.stdout), _text(exc.stderr) + f"\n[timed out after {TIMEOUT}s]\n"
        files = {}
        for rel in inv.collect:
            target = self.scratch / rel
            found = sorted(f for f in target.rglob("*") if f.is_file()) if target.is_dir() else [target]
            for file in found:
                key = str(file.relative_to(self.scratch))
                files[key] = file.read_text(errors="replace") if file.exists() else "<missing>\n"
        return Outcome(code, stdout, stderr, files, time.monotonic() - started)

    def imports_its_tree(self, v1_url: str, v1_project: str) -> tuple[list[str], str]:
        """(problems, what was seen): `migrations_playbook` must come from this side's tree in the CLI
        process and in the `langgraph dev` server a command starts (a replay's staging server)."""
        problems = []
        result = subprocess.run(
            [sys.executable, "-c", "import migrations_playbook; print(migrations_playbook.__file__)"],
            cwd=self.tree,
            env=self.env(),
            capture_output=True,
            text=True,
        )
        cli = result.stdout.strip()
        if result.returncode != 0 or not Path(cli).resolve().is_relative_to(self.tree.resolve()):
            problems.append(f"{self.label}: the CLI process imports migrations_playbook from {cli or result.stderr}")
        # A candidate whose dependencies hold the tree (as this repo's langgraph.json does), whose
        # graph module records which migrations_playbook each process imports.
        probe = self.scratch / "probe"
        probe.mkdir(exist_ok=True)
        record = probe / "imported.txt"
        (probe / "langgraph.json").write_text(
            json.dumps({"dependencies": [".", str(self.tree)], "graphs": {"probe": "./probe_graph.py:graph"}})
        )
        (probe / "probe_graph.py").write_text(PROBE_GRAPH)
        probe_args = ("--candidate", str(probe / "langgraph.json"), "--persistence", v1_project)
        process = subprocess.Popen(
            [sys.executable, "-m", "migrations_playbook", "replay", "--live", v1_url, *probe_args],
            cwd=self.tree,
            env={**self.env(), "LAYOUT_CHECK_PROBE": str(record)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _, err = process.communicate(timeout=TIMEOUT)
        lines = [line.split(" ", 1) for line in record.read_text().splitlines()] if record.exists() else []
        servers = [where for pid, where in lines if int(pid) != process.pid]
        if not servers:
            problems.append(f"{self.label}: the staging server of a replay never loaded the probe graph:\n{err[-2000:]}")
        for where in {w for _, w in lines}:
            if not Path(where).resolve().is_relative_to(self.tree.resolve()):
                problems.append(f"{self.label}: a process of the replay imports migrations_playbook from {where}")
        seen = f"{self.label}: the CLI imports {cli}; {len(servers)} staging server process(es) import {', '.join(set(servers))}"
        return problems, seen


def units(invs: list[Inv]) -> list[list[Inv]]:
    """The invocations as units of work: a chain is one unit (its invocations in list order)."""
    found: list[list[Inv]] = []
    chains: dict[str, list[Inv]] = {}
    for inv in invs:
        if inv.chain is None:
            found.append([inv])
        elif inv.chain in chains:
            chains[inv.chain].append(inv)
        else:
            chains[inv.chain] = [inv]
            found.append(chains[inv.chain])
    return found


def _weight(unit: list[Inv]) -> int:
    """Roughly how long a unit takes: those that start a staging server or wait out retries first."""
    return sum(5 if "--persistence" in inv.args or "--plan" in inv.args else 1 for inv in unit)


def run_sides(sides: list[Side], invs: list[Inv], progress: Callable[[str], None]) -> dict[str, dict[str, Outcome]]:
    """Every invocation on every side, WORKERS at a time (both sides share the pool; a chain runs in order)."""
    outcomes: dict[str, dict[str, Outcome]] = {side.label: {} for side in sides}
    work = sorted(((side, unit) for unit in units(invs) for side in sides), key=lambda job: -_weight(job[1]))

    def run(side: Side, unit: list[Inv]) -> None:
        for inv in unit:
            outcome = outcomes[side.label][inv.name] = side.run(inv)
            progress(f"{side.label}: {inv.name} exit {outcome.code} ({outcome.seconds:.1f}s)")

    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for future in [pool.submit(run, side, unit) for side, unit in work]:
            future.result()
    return outcomes


PROBE_GRAPH = '''"""Records which migrations_playbook the importing process gets (tests/layout_check)."""

import os
from typing import TypedDict

import migrations_playbook
from langgraph.graph import END, START, StateGraph

with open(os.environ["LAYOUT_CHECK_PROBE"], "a") as record:
    record.write(f"{os.getpid()} {migrations_playbook.__file__}\\n")


class State(TypedDict):
    seen: str


builder = StateGraph(State)
builder.add_node("step", lambda state: {})
builder.add_edge(START, "step")
builder.add_edge("step", END)
graph = builder.compile()
'''


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def document(inv: Inv, outcome: Outcome, normalize: Normalizer) -> str:
    """What is compared: the command line, the exit code, stdout, stderr and the files it wrote, normalized."""
    args = " ".join(json.dumps(a) if (not a or " " in a or '"' in a) else a for a in inv.args)
    parts = [f"$ playbook {args}\n", f"exit {outcome.code}\n", "--- stdout\n", outcome.stdout, "--- stderr\n", outcome.stderr]
    for name, content in outcome.files.items():
        parts += [f"--- file {name}\n", content]
    return normalize(parts)


# -- preparing the data (a subprocess on REV's code and fixtures) ------------------------------


def serve_data(data: Path) -> None:
    """Prepare every fixture, keep the servers running, write ``data/manifest.json``, print READY,
    and stop everything when standard input closes. Runs with REV's tree first on sys.path."""
    real_stdout = sys.stdout
    with contextlib.ExitStack() as stack, contextlib.redirect_stdout(sys.stderr):
        manifest = _prepare(data, stack)
        (data / "manifest.json").write_text(json.dumps(manifest, indent=2))
        print(READY, file=real_stdout, flush=True)
        sys.stdin.read()


def _playbook_in_process(*argv: str) -> None:
    """REV's CLI in this process (not thread-safe: loading a candidate changes sys.path)."""
    from migrations_playbook.cli import main

    code = main(list(argv))
    if code != 0:
        raise RuntimeError(f"playbook {' '.join(argv)} exited {code}")


def _playbook_subprocess(*argv: str, pythonpath: str | None = None) -> None:
    """REV's CLI in a subprocess (safe beside other threads)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], pythonpath])
    result = subprocess.run([sys.executable, "-m", "migrations_playbook", *argv], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"playbook {' '.join(argv)} exited {result.returncode}:\n{result.stderr}")


def _edit(folder: Path, edits: list[tuple[str, str, str]]) -> None:
    for file, old, new in edits:
        text = (folder / file).read_text()
        assert old in text, f"fixture drift: {old!r} not in {file}"
        (folder / file).write_text(text.replace(old, new))


def _first_module(*names: str) -> Any:
    """The first of these modules that imports (the same module under the names layouts gave it)."""
    import importlib

    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as error:
            if not name.startswith(str(error.name)):
                raise
    raise ModuleNotFoundError(f"none of {', '.join(names)}")


def _prepare(data: Path, stack: contextlib.ExitStack) -> dict[str, Any]:
    import asyncio
    import threading

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph_sdk import get_client

    # REV's code prepares the data: its modules are where REV keeps them (issue 23 moved them into
    # sources/, issue 35 into staging/ and sources/api/).
    server_module = _first_module(
        "migrations_playbook.staging.server", "migrations_playbook.sources.devserver", "migrations_playbook.devserver"
    )
    DevServer, free_port = server_module.DevServer, server_module.free_port  # noqa: N806 (a class, as imported)
    turns_from_history = _first_module(
        "migrations_playbook.sources.api.turns", "migrations_playbook.sources.turns", "migrations_playbook.turns"
    ).turns_from_history
    from tests.fixtures import migrate_plans
    from tests.fixtures.gate_projects import class_variants, variants
    from tests.fixtures.gate_projects.store_seed import seed, seed_classes
    from tests.fixtures.template_projects import variants as templates
    from tests.integration.test_runtime_guard_server import V2_EDITS, _populate

    rev_tree = Path(variants.__file__).resolve().parents[3]
    fixtures = rev_tree / "tests" / "fixtures"
    ignore = shutil.ignore_patterns("__pycache__", ".langgraph_api", "*.egg-info")
    data.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()

    def keep_serving(server: DevServer) -> str:
        with lock:
            stack.enter_context(server)
        return server.url

    async def histories(url: str, thread_ids: list[str]) -> list[list[Any]]:
        """Each thread's history, newest first."""
        client = get_client(url=url)
        found = [list(await client.threads.get_history(thread_id, limit=100)) for thread_id in thread_ids]
        await client.aclose()
        return found

    def checkpoint_ids(found: list[list[Any]]) -> list[str]:
        return [h["checkpoint"]["checkpoint_id"] for history in found for h in reversed(history)]

    # Each server project: (its urls, paths, threads, checkpoint ids, extras). Prepared at the same time.

    def v1_project() -> dict[str, Any]:
        """v1 of the gate project, threads in every position (variants.populate, and the migrate tests' two more)."""
        project = data / "v1"
        shutil.copytree(variants.V1, project, ignore=ignore)

        async def positions(url: str) -> dict[str, list[str]]:
            found = await variants.populate(url)
            client = get_client(url=url)
            done = await client.threads.create()
            await client.runs.wait(done["thread_id"], "helpdesk", input={"request": "urgent: reboot", "messages": []})
            await client.runs.wait(done["thread_id"], "helpdesk", command={"resume": "approved"})
            later = await client.threads.create()
            await client.runs.wait(later["thread_id"], "helpdesk", input={"request": "slow printer", "messages": []})
            await client.aclose()
            return {**found, "urgent_done": [done["thread_id"]], "busy_later": [later["thread_id"]]}

        with DevServer(project / "langgraph.json", project) as server:
            threads = asyncio.run(positions(server.url))
        # Stopped gracefully: every checkpoint is on disk (what replay --persistence copies); served again.
        url = keep_serving(DevServer(project / "langgraph.json", project))
        ids = checkpoint_ids(asyncio.run(histories(url, [i for group in threads.values() for i in group])))
        return {"urls": {"v1": url}, "paths": {"v1_project": str(project)}, "threads": threads, "checkpoints": ids}

    def repo_project() -> dict[str, Any]:
        """This repo's graphs on the offline model: ticket_triage paused at each approval kind, a three-turn chat."""
        project, config, env = data / "repo-live", rev_tree / "langgraph.json", {"MODEL": "offline"}
        starts = {
            "plan_approval": "Please refund my invoice",
            "report_choice": "Please send me a statement of my payments history",
            "clarification": "Hello, something about my account",
        }

        def user(text: str) -> dict[str, Any]:
            return {"messages": [{"role": "user", "content": text}]}

        async def populate(url: str) -> dict[str, list[str]]:
            client = get_client(url=url)
            found: dict[str, list[str]] = {}
            for kind, text in starts.items():
                thread = await client.threads.create()
                result = await client.runs.wait(thread["thread_id"], "ticket_triage", input=user(text))
                assert result["__interrupt__"][0]["value"]["kind"] == kind, "fixture drift: the offline model chose another kind"
                found[kind] = [thread["thread_id"]]
            guide = (await client.threads.create())["thread_id"]
            for text in ("페트병 어떻게 버려?", "라벨은?", "지금까지 뭐 물어봤지?"):
                await client.runs.wait(guide, "recycling_guide", input=user(text))
            room = (await client.threads.create())["thread_id"]
            await client.runs.wait(room, "fan_room", input=user("LG 트윈스 역사 알려줘"), context={"team_name": "LG"})
            await client.aclose()
            return {**found, "guide": [guide], "fan_room": [room]}

        with DevServer(config, project, env=env) as server:
            threads = asyncio.run(populate(server.url))
        url = keep_serving(DevServer(config, project, env=env))
        (history,) = asyncio.run(histories(url, threads["guide"]))
        turn2 = turns_from_history(history)[1].last_checkpoint_id
        return {
            "urls": {"repo": url},
            "paths": {"repo_project": str(project)},
            "threads": threads,
            "checkpoints": checkpoint_ids([history]),
            "guide_turn2_checkpoint": turn2,
        }

    auth_header = "Authorization: Bearer playbook-reader"

    def auth_project() -> dict[str, Any]:
        """The custom-auth project: a thread made with the accepted token."""
        project = data / "auth"
        shutil.copytree(fixtures / "auth_project", project, ignore=ignore)

        async def populate(url: str) -> dict[str, list[str]]:
            client = get_client(url=url, headers={"Authorization": auth_header.partition(": ")[2]})
            thread = await client.threads.create()
            await client.runs.wait(thread["thread_id"], "intake", input={"request": "new laptop"})
            await client.aclose()
            return {"paused": [thread["thread_id"]]}

        url = keep_serving(DevServer(project / "langgraph.json", project))
        return {
            "urls": {"auth": url},
            "paths": {"auth_config": str(project / "langgraph.json")},
            "threads": asyncio.run(populate(url)),
        }

    def casebook_project() -> dict[str, Any]:
        """casebook (template-shaped, src/ layout), importable from the original as an editable install makes it."""
        project = data / "casebook"
        shutil.copytree(templates.CASEBOOK, project, ignore=ignore)
        src, locks = str(project / templates.SRC), data / "casebook-locks"
        config = project / "langgraph.json"
        write = ("--write", "--contracts-dir", str(locks), "--records-dir", str(data / "casebook-records"))
        _playbook_subprocess("contract", "--config", str(config), *write, pythonpath=src)
        with DevServer(config, project, env={"PYTHONPATH": src}) as server:
            threads = asyncio.run(templates.populate(server.url))
        url = keep_serving(DevServer(config, project, env={"PYTHONPATH": src}))
        candidate = templates.make_variant(data / "candidates", "casebook", next(iter(templates.BREAKING.values()))[0])
        return {
            "urls": {"casebook": url},
            "paths": {"casebook_locks": str(locks), "casebook_src": src, "casebook_candidate": str(candidate)},
            "threads": threads,
        }

    def guard_project() -> dict[str, Any]:
        """The guard project: v1 threads, then v2 written over the folder (v1's locks kept in the history) and served."""
        project = data / "guard"
        shutil.copytree(fixtures / "guard_project", project, ignore=ignore)
        config, contracts = project / "langgraph.json", project / "contracts"
        write = ("contract", "--config", str(config), "--write", "--contracts-dir", str(contracts))
        _playbook_subprocess(*write)
        with DevServer(config, project) as server:
            threads = {position: [thread_id] for position, thread_id in asyncio.run(_populate(server.url)).items()}
        _edit(project, V2_EDITS)
        _playbook_subprocess(*write)
        url = keep_serving(DevServer(config, project))
        return {
            "urls": {"guard": url},
            "paths": {"guard_config": str(config), "guard_contracts": str(contracts)},
            "threads": threads,
        }

    def ctx_project() -> dict[str, Any]:
        """Assistants whose stored context the candidate rejects (migrate_plans/ctx_v1)."""
        project = data / "ctx"
        shutil.copytree(migrate_plans.CTX_V1, project, ignore=ignore)

        async def populate(url: str) -> dict[str, list[str]]:
            client = get_client(url=url)
            found: dict[str, list[str]] = {}
            for tenant, tier in (("acme", "silver"), ("beta", "gold")):
                assistant = await client.assistants.create("ctx_flow", context={"tenant": tenant, "tier": tier}, name=tenant)
                found[tenant] = [assistant["assistant_id"]]
            thread = await client.threads.create()
            await client.runs.wait(thread["thread_id"], found["acme"][0], input={"request": "hi"})
            await client.aclose()
            return {**found, "thread": [thread["thread_id"]]}

        url = keep_serving(DevServer(project / "langgraph.json", project))
        return {"urls": {"ctx": url}, "threads": asyncio.run(populate(url))}

    projects = {
        "v1": v1_project,
        "repo": repo_project,
        "auth": auth_project,
        "casebook": casebook_project,
        "guard": guard_project,
        "ctx": ctx_project,
    }
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(projects))
    futures = {name: pool.submit(job) for name, job in projects.items()}

    # Meanwhile, in this thread (in-process candidate loading is not thread-safe, so only here):
    # locks, candidates, plans, stores, PostgreSQL, the LangSmith stand-in.
    urls: dict[str, str] = {"dead": f"http://127.0.0.1:{free_port()}"}
    paths: dict[str, Any] = {"missing": str(data / "does-not-exist")}
    checkpoints: list[str] = []
    """Checkpoint ids of the prepared threads: known ids, as the thread ids are."""
    locks = data / "v1-locks"
    _playbook_in_process("contract", "--config", str(variants.V1 / "langgraph.json"), "--write", "--contracts-dir", str(locks))
    ctx_locks = data / "ctx-locks"
    _playbook_in_process(
        "contract", "--config", str(migrate_plans.CTX_V1 / "langgraph.json"), "--write", "--contracts-dir", str(ctx_locks)
    )
    classes_locks = data / "classes-locks"
    classes_config = str(class_variants.CLASSES / "langgraph.json")
    classes_write = ("--write", "--contracts-dir", str(classes_locks), "--records-dir", str(classes_locks / "records"))
    _playbook_in_process("contract", "--config", classes_config, *classes_write)

    # candidates: v1 with one change each (variants.py), the migrate tests' candidate, a broken one
    root = data / "candidates"
    edits = {
        "safe": variants.SAFE["add-notrequired-field"],
        "renamed": variants.HELPDESK_TRIAGE_RENAMED,
        "field_renamed": variants.WARN_ONLY["field-renamed"][0],
        "subgraph": variants.BREAKING["subgraph-node-renamed"][0],
        "migrate": migrate_plans.CANDIDATE_EDITS,
        "broken": [("helpdesk.py", "def intake(state: State) -> dict:", "def intake(state: State) -> dict\n")],
    }
    candidates = {name: str(variants.make_variant(root, name, change)) for name, change in edits.items()}
    classes_edits = class_variants.BREAKING["send-payload-key-read"][0]
    candidates["classes"] = str(class_variants.make_variant(root, "classes", classes_edits))
    ctx_candidate = root / "ctx"
    shutil.copytree(migrate_plans.CTX_V1, ctx_candidate, ignore=ignore)
    _edit(ctx_candidate, migrate_plans.CTX_CANDIDATE_EDITS)

    # plans: the migrate tests' plans (their transforms beside them) and bad ones made from the first
    plans = data / "plans"
    shutil.copytree(migrate_plans.PLANS, plans, ignore=shutil.ignore_patterns("__pycache__", "__init__.py", "ctx_v1"))
    mutations: dict[str, Callable[[dict[str, Any]], Any]] = {
        "unknown-op": lambda d: d["steps"].append({"op": "rename_node", "from": "a", "to": "b"}),
        "target-node-missing": lambda d: d["steps"][0].update(to="review"),
        "unknown-function": lambda d: d["steps"][2].update(function="helpdesk_transforms:nope"),
    }
    bad = {}
    for name, mutate in mutations.items():
        plan = json.loads(migrate_plans.PLAN.read_text())
        mutate(plan)
        (plans / f"bad-{name}.plan.json").write_text(json.dumps(plan))
        bad[name] = str(plans / f"bad-{name}.plan.json")
    (plans / "bad-not-json.plan.json").write_text("{ not json")
    bad["not-json"] = str(plans / "bad-not-json.plan.json")

    # a layout project (the state in a local dependency): contract --write only, no server
    layout = data / "layouts" / "dependency_path"
    shutil.copytree(fixtures / "layout_projects" / "dependency_path", layout, ignore=ignore)

    # self-hosted stores, seeded as store_seed.py seeds them (SQLite; PostgreSQL when the machine can)
    stores = data / "stores"
    stores.mkdir()
    for name, seeder, options in (("v1", seed, {}), ("unlabeled", seed, {"label": False}), ("classes", seed_classes, {})):
        with SqliteSaver.from_conn_string(str(stores / f"{name}.db")) as saver:
            seeder(saver, **options)
        paths[f"store_{name}"] = str(stores / f"{name}.db")
        with contextlib.closing(sqlite3.connect(stores / f"{name}.db")) as conn:
            checkpoints.extend(r[0] for r in conn.execute(STORE_CHECKPOINTS))
    postgres = _postgres(stack)
    if postgres is not None:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver

        paths["postgres"] = postgres.replace("postgres@", f"postgres:{PG_PASSWORD}@")
        with PostgresSaver.from_conn_string(postgres) as saver:
            saver.setup()
            seed(saver)
        with psycopg.connect(postgres) as conn:
            checkpoints.extend(r[0] for r in conn.execute(STORE_CHECKPOINTS))

    # LangSmith's query API: a loopback stand-in over the recorded runs (tests/unit/test_activity.py's)
    activity = _activity_stand_in(stack)
    urls["activity"] = activity.pop("url")

    paths.update(
        v1_config=str(data / "v1" / "langgraph.json"),
        v1_locks=str(locks),
        candidates=candidates,
        plan=str(plans / migrate_plans.PLAN.name),
        bad_plans=bad,
        ctx_candidate=str(ctx_candidate / "langgraph.json"),
        ctx_locks=str(ctx_locks),
        ctx_plan=str(plans / migrate_plans.CTX_PLAN.name),
        classes_locks=str(classes_locks),
        layout_config=str(layout / "langgraph.json"),
        casebook_config=str(data / "casebook" / "langgraph.json"),
    )
    threads: dict[str, dict[str, list[str]]] = {}
    project_checkpoints: list[str] = []
    extras: dict[str, Any] = {}
    for name, future in futures.items():  # in a fixed order, whichever finished first
        part = future.result()
        urls.update(part.pop("urls"))
        paths.update(part.pop("paths", {}))
        threads[name] = part.pop("threads")
        project_checkpoints += part.pop("checkpoints", [])
        extras.update(part)
    pool.shutdown()
    candidates["casebook"] = paths.pop("casebook_candidate")
    known = [i for group in threads.values() for ids in group.values() for i in ids] + project_checkpoints + checkpoints
    return {
        "urls": urls,
        "paths": paths,
        "threads": threads,
        "known_ids": known,
        "auth_header": auth_header,
        "migration": migrate_plans.MIGRATION,
        "activity": activity,
        **extras,
    }


STORE_CHECKPOINTS = "SELECT checkpoint_id FROM checkpoints ORDER BY thread_id, checkpoint_ns, checkpoint_id"


def _postgres(stack: contextlib.ExitStack) -> str | None:
    """The URI of a database on a throwaway PostgreSQL server, or None without server binaries."""
    try:
        from tests.postgres_server import PostgresServer, PostgresUnavailable
    except ImportError:
        return None
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as exc:
        print(f"no PostgreSQL store: {exc}", file=sys.stderr)
        return None
    stack.callback(server.stop)
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute('CREATE DATABASE "layout_v1"')
    uri: str = server.url_for("layout_v1")
    return uri


def _activity_stand_in(stack: contextlib.ExitStack) -> dict[str, str]:
    """Serve test_activity.QueryStandIn on a loopback port (the stand-in is an httpx handler)."""
    import http.server
    import threading

    from tests.unit.test_activity import RECORDED, UNTIL, QueryStandIn, httpx

    stand_in = QueryStandIn(RECORDED["runs"])

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = httpx.Request(self.command, f"http://stand-in{self.path}", headers=dict(self.headers), content=body)
            response = stand_in(request)
            content = response.content
            self.send_response(response.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = _answer  # noqa: N815
        do_POST = _answer  # noqa: N815

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stack.callback(server.shutdown)
    return {"url": f"http://127.0.0.1:{server.server_address[1]}", "until": UNTIL, "project": RECORDED["project"]}


# -- the comparison --------------------------------------------------------------------------


@contextlib.contextmanager
def worktree(rev: str, folder: Path) -> Iterator[Path]:
    subprocess.run(
        ["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(folder), rev], check=True, capture_output=True
    )
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(folder)], capture_output=True)


@contextlib.contextmanager
def served_data(base: Path, data: Path) -> Iterator[dict[str, Any]]:
    """The prepared data, by REV's code (a subprocess that keeps the servers up until we are done)."""
    data.mkdir(parents=True)
    log = (data.parent / "prepare.log").open("w")
    env = {**_clean_env(), "PYTHONPATH": str(base)}
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve-data", str(data)],
        cwd=base,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if line.strip() != READY:
            process.wait(timeout=60)
            tail = (data.parent / "prepare.log").read_text()[-4000:]
            raise SystemExit(f"preparing the data failed (exit {process.returncode}):\n{tail}")
        yield json.loads((data / "manifest.json").read_text())
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def compare(args: argparse.Namespace) -> int:
    started, began = time.monotonic(), datetime.now(UTC)
    rev = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "--verify", f"{args.base}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tree = Path(args.tree).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="layout-check-"))
    quiet = args.quiet

    def say(text: str) -> None:
        if not quiet:
            print(text, file=sys.stderr, flush=True)

    try:
        with worktree(rev, tmp / "base") as base:
            say(f"base {rev[:12]} in {base}; after side {tree}; preparing the data ...")
            with served_data(base, tmp / "data") as manifest:
                say(f"data ready ({time.monotonic() - started:.0f}s)")
                invs = invocations(manifest)
                if args.only:
                    invs = [i for i in invs if re.search(args.only, i.name)]
                sides = [Side("base", base, tmp / "scratch" / "base"), Side("tree", tree, tmp / "scratch" / "tree")]
                with concurrent.futures.ThreadPoolExecutor(max_workers=len(sides)) as pool:
                    checks = list(
                        pool.map(
                            lambda side: side.imports_its_tree(manifest["urls"]["v1"], manifest["paths"]["v1_project"]), sides
                        )
                    )
                for problems, seen in checks:
                    if problems:
                        print("\n".join(problems), file=sys.stderr)
                        return 2
                    say(seen)
                outcomes = run_sides(sides, invs, say)
            window = (began - timedelta(minutes=1), datetime.now(UTC) + timedelta(minutes=1))
            documents = {}
            for side in sides:
                roots = [
                    (sys.prefix, "<venv>"),  # the venv may live inside a tree (this repo's .venv/)
                    (str(side.tree), "<tree>"),
                    (str(side.scratch), "<scratch>"),
                    (str(tmp / "data"), "<data>"),
                    (str(tmp), "<run>"),
                ]
                normalize = Normalizer(roots, manifest["known_ids"], window)
                documents[side.label] = {i.name: document(i, outcomes[side.label][i.name], normalize) for i in invs}
            if args.keep:
                _keep(Path(args.keep), sides, invs, outcomes, documents)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    wrong = [(i, outcomes["base"][i.name].code) for i in invs if outcomes["base"][i.name].code != i.expect]
    differ = [i for i in invs if documents["base"][i.name] != documents["tree"][i.name]]
    for inv in differ:
        sys.stdout.writelines(
            difflib.unified_diff(
                documents["base"][inv.name].splitlines(keepends=True),
                documents["tree"][inv.name].splitlines(keepends=True),
                fromfile=f"{inv.name} (base {rev[:12]})",
                tofile=f"{inv.name} ({tree})",
            )
        )
        print()
    elapsed = time.monotonic() - started
    print(f"{len(invs)} invocations, {len(invs) - len(differ)} identical ({elapsed:.0f}s, base {rev[:12]}, after {tree})")
    if wrong:
        for inv, code in wrong:
            print(f"baseline: {inv.name} exited {code} on the base side, the list expects {inv.expect}", file=sys.stderr)
        return 2
    return 1 if differ else 0


def _keep(
    folder: Path,
    sides: list[Side],
    invs: list[Inv],
    outcomes: dict[str, dict[str, Outcome]],
    documents: dict[str, dict[str, str]],
) -> None:
    for side in sides:
        out = folder / side.label
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for inv in invs:
            outcome = outcomes[side.label][inv.name]
            (out / f"{inv.name}.stdout").write_text(outcome.stdout)
            (out / f"{inv.name}.stderr").write_text(outcome.stderr)
            (out / f"{inv.name}.exit").write_text(f"{outcome.code}\n")
            for name, content in outcome.files.items():
                (out / f"{inv.name}.file.{name.replace('/', '__')}").write_text(content)
            (out / f"{inv.name}.normalized").write_text(documents[side.label][inv.name])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="compare_outputs", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", help="the commit (or any revision) whose code is the 'before' side")
    parser.add_argument("--tree", default=str(REPO_ROOT), help="the 'after' side's tree (default: this working tree)")
    parser.add_argument("--keep", metavar="DIR", help="write each side's raw (and normalized) outputs to DIR/base, DIR/tree")
    parser.add_argument("--only", metavar="REGEX", help="run only the invocations whose name matches (for debugging)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--serve-data", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_data:
        serve_data(Path(args.serve_data))
        return 0
    if not args.base:
        parser.error("--base REV is required")
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
