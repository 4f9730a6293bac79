"""The visible-text filter, replayed over event dumps of the real compiled graph.

The dumps in tests/fixtures/campus_events/ are written by
`python -m graphs.campus_supervisor.dump_events` (never by hand); one test
regenerates them and compares. The dumps in ``flow_v1/`` were written the same
way by the flow-1 graph (ReAct agents whose answers could still call a tool,
narration after a transfer; ADR 0002): a client of a deployment still on it
gets the same text from the same filter. The rule tests at the bottom build single
`AIMessageChunk`s for cases the campus graph cannot produce on the offline
model (a provider that names a tool only in its first call chunk, a stream cut
short, a run error, speaker tags); they are rule checks, not recorded streams.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk

from graphs.campus_supervisor import dump_events
from graphs.common.visible import (
    ANSWER_TAG,
    SPEAKER_TAG,
    SUPERVISOR_TAG,
    RunStreamError,
    VisibleTextFilter,
    visible_text,
)
from tests.conftest import REPO_ROOT

DUMPS = REPO_ROOT / "tests" / "fixtures" / "campus_events"
FLOW_V1 = DUMPS / "flow_v1"
"""Recorded from the flow-1 graph (git history: before record 0008); never regenerated."""

MENU_KO = "오늘 학생식당 점심은 제육볶음, 된장국, 계란말이(5,500원), 저녁은 김치볶음밥, 미역국(5,000원)입니다."

EXPECTED: list[Any] = [
    pytest.param("library_ko", 0, "3층 열람실에는 80석 중 12석이 남아 있습니다.", id="library-ko"),
    pytest.param("library_en", 0, "Floor 5 reading room: 7 of 40 seats are free.", id="library-en"),
    pytest.param("cafeteria_ko", 0, MENU_KO, id="cafeteria-ko"),
    pytest.param(
        "cafeteria_en",
        0,
        "Today's cafeteria lunch: spicy pork, soybean soup, rolled omelette (5,500 won).",
        id="cafeteria-en",
    ),
    pytest.param("three_turns_ko", 0, MENU_KO, id="three-turns-1-cafeteria"),
    pytest.param("three_turns_ko", 1, "3층 열람실에는 80석 중 12석이 남아 있습니다.", id="three-turns-2-library"),
    pytest.param("three_turns_ko", 2, "자료구조 과제: 과제 1: 스택 구현 (마감 03-14).", id="three-turns-3-academic"),
    pytest.param("follow_up_floor_ko", 0, "몇 층 좌석을 확인할까요? (2층, 3층, 4층, 5층)", id="floor-question-ko"),
    pytest.param("follow_up_floor_ko", 1, "2층 열람실에는 120석 중 34석이 남아 있습니다.", id="floor-follow-up-ko"),
    pytest.param("follow_up_floor_en", 0, "Which floor should I check? (2, 3, 4, 5)", id="floor-question-en"),
    pytest.param("follow_up_floor_en", 1, "Floor 2 reading room: 34 of 120 seats are free.", id="floor-follow-up-en"),
    pytest.param("follow_up_course_ko", 0, "어느 과목인가요? (자료구조, 운영체제)", id="course-question-ko"),
    pytest.param("follow_up_course_ko", 1, "자료구조 과제: 과제 1: 스택 구현 (마감 03-14).", id="course-follow-up-ko"),
    pytest.param("follow_up_course_en", 0, "Which course? (Data Structures, Operating Systems)", id="course-question-en"),
    pytest.param(
        "follow_up_course_en",
        1,
        "Data Structures assignments: Assignment 1: implement a stack (due 03-14).",
        id="course-follow-up-en",
    ),
    pytest.param("pre_route_reservation_ko", 0, "스터디룸 B를 15시에 예약했습니다 (최대 6명).", id="pre-route-reservation-ko"),
    pytest.param(
        "pre_route_lms_en",
        0,
        "All LMS materials: Data Structures - Week 1 lecture notes, Week 2 linked-list slides; "
        "Operating Systems - Week 1 process overview.",
        id="pre-route-lms-en",
    ),
]

HIDDEN = ("확인해 보겠습니다.", "Let me check.", "에이전트에게 전달했습니다", "Transferred to")
"""Preambles and routing narration: in the raw streams, never in the visible text."""


def _turn(name: str, index: int, folder: Path = DUMPS) -> dict[str, Any]:
    return json.loads((folder / f"{name}.json").read_text())["turns"][index]


def _parts(turn: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(p["event"], p["data"]) for p in turn["parts"]]


def _raw_text(turn: dict[str, Any]) -> str:
    return "".join(str(data[0]["content"]) for _, data in _parts(turn) if data[0]["type"] == "AIMessageChunk")


@pytest.mark.parametrize("folder", [DUMPS, FLOW_V1], ids=["flow-2", "flow-1"])
@pytest.mark.parametrize(("dump", "turn", "expected"), EXPECTED)
def test_replayed_dump_shows_only_the_final_answer(folder: Path, dump: str, turn: int, expected: str) -> None:
    assert "".join(visible_text(_parts(_turn(dump, turn, folder)))) == expected


@pytest.mark.parametrize(("dump", "turn", "expected"), EXPECTED)
def test_the_answer_is_visible_token_by_token_as_it_streams(dump: str, turn: int, expected: str) -> None:
    """Flow 2: every raw chunk of the answer step is visible in the same feed that brings it;
    nothing before the answer is."""
    parts = _parts(_turn(dump, turn))
    text_filter = VisibleTextFilter()
    released = [text_filter.feed(event, data) for event, data in parts]
    answer = [i for i, (_, (message, metadata)) in enumerate(parts) if ANSWER_TAG in (metadata.get("tags") or ())]
    texts = [i for i in answer if parts[i][1][0]["content"]]
    assert texts, "the answer comes from the answer step"
    assert [i for i, tokens in enumerate(released) if tokens] == texts
    assert all(released[i] == [parts[i][1][0]["content"]] for i in texts)
    assert "".join(t for tokens in released for t in tokens) + "".join(text_filter.finish()) == expected
    for hidden in HIDDEN:
        assert hidden not in _raw_text(_turn(dump, turn)), "flow 2 says no preamble and no narration at all"


@pytest.mark.parametrize(
    ("dump", "turn", "hidden"),
    [
        pytest.param("library_ko", 0, ["확인해 보겠습니다.", "도서관 에이전트에게 전달했습니다."], id="library-ko"),
        pytest.param("library_en", 0, ["Let me check.", "Transferred to the library agent."], id="library-en"),
        pytest.param("cafeteria_ko", 0, ["확인해 보겠습니다."], id="cafeteria-ko"),
        pytest.param("three_turns_ko", 2, ["학사 에이전트에게 전달했습니다."], id="academic-ko"),
    ],
)
def test_flow_1_raw_stream_carries_the_preamble_and_narration_the_filter_drops(dump: str, turn: int, hidden: list[str]) -> None:
    recorded = _turn(dump, turn, FLOW_V1)
    visible = "".join(visible_text(_parts(recorded)))
    for text in hidden:
        assert text in _raw_text(recorded)
        assert text not in visible


def test_node_outputs_without_subgraph_streaming_never_become_visible() -> None:
    """Without stream_subgraphs every message, narration included, is a tag-less node output."""
    recorded = _turn("library_ko_without_subgraphs", 0)
    contents = [data[0]["content"] for _, data in _parts(recorded)]
    assert "도서관 에이전트에게 전달했습니다." in contents
    assert {data[0]["type"] for _, data in _parts(recorded)} == {"ai", "tool"}
    assert list(visible_text(_parts(recorded))) == []


def _scrambled(parts: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Node names and namespaces replaced: what a refactor of an agent's insides would do."""
    out = []
    for event, (message, metadata) in copy.deepcopy(parts):
        metadata = {**metadata, "langgraph_node": "agent", "checkpoint_ns": "x", "langgraph_checkpoint_ns": "x|y"}
        out.append((event.split("|", 1)[0] + "|renamed:0", [message, metadata]))
    return out


