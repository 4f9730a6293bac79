"""The resume side of a staging replay: which value answers each pending interrupt, and what a resumed run proved.

Each pending interrupt of a thread (read from the *live* state) gets the value that fits it
(`ResumeRule.answer`): the ``--resume-map`` entry for the payload's ``kind``, else
(``--auto-resume``) a value the payload itself says (`derive_from_payload`), else the ``--resume``
fallback. An interrupt none of these answers, or a fallback the graph refuses or asks again, is
reported (STAGING_RESUME_UNANSWERED, warn) instead of guessed at. Several interrupts on one thread
are resumed with ``{interrupt id: value}``, as ``Command(resume=...)`` takes them. A resumed run
(`RunOutcome`, from the staging copy) is judged by what it showed (`judge_resume`): refused, asked
again, or the paused step never ran (STAGING_RESUME_FAILED). Pure: no I/O.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from migrations_playbook.model import STAGING_RESUME_FAILED, STAGING_RESUME_UNANSWERED, Finding, Severity
from migrations_playbook.proof.answers import answer_shapes, first_shape
from migrations_playbook.sources.api.state import pending_paths
from migrations_playbook.sources.interrupts import PendingInterrupt, asked_again, pending_interrupts
from migrations_playbook.sources.replay_protocol import RunOutcome

ResumeSource = Literal[
    "--resume-map",
    "resume_format",
    "review_configs",
    "tool_approval",
    "agent_inbox",
    "kind+options",
    "options",
    "response_schema",
    "live_answer",
    "--resume",
]
"""Where an interrupt's resume value came from."""

SOURCE_TEXT: dict[str, str] = {
    "--resume-map": "the --resume-map entry for its kind",
    "resume_format": "the payload's resume_format",
    "review_configs": "a decision each action's review_config allows (HumanInTheLoopMiddleware)",
    "tool_approval": "a decision the per-call approval's response_schema allows (HumanInTheLoopMiddleware)",
    "agent_inbox": "a response each request's config allows (Agent Inbox)",
    "response_schema": "a value the interrupt's response_schema admits",
    "live_answer": "the answer the same question at the same step got on the live deployment",
    "kind+options": "the payload's kind and first option",
    "options": "the payload's first option",
    "--resume": "the --resume fallback",
}

TRUSTED_SOURCES = frozenset({"--resume-map", "resume_format", "review_configs", "tool_approval", "agent_inbox", "live_answer"})
"""Values said to answer this very interrupt (by the operator, for its kind, or by the payload).
The candidate refusing one is a regression (block); a guessed value (first option, the
blanket fallback) that is refused only shows it does not fit (warn)."""


def derive_from_payload(payload: Any, schema: Any = None) -> tuple[Any, ResumeSource] | None:
    """The resume value an interrupt payload itself says (the first of `answers.answer_shapes`: the answer
    that lets the work go on as asked), or None when it says none."""
    shape = first_shape(payload, schema)
    return None if shape is None else (shape.value, shape.source)


@dataclass(frozen=True)
class Answer:
    """The value one interrupt is resumed with."""

    interrupt: PendingInterrupt
    value: Any
    source: ResumeSource

    @property
    def trusted(self) -> bool:
        return self.source in TRUSTED_SOURCES


@dataclass(frozen=True)
class Unanswered:
    """An interrupt no rule gives a value for, and why."""

    interrupt: PendingInterrupt
    reason: str


def question_key(interrupt: PendingInterrupt) -> str:
    """What identifies a question at a step across threads: its ``kind``, else the payload's keys (a mapping),
    else the payload itself (a text question), else its type."""
    value = interrupt.value
    if interrupt.kind is not None:
        return f"kind:{interrupt.kind}"
    if isinstance(value, Mapping):
        return "keys:" + ",".join(sorted(str(k) for k in value))
    if isinstance(value, str):
        return "text:" + value
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return "list-of:" + ",".join(sorted({str(k) for v in value for k in v}))
    return "type:" + type(value).__name__


LearnedKey = tuple[str, str, str]
"""(graph id, node path, `question_key`): where a live answer was given, and to what."""


