"""`playbook`: gate graph changes against the threads of a live Agent Server.

Commands -> pure evaluation -> rendering. Data goes to stdout, progress and
errors to stderr. Exit codes (a fixed interface; migrations_playbook/README.md):

    0  pass (safe to roll out) / command succeeded
    1  blocked (a block finding, a failed contract check, a rerun whose run failed)
    2  usage or configuration error (bad flags, unreadable config, import error,
       a request the server refused)
    3  live server (or LangSmith) unreachable
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

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

# This module is the parser and the dispatch, and nothing in the package imports it. Each `_<command>`
# turns the parsed flags into the command's typed request (the argparse namespace stops here) and runs
# the command module (`commands/`).


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"playbook: error: {message}\n")


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


def _shadow(args: argparse.Namespace) -> int:
    from migrations_playbook.commands import shadow
    from migrations_playbook.commands.requests import ShadowRequest

    if args.live and not (args.persistence or args.staging_url):
        args.parser.error("shadow --live needs copies of the live data: --persistence DIR, or --staging-url A --staging-url B")
    if args.persistence and not (args.live_code or args.live_ref):
        args.parser.error("shadow --persistence needs the deployed code: --live-code DIR or --live-ref GIT_REF")
    if args.checkpointer and not (args.live_code or args.live_ref):
        args.parser.error("shadow --checkpointer needs the deployed code: --live-code DIR or --live-ref GIT_REF")
    return shadow.run(
        ShadowRequest(
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
            format=args.format,
            strict=args.strict,
        )
    )


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
        )
    )


# -- parser ----------------------------------------------------------------------------


DISTRIBUTION = "langgraph-playbook"
"""The distribution that ships this package (migrations_playbook/pyproject.toml)."""


def version() -> str:
    """The installed distribution's version (``unknown`` when run from a source tree without it)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


COMMON_FLAGS = ("--header", "--no-progress", "--format")
"""The flags every command that reads a live server (or a store) takes, declared once (`common_flags`)."""


