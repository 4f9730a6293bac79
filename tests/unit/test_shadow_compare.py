"""The shadow proof's pure parts: the comparison of two sides' traces, the noise learned from two runs of
the deployed code, the classes, and the drive's choice of runs (no server: traces built by hand in the
shape the streams give)."""

from __future__ import annotations

import dataclasses
from typing import Any

from migrations_playbook.model import TaskFact, ThreadSnapshot
from migrations_playbook.proof.resume import ResumeRule
from migrations_playbook.proof.shadow.classes import select
from migrations_playbook.proof.shadow.compare import compare_thread, noise_paths
from migrations_playbook.proof.shadow.drive import ThreadFacts, input_of, planned_requests
from migrations_playbook.proof.shadow.traces import RunRequest, RunTrace, SideTrace, TaskRun, ThreadTrace, TraceRecorder

RESUME = RunRequest(kind="resume", assistant_id="g", resume="yes")


def _thread(values: Any, *tasks: TaskRun, error: str | None = None, next_: list[str] | None = None) -> ThreadTrace:
    run = RunTrace(request=RESUME, tasks=list(tasks), error=error, next=next_ or [])
    return ThreadTrace(thread_id="t", graph_id="g", runs=[run], values=values)


def _codes(a: ThreadTrace, b: ThreadTrace, noise: set[str] | None = None) -> list[tuple[str, str | None, str | None]]:
    return [d.key for d in compare_thread(a, b, noise or set())]


def test_identical_traces_have_no_difference() -> None:
    a = _thread({"x": "done"}, TaskRun("ask", result={"x": "done"}))
    assert _codes(a, a) == []


def test_what_varies_between_two_runs_of_the_deployed_code_is_masked() -> None:
    a = _thread({"messages": [{"id": "1", "content": "hi"}]})
    a2 = _thread({"messages": [{"id": "2", "content": "hi"}]})
    b = _thread({"messages": [{"id": "3", "content": "hi"}]})
    noise = noise_paths(a, a2)
    assert noise == {"values.messages[*].id"}
    assert _codes(a, b, noise) == []
    assert _codes(a, b) == [("SHADOW_OUTPUT_DIFFERS", None, "messages")]  # without the learned noise


def test_a_run_the_candidate_fails_blocks_naming_the_failing_step() -> None:
    a = _thread({"x": 1}, TaskRun("worker", result={"x": 1}))
    b = _thread({}, TaskRun("worker", error="KeyError('weight')"), error="KeyError: 'weight'")
    assert _codes(a, b)[0] == ("SHADOW_RUN_FAILED", "worker", None)


def test_a_failed_run_is_one_finding_not_its_echoes_in_the_values() -> None:
    a = _thread({"messages": ["hi", "seen 1", "again", "seen 3"], "routing": "library"})
    b = _thread({"messages": ["hi", "seen 1"], "routing": "supervisor"}, error="409: refused")
    assert _codes(a, b) == [("SHADOW_RUN_FAILED", "resume", None)]


def test_both_failing_alike_is_not_the_candidates_doing() -> None:
    a = _thread({}, error="ValueError: boom")
    assert _codes(a, _thread({}, error="ValueError: other words")) == []


def test_a_step_the_candidate_skips_blocks_and_a_renamed_one_writing_the_same_is_for_review() -> None:
    a = _thread({"outcome": "shipped"}, TaskRun("decide", result={"d": 1}), TaskRun("ship", result={"outcome": "shipped"}))
    skipped = _thread({"outcome": "shipped"}, TaskRun("decide", result={"d": 1}))
    renamed = _thread(
        {"outcome": "shipped"}, TaskRun("decide", result={"d": 1}), TaskRun("dispatch", result={"outcome": "shipped"})
    )
    assert ("SHADOW_STEP_SKIPPED", "ship", None) in _codes(a, skipped)
    assert _codes(a, renamed) == [("SHADOW_STEP_RENAMED", "ship", "dispatch")]


def test_work_done_again_blocks_and_a_new_step_is_for_review() -> None:
    a = _thread({}, TaskRun("charge", result={"n": 1}))
    twice = _thread({}, TaskRun("charge", result={"n": 1}), TaskRun("charge", result={"n": 1}))
    added = _thread({}, TaskRun("charge", result={"n": 1}), TaskRun("notify", result={}))
    assert _codes(a, twice) == [("SHADOW_STEP_REPEATED", "charge", None)]
    assert _codes(a, added) == [("SHADOW_STEP_ADDED", "notify", None)]


