"""`playbook`: gate graph changes against the threads of a live Agent Server.

Commands -> pure evaluation -> rendering. Data goes to stdout, progress and
errors to stderr. Exit codes (a fixed interface; migrations_playbook/README.md):

    0  pass (safe to roll out) / command succeeded
    1  blocked (a block finding, a failed contract check, a rerun whose run failed)
    2  usage or configuration error (bad flags, unreadable config, import error,
       a request the server refused)
    3  live server (or LangSmith) unreachable, or not done by --deadline
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from migrations_playbook.commands import parser
from migrations_playbook.commands.requests import ShadowRequest
from migrations_playbook.errors import (
    EXIT_BLOCKED as EXIT_BLOCKED,
)
from migrations_playbook.errors import (
    EXIT_PASS as EXIT_PASS,
)
from migrations_playbook.errors import (
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    LiveUnreachable,
    UsageError,
    origin,
    refused,
)
from migrations_playbook.render import held_log

# This module is the dispatch, and nothing in the package imports it. Each `_<command>` turns the parsed
# flags into the command's typed request (the argparse namespace stops here) and runs the command module
# (`commands/`). The flags themselves are declared in `commands/parser.py`; this docstring is its description.


def _headers(values: Sequence[str]) -> dict[str, str]:
    headers = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header must look like 'Name: value', got {value!r}")
        headers[name.strip()] = content.strip()
    return headers


def _source(args: argparse.Namespace) -> Any:
    from migrations_playbook.sources.base import SourceRequest

    return SourceRequest(
        live=getattr(args, "live", None),
        checkpointer=getattr(args, "checkpointer", None),
        headers=args.headers,
        live_contract=getattr(args, "live_contract", None),
        all_threads_are=getattr(args, "all_threads_are", None),
        deadline=args.deadline_at,
    )


def _answers(args: argparse.Namespace) -> Any:
    from migrations_playbook.commands.requests import ResumeFlags

    return ResumeFlags(resume=args.resume, resume_map=list(args.resume_map), auto_resume=args.auto_resume)


# -- dispatch: flags -> typed request -> command ------------------------------------------------


def _gate(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import gate

    return gate.run(
        gate.GateRequest(
            source=_source(args),
            candidate=args.candidate,
            graphs=list(args.graph),
            format=args.format,
            strict=args.strict,
            progress=not args.no_progress,
        )
    )


def _contract(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import contract

    return contract.run(
        contract.ContractRequest(
            config=Path(args.config), write=args.write, contracts_dir=args.contracts_dir, records_dir=args.records_dir
        )
    )


def _record(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import record

    return record.run(
        record.RecordRequest(
            config=Path(args.config),
            contracts_dir=args.contracts_dir,
            records_dir=args.records_dir,
            name=args.name,
            date=args.date,
        )
    )


def _inflight(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import inflight

    return inflight.run(
        inflight.InflightRequest(
            source=_source(args),
            graphs=list(args.graph),
            format=args.format,
            running=Path(args.running) if args.running else None,
            lock_history=Path(args.lock_history) if args.lock_history else None,
            progress=not args.no_progress,
        )
    )


def _replay(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import replay
    from migrations_playbook.commands.requests import ReplayRequest

    if not getattr(args, "checkpointer", None) and not (args.persistence or args.staging_url):
        args.parser.error(  # as argparse says it for a required group
            "replay needs a staging copy: one of --persistence DIR, --staging-url URL "
            "(or --checkpointer URI instead of --live, which makes one)"
        )
    return replay.run(
        ReplayRequest(
            source=_source(args),
            candidate=args.candidate,
            graphs=list(args.graph),
            persistence=Path(args.persistence) if args.persistence else None,
            staging_url=args.staging_url,
            answers=_answers(args),
            plan=Path(args.plan) if args.plan else None,
            format=args.format,
        )
    )


def _shadow_request(args: argparse.Namespace, command: str) -> ShadowRequest:
    """The shadow's flags (which `check` shares) as a typed request; flags that need each other, checked."""
    if args.live and not (args.persistence or args.staging_url):
        args.parser.error(
            f"{command} --live needs copies of the live data: --persistence DIR, or --staging-url A --staging-url B"
        )
    if args.persistence and not (args.live_code or args.live_ref):
        args.parser.error(f"{command} --persistence needs the deployed code: --live-code DIR or --live-ref GIT_REF")
    if args.checkpointer and not (args.live_code or args.live_ref):
        args.parser.error(f"{command} --checkpointer needs the deployed code: --live-code DIR or --live-ref GIT_REF")
    return ShadowRequest(
        source=_source(args),
        candidate=args.candidate,
        live_code=Path(args.live_code) if args.live_code else None,
        live_ref=args.live_ref,
        graphs=list(args.graph),
        persistence=Path(args.persistence) if args.persistence else None,
        staging_urls=list(args.staging_url),
        sample=args.sample,
        every=args.all,
        answers=_answers(args),
        turn_inputs=list(args.turn_input),
        identities=list(args.identity),
        format=args.format,
        strict=args.strict,
    )


