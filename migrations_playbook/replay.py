"""Staging replay: run the candidate code over a copy of the live threads and compare.

Two ways to get a staging server that holds the live threads:

* ``--persistence DIR``: a local `langgraph dev`'s `.langgraph_api/` folder (or the
  folder holding it) is copied into a temporary working folder, and a candidate
  `langgraph dev` is started there with the candidate's langgraph.json (paths
  made absolute, so nothing is written next to the candidate or the live server).
  A running `langgraph dev` (runtime-inmem 0.36.7) writes that folder every 10
  seconds, but its checkpoints only until the first state read through the API,
  and always on a graceful stop. The replay checks that every copied thread has
  the live thread's latest checkpoint and refuses (exit 2) a stale copy.
* ``--staging-url URL``: a staging deployment restored from a snapshot of production.

For every thread with pending work it compares, live vs staging, the `next`
nodes, the pending task paths and the interrupt payloads
(STAGING_STATE_DIVERGED), and with ``--resume JSON`` it resumes each
interrupted thread *on staging only* and checks that the run succeeds and that
the step the thread was paused at actually runs (STAGING_RESUME_FAILED).
The live server is only read.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIError, NotFoundError

from migrations_playbook.candidate import _search_roots, read_config
from migrations_playbook.devserver import DevServer
from migrations_playbook.live import connect, ensure_reachable, live_graph_ids, pending_paths
from migrations_playbook.model import (
    PAUSED_STATUSES,
    STAGING_RESUME_FAILED,
    STAGING_STATE_DIVERGED,
    Finding,
    GateReport,
    GraphSummary,
)

_PATH_KEYS = ("path",)


def absolute_config(config_path: Path) -> dict[str, Any]:
    """The candidate config with every relative path made absolute."""
    config_path = config_path.resolve()
    base = config_path.parent
    config = read_config(config_path)

    def fix(spec: Any) -> Any:
        if isinstance(spec, str) and spec.startswith("."):
            location, sep, attr = spec.partition(":")
            return f"{(base / location).resolve()}{sep}{attr}"
        if isinstance(spec, dict):
            return {k: fix(v) if k in _PATH_KEYS or k == "app" else v for k, v in spec.items()}
        return spec

    config["graphs"] = {gid: fix(spec) for gid, spec in config["graphs"].items()}
    config["dependencies"] = [
        str((base / d).resolve()) if isinstance(d, str) and d.startswith(".") else d
        for d in config.get("dependencies", [])
    ]
    if isinstance(config.get("env"), str):
        config["env"] = str((base / config["env"]).resolve())
    if isinstance(config.get("auth"), dict):
        config["auth"] = fix(config["auth"])
    if isinstance(config.get("http"), dict):
        config["http"] = fix(config["http"])
    return config


def start_staging(candidate: Path, persistence: Path, stack: ExitStack) -> DevServer:
    """Copy the live persistence folder and serve it with the candidate code."""
    source = persistence / ".langgraph_api" if (persistence / ".langgraph_api").is_dir() else persistence
    if not any(source.glob("*.pckl")):
        raise FileNotFoundError(f"no langgraph dev persistence (*.pckl) in {source}")
    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="playbook-staging-")))
    shutil.copytree(source, workdir / ".langgraph_api")
    config = absolute_config(candidate)
    (workdir / "langgraph.json").write_text(json.dumps(config, indent=2))
    roots = _search_roots(candidate.resolve(), read_config(candidate.resolve()))
    server = DevServer(
        workdir / "langgraph.json",
        workdir,
        env={"PYTHONPATH": ":".join(str(r) for r in roots)},
    )
    stack.callback(server.stop)
    return server.start()


class StaleCopy(Exception):
    """The staging copy does not hold the live thread's latest checkpoint."""


def _checkpoint_id(state: Mapping[str, Any]) -> str | None:
    checkpoint = state.get("checkpoint") or {}
    return checkpoint.get("checkpoint_id")


def _interrupt_values(state: Mapping[str, Any]) -> list[Any]:
    values: list[Any] = []
    for task in state.get("tasks") or []:
        values.extend(i.get("value") for i in task.get("interrupts") or [])
        nested = task.get("state")
        if isinstance(nested, Mapping) and "tasks" in nested:
            values.extend(_interrupt_values(nested))
    return values


def _view(state: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "next": list(state.get("next") or []),
        "pending": list(pending_paths(state)),
        "interrupts": _interrupt_values(state),
    }


