"""`playbook migrate`: flags, the order of operations, and the exit codes (the engine is `migrate.py`).

    playbook migrate (--live URL | --checkpointer URI) --candidate PATH/langgraph.json --plan FILE
                     [--apply | --persistence DIR | --rollback ID]
                     [--live-contract DIR] [--strict] [--format table|json] [--header 'Name: value']...
                     [--auto-resume] [--resume-map JSON|@FILE]... [--resume JSON]      (with --persistence)

Exit codes as the gate's: 0 the gate passes afterwards (dry run: the plan has a change for
every blocked thread; rollback: every migrated thread is restored), 1 it still blocks (or a
write or a staging proof failed), 2 usage (a bad plan, a step the candidate cannot take,
``--apply`` at the wrong moment: nothing was written), 3 the server is unreachable.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from migrations_playbook.cli import EXIT_BLOCKED, EXIT_PASS, UsageError, _live


def add_parser(sub: Any) -> None:
    """Register ``migrate`` on the CLI's subparsers."""
    parser = sub.add_parser(
        "migrate",
        help="repair the threads a change would break (a dry run unless --apply); prove it on a staging copy",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--live", metavar="URL", help="the Agent Server whose threads to repair")
    source.add_argument(
        "--checkpointer",
        metavar="URI",
        help="a self-hosted checkpointer instead (postgresql://... or sqlite:///ABS/PATH.db; needs "
        "--live-contract): read-only reads, writes through the candidate with the store's saver",
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'Name: value'",
        help="extra HTTP header for the server, e.g. 'Authorization: Bearer ...' (repeatable)",
    )
    parser.add_argument("--candidate", required=True, metavar="PATH/langgraph.json")
    parser.add_argument(
        "--plan", required=True, metavar="FILE", help="the migration plan (JSON), e.g. records/0006-....plan.json"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--apply", action="store_true", help="write the changes (on a server that runs the candidate: after the rollout)"
    )
    mode.add_argument(
        "--persistence",
        metavar="DIR",
        help="the proof: copy this `langgraph dev` folder, serve it with the candidate, apply the plan "
        "there and resume the repaired threads; the live server is only read",
    )
    mode.add_argument("--rollback", metavar="ID", help="restore the pre-migration heads of migration ID (the plan's id)")
    parser.add_argument(
        "--live-contract",
        metavar="DIR",
        help="contract locks of the code the threads last ran (needed on a server that runs the candidate: "
        "its interrupt nodes name the steps the candidate hides)",
    )
    parser.add_argument("--strict", action="store_true", help="the gate's --strict: FIELD_DROPPED blocks")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--resume", metavar="JSON", help="with --persistence: fallback resume value (as replay's)")
    parser.add_argument(
        "--resume-map",
        action="append",
        default=[],
        metavar="JSON|@FILE",
        help="with --persistence: interrupt 'kind' -> resume value (as replay's)",
    )
    parser.add_argument(
        "--auto-resume",
        action="store_true",
        help="with --persistence: answer each question with the value its payload gives (as replay's)",
    )
    parser.set_defaults(func=cmd_migrate)


def _rule(args: argparse.Namespace) -> Any:
    from migrations_playbook.proof.replay import ResumeMapError, ResumeRule, load_resume_map

    if not args.persistence and (args.resume is not None or args.resume_map or args.auto_resume):
        raise UsageError("--resume, --resume-map and --auto-resume answer questions on the staging copy: add --persistence DIR")
    try:
        fallback = json.loads(args.resume) if args.resume is not None else None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--resume must be JSON: {exc}") from None
    try:
        rule = ResumeRule(by_kind=load_resume_map(args.resume_map), derive=args.auto_resume, fallback=fallback)
    except ResumeMapError as exc:
        raise UsageError(str(exc)) from None
    return rule if rule.active else None


def _load(args: argparse.Namespace) -> tuple[Any, set[str], dict[str, Any], dict[str, Any]]:
    """The plan (checked against the candidate, functions imported) and the candidate's graphs."""
    from migrations_playbook.graphcode.candidate import _search_roots, graph_specs, load_compiled, read_config
    from migrations_playbook.graphcode.describe import describe
    from migrations_playbook.repair.plan import PlanError, check_against, load_plan, resolve_functions

    try:
        plan = load_plan(Path(args.plan))
    except PlanError as exc:
        raise UsageError(str(exc)) from None
    config_path = Path(args.candidate).resolve()
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
    if args.rollback is not None and args.rollback != plan.migration:
        raise UsageError(f"--rollback {args.rollback}: the plan is migration {plan.migration!r}; roll back with its own plan")
    return plan, registered, candidates, compiled


def cmd_migrate(args: argparse.Namespace) -> int:
    from migrations_playbook.proof.replay import StaleCopy, start_staging
    from migrations_playbook.repair import engine as migrate

    rule = _rule(args)
    plan, registered, candidates, compiled = _load(args)
    if args.checkpointer:
        from migrations_playbook.repair import store as migrate_store

        report = migrate_store.run(args, plan, registered, candidates, compiled)
        _print(report, args.format)
        return EXIT_PASS if report.ok else EXIT_BLOCKED
    with ExitStack() as stack:
        staging_url = None
        if args.persistence:
            try:
                staging_url = start_staging(Path(args.candidate), Path(args.persistence), stack).url
            except FileNotFoundError as exc:
                raise UsageError(str(exc)) from None
        try:
            report = asyncio.run(_run(args, plan, registered, candidates, compiled, staging_url, rule))
        except StaleCopy as exc:
            raise UsageError(str(exc)) from None
        except migrate.MigrateRefused as exc:
            raise UsageError(str(exc)) from None
    _print(report, args.format)
    return EXIT_PASS if report.ok else EXIT_BLOCKED


def _print(report: Any, fmt: str) -> None:
    from migrations_playbook.repair import engine as migrate

    if fmt == "json":
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2, default=str))
    else:
        print(migrate.render_table(report))


