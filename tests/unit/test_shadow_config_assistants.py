"""The pure parts of what the shadow drives beside the threads (issue 38): the read-back of every thread through
each side's langgraph.json (`proof/shadow/config.py`) and the stored assistants' runs (`assistants.py`). No
server: read-backs and traces built by hand in the shape the API gives."""

from __future__ import annotations

from typing import Any

import pytest

from migrations_playbook.errors import UsageError
from migrations_playbook.proof.shadow.assistants import (
    AssistantSide,
    AssistantsProof,
    StoredAssistant,
    choose,
    inputs_by_graph,
    judge_assistants,
)
from migrations_playbook.proof.shadow.config import (
    HEADER_IDENTITY,
    Identity,
    ReadBack,
    ReadState,
    judge_read_back,
    owners_of,
    parse_identities,
    read_diffs,
)
from migrations_playbook.proof.shadow.drive import ThreadFacts
from migrations_playbook.proof.shadow.traces import RunRequest, RunTrace, TaskRun, ThreadTrace

ALICE = Identity("alice", {"Authorization": "Bearer a"})


def test_identities_parse_in_order_and_without_any_fall_back_to_the_live_header() -> None:
    found = parse_identities(["alice=Authorization: Bearer a", "bob=Authorization: Bearer b", "bob=X-Tenant: t1"], {})
    assert [(i.name, dict(i.headers)) for i in found] == [
        ("alice", {"Authorization": "Bearer a"}),
        ("bob", {"Authorization": "Bearer b", "X-Tenant": "t1"}),
    ]
    assert parse_identities([], {"Authorization": "Bearer ops"}) == [Identity(HEADER_IDENTITY, {"Authorization": "Bearer ops"})]


@pytest.mark.parametrize("text", ["alice", "=Authorization: x", "alice=no colon", "alice=: empty name"])
def test_a_malformed_identity_is_a_usage_error_naming_it(text: str) -> None:
    with pytest.raises(UsageError, match="--identity"):
        parse_identities([text], {})


def test_a_threads_owner_is_the_first_identity_that_lists_it_on_the_live_server() -> None:
    bob = Identity("bob", {})
    owners = owners_of({"alice": {"t1"}, "bob": {"t1", "t2"}, "eve": "401: refused"}, [ALICE, bob, Identity("eve", {})])
    assert {t: o.name for t, o in owners.items()} == {"t1": "alice", "t2": "bob"}


def _side(label: str, visible: dict[str, set[str]], **states: ReadState) -> ReadBack:
    return ReadBack(label=label, visible=visible, states=dict(states))


OK = ReadState("ok", values={"text": "hi", "quoted": None})
OWNERS = {"t1": "alice", "t2": "bob"}


def _codes(b: ReadBack, a2: ReadBack | None = None) -> list[tuple[str, str, str]]:
    a = _side("A", {"alice": {"t1"}, "bob": {"t2"}}, t1=OK, t2=OK)
    return [(d.code, d.thread_id, d.identity) for d in read_diffs(a, a2 or a, b, OWNERS, ["alice", "bob"])]


def test_the_same_answers_on_both_copies_are_no_finding() -> None:
    assert _codes(_side("B", {"alice": {"t1"}, "bob": {"t2"}}, t1=OK, t2=OK)) == []


def test_an_owner_whose_search_no_longer_lists_or_whose_read_is_refused_is_locked_out() -> None:
    b = _side("B", {"alice": set(), "bob": {"t2"}}, t1=OK, t2=ReadState("refused", "404: not found"))
    assert _codes(b) == [("SHADOW_OWNER_LOCKED_OUT", "t1", "alice"), ("SHADOW_OWNER_LOCKED_OUT", "t2", "bob")]


def test_a_user_shown_a_thread_the_deployed_code_hides_is_an_exposure() -> None:
    b = _side("B", {"alice": {"t1", "t2"}, "bob": {"t2"}}, t1=OK, t2=OK)
    assert _codes(b) == [("SHADOW_THREAD_EXPOSED", "t2", "alice")]


