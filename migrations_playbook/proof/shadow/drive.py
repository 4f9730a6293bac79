"""How the shadow proof drives a thread: the runs the leader (side A) sends, decided from what it sees.

Every side runs exactly the requests the leader sent (`shadow_trace.RunRequest`), so the deployed
code and the candidate are driven identically. The leader decides them like this:

* a thread paused at questions (``interrupt()``) gets the answer to each, by the replay's answer rules
  (`resume.ResumeRule`: ``--resume-map``, the payload's own value, ``--resume``), through the assistant
  and run context it last ran with;
* a thread whose last run failed is retried as a client does and then takes a next turn (`retry.py`);
* a thread with pending work and no question (a static breakpoint, pending tasks or sends) is continued
  (a run with no input);
* the runs the live server holds for a thread (queued, delayed) go first, in its queue's order, with
  their stored requests, before the runs planned from its live state (`held_runs.py` says why);
* an idle thread re-runs its last turn from the checkpoint before it, with the input it was given, and
  then takes a next turn from its head as it was (``--turn-input GRAPH=JSON``; default: the last input
  again);
* a question a run leaves pending is answered before the next turn (a thread waiting for an answer
  takes no new input: the rerun of a turn that asked a question asks it again) and after the last
  run (so a question a turn asks is answered too), at most `MAX_FOLLOW_UPS` times.

A thread with nothing to send (a question no rule answers, an idle thread with no recorded input) is
not run; the report says why. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from migrations_playbook.proof.resume import LearnedKey, ResumePlan, ResumeRule, plan_resume, question_key
from migrations_playbook.proof.shadow.retry import held_runs_then, retry_requests
from migrations_playbook.proof.shadow.traces import RunRequest
from migrations_playbook.sources.api.state import pending_paths
from migrations_playbook.sources.interrupts import PendingInterrupt, pending_interrupts

MAX_FOLLOW_UPS = 2
"""Answers the leader sends beyond the planned runs, per thread."""


@dataclass(frozen=True)
class ThreadFacts:
    """What the drive needs of one live thread (read from the live source, before any copy runs)."""

    thread_id: str
    graph_id: str
    status: str
    state: Mapping[str, Any]
    """The live ``get_state(subgraphs=True)``."""
    assistant_id: str
    """The assistant of the thread's last run (else the graph id)."""
    context: Mapping[str, Any] | None = None
    """The run-level context of the thread's last run."""
    has_input: bool = False
    last_input: Any = None
    """The input of the thread's last turn (its newest input checkpoint)."""
    fork_from: str | None = None
    """The checkpoint before that input (the opening input checkpoint itself for a first turn)."""
    answers: Mapping[LearnedKey, Any] = field(default_factory=dict)
    """The answers the thread's past questions got on the live deployment (`live_answers`)."""
    held: tuple[RunRequest, ...] = ()
    """The runs the live server holds for the thread (queued, delayed), in its queue's order (`held_runs.py`)."""

    @property
    def head(self) -> str | None:
        checkpoint = self.state.get("checkpoint") or {}
        found = checkpoint.get("checkpoint_id")
        return str(found) if found else None


def answer_request(facts: ThreadFacts, state: Mapping[str, Any], rule: ResumeRule) -> RunRequest | str:
    """The resume of ``state``'s pending questions, or why there is none."""
    interrupts = pending_interrupts(state)
    plan = plan_resume(interrupts, rule, list(pending_paths(state)), thread_id=facts.thread_id, graph_id=facts.graph_id)
    if not plan.answers:
        reasons = sorted({u.reason for u in plan.unanswered}) or ["nothing pending to answer"]
        return "not run: " + "; ".join(reasons)
    why = ", ".join(f"{a.interrupt.path}: {a.source}" for a in plan.answers)
    return RunRequest(kind="resume", assistant_id=facts.assistant_id, resume=plan.resume, context=facts.context, why=why)


