"""`playbook shadow`: the deployed code and the candidate, side by side on copies of the live threads.

Temporal's replayer and Twitter's Diffy, for LangGraph threads. Three throwaway copies of the live data
are served: two by the deployed code (A and A2) and one by the candidate (B). The live data is only
read. The threads to run are chosen by class (`shadow_classes`); A drives each one (`shadow_drive`:
answer its question, continue its pending work, rerun its last turn and take a next one) and records
what every run did (`shadow_trace`); A2 and B receive exactly A's requests. A against A2 shows what
varies between runs of the same code (ids, times, model sampling); A against B, with that masked,
shows what the candidate does worse (`shadow_compare`), reported as the gate's findings with the
threads named. Model calls through an OpenAI-compatible API are recorded on A and served to A2 and B
(`model_relay`), so the model cannot be the difference.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrations_playbook.errors import UsageError
from migrations_playbook.model import Finding, GateReport, GraphSummary, ThreadProof, ThreadSnapshot
from migrations_playbook.proof.resume import ResumeRule
from migrations_playbook.proof.shadow.classes import Selection, class_lines
from migrations_playbook.proof.shadow.compare import BLOCKING, Diff, compare_thread, noise_paths
from migrations_playbook.proof.shadow.config import Identity
from migrations_playbook.proof.shadow.drive import ThreadFacts
from migrations_playbook.proof.shadow.held_runs import HeldPlan, is_cron
from migrations_playbook.proof.shadow.migrated import INTENDED, MIGRATED, is_intended, judge_migrated
from migrations_playbook.proof.shadow.migrated import notes as migrated_notes
from migrations_playbook.proof.shadow.rebuild import RebuildPlan, Rebuilt
from migrations_playbook.proof.shadow.store_items import judge_store
from migrations_playbook.proof.shadow.traces import SideTrace, ThreadTrace, base_of
from migrations_playbook.sources.budget import Deadline
from migrations_playbook.staging.live_copy import StaleCopy

WHY = {
    "SHADOW_THREAD_LOST": "the candidate's copy lost the thread: its user's conversation and pending work are gone",
    "SHADOW_STATE_UNREADABLE": "the candidate cannot read the thread's state: every request on it fails",
    "SHADOW_RUN_FAILED": "the same run succeeds on the deployed code and fails (or is refused) on the candidate",
    "SHADOW_STEP_FAILED": "a step that succeeds on the deployed code raises on the candidate",
    "SHADOW_STEP_SKIPPED": "a step the deployed code runs never runs on the candidate: its work is lost without an error",
    "SHADOW_STEP_REPEATED": "the candidate redoes work the deployed code took from the checkpoint: a side effect repeats",
    "SHADOW_QUESTION_DIVERGED": "the candidate asks other questions than the deployed code: an answer lands on another question",
    "SHADOW_PAUSE_DIVERGED": "after the same run the thread waits at other steps: it is stuck, or skipped a pause",
    "SHADOW_TOOL_FAILED": "a tool call the deployed code executes fails or is unknown on the candidate",
    "SHADOW_VALUE_MISFILED": "a value lands under another key on the candidate: a stored result handed to another call",
    "SHADOW_DATA_LOST": "state or store data the deployed code keeps is gone on the candidate",
    "SHADOW_OUTPUT_KEY_DROPPED": "a key clients read of a run's output or a question's payload is gone on the candidate",
    "SHADOW_OUTPUT_TYPE_CHANGED": "a key clients read of a run's output or a question's payload holds another type",
    "SHADOW_OUTPUT_DIFFERS": "the same runs end with other values: review them (--strict blocks)",
    MIGRATED: "a thread that began under the deployed code behaves otherwise on the candidate than a thread born on "
    "the candidate with the same inputs and answers: the change breaks the threads it migrates, without an error",
    INTENDED: "the deployed code and the candidate differ here, and a thread born on the candidate differs alike: the "
    "intended change, shown for review (--strict blocks)",
    "SHADOW_STEP_ADDED": "the candidate runs a step the deployed code does not: review it (--strict blocks)",
    "SHADOW_STEP_RENAMED": "a step runs under another name and writes the same: review it (--strict blocks)",
    "SHADOW_QUESTION_ADDED": "the candidate asks a new question after the answers landed as before: review it (--strict blocks)",
    "SHADOW_UNPROVEN": "the deployed code itself could not run the thread (or nothing could be sent to it), so the "
    "candidate was not proven on it either way: a pass does not cover it (--strict blocks)",
}
HELP = (
    "The threads named ran on a copy of the live data under both codes with the same inputs and answers; "
    "reproduce one with `playbook shadow ... --all --graph G` and read the runs in --format json. Keep the "
    "old behaviour for threads that started under it (flow_version, add-then-remove), or repair them with a plan "
    "(`playbook migrate`) and prove the plan with `replay --plan`."
)


@dataclass(frozen=True)
class ShadowOptions:
    rule: ResumeRule
    turn_inputs: Mapping[str, Any] = field(default_factory=dict)
    sample: int = 5
    every: bool = False
    strict: bool = False
    include: frozenset[str] = frozenset()
    """Threads that run whatever the sample (`playbook check`: those a gate finding names)."""
    moving: bool = False
    """The live data may move while the proof runs (`playbook check`): a thread whose copy is older than the
    live head is judged at the copy and reported as such, instead of refusing the whole run (`StaleCopy`)."""
    identities: tuple[Identity, ...] = ()
    """``--identity``: the users each thread is read back and driven as (`config.py`); none: the live ``--header``."""


@dataclass
class Sides:
    """The three sides' traces, and what was noted while running them."""

    a: SideTrace
    a2: SideTrace
    b: SideTrace
    notes: list[str] = field(default_factory=list)
    moved: dict[str, str] = field(default_factory=dict)
    """Threads whose copy is older than the live head (with ``ShadowOptions.moving``): why."""
    driven_notes: list[str] = field(default_factory=list)
    """What the drivers beside the threads say (the read-back, the store searches, the stored assistants): shown
    after the threads run and their classes, the report's summary."""
    extra: list[Finding] = field(default_factory=list)
    """Findings of what is driven beside the threads: the read-back through each side's langgraph.json
    (`config.py`) and the stored assistants (`assistants.py`)."""
    facts: dict[str, ThreadFacts] = field(default_factory=dict)
    """The live facts of the threads run (for the migrated-against-fresh comparison)."""
    plans: dict[str, RebuildPlan] = field(default_factory=dict)
    """How each thread is born again on a fresh thread, or why it cannot be (`proof/shadow/rebuild.py`)."""
    fresh: dict[str, dict[str, Rebuilt]] = field(default_factory=dict)
    """Side ("A", "A2", "B") -> thread id -> its fresh twin, rebuilt and continued there."""


