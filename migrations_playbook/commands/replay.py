"""`playbook replay`: the live threads against the candidate on a staging copy, over any `Source`.

The source makes (or reaches) its staging copy: an Agent Server's is a staging Agent Server
(``--persistence DIR``, ``--staging-url URL``), a store's a throwaway copy of the store with the
candidate compiled in-process on it. The comparison is `proof/replay.py`'s, the resume values are
`proof/resume.py`'s, and ``--plan`` applies a migration plan on the copy first (`proof/replay_plan.py`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from migrations_playbook.commands.requests import ReplayRequest, ResumeFlags
from migrations_playbook.errors import EXIT_BLOCKED, EXIT_PASS, UsageError
from migrations_playbook.model import GateReport
from migrations_playbook.proof.resume import ResumeMapError, ResumeRule, load_resume_map
from migrations_playbook.render import render
from migrations_playbook.sources.factory import open_source
from migrations_playbook.staging.live_copy import StaleCopy


def resume_rule(flags: ResumeFlags) -> ResumeRule:
    """How the interrupts of resumed threads are answered (``--resume-map``, ``--auto-resume``, ``--resume``)."""
    try:
        resume = json.loads(flags.resume) if flags.resume is not None else None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--resume must be JSON: {exc}") from None
    try:
        return ResumeRule(by_kind=load_resume_map(flags.resume_map), derive=flags.auto_resume, fallback=resume)
    except ResumeMapError as exc:
        raise UsageError(str(exc)) from None


async def replay_report(request: ReplayRequest, rule: ResumeRule) -> GateReport:
    """The replay's report. The staging copy is made before the source is entered (a staging server
    starts, a store's candidate is read), and opened inside its block."""
    from migrations_playbook.proof import replay_plan
    from migrations_playbook.proof.replay import replay

    source = open_source(request.source)
    copy_of = source.staging_copy(
        Path(request.candidate), persistence=request.persistence, url=request.staging_url, plan=request.plan is not None
    )
    async with copy_of as copy:
        migration = replay_plan.load(request.candidate, request.plan, request.graphs) if request.plan is not None else None
        async with source:
            if migration is not None:
                return await replay_plan.replay_with_plan(source, copy, migration, rule, candidate=request.candidate)
            graphs = await copy.open(request.graphs)
            return await replay(source, copy, graphs, rule, candidate=request.candidate)


def run(request: ReplayRequest) -> int:
    from migrations_playbook.repair.engine import MigrateRefused

    rule = resume_rule(request.answers)
    try:
        report = asyncio.run(replay_report(request, rule))
    except StaleCopy as exc:
        raise UsageError(str(exc)) from None
    except MigrateRefused as exc:
        raise UsageError(str(exc)) from None
    print(render(report, request.format))
    return EXIT_BLOCKED if report.verdict == "block" else EXIT_PASS