@dataclass(frozen=True)
class ResumeRule:
    """How a staging replay answers interrupts: ``by_kind`` (``--resume-map``: keyed by thread id, else node
    path, else the payload's ``kind``), then the payload (``derive``, i.e. ``--auto-resume``), then an answer the
    same question at the same step got on the live deployment (``learned``), then ``fallback`` (``--resume``)."""

    by_kind: Mapping[str, Any] = field(default_factory=dict)
    derive: bool = False
    fallback: Any = None
    """None: no fallback (JSON null is not a resume value, as before)."""
    learned: Mapping[LearnedKey, Any] = field(default_factory=dict)
    """Answers live threads were resumed with (read from their runs), by graph, node path and question."""

    @property
    def active(self) -> bool:
        """Whether interrupted threads are resumed at all."""
        return bool(self.by_kind) or self.derive or self.fallback is not None or bool(self.learned)

    def answer(
        self, interrupt: PendingInterrupt, thread_id: str | None = None, graph_id: str | None = None
    ) -> Answer | Unanswered:
        kind = interrupt.kind
        for key in (thread_id, interrupt.path, kind):
            if key is not None and key in self.by_kind:
                return Answer(interrupt, self.by_kind[key], "--resume-map")
        if self.derive:
            derived = derive_from_payload(interrupt.value, interrupt.schema)
            if derived is not None:
                return Answer(interrupt, *derived)
        if graph_id is not None:
            learned = self.learned.get((graph_id, interrupt.path, question_key(interrupt)))
            if learned is not None:
                return Answer(interrupt, learned, "live_answer")
        if self.fallback is not None:
            fallback_kind = self.fallback.get("kind") if isinstance(self.fallback, Mapping) else None
            if kind is None or fallback_kind is None or fallback_kind == kind:
                return Answer(interrupt, self.fallback, "--resume")
        return Unanswered(interrupt, self._why_not(kind))

    def alternatives(self, interrupt: PendingInterrupt, graph_id: str | None = None) -> list[tuple[str, Answer]]:
        """Every other answer a client may send to ``interrupt`` (label, answer), beyond the one `answer` gives:
        the shapes its payload allows (`answers.answer_shapes`) and the answer the live deployment gave the
        same question. None where ``--resume-map`` or ``--resume`` decide: the operator chose the answer."""
        if not self.derive:
            return []
        shapes = answer_shapes(interrupt.value, interrupt.schema)
        found = [(shape.label, Answer(interrupt, shape.value, shape.source)) for shape in shapes[1:]]
        if graph_id is not None:
            learned = self.learned.get((graph_id, interrupt.path, question_key(interrupt)))
            if learned is not None and all(learned != s.value for s in shapes):
                found.append(("the live answer", Answer(interrupt, learned, "live_answer")))
        return found

    def _why_not(self, kind: str | None) -> str:
        tried = []
        if self.by_kind:
            tried.append(
                f"--resume-map has no entry for {kind!r}" if kind is not None else "the payload has no 'kind' for --resume-map"
            )
        if self.derive:
            tried.append("the payload gives no value (no resume_format, options, review configs or response_schema)")
        if self.learned:
            tried.append("no live thread answered this question at this step")
        if self.fallback is not None:
            tried.append(f"--resume answers {self.fallback.get('kind')!r}, not {kind!r}")
        if not tried:  # `active` is checked before any answer is asked for
            tried.append("no resume value was given")
        if kind is None:
            hint = "key --resume-map by the node path or the thread id (the payload has no 'kind'), or pass --resume"
        else:
            hint = f"add {json.dumps({kind: '<value>'})} to --resume-map (or key it by node path or thread id)" + (
                "" if self.derive else " or pass --auto-resume"
            )
        return "; ".join(tried) + f" ({hint})"


@dataclass(frozen=True)
class ResumePlan:
    """The resume of one thread: a value for each pending interrupt, or why not."""

    answers: tuple[Answer, ...]
    unanswered: tuple[Unanswered, ...] = ()

    @property
    def resume(self) -> Any:
        """What ``Command(resume=...)`` gets: the value for one interrupt, ``{id: value}`` for several."""
        if len(self.answers) == 1:
            return self.answers[0].value
        return {a.interrupt.id: a.value for a in self.answers}


def plan_resume(
    interrupts: Sequence[PendingInterrupt],
    rule: ResumeRule,
    paused_at: Sequence[str] = (),
    *,
    thread_id: str | None = None,
    graph_id: str | None = None,
) -> ResumePlan:
    """One value per pending interrupt. A thread is resumed only when every interrupt has one:
    a partial resume cannot show that the thread's paused steps all run."""
    if not interrupts:
        # Paused without an interrupt payload (a static breakpoint): nothing to derive from.
        where = PendingInterrupt(path=",".join(paused_at) or "-", value=None)
        if rule.fallback is not None:
            return ResumePlan(answers=(Answer(where, rule.fallback, "--resume"),))
        return ResumePlan(
            answers=(),
            unanswered=(
                Unanswered(
                    where, "paused without an interrupt payload (a breakpoint?): nothing to derive a value from; pass --resume"
                ),
            ),
        )
    results = [rule.answer(i, thread_id, graph_id) for i in interrupts]
    answers = tuple(r for r in results if isinstance(r, Answer))
    unanswered = tuple(r for r in results if isinstance(r, Unanswered))
    if len(interrupts) > 1 and not unanswered and any(i.id is None for i in interrupts):
        reason = f"{len(interrupts)} interrupts are pending but the server gives no interrupt ids to resume them by"
        return ResumePlan(answers=(), unanswered=tuple(Unanswered(i, reason) for i in interrupts))
    if unanswered:
        return ResumePlan(answers=(), unanswered=unanswered)
    return ResumePlan(answers=answers)


