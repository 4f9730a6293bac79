"""`playbook migrate`'s report: what was read, what the plan did to each thread and assistant, what the
proofs showed, and the gate before and after (`ok`: exit 0 or 1). Rendered by `render/migrate.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from migrations_playbook.model import GateReport
from migrations_playbook.repair.prove import Proof
from migrations_playbook.sources.repair_model import AssistantOutcome, Mode, Served, ThreadOutcome

MIGRATE_RESULT_VERSION = "1"


@dataclass
class MigrateReport:
    migration: str
    mode: Mode
    live_url: str
    candidate: str
    served: dict[str, Served]
    before: GateReport | None
    threads: list[ThreadOutcome]
    assistants: list[AssistantOutcome] = field(default_factory=list)
    after: GateReport | None = None
    proofs: list[Proof] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    staging_url: str | None = None
    blocked: list[str] = field(default_factory=list)
    """The threads the gate blocked before the command (the ones the plan repairs)."""
    source: Literal["api", "checkpointer"] = "api"

    @property
    def uncovered(self) -> list[ThreadOutcome]:
        """Blocked threads the plan does nothing for (a thread blocked only because its assistant's
        context is rejected is covered by a context step that changes that assistant's context)."""
        fixed = {a.graph_id for a in self.assistants if a.action in ("would change", "changed", "already applied")}
        return [
            t
            for t in self.threads
            if t.action == "no change" and (set(t.blocks) - ({"CONTEXT_INVALID"} if t.graph_id in fixed else set()))
        ]

    @property
    def ok(self) -> bool:
        """Exit 0 or 1: the gate passes afterwards (dry run: the plan covers every blocked thread;
        rollback: every migrated thread is restored), and every proof held."""
        if self.mode == "rollback":
            return not any(t.action in ("failed", "skipped: busy", "skipped: moved on") for t in self.threads) and not any(
                a.action == "failed" for a in self.assistants
            )
        if self.mode == "dry run":
            return not self.uncovered
        if any(t.action == "failed" for t in self.threads) or any(a.action == "failed" for a in self.assistants):
            return False
        if self.proofs and not all(p.ok for p in self.proofs):
            return False
        return self.after is not None and self.after.verdict == "pass"

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for t in self.threads:
            counts[t.action] = counts.get(t.action, 0) + 1
        return {
            "migrate_result_version": MIGRATE_RESULT_VERSION,
            "migration": self.migration,
            "mode": self.mode,
            "live": self.live_url,
            "source": self.source,
            "staging": self.staging_url,
            "candidate": self.candidate,
            "served": dict(self.served),
            "ok": self.ok,
            "counts": dict(sorted(counts.items())),
            "blocked_before": list(self.blocked),
            "gate_before": self.before.to_json() if self.before else None,
            "gate_after": self.after.to_json() if self.after else None,
            "threads": [t.to_json() for t in self.threads],
            "assistants": [a.to_json() for a in self.assistants],
            "proofs": [p.to_json() for p in self.proofs],
            "notes": list(self.notes),
        }
