"""`playbook shadow`: the deployed code and the candidate side by side on copies of the live threads.

The sides (`proof/shadow/run.py`): an Agent Server's threads are copied from its persistence folder
(``--persistence DIR``) into three staging `langgraph dev` servers, two serving the deployed code
(``--live-code DIR`` or ``--live-ref REF``) and one the candidate, or reached at staging URLs given in
that order (``--staging-url A --staging-url B [--staging-url A2]``). Exit codes and the JSON envelope
are the gate's (``"command": "shadow"``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from migrations_playbook.commands.replay import resume_rule
from migrations_playbook.commands.requests import ResumeFlags, ShadowRequest
from migrations_playbook.errors import EXIT_BLOCKED, EXIT_PASS, UsageError
from migrations_playbook.model import GateReport, drawings
from migrations_playbook.proof.resume import ResumeRule
from migrations_playbook.render import render
from migrations_playbook.staging.live_copy import StaleCopy, snapshot


def turn_inputs(texts: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for text in texts:
        graph, sep, value = text.partition("=")
        if not sep or not graph:
            raise UsageError(f'--turn-input {text!r}: expected GRAPH=JSON, e.g. chat=\'{{"messages": ["hi"]}}\'')
        try:
            found[graph] = json.loads(value)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--turn-input {graph}: the value must be JSON: {exc}") from None
    return found


def _rule(flags: ResumeFlags) -> ResumeRule:
    """The replay's answer rules; with none given, each question gets the value its payload gives."""
    return resume_rule(flags) if flags.given else ResumeRule(derive=True)


async def shadow_report(request: ShadowRequest, *, include: frozenset[str] = frozenset(), moving: bool = False) -> GateReport:
    """The shadow's report (``include``: threads that run whatever the sample; ``moving``: a thread whose copy is
    older than the live head is judged at the copy and reported, instead of refusing the run)."""
    from migrations_playbook.graphcode.candidate import graph_specs, read_config
    from migrations_playbook.proof.shadow.classes import select
    from migrations_playbook.proof.shadow.config import parse_identities
    from migrations_playbook.proof.shadow.live_code import deployed_config
    from migrations_playbook.proof.shadow.relay import ModelRelay
    from migrations_playbook.proof.shadow.run import ShadowOptions, candidate_path, judge, shadow_on_servers
    from migrations_playbook.sources.api.source import ApiSource
    from migrations_playbook.sources.factory import open_source

    candidate = candidate_path(request.candidate)
    urls = _urls(request.staging_urls)  # before anything is read or started
    options = ShadowOptions(
        rule=_rule(request.answers),
        turn_inputs=turn_inputs(request.turn_inputs),
        sample=request.sample,
        every=request.every,
        strict=request.strict,
        include=include,
        moving=moving,
        identities=tuple(parse_identities(request.identities, request.source.headers)) if request.identities else (),
    )
    served = set(graph_specs(read_config(candidate.resolve())))
    if request.source.checkpointer:
        from migrations_playbook.proof.shadow.store import shadow_store_report

        with (
            deployed_config(candidate, live_code=request.live_code, live_ref=request.live_ref) as deployed,
            ModelRelay() as relay,
        ):
            report = await shadow_store_report(
                request.source,
                live_config=deployed,
                candidate=candidate,
                candidate_text=request.candidate,
                served=served,
                graphs=request.graphs,
                options=options,
                relay=relay,
            )
            report.notes += _relay_notes(relay, False)
            return report
    source = open_source(request.source)
    assert isinstance(source, ApiSource)
    with contextlib.ExitStack() as code:
        live_config: Path | None = None
        if request.persistence is not None:
            live_config = code.enter_context(deployed_config(candidate, live_code=request.live_code, live_ref=request.live_ref))
        async with source:
            graph_ids = await source.graph_ids(request.graphs)
            live = await source.live_graphs(graph_ids, locks=False)  # the topology the Markdown draws
            snapshots = [t async for t in source.threads(graph_ids)]
            kept = [t for t in snapshots if t.graph_id in served]
            frozen = _snapshot(code, request.persistence)
            work = _hold(frozen) if urls is None else None
            held = _held_plan(request, kept, served, work)
            include = options.include | (held.include if held is not None else frozenset())
            selection = select(kept, sample=request.sample, every=request.every, include=include)
            held_notes: list[str] = []
            with ModelRelay(upstream=_model_upstream(live_config)) as relay:
                sides = await shadow_on_servers(
                    source,
                    kept,
                    selection,
                    options,
                    urls=urls,
                    start=_starter(live_config, candidate, frozen, work, relay, held_notes),
                    headers=request.source.headers,
                    deadline=request.source.deadline,
                    held=held,
                )
                sides.notes += _relay_notes(relay, urls is not None) + held_notes
                sides.notes += held.notes(selection.chosen) if held is not None else [HELD_NOT_SEEN]
        report = judge(sides, selection, kept, graph_ids, options, live=source.label, candidate=request.candidate)
        report.drawings = drawings(graph_ids, live)
    removed = sorted({t.graph_id for t in snapshots if t.graph_id not in served})
    report.notes += [
        f"graph {g} is not in the candidate (the gate says GRAPH_REMOVED): its threads were not run" for g in removed
    ]
    return report