def test_a_value_under_another_key_is_misfiled() -> None:
    a = _thread({"first": "looked:alpha", "second": "looked:beta"})
    b = _thread({"first": "looked:beta", "second": "looked:alpha"})
    assert {c for c, *_ in _codes(a, b)} == {"SHADOW_VALUE_MISFILED"}


def test_a_lost_key_or_lost_list_items_block_and_a_longer_list_is_for_review() -> None:
    a = _thread({"messages": ["hi", "seen 1", "again", "seen 3"], "order": "O-1"})
    assert ("SHADOW_DATA_LOST", None, "order") in _codes(a, _thread({"messages": ["hi", "seen 1", "again", "seen 3"]}))
    assert _codes(a, _thread({"messages": ["seen 1"], "order": "O-1"})) == [("SHADOW_DATA_LOST", None, "messages")]
    longer = _thread({"messages": ["hi", "seen 1", "again", "seen 3", "extra"], "order": "O-1"})
    assert [c for c, *_ in _codes(a, longer)] == ["SHADOW_OUTPUT_DIFFERS"]


def test_other_questions_and_another_resting_place_block() -> None:
    a = _thread({}, TaskRun("review", interrupts=[{"kind": "pair_approval"}]), next_=["review"])
    b = _thread({}, TaskRun("review", interrupts=[{"kind": "note"}]), next_=["review"])
    assert ("SHADOW_QUESTION_DIVERGED", "review", None) in _codes(a, b)
    stuck = _thread({}, next_=["review"])
    assert ("SHADOW_PAUSE_DIVERGED", None, None) in _codes(_thread({}), stuck)


def test_a_tool_call_that_fails_only_in_the_candidate_blocks() -> None:
    def tools(status: str) -> TaskRun:
        return TaskRun("tools", result={"messages": [{"type": "tool", "name": "lookup_order", "status": status, "content": "x"}]})

    assert _codes(_thread({}, tools("success")), _thread({}, tools("error"))) == [("SHADOW_TOOL_FAILED", "tools", "lookup_order")]
    assert _codes(_thread({}, tools("error")), _thread({}, tools("error"))) == []


def test_a_lost_or_unreadable_thread_blocks() -> None:
    a = _thread({})
    lost = ThreadTrace(thread_id="t", graph_id="g", present=False, exists=False)
    assert _codes(a, lost) == [("SHADOW_THREAD_LOST", None, None)]
    unreadable = ThreadTrace(thread_id="t", graph_id="g", unreadable="500: boom")
    assert _codes(a, unreadable) == [("SHADOW_STATE_UNREADABLE", None, None)]


def test_the_recorder_reads_finished_tasks_with_their_subgraph_path() -> None:
    recorder = TraceRecorder(RESUME)
    recorder.feed("tasks", ("review:abc",), {"id": "1", "name": "confirm", "input": {}, "triggers": []})
    recorder.feed("tasks", ("review:abc",), {"id": "1", "name": "confirm", "result": {"v": 1}, "error": None, "interrupts": []})
    recorder.feed("custom", (), {"stage": "done"})
    trace = recorder.rest("idle", {"next": [], "tasks": []})
    assert [(t.path, t.result) for t in trace.tasks] == [("review:confirm", {"v": 1})]
    assert trace.custom == [{"stage": "done"}] and trace.status == "idle"
    assert RunTrace.from_json(trace.to_json()) == trace


def _facts(state: dict[str, Any], **kwargs: Any) -> ThreadFacts:
    return ThreadFacts(thread_id="t", graph_id="g", status=kwargs.pop("status", "idle"), state=state, assistant_id="a", **kwargs)


