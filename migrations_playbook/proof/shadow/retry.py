"""How the shadow drives a thread whose last run failed: as a client does after the deploy.

A run that raised leaves its thread with status ``error`` at the checkpoint before the failed step (its
pending writes kept). A client retries it: a run with no input from that head, which runs the failed
step again (and only it: the steps that finished are taken from the checkpoint). After the deploy that
retry runs under the new code, so the proof sends it on every side, then gives the thread a next turn
from wherever the retry left it (``--turn-input GRAPH=JSON``, default: the thread's last input again),
as the client goes on. A failed step the candidate no longer has (a node renamed or removed), or can no
longer run on the stored state, shows as a difference in the retry; a candidate the retried thread
cannot take a next turn on shows in the turn. When the retry fails on the deployed code too (the error
was not transient), the thread is unproven, as any run the deployed code itself fails. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from migrations_playbook.proof.shadow.traces import RunRequest

RETRY_WHY = "the thread's last run failed: retried with no input from its head, as a client retries it"


def retry_requests(
    graph_id: str,
    assistant_id: str,
    context: Mapping[str, Any] | None,
    *,
    has_input: bool,
    last_input: Any,
    turn_inputs: Mapping[str, Any],
) -> list[RunRequest]:
    """The retry of an errored thread, then its next turn (when there is an input to give it)."""
    requests = [RunRequest(kind="retry", assistant_id=assistant_id, context=context, why=RETRY_WHY)]
    if graph_id in turn_inputs or has_input:
        given = graph_id in turn_inputs
        requests.append(
            RunRequest(
                kind="turn",
                assistant_id=assistant_id,
                input=turn_inputs[graph_id] if given else last_input,
                context=context,
                why=("--turn-input" if given else "the last input again") + ", from the head the retry left",
            )
        )
    return requests


def held_runs_then(planned: list[RunRequest] | str) -> list[RunRequest]:
    """What a thread's own planned runs keep after the runs the live server held for it (`held_runs.py`).

    The held runs go first, on the head, as the live server's queue takes them up when it starts under the
    new code, before any client reaches the thread. The plan was decided from the live state, before them:
    what acts on the head as it was (an answer to its question, a continue, a retry) no longer fits the head
    the held runs leave, and is dropped (a question they leave pending is answered by the leader's follow-up);
    what names its own checkpoint (the rerun of the last turn, a next turn from the live head) still probes
    the thread as the live data holds it, and is kept."""
    if isinstance(planned, str):
        return []
    return [request for request in planned if request.kind in ("rerun", "turn") and request.checkpoint_id]