@pytest.mark.parametrize("folder", [DUMPS, FLOW_V1], ids=["flow-2", "flow-1"])
@pytest.mark.parametrize(("dump", "turn", "expected"), EXPECTED[:4])
def test_filter_does_not_depend_on_node_names_or_namespaces(folder: Path, dump: str, turn: int, expected: str) -> None:
    assert "".join(visible_text(_scrambled(_parts(_turn(dump, turn, folder))))) == expected


def test_dumps_match_a_fresh_run_of_the_real_graph() -> None:
    """Regenerate every dump from the compiled graph and compare (keeps the fixtures honest)."""
    fresh = dump_events.dumps()
    on_disk = {path.name: path.read_text() for path in DUMPS.glob("*.json")}
    assert sorted(fresh) == sorted(on_disk)
    stale = [name for name, text in fresh.items() if on_disk[name] != text]
    assert stale == [], "regenerate with: python -m graphs.campus_supervisor.dump_events"


def test_flow_1_text_is_held_until_its_message_ends() -> None:
    parts = _parts(_turn("cafeteria_ko", 0, FLOW_V1))
    text_filter = VisibleTextFilter()
    released = [text_filter.feed(event, data) for event, data in parts]
    non_empty = [i for i, tokens in enumerate(released) if tokens]
    assert non_empty == [len(parts) - 1], "everything is released with the final chunk"
    assert len(released[-1]) > 1, "released as the model's tokens, not one blob"


# -- rules for streams the campus graph does not produce -----------------------


def _chunk(text: str = "", *, tool: str | None = None, last: bool = False, id: str = "m1") -> dict:
    calls = [{"name": tool, "args": "", "id": "c1", "index": 0, "type": "tool_call_chunk"}] if tool is not None else []
    chunk = AIMessageChunk(content=text, id=id, tool_call_chunks=calls, chunk_position="last" if last else None)
    return chunk.model_dump()