async def _locks(args: argparse.Namespace, live: Any, source: Any, served: Mapping[str, str]) -> dict[str, Any] | None:
    from migrations_playbook.sources import api as live_side

    if args.live_contract:
        path = Path(args.live_contract)
        if not path.exists():
            raise UsageError(f"--live-contract {args.live_contract}: no such file or folder")
        try:
            return live_side.read_locks(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"--live-contract {args.live_contract}: not a folder of contract locks ({exc})") from None
    if source is not live:  # staging: the live server runs the code the threads last ran
        return await live_side.served_locks(live)
    if all(s == "live code" for s in served.values()):
        return await live_side.served_locks(live)
    return None  # a server running the candidate serves the candidate's locks: not the live side


async def _run(
    args: argparse.Namespace,
    plan: Any,
    registered: set[str],
    candidates: dict[str, Any],
    compiled: dict[str, Any],
    staging_url: str | None,
    rule: Any,
) -> Any:
    from migrations_playbook.model import LiveGraph, Topology
    from migrations_playbook.proof.replay import StaleCopy
    from migrations_playbook.repair import engine as migrate
    from migrations_playbook.repair.plan import PlanError
    from migrations_playbook.sources import api as live_side

    async with _live(args) as live:
        source = live
        if staging_url is not None:
            source = live_side.connect(staging_url, args.headers)
            await live_side.ensure_reachable(source, staging_url)
        try:
            served_ids = await live_side.live_graph_ids(source)
            absent = [g for g in plan.graphs if g not in served_ids]
            if absent:
                raise UsageError(
                    f"graph(s) {', '.join(absent)} of plan {plan.migration} not on the server; it serves: "
                    f"{', '.join(sorted(served_ids)) or 'none'}"
                )
            served = {g: await migrate.served_code(source, g, served_ids[g], compiled[g], candidates[g]) for g in plan.graphs}
            mode: migrate.Mode = (
                "staging" if staging_url else "rollback" if args.rollback else "apply" if args.apply else "dry run"
            )
            _check_moment(plan, served, mode, args)
            locks = await _locks(args, live, source, served)
            live_graphs: dict[str, LiveGraph] = {}
            for graph_id in plan.graphs:
                lock = (locks or {}).get(graph_id)
                if served[graph_id] == "candidate":
                    if lock is None:
                        raise UsageError(
                            f"the server runs the candidate's {graph_id}, which hides the steps it no longer has: pass "
                            "--live-contract DIR, the contract locks of the code these threads last ran "
                            "(`playbook contract --write` on the deployed commit)"
                        )
                    live_graphs[graph_id] = LiveGraph(
                        graph_id=graph_id,
                        topology=Topology.from_lock(lock),
                        reducers=live_side.reducers_from_lock(lock),
                        lock=dict(lock),
                    )
                else:
                    live_graphs.update(await live_side.live_graphs(source, {graph_id: served_ids[graph_id]}, locks))
            moved_from = [s.get("from") for s in plan.steps if s.op == "move_node"]

            async def scan() -> Any:
                views = {
                    g: await migrate.read_threads(
                        source, g, served=served[g], candidate=candidates[g], lock=(locks or {}).get(g), moved_from=moved_from
                    )
                    for g in plan.graphs
                }
                assistants = {g: await _assistants(source, g) for g in plan.graphs}
                return migrate.Scan(views=views, assistants=assistants, live=live_graphs, served=served)

            notes = _notes(plan, served, mode, args, locks)

            def gate(found: Any) -> Any:
                return migrate.judge(
                    found,
                    candidates,
                    registered,
                    strict=args.strict,
                    live_url=staging_url or args.live,
                    candidate_path=str(args.candidate),
                    notes=notes,
                )

            before_scan = await scan()
            if staging_url is not None:
                await _check_fresh(live, before_scan, StaleCopy)
            before = gate(before_scan)
            report = migrate.MigrateReport(
                migration=plan.migration,
                mode=mode,
                live_url=args.live,
                candidate=str(args.candidate),
                served=served,
                before=before,
                threads=[],
                notes=notes,
                staging_url=staging_url,
                blocked=[v.thread_id for vs in before_scan.views.values() for v in vs if v.blocks],
            )
            if mode == "rollback":
                for graph_id in plan.graphs:
                    outcomes = await migrate.plan_rollback(source, plan, graph_id, before_scan.views[graph_id])
                    for outcome in outcomes:
                        if outcome.action == "would restore":
                            await migrate.restore_thread(source, outcome)
                    report.threads += outcomes
                    report.assistants += await migrate.rollback_assistants(source, plan, graph_id)
                report.after = gate(await scan())
                return report
            try:
                report.threads = migrate.plan_threads(plan, before_scan, candidates)
                report.assistants = migrate.plan_assistants(plan, before_scan, candidates)
            except PlanError as exc:
                raise UsageError(f"{exc} (nothing was written)") from None
            if mode == "dry run":
                return report
            for outcome in report.threads:
                if outcome.action == "would change":
                    await migrate.write_thread(source, outcome, plan, candidates.get(outcome.graph_id))
            for item in report.assistants:
                if item.action == "would change":
                    await migrate.write_assistant(source, item, plan)
            report.after = gate(await scan())
            if mode == "staging":
                views = {v.thread_id: v for vs in before_scan.views.values() for v in vs}
                for outcome in report.threads:
                    if outcome.action == "changed":
                        proof = await migrate.prove_thread(source, outcome, views[outcome.thread_id], rule)
                        if proof is not None:
                            report.proofs.append(proof)
            return report
        finally:
            if source is not live:
                await source.aclose()


