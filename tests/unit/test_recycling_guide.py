"""recycling_guide compiled with InMemorySaver: intents, follow-ups, the summary turn, progress events."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphs.common.offline import OfflineChatModel
from graphs.recycling_guide.graph import builder
from graphs.recycling_guide.prompts import TurnAnalysis
from graphs.recycling_guide.rules import (
    BODY,
    NO_ITEM,
    Resolution,
    part_ids,
    resolve,
    rule_text,
    rules,
)
from tests.recycling_seed import ENGLISH_TURNS, SEED_TURNS, event_trace, expected_trace


@pytest.fixture
def graph():
    return builder.compile(checkpointer=InMemorySaver())


def _config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _turn(graph, config: dict, text: str) -> tuple[dict, list[dict]]:
    events, output = [], None
    for mode, chunk in graph.stream({"messages": [{"role": "user", "content": text}]}, config, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk)
        else:
            output = chunk
    return output, events


def test_every_rule_exists_in_korean_and_english() -> None:
    data = rules()
    for item_id, item in data["items"].items():
        assert item["keywords"], item_id
        assert "body" in item["rules"], item_id
        for part, text in item["rules"].items():
            assert part in part_ids(), f"{item_id}: unknown part {part}"
            assert text["ko"] and text["en"], f"{item_id}.{part}"


@pytest.mark.parametrize(
    ("item", "part", "topic", "expected"),
    [
        pytest.param("pet_bottle", BODY, None, Resolution("pet_bottle", "pet_bottle"), id="item-named"),
        pytest.param(NO_ITEM, "label", "pet_bottle", Resolution("pet_bottle", "pet_bottle.label"), id="label-follow-up"),
        pytest.param(NO_ITEM, "cap", "glass_bottle", Resolution("glass_bottle", "glass_bottle.cap"), id="cap-of-glass"),
        pytest.param("colored_pet", BODY, "pet_bottle", Resolution("colored_pet", "colored_pet"), id="new-item-wins"),
        pytest.param(NO_ITEM, BODY, "metal_can", Resolution("metal_can", "metal_can"), id="bare-follow-up"),
        pytest.param("metal_can", "label", None, Resolution("metal_can", "metal_can", missing_part=True), id="no-such-part"),
        pytest.param(NO_ITEM, "label", None, Resolution(None, None), id="nothing-to-go-on"),
        pytest.param(NO_ITEM, "label", "removed_item", Resolution(None, None), id="stale-topic"),
    ],
)
def test_follow_ups_resolve_from_the_topic(item: str, part: str, topic: str | None, expected: Resolution) -> None:
    assert resolve(item, part, topic) == expected


@pytest.mark.parametrize(
    ("text", "intent", "item", "part"),
    [
        pytest.param("페트병 어떻게 버려?", "waste", "pet_bottle", BODY, id="ko-pet"),
        pytest.param("라벨은 어떻게 해?", "waste", NO_ITEM, "label", id="ko-label"),
        pytest.param("뚜껑도 분리해야 해?", "waste", NO_ITEM, "cap", id="ko-cap"),
        pytest.param("유색 페트병은 다르게 버려?", "waste", "colored_pet", BODY, id="ko-colored"),
        pytest.param("지금까지 알려준 거 정리해줘", "summary", NO_ITEM, BODY, id="ko-summary"),
        pytest.param("안녕하세요", "general", NO_ITEM, BODY, id="ko-greeting"),
        pytest.param("소주병 뚜껑은?", "waste", "glass_bottle", "cap", id="ko-glass-cap"),
        pytest.param("Is coloured PET different?", "waste", "colored_pet", BODY, id="en-colored"),
        pytest.param("Can you summarize what you told me so far?", "summary", NO_ITEM, BODY, id="en-summary"),
        pytest.param("Where do used batteries go?", "waste", "battery", BODY, id="en-battery"),
    ],
)
def test_offline_classifier_reads_intent_item_and_part(text: str, intent: str, item: str, part: str) -> None:
    result = OfflineChatModel().with_structured_output(TurnAnalysis).invoke([HumanMessage(text)])
    assert (result.intent, result.item, result.part) == (intent, item, part)


@pytest.mark.parametrize("turns", [pytest.param(SEED_TURNS, id="korean-seed"), pytest.param(ENGLISH_TURNS, id="english")])
def test_conversation_keeps_context_and_summarises_earlier_turns(graph, turns) -> None:
    config = _config()
    lang = "ko" if turns is SEED_TURNS else "en"
    answers = []
    for number, (text, _, _, rule) in enumerate(turns, start=1):
        output, _ = _turn(graph, config, text)
        assert output["intent_history"] == [t[1] for t in turns[:number]]
        if rule:
            assert rule_text(rule, lang) in output["answer"]
        answers.append(output["answer"])
    for earlier in answers[:-1]:
        assert earlier in answers[-1], "the summary states every earlier answer"


def test_each_turn_emits_progress_events_in_order(graph) -> None:
    config = _config()
    for number, (text, intent, stage, _) in enumerate(SEED_TURNS, start=1):
        output, events = _turn(graph, config, text)
        assert event_trace(events) == expected_trace(intent, stage)
        assert {e["turn"] for e in events} == {number}
        assert events[4]["text"] == output["answer"]


def test_checkpoint_steps_have_no_gaps_across_turns(graph) -> None:
    config = _config()
    for text, *_ in SEED_TURNS:
        _turn(graph, config, text)
    steps = sorted(s.metadata["step"] for s in graph.get_state_history(config))
    assert steps == list(range(-1, steps[-1] + 1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("라벨은 어떻게 해?", "어떤 물건을 버리려는지", id="follow-up-without-topic"),
        pytest.param("지금까지 알려준 거 정리해줘", "아직 알려 드린", id="summary-of-nothing"),
        pytest.param("hello", "recycling guide", id="general"),
    ],
)
def test_first_turn_without_context_gets_a_helpful_answer(graph, text: str, expected: str) -> None:
    output, _ = _turn(graph, _config(), text)
    assert expected in output["answer"]
    assert "topic" not in output and not output.get("covered")


def test_part_without_its_own_rule_falls_back_to_the_item(graph) -> None:
    config = _config()
    _turn(graph, config, "캔은 어떻게 버려?")
    output, _ = _turn(graph, config, "라벨은?")
    assert "별도 규칙은 없어서" in output["answer"]
    assert rule_text("metal_can", "ko") in output["answer"]
    assert output["covered"] == ["metal_can", "metal_can"]


def test_summary_skips_rule_ids_an_older_dataset_stored(graph) -> None:
    config = _config()
    _turn(graph, config, "페트병 어떻게 버려?")
    graph.update_state(config, {"covered": ["retired_item", "pet_bottle.retired_part"]})
    output, _ = _turn(graph, config, "지금까지 알려준 거 정리해줘")
    assert output["answer"] == f"지금까지 알려 드린 내용을 정리할게요. {rule_text('pet_bottle', 'ko')}"
