"""CALL_ORDER_CHANGED: the `@task`/`interrupt()` calls before a thread's resume point moved.

On resume LangGraph replays the paused entrypoint or node from its first line and
hands each `@task` call the recorded result, and each `interrupt()` the recorded
answer, by call position. The live code's call order comes from its contract lock;
the candidate's from its source (`migrations_playbook.graphcode.codeinfo`). How far the replay
goes: from a checkpointer, exactly (`recorded_extent`: the task's recorded results and
answers are read); from the Agent Server API, the interrupt the pending payload names,
else the live code's last interrupt (`resume_point`).
"""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.graphcode.codeinfo import INTERRUPT, QUESTION_KEYS, resume_prefix, sections
from migrations_playbook.model import CALL_ORDER_CHANGED, TaskFact, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule


def replayed_tasks(thread: ThreadSnapshot) -> list[TaskFact]:
    """Tasks that ran in part and will be replayed on resume: paused at an interrupt, errored,
    or (a busy thread) running now."""
    started = [t for t in thread.tasks if t.interrupted or t.errored]
    if thread.status == "busy":
        started += [t for t in thread.tasks if not t.finished and t not in started]
    if not thread.tasks and thread.status in ("interrupted", "error", "busy"):
        started = [TaskFact(path=p, interrupted=thread.status == "interrupted") for p in thread.pending]
    return started


def resume_point(live_calls: list[str], task: TaskFact) -> int:
    """How many leading calls the paused run recorded. The interrupt it waits at is found by the
    question its payload names (``{"kind": ...}``) when exactly one live call asks it; else the
    latest point it can wait at, the last interrupt."""
    for value in task.interrupt_values:
        if not isinstance(value, dict):
            continue
        for key in QUESTION_KEYS:
            if isinstance(value.get(key), str):
                asked = f"{INTERRUPT}({key}={value[key]!r})"
                matches = [i for i, call in enumerate(live_calls) if call == asked]
                if len(matches) == 1:
                    return matches[0] + 1
                break
    return resume_prefix(live_calls)


def recorded_extent(live_calls: list[str], task: TaskFact) -> int | None:
    """How many leading live calls the replay hands a recorded value to, told by what the task
    recorded (a checkpointer source): through its last recorded `@task` result and through the
    interrupt it waits at (its answers + 1; for a task not waiting, its last answer). Results
    and answers are matched each by their own count, so the r-th result is the r-th ``task:``
    call and the k-th answer the k-th ``interrupt``. None when the facts are unknown (the Agent
    Server API) or the live sequence cannot hold them (calls in a loop or a branch recorded
    more than the straight sequence has): the caller bounds it as without them."""
    if task.recorded_results is None or task.resume_values is None:
        return None
    interrupts = [i for i, call in enumerate(live_calls) if call.startswith(INTERRUPT + "(")]
    tasks = [i for i, call in enumerate(live_calls) if not call.startswith(INTERRUPT + "(")]
    reached = len(task.resume_values) + (1 if task.interrupted else 0)
    if task.recorded_results > len(tasks) or reached > len(interrupts):
        return None
    ends = [0]
    if task.recorded_results:
        ends.append(tasks[task.recorded_results - 1] + 1)
    if reached:
        ends.append(interrupts[reached - 1] + 1)
    return max(ends)


def divergence(live: list[str], candidate: list[str], upto: int) -> tuple[int, str, str] | None:
    """First position below ``upto`` where the two call sequences differ."""
    for index in range(upto):
        before = live[index] if index < len(live) else "(nothing)"
        after = candidate[index] if index < len(candidate) else "(nothing)"
        if before != after:
            return index, before, after
    return None


class CallOrderChanged(Rule):
    code = CALL_ORDER_CHANGED
    severity = "block"
    evidence = (base.API_THREADS, base.STORE, base.LOCK, base.CANDIDATE)
    why = (
        "recorded @task results and resume values are matched by call position: a moved call gets another "
        "call's result, an answer is filed under another question, an answered question is asked again"
    )
    help = (
        "leave every call before the resume point where it is and append new calls after the last interrupt; "
        "or register the new code under a new graph id and let the old one drain"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        for task in replayed_tasks(thread):
            node = base.node_at(graph, task.path)
            if node is None or node.live is None:
                continue
            # A ToolNode's tools are sections of their own (each tool replays its own calls).
            live_sections = sections(node.live.get("calls") or [])
            candidate_sections = sections(node.spec.calls)
            for section, live_calls in live_sections.items():
                candidate_calls = candidate_sections.get(section, [])
                # A ToolNode's recorded results are counted over all its tools: exact only without tools.
                upto = recorded_extent(live_calls, task) if len(live_sections) == 1 else None
                if upto is None:
                    upto = resume_point(live_calls, task) if task.interrupted else len(live_calls)
                diverged = divergence(live_calls, candidate_calls, upto)
                if diverged is None:
                    continue
                index, before, after = diverged
                where = f"{task.path!r}" + (f" (tool {section!r})" if section else "")
                yield Hit(
                    f"threads {'paused in' if task.interrupted else 'running'} {where} replay its calls on resume; "
                    f"call #{index + 1} before the resume point was {before} and is now {after}: the recorded result "
                    "or answer would be handed to the wrong call",
                    node=task.path,
                    key=f"{section}|{index}|{before}|{after}",
                )
