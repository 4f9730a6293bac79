"""recycling_guide on a real `langgraph dev`: seed 002's five-turn conversation."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise

from langgraph_sdk.client import LangGraphClient

from graphs.recycling_guide.rules import rule_text
from tests.recycling_seed import ENGLISH_TURNS, SEED_TURNS, event_trace, expected_trace

GRAPH = "recycling_guide"


async def _turn(client: LangGraphClient, thread_id: str, text: str) -> tuple[list[dict], dict]:
    events, final = [], {}
    async for part in client.runs.stream(
        thread_id,
        GRAPH,
        input={"messages": [{"role": "user", "content": text}]},
        stream_mode=["custom", "values"],
    ):
        if part.event == "custom":
            events.append(part.data)
        elif part.event == "values":
            final = part.data
    return events, final


async def test_five_turn_conversation_keeps_context_history_and_event_order(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    answers = []
    for number, (text, intent, stage, rule) in enumerate(SEED_TURNS, start=1):
        events, final = await _turn(client, thread_id, text)

        assert event_trace(events) == expected_trace(intent, stage), f"turn {number}"
        assert {e["turn"] for e in events} == {number}
        assert events[4]["text"] == final["answer"]

        values = (await client.threads.get_state(thread_id))["values"]
        assert values["intent_history"] == [t[1] for t in SEED_TURNS[:number]]
        if rule:
            assert rule_text(rule, "ko") in final["answer"]
        answers.append(final["answer"])

    # "라벨은 어떻게 해?" was read as the bottle's label, the summary states turns 1-4
    assert "페트병 라벨" in answers[1]
    for earlier in answers[:4]:
        assert earlier in answers[4]

    history = await client.threads.get_history(thread_id, limit=200)
    steps = sorted(h["metadata"]["step"] for h in history)
    assert steps == list(range(-1, steps[-1] + 1)), "checkpoint steps have gaps"
    by_run: dict[str, list[int]] = defaultdict(list)
    for h in history:
        by_run[h["metadata"]["run_id"]].append(h["metadata"]["step"])
    ranges = sorted((min(s), max(s)) for s in by_run.values())
    assert len(ranges) == 5
    assert all(later[0] == earlier[1] + 1 for earlier, later in pairwise(ranges))


async def test_english_follow_up_is_read_as_the_bottles_label(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    await _turn(client, thread_id, ENGLISH_TURNS[0][0])
    events, final = await _turn(client, thread_id, ENGLISH_TURNS[1][0])
    assert rule_text("pet_bottle.label", "en") in final["answer"]
    assert final["topic"] == "pet_bottle"
    assert final["intent_history"] == ["waste", "waste"]
    assert events[-1] == {"event": "done", "turn": 2, "intent": "waste"}


async def test_run_output_and_values_events_hold_exactly_guide_output(client: LangGraphClient) -> None:
    """Migration 0010: a run returns GuideOutput's keys and nothing else (the working keys stay
    in the stored state, where `get_state` and the playbook read them)."""
    from graphs.recycling_guide.state import GuideOutput, GuideState

    output_keys = set(GuideOutput.__annotations__)
    assert output_keys == {"messages", "answer", "topic", "intent_history"}
    thread_id = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(thread_id, GRAPH, input={"messages": [{"role": "user", "content": SEED_TURNS[0][0]}]})
    assert set(out) == output_keys
    events, final = await _turn(client, thread_id, SEED_TURNS[1][0])
    assert set(final) == output_keys
    assert final["answer"] == events[4]["text"] and final["topic"] == "pet_bottle"
    every = [
        part.data
        async for part in client.runs.stream(
            thread_id, GRAPH, input={"messages": [{"role": "user", "content": SEED_TURNS[2][0]}]}, stream_mode="values"
        )
        if part.event == "values"
    ]
    assert every and all(set(values) <= output_keys for values in every)

    stored = set(GuideState.__annotations__)
    assert set((await client.threads.get_state(thread_id))["values"]) == stored
    record = await client.threads.get(thread_id)
    assert set(record["values"]) == stored
    assert record["values"]["flow_version"] == 1
