"""Seed 002's recycling conversation and its expected progress events, for both test lanes."""

from __future__ import annotations

from typing import Any

SEED_TURNS = [
    ("페트병 어떻게 버려?", "waste", "lookup", "pet_bottle"),
    ("라벨은 어떻게 해?", "waste", "lookup", "pet_bottle.label"),
    ("뚜껑도 분리해야 해?", "waste", "lookup", "pet_bottle.cap"),
    ("유색 페트병은 다르게 버려?", "waste", "lookup", "colored_pet"),
    ("지금까지 알려준 거 정리해줘", "summary", "recap", None),
]
"""(message, intent label, node that gathers the facts, rule id the answer states)."""

ENGLISH_TURNS = [
    ("How do I throw away a PET bottle?", "waste", "lookup", "pet_bottle"),
    ("What about the label?", "waste", "lookup", "pet_bottle.label"),
    ("Summarize what you told me so far", "summary", "recap", None),
]


def event_trace(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """A turn's custom events as ``(event, intent or node)`` pairs."""
    return [(e["event"], e.get("intent") or e.get("node")) for e in events]


def expected_trace(intent: str, stage: str) -> list[tuple[str, str | None]]:
    """The events every turn must emit, in order."""
    return [
        ("queued", None),
        ("intent", intent),
        ("stage", stage),
        ("stage", "compose"),
        ("answer", None),
        ("done", intent),
    ]