def test_a_read_that_fails_on_the_candidate_is_unreadable_and_other_values_are_a_misread() -> None:
    b = _side(
        "B",
        {"alice": {"t1"}, "bob": {"t2"}},
        t1=ReadState("error", "500: Pickle fallback is disabled"),
        t2=ReadState("ok", values={"text": "hi", "quoted": "1/3"}),
    )
    assert _codes(b) == [("SHADOW_STORED_UNREADABLE", "t1", "alice"), ("SHADOW_STORED_MISREAD", "t2", "bob")]


def test_what_a_second_copy_of_the_deployed_code_answers_otherwise_is_not_held_against_the_candidate() -> None:
    flaky = _side("A2", {"alice": set(), "bob": {"t2"}}, t1=ReadState("error", "503"), t2=OK)
    b = _side("B", {"alice": set(), "bob": {"t2"}}, t1=ReadState("error", "503"), t2=OK)
    assert _codes(b, flaky) == []


def test_read_back_findings_name_their_threads_per_graph_and_identity() -> None:
    a = _side("A", {"alice": {"t1", "t3"}}, t1=OK, t3=OK)
    b = _side("B", {"alice": set()}, t1=OK, t3=OK)
    findings, notes = judge_read_back(a, a, b, {"t1": "alice", "t3": "alice"}, ["alice"], {"t1": "g", "t3": "g"})
    assert [(f.code, f.graph_id, f.thread_ids, f.severity) for f in findings] == [
        ("SHADOW_OWNER_LOCKED_OUT", "g", ["t1", "t3"], "block")
    ]
    assert findings[0].why and findings[0].help
    assert "the stored state of 2 (the threads run) read back as their owners (2 readable" in notes[0]


def test_a_thread_whose_state_was_not_read_is_still_judged_by_every_identitys_search() -> None:
    """The stored states read back are the threads the proof runs (classed and sampled); every live thread's
    listing is still compared, so an auth change that hides or shows any thread is found."""
    searched = {"t1", "t2", "t9"}
    a = ReadBack(label="A", visible={"alice": {"t1", "t9"}, "bob": {"t2"}}, states={"t1": OK}, searched=searched)
    b = ReadBack(label="B", visible={"alice": {"t1"}, "bob": {"t2", "t9"}}, states={"t1": OK}, searched=searched)
    found = [
        (d.code, d.thread_id, d.identity)
        for d in read_diffs(a, a, b, {"t1": "alice", "t2": "bob", "t9": "alice"}, ["alice", "bob"])
    ]
    assert found == [("SHADOW_OWNER_LOCKED_OUT", "t9", "alice"), ("SHADOW_THREAD_EXPOSED", "t9", "bob")]


# -- assistants ------------------------------------------------------------------------------


def _assistant(aid: str, *, context: dict[str, Any] | None = None, configurable: dict[str, Any] | None = None) -> StoredAssistant:
    return StoredAssistant(
        assistant_id=aid,
        graph_id="notes",
        name=aid,
        config={"configurable": configurable or {}},
        context=context or {},
        metadata={},
        owner=ALICE,
    )


def test_assistants_are_chosen_one_per_class_plus_a_seeded_sample() -> None:
    many = [_assistant(f"loud{i}", context={"tone": "shout"}) for i in range(6)]
    many.append(_assistant("long", configurable={"style": "x"}))
    one_each = choose(many, sample=0, every=False)
    assert [a.assistant_id for a in one_each] == ["long", "loud0"]
    assert len(choose(many, sample=2, every=False)) == 4
    assert choose(many, sample=2, every=False) == choose(many, sample=2, every=False)
    assert len(choose(many, sample=0, every=True)) == 7