def test_the_drive_answers_continues_or_reruns_the_last_turn_then_takes_a_next_one() -> None:
    rule = ResumeRule(derive=True)
    paused = {
        "next": ["ask"],
        "tasks": [{"name": "ask", "path": ["__pregel_pull", "ask"], "interrupts": [{"id": "i", "value": {"options": ["yes"]}}]}],
    }
    [answer] = planned_requests(_facts(paused, status="interrupted"), rule, {})
    assert (answer.kind, answer.resume) == ("resume", "yes")
    [cont] = planned_requests(
        _facts({"next": ["review"], "tasks": [{"name": "review", "interrupts": []}]}, status="interrupted"), rule, {}
    )
    assert cont.kind == "continue"
    idle = _facts({"next": [], "checkpoint": {"checkpoint_id": "head"}}, has_input=True, last_input={"q": 1}, fork_from="before")
    rerun, turn = planned_requests(idle, rule, {"g": {"q": 2}})
    assert (rerun.kind, rerun.input, rerun.checkpoint_id) == ("rerun", {"q": 1}, "before")
    assert (turn.kind, turn.input, turn.checkpoint_id) == ("turn", {"q": 2}, "head")
    assert isinstance(planned_requests(_facts({"next": []}), rule, {}), str)  # nothing to rerun: said why


def test_the_last_input_comes_from_the_run_else_from_the_input_checkpoint() -> None:
    history = [
        {"metadata": {"source": "loop"}, "checkpoint": {"checkpoint_id": "c3"}},
        {
            "metadata": {"source": "input", "run_id": "r2"},
            "checkpoint": {"checkpoint_id": "c2"},
            "parent_checkpoint": {"checkpoint_id": "c1"},
            "tasks": [{"name": "__start__", "result": {"q": "from the checkpoint"}}],
        },
    ]
    assert input_of(history) == (True, {"q": "from the checkpoint"}, "c1")
    assert input_of(history, {"r2": {"q": "from the run"}}) == (True, {"q": "from the run"}, "c1")


def test_threads_alike_share_a_class_and_the_sample_is_seeded() -> None:
    def snap(thread_id: str, status: str, kind: str | None) -> ThreadSnapshot:
        tasks = (TaskFact(path="ask", interrupted=True, interrupt_values=({"kind": kind},)),) if kind else ()
        return ThreadSnapshot(
            thread_id=thread_id, graph_id="g", status=status, values={"x": 1}, tasks=tasks, pending=("ask",) if kind else ()
        )

    threads = [snap(f"p{i}", "interrupted", "approval") for i in range(10)] + [
        snap("i0", "idle", None),
        snap("q0", "interrupted", "other"),
    ]
    chosen = select(threads, sample=2, every=False)
    assert len(chosen.classes) == 3 and chosen.stands_for("p3") == 10
    assert {"p0", "i0", "q0"} <= set(chosen.chosen) and len(chosen.chosen) == 5
    assert select(threads, sample=2, every=False).chosen == chosen.chosen  # the same sample every time
    assert len(select(threads, sample=0, every=True).chosen) == 12


def test_a_thread_the_deployed_code_itself_cannot_run_is_unproven_not_passed() -> None:
    from migrations_playbook.proof.shadow.run import ShadowOptions, Sides, judge

    refused = RunTrace(request=RESUME, refused="409: the running code's guard holds this thread")
    a = ThreadTrace(thread_id="t", graph_id="g", runs=[refused])
    skipped = ThreadTrace(thread_id="u", graph_id="g", skipped="not run: no answer fits")
    side = SideTrace(label="A", threads={"t": a, "u": skipped})
    snaps = [ThreadSnapshot(thread_id=t, graph_id="g", status="interrupted", values={}) for t in ("t", "u")]
    selection = select(snaps, sample=0, every=True)
    for strict, severity in ((False, "warn"), (True, "block")):
        sides = Sides(a=side, a2=side, b=side)
        report = judge(sides, selection, snaps, ["g"], ShadowOptions(rule=ResumeRule(), strict=strict), live="x", candidate="y")
        assert [(f.code, f.severity, sorted(f.thread_ids)) for f in report.findings] == [
            ("SHADOW_UNPROVEN", severity, ["t", "u"])
        ]


def _idle_thread_then_a_question() -> tuple[ResumeRule, Any, RunRequest, RunRequest, dict[str, Any]]:
    """An idle thread's planned rerun and next turn, and a head that stops at a question with one option."""
    rule = ResumeRule(derive=True)
    idle = _facts({"next": [], "checkpoint": {"checkpoint_id": "head"}}, has_input=True, last_input={"q": 1}, fork_from="before")
    rerun, turn = planned_requests(idle, rule, {})
    paused = {
        "next": ["ask"],
        "tasks": [{"name": "ask", "path": ["__pregel_pull", "ask"], "interrupts": [{"id": "i", "value": {"options": ["ok"]}}]}],
    }
    return rule, idle, rerun, turn, paused


