"""`playbook shadow --checkpointer URI`: the three sides on throwaway copies of a self-hosted store.

The store (PostgreSQL or SQLite) is read read-only, as the gate reads it, with the live code's shape
from ``--live-contract`` or, without it, from the deployed code itself (its locks written into a
temporary folder by `playbook contract --write` in a subprocess). Three copies are made (a new database
on the same server each, or a copy of the SQLite file each; removed afterwards, whatever happened), and
each side runs in a process of its own (`shadow_worker`): the deployed code on two copies, the
candidate on the third, A first (the leader), then A2 and B at once. The comparison is `shadow.judge`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from migrations_playbook.errors import UsageError
from migrations_playbook.model import GateReport, ThreadSnapshot, drawings
from migrations_playbook.proof.shadow.classes import select
from migrations_playbook.proof.shadow.drive import ThreadFacts
from migrations_playbook.proof.shadow.run import ShadowOptions, Sides, judge, lost_side
from migrations_playbook.proof.shadow.traces import SideTrace
from migrations_playbook.sources.base import SourceRequest

WORKER_TIMEOUT = 3600.0


@contextlib.contextmanager
def deployed_locks(live_config: Path, given: str | None) -> Iterator[str]:
    """The live code's contract locks: ``given`` (``--live-contract``), else written from the deployed code."""
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="playbook-shadow-locks-") as folder:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "migrations_playbook",
                "contract",
                "--config",
                str(live_config),
                "--write",
                "--contracts-dir",
                f"{folder}/contracts",
                "--records-dir",
                f"{folder}/records",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            raise UsageError(f"the deployed code's contract could not be written: {(done.stderr or done.stdout).strip()[-500:]}")
        yield f"{folder}/contracts"


async def _side(label: str, config: Path, store: str, job: Mapping[str, Any], env: Mapping[str, str]) -> SideTrace | str:
    """Run one side's worker; its trace, or why it failed."""
    with tempfile.TemporaryDirectory(prefix="playbook-shadow-side-") as folder:
        job_path, out_path = Path(folder) / "job.json", Path(folder) / "out.json"
        job_path.write_text(json.dumps({**job, "label": label, "config": str(config), "store": store}, default=str))
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "migrations_playbook.proof.shadow.worker",
            str(job_path),
            str(out_path),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env},
        )
        try:
            _, err = await asyncio.wait_for(process.communicate(), WORKER_TIMEOUT)
        except TimeoutError:
            process.kill()
            return f"{label} did not finish within {WORKER_TIMEOUT:.0f}s"
        if process.returncode != 0 or not out_path.is_file():
            return err.decode(errors="replace").strip()[-1500:] or f"{label} exited with {process.returncode}"
        return SideTrace.from_json(json.loads(out_path.read_text()))


async def shadow_store_report(
    source_request: SourceRequest,
    *,
    live_config: Path,
    candidate: Path,
    candidate_text: str,
    served: set[str],
    graphs: Sequence[str],
    options: ShadowOptions,
    relay: Any,
) -> GateReport:
    """The report of a shadow over a checkpointer (see the module docstring)."""
    from migrations_playbook.sources.factory import open_source
    from migrations_playbook.sources.store.replay import copy_of_store
    from migrations_playbook.sources.store.source import StoreSource

    with deployed_locks(live_config, source_request.live_contract) as locks, contextlib.ExitStack() as stack:
        source = open_source(replace(source_request, live_contract=locks))
        assert isinstance(source, StoreSource)
        async with source:
            graph_ids = await source.graph_ids(graphs)
            live = await source.live_graphs(graph_ids)
            snapshots: list[ThreadSnapshot] = [t async for t in source.threads(graph_ids, live=live)]
            kept = [t for t in snapshots if t.graph_id in served]
            selection = select(kept, sample=options.sample, every=options.every, include=options.include)
            by_id = {t.thread_id: t for t in kept}
            with source.opened() as store:  # the copies outlive this connection: removed when `stack` closes
                copies = [stack.enter_context(copy_of_store(store, source.uri)) for _ in range(3)]
        threads = [{"thread_id": t, "graph_id": by_id[t].graph_id} for t in selection.chosen]
        job = {
            "threads": threads,
            "rule": {"by_kind": dict(options.rule.by_kind), "derive": options.rule.derive, "fallback": options.rule.fallback},
            "turn_inputs": dict(options.turn_inputs),
            "leader": None,
        }
        (uri_a, where), (uri_a2, _), (uri_b, _) = copies
        notes = [f"threads read from checkpointer {source.label} (read-only); each side ran in a process of its own on {where}"]
        facts = [ThreadFacts(t["thread_id"], t["graph_id"], by_id[t["thread_id"]].status, {}, t["graph_id"]) for t in threads]
        a = await _side("A (deployed code)", live_config, uri_a, job, {"OPENAI_BASE_URL": relay.base_url("record")})
        if isinstance(a, str):
            raise UsageError(f"the deployed code could not run on its copy of the store, so nothing can be compared: {a}")
        follow = {**job, "leader": a.to_json()}
        a2, b = await asyncio.gather(
            _side(
                "A2 (deployed code again)", live_config, uri_a2, follow, {"OPENAI_BASE_URL": relay.base_url("replay", lane="A2")}
            ),
            _side("B (candidate)", candidate, uri_b, follow, {"OPENAI_BASE_URL": relay.base_url("replay", lane="B")}),
        )
        if isinstance(a2, str):
            raise UsageError(f"the deployed code's second run failed, so what varies cannot be learned: {a2}")
        if isinstance(b, str):
            b = lost_side("B (candidate)", facts, f"the candidate could not run on its copy of the store: {b}")
        sides = Sides(a=a, a2=a2, b=b, notes=notes)
        report = judge(sides, selection, kept, graph_ids, options, live=source.label, candidate=candidate_text)
        report.drawings = drawings(graph_ids, live, served=False)
    removed = sorted({t.graph_id for t in snapshots if t.graph_id not in served})
    report.notes += [
        f"graph {g} is not in the candidate (the gate says GRAPH_REMOVED): its threads were not run" for g in removed
    ]
    return report