class ResumeMapError(ValueError):
    """A ``--resume-map`` that is not a JSON object of (kind, node path or thread id) -> resume value."""


def load_resume_map(texts: Sequence[str]) -> dict[str, Any]:
    """Merge ``--resume-map`` arguments (JSON text, or ``@FILE`` holding it; later wins)."""
    merged: dict[str, Any] = {}
    for text in texts:
        where = "--resume-map"
        if text.startswith("@"):
            where = f"--resume-map {text}"
            try:
                text = Path(text[1:]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ResumeMapError(f"{where}: cannot read the file: {exc}") from None
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ResumeMapError(
                f"{where} must be JSON (an object: kind, node path or thread id -> resume value): {exc}"
            ) from None
        if not isinstance(value, dict):
            raise ResumeMapError(
                f"{where} must be a JSON object (kind, node path or thread id -> resume value), got {type(value).__name__}: "
                f'e.g. {{"plan_approval": {{"kind": "plan_approval", "answer": "approve"}}}}'
            )
        nulls = sorted(k for k, v in value.items() if v is None)
        if nulls:
            raise ResumeMapError(f"{where}: null is not a resume value (kind(s) {', '.join(nulls)})")
        merged.update(value)
    return merged


@dataclass(frozen=True)
class ResumeProblem:
    """Why a staging resume did not prove the thread."""

    code: str
    severity: Literal["block", "warn"]
    message: str
    answers: tuple[Answer, ...] = ()
    """The answers concerned (for the finding's kind)."""


def _describe(answers: Sequence[Answer]) -> str:
    return "; ".join(
        f"{_kind_label(a.interrupt.kind)} at {a.interrupt.path}: {json.dumps(a.value, ensure_ascii=False)} "
        f"({SOURCE_TEXT[a.source]})"
        for a in answers
    )


def judge_resume(plan: ResumePlan, paused_at: Sequence[str], outcome: RunOutcome) -> ResumeProblem | None:
    """None when every paused step ran (or ran and asked another question).

    A value said to answer this interrupt (`TRUSTED_SOURCES`) that is refused or asked
    again blocks: the candidate no longer takes what the live payload documents. A guessed
    value (first option, the ``--resume`` fallback) that is refused or asked again only
    shows that it does not fit: a warning, and the thread is not proven. A step that never
    runs blocks whatever the value.
    """
    answers = plan.answers
    if outcome.refused is not None:
        status, message = outcome.refused
        if status < 500 and not all(a.trusted for a in answers):
            return ResumeProblem(
                STAGING_RESUME_UNANSWERED,
                "warn",
                f"staging refused the resume value ({_describe(answers)}): it does not answer this "
                f"interrupt, so the thread was not proven ({status}: {message[:200]})",
                answers,
            )
        return ResumeProblem(
            STAGING_RESUME_FAILED, "block", f"the resume was refused ({_describe(answers)}): {status}: {message}", answers
        )
    if outcome.error is not None:
        return ResumeProblem(STAGING_RESUME_FAILED, "block", outcome.error, answers)
    after_paths: set[str] = set()
    if outcome.after is not None:
        after_paths = set(pending_paths(outcome.after))
        after = pending_interrupts(outcome.after)
        again = tuple(a for a in answers if asked_again(a, after) is not None)
        if again:
            error = _question_error(asked_again(again[0], after))
            detail = f" ({error})" if error else ""
            if all(a.trusted for a in again):
                return ResumeProblem(
                    STAGING_RESUME_FAILED,
                    "block",
                    f"the candidate did not accept {_describe(again)} and asked the same question again{detail}: "
                    "the live payload (or your --resume-map) says this value answers it",
                    again,
                )
            return ResumeProblem(
                STAGING_RESUME_UNANSWERED,
                "warn",
                f"the graph asked the same question again after {_describe(again)}{detail}: "
                "the value does not answer it, so the thread was not proven",
                again,
            )
    ran_roots = {r.split(":")[0] for r in outcome.ran}
    expected = [p for p in paused_at if p.split(":")[0] in ran_roots]
    if paused_at and not expected:
        # The step ran and asked another question (e.g. a second approval): not lost.
        expected = [p for p in paused_at if p in after_paths]
    if paused_at and not expected:
        return ResumeProblem(
            STAGING_RESUME_FAILED,
            "block",
            f"the resume returned, but the step the thread was paused at ({', '.join(paused_at)}) "
            "never ran: its work would be lost",
            answers,
        )
    return None


def _question_error(interrupt: PendingInterrupt | None) -> str:
    value = interrupt.value if interrupt is not None else None
    error = value.get("error") if isinstance(value, Mapping) else None
    return str(error)[:200] if error else ""


def _kind_label(kind: str | None) -> str:
    return kind if kind is not None else "(no kind)"


@dataclass
class ResumeLedger:
    """The resume side of one replay: which value each interrupt got, the findings, the counts."""

    rule: ResumeRule
    findings: dict[tuple[str, str, str], Finding] = field(default_factory=dict)
    used: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    """(graph, kind, source, value JSON) -> interrupts resumed with it."""
    interrupted: Counter[str] = field(default_factory=Counter)
    resumed: Counter[str] = field(default_factory=Counter)
    proven: Counter[str] = field(default_factory=Counter)

    def _finding(self, code: str, severity: Severity, graph_id: str, node: str, message: str, key: str) -> Finding:
        index = (code, graph_id, f"{node}|{key}")
        if index not in self.findings:
            self.findings[index] = Finding(code=code, severity=severity, graph_id=graph_id, node=node or None, message=message)
        return self.findings[index]

    def plan(self, graph_id: str, thread_id: str, live_state: Mapping[str, Any], paused_at: Sequence[str]) -> ResumePlan:
        """The plan for one interrupted thread, from the *live* state's interrupts (on a broken
        candidate the staging copy may no longer show them). Unanswered ones are reported."""
        self.interrupted[graph_id] += 1
        plan = plan_resume(pending_interrupts(live_state), self.rule, paused_at, thread_id=thread_id, graph_id=graph_id)
        for gap in plan.unanswered:
            kind = _kind_label(gap.interrupt.kind)
            self._finding(
                STAGING_RESUME_UNANSWERED,
                "warn",
                graph_id,
                gap.interrupt.path,
                f"not resumed on staging: threads paused at {gap.interrupt.path} waiting for {kind} "
                f"(e.g. thread {thread_id}): {gap.reason}",
                key=f"{kind}|{gap.reason}",
            ).add_thread(thread_id)
        if plan.answers:
            self.resumed[graph_id] += 1
            for answer in plan.answers:
                value = json.dumps(answer.value, ensure_ascii=False, sort_keys=True)
                self.used[(graph_id, _kind_label(answer.interrupt.kind), answer.source, value)] += 1
        return plan

    def record(self, graph_id: str, thread_id: str, paused_at: Sequence[str], problem: ResumeProblem | None) -> None:
        if problem is None:
            self.proven[graph_id] += 1
            return
        kinds = ",".join(sorted({_kind_label(a.interrupt.kind) for a in problem.answers}))
        key = f"{kinds}|{problem.message}" if problem.code == STAGING_RESUME_UNANSWERED else problem.message
        self._finding(problem.code, problem.severity, graph_id, ",".join(paused_at), problem.message, key).add_thread(thread_id)

    def notes(self) -> list[str]:
        """The rule, then per graph and kind which value was used how often, then per graph
        how many threads were resumed and how many proven."""
        if not self.rule.active:
            return []
        notes = [f"resumed on staging; each interrupt with {_rule_text(self.rule)}"]
        for (graph_id, kind, source, value), count in sorted(self.used.items()):
            notes.append(f"{graph_id} {kind}: {count} interrupt(s) resumed with {value} ({SOURCE_TEXT[source]})")
        for graph_id, total in sorted(self.interrupted.items()):
            notes.append(
                f"{graph_id}: {self.resumed[graph_id]} of {total} interrupted thread(s) resumed on staging; "
                f"the paused step ran on {self.proven[graph_id]}"
            )
        return notes


def _rule_text(rule: ResumeRule) -> str:
    steps = []
    if rule.by_kind:
        steps.append(f"the --resume-map entry for its kind ({', '.join(sorted(rule.by_kind))})")
    if rule.derive:
        steps.append("the value its payload gives (--auto-resume)")
    if rule.fallback is not None:
        steps.append(f"--resume {json.dumps(rule.fallback, ensure_ascii=False)}")
    return ", else ".join(steps)