def test_a_question_the_rerun_asks_again_is_answered_before_the_next_turn() -> None:
    from migrations_playbook.proof.shadow.drive import after_run

    rule, idle, rerun, turn, paused = _idle_thread_then_a_question()
    after = after_run(idle, paused, rule, [rerun], [turn])
    assert [(r.kind, r.resume) for r in after] == [("resume", "ok"), ("turn", None)]
    assert after_run(idle, {"next": []}, rule, [rerun], [turn]) == [turn]  # nothing pending: the turn as planned


def test_a_question_a_held_run_leaves_pending_is_answered_before_the_rerun() -> None:
    """After the runs the live server held come the rerun and the next turn, each from the checkpoint it names. A
    held run that stops at a question (a ticket's queued input, at its approval) left the rerun on a waiting
    head, which this repo's server refuses (409: only the answer while the approval is pending), on every side:
    identical code was listed as unproven (tests/integration/test_check_serving_server.py)."""
    from migrations_playbook.proof.shadow.drive import after_run

    rule, idle, rerun, turn, paused = _idle_thread_then_a_question()
    held = dataclasses.replace(rerun, kind="held", checkpoint_id=None, why="held")
    after = after_run(idle, paused, rule, [held], [rerun, turn])
    assert [(r.kind, r.resume, r.checkpoint_id) for r in after] == [
        ("resume", "ok", None),
        ("rerun", None, "before"),
        ("turn", None, "head"),
    ]
    assert after_run(idle, {"next": []}, rule, [held], [rerun, turn]) == [rerun, turn]  # nothing pending: as planned


def test_a_next_turn_the_deployed_code_refuses_after_its_last_turn_reran_leaves_the_thread_proven() -> None:
    """A thread that takes one input only (agents-from-scratch's email assistant: a second email on a finished thread
    sends OpenAI an unanswered tool call, a 400) fails the drive's next turn on the deployed code as on any code. The
    rerun of its last turn ran on both codes: the thread is proven, not unproven (which blocked `check` on identity)."""
    from migrations_playbook.proof.shadow.run import ShadowOptions, Sides, judge

    rerun = RunTrace(request=RunRequest(kind="rerun", assistant_id="g", input={"q": 1}), tasks=[TaskRun("answer", result={})])
    turn = RunRequest(kind="turn", assistant_id="g", input={"q": 1}, why="the last input again, from the head")
    refused = RunTrace(request=turn, error="BadRequestError: an assistant message with 'tool_calls' must be followed")
    a = ThreadTrace(thread_id="t", graph_id="g", runs=[rerun, refused])
    snaps = [ThreadSnapshot(thread_id="t", graph_id="g", status="idle", values={})]
    selection = select(snaps, sample=0, every=True)
    side = SideTrace(label="A", threads={"t": a})
    report = judge(
        Sides(a=side, a2=side, b=side),
        selection,
        snaps,
        ["g"],
        ShadowOptions(rule=ResumeRule(), strict=True),
        live="x",
        candidate="y",
    )
    assert report.findings == []
    assert report.proofs["t"].ran and report.proofs["t"].unproven is None
    assert any(
        n.startswith("thread t: its next turn (the last input again, from the head) failed on the deployed code")
        for n in report.notes
    )
    # The candidate failing otherwise is still held against it; a rerun that fails still leaves the thread unproven.
    other = ThreadTrace(thread_id="t", graph_id="g", runs=[rerun, RunTrace(request=turn, error="KeyError: 'email'")])
    blocked = judge(
        Sides(a=side, a2=side, b=SideTrace(label="B", threads={"t": other})),
        selection,
        snaps,
        ["g"],
        ShadowOptions(rule=ResumeRule()),
        live="x",
        candidate="y",
    )
    assert [f.code for f in blocked.findings] == ["SHADOW_RUN_FAILED"]
    failed_rerun = ThreadTrace(
        thread_id="t", graph_id="g", runs=[RunTrace(request=rerun.request, error="ValueError: x"), refused]
    )
    lone = SideTrace(label="A", threads={"t": failed_rerun})
    report = judge(
        Sides(a=lone, a2=lone, b=lone), selection, snaps, ["g"], ShadowOptions(rule=ResumeRule()), live="x", candidate="y"
    )
    assert [f.code for f in report.findings] == ["SHADOW_UNPROVEN"]