def answer_variants(facts: ThreadFacts, rule: ResumeRule) -> list[RunRequest]:
    """The other answers a client may send to the thread's live questions, one run each (driven on a copy of the
    thread of its own): variant k answers every question with its k-th other shape (`ResumeRule.alternatives`),
    or with the first answer where it has fewer. None where the operator chose the answer (``--resume-map``,
    ``--resume``) or no question is pending."""
    interrupts = pending_interrupts(facts.state)
    if not interrupts:
        return []
    plan = plan_resume(interrupts, rule, list(pending_paths(facts.state)), thread_id=facts.thread_id, graph_id=facts.graph_id)
    if not plan.answers or len(plan.answers) != len(interrupts):
        return []
    others = [
        [] if answer.source in ("--resume-map", "--resume") else rule.alternatives(answer.interrupt, facts.graph_id)
        for answer in plan.answers
    ]
    variants = []
    for index in range(max(len(found) for found in others)):
        answers = tuple(
            found[index][1] if index < len(found) else answer for answer, found in zip(plan.answers, others, strict=True)
        )
        label = "; ".join(
            f"{answer.interrupt.path}: {found[index][0]}"
            for answer, found in zip(plan.answers, others, strict=True)
            if index < len(found)
        )
        variants.append(
            RunRequest(
                kind="resume",
                assistant_id=facts.assistant_id,
                resume=ResumePlan(answers=answers).resume,
                context=facts.context,
                why=f"answer variant: {label}",
            )
        )
    return variants


def live_answers(graph_id: str, history: Sequence[Mapping[str, Any]], runs: Sequence[Mapping[str, Any]]) -> dict[LearnedKey, Any]:
    """The answers a live thread's questions got, by (graph, node path, question): for each run resumed with
    ``Command(resume=...)`` (its kwargs, where the server keeps runs), the questions pending at the checkpoint
    it started from (the parent of its first checkpoint in ``history``, newest first)."""
    resumes: dict[str, Any] = {}
    for run in runs:
        kwargs = run.get("kwargs") or {}
        command = kwargs.get("command") if isinstance(kwargs, Mapping) else None
        if isinstance(command, Mapping) and command.get("resume") is not None:
            resumes[str(run.get("run_id"))] = command["resume"]
    if not resumes:
        return {}
    by_id = {str((c.get("checkpoint") or {}).get("checkpoint_id")): c for c in history}
    first: dict[str, Mapping[str, Any]] = {}
    for checkpoint in history:  # newest first: the last one seen of a run is its first
        run_id = str((checkpoint.get("metadata") or {}).get("run_id"))
        if run_id in resumes:
            first[run_id] = checkpoint
    found: dict[LearnedKey, Any] = {}
    for run_id, checkpoint in first.items():
        parent = by_id.get(str((checkpoint.get("parent_checkpoint") or {}).get("checkpoint_id")))
        asked = pending_interrupts(parent) if parent is not None else []
        if not asked:
            continue
        value = resumes[run_id]
        for interrupt in asked:
            answer = _answer_to(interrupt, value, len(asked))
            if answer is not None:
                found.setdefault((graph_id, interrupt.path, question_key(interrupt)), answer)
    return found


def _answer_to(interrupt: PendingInterrupt, value: Any, pending: int) -> Any:
    if isinstance(value, Mapping) and interrupt.id is not None and interrupt.id in value:
        return value[interrupt.id]
    return value if pending == 1 else None