def common_flags(
    p: argparse.ArgumentParser, *, formats: Sequence[str] | None = None, header: bool = True, progress: bool = True
) -> None:
    """Declare the common flags on a subcommand: ``--header`` (for the server), ``--no-progress``, and ``--format``
    with the report formats the command has (the first is the default). A command that shows no progress bar
    still takes ``--no-progress``, so one set of flags works for every command in a script."""
    if header:
        p.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="'Name: value'",
            help="extra HTTP header for the live server, e.g. 'Authorization: Bearer ...' or Studio's "
            "'X-Auth-Scheme: langsmith' (repeatable)",
        )
    if progress:
        p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    if formats:
        p.add_argument("--format", choices=tuple(formats), default=formats[0])


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="playbook", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"playbook {version()} (langgraph-playbook)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def live_args(p: argparse.ArgumentParser, *, checkpointer: bool = False) -> None:
        if checkpointer:  # the source: an Agent Server, or a self-hosted checkpointer (sources/)
            source = p.add_mutually_exclusive_group(required=True)
            source.add_argument("--live", metavar="URL", help="live Agent Server URL")
            source.add_argument(
                "--checkpointer",
                metavar="URI",
                help="read a self-hosted checkpointer instead, read-only: postgresql://... "
                "(langgraph-checkpoint-postgres) or sqlite:///ABS/PATH.db (needs --live-contract)",
            )
            p.add_argument(
                "--all-threads-are",
                metavar="GRAPH",
                help="with --checkpointer: every thread of the store belongs to GRAPH "
                "(default: its 'graph_id' checkpoint metadata, else the only graph there is)",
            )
        else:
            p.add_argument("--live", required=True, metavar="URL", help="live Agent Server URL")
        p.add_argument("--graph", action="append", default=[], metavar="ID", help="limit to this graph id (repeatable)")

    gate = sub.add_parser("gate", help="check every live thread against candidate code")
    live_args(gate, checkpointer=True)
    common_flags(gate, formats=("table", "json", "markdown"))
    gate.add_argument("--candidate", required=True, metavar="PATH/langgraph.json")
    gate.add_argument(
        "--strict",
        action="store_true",
        help="block on what the gate cannot prove safe: FIELD_DROPPED and REDUCER_UNVERIFIED block instead of warning",
    )
    gate.add_argument(
        "--live-contract",
        metavar="DIR",
        help="contract locks of the live code (for reducer checks; with --checkpointer, required: "
        "the live graph shape); default: what the server serves",
    )
    gate.set_defaults(func=_gate)

    contract = sub.add_parser("contract", help="write or check the contract locks")
    contract.add_argument("--config", default="langgraph.json", metavar="langgraph.json")
    mode = contract.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    contract.add_argument(
        "--contracts-dir",
        metavar="DIR",
        help="where the locks live (default: contracts_dir of [tool.playbook] in the project's "
        "pyproject.toml, else playbook/contracts beside the config)",
    )
    contract.add_argument(
        "--records-dir",
        metavar="DIR",
        help="where the migration records live (default: records_dir of [tool.playbook], "
        "else a records/ folder beside the contracts folder)",
    )
    contract.set_defaults(func=_contract)

    inflight = sub.add_parser("inflight", help="drain monitor: threads by status x flow_version x next node")
    live_args(inflight, checkpointer=True)
    common_flags(inflight, formats=("table", "json", "markdown"))
    inflight.add_argument("--live-contract", metavar="DIR", help="with --checkpointer: contract locks of the live code")
    inflight.add_argument(
        "--running",
        metavar="PATH/langgraph.json",
        help="the code the server runs: also count the threads its runtime guard would refuse",
    )
    inflight.add_argument(
        "--lock-history",
        metavar="DIR",
        help="with --running: the deployment's contract locks (with history/), default beside --running "
        "as `playbook contract` resolves it",
    )
    inflight.set_defaults(func=_inflight)

    replay_parser = sub.add_parser(
        "replay", help="staging replay: serve a copy of the live threads with the candidate code and compare"
    )
    live_args(replay_parser, checkpointer=True)
    common_flags(replay_parser, formats=("table", "json", "markdown"))
    replay_parser.add_argument("--candidate", required=True, metavar="PATH/langgraph.json")
    source = replay_parser.add_mutually_exclusive_group()
    source.add_argument(
        "--persistence", metavar="DIR", help="the live `langgraph dev` working folder (or its .langgraph_api/) to copy"
    )
    source.add_argument("--staging-url", metavar="URL", help="a staging deployment restored from a live snapshot")
    replay_parser.add_argument(
        "--live-contract",
        metavar="DIR",
        help="with --checkpointer (required): contract locks of the live code; the replay runs "
        "the candidate in-process on a throwaway copy of the store",
    )
    replay_parser.add_argument(
        "--resume",
        metavar="JSON",
        help="resume interrupted threads on staging with this value and check the paused step runs; "
        "with --resume-map/--auto-resume, the fallback for interrupts they cannot answer",
    )
    replay_parser.add_argument(
        "--resume-map",
        action="append",
        default=[],
        metavar="JSON|@FILE",
        help="object: interrupt payload 'kind' -> resume value for interrupts of that kind "
        "(repeatable, later wins; takes precedence over --auto-resume and --resume)",
    )
    replay_parser.add_argument(
        "--auto-resume",
        action="store_true",
        help="resume each interrupt with the value its payload gives (resume_format, "
        "else kind + first option, else first option)",
    )
    replay_parser.add_argument(
        "--plan",
        metavar="FILE",
        help="a migration plan (records/NNNN-....plan.json): apply it on the staging copy first, "
        "then resume the repaired threads there (the proof is on the repaired threads)",
    )
    replay_parser.set_defaults(func=_replay, parser=replay_parser)

    shadow_parser = sub.add_parser(
        "shadow",
        help="the deployed code and the candidate side by side on copies of the live threads, compared",
    )
    live_args(shadow_parser, checkpointer=True)
    common_flags(shadow_parser, formats=("table", "json", "markdown"))
    shadow_parser.add_argument("--candidate", required=True, metavar="PATH/langgraph.json")
    code = shadow_parser.add_mutually_exclusive_group()
    code.add_argument("--live-code", metavar="DIR", help="a checkout of the deployed code (its folder or langgraph.json)")
    code.add_argument("--live-ref", metavar="GIT_REF", help="the deployed commit, checked out into a throwaway git worktree")
    copies = shadow_parser.add_mutually_exclusive_group()
    copies.add_argument(
        "--persistence",
        metavar="DIR",
        help="the live `langgraph dev` working folder (or its .langgraph_api/): copied three times",
    )
    copies.add_argument(
        "--staging-url",
        action="append",
        default=[],
        metavar="URL",
        help="staging servers restored from a live snapshot, in order: the deployed code's (A), the candidate's (B), "
        "optionally a second deployed-code copy (A2)",
    )
    shadow_parser.add_argument(
        "--live-contract", metavar="DIR", help="with --checkpointer: contract locks of the live code (as the gate's)"
    )
    how_many = shadow_parser.add_mutually_exclusive_group()
    how_many.add_argument(
        "--sample", type=int, default=5, metavar="N", help="threads run beyond one per class, drawn with a fixed seed (default 5)"
    )
    how_many.add_argument("--all", action="store_true", help="run every thread, not one per class")
    shadow_parser.add_argument("--resume", metavar="JSON", help="fallback answer for questions (as replay's)")
    shadow_parser.add_argument(
        "--resume-map", action="append", default=[], metavar="JSON|@FILE", help="interrupt 'kind' -> answer (as replay's)"
    )
    shadow_parser.add_argument(
        "--auto-resume",
        action="store_true",
        help="answer each question with the value its payload gives (the default when no answer flag is given)",
    )
    shadow_parser.add_argument(
        "--turn-input",
        action="append",
        default=[],
        metavar="GRAPH=JSON",
        help="the input of an idle thread's next turn (default: its last input again)",
    )
    shadow_parser.add_argument(
        "--strict", action="store_true", help="also block on differences for review (other values, added or renamed steps)"
    )
    shadow_parser.set_defaults(func=_shadow, parser=shadow_parser)

    rules_parser = sub.add_parser("rules", help="every finding code: severity, evidence, why it breaks, how to fix it")
    common_flags(rules_parser, formats=("table", "json"), header=False, progress=False)  # reads no server
    rules_parser.set_defaults(func=_rules)

    snapshot = sub.add_parser("snapshot", help="record the live threads and topology the gate reads (JSON)")
    live_args(snapshot, checkpointer=True)
    common_flags(snapshot, formats=("json",))  # the snapshot is JSON
    snapshot.add_argument("--live-contract", metavar="DIR", help="with --checkpointer: contract locks of the live code")
    snapshot.add_argument("--out", default="-", help="file to write (default: stdout)")
    snapshot.set_defaults(func=_snapshot)

    def thread_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--live", required=True, metavar="URL", help="live Agent Server URL")
        p.add_argument("thread_id", metavar="THREAD_ID")
        common_flags(p, formats=("table", "json"))

    turns_parser = sub.add_parser("turns", help="a thread's chat turns (HumanMessage boundaries) -> checkpoint ranges")
    thread_args(turns_parser)
    turns_parser.add_argument("--checkpoint", metavar="ID", help="map the branch ending here (default: the newest checkpoint)")
    turns_parser.set_defaults(func=_turns)

    rerun = sub.add_parser("rerun", help="rerun turn N with new text on a fork; the original branch is not touched")
    thread_args(rerun)
    rerun.add_argument("--turn", required=True, type=int, metavar="N", help="the turn to rerun (1-based, as `turns` shows)")
    rerun.add_argument("--input", required=True, metavar="TEXT", help="the new user message for that turn")
    rerun.add_argument("--context", metavar="JSON", help="run context (default: the context of the run that made turn N)")
    rerun.add_argument("--assistant", metavar="ID", help="assistant or graph id (default: the thread's assistant)")
    rerun.set_defaults(func=_rerun)

    activity = sub.add_parser("activity", help="node entries per graph over a window, from LangSmith traces")
    activity.add_argument("--since", default="7d", metavar="WINDOW", help="window length: 90m, 24h, 7d, 2w (default 7d)")
    activity.add_argument("--until", metavar="ISO-8601", help="end of the window (default: now)")
    activity.add_argument("--graph", action="append", default=[], metavar="ID", help="limit to this graph id (repeatable)")
    activity.add_argument(
        "--project", metavar="NAME", help="LangSmith tracing project (default: $LANGSMITH_PROJECT, else 'default')"
    )
    activity.add_argument(
        "--config", metavar="langgraph.json", help="also list the nodes of these graphs that no run entered (0 entries)"
    )
    activity.add_argument("--fields", action="store_true", help="also count the state fields each node run wrote")
    common_flags(activity, formats=("table", "json"), header=False, progress=False)  # LangSmith, not a live server
    activity.set_defaults(func=_activity)

    _add_migrate_parser(sub)
    _add_record_parser(sub)
    return parser


