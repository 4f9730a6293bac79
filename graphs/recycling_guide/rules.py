"""The in-repo recycling rules (``rules.json``) and how a turn finds its rule.

Items (``pet_bottle``, ``colored_pet``, ...) have rules per part: ``body`` (the
item itself), and for some items ``label`` and ``cap``. A turn names an item,
a part, both or neither; `resolve` fills the gap from the topic of the earlier
turns, so "라벨은 어떻게 해?" after "페트병 어떻게 버려?" means the bottle's label.
Pure functions, unit tested without a model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypedDict

DATA_FILE = Path(__file__).with_name("rules.json")

NO_ITEM = "none"
"""The item value for a message that names no item (``"라벨은?"``)."""
BODY = "body"
"""The part value for the item itself."""


class Part(TypedDict):
    """A part several items have (``label``, ``cap``)."""

    name: dict[str, str]
    """Display name per language."""
    keywords: list[str]
    """Words that name the part."""


class Item(TypedDict):
    """One thing people throw away."""

    name: dict[str, str]
    """Display name per language."""
    keywords: list[str]
    """Words that name the item (the most specific items come first in the file)."""
    rules: dict[str, dict[str, str]]
    """Part (``body``, ``label``, ``cap``) -> the rule per language."""


class Rules(TypedDict):
    """The whole dataset."""

    source: str
    """Where the rules come from."""
    parts: dict[str, Part]
    """Part id -> part."""
    items: dict[str, Item]
    """Item id -> item, in matching priority order."""


@cache
def rules() -> Rules:
    """The dataset, read once."""
    data: Rules = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    return data


def item_ids() -> tuple[str, ...]:
    """Item ids in priority order (``colored_pet`` before ``pet_bottle``)."""
    return tuple(rules()["items"])


def part_ids() -> tuple[str, ...]:
    """``body`` and the parts in the data."""
    return (BODY, *rules()["parts"])


def rule_id(item: str, part: str) -> str:
    """``pet_bottle`` for the item itself, ``pet_bottle.label`` for a part."""
    return item if part == BODY else f"{item}.{part}"


def has_rule(rid: str) -> bool:
    """Whether a rule id (perhaps stored by an older dataset) exists in this one."""
    item, _, part = rid.partition(".")
    items = rules()["items"]
    return item in items and (part or BODY) in items[item].get("rules", {})


def rule_text(rid: str, lang: str) -> str:
    """The rule behind a rule id, in ``lang`` (``ko`` or ``en``)."""
    item, _, part = rid.partition(".")
    return rules()["items"][item]["rules"][part or BODY][lang]


@dataclass(frozen=True)
class Resolution:
    """What a waste question is about, once the earlier turns are taken into account."""

    topic: str | None
    """The item under discussion after this turn (None: still unknown)."""
    rule: str | None
    """The rule id that answers the turn (None: ask which item)."""
    missing_part: bool = False
    """The item has no rule for the asked part; the answer falls back to the item's rule."""


def resolve(item: str, part: str, topic: str | None) -> Resolution:
    """Find the rule for a turn that names ``item``/``part`` after earlier turns about ``topic``."""
    known = rules()["items"]
    current = item if item in known else (topic if topic in known else None)
    if current is None:
        return Resolution(topic=None, rule=None)
    if part != BODY and part not in rules()["items"][current]["rules"]:
        return Resolution(topic=current, rule=rule_id(current, BODY), missing_part=True)
    return Resolution(topic=current, rule=rule_id(current, part))