async def _resume_on_staging(
    staging: LangGraphClient, thread_id: str, graph_id: str, resume: Any, paused_at: list[str]
) -> str | None:
    """Resume one staging thread; an error text, or None when the paused step ran."""
    ran: set[str] = set()
    try:
        async for part in staging.runs.stream(
            thread_id, graph_id, command={"resume": resume}, stream_mode="updates", stream_subgraphs=True
        ):
            if part.event == "error":
                return f"the resumed run failed: {part.data}"
            if part.event.startswith("updates") and isinstance(part.data, dict):
                namespace = part.event.partition("|")[2]
                prefix = ":".join(seg.split(":")[0] for seg in namespace.split("|") if seg)
                ran.update(f"{prefix}:{node}" if prefix else node for node in part.data)
    except APIError as exc:
        return f"the resume was refused: {exc}"
    expected = [p for p in paused_at if p.split(":")[0] in {r.split(":")[0] for r in ran}]
    if paused_at and not expected and "__interrupt__" in ran:
        # The step ran and asked again (e.g. an approval of another kind): not lost.
        after = pending_paths(await staging.threads.get_state(thread_id, subgraphs=True))
        expected = [p for p in paused_at if p in after]
    if paused_at and not expected:
        return (
            f"the resume returned, but the step the thread was paused at ({', '.join(paused_at)}) "
            "never ran: its work would be lost"
        )
    return None


async def replay(
    *,
    live_url: str,
    staging_url: str,
    candidate: str,
    graph_ids: list[str],
    resume: Any | None,
    headers: Mapping[str, str],
) -> GateReport:
    findings: dict[tuple[str, str, str], Finding] = {}
    summaries: dict[str, GraphSummary] = {}

    def finding(code: str, graph_id: str, node: str, message: str, key_extra: str = "") -> Finding:
        key = (code, graph_id, f"{node}|{key_extra or message}")
        if key not in findings:
            findings[key] = Finding(code=code, severity="block", graph_id=graph_id, node=node or None, message=message)
        return findings[key]

    async with AsyncExitStack() as stack:
        live = connect(live_url, headers)
        stack.push_async_callback(live.aclose)
        staging = connect(staging_url, headers)
        stack.push_async_callback(staging.aclose)
        await ensure_reachable(live, live_url)
        await ensure_reachable(staging, staging_url)
        assistants = await live_graph_ids(live)
        for graph_id in graph_ids or sorted(assistants):
            summary = summaries.setdefault(graph_id, GraphSummary())
            for status in sorted(PAUSED_STATUSES):
                offset = 0
                while True:
                    page = await live.threads.search(
                        metadata={"graph_id": graph_id}, status=status, limit=200, offset=offset,
                        select=["thread_id", "status"],
                    )
                    for thread in page:
                        thread_id = thread["thread_id"]
                        summary.threads_scanned += 1
                        summary.by_status[status] = summary.by_status.get(status, 0) + 1
                        live_state = await live.threads.get_state(thread_id, subgraphs=True)
                        try:
                            staging_state = await staging.threads.get_state(thread_id, subgraphs=True)
                        except NotFoundError:
                            staging_state = {}
                        if _checkpoint_id(staging_state) != _checkpoint_id(live_state):
                            raise StaleCopy(
                                f"staging does not hold thread {thread_id}'s latest checkpoint "
                                f"(live {_checkpoint_id(live_state)}, staging {_checkpoint_id(staging_state)}): "
                                "the copy is older than the live state. `langgraph dev` may keep checkpoints "
                                "in memory until a graceful stop: stop it with Ctrl+C (SIGINT), start it again, "
                                "and rerun the replay"
                            )
                        before, after = _view(live_state), _view(staging_state)
                        if before != after:
                            changed = [k for k in before if before[k] != after[k]]
                            node = ",".join(before["pending"])
                            finding(
                                STAGING_STATE_DIVERGED, graph_id, node,
                                f"under the candidate, threads paused at {node or '-'} show different "
                                f"{', '.join(changed)} (e.g. thread {thread_id}: live "
                                f"{json.dumps({k: before[k] for k in changed}, ensure_ascii=False)[:200]} vs staging "
                                f"{json.dumps({k: after[k] for k in changed}, ensure_ascii=False)[:200]})",
                                key_extra=",".join(changed),
                            ).add_thread(thread_id)
                        if resume is not None and status == "interrupted":
                            error = await _resume_on_staging(staging, thread_id, graph_id, resume, before["pending"])
                            if error:
                                finding(STAGING_RESUME_FAILED, graph_id, ",".join(before["pending"]), error).add_thread(thread_id)
                    if len(page) < 200:
                        break
                    offset += len(page)
    return GateReport(
        command="replay",
        live_url=live_url,
        candidate=candidate,
        strict=False,
        graphs=summaries,
        findings=sorted(findings.values(), key=lambda f: (f.graph_id, f.code, f.node or "")),
        notes=[f"staging server {staging_url}"] + ([f"resumed on staging with {json.dumps(resume)}"] if resume is not None else []),
    )