def test_an_assistants_input_is_the_turn_input_else_a_live_threads_last_input() -> None:
    facts = [
        ThreadFacts("t2", "notes", "idle", {}, "notes", has_input=True, last_input={"text": "two"}),
        ThreadFacts("t1", "notes", "idle", {}, "notes", has_input=True, last_input={"text": "one"}),
        ThreadFacts("t3", "other", "idle", {}, "other"),
    ]
    assert inputs_by_graph(facts, {}) == {"notes": ({"text": "one"}, "the last input of thread t1")}
    assert inputs_by_graph(facts, {"notes": {"text": "x"}})["notes"] == ({"text": "x"}, "--turn-input")


def _run(reply: str, *, error: str | None = None) -> ThreadTrace:
    request = RunRequest(kind="turn", assistant_id="x", input={"text": "hi"})
    run = RunTrace(request=request, tasks=[TaskRun("answer", result={"reply": reply})], error=error, output={"reply": reply})
    return ThreadTrace(thread_id="x", graph_id="notes", runs=[run], values={"reply": reply})


def _proof(stored: dict[str, tuple[str, str, str]], default: tuple[str, str, str], **errors: str) -> AssistantsProof:
    sides = []
    for index, label in enumerate(("A", "A2", "B")):
        side = AssistantSide(label=label, default={"notes": _run(default[index])})
        for aid, replies in stored.items():
            side.stored[aid] = _run(replies[index], error=errors.get(f"{aid}_{label}"))
        sides.append(side)
    chosen = [_assistant(aid, configurable={"style": "long"}) for aid in stored]
    return AssistantsProof(
        a=sides[0], a2=sides[1], b=sides[2], chosen=chosen, total=len(chosen), inputs={"notes": ({"text": "hi"}, "--turn-input")}
    )


def _assistant_codes(proof: AssistantsProof) -> list[tuple[str, list[str]]]:
    return [(f.code, f.assistant_ids) for f in judge_assistants(proof)[0]]


def test_a_setting_that_changes_the_run_on_the_deployed_code_and_nothing_on_the_candidate_is_ignored() -> None:
    proof = _proof({"long": ("LONG", "LONG", "short")}, ("short", "short", "short"))
    assert _assistant_codes(proof) == [("SHADOW_ASSISTANT_SETTING_IGNORED", ["long"])]


def test_a_setting_still_read_passes_even_when_the_candidate_changes_the_values() -> None:
    assert _assistant_codes(_proof({"long": ("LONG", "LONG", "LONG")}, ("short",) * 3)) == []
    assert _assistant_codes(_proof({"long": ("LONG", "LONG", "v2 LONG")}, ("short", "short", "v2 short"))) == []


def test_a_default_moved_onto_the_stored_value_is_not_an_ignored_setting() -> None:
    # the candidate's default now gives what the stored setting gave: both runs agree on B, and B's stored run is A's
    assert _assistant_codes(_proof({"long": ("LONG", "LONG", "LONG")}, ("short", "short", "LONG"))) == []


def test_a_setting_that_changes_nothing_on_the_deployed_code_proves_nothing() -> None:
    assert _assistant_codes(_proof({"long": ("short", "short", "short")}, ("short",) * 3)) == []


def test_a_run_through_a_stored_assistant_that_fails_only_on_the_candidate_is_broken_naming_it() -> None:
    proof = _proof({"long": ("LONG", "LONG", "")}, ("short",) * 3, long_B="ValueError: unknown style long")
    findings, _ = judge_assistants(proof)
    assert [(f.code, f.assistant_ids, f.severity) for f in findings] == [("SHADOW_ASSISTANT_BROKEN", ["long"], "block")]
    assert "assistant long" in findings[0].message and "SHADOW_RUN_FAILED" in findings[0].message


def test_an_assistant_the_deployed_code_itself_fails_is_noted_not_held_against_the_candidate() -> None:
    proof = _proof({"long": ("", "", "")}, ("short",) * 3, long_A="ValueError: x", long_A2="ValueError: x", long_B="KeyError: y")
    findings, notes = judge_assistants(proof)
    assert findings == []
    assert any("the deployed code itself does not run" in n and "long" in n for n in notes)