def moved_threads(facts: Sequence[ThreadFacts], side: SideTrace) -> dict[str, str]:
    """Thread id -> how a copy served by the deployed code falls short of the live thread: it lacks the thread,
    or holds it at an older checkpoint than the live head (the live deployment moved on after the copy)."""
    moved: dict[str, str] = {}
    for item in facts:
        trace = side.threads.get(item.thread_id)
        if trace is None or not trace.present:
            moved[item.thread_id] = (
                f"the copy served by the deployed code ({side.label}) does not hold thread {item.thread_id}: the copy is "
                "older than the live data, or the deployed code cannot load it"
            )
        elif item.head is not None and trace.start_checkpoint not in (None, item.head):
            moved[item.thread_id] = (
                f"the copy served by the deployed code ({side.label}) holds thread {item.thread_id} at checkpoint "
                f"{trace.start_checkpoint}, the live server at {item.head}: the copy is older than the live data"
            )
    return moved


def require_fresh_copy(facts: Sequence[ThreadFacts], side: SideTrace) -> None:
    """`StaleCopy` when a copy of the deployed code does not hold a thread at its live checkpoint."""
    for why in moved_threads(facts, side).values():
        raise StaleCopy(
            f"{why}. `langgraph dev` may keep checkpoints in memory until a graceful stop: stop it with Ctrl+C "
            "(SIGINT), start it again, and rerun"
        )


def lost_side(label: str, facts: Sequence[ThreadFacts], why: str) -> SideTrace:
    """A side whose server never came up: every thread lost."""
    side = SideTrace(label=label, notes=[why])
    for item in facts:
        side.threads[item.thread_id] = ThreadTrace(thread_id=item.thread_id, graph_id=item.graph_id, present=False, exists=False)
    return side