def _shadow(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import shadow

    return shadow.run(_shadow_request(args, "shadow"))


def _check(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import check

    return check.run(check.CheckRequest(shadow=_shadow_request(args, "check"), accept_unproven=args.accept_unproven))


def _migrate(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import migrate
    from migrations_playbook.commands.requests import MigrateRequest

    return migrate.run(
        MigrateRequest(
            source=_source(args),
            candidate=args.candidate,
            plan=Path(args.plan),
            apply=args.apply,
            persistence=Path(args.persistence) if args.persistence else None,
            rollback=args.rollback,
            strict=args.strict,
            format=args.format,
            answers=_answers(args),
        )
    )


def _rules(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import rules

    return rules.run(args.format)


def _snapshot(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import snapshot

    return snapshot.run(
        snapshot.SnapshotRequest(source=_source(args), graphs=list(args.graph), out=args.out, progress=not args.no_progress)
    )


def _turns(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import turns

    return turns.run_turns(
        turns.TurnsRequest(source=_source(args), thread_id=args.thread_id, checkpoint=args.checkpoint, format=args.format)
    )


def _rerun(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import turns

    return turns.run_rerun(
        turns.RerunRequest(
            source=_source(args),
            thread_id=args.thread_id,
            turn=args.turn,
            text=args.input,
            context=args.context,
            assistant=args.assistant,
            format=args.format,
        )
    )


def _activity(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import activity

    return activity.run(
        activity.ActivityRequest(
            since=args.since,
            until=args.until,
            graphs=list(args.graph),
            project=args.project,
            config=Path(args.config) if args.config else None,
            fields=args.fields,
            format=args.format,
            deadline=args.deadline_at,
        )
    )


# -- parser: the flags are declared in commands/parser.py -------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The `playbook` parser (`commands/parser.py`), each command run by its ``_<command>`` above; this
    module's docstring is its description."""
    return parser.build_parser(
        description=__doc__,
        run={
            "gate": _gate,
            "contract": _contract,
            "inflight": _inflight,
            "replay": _replay,
            "shadow": _shadow,
            "check": _check,
            "rules": _rules,
            "snapshot": _snapshot,
            "turns": _turns,
            "rerun": _rerun,
            "activity": _activity,
            "migrate": _migrate,
            "record": _record,
        },
    )


def main(argv: Sequence[str] | None = None) -> int:
    import httpx
    from langgraph_sdk.errors import APIConnectionError

    from migrations_playbook.graphcode.candidate import CandidateError
    from migrations_playbook.sources.budget import Deadline

    args = build_parser().parse_args(argv)
    # the command's deadline starts now: every request it sends to a server is within it (sources/budget.py)
    args.deadline_at = Deadline.start(args.deadline) if getattr(args, "deadline", None) else None
    try:
        args.headers = _headers(getattr(args, "header", []))
        with held_log.holding():  # the project's own log lines, imported with its graphs, go to a file
            code: int = args.func(args)
        return code
    except (UsageError, CandidateError) as exc:
        print(f"playbook: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LiveUnreachable as exc:
        print(f"playbook: error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (httpx.TransportError, APIConnectionError) as exc:  # outside a source's block (replay's two servers)
        print(f"playbook: error: server {origin(exc)} is unreachable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except httpx.HTTPStatusError as exc:  # outside a source's block; exit 1 means blocked and nothing else
        print(f"playbook: error: server {origin(exc)} {refused(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("playbook: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
