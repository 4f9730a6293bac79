"""Migrated against born-on-the-candidate: the judgement (pure).

Every thread the shadow runs is also born again from its own history on a fresh thread on each side
(`proof/shadow/rebuild.py`) and continued with the requests its migrated twin got. On each side that gives
two threads that should behave alike: the migrated one (a copy of the live thread, begun under the deployed
code) and the fresh one (begun under that side's code). Their behaviour is compared as *what the continuation
did*: each run's outcome, the steps it ran, what each step wrote, the questions asked and left pending, the
custom events, and how each state key changed (`behaviour`): a key the thread only carries from its past is
not behaviour, so an old value the candidate no longer writes or reads is not held against it, while a stale
value the candidate keeps beside its own (a summary re-keyed), or an old key a step can no longer see, shows
as another change or another write.

* A difference the migrated thread shows on the candidate (B) against its fresh twin there, that neither side
  of the deployed code shows (A, A2: its own migrated-vs-fresh noise) and that two runs of the deployed code do
  not vary in, is a migration break: `SHADOW_MIGRATED_DIFFERS` (block), named with the thread, the run, the step
  and the value path.
* A difference of the A-against-B comparison that a thread born on each code shows too (fresh A against fresh
  B) is the intended change: where the thread was rebuilt faithfully and shows no migration break, such a
  difference is reported as `SHADOW_INTENDED_CHANGE` (warn) instead of its blocking code (`DOWNGRADABLE`: what
  a new user would meet as well; a failure, a lost thread and a client's output contract never are).
* A thread that cannot be rebuilt (`rebuild.plan_rebuild`'s reasons), whose rebuild fails or does not reach
  the live state on the deployed code, is named with why; it keeps the A-against-B judgement as it is.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from migrations_playbook.proof.shadow.compare import VARIES, Diff, compare_thread, flatten, general, masked, noise_paths
from migrations_playbook.proof.shadow.drive import ThreadFacts
from migrations_playbook.proof.shadow.rebuild import RebuildPlan, Rebuilt
from migrations_playbook.proof.shadow.traces import ThreadTrace, nested_values, pending_questions

MIGRATED = "SHADOW_MIGRATED_DIFFERS"
INTENDED = "SHADOW_INTENDED_CHANGE"
DOWNGRADABLE = frozenset(
    {
        "SHADOW_DATA_LOST",
        "SHADOW_STEP_SKIPPED",
        "SHADOW_STEP_REPEATED",
        "SHADOW_PAUSE_DIVERGED",
        "SHADOW_QUESTION_DIVERGED",
        "SHADOW_VALUE_MISFILED",
    }
)
"""A-against-B codes a thread born on the candidate can show too, as the change itself (never: a failed run or
step, a lost or unreadable thread, a failed tool, a client's output contract)."""
MISSING = "<absent>"
_INDEX = re.compile(r"\[(\d+|\*)\]")


@dataclass
class MigratedJudgement:
    """Per thread: the migration breaks, the A-against-B keys the fresh threads show too, or why not judged."""

    breaks: dict[str, list[Diff]] = field(default_factory=dict)
    intended: dict[str, set[tuple[str, str | None, str | None]]] = field(default_factory=dict)
    """Thread -> `Diff.key`s of A against B that fresh A against fresh B shows too (threads without breaks)."""
    not_rebuilt: dict[str, str] = field(default_factory=dict)
    judged: list[str] = field(default_factory=list)


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _delta(start: Any, end: Any, written: bool) -> Any:
    """How a state value changed: unchanged, list items added and removed (as multisets), or its new value (always
    where a step wrote it: a value rewritten each turn is what the step wrote, whatever the thread held before)."""
    if isinstance(start, list) and isinstance(end, list):
        if _dump(start) == _dump(end):
            return "unchanged"
        before, after = Counter(_dump(x) for x in start), Counter(_dump(x) for x in end)
        return {"added": sorted((after - before).elements()), "removed": sorted((before - after).elements())}
    if not written and _dump(start) == _dump(end):
        return "unchanged"
    return {"now": MISSING if end is None else end}


def _changes(start: Any, end: Any, prefix: str, noise: set[str], written: set[str]) -> dict[str, Any]:
    """Top key -> `_delta`, with ``noise`` masked on both ends (``written``: the keys the runs' steps wrote)."""
    left, right = masked(start, prefix, noise), masked(end, prefix, noise)
    if not isinstance(left, Mapping) or not isinstance(right, Mapping):
        return {prefix: _delta(left, right, bool(written))}
    keys = sorted(set(left) | set(right), key=str)
    changed = {str(k): _delta(left.get(k), right.get(k), str(k) in written) for k in keys}
    return {k: v for k, v in changed.items() if v != "unchanged"}


def behaviour(thread: ThreadTrace, start_values: Any, start_nested: Mapping[str, Any], noise: set[str]) -> dict[str, Any]:
    """Leaf path -> what the continuation runs of ``thread`` did (not what it carries from before), ``noise`` masked."""
    parts: dict[str, Any] = {}
    for index, run in enumerate(thread.runs):
        failed = run.failed
        parts[f"run{index}"] = {
            "outcome": failed.split(":", 1)[0].strip() if failed else "ok",
            "next": sorted(run.next),
            "steps": sorted(t.path for t in run.tasks if not t.error),
            "errors": sorted(t.path for t in run.tasks if t.error),
            "questions": [t.interrupts for t in run.tasks if t.interrupts],
            "pending": run.pending,
            "results": {f"{t.path}#{n}": t.result for n, t in enumerate(run.tasks)},
            "custom": run.custom,
        }
    masked_runs = masked(parts, "", noise)
    written = {str(k) for run in thread.runs for t in run.tasks if isinstance(t.result, Mapping) for k in t.result}
    changes = {"values": _changes(start_values, thread.values, "values", noise, written)}
    for name in sorted(set(start_nested) | set(thread.nested)):
        changes[f"nested.{name}"] = _changes(start_nested.get(name), thread.nested.get(name), f"nested.{name}", noise, written)
    found = flatten({**masked_runs, "changes": changes})
    return {p: v for p, v in found.items() if not (p.startswith("changes") and v in ({}, []))}


def _differing(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """General path -> (first's, second's) value, where they differ (the first such leaf per general path)."""
    found: dict[str, tuple[Any, Any]] = {}
    for path in sorted(set(first) | set(second)):
        a, b = first.get(path, MISSING), second.get(path, MISSING)
        if a != b and VARIES not in (a, b):
            found.setdefault(general(path), (a, b))
    return found


def _state_noise(first: Rebuilt, second: Rebuilt) -> set[str]:
    """General paths the rebuilt states of two runs of the deployed code differ in (ids, times)."""
    a = flatten({"values": first.values, "nested": first.nested})
    b = flatten({"values": second.values, "nested": second.nested})
    return {general(p) for p in set(a) | set(b) if a.get(p, MISSING) != b.get(p, MISSING)}


def _short(value: Any, limit: int = 100) -> str:
    text = _dump(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fidelity(live: Mapping[str, Any], rebuilt: Rebuilt, noise: set[str]) -> str | None:
    """Why the deployed code's rebuild is not the live thread (None when it is, ``noise`` masked)."""
    if sorted(live.get("next") or []) != sorted(rebuilt.next):
        return f"it waits at {rebuilt.next or 'nothing'}, the live thread at {list(live.get('next') or []) or 'nothing'}"
    if len(pending_questions(live)) != len(rebuilt.pending):
        return "it leaves another number of questions pending than the live thread"
    ours = flatten(masked({"values": live.get("values"), "nested": nested_values(live)}, "", noise))
    theirs = flatten(masked({"values": rebuilt.values, "nested": rebuilt.nested}, "", noise))
    differing = _differing(ours, theirs)
    if differing:
        path, (was, now) = next(iter(differing.items()))
        return f"it holds {_short(now, 60)} at {path}, the live thread {_short(was, 60)}"
    return None


def _where(path: str, thread: ThreadTrace) -> tuple[str | None, str]:
    """(the step, what run) of a behaviour path (``run2.results.respond#1.notes`` -> respond, run 3 (turn))."""
    head, _, rest = path.partition(".")
    if head.startswith("run") and head[3:].isdigit():
        index = int(head[3:])
        kind = thread.runs[index].request.kind if index < len(thread.runs) else "?"
        step = rest.split(".", 1)[1].split("#", 1)[0] if rest.startswith("results.") else None
        return step, f"run {index + 1} ({kind})"
    if head == "changes":  # changes.values.<key>...: the last step that wrote the key
        key = _INDEX.sub("", path.split(".")[2]) if path.count(".") >= 2 else ""
        for index in range(len(thread.runs) - 1, -1, -1):
            run = thread.runs[index]
            for task in reversed(run.tasks):
                if isinstance(task.result, Mapping) and key in task.result:
                    return task.path, f"run {index + 1} ({run.request.kind})"
    return None, "after the runs"


def judge_migrated(
    facts: Mapping[str, ThreadFacts],
    plans: Mapping[str, RebuildPlan],
    migrated: Mapping[str, Mapping[str, ThreadTrace]],
    fresh: Mapping[str, Mapping[str, Rebuilt]],
    noise: Mapping[str, set[str]],
) -> MigratedJudgement:
    """``migrated`` and ``fresh``: side ("A", "A2", "B") -> thread id -> trace / rebuild; ``noise``: graph -> the
    general paths two runs of the deployed code differ in (A against A2)."""
    out = MigratedJudgement()
    for thread_id, item in facts.items():
        plan = plans.get(thread_id)
        mine = {side: migrated.get(side, {}).get(thread_id) for side in ("A", "A2", "B")}
        if plan is None or mine["A"] is None or not mine["A"].present or mine["A"].skipped:
            continue
        if plan.refused:
            out.not_rebuilt[thread_id] = plan.refused
            continue
        born = {side: fresh.get(side, {}).get(thread_id) for side in ("A", "A2", "B")}
        missing = next((s for s in ("A", "A2", "B") if born[s] is None or mine[s] is None), None)
        if missing is not None:
            out.not_rebuilt[thread_id] = f"side {missing} did not rebuild it"
            continue
        a, a2, b = born["A"], born["A2"], born["B"]
        assert a is not None and a2 is not None and b is not None
        failed = next(((s, r.failed) for s, r in (("A", a), ("A2", a2), ("B", b)) if r.failed), None)
        if failed is not None:
            code = "the deployed code" if failed[0] != "B" else "the candidate"
            out.not_rebuilt[thread_id] = f"on {code} ({failed[0]}): {failed[1]}"
            continue
        graph_noise = set(noise.get(item.graph_id, set())) | _state_noise(a, a2)
        unfaithful = _fidelity(item.state, a, graph_noise)
        if unfaithful is not None:
            out.not_rebuilt[thread_id] = f"its rebuild on the deployed code is not the live thread: {unfaithful}"
            continue
        rebuilt = {"A": a, "A2": a2, "B": b}
        traces = {s: r.trace for s, r in rebuilt.items()}
        if any(t is None for t in traces.values()):
            out.not_rebuilt[thread_id] = "a fresh thread was not continued"
            continue
        out.judged.append(thread_id)
        live_values, live_nested = item.state.get("values"), nested_values(item.state)
        seen: dict[str, set[str]] = {}
        shown: dict[str, tuple[Any, Any]] = {}
        old: dict[str, dict[str, Any]] = {}
        for side in ("A", "A2", "B"):
            ours, theirs = mine[side], traces[side]
            assert ours is not None and theirs is not None
            old[side] = behaviour(ours, live_values, live_nested, graph_noise)
            new = behaviour(theirs, rebuilt[side].values, rebuilt[side].nested, graph_noise)
            differing = _differing(new, old[side])
            seen[side] = set(differing)
            if side == "B":
                shown = differing
        # The migrated thread under the candidate behaves otherwise than it did under the deployed code (beyond
        # what two runs of the deployed code vary in): a thread that keeps its old behaviour on purpose (a
        # flow_version stamped at its start) is not a break, however unlike a new thread it behaves.
        moved = set(_differing(old["A"], old["B"])) - set(_differing(old["A"], old["A2"]))
        breaks = [p for p in shown if p in moved and p not in seen["A"] | seen["A2"] | graph_noise]
        mine_b = mine["B"]
        assert mine_b is not None
        if breaks:
            diffs = []
            for path in breaks[:3]:
                step, run = _where(path, mine_b)
                fresh_value, old_value = shown[path]
                diffs.append(
                    Diff(
                        MIGRATED,
                        step,
                        path,
                        f"{run}: the migrated thread shows {_short(old_value)} at {path}, a thread born on the candidate "
                        f"{_short(fresh_value)}"
                        + (f" (and {len(breaks) - 3} more path(s))" if len(breaks) > 3 and path == breaks[2] else ""),
                    )
                )
            out.breaks[thread_id] = diffs
            continue
        fa, fa2, fb = traces["A"], traces["A2"], traces["B"]
        assert fa is not None and fa2 is not None and fb is not None
        fresh_noise = graph_noise | noise_paths(fa, fa2)
        out.intended[thread_id] = {d.key for d in compare_thread(fa, fb, fresh_noise) if d.code in DOWNGRADABLE}
    return out


def is_intended(diff: Diff, keys: set[tuple[str, str | None, str | None]]) -> bool:
    """Whether an A-against-B ``diff`` is the intended change, given the `Diff.key`s fresh A against fresh B shows
    (`MigratedJudgement.intended`). An output key the candidate drops is so only where a thread born on the
    candidate does not hold it in its state either (the change is what is computed); a key the state keeps and
    the output no longer returns is a narrowed contract, whoever meets it."""
    if diff.code in DOWNGRADABLE:
        return diff.key in keys
    if diff.code == "SHADOW_OUTPUT_KEY_DROPPED" and diff.field and diff.field.startswith("output."):
        top = diff.field.removeprefix("output.").split(".", 1)[0].split("[", 1)[0]
        return ("SHADOW_DATA_LOST", None, top) in keys
    return False


def notes(judgement: MigratedJudgement, downgraded: int) -> list[str]:
    """What the report says of the migrated-against-fresh comparison."""
    lines = []
    total = len(judgement.judged) + len(judgement.not_rebuilt)
    if total == 0:
        return ["migrated against born-on-the-candidate: no thread was rebuilt on a fresh thread"]
    lines.append(
        f"migrated against born-on-the-candidate: {len(judgement.judged)} of {total} thread(s) rebuilt from their own "
        "history on fresh threads on each side and continued like the migrated ones"
    )
    if judgement.not_rebuilt:
        shown = "; ".join(f"{t}: {why}" for t, why in sorted(judgement.not_rebuilt.items())[:10])
        lines.append(
            f"{len(judgement.not_rebuilt)} thread(s) cannot be rebuilt, judged by the deployed code against the candidate "
            f"only: {shown}"
        )
    if downgraded:
        lines.append(
            f"{downgraded} difference(s) between the codes that a thread born on the candidate shows too: the intended "
            "change (SHADOW_INTENDED_CHANGE), not held as a loss"
        )
    return lines
