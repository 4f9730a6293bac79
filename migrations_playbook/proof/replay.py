"""Staging replay: run the candidate code over a copy of the live threads and compare.

Two ways to get a staging server that holds the live threads:

* ``--persistence DIR``: a local `langgraph dev`'s `.langgraph_api/` folder (or the
  folder holding it) is copied into a temporary working folder, and a candidate
  `langgraph dev` is started there with the candidate's langgraph.json (paths
  made absolute, so nothing is written next to the candidate or the live server).
  A running `langgraph dev` (runtime-inmem 0.36.7) writes that folder every 10
  seconds, but its checkpoints only until the first state read through the API,
  and always on a graceful stop. The replay checks that every copied thread has
  the live thread's latest checkpoint and refuses (exit 2) a stale copy.
* ``--staging-url URL``: a staging deployment restored from a snapshot of production.

For every thread with pending work it compares, live vs staging, the `next`
nodes, the pending task paths and the interrupt payloads
(STAGING_STATE_DIVERGED). When asked to (``--resume``, ``--resume-map``,
``--auto-resume``), it resumes each interrupted thread *on staging only* and
checks that the run succeeds and that the step the thread was paused at
actually runs (STAGING_RESUME_FAILED). The live server is only read.

Each pending interrupt of a thread (read from the *live* state) gets the value
that fits it (`ResumeRule.answer`): the ``--resume-map`` entry for the payload's
``kind``, else (``--auto-resume``) a value the payload itself says
(`derive_from_payload`), else the ``--resume`` fallback. An interrupt none of
these answers, or a fallback the graph refuses or asks again, is reported
(STAGING_RESUME_UNANSWERED, warn) instead of guessed at. Several interrupts on
one thread are resumed with ``{interrupt id: value}``, as ``Command(resume=...)``
takes them.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIError, APIStatusError, NotFoundError

from migrations_playbook.graphcode.candidate import _search_roots, read_config
from migrations_playbook.sources.devserver import DevServer
from migrations_playbook.sources.api import connect, ensure_reachable, live_graph_ids, pending_paths
from migrations_playbook.model import (
    PAUSED_STATUSES,
    STAGING_RESUME_FAILED,
    STAGING_RESUME_UNANSWERED,
    STAGING_STATE_DIVERGED,
    Finding,
    GateReport,
    GraphSummary,
    Severity,
)

_PATH_KEYS = ("path",)


def absolute_config(config_path: Path) -> dict[str, Any]:
    """The candidate config with every relative path made absolute."""
    config_path = config_path.resolve()
    base = config_path.parent
    config = read_config(config_path)

    def fix(spec: Any) -> Any:
        if isinstance(spec, str) and spec.startswith("."):
            location, sep, attr = spec.partition(":")
            return f"{(base / location).resolve()}{sep}{attr}"
        if isinstance(spec, dict):
            return {k: fix(v) if k in _PATH_KEYS or k == "app" else v for k, v in spec.items()}
        return spec

    config["graphs"] = {gid: fix(spec) for gid, spec in config["graphs"].items()}
    config["dependencies"] = [
        str((base / d).resolve()) if isinstance(d, str) and d.startswith(".") else d for d in config.get("dependencies", [])
    ]
    if isinstance(config.get("env"), str):
        config["env"] = str((base / config["env"]).resolve())
    if isinstance(config.get("auth"), dict):
        config["auth"] = fix(config["auth"])
    if isinstance(config.get("http"), dict):
        config["http"] = fix(config["http"])
    return config


SQLITE_FILES = ("*.sqlite", "*.sqlite-wal", "*.sqlite-shm", "*.sqlite-journal")
"""A SQLite checkpointer's files in the persistence folder (graphs/common/persistence.py)."""


