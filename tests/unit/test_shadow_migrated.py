"""Migrated against born-on-the-candidate (issue 38, item 2), the pure parts: how a live thread's history becomes
the runs that rebuild it (or why it cannot), how the migrated thread's requests map onto the fresh one, and the
judgement of migrated against fresh on each side (no server: traces built by hand in the shape the streams give).
"""

from __future__ import annotations

from typing import Any

import pytest

from migrations_playbook.proof.shadow.compare import Diff
from migrations_playbook.proof.shadow.drive import ThreadFacts
from migrations_playbook.proof.shadow.migrated import (
    INTENDED,
    MIGRATED,
    behaviour,
    is_intended,
    judge_migrated,
    notes,
)
from migrations_playbook.proof.shadow.rebuild import RebuildPlan, Rebuilt, continuation, plan_rebuild, question_ids
from migrations_playbook.proof.shadow.traces import RunRequest, RunTrace, TaskRun, ThreadTrace
from migrations_playbook.sources.interrupts import PendingInterrupt

# -- the plan ------------------------------------------------------------------------------


def _run(run_id: str, when: str, status: str = "success", **kwargs: Any) -> dict[str, Any]:
    return {"run_id": run_id, "created_at": when, "status": status, "assistant_id": "g", "kwargs": kwargs}


def _checkpoint(checkpoint_id: str, run_id: str, source: str = "loop") -> dict[str, Any]:
    return {"checkpoint": {"checkpoint_id": checkpoint_id}, "metadata": {"run_id": run_id, "source": source}}


def test_a_thread_is_rebuilt_from_its_inputs_and_answers_in_order() -> None:
    runs = [
        _run("r2", "2026-01-02", command={"resume": "yes"}, context={"team": "LG", "langgraph_request_id": "x"}),
        _run("r1", "2026-01-01", input={"q": "hi"}),
        _run("r3", "2026-01-03", input=None),
    ]
    history = [_checkpoint("c3", "r3"), _checkpoint("c2", "r2"), _checkpoint("c1", "r1", "input")]
    plan = plan_rebuild("t", "g", history, runs)
    assert plan.refused is None
    assert [(s.kind, s.input, s.resume, s.context) for s in plan.steps] == [
        ("input", {"q": "hi"}, None, None),
        ("resume", None, "yes", {"team": "LG"}),
        ("continue", None, None, None),
    ]
    assert [s.request().kind for s in plan.steps] == ["turn", "resume", "continue"]


@pytest.mark.parametrize(
    ("history", "runs", "why"),
    [
        pytest.param([_checkpoint("c1", "r1", "update")], [_run("r1", "1", input=1)], "update_state", id="update-state"),
        pytest.param([_checkpoint("c1", "r1", "fork")], [_run("r1", "1", input=1)], "fork", id="fork"),
        pytest.param([_checkpoint("c1", "other")], [_run("r1", "1", input=1)], "a copy of another thread", id="copy"),
        pytest.param([], [], "keeps no run", id="no-run"),
        pytest.param([_checkpoint("c1", "r1")], [_run("r1", "1", "error", input=1)], "ended error", id="errored-run"),
        pytest.param(
            [_checkpoint("c1", "r1")],
            [_run("r1", "1", input=1, config={"configurable": {"checkpoint_id": "c0"}})],
            "earlier checkpoint",
            id="rerun",
        ),
        pytest.param([_checkpoint("c1", "r1")], [_run("r1", "1")], "does not keep what", id="input-not-kept"),
        pytest.param(
            [_checkpoint("c1", "r1")], [_run("r1", "1", command={"goto": "x"})], "Command other than a resume", id="goto"
        ),
    ],
)
def test_a_thread_whose_history_its_runs_do_not_show_is_not_rebuilt(
    history: list[dict[str, Any]], runs: list[dict[str, Any]], why: str
) -> None:
    plan = plan_rebuild("t", "g", history, runs)
    assert plan.steps == () and plan.refused is not None and why in plan.refused


def _facts(values: Any, head: str = "head", fork_from: str | None = "before") -> ThreadFacts:
    state = {"values": values, "next": [], "tasks": [], "checkpoint": {"checkpoint_id": head}}
    return ThreadFacts(thread_id="t", graph_id="g", status="idle", state=state, assistant_id="g", fork_from=fork_from)


def test_the_migrated_threads_requests_start_from_the_fresh_threads_own_checkpoints() -> None:
    facts = _facts({})
    rerun = RunRequest(kind="rerun", assistant_id="g", input=1, checkpoint_id="before")
    turn = RunRequest(kind="turn", assistant_id="g", input=1, checkpoint_id="head")
    answer = RunRequest(kind="resume", assistant_id="g", resume="yes")
    mapped = continuation(facts, [rerun, answer, turn], "fresh-head", "fresh-before")
    assert not isinstance(mapped, str)
    assert [r.checkpoint_id for r in mapped] == ["fresh-before", None, "fresh-head"]
    elsewhere = RunRequest(kind="turn", assistant_id="g", input=1, checkpoint_id="somewhere")
    assert "no counterpart" in str(continuation(facts, [elsewhere], "fresh-head", "fresh-before"))


