"""The shadow's store judgement (proof/shadow/store_items.py): generated keys are matched by content."""

from __future__ import annotations

from migrations_playbook.proof.shadow.store_items import judge_store

KEPT = {"profile/u1/name": {"text": "Kim"}}


def test_identity_with_keys_generated_per_run_loses_nothing() -> None:
    """memory-agent writes each memory under uuid4(): every run of the same code picks other keys."""
    a = {**KEPT, "memories/u1/0a1b": {"content": "likes tea"}}
    a2 = {**KEPT, "memories/u1/9f8e": {"content": "likes tea"}}
    b = {**KEPT, "memories/u1/77aa": {"content": "likes tea"}}
    judgement = judge_store(a, a2, b)
    assert (judgement.lost, judgement.changed, judgement.generated) == ([], [], ["memories/u1"])


def test_a_memory_the_candidate_no_longer_writes_is_lost_whatever_its_key() -> None:
    a = {**KEPT, "memories/u1/0a1b": {"content": "likes tea"}, "memories/u1/0a1c": {"content": "lives in Busan"}}
    a2 = {**KEPT, "memories/u1/9f8e": {"content": "likes tea"}, "memories/u1/9f8f": {"content": "lives in Busan"}}
    b = {**KEPT, "memories/u1/77aa": {"content": "likes tea"}}
    judgement = judge_store(a, a2, b)
    assert judgement.lost == ['memories/u1/<generated key> holding {"content": "lives in Busan"}']


def test_content_that_varies_between_runs_is_counted_not_matched() -> None:
    a = {"memories/u1/k1": {"content": "tea", "at": 1}, "memories/u1/k2": {"content": "x", "at": 1}}
    a2 = {"memories/u1/j1": {"content": "tea", "at": 2}, "memories/u1/j2": {"content": "x", "at": 2}}
    same_count = {"memories/u1/m1": {"content": "tea", "at": 3}, "memories/u1/m2": {"content": "y", "at": 3}}
    assert judge_store(a, a2, same_count).lost == []
    short = judge_store(a, a2, {"memories/u1/m1": {"content": "tea", "at": 3}})
    assert short.lost == ["memories/u1/<generated key>: 1 of 2 item(s) the deployed code wrote"]


def test_fixed_keys_are_compared_by_key() -> None:
    a = {**KEPT, "settings/u1/theme": {"v": "dark"}}
    judgement = judge_store(a, dict(a), {"settings/u1/theme": {"v": "light"}})
    assert (judgement.lost, judgement.changed, judgement.generated) == (["profile/u1/name"], ["settings/u1/theme"], [])