def _part(chunk: dict, tags: tuple[str, ...] = (), ns: str = "agent:1") -> tuple[str, list]:
    return f"messages|{ns}", [chunk, {"tags": list(tags)} if tags else {}]


def test_preamble_is_dropped_when_the_tool_name_comes_only_in_the_first_call_chunk() -> None:
    """OpenAI streams the tool name once, then argument pieces with no name."""
    parts = [
        _part(_chunk("5층 현황을 확인하겠습니다. ")),
        _part(_chunk(tool="seat_status")),
        _part(_chunk(tool="")),
        _part(_chunk(last=True)),
        _part(_chunk("5층에는 7석이 남아 있습니다.", id="m2")),
        _part(_chunk(last=True, id="m2")),
    ]
    assert "".join(visible_text(parts)) == "5층에는 7석이 남아 있습니다."


def test_supervisor_text_with_a_transfer_and_its_narration_are_dropped_but_the_agent_answer_is_shown() -> None:
    sup = (SUPERVISOR_TAG,)
    parts = [
        _part(_chunk("도서관으로 연결합니다. "), sup),
        _part(_chunk(tool="transfer_to_library"), sup),
        _part(_chunk(last=True), sup),
        _part(_chunk("도서관 에이전트에게 전달했습니다.", id="m2", last=True), sup),
        _part(_chunk("3층에는 12석이 남아 있습니다.", id="m3", last=True)),
    ]
    assert "".join(visible_text(parts)) == "3층에는 12석이 남아 있습니다."


def test_supervisor_answer_after_another_agent_spoke_starts_a_new_episode() -> None:
    sup = (SUPERVISOR_TAG,)
    parts = [
        _part(_chunk(tool="transfer_to_library", last=True), sup),
        _part(_chunk("Floor 3: 12 free.", id="m2", last=True)),
        _part(_chunk("Anything else?", id="m3", last=True), sup),
    ]
    assert "".join(visible_text(parts)) == "Floor 3: 12 free.Anything else?"


def test_stream_ending_without_a_final_chunk_releases_answers_but_not_preambles() -> None:
    text_filter = VisibleTextFilter()
    assert text_filter.feed(*_part(_chunk("Let me check. ", id="a"))) == []
    assert text_filter.feed(*_part(_chunk(tool="seat_status", id="a"))) == []
    assert text_filter.feed(*_part(_chunk("Floor 2: 34 free.", id="b"))) == []
    assert text_filter.finish() == ["Floor 2: 34 free."]


def test_run_metadata_is_kept_and_a_run_error_raises() -> None:
    text_filter = VisibleTextFilter()
    assert text_filter.feed("metadata", {"run_id": "r-1", "attempt": 1}) == []
    assert text_filter.run_id == "r-1"
    with pytest.raises(RunStreamError, match="ModelConfigurationError: unknown model spec"):
        text_filter.feed("error", {"error": "ModelConfigurationError", "message": "unknown model spec 'x'"})


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        pytest.param(["[LG 팬] ", "잠실 ", "가요!"], "잠실 가요!", id="one-tag"),
        pytest.param(["[LG", " 팬] [LG 팬]: ", "잠실!"], "잠실!", id="repeated-tag-split-across-tokens"),
        pytest.param(["잠실 [LG 팬]"], "잠실 [LG 팬]", id="tag-not-leading"),
    ],
)
def test_hide_prefix_strips_leading_speaker_tags(tokens: list[str], expected: str) -> None:
    parts = [_part(_chunk(t)) for t in tokens] + [_part(_chunk(last=True))]
    assert "".join(visible_text(parts, VisibleTextFilter(hide_prefix=SPEAKER_TAG))) == expected


def test_an_answer_step_with_a_hide_prefix_is_held_until_its_message_ends() -> None:
    """A prefix is only known once it ends, so `hide_prefix` turns the answer tag's streaming off."""
    parts = [_part(_chunk("[LG 팬] ", id="a"), (ANSWER_TAG,)), _part(_chunk("잠실!", id="a", last=True), (ANSWER_TAG,))]
    text_filter = VisibleTextFilter(hide_prefix=SPEAKER_TAG)
    assert [text_filter.feed(*part) for part in parts] == [[], ["잠실!"]]
    streaming = VisibleTextFilter()
    assert [streaming.feed(*part) for part in parts] == [["[LG 팬] "], ["잠실!"]]


def test_an_answer_cut_short_is_not_released_twice() -> None:
    text_filter = VisibleTextFilter()
    assert text_filter.feed(*_part(_chunk("Floor 2: ", id="a"), (ANSWER_TAG, SUPERVISOR_TAG))) == ["Floor 2: "]
    assert text_filter.finish() == []


def test_in_process_messages_objects_are_accepted() -> None:
    chunk = AIMessageChunk(content="hi", id="m1", last=True)
    assert list(visible_text([("messages|agent:1", (chunk, {}))])) == ["hi"]


def test_dump_script_check_mode_reports_a_stale_dump(tmp_path: Path) -> None:
    (tmp_path / "library_ko.json").write_text("{}")
    assert dump_events.main(["--out", str(tmp_path), "--check"]) == 1
