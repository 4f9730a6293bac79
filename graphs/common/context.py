"""Run context shared by every graph (`context_schema`).

Per-assistant configuration lives here, so Studio and
``assistants.create(graph_id, context={...})`` can pick it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphs.common.models import default_model_spec


@dataclass(kw_only=True)
class ModelContext:
    """Context every graph accepts."""

    model: str = field(
        default_factory=default_model_spec,
        metadata={
            "description": "Chat model spec: 'offline' (deterministic, no keys) or "
            "'openai:<model-name>' (needs OPENAI_API_KEY). Defaults to $MODEL, else 'offline'."
        },
    )
    """Which chat model the graph's nodes use. Explicit context wins over ``$MODEL``."""


def model_spec(context: ModelContext | None) -> str:
    """The model spec for a run; a run started without context gets the default."""
    return context.model if context is not None else default_model_spec()
