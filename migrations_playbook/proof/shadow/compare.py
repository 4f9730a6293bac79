"""The shadow proof's judgement: where the candidate (side B) did worse than the deployed code (side A).

Both sides ran the same requests on copies of the same threads (`shadow_trace`). Each difference is a
`Diff` of one code; `proof/shadow/run.py` aggregates them into the gate's findings (code, graph, node,
field, thread ids). Blocking, because B lost something A kept:

* SHADOW_THREAD_LOST: a thread A holds that B's copy lost (at start or during the proof);
* SHADOW_STATE_UNREADABLE: B cannot read a thread A reads;
* SHADOW_RUN_FAILED: a run B fails or refuses that A ran (or B fails it with another error);
* SHADOW_STEP_FAILED: a step that succeeded in A raised in B (the run itself went on);
* SHADOW_STEP_SKIPPED: a step A ran that B did not run (nor one writing the same);
* SHADOW_STEP_REPEATED: a step B ran more often than A: work A took from the checkpoint, done again;
* SHADOW_QUESTION_DIVERGED: the questions asked (their number or kinds) differ: an answer filed under
  another question;
* SHADOW_PAUSE_DIVERGED: after the same run the thread waits at other steps in B than in A;
* SHADOW_TOOL_FAILED: a tool call A executed that fails, or is unknown, in B;
* SHADOW_VALUE_MISFILED: B holds a value of A's under another key (a cached result handed to another call);
* SHADOW_DATA_LOST: a state key, list items or a store item A holds that B lost;
* SHADOW_OUTPUT_KEY_DROPPED, SHADOW_OUTPUT_TYPE_CHANGED: a key a client read of a run's output or of a
  question's payload is gone, or holds another type (`proof/shadow/outputs.py`).

For review (warn; ``--strict`` blocks): SHADOW_OUTPUT_DIFFERS (the same structure with other values),
SHADOW_STEP_ADDED (a step only B ran), SHADOW_QUESTION_ADDED (B asks a new question after every answer
landed as in A, and waits for it), SHADOW_STEP_RENAMED (a step only B ran, writing what a step
only A ran wrote).

What varies between two runs of the same code is learned, not listed: A runs twice (A and A2); every
value path that differs between them (`noise_paths`) is masked in the A/B comparison, and a diff that
A and A2 already show (`Diff.key`) is not held against B. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from migrations_playbook.proof.shadow.outputs import contract_diffs, question_pairs
from migrations_playbook.proof.shadow.traces import RunTrace, ThreadTrace

BLOCKING = (
    "SHADOW_THREAD_LOST",
    "SHADOW_STATE_UNREADABLE",
    "SHADOW_RUN_FAILED",
    "SHADOW_STEP_FAILED",
    "SHADOW_STEP_SKIPPED",
    "SHADOW_STEP_REPEATED",
    "SHADOW_QUESTION_DIVERGED",
    "SHADOW_PAUSE_DIVERGED",
    "SHADOW_TOOL_FAILED",
    "SHADOW_VALUE_MISFILED",
    "SHADOW_DATA_LOST",
    "SHADOW_OUTPUT_KEY_DROPPED",
    "SHADOW_OUTPUT_TYPE_CHANGED",
    "SHADOW_MIGRATED_DIFFERS",
)
REVIEW = (
    "SHADOW_OUTPUT_DIFFERS",
    "SHADOW_STEP_ADDED",
    "SHADOW_STEP_RENAMED",
    "SHADOW_QUESTION_ADDED",
    "SHADOW_UNPROVEN",
    "SHADOW_INTENDED_CHANGE",
)

VARIES = "<varies>"
_INDEX = re.compile(r"\[\d+\]")


@dataclass(frozen=True)
class Diff:
    """One way B differs from A on one thread."""

    code: str
    node: str | None
    field: str | None
    detail: str

    @property
    def key(self) -> tuple[str, str | None, str | None]:
        return (self.code, self.node, self.field)

    @property
    def blocking(self) -> bool:
        return self.code in BLOCKING


# -- values, and what varies between runs ------------------------------------------------


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf path -> value (``a.b[0].c``); empty containers are leaves of their own."""
    out: dict[str, Any] = {}
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
    else:
        out[prefix] = value
    return out


