"""How each graph is served: its multitask strategy, and which run requests it refuses.

Agent Server has no per-graph default for ``multitask_strategy`` (an omitted
strategy is ``enqueue``), and it does not validate a run's input against the
graph's input schema before the run starts. So the custom auth handler for run
creation (`server/auth.py`) applies the checks below *before* the run is
inserted: a refused request gets a 4xx with a message, and nothing about the
thread changes (no run, no checkpoint, no status change).

A thread belongs to the graph it first ran (the ``metadata.graph_id`` the server
writes on the thread's first run): a run on it through another graph's assistant
is a 409, so the thread's own graph's policy applies to every run on it.

Strategies (seed 004: duplicate-run prevention):

* ``reject`` for approval flows (`ticket_triage`): a second run on a busy thread
  is a 409, whatever strategy the client sent. Two answers to one approval must
  never both run. The server's own atomic check covers only a client that sends
  ``reject`` (a value the auth handler changes is not used for the insert), so
  the run handler serializes admissions per thread (`server/auth.py`).
* While an approval is pending, an approval flow accepts only a resume that
  answers it: a new message (or any other run) is a 409 naming the pending kind,
  never a silent replacement of the approval.
* ``enqueue`` for chat graphs: a second message on a busy thread waits its turn;
  none is lost, none runs twice.
* An approval is executed at most once: an approval flow refuses a resume at an explicit
  ``checkpoint_id`` (409); the pending approval is answered at the thread's head.
* ``interrupt`` and ``rollback`` are refused (422) for every graph here: a run is
  stopped only by ``runs.cancel``, never as a side effect of another request.

Everything here is pure except `load`, which imports the graph code named by a
policy (the server has already imported it).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from server import payloads

Strategy = Literal["reject", "enqueue"]
"""The multitask strategies a graph can be served with here."""

MAX_MESSAGE_CHARS_ENV = "MAX_MESSAGE_CHARS"
DEFAULT_MAX_MESSAGE_CHARS = 8000
"""Longest message text a run accepts (characters); longer is a 413."""

REFUSED_STRATEGIES = frozenset({"interrupt", "rollback"})
"""Client strategies refused for every graph (they cancel the run in flight)."""

FOREIGN_GRAPH_MESSAGE = (
    "thread {thread_id} belongs to {thread_graph} (the graph it first ran); a run on it through "
    "a {graph_id} assistant is refused and nothing on the thread changed. Run it with a "
    "{thread_graph} assistant (assistant_id '{thread_graph}'), or start a new thread for {graph_id}."
)

PENDING_MESSAGE = (
    "thread {thread_id} waits for an answer to {kinds}; {graph_id} accepts only a resume that "
    "answers it while it is pending, so this run was refused and the approval is still pending. "
    "Answer it with command={{'resume': {example}}}, or start a new thread for a new {graph_id} request."
)

RESUME_AT_CHECKPOINT_MESSAGE = (
    "thread {thread_id}: {graph_id} answers an approval only where the thread waits for it, at its latest "
    "checkpoint, so a resume with a checkpoint_id is refused and nothing on the thread changed (at an earlier "
    "checkpoint it would execute an approval that was already answered a second time). Send the resume without "
    "checkpoint_id; threads.get_state shows what is pending."
)

BUSY_MESSAGE = (
    "thread {thread_id} is already running a {graph_id} run; {graph_id} refuses a second run "
    "while one is in flight (multitask strategy 'reject'). Wait for it to finish, or cancel it "
    "with runs.cancel."
)


@dataclass(frozen=True, kw_only=True)
class GraphPolicy:
    """How one graph id is served."""

    multitask_strategy: Strategy
    """``reject`` (approval flows) or ``enqueue`` (chat)."""
    builder: str | None = None
    """``module:attribute`` of the graph's `StateGraph`; its ``input_schema`` says
    which input keys a run may send. None: input keys are not checked."""
    flow_version: str | None = None
    """``module:attribute`` of the flow version new threads are stamped with."""
    resume_parser: str | None = None
    """``module:function(value, pending) -> Any`` raising `ValueError` for a resume
    that does not answer the thread's pending interrupt(s). None: resumes are not checked."""


def _repo_graph(graph_id: str, strategy: Strategy, **more: str) -> GraphPolicy:
    """The policy of a graph of this repo (``graphs/<id>/graph.py`` and ``state.py``)."""
    return GraphPolicy(
        multitask_strategy=strategy,
        builder=f"graphs.{graph_id}.graph:builder",
        flow_version=f"graphs.{graph_id}.state:CURRENT_FLOW_VERSION",
        **more,
    )


