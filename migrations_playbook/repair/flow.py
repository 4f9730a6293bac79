"""`playbook migrate`'s order of operations, once, over any `Source` (the engine is `engine.py`).

`load_migration` reads the plan and checks it against the candidate (nothing is read from the
source yet). `migrate` then, on the source (or, with ``staging``, on a staging copy of it that
runs the candidate):

1. checks the plan's graphs are there and, where the source runs code (capability
   ``served_code``), which code it runs, refusing a write that code cannot take (`check_moment`);
   a source that runs no code (a checkpointer) is written through the candidate in-process;
2. reads every thread of the plan's graphs and judges it (the gate before); on staging, checks
   the copy holds every live thread's latest checkpoint;
3. rollback: restores the pre-migration heads (and contexts); else plans each thread's change
   and each assistant's context, and (but for a dry run) writes them;
4. reads and judges again (the gate after); on staging, resumes each repaired thread (`prove.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrations_playbook.errors import UsageError
from migrations_playbook.model import CandidateGraph, GateReport
from migrations_playbook.repair.engine import MigrateRefused, Scan, encode_writes, judge, plan_assistants, plan_threads
from migrations_playbook.repair.journal import Journal, Op, Previous
from migrations_playbook.repair.plan import Plan, PlanError
from migrations_playbook.repair.prove import AnswerRule, prove_thread
from migrations_playbook.repair.report import MigrateReport
from migrations_playbook.sources.base import Source
from migrations_playbook.sources.repair_model import MOVED_KEY, Mode, Served, ThreadOutcome, ThreadView, ViewRequest


@dataclass(frozen=True)
class MigrationRun:
    """A plan checked against the candidate, with the candidate's graphs."""

    plan: Plan
    """Checked against the candidate, its functions imported."""
    registered: set[str]
    """Every graph the candidate registers."""
    candidates: dict[str, CandidateGraph]
    """The plan's graphs, as the candidate describes them."""
    compiled: dict[str, Any]
    """The plan's graphs, compiled from the candidate."""
    candidate: str
    """The candidate's langgraph.json, as the report names it."""


def load_migration(candidate: str | Path, plan_path: Path, rollback: str | None = None) -> MigrationRun:
    """The plan (checked against the candidate, functions imported) and the candidate's graphs;
    ``rollback``: the migration id asked to roll back, which must be the plan's."""
    from migrations_playbook.graphcode.candidate import _search_roots, graph_specs, load_compiled, read_config
    from migrations_playbook.graphcode.describe import describe
    from migrations_playbook.repair.plan import check_against, load_plan, resolve_functions

    try:
        plan = load_plan(plan_path)
    except PlanError as exc:
        raise UsageError(str(exc)) from None
    config_path = Path(candidate).resolve()
    config = read_config(config_path)
    registered = set(graph_specs(config))
    missing = [g for g in plan.graphs if g not in registered]
    if missing:
        raise UsageError(
            f"plan {plan.migration}: graph(s) {', '.join(missing)} not in the candidate "
            f"(it registers {', '.join(sorted(registered)) or 'none'})"
        )
    compiled = load_compiled(config_path, plan.graphs)
    candidates = {gid: describe(gid, graph) for gid, graph in compiled.items()}
    try:
        plan = check_against(plan, candidates, registered)
        plan = resolve_functions(plan, _search_roots(config_path, config))
    except PlanError as exc:
        raise UsageError(str(exc)) from None
    if rollback is not None and rollback != plan.migration:
        raise UsageError(f"--rollback {rollback}: the plan is migration {plan.migration!r}; roll back with its own plan")
    return MigrationRun(plan=plan, registered=registered, candidates=candidates, compiled=compiled, candidate=str(candidate))


