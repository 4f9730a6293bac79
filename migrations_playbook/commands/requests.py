"""The typed requests of `replay`, `shadow` and `migrate` (what their flags say, parsed): the argparse namespace
stops in `cli.py`, and everything below it takes these."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from migrations_playbook.sources.base import SourceRequest


@dataclass(frozen=True)
class ResumeFlags:
    """How to answer the interrupts of resumed threads (``--resume``, ``--resume-map``, ``--auto-resume``)."""

    resume: str | None = None
    """The fallback value, as JSON text."""
    resume_map: list[str] = field(default_factory=list)
    """Objects (JSON, or ``@FILE``): interrupt payload ``kind`` -> resume value; later wins."""
    auto_resume: bool = False
    """Resume each interrupt with the value its payload gives."""

    @property
    def given(self) -> bool:
        return self.resume is not None or bool(self.resume_map) or self.auto_resume


@dataclass(frozen=True)
class ReplayRequest:
    source: SourceRequest
    candidate: str
    """The candidate's langgraph.json as given (reports print it as typed)."""
    graphs: list[str] = field(default_factory=list)
    persistence: Path | None = None
    """The live `langgraph dev` working folder (or its .langgraph_api/) to copy."""
    staging_url: str | None = None
    """A staging deployment restored from a live snapshot."""
    answers: ResumeFlags = field(default_factory=ResumeFlags)
    plan: Path | None = None
    """A migration plan to apply on the staging copy first."""
    format: str = "table"


@dataclass(frozen=True)
class MigrateRequest:
    source: SourceRequest
    candidate: str
    """The candidate's langgraph.json as given (reports print it as typed)."""
    plan: Path
    apply: bool = False
    persistence: Path | None = None
    """The proof: copy this `langgraph dev` folder, serve it with the candidate, apply there."""
    rollback: str | None = None
    """Restore the pre-migration heads of this migration id."""
    strict: bool = False
    format: str = "table"
    answers: ResumeFlags = field(default_factory=ResumeFlags)


@dataclass(frozen=True)
class ShadowRequest:
    source: SourceRequest
    candidate: str
    """The candidate's langgraph.json as given."""
    live_code: Path | None = None
    live_ref: str | None = None
    graphs: list[str] = field(default_factory=list)
    persistence: Path | None = None
    staging_urls: list[str] = field(default_factory=list)
    """A (deployed code), B (candidate), and optionally A2 (the deployed code again)."""
    sample: int = 5
    every: bool = False
    answers: ResumeFlags = field(default_factory=ResumeFlags)
    turn_inputs: list[str] = field(default_factory=list)
    """``GRAPH=JSON``: the input of an idle thread's next turn."""
    identities: list[str] = field(default_factory=list)
    """``NAME=Header: value``: users of the live deployment, each as its clients authenticate (``--identity``)."""
    format: str = "table"
    strict: bool = False
