"""One side of the shadow proof on a copy of a self-hosted checkpointer, in a process of its own.

``python -m migrations_playbook.proof.shadow.worker JOB.json OUT.json``: the side's code (the job's
langgraph.json: the deployed code or the candidate) is compiled with a saver on the side's copy of the
store, and the job's threads are driven in-process as `shadow_api` drives them on a server: as leader
(deciding the runs from what it sees, `shadow_drive`) or as follower (the leader's requests verbatim),
each run streamed with ``stream_mode=["tasks", "custom", "values"]`` and subgraphs into a `shadow_trace`. The
side's trace is written to OUT.json. One process per side, because the deployed code and the candidate
are usually the same modules at two versions, which one interpreter cannot hold.

A thread's last input is the ``__start__`` channel of its newest input checkpoint (read from the saver);
there are no assistants, so runs use the graph id and no run context. The graphs' nodes (model calls,
tools) run in this process, as they would in a script.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from migrations_playbook.proof.resume import ResumeRule
from migrations_playbook.proof.shadow.drive import ThreadFacts, after_run, planned_requests
from migrations_playbook.proof.shadow.traces import (
    STREAM_MODES,
    RunRequest,
    RunTrace,
    SideTrace,
    ThreadTrace,
    TraceRecorder,
    nested_values,
    pending_questions,
)


def _state(graph: Any, thread_id: str) -> dict[str, Any]:
    from migrations_playbook.sources.api.shape import state_json, to_json

    snapshot = graph.get_state({"configurable": {"thread_id": thread_id}}, subgraphs=True)
    state: dict[str, Any] = to_json(state_json(snapshot))
    state["checkpoint"] = {"checkpoint_id": ((snapshot.config or {}).get("configurable") or {}).get("checkpoint_id")}
    return state


def _status(state: Mapping[str, Any], failed: bool) -> str:
    if failed:
        return "error"
    return "interrupted" if state.get("next") else "idle"


def last_input(saver: Any, thread_id: str) -> tuple[bool, Any, str | None]:
    """(found, the newest turn's input, the checkpoint before it) from the raw checkpoints."""
    from migrations_playbook.sources.api.shape import to_json

    for item in saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}):
        if (item.metadata or {}).get("source") != "input":
            continue
        values = item.checkpoint.get("channel_values") or {}
        if "__start__" not in values:
            return False, None, None
        own = item.config["configurable"]["checkpoint_id"]
        parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        return True, to_json(values["__start__"]), parent or own
    return False, None, None


def _run(graph: Any, thread_id: str, request: RunRequest) -> tuple[RunTrace, dict[str, Any] | None]:
    from langgraph.types import Command

    from migrations_playbook.sources.api.shape import to_json

    recorder = TraceRecorder(request)
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if request.checkpoint_id:
        configurable["checkpoint_id"] = request.checkpoint_id
    payload: Any
    if request.kind == "resume":
        payload = Command(resume=request.resume)
    elif request.kind in ("continue", "retry"):
        payload = None
    else:
        payload = request.input
    failed = False
    try:
        for namespace, mode, data in graph.stream(
            payload,
            {"configurable": configurable},
            stream_mode=list(STREAM_MODES),
            subgraphs=True,
            context=dict(request.context) if request.context else None,
        ):
            recorder.feed(mode, namespace, to_json(data))
    except Exception as exc:  # noqa: BLE001 - the side's failure is what the proof records, never a traceback
        recorder.failed(f"{type(exc).__name__}: {exc}"[:500])
        failed = True
    try:
        state: dict[str, Any] = _state(graph, thread_id)
    except Exception as exc:  # noqa: BLE001
        recorder.failed(recorder.trace.error or f"the thread's state cannot be read after the run: {type(exc).__name__}: {exc}")
        return recorder.rest("error", None), None
    return recorder.rest(_status(state, failed), state), state


def drive(graph: Any, saver: Any, thread_id: str, graph_id: str, job: Mapping[str, Any], rule: ResumeRule) -> ThreadTrace:
    """Drive one thread on this side (as leader when the job holds no requests for it)."""
    trace = ThreadTrace(thread_id=thread_id, graph_id=graph_id)
    try:
        start = _state(graph, thread_id)
    except Exception as exc:  # noqa: BLE001 - a side that cannot read the thread
        trace.unreadable = f"{type(exc).__name__}: {exc}"[:300]
        return trace
    if start["checkpoint"]["checkpoint_id"] is None:
        trace.present = trace.exists = False
        return trace
    trace.values, trace.nested = start.get("values"), nested_values(start)
    trace.start_checkpoint = start["checkpoint"]["checkpoint_id"]
    trace.pending_before = pending_questions(start)
    leader = job.get("leader")
    requests: list[RunRequest]
    facts: ThreadFacts | None = None
    if leader is None:
        found, given, fork = last_input(saver, thread_id)
        facts = ThreadFacts(
            thread_id=thread_id,
            graph_id=graph_id,
            status=_status(start, False),
            state=start,
            assistant_id=graph_id,
            has_input=found,
            last_input=given,
            fork_from=fork,
        )
        planned = planned_requests(facts, rule, job.get("turn_inputs") or {})
        if isinstance(planned, str):
            trace.skipped, requests = planned, []
        else:
            requests = list(planned)
    else:
        runs = ((leader.get("threads") or {}).get(thread_id) or {}).get("runs") or []
        requests = [RunRequest.from_json(r["request"]) for r in runs]
    sent: list[RunRequest] = []
    after: Mapping[str, Any] | None = start
    while requests:
        request = requests.pop(0)
        sent.append(request)
        run, after = _run(graph, thread_id, request)
        trace.runs.append(run)
        if facts is not None and after is not None:
            requests = after_run(facts, after, rule, sent, requests)
    if after is not None:
        trace.values, trace.nested = after.get("values"), nested_values(after)
    return trace


def run_job(job: Mapping[str, Any]) -> SideTrace:
    """The side's trace for ``job`` (see the module docstring)."""
    from migrations_playbook.graphcode.candidate import load_compiled
    from migrations_playbook.sources.store.repair import writable_saver

    rule = ResumeRule(
        by_kind=job["rule"].get("by_kind") or {}, derive=bool(job["rule"].get("derive")), fallback=job["rule"].get("fallback")
    )
    threads: list[Mapping[str, Any]] = job["threads"]
    wanted = sorted({t["graph_id"] for t in threads})
    compiled = load_compiled(Path(job["config"]), wanted)
    side = SideTrace(label=job["label"])
    with writable_saver(job["store"]) as saver:
        graphs = {g: graph.copy(update={"checkpointer": saver}) for g, graph in compiled.items()}
        for thread in threads:
            graph_id, thread_id = thread["graph_id"], thread["thread_id"]
            if graph_id not in graphs:
                side.threads[thread_id] = ThreadTrace(thread_id=thread_id, graph_id=graph_id, present=False, exists=False)
                continue
            side.threads[thread_id] = drive(graphs[graph_id], saver, thread_id, graph_id, job, rule)
    return side


def main(argv: list[str]) -> int:
    from migrations_playbook.graphcode.candidate import CandidateError

    job_path, out_path = Path(argv[0]), Path(argv[1])
    job = json.loads(job_path.read_text())
    try:
        side = run_job(job)
    except CandidateError as exc:
        print(f"{job.get('label')}: the code does not load: {exc}", file=sys.stderr)
        return 2
    out_path.write_text(json.dumps(side.to_json(), ensure_ascii=False, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
