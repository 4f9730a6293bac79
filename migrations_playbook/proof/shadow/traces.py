"""What one side of the shadow proof did to one thread: the runs it was asked for and what each showed.

`playbook shadow` (`proof/shadow/run.py`) drives the same threads on two copies of the live data, one
served by the deployed code (side A, run twice to learn what varies between runs of the same code)
and one by the candidate (side B). Every side records the same `ThreadTrace` for every thread it
drives, whatever runs it (an Agent Server through langgraph-sdk, or the graphs compiled in-process on
a copy of a checkpointer), from the run's event streams (``tasks``, ``custom``, with subgraphs):

* the run requests, in order (`RunRequest`): which the leader (side A) decided from what it saw, and
  the followers (A2, B) replay verbatim, so both sides are driven identically;
* per run: refused or failed, every task that finished (path, name, result, error, the questions it
  asked), the custom events, and where the thread rests afterwards (status, ``next``, the questions
  pending);
* after the last run: the thread's values (and its subgraphs' values), and whether it still exists.

`TraceRecorder.feed` turns stream parts into a `RunTrace`; the rest is plain data with JSON round
trips (the in-process side runs in a subprocess and hands its traces back as JSON). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

RequestKind = Literal["resume", "continue", "rerun", "turn", "retry", "held", "cron"]
"""``resume``: answer the pending questions; ``continue``: a run with no input (a breakpoint, pending
tasks or sends); ``rerun``: the last turn again from the checkpoint before it, with its recorded
input; ``turn``: a next turn from the thread's head as it was; ``retry``: a thread whose last run failed,
run again with no input from its head, as a client retries it (`retry.py`); ``held``: a run the live server
holds (queued or delayed), sent with its stored request; ``cron``: a cron's stored payload, fired once
(`held_runs.py`)."""


@dataclass(frozen=True)
class RunRequest:
    """One run, exactly as every side sends it."""

    kind: RequestKind
    assistant_id: str
    """The assistant the thread last ran with (an Agent Server), else the graph id."""
    input: Any = None
    resume: Any = None
    """The ``Command(resume=...)`` value (kind ``resume``)."""
    checkpoint_id: str | None = None
    """Run from this checkpoint (``rerun``: the one before the last turn; ``turn``: the head before the proof)."""
    context: Mapping[str, Any] | None = None
    """The run-level context the thread's last run had."""
    why: str = ""
    """How the value was chosen (for the report)."""
    extra: Mapping[str, Any] | None = None
    """More of the run's own request, sent as it is (``held``, ``cron``: the stored command, config,
    interrupt settings and multitask strategy)."""

    @property
    def label(self) -> str:
        """The kind, and for work the live data held (a held run, a cron, a retry) what it was: findings name it."""
        return f"{self.kind}: {self.why}" if self.kind in ("held", "cron", "retry") and self.why else self.kind

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRequest:
        return cls(
            kind=data["kind"],
            assistant_id=str(data["assistant_id"]),
            input=data.get("input"),
            resume=data.get("resume"),
            checkpoint_id=data.get("checkpoint_id"),
            context=data.get("context"),
            why=str(data.get("why") or ""),
            extra=data.get("extra"),
        )


@dataclass
class TaskRun:
    """One task that finished in a run."""

    path: str
    """The task's place: its name, under its parent subgraph tasks' names (``review:confirm``)."""
    error: str | None = None
    result: Any = None
    """What the task wrote (the ``tasks`` stream's result)."""
    interrupts: list[Any] = field(default_factory=list)
    """The values of the questions it asked."""


@dataclass
class RunTrace:
    """What one run showed."""

    request: RunRequest
    refused: str | None = None
    """The server refused the run request (status and message)."""
    error: str | None = None
    """The run failed (``Type: message``)."""
    tasks: list[TaskRun] = field(default_factory=list)
    custom: list[Any] = field(default_factory=list)
    status: str | None = None
    """The thread's status after the run."""
    next: list[str] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)
    """The values of the questions pending after the run."""
    output: Any = None
    """What a client reading the run gets: its last ``values`` event at the root (the graph's output schema)."""

    @property
    def failed(self) -> str | None:
        return self.refused or self.error

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["request"] = self.request.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunTrace:
        return cls(
            request=RunRequest.from_json(data["request"]),
            refused=data.get("refused"),
            error=data.get("error"),
            tasks=[TaskRun(**t) for t in data.get("tasks") or []],
            custom=list(data.get("custom") or []),
            status=data.get("status"),
            next=list(data.get("next") or []),
            pending=list(data.get("pending") or []),
            output=data.get("output"),
        )