# -- the judgement ---------------------------------------------------------------------------

TURN = RunRequest(kind="turn", assistant_id="g", input={"q": "more"}, checkpoint_id="head")


def _trace(values: Any, *tasks: TaskRun) -> ThreadTrace:
    return ThreadTrace(thread_id="t", graph_id="g", runs=[RunTrace(request=TURN, tasks=list(tasks))], values=values)


def _rebuilt(values: Any, trace: ThreadTrace) -> Rebuilt:
    return Rebuilt(thread_id="t", fresh_id="f", values=values, trace=trace)


SUMMARY_OLD = {"id": "s-old", "type": "system", "content": "summary: a"}


def _summary(key: str, text: str) -> dict[str, Any]:
    return {"id": key, "type": "system", "content": text}


def _judge(
    live: Any,
    migrated: dict[str, ThreadTrace],
    fresh: dict[str, Rebuilt],
    plan: RebuildPlan | None = None,
) -> Any:
    return judge_migrated(
        {"t": _facts(live)},
        {"t": plan or RebuildPlan("t", "g", steps=())},
        {side: {"t": trace} for side, trace in migrated.items()},
        {side: {"t": rebuilt} for side, rebuilt in fresh.items()},
        {"g": set()},
    )


def test_a_stale_value_kept_beside_the_new_one_is_a_migration_break() -> None:
    """A summary re-keyed: the migrated thread keeps its old summary and adds the new one; a thread born on the
    candidate replaces its own. The deployed code replaces it on both."""
    live = {"messages": [SUMMARY_OLD]}
    write_a = TaskRun("summarize", result={"messages": [_summary("s-old", "summary: a b")]})
    write_b = TaskRun("summarize", result={"messages": [_summary("s-new", "summary: a b")]})
    on_a = _trace({"messages": [_summary("s-old", "summary: a b")]}, write_a)
    judged = _judge(
        live,
        {"A": on_a, "A2": on_a, "B": _trace({"messages": [SUMMARY_OLD, _summary("s-new", "summary: a b")]}, write_b)},
        {
            "A": _rebuilt(live, on_a),
            "A2": _rebuilt(live, on_a),
            "B": _rebuilt(
                {"messages": [_summary("s-new", "summary: a")]},
                _trace({"messages": [_summary("s-new", "summary: a b")]}, write_b),
            ),
        },
    )
    (diff,) = judged.breaks["t"][:1]
    assert diff.code == MIGRATED and diff.field is not None and diff.field.startswith("changes.values.messages")
    assert "run 1 (turn)" in diff.detail or "after the runs" in diff.detail


def test_an_old_key_a_step_no_longer_sees_is_a_migration_break_named_with_the_step() -> None:
    live = {"tone": "formal"}
    formal = TaskRun("reply", result={"answer": "Dear user"})
    casual = TaskRun("reply", result={"answer": "hey"})
    on_a = _trace({"tone": "formal", "answer": "Dear user"}, formal)
    judged = _judge(
        live,
        {"A": on_a, "A2": on_a, "B": _trace({"tone": "formal", "answer": "hey"}, casual)},
        {
            "A": _rebuilt(live, on_a),
            "A2": _rebuilt(live, on_a),
            "B": _rebuilt({"style": "formal"}, _trace({"style": "formal", "answer": "Dear user"}, formal)),
        },
    )
    steps = {(d.node, d.field) for d in judged.breaks["t"]}
    assert ("reply", "run0.results.reply#0.answer") in steps


def test_a_change_every_thread_meets_is_intended_and_an_old_value_nothing_writes_is_not_behaviour() -> None:
    """New words for every thread; and `priority`, which only the old code wrote, stays on the migrated thread:
    neither is a migration break; the A-against-B loss of `priority` a fresh thread shows too is intended."""
    live = {"priority": "high", "answer": "noted"}
    on_a = _trace(
        {"priority": "high", "answer": "noted"},
        TaskRun("enrich", result={"priority": "high"}),
        TaskRun("reply", result={"answer": "noted"}),
    )
    on_b = _trace({"priority": "high", "answer": "saved"}, TaskRun("reply", result={"answer": "saved"}))
    judged = _judge(
        live,
        {"A": on_a, "A2": on_a, "B": on_b},
        {
            "A": _rebuilt(live, on_a),
            "A2": _rebuilt(live, on_a),
            "B": _rebuilt({"answer": "saved"}, _trace({"answer": "saved"}, TaskRun("reply", result={"answer": "saved"}))),
        },
    )
    assert judged.breaks == {} and judged.judged == ["t"]
    assert ("SHADOW_DATA_LOST", None, "priority") in judged.intended["t"]
    assert ("SHADOW_STEP_SKIPPED", "enrich", None) in judged.intended["t"]
    assert is_intended(Diff("SHADOW_DATA_LOST", None, "priority", ""), judged.intended["t"])
    assert is_intended(Diff("SHADOW_OUTPUT_KEY_DROPPED", None, "output.priority", ""), judged.intended["t"])
    assert not is_intended(Diff("SHADOW_OUTPUT_KEY_DROPPED", None, "output.answer", ""), judged.intended["t"])
    assert not is_intended(
        Diff("SHADOW_RUN_FAILED", "enrich", None, ""), judged.intended["t"] | {("SHADOW_RUN_FAILED", "enrich", None)}
    )


