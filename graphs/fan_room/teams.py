"""The ten KBO teams, their fans' speaker tags, and tag clean-up.

The data lives in ``teams.json`` (canonical name -> full names, aliases,
facts in Korean and English). A stored AI message carries exactly one speaker
tag, ``[<team> 팬] <text>``; clients never see it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TypedDict

from langchain_core.messages import AIMessage, BaseMessage

from graphs.common.messages import LEADING_TAGS, message_text

DATA_FILE = Path(__file__).with_name("teams.json")

SPEAKER_TAG = re.compile(r"^\[([^\[\]\n]{1,30}) 팬\] ")
"""A stored speaker tag; group 1 is the team."""


class Team(TypedDict):
    """One team's entry in ``teams.json``."""

    full_name: dict[str, str]
    """``{"ko": ..., "en": ...}``."""
    aliases: list[str]
    """Other spellings accepted as ``team_name`` (compared case-insensitively)."""
    facts: dict[str, list[str]]
    """Facts a fan of the team cites, per language (``ko``, ``en``)."""


class UnknownTeamError(ValueError):
    """``team_name`` names none of the ten KBO teams."""


@cache
def teams() -> dict[str, Team]:
    """Canonical team name -> its data, in KBO listing order."""
    data: dict[str, Team] = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return data


def canonical_team(name: str | None) -> str:
    """The canonical name (``"LG"``, ``"삼성"``, ...) for a team name or alias."""
    wanted = " ".join((name or "").split()).lower()
    for canonical, team in teams().items():
        if wanted == canonical.lower() or wanted in team["aliases"]:
            return canonical
    allowed = ", ".join(teams())
    if not wanted:
        raise UnknownTeamError(f"fan_room needs context.team_name, one of: {allowed}")
    raise UnknownTeamError(f"unknown team {name!r}: context.team_name must be one of: {allowed}")


def speaker_tag(team: str) -> str:
    """``[LG 팬]``: the tag stored in front of the team's fan's messages."""
    return f"[{team} 팬]"


def strip_speaker_tags(text: str) -> str:
    """Drop every leading tag a model copied (``[LG 팬] [LG 팬]: 안녕`` -> ``안녕``)."""
    return LEADING_TAGS.sub("", text, count=1).strip()


def tagged(team: str, text: str) -> str:
    """``[<team> 팬] <text>`` with exactly one tag, whatever ``text`` started with."""
    return f"{speaker_tag(team)} {strip_speaker_tags(text)}"


def speaker_of(message: BaseMessage) -> str | None:
    """The team whose fan wrote a stored AI message, from its tag."""
    if not isinstance(message, AIMessage):
        return None
    match = SPEAKER_TAG.match(message_text(message))
    return match.group(1) if match else None


def other_speakers(messages: Sequence[BaseMessage], team: str) -> list[str]:
    """Known teams whose fans already spoke in the room, other than ``team``, in order."""
    found: list[str] = []
    for message in messages:
        speaker = speaker_of(message)
        if speaker in teams() and speaker != team and speaker not in found:
            found.append(speaker)
    return found
