"""STATE_UNREADABLE: a thread's state could not be read (an HTTP 5xx from the server, an undecodable checkpoint)."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import STATE_UNREADABLE, ThreadSnapshot
from migrations_playbook.rules.base import API_THREADS, GraphEvidence, Hit, Rule


class StateUnreadable(Rule):
    code = STATE_UNREADABLE
    severity = "block"
    evidence = (API_THREADS,)
    why = "the gate cannot tell what the thread will run next, so it cannot say the candidate can resume it"
    help = (
        "read the thread's state on the live server (`GET /threads/{id}/state`) to see why it fails; repair it "
        "(`playbook migrate`) or delete it, then rerun the gate"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        if thread.unreadable:
            yield Hit(f"the state of these threads could not be read ({thread.unreadable}); nothing about them was checked")