def _add_record_parser(sub: Any) -> None:
    parser = sub.add_parser("record", help="migration records: `record new` writes the skeleton the contract change needs")
    actions = parser.add_subparsers(dest="record_command", required=True, metavar="new", parser_class=_Parser)
    new = actions.add_parser(
        "new",
        help="write records/NNNN-<name>.md for every graph whose contract no record covers: the hashes, what "
        "changed (the lock diff), and the sections to fill in (`contract --check` refuses it until they are)",
    )
    new.add_argument("--config", default="langgraph.json", metavar="langgraph.json")
    new.add_argument("--contracts-dir", metavar="DIR", help="where the locks live (as `playbook contract` resolves it)")
    new.add_argument("--records-dir", metavar="DIR", help="where the records live (as `playbook contract` resolves it)")
    new.add_argument("--name", metavar="SLUG", help="the record's name after its number (default: the graph ids)")
    new.add_argument("--date", metavar="YYYY-MM-DD", help="the record's date (default: today, UTC)")
    new.set_defaults(func=_record)


def _add_migrate_parser(sub: Any) -> None:
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
    common_flags(parser, formats=("table", "json"))
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
    parser.add_argument("--strict", action="store_true", help="the gate's --strict: FIELD_DROPPED and REDUCER_UNVERIFIED block")
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
    parser.set_defaults(func=_migrate)


def main(argv: Sequence[str] | None = None) -> int:
    import httpx
    from langgraph_sdk.errors import APIConnectionError

    from migrations_playbook.graphcode.candidate import CandidateError

    args = build_parser().parse_args(argv)
    try:
        args.headers = _headers(getattr(args, "header", []))
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
