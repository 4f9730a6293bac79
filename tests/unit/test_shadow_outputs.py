"""The output contract (issue 38, item 3): what a client reads of a run (its output, its questions' payloads)
compared between the deployed code and the candidate after the same run. Traces built by hand in the shape the
streams give; the server side is tests/integration/test_check_outputs_server.py."""

from __future__ import annotations

from typing import Any

from migrations_playbook.proof.shadow.compare import compare_thread
from migrations_playbook.proof.shadow.outputs import contract_diffs
from migrations_playbook.proof.shadow.traces import RunRequest, RunTrace, TaskRun, ThreadTrace, TraceRecorder

TURN = RunRequest(kind="turn", assistant_id="g", input={"topic": "x"})


def _thread(output: Any, *questions: Any, values: Any = None) -> ThreadTrace:
    tasks = [TaskRun("review", interrupts=[q]) for q in questions]
    run = RunTrace(request=TURN, tasks=tasks, output=output, pending=list(questions), next=["review"] if questions else [])
    return ThreadTrace(thread_id="t", graph_id="g", runs=[run], values=values if values is not None else {})


def _keys(a: ThreadTrace, b: ThreadTrace) -> list[tuple[str, str | None, str | None]]:
    return [d.key for d in compare_thread(a, b, set())]


def test_a_key_the_output_returned_that_the_candidate_drops_blocks_with_its_path() -> None:
    a = _thread({"final_report": "# Report", "notes": ["n"], "meta": {"sources": 3, "lang": "en"}})
    assert _keys(a, _thread({"notes": ["n"], "meta": {"sources": 3, "lang": "en"}})) == [
        ("SHADOW_OUTPUT_KEY_DROPPED", None, "output.final_report")
    ]
    assert _keys(a, _thread({"final_report": "# R", "notes": [], "meta": {"lang": "en"}})) == [
        ("SHADOW_OUTPUT_KEY_DROPPED", None, "output.meta.sources")
    ]
    # a dropped object is one finding, not one per key under it
    assert _keys(a, _thread({"final_report": "# R", "notes": ["n"]})) == [("SHADOW_OUTPUT_KEY_DROPPED", None, "output.meta")]


def test_a_key_of_another_type_blocks_and_null_or_int_against_float_do_not() -> None:
    a = _thread({"summary": "short", "score": 1, "owner": None})
    assert _keys(a, _thread({"summary": ["short"], "score": 1, "owner": None})) == [
        ("SHADOW_OUTPUT_TYPE_CHANGED", None, "output.summary")
    ]
    assert _keys(a, _thread({"summary": "other words", "score": 0.5, "owner": "kim"})) == []


def test_added_keys_and_other_values_are_for_review_only() -> None:
    a = _thread({"answer": "yes"})
    diffs = compare_thread(a, _thread({"answer": "no", "confidence": 0.9}), set())
    assert {d.code for d in diffs} == {"SHADOW_OUTPUT_DIFFERS"}
    # a key the deployed code returned as null and the candidate leaves out is not a break
    assert _keys(_thread({"answer": "yes", "draft": None}), _thread({"answer": "yes"})) == []


def test_a_question_payload_that_loses_a_key_blocks_at_its_node() -> None:
    asked = {"kind": "approve_refund", "amount": 40, "options": ["approve", "reject"], "summary": "refund 40"}
    a = _thread({"x": 1}, asked)
    b = _thread({"x": 1}, {k: v for k, v in asked.items() if k != "amount"})
    blocks = [d.key for d in compare_thread(a, b, set()) if d.blocking]
    assert blocks == [("SHADOW_OUTPUT_KEY_DROPPED", "review", "question at review.amount")]
    grown = _thread({"x": 1}, {**asked, "currency": "EUR"})
    # a payload that grows is the same question, shown for review: clients keep reading it
    assert [d.code for d in compare_thread(a, grown, set())] == ["SHADOW_OUTPUT_DIFFERS"]


def test_the_run_output_is_the_last_root_values_event() -> None:
    recorder = TraceRecorder(TURN)
    recorder.feed("values", (), {"a": 1})
    recorder.feed("values", ("inner:1",), {"inner_only": True})
    recorder.feed("values", (), {"a": 2, "b": 3})
    assert recorder.trace.output == {"a": 2, "b": 3}
    assert RunTrace.from_json(recorder.trace.to_json()).output == {"a": 2, "b": 3}


def test_scalars_compare_by_type() -> None:
    assert contract_diffs("run 1", "output", None, "text", ["text"])[0][0] == "SHADOW_OUTPUT_TYPE_CHANGED"
    assert contract_diffs("run 1", "output", None, "text", "other") == []