def test_a_thread_that_keeps_its_old_behaviour_on_purpose_is_not_a_break() -> None:
    """A tone stamped at the thread's start (the flow_version pattern): the migrated thread answers as it did on
    the deployed code, a new thread in the new tone."""
    live = {"tone": "formal"}
    formal = _trace({"tone": "formal"}, TaskRun("reply", result={"answer": "Dear user"}))
    friendly = _trace({"tone": "friendly"}, TaskRun("reply", result={"answer": "hey"}))
    judged = _judge(
        live,
        {"A": formal, "A2": formal, "B": formal},
        {"A": _rebuilt(live, formal), "A2": _rebuilt(live, formal), "B": _rebuilt({"tone": "friendly"}, friendly)},
    )
    assert judged.breaks == {}


def test_a_rebuild_that_is_not_the_live_thread_is_named_not_judged() -> None:
    on_a = _trace({"x": 2})
    judged = _judge(
        {"x": 1},
        {"A": on_a, "A2": on_a, "B": on_a},
        {"A": _rebuilt({"x": 3}, on_a), "A2": _rebuilt({"x": 3}, on_a), "B": _rebuilt({"x": 3}, on_a)},
    )
    assert judged.breaks == {} and judged.intended == {}
    assert "is not the live thread" in judged.not_rebuilt["t"] and "values.x" in judged.not_rebuilt["t"]
    refused = _judge({"x": 1}, {"A": on_a, "A2": on_a, "B": on_a}, {}, RebuildPlan("t", "g", refused="update_state"))
    assert refused.not_rebuilt == {"t": "update_state"}
    failed = _judge(
        {"x": 1},
        {"A": on_a, "A2": on_a, "B": on_a},
        {"A": _rebuilt({"x": 1}, on_a), "A2": _rebuilt({"x": 1}, on_a), "B": Rebuilt("t", failed="KeyError: 'x'")},
    )
    assert failed.not_rebuilt["t"].startswith("on the candidate (B)")
    lines = notes(failed, 0)
    assert "0 of 1 thread(s) rebuilt" in lines[0] and "t: on the candidate" in lines[1]


def test_behaviour_is_what_the_runs_did_not_what_the_thread_carries() -> None:
    trace = _trace({"kept": 1, "notes": ["a", "b", "c"]}, TaskRun("n", result={"notes": ["c"]}))
    seen = behaviour(trace, {"kept": 1, "notes": ["a", "b"]}, {}, set())
    assert "changes.values.kept" not in seen
    assert seen["changes.values.notes.added[0]"] == '"c"'
    assert seen["run0.results.n#0.notes[0]"] == "c" and seen["run0.outcome"] == "ok"
    assert INTENDED != MIGRATED


def test_answers_keyed_by_the_live_questions_ids_are_keyed_by_the_fresh_ones() -> None:
    live = [PendingInterrupt("a", {}, "live-1"), PendingInterrupt("a", {}, "live-2"), PendingInterrupt("b", {}, "live-3")]
    fresh = [PendingInterrupt("b", {}, "new-3"), PendingInterrupt("a", {}, "new-1"), PendingInterrupt("a", {}, "new-2")]
    ids = question_ids(live, fresh)
    assert ids == {"live-1": "new-1", "live-2": "new-2", "live-3": "new-3"}
    answer = RunRequest(kind="resume", assistant_id="g", resume={"live-1": "yes", "live-3": "no"})
    mapped = continuation(_facts({}), [answer], "h", "f", ids)
    assert not isinstance(mapped, str) and mapped[0].resume == {"new-1": "yes", "new-3": "no"}
    assert question_ids(live, fresh[:2]) == {}
    plain = RunRequest(kind="resume", assistant_id="g", resume={"decision": "approve"})
    assert continuation(_facts({}), [plain], "h", "f", ids) == [plain]


def test_a_recorded_answer_keyed_by_question_ids_is_not_rebuilt() -> None:
    history = [
        _checkpoint("c2", "r2"),
        {**_checkpoint("c1", "r1"), "tasks": [{"interrupts": [{"id": "q1", "value": {}}]}]},
    ]
    runs = [_run("r1", "1", input={"x": 1}), _run("r2", "2", command={"resume": {"q1": "yes"}})]
    plan = plan_rebuild("t", "g", history, runs)
    assert plan.refused is not None and "by their ids" in plan.refused