def planned_requests(facts: ThreadFacts, rule: ResumeRule, turn_inputs: Mapping[str, Any]) -> list[RunRequest] | str:
    """The runs planned for a thread from its live state, or why it is not run."""
    state = facts.state
    if facts.held:  # the live server runs them first, on the head, when it starts under the new code
        own = planned_requests(dataclasses.replace(facts, held=()), rule, turn_inputs)
        return [*facts.held, *held_runs_then(own)]
    if pending_interrupts(state):
        answered = answer_request(facts, state, rule)
        return answered if isinstance(answered, str) else [answered]
    if facts.status == "error":
        return retry_requests(
            facts.graph_id,
            facts.assistant_id,
            facts.context,
            has_input=facts.has_input,
            last_input=facts.last_input,
            turn_inputs=turn_inputs,
        )
    if state.get("next") or facts.status in ("busy", "error", "interrupted"):
        return [RunRequest(kind="continue", assistant_id=facts.assistant_id, context=facts.context, why="pending work")]
    if not facts.has_input:
        if facts.graph_id in turn_inputs:
            return [
                RunRequest(
                    kind="turn",
                    assistant_id=facts.assistant_id,
                    input=turn_inputs[facts.graph_id],
                    checkpoint_id=facts.head,
                    context=facts.context,
                    why="--turn-input",
                )
            ]
        return "not run: idle, and no input checkpoint to rerun its last turn from (pass --turn-input GRAPH=JSON)"
    turn = turn_inputs.get(facts.graph_id, facts.last_input)
    return [
        RunRequest(
            kind="rerun",
            assistant_id=facts.assistant_id,
            input=facts.last_input,
            checkpoint_id=facts.fork_from,
            context=facts.context,
            why="the last turn again, from the checkpoint before it",
        ),
        RunRequest(
            kind="turn",
            assistant_id=facts.assistant_id,
            input=turn,
            checkpoint_id=facts.head,
            context=facts.context,
            why="--turn-input" if facts.graph_id in turn_inputs else "the last input again, from the head",
        ),
    ]


def follow_up(facts: ThreadFacts, after: Mapping[str, Any], rule: ResumeRule, sent: Sequence[RunRequest]) -> RunRequest | None:
    """One more run after the planned ones: the answer to a question the leader's last run left pending."""
    if sum(1 for r in sent if r.why == "follow-up") >= MAX_FOLLOW_UPS or not pending_interrupts(after):
        return None
    answered = answer_request(facts, after, rule)
    if isinstance(answered, str):
        return None
    return RunRequest(
        kind="resume", assistant_id=answered.assistant_id, resume=answered.resume, context=answered.context, why="follow-up"
    )


def after_run(
    facts: ThreadFacts, after: Mapping[str, Any], rule: ResumeRule, sent: Sequence[RunRequest], remaining: list[RunRequest]
) -> list[RunRequest]:
    """The runs still to send after one (leader): the answer to a question the run left pending goes first
    when a turn or a rerun comes next, or nothing does.

    A rerun comes next after the runs the live server held (`retry.held_runs_then`); a held run that leaves a
    question pending (a ticket's queued input stops at its approval) was followed by the rerun on a waiting
    head, which a server that takes only the answer while a question waits refuses on every side: on identical
    code the thread was listed as unproven. Answered first, as a client would, the rerun still starts from the
    checkpoint it names."""
    if remaining and remaining[0].kind not in ("turn", "rerun"):
        return remaining
    more = follow_up(facts, after, rule, sent)
    return [more, *remaining] if more is not None else remaining


def input_of(history: Sequence[Mapping[str, Any]], inputs: Mapping[str, Any] | None = None) -> tuple[bool, Any, str | None]:
    """(found, the newest turn's input, the checkpoint before it) from a thread's history, newest first
    (``threads.get_history`` shape). The input is the run's own (``inputs``: run id -> input, where the
    server keeps runs), else what the input checkpoint's ``__start__`` task shows (a graph; an
    entrypoint's input checkpoint shows no input)."""
    for checkpoint in history:
        metadata = checkpoint.get("metadata") or {}
        if metadata.get("source") != "input":
            continue
        parent = (checkpoint.get("parent_checkpoint") or {}).get("checkpoint_id")
        own = (checkpoint.get("checkpoint") or {}).get("checkpoint_id")
        run_id = str(metadata.get("run_id"))
        if inputs and run_id in inputs:
            return True, inputs[run_id], parent or own
        start = next((t for t in checkpoint.get("tasks") or [] if t.get("name") == "__start__"), None)
        if start is not None and start.get("result") is not None:
            return True, start.get("result"), parent or own
        return False, None, None
    return False, None, None