@dataclass
class ThreadTrace:
    """Everything one side did to one thread."""

    thread_id: str
    graph_id: str
    present: bool = True
    """The side's copy held the thread before the proof ran."""
    runs: list[RunTrace] = field(default_factory=list)
    values: Any = None
    """The thread's values after the last run."""
    nested: dict[str, Any] = field(default_factory=dict)
    """Pending subgraph task name -> its values, after the last run."""
    exists: bool = True
    """The thread still exists after the proof."""
    unreadable: str | None = None
    """Why the side could not read the thread's state (the server's error)."""
    skipped: str | None = None
    """Why the leader sent no run (e.g. no answer fits the pending question)."""
    start_checkpoint: str | None = None
    """The checkpoint the side's copy held for the thread before the proof (the copy's freshness)."""
    pending_before: list[Any] = field(default_factory=list)
    """The values of the questions pending before the proof (what the first run answers)."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["runs"] = [r.to_json() for r in self.runs]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ThreadTrace:
        fields = {
            k: data[k]
            for k in (
                "thread_id",
                "graph_id",
                "present",
                "values",
                "nested",
                "exists",
                "unreadable",
                "skipped",
                "start_checkpoint",
            )
            if k in data
        }
        return cls(**fields, runs=[RunTrace.from_json(r) for r in data.get("runs") or []])


@dataclass
class SideTrace:
    """One side's proof: a trace per thread, and the long-term store's items afterwards."""

    label: str
    threads: dict[str, ThreadTrace] = field(default_factory=dict)
    store: dict[str, Any] | None = None
    """``namespace/key`` -> value of every store item after the proof (None: the side has no store)."""
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "threads": {k: v.to_json() for k, v in self.threads.items()},
            "store": self.store,
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SideTrace:
        return cls(
            label=str(data.get("label") or ""),
            threads={k: ThreadTrace.from_json(v) for k, v in (data.get("threads") or {}).items()},
            store=data.get("store"),
            notes=list(data.get("notes") or []),
        )


STREAM_MODES = ["tasks", "custom", "values"]
"""What every side streams of a run: finished tasks (writes, errors, questions), custom events, and the values
a client reads (the last root ``values`` event is the run's output)."""

VARIANT_MARK = "#answer-"
"""Between a thread id and the number of an answer variant in a trace key (`variant_key`)."""


def variant_key(thread_id: str, number: int) -> str:
    """The trace key of a thread's ``number``-th answer variant (driven on a copy of the thread)."""
    return f"{thread_id}{VARIANT_MARK}{number}"


def base_of(key: str) -> str:
    """The thread id a trace key belongs to (itself, or the thread an answer variant copied)."""
    return key.split(VARIANT_MARK, 1)[0]


def task_path(namespace: Sequence[str], name: str) -> str:
    """``review:confirm`` from a namespace (``("review:<task id>",)``) and a task name."""
    return ":".join([*(segment.split(":")[0] for segment in namespace if segment), name])


class TraceRecorder:
    """Builds one `RunTrace` from the parts of the run's stream (`STREAM_MODES`, subgraphs on)."""

    def __init__(self, request: RunRequest) -> None:
        self.trace = RunTrace(request=request)
        self._asked: set[str] = set()
        """Ids of the questions already recorded: an interrupt inside a subgraph is reported again by every
        enclosing task; it is one question, kept where it was asked first (the innermost task)."""

    def feed(self, mode: str, namespace: Sequence[str], data: Any) -> None:
        """One stream part: ``mode`` (``tasks``, ``custom``, ``error``, ...), its namespace, its payload."""
        if mode == "error":
            if isinstance(data, Mapping):
                self.trace.error = f"{data.get('error', 'Error')}: {data.get('message', '')}"
            else:
                self.trace.error = str(data)
        elif mode == "custom":
            self.trace.custom.append(data)
        elif mode == "values" and not any(namespace):
            self.trace.output = data
        elif mode == "tasks" and isinstance(data, Mapping) and "triggers" not in data and "name" in data:
            error = data.get("error")
            self.trace.tasks.append(
                TaskRun(
                    path=task_path(namespace, str(data["name"])),
                    error=None if error is None else str(error)[:500],
                    result=data.get("result"),
                    interrupts=_new_questions(data.get("interrupts") or [], self._asked),
                )
            )

    def failed(self, message: str) -> None:
        """The run raised (in-process) or its request failed without a refusal."""
        self.trace.error = message

    def refused(self, message: str) -> None:
        self.trace.refused = message

    def rest(self, status: str | None, state: Mapping[str, Any] | None) -> RunTrace:
        """Where the thread rests after the run (``get_state`` shape): the finished trace."""
        self.trace.status = status
        if state is not None:
            self.trace.next = list(state.get("next") or [])
            self.trace.pending = pending_questions(state)
        return self.trace


def _interrupt_id(interrupt: Any) -> str | None:
    found = interrupt.get("id") if isinstance(interrupt, Mapping) else getattr(interrupt, "id", None)
    return None if found is None else str(found)


def _new_questions(interrupts: Sequence[Any], seen: set[str]) -> list[Any]:
    """The values of ``interrupts`` not seen before (by id; one without an id is always new)."""
    values = []
    for interrupt in interrupts:
        found = _interrupt_id(interrupt)
        if found is not None:
            if found in seen:
                continue
            seen.add(found)
        values.append(interrupt.get("value") if isinstance(interrupt, Mapping) else interrupt)
    return values


def pending_questions(state: Mapping[str, Any], seen: set[str] | None = None) -> list[Any]:
    """The values of every question pending in a ``get_state(subgraphs=True)`` answer, subgraphs included: each
    once (a subgraph's question is also listed by the task that runs the subgraph, under the same id)."""
    seen = set() if seen is None else seen
    values: list[Any] = []
    for task in state.get("tasks") or []:
        values.extend(_new_questions(task.get("interrupts") or [], seen))
        nested = task.get("state")
        if isinstance(nested, Mapping) and "tasks" in nested:
            values.extend(pending_questions(nested, seen))
    return values


def nested_values(state: Mapping[str, Any]) -> dict[str, Any]:
    """Pending subgraph task name -> its values, from a ``get_state(subgraphs=True)`` answer."""
    found: dict[str, Any] = {}
    for task in state.get("tasks") or []:
        nested = task.get("state")
        if isinstance(nested, Mapping) and "values" in nested:
            found[str(task.get("name"))] = nested.get("values")
    return found