def general(path: str) -> str:
    """A path with its list indices generalized (``messages[*].id``)."""
    return _INDEX.sub("[*]", path)


def observed(thread: ThreadTrace) -> dict[str, Any]:
    """The parts of a trace whose values are compared, by leaf path."""
    parts: dict[str, Any] = {"values": thread.values, "nested": thread.nested}
    for index, run in enumerate(thread.runs):
        parts[f"run{index}"] = {
            "custom": run.custom,
            "questions": [t.interrupts for t in run.tasks if t.interrupts],
            "pending": run.pending,
            "results": {f"{t.path}#{n}": t.result for n, t in enumerate(run.tasks)},
            "output": run.output,
        }
    return flatten(parts)


def noise_paths(first: ThreadTrace, second: ThreadTrace) -> set[str]:
    """Generalized paths whose values differ between two runs of the same code on the same thread."""
    a, b = observed(first), observed(second)
    return {general(p) for p in set(a) | set(b) if a.get(p, VARIES) != b.get(p, VARIES) or (p in a) != (p in b)}


def masked(value: Any, prefix: str, noise: set[str]) -> Any:
    """``value`` with every leaf under a noisy path replaced by `VARIES`."""
    if isinstance(value, Mapping):
        return {k: masked(v, f"{prefix}.{k}" if prefix else str(k), noise) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v, f"{prefix}[{i}]", noise) for i, v in enumerate(value)]
    return VARIES if general(prefix) in noise else value


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _short(value: Any, limit: int = 120) -> str:
    text = _dump(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- the comparison, per thread -----------------------------------------------------------


def compare_thread(a: ThreadTrace, b: ThreadTrace, noise: set[str]) -> list[Diff]:
    """Every way ``b`` differs from ``a``, with ``noise`` (generalized paths) masked."""
    if a.present and not b.present:
        return [Diff("SHADOW_THREAD_LOST", None, None, "the candidate's copy does not hold the thread at all")]
    if b.unreadable and not a.unreadable:
        return [Diff("SHADOW_STATE_UNREADABLE", None, None, f"the candidate cannot read it: {b.unreadable[:200]}")]
    diffs: list[Diff] = []
    before = a.pending_before
    for index, (run_a, run_b) in enumerate(zip(a.runs, b.runs, strict=False)):
        diffs.extend(_compare_run(index, run_a, run_b, noise, {_kind(q) for q in before}))
        before = run_a.pending
    if not any(d.code == "SHADOW_RUN_FAILED" for d in diffs):
        # Steps over all the runs: a step that moved to a later run (a deferred join) is not lost.
        what = f"the {len(a.runs)} run(s)" if len(a.runs) != 1 else "the run"
        tasks_a = RunTrace(request=a.runs[0].request, tasks=[t for r in a.runs for t in r.tasks]) if a.runs else None
        tasks_b = RunTrace(request=a.runs[0].request, tasks=[t for r in b.runs for t in r.tasks]) if a.runs else None
        if tasks_a is not None and tasks_b is not None:
            diffs.extend(_compare_steps(what, tasks_a, tasks_b, noise))
    if a.exists and not b.exists:
        diffs.append(Diff("SHADOW_THREAD_LOST", None, None, "the thread is gone from the candidate's copy after the runs"))
    if any(d.code in ("SHADOW_RUN_FAILED", "SHADOW_THREAD_LOST") for d in diffs):
        return diffs  # the values after a run B failed differ because it failed: one finding, not its echoes
    diffs.extend(_compare_values(a, b, noise))
    return diffs


def _error_type(message: str) -> str:
    return message.split(":", 1)[0].strip()


def _where(run: RunTrace) -> str:
    return run.request.kind


def _compare_run(index: int, a: RunTrace, b: RunTrace, noise: set[str], answered: set[str]) -> list[Diff]:
    what = f"run {index + 1} ({a.request.label})"
    failed_a, failed_b = a.failed, b.failed
    if failed_b and (not failed_a or _error_type(failed_a) != _error_type(failed_b)):
        node = _failing_step(b) or _where(b)
        was = "succeeded" if not failed_a else f"failed with {_error_type(failed_a)}"
        return [Diff("SHADOW_RUN_FAILED", node, None, f"{what} {was} on the deployed code; the candidate: {failed_b[:300]}")]
    if failed_b:
        return []  # both failed alike: not the candidate's doing
    diffs: list[Diff] = []
    questions = _compare_questions(what, a, b, noise, index, answered)
    diffs.extend(questions)
    if not failed_a and not any(d.code in ("SHADOW_QUESTION_DIVERGED", "SHADOW_QUESTION_ADDED") for d in questions):
        diffs.extend(_compare_contract(what, a, b))
    diffs.extend(_compare_tools(what, a, b))
    added = any(d.code == "SHADOW_QUESTION_ADDED" for d in questions)
    if a.next != b.next and not failed_a and not added:
        diffs.append(
            Diff(
                "SHADOW_PAUSE_DIVERGED",
                ",".join(a.next) or None,
                None,
                f"after {what} the deployed code waits at {a.next or 'nothing (done)'}, "
                f"the candidate at {b.next or 'nothing (done)'}",
            )
        )
    custom_a = masked(a.custom, f"run{index}.custom", noise)
    custom_b = masked(b.custom, f"run{index}.custom", noise)
    if custom_a != custom_b:
        diffs.append(Diff("SHADOW_OUTPUT_DIFFERS", None, "custom events", f"{what}: {_short(custom_a)} vs {_short(custom_b)}"))
    return diffs


def _compare_contract(what: str, a: RunTrace, b: RunTrace) -> list[Diff]:
    """What a client reads of the run: its output, and the payload of each question it asked or left pending."""
    found = []
    if a.output is not None and b.output is not None and a.next == b.next:  # both rest alike: the same read
        found += contract_diffs(what, "output", None, a.output, b.output)
    asked_a = [(_asked_at(t.path), q) for t in a.tasks for q in t.interrupts]
    asked_b = [(_asked_at(t.path), q) for t in b.tasks for q in t.interrupts]
    for node, qa, qb in question_pairs(asked_a, asked_b):
        found += [d for d in contract_diffs(what, f"question at {node}", node, qa, qb) if d[0] != "SHADOW_OUTPUT_DIFFERS"]
    return [Diff(*d) for d in found]


def _failing_step(run: RunTrace) -> str | None:
    return next((t.path for t in run.tasks if t.error), None)


def _compare_steps(what: str, a: RunTrace, b: RunTrace, noise: set[str]) -> list[Diff]:
    done_a = Counter(t.path for t in a.tasks if not t.error)
    done_b = Counter(t.path for t in b.tasks if not t.error)
    diffs: list[Diff] = []
    errors_a = {t.path for t in a.tasks if t.error}
    for task in b.tasks:
        if task.error and task.path not in errors_a:
            diffs.append(Diff("SHADOW_STEP_FAILED", task.path, None, f"{what}: {task.error[:300]}"))
    only_b = {p for p in done_b if p not in done_a}
    tails = _result_noise(noise)
    results_b = {p: [_dump(_mask_result(t.result, tails)) for t in b.tasks if t.path == p and not t.error] for p in only_b}
    renamed: set[str] = set()
    for path, count in sorted(done_a.items()):
        have = done_b.get(path, 0)
        if have >= count:
            if have > count:
                diffs.append(
                    Diff(
                        "SHADOW_STEP_REPEATED",
                        path,
                        None,
                        f"{what}: the candidate ran {path} {have} time(s), the deployed code {count}: "
                        "work the deployed code took from the checkpoint was done again",
                    )
                )
            continue
        wrote = [_dump(_mask_result(t.result, tails)) for t in a.tasks if t.path == path and not t.error]
        twin = next((p for p in sorted(only_b - renamed) if set(results_b[p]) & set(wrote)), None)
        if twin is not None and have == 0:
            renamed.add(twin)
            diffs.append(Diff("SHADOW_STEP_RENAMED", path, twin, f"{what}: {path} ran as {twin}, writing the same"))
            continue
        diffs.append(
            Diff(
                "SHADOW_STEP_SKIPPED",
                path,
                None,
                f"{what}: the deployed code ran {path} {count} time(s), the candidate {have}: its work is lost",
            )
        )
    for path in sorted(only_b - renamed):
        diffs.append(Diff("SHADOW_STEP_ADDED", path, None, f"{what}: only the candidate ran {path}"))
    return diffs


def _result_noise(noise: set[str]) -> set[str]:
    """The paths within a task result (after ``runN.results.<task>#<n>.``) that vary in any task's result."""
    return {p.split(".", 3)[3] for p in noise if p.startswith("run") and ".results." in p and p.count(".") >= 3}


def _mask_result(result: Any, tails: set[str]) -> Any:
    """A task result with `_result_noise`'s paths masked."""
    return masked(result, "", tails) if isinstance(result, Mapping) else result


def _kind(question: Any) -> str:
    if isinstance(question, Mapping):
        kind = question.get("kind") or question.get("type")
        return str(kind) if kind is not None else "object:" + ",".join(sorted(map(str, question)))
    return type(question).__name__


def _asked_at(path: str) -> str:
    """Where a question is asked, as a resume sees it: the node of the thread's graph whose task asks it (a
    question inside a subgraph run by that node is still that node's: the resume value reaches it)."""
    return path.split(":", 1)[0]


def _compare_questions(what: str, a: RunTrace, b: RunTrace, noise: set[str], index: int, answered: set[str]) -> list[Diff]:
    asked_a = [(_asked_at(t.path), _kind(q)) for t in a.tasks for q in t.interrupts]
    asked_b = [(_asked_at(t.path), _kind(q)) for t in b.tasks for q in t.interrupts]
    pending_a = sorted(_kind(q) for q in a.pending)
    pending_b = sorted(_kind(q) for q in b.pending)
    extra = asked_b[len(asked_a) :]
    if (
        extra
        and asked_b[: len(asked_a)] == asked_a
        and not pending_a
        and not {kind for _, kind in extra} & answered
        and pending_b == sorted(kind for _, kind in extra)
    ):
        # New questions after every answer landed where the deployed code put it: the thread now
        # waits for them. Not an answer filed elsewhere (that would re-ask an answered kind).
        return [
            Diff(
                "SHADOW_QUESTION_ADDED", extra[0][0], None, f"{what}: the candidate then asks {extra} the deployed code does not"
            )
        ]
    if asked_a != asked_b or pending_a != pending_b:
        node = (asked_a or asked_b or [("", "")])[0][0] or None
        return [
            Diff(
                "SHADOW_QUESTION_DIVERGED",
                node,
                None,
                f"{what}: the deployed code asked {asked_a or 'nothing'} (left pending {pending_a or 'nothing'}), "
                f"the candidate {asked_b or 'nothing'} (left pending {pending_b or 'nothing'})",
            )
        ]
    questions_a = masked([q for t in a.tasks for q in t.interrupts], f"run{index}.questions", noise)
    questions_b = masked([q for t in b.tasks for q in t.interrupts], f"run{index}.questions", noise)
    if questions_a != questions_b:
        return [Diff("SHADOW_OUTPUT_DIFFERS", None, "questions", f"{what}: {_short(questions_a)} vs {_short(questions_b)}")]
    return []


def tool_results(run: RunTrace) -> list[tuple[str, str, str, str]]:
    """(task path, tool name, status, content) of every tool message the run's tasks wrote."""
    found: list[tuple[str, str, str, str]] = []
    for task in run.tasks:
        for message in _messages(task.result):
            if message.get("type") == "tool":
                found.append(
                    (
                        task.path,
                        str(message.get("name")),
                        str(message.get("status") or "success"),
                        str(message.get("content"))[:200],
                    )
                )
    return found


def _messages(result: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(result, Mapping):
        for value in result.values():
            if isinstance(value, list):
                yield from (m for m in value if isinstance(m, Mapping))
            elif isinstance(value, Mapping) and "type" in value:
                yield value


def _compare_tools(what: str, a: RunTrace, b: RunTrace) -> list[Diff]:
    ok_a = Counter((path, name) for path, name, status, _ in tool_results(a) if status != "error")
    errors_b = [(path, name, content) for path, name, status, content in tool_results(b) if status == "error"]
    errors_a = Counter((path, name) for path, name, status, _ in tool_results(a) if status == "error")
    diffs = []
    seen: Counter[tuple[str, str]] = Counter()
    for path, name, content in errors_b:
        seen[(path, name)] += 1
        if seen[(path, name)] > errors_a[(path, name)] and (ok_a or not errors_a):
            diffs.append(
                Diff("SHADOW_TOOL_FAILED", path, name, f"{what}: the tool call {name} failed in the candidate: {content}")
            )
    return diffs


def _compare_values(a: ThreadTrace, b: ThreadTrace, noise: set[str]) -> list[Diff]:
    left = masked({"values": a.values, "nested": a.nested}, "", noise)
    right = masked({"values": b.values, "nested": b.nested}, "", noise)
    diffs: list[Diff] = []
    changed: list[str] = []
    if b.values is None and b.runs and b.runs[-1].next:
        # B still waits at a step (an entrypoint shows no values until it returns): not final, not lost.
        left.pop("values")
        right.pop("values")
        if a.values is not None:
            changed.append("values")
    _walk(left, right, "", diffs, changed)
    diffs.extend(_misfiled(left, right))
    if changed and not any(d.code == "SHADOW_VALUE_MISFILED" for d in diffs):
        field = _top(changed[0])
        diffs.append(Diff("SHADOW_OUTPUT_DIFFERS", None, field, "the threads end with other values at " + ", ".join(changed[:4])))
    return diffs


def _top(path: str) -> str:
    parts = path.split(".")
    return _INDEX.sub("", parts[1] if len(parts) > 1 and parts[0] in ("values", "nested") else parts[0])


def _walk(a: Any, b: Any, path: str, diffs: list[Diff], changed: list[str]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key, value in a.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in b:
                if value is not None and where not in ("values", "nested"):
                    diffs.append(
                        Diff(
                            "SHADOW_DATA_LOST", None, _top(where), f"{where} is held by the deployed code, gone in the candidate"
                        )
                    )
                continue
            _walk(value, b[key], where, diffs, changed)
        changed.extend(f"{path}.{key}" if path else str(key) for key in b if key not in a)
        return
    if isinstance(a, Mapping) and a and b is None:
        held = sorted(str(k) for k, v in a.items() if v is not None)
        if held:
            where = path or "values"
            diffs.append(
                Diff(
                    "SHADOW_DATA_LOST",
                    None,
                    _top(f"{where}.{held[0]}"),
                    f"{where} holds {held} under the deployed code, nothing under the candidate",
                )
            )
            return
    if isinstance(a, list) and isinstance(b, list):
        if len(b) < len(a):
            missing = Counter(_dump(x) for x in a) - Counter(_dump(x) for x in b)
            if missing:
                example = next(iter(missing))
                diffs.append(
                    Diff(
                        "SHADOW_DATA_LOST",
                        None,
                        _top(path),
                        f"{path} holds {len(a)} item(s) under the deployed code, {len(b)} under the candidate "
                        f"(lost e.g. {example[:120]})",
                    )
                )
                return
        if len(a) == len(b):
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                _walk(x, y, f"{path}[{index}]", diffs, changed)
            return
    if a != b:
        changed.append(path)


def _misfiled(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Diff]:
    """Values of A's that B holds under another key (paths with no list index)."""
    flat_a = {p: v for p, v in flatten(a).items() if "[" not in p and isinstance(v, str) and len(v) >= 4 and v != VARIES}
    flat_b = {p: v for p, v in flatten(b).items() if "[" not in p}
    where_a: dict[str, list[str]] = {}
    for path, value in flat_a.items():
        where_a.setdefault(value, []).append(path)
    diffs = []
    for path, value in sorted(flat_b.items()):
        if path not in flat_a or flat_a[path] == value or not isinstance(value, str):
            continue
        origins = where_a.get(value, [])
        if len(origins) == 1 and origins[0] != path:
            diffs.append(
                Diff(
                    "SHADOW_VALUE_MISFILED",
                    None,
                    _top(path),
                    f"the candidate holds at {path} the value the deployed code holds at {origins[0]} ({_short(value, 60)}), "
                    "e.g. a stored result handed to another call",
                )
            )
    return diffs
