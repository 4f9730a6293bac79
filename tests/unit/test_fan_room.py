"""fan_room compiled with InMemorySaver: personas, speaker tags in the checkpoint, tag-free stream."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphs.fan_room import nodes
from graphs.fan_room.context import FanRoomContext
from graphs.fan_room.graph import builder
from graphs.fan_room.prompts import persona_prompt
from graphs.fan_room.teams import (
    UnknownTeamError,
    canonical_team,
    other_speakers,
    speaker_tag,
    strip_speaker_tags,
    tagged,
    teams,
)

ROOM = [
    ("LG", "LG 트윈스 역사 알려줘"),
    ("삼성", "삼성은 어때?"),
    ("LG", "둘 중에 어디가 더 좋아?"),
]


@pytest.fixture
def graph():
    return builder.compile(checkpointer=InMemorySaver())


def _config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _turn(graph, config: dict, team: str, text: str) -> tuple[dict, str]:
    """Run one turn; return the output and the text the messages stream carried."""
    streamed = []
    output = None
    for mode, chunk in graph.stream(
        {"messages": [{"role": "user", "content": text}]},
        config,
        context={"team_name": team},
        stream_mode=["messages", "values"],
    ):
        if mode == "messages":
            streamed.append(chunk[0].content)
        else:
            output = chunk
    return output, "".join(streamed)


def test_there_are_ten_teams_each_with_facts_in_both_languages() -> None:
    assert list(teams()) == ["LG", "삼성", "KIA", "두산", "SSG", "롯데", "한화", "NC", "KT", "키움"]
    for team in teams().values():
        assert set(team["facts"]) == {"ko", "en"}
        assert all(team["facts"]["ko"]) and len(team["facts"]["ko"]) == len(team["facts"]["en"])


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        pytest.param("LG", "LG", id="canonical"),
        pytest.param("lg twins", "LG", id="english-alias"),
        pytest.param("  삼성  라이온즈 ", "삼성", id="spaces"),
        pytest.param("Samsung", "삼성", id="case-insensitive"),
        pytest.param("기아", "KIA", id="korean-alias"),
        pytest.param("키움", "키움", id="hangul-canonical"),
    ],
)
def test_team_names_and_aliases_resolve_to_the_canonical_name(name: str, canonical: str) -> None:
    assert canonical_team(name) == canonical
    assert FanRoomContext(team_name=name).team_name == canonical


@pytest.mark.parametrize("name", [pytest.param("Yankees", id="foreign"), pytest.param("", id="empty")])
def test_unknown_team_is_rejected_when_the_context_is_built(name: str) -> None:
    with pytest.raises(UnknownTeamError, match="LG, 삼성, KIA"):
        FanRoomContext(team_name=name)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("[LG 팬] 잠실이죠", "잠실이죠", id="one-tag"),
        pytest.param("[LG 팬] [LG 팬]: 잠실이죠", "잠실이죠", id="repeated-with-colon"),
        pytest.param("[삼성 팬]:잠실이죠", "잠실이죠", id="colon-no-space"),
        pytest.param("잠실이죠 [LG 팬]", "잠실이죠 [LG 팬]", id="tag-not-leading"),
        pytest.param("잠실이죠", "잠실이죠", id="no-tag"),
    ],
)
def test_leading_copied_tags_are_stripped(text: str, expected: str) -> None:
    assert strip_speaker_tags(text) == expected
    assert tagged("KT", text) == f"[KT 팬] {expected}"


def test_other_speakers_come_from_tags_in_order_without_the_current_team() -> None:
    history = [
        HumanMessage("hi"),
        AIMessage("[LG 팬] a"),
        AIMessage("[삼성 팬] b"),
        AIMessage("[LG 팬] c"),
        AIMessage("[Yankees 팬] not a KBO team"),
    ]
    assert other_speakers(history, "KIA") == ["LG", "삼성"]
    assert other_speakers(history, "LG") == ["삼성"]


@pytest.mark.parametrize("team", list(teams()))
def test_one_persona_template_serves_every_team(team: str) -> None:
    prompt = persona_prompt(team, "ko")
    assert f"오직 {speaker_tag(team)}으로서만" in prompt
    assert "다른 팀 팬의 발언" in prompt
    facts = [line[2:] for line in prompt.splitlines() if line.startswith("- ")]
    assert facts == teams()[team]["facts"]["ko"], "only facts may be bullet lines"


def test_room_of_three_turns_stores_one_tag_per_answer_and_streams_none(graph) -> None:
    config = _config()
    streamed_texts = []
    for team, text in ROOM:
        output, streamed = _turn(graph, config, team, text)
        assert output["speaker"] == team
        assert "[" not in output["answer"]
        assert streamed == output["answer"], "the stream carries the final answer only once"
        streamed_texts.append(streamed)
    messages = graph.get_state(config).values["messages"]
    answers = [m for m in messages if isinstance(m, AIMessage)]
    expected = [f"{speaker_tag(team)} {text}" for (team, _), text in zip(ROOM, streamed_texts, strict=True)]
    assert [m.content for m in answers] == expected
    assert "삼성 라이온즈" in answers[1].content and "LG 트윈스 팬분" in answers[1].content


def test_tagged_answer_keeps_the_id_of_the_streamed_message(graph) -> None:
    config = _config()
    ids = set()
    for chunk, _ in graph.stream(
        {"messages": [{"role": "user", "content": "hi"}]},
        config,
        context={"team_name": "NC"},
        stream_mode="messages",
    ):
        ids.add(chunk.id)
    stored = graph.get_state(config).values
    assert ids == {stored["answer_id"]}
    assert stored["messages"][-1].id == stored["answer_id"]
    assert stored["messages"][-1].content.startswith("[NC 팬] ")


def test_draft_that_copied_a_tag_is_stored_with_exactly_one(graph) -> None:
    """The offline model imitates the tagged history, as real models do (seed 001)."""
    config = _config()
    for team, text in ROOM[:2]:
        _turn(graph, config, team, text)
    values = graph.get_state(config).values
    assert values["draft"].startswith("[LG 팬] "), "the 삼성 draft copied the LG tag"
    assert values["messages"][-1].content.startswith("[삼성 팬] ")
    assert values["messages"][-1].content.count("팬] ") == 1


def test_unknown_team_fails_before_anything_is_stored(graph) -> None:
    config = _config()
    with pytest.raises(UnknownTeamError, match="unknown team 'Yankees'"):
        graph.invoke({"messages": [{"role": "user", "content": "hi"}]}, config, context={"team_name": "Yankees"})
    assert graph.get_state(config).values == {}
    assert list(graph.get_state_history(config)) == []


def test_run_without_context_fails_with_a_clear_error(graph) -> None:
    with pytest.raises(UnknownTeamError, match=r"needs context\.team_name"):
        graph.invoke({"messages": [{"role": "user", "content": "hi"}]}, _config())


def test_tags_a_model_writes_in_every_step_are_stripped(graph, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that tags both its draft and its tone rewrite still yields one stored tag."""

    def scripted(_spec: str) -> GenericFakeChatModel:
        return GenericFakeChatModel(messages=iter([AIMessage("[KT 팬] [KT 팬]: 수원 최고!")]))

    monkeypatch.setattr(nodes, "load_chat_model", scripted)
    config = _config()
    result = graph.invoke({"messages": [{"role": "user", "content": "KT는?"}]}, config, context={"team_name": "KT"})
    assert result["answer"] == "수원 최고!"
    assert graph.get_state(config).values["messages"][-1].content == "[KT 팬] 수원 최고!"


def test_new_thread_is_stamped_and_the_stamp_is_kept(graph) -> None:
    config = _config()
    _turn(graph, config, "두산", "두산 어때?")
    assert graph.get_state(config).values["flow_version"] == 1
    graph.update_state(config, {"flow_version": 7})
    _turn(graph, config, "두산", "또?")
    assert graph.get_state(config).values["flow_version"] == 7