async def _assistants(client: Any, graph_id: str) -> list[dict[str, Any]]:
    """Every assistant of ``graph_id`` in the shape the gate's rules read, with its metadata and version."""
    found = []
    offset = 0
    while True:
        page = await client.assistants.search(graph_id=graph_id, limit=100, offset=offset)
        for assistant in page:
            meta = assistant.get("metadata") or {}
            found.append(
                {
                    "assistant_id": assistant["assistant_id"],
                    "context": assistant.get("context") or {},
                    "system": meta.get("created_by") == "system",
                    "metadata": meta,
                    "version": assistant.get("version"),
                }
            )
        if len(page) < 100:
            break
        offset += len(page)
    return found


def _check_moment(plan: Any, served: Mapping[str, str], mode: str, args: argparse.Namespace) -> None:
    """Refuse, before anything is written, a write the serving code cannot take."""
    from migrations_playbook.repair.engine import MigrateRefused

    if mode == "apply":
        wrong = sorted(g for g, s in served.items() if s != "candidate")
        if wrong:
            raise MigrateRefused(
                f"--apply writes through the graph the server runs, and {args.live} runs the live code of "
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
                f"{args.live} still runs the candidate's {', '.join(on_candidate)}: restored heads would be stranded "
                f"out of sight ({', '.join(s.label for s in stranding)}: the candidate has neither the old node nor "
                "the old key, and Agent Server drops the thread's interrupt record on the restore). Roll the code back "
                "first, then --rollback on the server running the code you rolled back to. Nothing was written"
            )


def _notes(plan: Any, served: Mapping[str, str], mode: str, args: argparse.Namespace, locks: Any) -> list[str]:
    notes = []
    if args.live_contract:
        notes.append(f"the live code's locks from {args.live_contract}")
    elif locks is not None:
        notes.append("the live code's locks as the live server serves them")
    for graph_id, s in sorted(served.items()):
        if s == "candidate":
            notes.append(
                f"{graph_id}: the server runs the candidate; steps it no longer schedules and keys it no longer "
                "declares were read from each thread's record (its last run's interrupts and values)"
            )
        elif mode == "dry run":
            notes.append(
                f"{graph_id}: the server runs the live code. Apply AFTER the rollout, on the server running the candidate "
                "(update_state writes through the graph the server runs); prove it first on a staging copy: "
                "--persistence DIR"
            )
    if any(s.op == "move_node" for s in plan.steps):
        notes.append(
            "a moved thread waits at its new node without a question until it is continued: a run with no input asks it "
            "again there, and a client's Command(resume=answer) is taken by that node's first interrupt()"
        )
    return notes


async def _check_fresh(live: Any, scan: Any, stale: type[Exception]) -> None:
    """The staging copy holds every live thread's latest checkpoint (else the proof is on old data)."""
    from langgraph_sdk.errors import NotFoundError

    for views in scan.views.values():
        for view in views:
            try:
                state = await live.threads.get_state(view.thread_id)
            except NotFoundError:  # a thread only staging has is not a stale copy of a live one
                continue
            live_head = (state.get("checkpoint") or {}).get("checkpoint_id")
            if live_head != view.head:
                raise stale(
                    f"staging does not hold thread {view.thread_id}'s latest checkpoint (live {live_head}, staging "
                    f"{view.head}): the copy is older than the live state. `langgraph dev` may keep checkpoints in memory "
                    "until a graceful stop: stop it with Ctrl+C (SIGINT), start it again, and rerun"
                )
