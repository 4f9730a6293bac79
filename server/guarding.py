"""This deployment's runtime guard (`migrations_playbook.guard`), used by the run handler.

The guard's candidate is the running code (the graphs below, imported lazily, the
same objects langgraph.json serves) and its lock history is the committed
``migrations_playbook/contracts/`` (current locks and ``history/``). The running
code's identity (the hash runs are stamped with) is described from these graphs once
per process, not read from the committed locks: a deploy that changed the code but
not its lock is logged as a stale lock and judged as the code it is. Off with
``PLAYBOOK_GUARD=off``; a thread whose code's lock is not in the history is refused
unless ``PLAYBOOK_GUARD_UNKNOWN=admit`` (`migrations_playbook.guard`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from migrations_playbook.guard import Guard, guard_enabled

GRAPHS = {
    "ticket_triage": "graphs.ticket_triage.graph:graph",
    "fan_room": "graphs.fan_room.graph:graph",
    "recycling_guide": "graphs.recycling_guide.graph:graph",
    "campus_supervisor": "graphs.campus_supervisor.graph:graph",
}
"""The graphs of langgraph.json (tests/unit/test_project_config.py keeps the two in step)."""

CONTRACTS = Path(__file__).resolve().parents[1] / "migrations_playbook" / "contracts"


@cache
def deployment_guard() -> Guard | None:
    """The guard, or None when ``PLAYBOOK_GUARD`` turns it off (read once per process)."""
    return Guard(GRAPHS, CONTRACTS) if guard_enabled() else None