def check_moment(plan: Plan, served: Mapping[str, Served], mode: Mode, live_url: str) -> None:
    """Refuse, before anything is written, a write the serving code cannot take (`MigrateRefused`)."""
    if mode == "apply":
        wrong = sorted(g for g, s in served.items() if s != "candidate")
        if wrong:
            raise MigrateRefused(
                f"--apply writes through the graph the server runs, and {live_url} runs the live code of "
                f"{', '.join(wrong)}, not the candidate (update_state there would drop the candidate's new keys and "
                "schedule the live graph's nodes). Apply after the rollout, on the server that runs the candidate "
                "(keep the runtime guard on meanwhile: it refuses runs on the threads still to migrate); prove the plan "
                "first on a staging copy with --persistence DIR. Nothing was written"
            )
    if mode == "staging":
        wrong = sorted(g for g, s in served.items() if s != "candidate")
        if wrong:
            raise MigrateRefused(f"the staging copy does not run the candidate's {', '.join(wrong)}; nothing was written")
    if mode == "rollback":
        stranding = [s for s in plan.steps if s.op == "move_node" or (s.op == "rename_key" and s.get("old") == "drop")]
        on_candidate = sorted(g for g, s in served.items() if s == "candidate" and any(st.graph == g for st in stranding))
        if on_candidate:
            raise MigrateRefused(
                f"{live_url} still runs the candidate's {', '.join(on_candidate)}: restored heads would be stranded "
                f"out of sight ({', '.join(s.label for s in stranding)}: the candidate has neither the old node nor "
                "the old key, and Agent Server drops the thread's interrupt record on the restore). Roll the code back "
                "first, then --rollback on the server running the code you rolled back to. Nothing was written"
            )


async def migrate(
    live: Source,
    run: MigrationRun,
    *,
    mode: Mode,
    staging: Source | None = None,
    rule: AnswerRule | None = None,
    strict: bool = False,
    journal: Journal | None = None,
) -> MigrateReport:
    """Run ``run``'s plan in ``mode`` on ``live`` (entered), or with ``staging`` (entered; mode ``staging``) on
    that copy of it, which runs the candidate: ``live`` is then only read (its locks, its heads). ``rule``
    answers the questions the proof on staging meets (an inactive one answers none). ``journal``: where
    ``apply`` and ``rollback`` record each thread before and after they change it (`journal.py`), and what
    an earlier run of them left unfinished is read from. Raises `UsageError` (a graph the source lacks, a
    plan a thread makes fail: nothing written) and `MigrateRefused`."""
    plan, candidates, compiled = run.plan, run.candidates, run.compiled
    target = staging if staging is not None else live
    await target.repair_graphs(plan.graphs, migration=plan.migration, owners=run.registered)
    served: dict[str, Served] = {}
    for graph_id in plan.graphs:
        # a source that runs no code (a checkpointer) is written through the candidate, compiled in-process
        served[graph_id] = (
            await target.served_code(graph_id, compiled[graph_id], candidates[graph_id])
            if target.supports("served_code")
            else "candidate"
        )
    if target.supports("served_code"):
        check_moment(plan, served, mode, live.address)
    runs_candidate = staging is None and not all(s == "live code" for s in served.values())
    locks = await live.code_locks(serves_candidate=runs_candidate)
    live_graphs = await target.repair_live_graphs(plan.graphs, served, locks)
    request = ViewRequest(
        graph_ids=plan.graphs,
        served=served,
        candidates=candidates,
        compiled=compiled,
        locks=locks,
        moved_from=[s.get("from") for s in plan.steps if s.op == "move_node"],
        migration=plan.migration,
        owners=frozenset(run.registered),
    )
    notes = live.repair_notes({s.op for s in plan.steps}, served, mode, locks)

    async def scan() -> Scan:
        views = await target.read_views(request)
        assistants = {g: await target.assistant_records(g) for g in plan.graphs} if target.supports("assistants") else {}
        return Scan(views=views, assistants=assistants, live=live_graphs, served=served)

    def gate(found: Scan) -> GateReport:
        return judge(
            found, candidates, run.registered, strict=strict, live_url=target.address, candidate_path=run.candidate, notes=notes
        )

    before_scan = await scan()
    if staging is not None:
        await live.check_fresh(before_scan.views)
    before = gate(before_scan)
    report = MigrateReport(
        migration=plan.migration,
        mode=mode,
        live_url=live.address,
        candidate=run.candidate,
        served=served,
        before=before,
        threads=[],
        notes=notes,
        staging_url=staging.address if staging is not None else None,
        blocked=[v.thread_id for vs in before_scan.views.values() for v in vs if v.blocks],
        source=live.repair_kind,
    )
    op: Op = "rollback" if mode == "rollback" else "apply"
    journal = journal if mode != "staging" else None  # a staging copy is thrown away: nothing to resume
    previous = journal.previous(op) if journal is not None else Previous()
    if (note := previous.note(op)) is not None:
        report.notes.append(note)
    if mode == "rollback":
        async with target.writing(compiled):
            if journal is not None:
                journal.start(op)
            for graph_id in plan.graphs:
                outcomes = await target.plan_rollback(plan.migration, graph_id, before_scan.views[graph_id])
                for outcome in outcomes:
                    if outcome.action == "would restore":
                        if journal is not None:
                            journal.writing(op, outcome.thread_id, graph_id, outcome.base)
                        await target.restore_thread(outcome, plan.migration)
                        if journal is not None:
                            journal.done(op, outcome.thread_id, outcome.action, outcome.new_head)
                    _was_unfinished(outcome, previous, op)
                report.threads += outcomes
                if target.supports("assistants"):
                    report.assistants += await target.rollback_assistants(plan.migration, graph_id)
            if journal is not None:
                journal.end(op)
        report.after = gate(await scan())
        return report
    try:
        report.threads = plan_threads(plan, before_scan, candidates)
        report.assistants = plan_assistants(plan, before_scan, candidates)
    except PlanError as exc:
        raise UsageError(f"{exc} (nothing was written)") from None
    views = {v.thread_id: v for vs in before_scan.views.values() for v in vs}
    for outcome in report.threads:
        _was_unfinished(outcome, previous, op)
        if outcome.action == "already applied":
            _check_move(outcome, views[outcome.thread_id])
    if mode == "dry run":
        for outcome in report.threads:
            if outcome.action == "already applied":
                await _finish(target, outcome, plan.migration, write=False)
        return report
    async with target.writing(compiled):
        if journal is not None:
            journal.start(op)
        for outcome in report.threads:
            if outcome.action == "would change" and outcome.change is not None:
                values = encode_writes(outcome.change.writes, candidates.get(outcome.graph_id)) or None
                if journal is not None:
                    journal.writing(op, outcome.thread_id, outcome.graph_id, outcome.base)
                await target.write_thread(outcome, plan.migration, values)
                if journal is not None:
                    journal.done(op, outcome.thread_id, outcome.action, outcome.new_head)
            elif outcome.action == "already applied":
                # written by an earlier run, which may have stopped before the thread's last step
                if journal is not None and outcome.thread_id in previous.threads:
                    journal.writing(op, outcome.thread_id, outcome.graph_id, outcome.base)
                await _finish(target, outcome, plan.migration, write=True)
                if journal is not None and outcome.thread_id in previous.threads:
                    journal.done(op, outcome.thread_id, outcome.action, outcome.new_head)
        for item in report.assistants:
            if item.action == "would change":
                await target.write_assistant(item, plan.migration)
        if journal is not None:
            journal.end(op)
    report.after = gate(await scan())
    if mode == "staging":
        answers = rule if rule is not None and rule.active else None
        for outcome in report.threads:
            if outcome.action == "changed":
                proof = await prove_thread(target, outcome, views[outcome.thread_id], answers)
                if proof is not None:
                    report.proofs.append(proof)
    return report


