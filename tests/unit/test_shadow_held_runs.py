"""What the shadow sends of the work the live server holds (migrations_playbook/proof/shadow/held_runs.py,
retry.py, drive.planned_requests): held runs first on their thread, crons once, errored threads retried.

tests/integration/test_held_work_server.py drives the same on real servers.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from migrations_playbook.model import ThreadSnapshot
from migrations_playbook.proof.resume import ResumeRule
from migrations_playbook.proof.shadow.drive import ThreadFacts, planned_requests
from migrations_playbook.proof.shadow.held_runs import cron_key, plan_held
from migrations_playbook.proof.shadow.traces import RunRequest, RunTrace, ThreadTrace
from migrations_playbook.staging.held import HeldCron, HeldRun, HeldWork

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)
RULE = ResumeRule(derive=True)


def _snap(thread_id: str, graph_id: str = "errand", status: str = "idle") -> ThreadSnapshot:
    return ThreadSnapshot(thread_id=thread_id, graph_id=graph_id, status=status, values={"to": "x"})


def _run(run_id: str, thread_id: str, created: str, **request: Any) -> HeldRun:
    return HeldRun(
        run_id=run_id,
        thread_id=thread_id,
        status="pending",
        not_before=created,
        multitask_strategy="enqueue",
        assistant_id="asst",
        graph_id="errand",
        created_at=created,
        request=request,
    )


def _facts(thread_id: str = "t1", status: str = "idle", **more: Any) -> ThreadFacts:
    state = {"values": {"to": "x"}, "next": [], "tasks": [], "checkpoint": {"checkpoint_id": "head"}}
    return ThreadFacts(
        thread_id=thread_id,
        graph_id="errand",
        status=status,
        state=state,
        assistant_id="errand",
        has_input=True,
        last_input={"to": "x"},
        fork_from="before",
        **more,
    )


def test_held_runs_are_sent_as_stored_in_the_queues_order() -> None:
    work = HeldWork(
        runs=(
            _run("queued", "t1", "2030-01-01T11:00:00+00:00", input={"to": "a"}, config={"tags": ["x"]}),
            _run("delayed", "t1", "2030-01-01T13:00:00+00:00", command={"resume": "ok"}),
        )
    )
    plan = plan_held(work, [_snap("t1")], {"errand"}, sample=5, every=False, now=NOW)
    first, second = plan.runs["t1"]
    assert (first.kind, first.input, first.assistant_id) == ("held", {"to": "a"}, "asst")
    assert first.extra == {"config": {"tags": ["x"]}, "multitask_strategy": "enqueue"}
    assert "held run queued (queued" in first.why and "held run delayed (delayed" in second.why
    assert second.extra is not None and second.extra["command"] == {"resume": "ok"} and second.input is None
    assert plan.include == {"t1"}


def test_held_runs_go_first_then_only_the_runs_that_name_their_own_checkpoint() -> None:
    """After the deploy the queue runs the held work on the head before any client: the thread's rerun (from the
    checkpoint before its last turn) and next turn (from the live head) still probe the data as it is."""
    held = (RunRequest(kind="held", assistant_id="a", input={"to": "q"}, why="held run r"),)
    planned = planned_requests(_facts(held=held), RULE, {})
    assert not isinstance(planned, str)
    assert [(r.kind, r.checkpoint_id) for r in planned] == [("held", None), ("rerun", "before"), ("turn", "head")]


def test_a_busy_thread_gets_its_held_runs_and_no_continue_at_the_old_head() -> None:
    held = (RunRequest(kind="held", assistant_id="a", input={"to": "q"}, why="held run r"),)
    facts = _facts(status="busy", held=held)
    facts = replace(facts, state={**facts.state, "next": ["file"]}, has_input=False)
    assert planned_requests(facts, RULE, {}) == list(held)


@pytest.mark.parametrize(
    ("turn_inputs", "expected_input"),
    [pytest.param({}, {"to": "x"}, id="last-input-again"), pytest.param({"errand": {"to": "y"}}, {"to": "y"}, id="turn-input")],
)
def test_an_errored_thread_is_retried_then_takes_a_next_turn_from_where_the_retry_left_it(
    turn_inputs: dict[str, Any], expected_input: Any
) -> None:
    facts = replace(_facts(status="error"), state={**_facts().state, "next": ["file"]})
    planned = planned_requests(facts, RULE, turn_inputs)
    assert not isinstance(planned, str)
    retry, turn = planned
    assert (retry.kind, retry.input, retry.checkpoint_id) == ("retry", None, None)
    assert (turn.kind, turn.input, turn.checkpoint_id) == ("turn", expected_input, None)


def test_an_errored_thread_with_no_input_known_is_retried_alone() -> None:
    facts = replace(_facts(status="error"), has_input=False, last_input=None)
    assert [r.kind for r in planned_requests(facts, RULE, {}) or []] == ["retry"]


def test_held_work_is_classed_and_sampled_like_threads() -> None:
    """Threads holding runs of the same kind and shape are one class: one runs (no sample); another shape, another
    class; every one with --all."""
    runs = tuple(_run(f"r{n}", f"t{n}", "2030-01-01T11:00:00+00:00", input={"to": "a"}) for n in range(4))
    odd = _run("r9", "t9", "2030-01-01T11:00:00+00:00", input={"to": "a", "attachments": ["x"]})
    snaps = [_snap(f"t{n}") for n in (0, 1, 2, 3, 9)]
    work = HeldWork(runs=(*runs, odd))
    sampled = plan_held(work, snaps, {"errand"}, sample=0, every=False, now=NOW)
    assert sampled.classes == 2 and sampled.include == {"t0", "t9"}
    assert set(plan_held(work, snaps, {"errand"}, sample=0, every=True, now=NOW).include) == {"t0", "t1", "t2", "t3", "t9"}
    notes = "\n".join(sampled.notes(["t0", "t9"]))
    assert "2 of 5 sendable held run(s) on 2 thread(s) (2 class(es)" in notes
    assert "held runs not driven: 3 on 3 thread(s) whose class ran on another thread" in notes


def test_what_cannot_be_driven_is_said_with_why() -> None:
    work = HeldWork(
        runs=(
            HeldRun("r1", "gone", "pending", None, "enqueue", "a", "errand"),
            HeldRun("r0", None, "pending", None, None, "a", "errand"),
            HeldRun("r2", "t2", "pending", None, "enqueue", "a", "other"),
            HeldRun("r3", "t3", "pending", None, "enqueue", "a", "errand", unsendable="input.f is a builtins.function"),
        ),
        crons=(HeldCron("c1", None, "* * * * *", "a", "other"), HeldCron("c2", None, "@daily", "a", "errand", unsendable="x")),
    )
    plan = plan_held(work, [_snap("t2", "other"), _snap("t3")], {"errand"}, sample=5, every=False, now=NOW)
    assert plan.runs == {} and plan.crons == []
    text = "\n".join(plan.notes([]))
    assert "thread gone is not among the threads read" in text and "r0: stateless (no thread)" in text
    assert "graph other is not in the candidate" in text and "cron c1: graph other" in text
    assert "run r3 cannot be sent again as stored (input.f is a builtins.function)" in text
    assert "cron c2: its payload cannot be sent again" in text


def test_crons_fire_on_a_copy_of_their_thread_or_a_new_one_once_per_class() -> None:
    crons = (
        HeldCron("c1", "t1", "@daily", "asst", "errand", payload={"input": {"to": "a"}}),
        HeldCron("c2", "t1", "@daily", "asst", "errand", payload={"input": {"to": "b"}}),
        HeldCron("c3", None, "@hourly", "asst", "errand", payload={"input": {"to": "c"}, "context": {"k": 1}}),
    )
    plan = plan_held(HeldWork(crons=crons), [_snap("t1")], {"errand"}, sample=0, every=False, now=NOW)
    assert [job.cron.cron_id for job in plan.crons] == ["c1", "c3"] and plan.cron_classes == 2
    on_thread, stateless = (job.request for job in plan.crons)
    assert on_thread.kind == "cron" and "on a copy of thread t1" in on_thread.why and on_thread.input == {"to": "a"}
    assert "on a new thread" in stateless.why and stateless.context == {"k": 1}
    assert cron_key("c1") == plan.crons[0].key
    assert "crons not fired: 1 whose class fired on another cron" in "\n".join(plan.notes([]))


def test_a_held_run_or_cron_keeps_its_request_through_a_trace_round_trip_and_names_itself() -> None:
    request = RunRequest(
        kind="held", assistant_id="a", input={"to": "q"}, extra={"multitask_strategy": "enqueue"}, why="held run r1 (queued)"
    )
    trace = ThreadTrace(thread_id="t", graph_id="g", runs=[RunTrace(request=request)])
    assert ThreadTrace.from_json(trace.to_json()).runs[0].request == request
    assert request.label == "held: held run r1 (queued)"
    assert RunRequest(kind="turn", assistant_id="a", why="x").label == "turn"


def test_a_thread_busy_only_with_a_delayed_run_is_at_rest_and_keeps_its_own_runs() -> None:
    """The live server shows a thread with a delayed run busy; the copies hold it at rest: after the held run, its
    last turn reruns and it takes a next turn, as an idle thread does."""
    work = HeldWork(runs=(_run("later", "t1", "2030-01-01T13:00:00+00:00", input={"to": "a"}),))
    plan = plan_held(work, [_snap("t1", status="busy")], {"errand"}, sample=5, every=False, now=NOW)
    (facts,) = plan.attach([_facts(status="busy")])
    assert facts.status == "idle"
    assert [r.kind for r in planned_requests(facts, RULE, {}) or []] == ["held", "rerun", "turn"]
