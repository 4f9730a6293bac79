"""Run context of the fan room: the model, and which team's fan speaks this turn."""

from __future__ import annotations

from dataclasses import dataclass, field

from graphs.common.context import ModelContext
from graphs.fan_room.teams import canonical_team


@dataclass(kw_only=True)
class FanRoomContext(ModelContext):
    """Context of one fan_room run. Validated when the run starts, before any
    checkpoint is written, so an unknown team stores nothing."""

    team_name: str = field(
        default="",
        metadata={
            "description": "Required. Whose fan answers this turn: one of the ten KBO teams "
            "(LG, 삼성, KIA, 두산, SSG, 롯데, 한화, NC, KT, 키움) or an alias such as "
            "'LG 트윈스' or 'Samsung'."
        },
    )
    """The persona of this run, normalised to the canonical name (``"삼성"``)."""

    def __post_init__(self) -> None:
        self.team_name = canonical_team(self.team_name)


def team_of(context: FanRoomContext | None) -> str:
    """The run's team; a run started without any context gets a clear error."""
    return canonical_team(context.team_name if context is not None else None)