def _snapshot(stack: contextlib.ExitStack, persistence: Path | None) -> Path | None:
    """The copy of the live persistence folder every side starts from (None without ``--persistence``)."""
    if persistence is None:
        return None
    try:
        return stack.enter_context(snapshot(Path(persistence)))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None


HELD_NOT_SEEN = (
    "held runs and crons: not driven (the staging servers were given by URL: their run queues and crons are theirs, "
    "the shadow cannot see them; --persistence DIR drives what the live server holds)"
)


def _hold(frozen: Path | None) -> Any:
    """Hold the snapshot every side copies (``frozen``, private to this command), once: its unfinished runs out of
    its queue, its crons disabled (`staging.held.hold`). What was held; None without a snapshot."""
    from migrations_playbook.staging.held import hold

    return None if frozen is None else hold(frozen)


def _held_plan(request: ShadowRequest, kept: list[Any], served: set[str], work: Any) -> Any:
    """What the live server holds (``work``, held from the snapshot), planned for the shadow; None when the staging
    servers were given by URL (no snapshot)."""
    from migrations_playbook.proof.shadow.held_runs import plan_held

    if work is None:
        return None
    return plan_held(work, kept, served, sample=request.sample, every=request.every)


def _model_upstream(live_config: Path | None) -> str | None:
    """Where the deployed code sends its model calls: its config's env (a .env file `langgraph dev` loads
    over the environment) when it names ``OPENAI_BASE_URL``, else the environment's (the relay's default)."""
    from migrations_playbook.staging.live_copy import absolute_config, config_env

    if live_config is None:
        return None
    return config_env(absolute_config(live_config).get("env")).get("OPENAI_BASE_URL")


def _urls(given: list[str]) -> tuple[str, str, str] | None:
    if not given:
        return None
    if len(given) not in (2, 3):
        raise UsageError(
            "--staging-url takes two or three servers, in this order: the deployed code's copy (A), the candidate's (B), "
            "and optionally a second copy served by the deployed code (A2, to learn what varies between runs)"
        )
    return (given[0], given[1], given[2] if len(given) == 3 else given[0])


def _starter(
    live_config: Path | None, candidate: Path, persistence: Path | None, held: Any, relay: Any, held_notes: list[str]
) -> Any:
    """Start one side's staging copy of ``persistence`` (the `snapshot` every side starts from, ``held`` already);
    what the copies held back is noted once (``held_notes``)."""
    from migrations_playbook.staging.live_copy import start_staging

    @contextlib.contextmanager
    def start(side: str) -> Iterator[str]:
        assert persistence is not None and live_config is not None
        config = candidate if side == "B" else live_config
        base = relay.base_url("record") if side == "A" else relay.base_url("replay", lane=side)
        env = {"OPENAI_BASE_URL": base}
        with contextlib.ExitStack() as stack:
            try:
                # Pinned in the config too: a project's .env would otherwise send the model calls past the relay.
                server = start_staging(config, persistence, stack, env=env, pinned=env, frozen=True, held=held)
            except FileNotFoundError as exc:
                raise UsageError(str(exc)) from None
            note = server.held.note()
            if side == "A" and note:
                held_notes.append(note)
            yield server.url

    return start


def _relay_notes(relay: Any, given_urls: bool) -> list[str]:
    if given_urls:
        return [
            "model calls: the staging servers were given, so the shadow did not route their model calls "
            "(set their OPENAI_BASE_URL yourself to compare with the same answers)"
        ]
    notes = []
    if relay.recorded:
        notes.append(
            f"model calls: {relay.recorded} recorded on the deployed code, {relay.replayed} served again to A2 and the candidate"
        )
    for unmatched in relay.unmatched[:10]:
        notes.append(
            "model call only the candidate (or A2) made, answered by the model: "
            f"{unmatched.method} {unmatched.path} {unmatched.model or ''} {unmatched.preview}"
        )
    return notes


def require_copies_and_code(request: ShadowRequest, command: str) -> None:
    """`UsageError` unless the request names copies of the live data and, where it copies them, the deployed code
    (`shadow`'s and `check`'s flags)."""
    if request.source.checkpointer is None and request.persistence is None and not request.staging_urls:
        raise UsageError(
            f"{command} needs copies of the live data: --persistence DIR (the live `langgraph dev` folder) "
            "or --staging-url A --staging-url B"
        )
    if (request.persistence or request.source.checkpointer) and request.live_code is None and request.live_ref is None:
        raise UsageError(f"{command} needs the deployed code: --live-code DIR (a checkout of it) or --live-ref GIT_REF")


def run_report(report: Any, fmt: str) -> int:
    """Print a report built by ``report`` (a coroutine), a stale copy as a usage error; the verdict's exit code."""
    try:
        built: GateReport = asyncio.run(report)
    except StaleCopy as exc:
        raise UsageError(str(exc)) from None
    print(render(built, fmt))
    return EXIT_BLOCKED if built.verdict == "block" else EXIT_PASS


def run(request: ShadowRequest) -> int:
    require_copies_and_code(request, "shadow")
    return run_report(shadow_report(request), request.format)