def judge(
    sides: Sides,
    selection: Selection,
    snapshots: Sequence[ThreadSnapshot],
    graph_ids: Sequence[str],
    options: ShadowOptions,
    *,
    live: str,
    candidate: str,
) -> GateReport:
    """The report: B against A, with what A and A2 differ in masked."""
    noise: dict[str, set[str]] = {}
    for thread_id, first in sides.a.threads.items():
        second = sides.a2.threads.get(thread_id)
        if second is not None and second.present:
            noise.setdefault(first.graph_id, set()).update(noise_paths(first, second))
    unstable: dict[str, set[tuple[str, str | None, str | None]]] = {}
    for thread_id, first in sides.a.threads.items():
        second = sides.a2.threads.get(thread_id)
        if second is not None:
            unstable.setdefault(first.graph_id, set()).update(
                d.key for d in compare_thread(first, second, noise.get(first.graph_id, set()))
            )
    findings: dict[tuple[str, str, str | None, str | None], Finding] = {}
    counted: dict[tuple[str, str, str | None, str | None], set[str]] = {}
    migrated = judge_migrated(
        sides.facts,
        sides.plans,
        {"A": sides.a.threads, "A2": sides.a2.threads, "B": sides.b.threads},
        sides.fresh,
        noise,
    )
    downgraded = 0
    proofs = {key: proof_of(first) for key, first in sides.a.threads.items() if base_of(key) == key}
    for thread_id, why in sides.moved.items():
        if thread_id in proofs:
            proofs[thread_id].moved = why
    suppressed = 0
    variants: dict[str, int] = {}
    refused_variants: list[str] = []
    for key, first in sides.a.threads.items():
        graph_id, thread_id = first.graph_id, base_of(key)
        label = ""
        if key != thread_id:
            label = _variant_label(first)
            if unproven(first) is not None:
                refused_variants.append(f"thread {thread_id} answered with {label}: {unproven(first)}")
                continue
            variants[graph_id] = variants.get(graph_id, 0) + 1
            if thread_id in proofs:
                proofs[thread_id].steps |= proof_of(first).steps
        theirs = sides.b.threads.get(key)
        if theirs is None:
            if key == thread_id:
                proofs[thread_id].ran = False
            continue
        for diff in compare_thread(first, theirs, noise.get(graph_id, set())):
            if diff.key in unstable.get(graph_id, set()):
                suppressed += 1
                continue
            if label:
                diff = Diff(diff.code, diff.node, diff.field, f"answered with {label}: {diff.detail}")
            elif is_intended(diff, migrated.intended.get(thread_id, set())):
                downgraded += 1
                diff = Diff(
                    INTENDED, diff.node, diff.field, f"{diff.code}, and a thread born on the candidate too: {diff.detail}"
                )
            _add(findings, graph_id, thread_id, diff, selection, options.strict, counted)
            if thread_id in proofs and (diff.code in BLOCKING or options.strict):
                proofs[thread_id].blocks.add(diff.code)
            if thread_id in proofs and diff.code == "SHADOW_OUTPUT_DIFFERS" and proofs[thread_id].other_values is None:
                proofs[thread_id].other_values = diff.field or diff.detail
    for thread_id, found in migrated.breaks.items():
        graph_id = sides.a.threads[thread_id].graph_id
        for diff in found:
            _add(findings, graph_id, thread_id, diff, selection, options.strict, counted)
            if thread_id in proofs:
                proofs[thread_id].blocks.add(diff.code)
    for key, first in sides.a.threads.items():
        reason = unproven(first) if base_of(key) == key else None
        if reason is not None:
            unproven_diff = Diff("SHADOW_UNPROVEN", None, None, reason)
            _add(findings, first.graph_id, key, unproven_diff, selection, options.strict, counted)
    summaries = {g: GraphSummary() for g in graph_ids}
    for snap in snapshots:
        summaries.setdefault(snap.graph_id, GraphSummary()).count(snap)
    notes = list(sides.notes)
    if sides.moved:
        notes.append(
            f"{len(sides.moved)} thread(s) moved on the live server after the copy was made: judged at the copy's "
            "checkpoint, not the live head (rerun to judge the newer head): " + ", ".join(sorted(sides.moved)[:10])
        )
    ran = [key for key in sides.a.threads if base_of(key) == key and not is_cron(key)]
    notes.append(
        f"{len(ran)} of {len(snapshots)} thread(s) run on both codes ({len(selection.classes)} class(es); "
        + ("--all" if options.every else f"one per class plus a seeded sample of {options.sample}")
        + ")"
    )
    notes += class_lines(selection, ran)
    notes += sides.driven_notes
    if sides.plans:
        notes += migrated_notes(migrated, downgraded)
    for graph_id, count in sorted(variants.items()):
        notes.append(
            f"{graph_id}: {count} other answer(s) a client may send (approve, edit, reject, respond, each option...) "
            "driven on copies of the waiting threads, each compared like the thread itself"
        )
    learned: dict[str, int] = {}
    for first in sides.a.threads.values():
        for run in first.runs:
            if run.request.kind == "resume" and "live_answer" in run.request.why:
                learned[first.graph_id] = learned.get(first.graph_id, 0) + 1
    for graph_id, count in sorted(learned.items()):
        notes.append(
            f"{graph_id}: {count} question(s) answered with the answer the same question at the same step got on the "
            "live deployment (read from the live threads' runs)"
        )
    if refused_variants:
        notes.append(
            f"{len(refused_variants)} other answer(s) the deployed code itself does not take, so not held against the "
            "candidate: " + "; ".join(refused_variants[:5])
        )
    for graph_id, paths in sorted(noise.items()):
        if paths:
            shown = ", ".join(sorted(paths)[:5])
            notes.append(
                f"{graph_id}: {len(paths)} value path(s) vary between two runs of the deployed code, masked (e.g. {shown})"
            )
    if suppressed:
        notes.append(
            f"{suppressed} difference(s) also seen between two runs of the deployed code were not held against the candidate"
        )
    for thread_id, first in sides.a.threads.items():
        for index, run in enumerate(first.runs):
            if new_input_failed(first, index):
                notes.append(
                    f"thread {thread_id}: its next turn ({run.request.why or 'new input'}) failed on the deployed code too "
                    f"({(run.failed or '')[:120]}); it is proven by the rerun of its last turn (--turn-input GRAPH=JSON "
                    "gives it an input the deployed code takes)"
                )
    for side in (sides.a, sides.a2, sides.b):
        notes += [f"{side.label}: {n}" for n in side.notes]
    notes += _store_notes(sides, findings, options.strict)
    ordered = sorted(
        [*findings.values(), *sides.extra], key=lambda f: (f.severity != "block", f.graph_id, f.code, f.node or "", f.field or "")
    )
    return GateReport(
        command="shadow",
        live_url=live,
        candidate=candidate,
        strict=options.strict,
        graphs=summaries,
        findings=ordered,
        notes=notes,
        proofs=proofs,
    )


