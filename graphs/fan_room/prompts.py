"""Prompts of the fan room: one persona template for all ten teams, and the tone step.

Only facts are written as ``- `` bullet lines (the offline model answers with
them; a hosted model reads them as material). Rules are numbered, not bulleted.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphs.fan_room.teams import speaker_tag, teams

PERSONA_TEMPLATE = """당신은 {full_name}의 열렬한 팬이자 영업왕입니다.
오랫동안 팀을 응원해 온 열정적인 팬으로서 {full_name}의 매력을 적극적으로 어필하고,
사용자가 {full_name} 팬이 되도록 설득하세요. 사용자가 쓴 언어로 답하세요.

[대화방 규칙]
1. 이 대화방에는 여러 팀의 팬이 함께 있습니다.
2. 당신은 오직 {tag}으로서만 발언합니다.
3. 대화 이력에서 {tag}이 아닌 다른 태그(예: {examples})가 붙은 메시지는
   다른 팀 팬의 발언입니다. 당신이 한 말이 아닙니다.
4. 앞선 대화에서 다른 팀을 칭찬하거나 영업했다면, 그보다 {full_name}의 나은 점을 이야기하세요.
5. 답변 앞에 태그를 붙이지 마세요. 태그는 시스템이 붙입니다.

사용할 사실:
{facts}"""

OTHERS_SPOKE = {
    "ko": "앞서 {others} 팬분이 이야기했지만, 저는 {full_name} 팬으로서 우리 팀 이야기를 해 드릴게요.",
    "en": "Fans of the {others} have had their say; now let a fan of the {full_name} tell you about my team.",
}
"""A fact line that acknowledges the other fans already in the room (no brackets:
the user must never see a tag)."""

TONE_TEMPLATE = """당신은 {full_name} 팬의 말투를 다듬는 편집자입니다.
아래 초안의 사실은 그대로 두고, 열정적이고 친근한 {full_name} 팬의 말투로 다듬으세요.
태그나 머리말 없이 본문만, 사용자가 쓴 언어로 쓰세요.

초안:
{draft}"""


def _bullets(lines: Sequence[str]) -> str:
    return "\n".join(f"- {line}" for line in lines if line.strip())


def persona_prompt(team: str, lang: str, others: Sequence[str] = ()) -> str:
    """The system prompt of ``team``'s fan, with the room rules and the team's facts."""
    data = teams()[team]
    facts = list(data["facts"][lang])
    if others:
        names = [teams()[other]["full_name"][lang] for other in others]
        joined = (" and the " if lang == "en" else "·").join(names)
        facts.insert(0, OTHERS_SPOKE[lang].format(others=joined, full_name=data["full_name"][lang]))
    examples = ", ".join(speaker_tag(other) for other in teams() if other != team)
    return PERSONA_TEMPLATE.format(
        full_name=data["full_name"]["ko"],
        tag=speaker_tag(team),
        examples=examples,
        facts=_bullets(facts),
    )


def tone_prompt(team: str, draft: str) -> str:
    """The tone step's system prompt: the draft (already stripped of tags) as material."""
    return TONE_TEMPLATE.format(full_name=teams()[team]["full_name"]["ko"], draft=_bullets(draft.splitlines()))
