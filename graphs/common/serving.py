"""How each graph is served: its multitask strategy, and which run requests it refuses.

Agent Server has no per-graph default for ``multitask_strategy`` (an omitted
strategy is ``enqueue``), and it does not validate a run's input against the
graph's input schema before the run starts. So the custom auth handler for run
creation (`graphs/common/auth.py`) applies the checks below *before* the run is
inserted: a refused request gets a 4xx with a message, and nothing about the
thread changes (no run, no checkpoint, no status change).

Strategies (seed 004: duplicate-run prevention):

* ``reject`` for approval flows (`ticket_triage`): a second run on a busy thread
  is a 409, whatever strategy the client sent. Two answers to one approval must
  never both run.
* ``enqueue`` for chat graphs: a second message on a busy thread waits its turn;
  none is lost, none runs twice.
* ``interrupt`` and ``rollback`` are refused (422) for every graph here: a run is
  stopped only by ``runs.cancel``, never as a side effect of another request.

Everything here is pure except `load`, which imports the graph code named by a
policy (the server has already imported it).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

Strategy = Literal["reject", "enqueue"]
"""The multitask strategies a graph can be served with here."""

MAX_MESSAGE_CHARS_ENV = "MAX_MESSAGE_CHARS"
DEFAULT_MAX_MESSAGE_CHARS = 8000
"""Longest message text a run accepts (characters); longer is a 413."""

REFUSED_STRATEGIES = frozenset({"interrupt", "rollback"})
"""Client strategies refused for every graph (they cancel the run in flight)."""

MESSAGE_ROLES = frozenset({"user", "human", "assistant", "ai", "system", "tool", "function", "developer"})
"""Roles (or types) `add_messages` understands in a message dict."""

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
    "ticket_triage": _repo_graph(
        "ticket_triage", "reject", resume_parser="graphs.ticket_triage.approvals:parse_resume"
    ),
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


def _text_length(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for block in content:
            if isinstance(block, str):
                total += len(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                total += len(block["text"])
        return total
    return 0


def _check_message(index: int, message: Any, limit: int) -> None:
    where = f"input.messages[{index}]"
    if isinstance(message, str):
        content: Any = message
    elif isinstance(message, Mapping):
        role = message.get("role", message.get("type"))
        if not isinstance(role, str) or role not in MESSAGE_ROLES:
            raise RunRefused(422, f"{where} needs a 'role' (user, assistant, ...), got {role!r}")
        if "content" not in message:
            raise RunRefused(422, f"{where} has no 'content'")
        content = message["content"]
        if not isinstance(content, (str, list)):
            raise RunRefused(
                422, f"{where}.content must be a string or a list of content blocks, got {type(content).__name__}"
            )
    else:
        raise RunRefused(
            422, f"{where} must be a message object like {{'role': 'user', 'content': '...'}}, "
            f"got {type(message).__name__}"
        )
    length = _text_length(content)
    if length > limit:
        raise RunRefused(
            413,
            f"{where} has {length} characters; the limit is {limit} ({MAX_MESSAGE_CHARS_ENV}). "
            "Split the text or send a file reference.",
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
    if not isinstance(messages, list):
        raise RunRefused(
            422, f"{graph_id} input.messages must be a list of messages, got {type(messages).__name__}"
        )
    if not messages:
        raise RunRefused(422, f"{graph_id} input.messages is empty: send at least one message")
    for index, message in enumerate(messages):
        _check_message(index, message, limit)


def check_not_busy(graph_id: str, policy: GraphPolicy, thread_id: str, status: str | None) -> None:
    """Approval flows refuse a run while another is pending or running on the thread."""
    if policy.multitask_strategy == "reject" and status == "busy":
        raise RunRefused(409, BUSY_MESSAGE.format(thread_id=thread_id, graph_id=graph_id))


def pending_interrupts(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The interrupts a thread waits on (``get_state`` shape), with their ids and values."""
    found = []
    for task in state.get("tasks") or []:
        found.extend(task.get("interrupts") or [])
    return found


def check_resume(
    graph_id: str, policy: GraphPolicy, thread_id: str, resume: Any, pending: Sequence[Mapping[str, Any]]
) -> None:
    """Refuse a resume that does not answer the thread's pending interrupt(s).

    ``resume`` is either one value (one interrupt pending) or a map from
    interrupt id to value, as `Command(resume=...)` takes them.
    """
    if policy.resume_parser is None:
        return
    if not pending:
        raise RunRefused(409, f"thread {thread_id} is not waiting for an answer: there is nothing to resume")
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
            raise RunRefused(422, f"resume refused, the thread was left as it was: {exc}") from None
