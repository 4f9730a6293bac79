"""Prompts, fixed phrases and the structured-output schema of the recycling guide.

The schema's field descriptions are generated from ``rules.json``, so the
dataset is the one place that lists items and their words. They double as the
offline model's keyword lists (``value (kw1, kw2)``); a hosted model reads
them as instructions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from graphs.recycling_guide.rules import BODY, NO_ITEM, item_ids, part_ids, rules

CLASSIFY_SYSTEM = (
    "You read one message of a recycling-guide chat (Korean or English) and fill the "
    "TurnAnalysis tool. Judge the message alone: when it names no item, say 'none' "
    "(the guide resolves follow-ups from the earlier turns itself)."
)

ANSWER_SYSTEM = "You are a friendly recycling guide. Answer in the user's language, briefly, using only these facts:"

WASTE_WORDS = (
    "버려",
    "버리",
    "버릴",
    "배출",
    "분리",
    "재활용",
    "수거",
    "어떻게 해",
    "다르게",
    "dispose",
    "throw",
    "recycle",
    "bin",
    "separate",
    "remove",
    "different",
)
"""Words of a disposal question besides the item and part names from the data."""

SUMMARY_WORDS = ("정리", "요약", "지금까지", "summary", "summarize", "summarise", "recap", "so far")
GENERAL_WORDS = ("안녕", "고마워", "감사", "hello", "thanks", "thank you")

PHRASES: dict[str, dict[str, str]] = {
    "ask_item": {
        "ko": "어떤 물건을 버리려는지 알려 주세요: {items}.",
        "en": "Tell me what you want to throw away: {items}.",
    },
    "no_part_rule": {
        "ko": "{item}의 {part}에 대한 별도 규칙은 없어서 {item} 기준으로 알려 드려요.",
        "en": "There is no separate rule for the {part} of a {item}; here is the rule for the {item}.",
    },
    "recap": {
        "ko": "지금까지 알려 드린 내용을 정리할게요.",
        "en": "Here is what I told you so far.",
    },
    "recap_empty": {
        "ko": "아직 알려 드린 분리배출 정보가 없어요. 버리려는 물건을 물어보세요.",
        "en": "I have not told you any recycling rule yet. Ask me about something you want to throw away.",
    },
    "general": {
        "ko": "저는 분리배출 도우미예요. 페트병, 유리병, 캔 같은 물건을 어떻게 버리는지 물어보세요.",
        "en": "I am a recycling guide. Ask me how to throw away things such as PET bottles, glass or cans.",
    },
}
"""Fixed sentences the nodes turn into facts, per language."""


def phrase(key: str, lang: str, **values: str) -> str:
    """One of `PHRASES`, filled in."""
    return PHRASES[key][lang].format(**values)


def _options(choices: Mapping[str, Iterable[str]]) -> str:
    """``value (kw1, kw2); value (...)``: the form the offline model reads keywords from."""
    return "; ".join(f"{value} ({', '.join(words)})" for value, words in choices.items())


def _waste_words() -> list[str]:
    data = rules()
    words = list(WASTE_WORDS)
    for entry in (*data["items"].values(), *data["parts"].values()):
        words.extend(entry["keywords"])
    return words


def answer_prompt(facts: Sequence[str]) -> str:
    """The answer step's system prompt: the facts as ``- `` bullets."""
    return "\n".join([ANSWER_SYSTEM, *(f"- {fact}" for fact in facts)])


if TYPE_CHECKING:  # the values come from rules.json at import: to a type checker the ids are str
    ItemId = str
    PartId = str
else:
    ItemId = Literal[(NO_ITEM, *item_ids())]
    PartId = Literal[part_ids()]


class TurnAnalysis(BaseModel):
    """Classify one message of a recycling chat."""

    intent: Literal["waste", "summary", "general"] = Field(
        default="general",
        description="What the message asks for: "
        + _options({"waste": _waste_words(), "summary": SUMMARY_WORDS, "general": GENERAL_WORDS})
        + ". waste: how to throw something away; summary: a recap of what was said; "
        "general: anything else.",
    )
    item: ItemId = Field(
        default=NO_ITEM,
        description="The item this message names: "
        + _options({item: entry["keywords"] for item, entry in rules()["items"].items()})
        + f"; {NO_ITEM} when it names no item.",
    )
    part: PartId = Field(
        default=BODY,
        description="The part asked about: "
        + _options({part: entry["keywords"] for part, entry in rules()["parts"].items()})
        + f"; {BODY} for the item itself.",
    )