GRAPH_POLICIES: Mapping[str, GraphPolicy] = {
    "ticket_triage": _repo_graph("ticket_triage", "reject", resume_parser="graphs.ticket_triage.approvals:parse_resume"),
    "fan_room": _repo_graph("fan_room", "enqueue"),
    "recycling_guide": _repo_graph("recycling_guide", "enqueue"),
    "campus_supervisor": _repo_graph("campus_supervisor", "enqueue"),
}
"""This repo's graphs (a unit test keeps it in step with langgraph.json)."""

DEFAULT_POLICY = GraphPolicy(multitask_strategy="enqueue")
"""For graph ids not in the table: chat-like, no schema checks."""


class RunRefused(Exception):
    """A run request refused before anything is written: HTTP ``status`` with ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@cache
def load(path: str) -> Any:
    """The object at ``module:attribute``."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def max_message_chars(environ: Mapping[str, str] | None = None) -> int:
    """``$MAX_MESSAGE_CHARS`` or the default; a malformed value is a configuration error."""
    raw = (os.environ if environ is None else environ).get(MAX_MESSAGE_CHARS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_MESSAGE_CHARS
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{MAX_MESSAGE_CHARS_ENV} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{MAX_MESSAGE_CHARS_ENV} must be a positive integer, got {raw!r}")
    return value


def input_keys(policy: GraphPolicy) -> frozenset[str] | None:
    """The keys the graph's input schema declares (None when unknown)."""
    if policy.builder is None:
        return None
    schema = load(policy.builder).input_schema
    keys = getattr(schema, "__required_keys__", None)
    if keys is not None:  # TypedDict
        return frozenset(keys) | frozenset(schema.__optional_keys__)
    fields = getattr(schema, "model_fields", None)  # pydantic
    return frozenset(fields) if fields is not None else None


def current_flow_version(policy: GraphPolicy) -> int | None:
    return load(policy.flow_version) if policy.flow_version else None


# -- checks ---------------------------------------------------------------------------


def policy_for(graph_id: str, policies: Mapping[str, GraphPolicy] = GRAPH_POLICIES) -> GraphPolicy:
    return policies.get(graph_id, DEFAULT_POLICY)


def check_strategy(graph_id: str, policy: GraphPolicy, requested: str | None) -> None:
    """Refuse the strategies that would cancel a run in flight."""
    if requested in REFUSED_STRATEGIES:
        raise RunRefused(
            422,
            f"multitask_strategy {requested!r} is not served here: it would cancel the run in flight. "
            f"{graph_id} uses {policy.multitask_strategy!r}; stop a run with runs.cancel.",
        )


def check_input(graph_id: str, policy: GraphPolicy, value: Any, *, limit: int) -> None:
    """Refuse a run input that cannot start a turn of ``graph_id``. ``None`` (no input) passes."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise RunRefused(422, f"{graph_id} input must be an object like {{'messages': [...]}}, got {type(value).__name__}")
    keys = input_keys(policy)
    if keys is not None:
        unknown = sorted(set(value) - keys)
        if unknown:
            raise RunRefused(
                422, f"{graph_id} input has unknown field(s) {', '.join(unknown)}; it accepts: {', '.join(sorted(keys))}"
            )
    if "messages" not in value:
        if keys is not None and "messages" in keys:
            raise RunRefused(422, f"{graph_id} input needs 'messages': a non-empty list of messages")
        return
    messages = value["messages"]
    with _refusals():
        payloads.check_messages("input.messages", messages, payloads.limits(limit))


@contextmanager
def _refusals() -> Iterator[None]:
    """A `payloads.Refused` becomes the `RunRefused` the run handler answers with."""
    try:
        yield
    except payloads.Refused as exc:
        raise RunRefused(exc.status, exc.message) from None


def graph_shape(graph_id: str, policy: GraphPolicy) -> payloads.GraphShape | None:
    """The nodes and state fields of the graph (None when the policy names no builder)."""
    return payloads.GraphShape.from_builder(graph_id, load(policy.builder)) if policy.builder else None


def check_command(
    graph_id: str,
    policy: GraphPolicy,
    command: Any,
    thread: Mapping[str, Any] | None,
    *,
    limit: int,
    config: Mapping[str, Any] | None = None,
) -> None:
    """Refuse a run ``command`` whose ``update``, ``goto`` or ``resume`` the thread cannot take
    (`server/payloads.py`): 422, 413, or 409 for a resume of a thread that waits for
    nothing. A graph with a ``resume_parser`` checks its resumes itself (`check_resume`) and
    refuses a resume at an explicit ``checkpoint_id`` (409): an earlier checkpoint still holds
    the approval it asked, answered since, and resuming there would execute it again (issue 26,
    found by the run-lifecycle state machine). Elsewhere a resume at an explicit
    ``checkpoint_id`` is left to the server."""
    shape = graph_shape(graph_id, policy)
    if command is None or shape is None:
        return
    at_checkpoint = bool(((config or {}).get("configurable") or {}).get("checkpoint_id"))
    resumes = isinstance(command, Mapping) and "resume" in command
    if at_checkpoint and thread is not None and policy.resume_parser is not None and resumes:
        raise RunRefused(409, RESUME_AT_CHECKPOINT_MESSAGE.format(thread_id=(thread or {}).get("thread_id"), graph_id=graph_id))
    waits = None  # no thread the caller can see: the server answers (404), as for any run on it
    if thread is not None and policy.resume_parser is None and not at_checkpoint:
        waits = thread.get("status") == "interrupted" or bool(thread.get("interrupts"))
    with _refusals():
        payloads.check_command(command, shape, payloads.limits(limit), waits=waits)


def check_thread_graph(graph_id: str, thread_id: str, thread_graph: Any) -> None:
    """Refuse a run through another graph than the one the thread belongs to.

    ``thread_graph`` is the thread's ``metadata.graph_id``: written by the server on
    the thread's first run, absent on a thread that never ran (any graph may start it).
    """
    if thread_graph is not None and thread_graph != graph_id:
        raise RunRefused(409, FOREIGN_GRAPH_MESSAGE.format(thread_id=thread_id, thread_graph=thread_graph, graph_id=graph_id))


def check_not_busy(graph_id: str, policy: GraphPolicy, thread_id: str, status: str | None) -> None:
    """Approval flows refuse a run while another is pending or running on the thread."""
    if policy.multitask_strategy == "reject" and status == "busy":
        raise RunRefused(409, BUSY_MESSAGE.format(thread_id=thread_id, graph_id=graph_id))


def pending_interrupts(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The interrupts a thread waits on (``get_state`` shape), with their ids and values."""
    found: list[Mapping[str, Any]] = []
    for task in state.get("tasks") or []:
        found.extend(task.get("interrupts") or [])
    return found


def check_resume(graph_id: str, policy: GraphPolicy, thread_id: str, resume: Any, pending: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a resume that does not answer the thread's pending interrupt(s).

    ``resume`` is either one value (one interrupt pending) or a map from
    interrupt id to value, as `Command(resume=...)` takes them.
    """
    if policy.resume_parser is None:
        return
    if not pending:
        raise RunRefused(
            409,
            f"thread {thread_id} is not waiting for an answer: there is nothing to resume (an approval "
            "may have been answered already; threads.get_state shows what it recorded). "
            "Send input={'messages': [...]} to start a new turn.",
        )
    parse = load(policy.resume_parser)
    by_id = {p.get("id"): p for p in pending}
    if isinstance(resume, Mapping) and resume and all(key in by_id for key in resume):
        answers = [(by_id[key], value) for key, value in resume.items()]
    else:
        answers = [(p, resume) for p in pending]
    for interrupt, value in answers:
        payload = interrupt.get("value")
        try:
            parse(value, [payload] if isinstance(payload, Mapping) else [])
        except (ValueError, TypeError, KeyError) as exc:
            example = payload.get("resume_format") if isinstance(payload, Mapping) else None
            hint = f" Send command={{'resume': {dict(example)}}} with one of its options." if isinstance(example, Mapping) else ""
            raise RunRefused(422, f"resume refused, the thread was left as it was: {exc}.{hint}") from None


def check_nothing_pending(graph_id: str, policy: GraphPolicy, thread_id: str, pending: Sequence[Mapping[str, Any]]) -> None:
    """Approval flows refuse a run that is not a resume while an approval is pending.

    A new message would start the graph over and replace the pending approval with a
    new interrupt; ``goto`` or ``update`` would step around it. Seed 004: never silently.
    """
    if policy.resume_parser is None or not pending:
        return
    asked = [p.get("value") for p in {p.get("id"): p for p in pending}.values()]  # once per interrupt id
    kinds = [str(v.get("kind")) if isinstance(v, Mapping) else "an interrupt" for v in asked]
    example = next(
        (v["resume_format"] for v in asked if isinstance(v, Mapping) and isinstance(v.get("resume_format"), Mapping)),
        {"kind": kinds[0], "answer": "..."},
    )
    raise RunRefused(
        409,
        PENDING_MESSAGE.format(thread_id=thread_id, kinds=", ".join(kinds), graph_id=graph_id, example=dict(example)),
    )