def _variant_label(trace: ThreadTrace) -> str:
    why = trace.runs[0].request.why if trace.runs else ""
    return why.removeprefix("answer variant: ") or "another answer"


def proof_of(thread: ThreadTrace) -> ThreadProof:
    """What the deployed code's side did with ``thread``: the steps it ran, and whether it proves anything."""
    ran = [run for run in thread.runs if not run.failed]
    steps = {name for run in ran for task in run.tasks for name in task.path.split(":") if name}
    reason = unproven(thread)
    return ThreadProof(graph_id=thread.graph_id, ran=bool(ran) and reason is None, steps=steps, unproven=reason)


def unproven(thread: ThreadTrace) -> str | None:
    """Why the deployed code's side proves nothing about the candidate on ``thread``, if it does not."""
    if thread.unreadable:
        return f"the deployed code cannot read it: {thread.unreadable[:200]}"
    if thread.skipped:
        return thread.skipped
    failed = next((r for i, r in enumerate(thread.runs) if r.failed and not new_input_failed(thread, i)), None)
    if failed is not None:
        return f"the deployed code's own {failed.request.kind} failed: {(failed.failed or '')[:200]}"
    return None


def new_input_failed(thread: ThreadTrace, index: int) -> bool:
    """Whether run ``index`` is a next turn that failed on the deployed code after the thread's own last turn ran.

    An idle thread is proven by the rerun of its last turn, with the input it was given; the next turn the drive
    adds is an input the live thread never had (the last one again, or ``--turn-input``). A thread that takes one
    input only (an email per thread, a ticket closed for good) refuses it on the deployed code as on any code: that
    says nothing about the candidate, which the comparison still holds to the same (a failure of another kind, or
    a success, is compared as any run is). Before, such a thread was unproven, and `check` blocked the same code."""
    run = thread.runs[index]
    if not run.failed or run.request.kind != "turn":
        return False
    return any(r.request.kind in ("rerun", "retry") and not r.failed for r in thread.runs[:index])


