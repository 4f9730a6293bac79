"""The `playbook` parser: every command's flags, declared here once, in the order `--help` shows them.

`build_parser` declares each command, its flags and their help; the function that runs a command comes
from `cli.py` (``run``, by command name), set as the subcommand's ``func`` default, and the parser's
description is `cli.py`'s docstring. `common_flags` is the one declaration of ``--header``,
``--no-progress``, ``--deadline`` and ``--format`` (tests/unit/test_cli_common_flags.py holds every command to it).
Nothing here reads a parsed namespace: `cli.py` turns it into the command's typed request.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from migrations_playbook.errors import EXIT_USAGE
from migrations_playbook.sources.budget import DEFAULT_SECONDS

Dispatch = Callable[[argparse.Namespace], int]
"""What runs a parsed command (`cli.py`'s ``_<command>``): the namespace in, the exit code out."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"playbook: error: {message}\n")


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


COMMON_FLAGS = ("--header", "--no-progress", "--deadline", "--format")
"""The flags every command that reads a live server (or a store) takes, declared once (`common_flags`)."""


def seconds(text: str) -> float:
    """``--deadline``'s value: a number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def common_flags(
    p: argparse.ArgumentParser,
    *,
    formats: Sequence[str] | None = None,
    header: bool = True,
    progress: bool = True,
    deadline: bool = True,
) -> None:
    """Declare the common flags on a subcommand: ``--header`` (for the server), ``--no-progress``, ``--deadline``
    (every command that talks to a server), and ``--format`` with the report formats the command has (the first
    is the default). A command that shows no progress bar still takes ``--no-progress``, so one set of flags
    works for every command in a script."""
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
    if deadline:
        p.add_argument(
            "--deadline",
            type=seconds,
            default=DEFAULT_SECONDS,
            metavar="SECONDS",
            help=f"stop waiting for servers this long after the command starts (default {DEFAULT_SECONDS:g}): a server "
            "that stalls, trickles its answer or pages without end is exit 3, naming the request",
        )
    if formats:
        p.add_argument("--format", choices=tuple(formats), default=formats[0])


def live_args(p: argparse.ArgumentParser, *, checkpointer: bool = False) -> None:
    """Where the live threads are read: an Agent Server (``--live``), or with ``checkpointer`` a store too."""
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


def shadow_args(shadow_parser: argparse.ArgumentParser) -> None:
    """The flags of `shadow`, which `check` takes too."""
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
        "--identity",
        action="append",
        default=[],
        metavar="NAME=HEADER",
        help="a user of the live deployment as its clients authenticate, e.g. 'alice=Authorization: Bearer ...': each "
        "thread is read back, and driven, on every copy as the identities that read it on the live server",
    )
    shadow_parser.add_argument(
        "--strict", action="store_true", help="also block on differences for review (other values, added or renamed steps)"
    )


def build_parser(*, description: str | None, run: Mapping[str, Dispatch]) -> argparse.ArgumentParser:
    """The `playbook` parser: ``description`` is its help text, ``run[name]`` the ``func`` of command ``name``
    (``record`` for `record new`)."""
    parser = _Parser(prog="playbook", description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"playbook {version()} (langgraph-playbook)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

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
    gate.set_defaults(func=run["gate"])

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
    contract.set_defaults(func=run["contract"])

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
    inflight.set_defaults(func=run["inflight"])

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
    replay_parser.set_defaults(func=run["replay"], parser=replay_parser)

    shadow_parser = sub.add_parser(
        "shadow",
        help="the deployed code and the candidate side by side on copies of the live threads, compared",
    )
    shadow_args(shadow_parser)
    shadow_parser.set_defaults(func=run["shadow"], parser=shadow_parser)

    check_parser = sub.add_parser(
        "check",
        help="the gate's rules, then the shadow over the same threads: each finding settled by execution, one verdict",
    )
    shadow_args(check_parser)
    check_parser.add_argument(
        "--accept-unproven",
        action="store_true",
        help="pass although some threads could not be run (the report still names them); without it they block",
    )
    check_parser.set_defaults(func=run["check"], parser=check_parser)

    rules_parser = sub.add_parser("rules", help="every finding code: severity, evidence, why it breaks, how to fix it")
    common_flags(rules_parser, formats=("table", "json"), header=False, progress=False, deadline=False)  # reads no server
    rules_parser.set_defaults(func=run["rules"])

    snapshot = sub.add_parser("snapshot", help="record the live threads and topology the gate reads (JSON)")
    live_args(snapshot, checkpointer=True)
    common_flags(snapshot, formats=("json",))  # the snapshot is JSON
    snapshot.add_argument("--live-contract", metavar="DIR", help="with --checkpointer: contract locks of the live code")
    snapshot.add_argument("--out", default="-", help="file to write (default: stdout)")
    snapshot.set_defaults(func=run["snapshot"])

    def thread_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--live", required=True, metavar="URL", help="live Agent Server URL")
        p.add_argument("thread_id", metavar="THREAD_ID")
        common_flags(p, formats=("table", "json"))

    turns_parser = sub.add_parser("turns", help="a thread's chat turns (HumanMessage boundaries) -> checkpoint ranges")
    thread_args(turns_parser)
    turns_parser.add_argument("--checkpoint", metavar="ID", help="map the branch ending here (default: the newest checkpoint)")
    turns_parser.set_defaults(func=run["turns"])

    rerun = sub.add_parser("rerun", help="rerun turn N with new text on a fork; the original branch is not touched")
    thread_args(rerun)
    rerun.add_argument("--turn", required=True, type=int, metavar="N", help="the turn to rerun (1-based, as `turns` shows)")
    rerun.add_argument("--input", required=True, metavar="TEXT", help="the new user message for that turn")
    rerun.add_argument("--context", metavar="JSON", help="run context (default: the context of the run that made turn N)")
    rerun.add_argument("--assistant", metavar="ID", help="assistant or graph id (default: the thread's assistant)")
    rerun.set_defaults(func=run["rerun"])

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
    activity.set_defaults(func=run["activity"])

    _add_migrate_parser(sub, run)
    _add_record_parser(sub, run)
    return parser


def _add_record_parser(sub: Any, run: Mapping[str, Dispatch]) -> None:
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
    new.set_defaults(func=run["record"])


def _add_migrate_parser(sub: Any, run: Mapping[str, Dispatch]) -> None:
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
    parser.set_defaults(func=run["migrate"])