def _was_unfinished(outcome: ThreadOutcome, previous: Previous, op: Op) -> None:
    """Say so in the outcome when the journal shows an earlier run stopped while it wrote this thread."""
    entry = previous.threads.get(outcome.thread_id)
    if entry is None:
        return
    said = f"a previous --{op} stopped while writing it (run {entry.get('run')})"
    outcome.reason = f"{said}; {outcome.reason}" if outcome.reason else said


def _check_move(outcome: ThreadOutcome, view: ThreadView) -> None:
    """A thread an earlier run moved (its head says ``from->to``) must wait at the new node: that run verified it
    after the write, unless it stopped first. Not there: ``failed`` (exit 1), as that run would have said."""
    moved = str((view.metadata or {}).get(MOVED_KEY) or "")
    target = moved.partition("->")[2]
    if target and target not in view.next:
        outcome.action = "failed"
        outcome.reason = f"{outcome.reason}; written, but the thread's next is {list(view.next)}, not {target!r}"


async def _finish(target: Source, outcome: ThreadOutcome, migration: str, *, write: bool) -> None:
    """Complete what an earlier run left of a thread whose checkpoint it wrote (`RepairSource.finish_thread`)."""
    left = await target.finish_thread(outcome, migration, write=write)
    if left is not None:
        outcome.reason = f"{outcome.reason}; {left}" if outcome.reason else left