def _add(
    findings: dict[tuple[str, str, str | None, str | None], Finding],
    graph_id: str,
    thread_id: str,
    diff: Diff,
    selection: Selection,
    strict: bool,
    counted: dict[tuple[str, str, str | None, str | None], set[str]],
) -> None:
    key = (diff.code, graph_id, diff.node, diff.field)
    if key not in findings:
        size = selection.stands_for(thread_id) if thread_id in selection.class_of else 1
        stands = f" (its class holds {size} thread(s))" if size > 1 else ""
        findings[key] = Finding(
            code=diff.code,
            severity="block" if diff.code in BLOCKING or strict else "warn",
            graph_id=graph_id,
            node=diff.node,
            field=diff.field,
            message=f"thread {thread_id}{stands}: {diff.detail}",
            why=WHY.get(diff.code, ""),
            help=HELP,
        )
    seen = counted.setdefault(key, set())
    if thread_id not in seen:  # one thread with several differences of one kind is counted once
        seen.add(thread_id)
        findings[key].add_thread(thread_id)


def _store_notes(sides: Sides, findings: dict[tuple[str, str, str | None, str | None], Finding], strict: bool) -> list[str]:
    """Store items A keeps and B lost (a finding), and items whose values differ (review): `judge_store`."""
    a, a2, b = sides.a.store, sides.a2.store, sides.b.store
    if a is None:
        return ["the long-term store was not compared (the deployed code's server serves none)"]
    if b is None:
        b = {}
    judgement = judge_store(a, a2, b)
    for key in judgement.lost:
        findings[("SHADOW_DATA_LOST", "(store)", None, key)] = Finding(
            code="SHADOW_DATA_LOST",
            severity="block",
            graph_id="(store)",
            field=key,
            message=f"store item {key} is kept by the deployed code and gone on the candidate",
            why=WHY["SHADOW_DATA_LOST"],
            help=HELP,
        )
    changed = judgement.changed
    if changed:
        findings[("SHADOW_OUTPUT_DIFFERS", "(store)", None, None)] = Finding(
            code="SHADOW_OUTPUT_DIFFERS",
            severity="block" if strict else "warn",
            graph_id="(store)",
            field=changed[0],
            message=f"store item(s) {', '.join(changed[:5])} hold other values on the candidate",
            why=WHY["SHADOW_OUTPUT_DIFFERS"],
            help=HELP,
        )
    notes = [f"long-term store compared: {len(a)} item(s) on the deployed code, {len(b)} on the candidate"]
    if judgement.generated:
        notes.append(
            "store keys generated at run time (they differ between two runs of the deployed code), items matched by "
            "namespace and content there: " + ", ".join(judgement.generated[:5])
        )
    return notes


# -- on an Agent Server ----------------------------------------------------------------------