def _copy_database(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file another process may be writing (WAL included)."""
    live, copy = sqlite3.connect(source), sqlite3.connect(target)
    try:
        live.backup(copy)
    finally:
        copy.close()
        live.close()


def start_staging(candidate: Path, persistence: Path, stack: ExitStack) -> DevServer:
    """Copy the live persistence folder and serve it with the candidate code."""
    source = persistence / ".langgraph_api" if (persistence / ".langgraph_api").is_dir() else persistence
    if not any(source.glob("*.pckl")):
        raise FileNotFoundError(f"no langgraph dev persistence (*.pckl) in {source}")
    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="playbook-staging-")))
    shutil.copytree(source, workdir / ".langgraph_api", ignore=shutil.ignore_patterns(*SQLITE_FILES))
    for database in source.glob("*.sqlite"):
        _copy_database(database, workdir / ".langgraph_api" / database.name)
    config = absolute_config(candidate)
    (workdir / "langgraph.json").write_text(json.dumps(config, indent=2))
    roots = _search_roots(candidate.resolve(), read_config(candidate.resolve()))
    # A dependency that is itself a package (``./migrations_playbook``) is importable from its
    # parent; first on the path, its modules would shadow the standard library (its http.py).
    roots = [root for root in roots if not (root / "__init__.py").is_file()]
    server = DevServer(
        workdir / "langgraph.json",
        workdir,
        env={"PYTHONPATH": ":".join(str(r) for r in roots)},
    )
    stack.callback(server.stop)
    return server.start()


class StaleCopy(Exception):
    """The staging copy does not hold the live thread's latest checkpoint."""


def _checkpoint_id(state: Mapping[str, Any]) -> str | None:
    checkpoint = state.get("checkpoint") or {}
    return checkpoint.get("checkpoint_id")


def _interrupt_values(state: Mapping[str, Any]) -> list[Any]:
    values: list[Any] = []
    for task in state.get("tasks") or []:
        values.extend(i.get("value") for i in task.get("interrupts") or [])
        nested = task.get("state")
        if isinstance(nested, Mapping) and "tasks" in nested:
            values.extend(_interrupt_values(nested))
    return values


def _view(state: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "next": list(state.get("next") or []),
        "pending": list(pending_paths(state)),
        "interrupts": _interrupt_values(state),
    }


# -- resume values: one per pending interrupt ------------------------------------------

ResumeSource = Literal["--resume-map", "resume_format", "kind+options", "options", "--resume"]
"""Where an interrupt's resume value came from."""

SOURCE_TEXT: dict[str, str] = {
    "--resume-map": "the --resume-map entry for its kind",
    "resume_format": "the payload's resume_format",
    "kind+options": "the payload's kind and first option",
    "options": "the payload's first option",
    "--resume": "the --resume fallback",
}

TRUSTED_SOURCES = frozenset({"--resume-map", "resume_format"})
"""Values said to answer this very interrupt (by the operator, for its kind, or by the payload).
The candidate refusing one is a regression (block); a guessed value (first option, the
blanket fallback) that is refused only shows it does not fit (warn)."""


@dataclass(frozen=True)
class PendingInterrupt:
    """One interrupt a paused thread waits on."""

    path: str
    """Node path of the task that raised it (``triage``, ``review:confirm``)."""
    value: Any
    """The interrupt payload, as the server returns it."""
    id: str | None = None
    """The interrupt id (the key of a ``{id: value}`` resume); None on servers that give none."""

    @property
    def kind(self) -> str | None:
        """The payload's ``kind`` key (what ``--resume-map`` is keyed by), if it is a string."""
        kind = self.value.get("kind") if isinstance(self.value, Mapping) else None
        return kind if isinstance(kind, str) else None


def pending_interrupts(state: Mapping[str, Any], prefix: str = "") -> list[PendingInterrupt]:
    """Every interrupt a thread waits on, once each, at the deepest task path that holds it
    (a subgraph's interrupt is listed on the parent task too, with the same id)."""
    found: dict[Any, PendingInterrupt] = {}
    for index, task in enumerate(state.get("tasks") or []):
        path = prefix + str(task.get("name"))
        nested = task.get("state")
        if isinstance(nested, Mapping) and "tasks" in nested:
            for inner in pending_interrupts(nested, path + ":"):
                found[inner.id or (path, inner.path)] = inner
        for position, entry in enumerate(task.get("interrupts") or []):
            interrupt_id = entry.get("id")
            key = interrupt_id or (path, index, position)
            if key not in found:
                found[key] = PendingInterrupt(path=path, value=entry.get("value"), id=interrupt_id)
    return list(found.values())


def derive_from_payload(payload: Any) -> tuple[Any, ResumeSource] | None:
    """The resume value an interrupt payload itself says, or None when it says none.

    * ``resume_format`` (this repo's typed approvals: an example resume value) is used as is;
    * else ``kind`` and a non-empty ``options`` list -> ``{"kind": kind, "answer": options[0]}``;
    * else a non-empty ``options`` list -> ``options[0]``.
    """
    if not isinstance(payload, Mapping):
        return None
    if payload.get("resume_format") is not None:
        return payload["resume_format"], "resume_format"
    options = payload.get("options")
    if not isinstance(options, list) or not options:
        return None
    kind = payload.get("kind")
    if isinstance(kind, str):
        return {"kind": kind, "answer": options[0]}, "kind+options"
    return options[0], "options"


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


@dataclass(frozen=True)
class ResumeRule:
    """How a staging replay answers interrupts: ``by_kind`` (``--resume-map``), then the
    payload (``derive``, i.e. ``--auto-resume``), then ``fallback`` (``--resume``)."""

    by_kind: Mapping[str, Any] = field(default_factory=dict)
    derive: bool = False
    fallback: Any = None
    """None: no fallback (JSON null is not a resume value, as before)."""

    @property
    def active(self) -> bool:
        """Whether interrupted threads are resumed at all."""
        return bool(self.by_kind) or self.derive or self.fallback is not None

    def answer(self, interrupt: PendingInterrupt) -> Answer | Unanswered:
        kind = interrupt.kind
        if kind is not None and kind in self.by_kind:
            return Answer(interrupt, self.by_kind[kind], "--resume-map")
        if self.derive:
            derived = derive_from_payload(interrupt.value)
            if derived is not None:
                return Answer(interrupt, *derived)
        if self.fallback is not None:
            fallback_kind = self.fallback.get("kind") if isinstance(self.fallback, Mapping) else None
            if kind is None or fallback_kind is None or fallback_kind == kind:
                return Answer(interrupt, self.fallback, "--resume")
        return Unanswered(interrupt, self._why_not(kind))

    def _why_not(self, kind: str | None) -> str:
        tried = []
        if self.by_kind:
            tried.append(
                f"--resume-map has no entry for {kind!r}" if kind is not None else "the payload has no 'kind' for --resume-map"
            )
        if self.derive:
            tried.append("the payload gives no resume_format or options")
        if self.fallback is not None:
            tried.append(f"--resume answers {self.fallback.get('kind')!r}, not {kind!r}")
        if not tried:  # `active` is checked before any answer is asked for
            tried.append("no resume value was given")
        if kind is None:
            hint = "pass --resume: the payload has no 'kind' to key --resume-map by"
        else:
            hint = f"add {json.dumps({kind: '<value>'})} to --resume-map" + ("" if self.derive else " or pass --auto-resume")
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


def plan_resume(interrupts: Sequence[PendingInterrupt], rule: ResumeRule, paused_at: Sequence[str] = ()) -> ResumePlan:
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
    results = [rule.answer(i) for i in interrupts]
    answers = tuple(r for r in results if isinstance(r, Answer))
    unanswered = tuple(r for r in results if isinstance(r, Unanswered))
    if len(interrupts) > 1 and not unanswered and any(i.id is None for i in interrupts):
        reason = f"{len(interrupts)} interrupts are pending but the server gives no interrupt ids to resume them by"
        return ResumePlan(answers=(), unanswered=tuple(Unanswered(i, reason) for i in interrupts))
    if unanswered:
        return ResumePlan(answers=(), unanswered=unanswered)
    return ResumePlan(answers=answers)


class ResumeMapError(ValueError):
    """A ``--resume-map`` that is not a JSON object of kind -> resume value."""


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
            raise ResumeMapError(f"{where} must be JSON (an object: kind -> resume value): {exc}") from None
        if not isinstance(value, dict):
            raise ResumeMapError(
                f"{where} must be a JSON object (kind -> resume value), got {type(value).__name__}: "
                f'e.g. {{"plan_approval": {{"kind": "plan_approval", "answer": "approve"}}}}'
            )
        nulls = sorted(k for k, v in value.items() if v is None)
        if nulls:
            raise ResumeMapError(f"{where}: null is not a resume value (kind(s) {', '.join(nulls)})")
        merged.update(value)
    return merged


def _question(value: Any) -> Any:
    """An interrupt payload without the ``error`` a re-ask adds (this repo's approvals do)."""
    if isinstance(value, Mapping):
        return {k: v for k, v in value.items() if k != "error"}
    return value


QUESTION_KEYS = ("kind", "question", "options")
"""What makes two payloads the same question when both carry a ``kind``: a question asked
again by another node (a moved thread) is built afresh, so its timestamps (``requested_at``)
and its own node name (``resume_at``) may differ while it asks the user the same thing."""


def same_question(a: Any, b: Any) -> bool:
    """``a`` and ``b`` ask the user the same thing: equal on `QUESTION_KEYS` when both are
    payloads with a string ``kind``, else equal but for an ``error`` key."""
    if isinstance(a, Mapping) and isinstance(b, Mapping) and isinstance(a.get("kind"), str):
        return all(a.get(k) == b.get(k) for k in QUESTION_KEYS)
    same: bool = _question(a) == _question(b)
    return same


def asked_again(answer: Answer, after: Sequence[PendingInterrupt]) -> PendingInterrupt | None:
    """The interrupt that asks ``answer``'s question again after the resume, if one does:
    same path, same payload but for an ``error`` key. (A node that asks the very same
    question twice on purpose looks the same; that is rare and errs towards a report.)"""
    for interrupt in after:
        if interrupt.path == answer.interrupt.path and _question(interrupt.value) == _question(answer.interrupt.value):
            return interrupt
    return None


@dataclass(frozen=True)
class ResumeProblem:
    """Why a staging resume did not prove the thread."""

    code: str
    severity: Literal["block", "warn"]
    message: str
    answers: tuple[Answer, ...] = ()
    """The answers concerned (for the finding's kind)."""


@dataclass(frozen=True)
class RunOutcome:
    """What one resumed run on staging showed (collected by `_resume_on_staging`)."""

    ran: frozenset[str] = frozenset()
    """Node paths that streamed an update (``__interrupt__`` when the run paused again)."""
    refused: tuple[int, str] | None = None
    """HTTP status and message when staging refused the run request."""
    error: str | None = None
    """The run failed (an ``error`` event), or the request failed without a 4xx."""
    after: Mapping[str, Any] | None = None
    """The staging state after a run that paused again."""


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


async def _resume_on_staging(staging: LangGraphClient, thread_id: str, graph_id: str, plan: ResumePlan) -> RunOutcome:
    """Resume one staging thread with the plan's value(s) and collect what the run showed."""
    ran: set[str] = set()
    try:
        async for part in staging.runs.stream(
            thread_id, graph_id, command={"resume": plan.resume}, stream_mode="updates", stream_subgraphs=True
        ):
            if part.event == "error":
                return RunOutcome(ran=frozenset(ran), error=f"the resumed run failed: {part.data}")
            if part.event.startswith("updates") and isinstance(part.data, dict):
                namespace = part.event.partition("|")[2]
                prefix = ":".join(seg.split(":")[0] for seg in namespace.split("|") if seg)
                ran.update(f"{prefix}:{node}" if prefix else node for node in part.data)
    except APIStatusError as exc:
        return RunOutcome(refused=(exc.status_code, str(exc)))
    except APIError as exc:
        return RunOutcome(error=f"the resume was refused: {exc}")
    after = await staging.threads.get_state(thread_id, subgraphs=True) if "__interrupt__" in ran else None
    return RunOutcome(ran=frozenset(ran), after=after)


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
        plan = plan_resume(pending_interrupts(live_state), self.rule, paused_at)
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


def record_divergence(
    findings: dict[tuple[str, str, str], Finding],
    graph_id: str,
    thread_id: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
) -> None:
    """STAGING_STATE_DIVERGED for a paused thread whose live and staging views (`_view`) differ,
    aggregated in ``findings`` per graph, pending node and changed parts."""
    if before == after:
        return
    changed = [k for k in before if before[k] != after[k]]
    node = ",".join(before["pending"])
    key = (STAGING_STATE_DIVERGED, graph_id, f"{node}|{','.join(changed)}")
    if key not in findings:
        findings[key] = Finding(
            code=STAGING_STATE_DIVERGED,
            severity="block",
            graph_id=graph_id,
            node=node or None,
            message=f"under the candidate, threads paused at {node or '-'} show different "
            f"{', '.join(changed)} (e.g. thread {thread_id}: live "
            f"{json.dumps({k: before[k] for k in changed}, ensure_ascii=False)[:200]} vs staging "
            f"{json.dumps({k: after[k] for k in changed}, ensure_ascii=False)[:200]})",
        )
    findings[key].add_thread(thread_id)


async def replay(
    *,
    live_url: str,
    staging_url: str,
    candidate: str,
    graph_ids: list[str],
    resume: Any | None = None,
    headers: Mapping[str, str],
    rule: ResumeRule | None = None,
    repaired: frozenset[str] = frozenset(),
) -> GateReport:
    """Compare every paused live thread with its staging copy; resume it there when ``rule``
    (or the plain ``resume`` fallback, as before) says how. Threads in ``repaired`` were
    changed on staging by a migration plan (``replay --plan``, `replay_plan.py`): their staging
    head is the plan's new checkpoint, so they are counted but judged by the plan's proof."""
    rule = rule if rule is not None else ResumeRule(fallback=resume)
    ledger = ResumeLedger(rule)
    findings: dict[tuple[str, str, str], Finding] = {}
    summaries: dict[str, GraphSummary] = {}

    async with AsyncExitStack() as stack:
        live = connect(live_url, headers)
        stack.push_async_callback(live.aclose)
        staging = connect(staging_url, headers)
        stack.push_async_callback(staging.aclose)
        await ensure_reachable(live, live_url)
        await ensure_reachable(staging, staging_url)
        assistants = await live_graph_ids(live)
        for graph_id in graph_ids or sorted(assistants):
            summary = summaries.setdefault(graph_id, GraphSummary())
            for status in sorted(PAUSED_STATUSES):
                offset = 0
                while True:
                    page = await live.threads.search(
                        metadata={"graph_id": graph_id},
                        status=status,
                        limit=200,
                        offset=offset,
                        select=["thread_id", "status"],
                    )
                    for thread in page:
                        thread_id = thread["thread_id"]
                        summary.threads_scanned += 1
                        summary.by_status[status] = summary.by_status.get(status, 0) + 1
                        if thread_id in repaired:
                            continue
                        live_state = await live.threads.get_state(thread_id, subgraphs=True)
                        staging_state: Mapping[str, Any]
                        try:
                            staging_state = await staging.threads.get_state(thread_id, subgraphs=True)
                        except NotFoundError:
                            staging_state = {}
                        if _checkpoint_id(staging_state) != _checkpoint_id(live_state):
                            raise StaleCopy(
                                f"staging does not hold thread {thread_id}'s latest checkpoint "
                                f"(live {_checkpoint_id(live_state)}, staging {_checkpoint_id(staging_state)}): "
                                "the copy is older than the live state. `langgraph dev` may keep checkpoints "
                                "in memory until a graceful stop: stop it with Ctrl+C (SIGINT), start it again, "
                                "and rerun the replay"
                            )
                        before, after = _view(live_state), _view(staging_state)
                        record_divergence(findings, graph_id, thread_id, before, after)
                        if rule.active and status == "interrupted":
                            plan = ledger.plan(graph_id, thread_id, live_state, before["pending"])
                            if plan.answers:
                                outcome = await _resume_on_staging(staging, thread_id, graph_id, plan)
                                ledger.record(
                                    graph_id, thread_id, before["pending"], judge_resume(plan, before["pending"], outcome)
                                )
                    if len(page) < 200:
                        break
                    offset += len(page)
    return GateReport(
        command="replay",
        live_url=live_url,
        candidate=candidate,
        strict=False,
        graphs=summaries,
        findings=sorted([*findings.values(), *ledger.findings.values()], key=lambda f: (f.graph_id, f.code, f.node or "")),
        notes=[f"staging server {staging_url}", *ledger.notes()],
    )
