"""`playbook migrate`: repair the threads a change would break, over any `Source` (the flow is `repair/flow.py`).

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

import asyncio
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from migrations_playbook.commands.requests import MigrateRequest
from migrations_playbook.errors import EXIT_BLOCKED, EXIT_PASS, UsageError
from migrations_playbook.repair.engine import MigrateRefused
from migrations_playbook.repair.flow import MigrationRun, load_migration, migrate
from migrations_playbook.repair.journal import Journal, journal_path
from migrations_playbook.repair.report import MigrateReport
from migrations_playbook.sources.base import Source, SourceRequest
from migrations_playbook.sources.factory import open_source
from migrations_playbook.sources.repair_model import Mode


def _rule(request: MigrateRequest) -> Any:
    from migrations_playbook.proof.resume import ResumeMapError, ResumeRule, load_resume_map

    answers = request.answers
    if request.persistence is None and answers.given:
        raise UsageError("--resume, --resume-map and --auto-resume answer questions on the staging copy: add --persistence DIR")
    try:
        fallback = json.loads(answers.resume) if answers.resume is not None else None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--resume must be JSON: {exc}") from None
    try:
        rule = ResumeRule(by_kind=load_resume_map(answers.resume_map), derive=answers.auto_resume, fallback=fallback)
    except ResumeMapError as exc:
        raise UsageError(str(exc)) from None
    return rule if rule.active else None


def run(request: MigrateRequest) -> int:
    from migrations_playbook.staging.live_copy import start_staging

    rule = _rule(request)
    migration = load_migration(request.candidate, request.plan, request.rollback)
    source = open_source(request.source)
    if request.persistence is not None:
        source.require("dev_copy", "--persistence")
    mode: Mode = (
        "staging"
        if request.persistence is not None
        else "rollback"
        if request.rollback
        else "apply"
        if request.apply
        else "dry run"
    )
    with ExitStack() as stack:
        staging_url, held = None, None
        if request.persistence is not None:
            try:
                server = start_staging(Path(request.candidate), request.persistence, stack)
            except FileNotFoundError as exc:
                raise UsageError(str(exc)) from None
            staging_url, held = server.url, server.held.note()
        journal = Journal(journal_path(migration.plan.migration, source.address), migration.plan.migration)
        try:
            report = asyncio.run(_migrate(source, request, migration, mode, staging_url, rule, journal))
        except MigrateRefused as exc:
            raise UsageError(str(exc)) from None
        if held:
            report.notes.append(held)
    _print(report, request.format)
    return EXIT_PASS if report.ok else EXIT_BLOCKED


async def _migrate(
    source: Source,
    request: MigrateRequest,
    migration: MigrationRun,
    mode: Mode,
    staging_url: str | None,
    rule: Any,
    journal: Journal,
) -> MigrateReport:
    async with source as live:
        if staging_url is None:
            return await migrate(live, migration, mode=mode, rule=rule, strict=request.strict, journal=journal)
        # Entered inside the live source's block, and left without its own error mapping: a staging
        # server that fails midway is reported as the live block reports it (as it always was).
        staging = open_source(SourceRequest(live=staging_url, headers=request.source.headers, deadline=request.source.deadline))
        await staging.__aenter__()
        try:
            return await migrate(live, migration, mode=mode, staging=staging, rule=rule, strict=request.strict)
        finally:
            await staging.__aexit__(None, None, None)


def _print(report: MigrateReport, fmt: str) -> None:
    from migrations_playbook.render.migrate import render

    print(render(report, fmt))