async def shadow_on_servers(
    source: Any,
    snapshots: Sequence[ThreadSnapshot],
    selection: Selection,
    options: ShadowOptions,
    *,
    urls: tuple[str, str, str] | None,
    start: Any,
    headers: Mapping[str, str],
    deadline: Deadline | None = None,
    held: HeldPlan | None = None,
) -> Sides:
    """Run the three sides on servers: ``urls`` (A, B, A2) given, else started by ``start(side)`` (a
    context manager factory that yields a server URL, or raises `ServerDown`); every request to a side
    within ``deadline`` (the command's); ``held``: the work the live server holds, sent on every side
    (`held_runs.py`)."""
    from migrations_playbook.proof.shadow.api import drive_side, read_facts
    from migrations_playbook.proof.shadow.assistants import judge_assistants, prove_assistants
    from migrations_playbook.proof.shadow.beside import read_back_all, store_reads
    from migrations_playbook.proof.shadow.held_runs import fire_crons
    from migrations_playbook.proof.shadow.rebuild import read_plan, rebuild_side

    by_id = {t.thread_id: t for t in snapshots}
    gate = asyncio.Semaphore(8)

    async def facts_of(thread_id: str) -> ThreadFacts:
        snap = by_id[thread_id]
        async with gate:
            return await read_facts(source.client, thread_id, snap.graph_id, snap.status)

    facts = list(await asyncio.gather(*(facts_of(t) for t in selection.chosen)))
    if held is not None:
        facts = held.attach(facts)

    async def plan_of(item: ThreadFacts) -> RebuildPlan:
        async with gate:
            return await read_plan(source.client, item.thread_id, item.graph_id)

    plans = {p.thread_id: p for p in await asyncio.gather(*(plan_of(item) for item in facts))}
    rule = with_live_answers(options.rule, facts)
    with contextlib.ExitStack() as stack:
        if urls is None:
            started = await asyncio.gather(*(asyncio.to_thread(_enter, stack, start, side) for side in ("A", "B", "A2")))
            url_a, url_b, url_a2 = started
        else:
            url_a, url_b, url_a2 = urls
        if isinstance(url_a, ServerDown) or isinstance(url_a2, ServerDown):
            down = url_a if isinstance(url_a, ServerDown) else url_a2
            raise UsageError(f"the deployed code's staging server did not start, so nothing can be compared: {down}")
        up_b = None if isinstance(url_b, ServerDown) else url_b
        identities = _identities(options, headers)
        owners, extra, extra_notes = await read_back_all(
            source, snapshots, identities, (url_a, up_b, url_a2), deadline, chosen=selection.chosen
        )
        a = await drive_side(
            "A (deployed code)",
            url_a,
            facts,
            rule=rule,
            turn_inputs=options.turn_inputs,
            headers=headers,
            deadline=deadline,
            owners=owners,
        )
        if held is not None and held.crons:
            await fire_crons(a, url_a, headers, held.crons, deadline=deadline)
        moved = moved_threads(facts, a) if options.moving else {}
        if not options.moving:
            require_fresh_copy(facts, a)
        fresh: dict[str, dict[str, Rebuilt]] = {}

        async def reborn(side: str, url: str) -> None:
            """The live threads born again on fresh threads of ``side`` and continued like their migrated twins."""
            live_plans = {t: p for t, p in plans.items() if t not in moved}
            fresh[side] = await rebuild_side(url, facts, live_plans, a.threads, headers=headers, deadline=deadline)

        await reborn("A", url_a)

        async def follow(label: str, url: str) -> SideTrace:
            """A side that sends A's requests."""
            side = await drive_side(
                label,
                url,
                facts,
                rule=rule,
                turn_inputs=options.turn_inputs,
                leader=a,
                headers=headers,
                deadline=deadline,
                owners=owners,
            )
            if held is not None and held.crons:
                await fire_crons(side, url, headers, held.crons, deadline=deadline)
            return side

        if isinstance(url_b, ServerDown):
            b = lost_side("B (candidate)", facts, f"the candidate's staging server did not start: {url_b}")
            a2 = await follow("A2 (deployed code again)", url_a2)
        else:
            a2, b = await asyncio.gather(follow("A2 (deployed code again)", url_a2), follow("B (candidate)", url_b))
            await asyncio.gather(reborn("A2", url_a2), reborn("B", url_b))
        if options.moving:
            moved.update({t: why for t, why in moved_threads(facts, a2).items() if t not in moved})
        else:
            require_fresh_copy(facts, a2)
        searched, searched_notes = await store_reads(identities, (url_a, up_b, url_a2), a, a2, b, deadline)
        graph_ids = sorted({t.graph_id for t in snapshots} | {f.graph_id for f in facts})
        found, notes = judge_assistants(
            await prove_assistants(
                source.url,
                identities,
                graph_ids,
                facts,
                options.turn_inputs,
                (url_a, up_b, url_a2),
                sample=options.sample,
                every=options.every,
                deadline=deadline,
            )
        )
    return Sides(
        a=a,
        a2=a2,
        b=b,
        moved=moved,
        extra=extra + searched + found,
        driven_notes=extra_notes + searched_notes + notes,
        facts={f.thread_id: f for f in facts},
        plans=plans,
        fresh=fresh,
    )


def _identities(options: ShadowOptions, headers: Mapping[str, str]) -> list[Identity]:
    from migrations_playbook.proof.shadow.config import HEADER_IDENTITY

    return list(options.identities) or [Identity(HEADER_IDENTITY, dict(headers))]


def with_live_answers(rule: ResumeRule, facts: Sequence[ThreadFacts]) -> ResumeRule:
    """``rule`` that also answers a question with what the same question at the same step got on the live
    deployment (`drive.live_answers`, from the threads' runs), after the payload's own value."""
    learned: dict[Any, Any] = {}
    for item in facts:
        for key, value in item.answers.items():
            learned.setdefault(key, value)
    if not learned:
        return rule
    return dataclasses.replace(rule, learned={**learned, **rule.learned})


class ServerDown(str):
    """A staging server that did not start: why (its log tail)."""


def _enter(stack: contextlib.ExitStack, start: Any, side: str) -> str:
    from migrations_playbook.staging.server import ServerStartError

    try:
        return str(stack.enter_context(start(side)))
    except ServerStartError as exc:
        return ServerDown(str(exc)[-1500:])


def candidate_path(text: str) -> Path:
    path = Path(text)
    if not path.is_file():
        raise UsageError(f"--candidate {text}: no such file")
    return path
