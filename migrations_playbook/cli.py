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
import asyncio
import contextlib
import dataclasses
import json
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

EXIT_PASS = 0
EXIT_BLOCKED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


class UsageError(Exception):
    """Bad flags or configuration: exit 2."""


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


@contextlib.asynccontextmanager
async def _live(args: argparse.Namespace) -> AsyncIterator[Any]:
    """A client for ``--live``, checked reachable (exit 3 otherwise), closed after use.

    A request the server refuses inside the block (a 4xx, or a 5xx on a whole-server call:
    per-thread reads handle their own) is a usage error naming the status and the server's
    message (exit 2); a server that stops answering midway is unreachable (exit 3)."""
    import httpx
    from langgraph_sdk.errors import APIConnectionError

    from migrations_playbook import live as live_side

    client = live_side.connect(args.live, args.headers)
    try:
        await live_side.ensure_reachable(client, args.live)
        yield client
    except (httpx.TransportError, APIConnectionError) as exc:
        raise live_side.LiveUnreachable(f"live server {args.live} stopped answering: {type(exc).__name__}: {exc}") from None
    except httpx.HTTPStatusError as exc:  # langgraph-sdk's APIStatusError included
        raise UsageError(f"live server {args.live} {_refused(exc)}") from None
    finally:
        await client.aclose()


def _request_of(exc: Exception) -> Any:
    """The httpx request an error is about, or None."""
    try:
        return exc.request  # type: ignore[attr-defined]  # httpx errors; raises RuntimeError when unset
    except (AttributeError, RuntimeError):
        return None


def _refused(exc: Exception) -> str:
    """``refused POST /threads/search: 401: Authorization header missing`` (+ a hint for 401/403)."""
    request = _request_of(exc)
    what = f" {request.method} {request.url.path}" if request is not None else ""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    text = f"refused{what}: {_server_refusal(exc)}"
    if status in (401, 403):
        text += " (pass a token the server accepts: --header 'Authorization: Bearer ...')"
    elif isinstance(status, int) and status >= 500:
        text += " (the server failed on the request, or in its custom auth: its log has the cause)"
    return text


class ProgressBar:
    """A one-line progress bar on stderr; silent when stderr is not a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()

    def __call__(self, graph_id: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = int(width * done / total) if total else width
        sys.stderr.write(f"\rscanning {graph_id}: [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def _wanted_graphs(asked: list[str], served: Mapping[str, Any]) -> list[str]:
    """The ``--graph`` ids asked for (default: every graph the live server serves); an id
    the server does not serve is a usage error, before any thread is read."""
    unknown = [g for g in asked if g not in served]
    if unknown:
        raise UsageError(
            f"graph(s) {', '.join(unknown)} not on the live server; it serves: {', '.join(sorted(served)) or 'none'}"
        )
    return list(asked) or sorted(served)


# -- gate ----------------------------------------------------------------------------


async def _scan(args: argparse.Namespace, registered: set[str], candidates: dict[str, Any]) -> Any:
    from migrations_playbook import live as live_side
    from migrations_playbook.evaluate import Evaluator
    from migrations_playbook.model import GateReport

    async with _live(args) as client:
        assistants = await live_side.live_graph_ids(client)
        wanted = _wanted_graphs(args.graph, assistants)
        notes = []
        locks: dict[str, dict[str, Any]] | None
        if args.live_contract:
            locks = live_side.read_locks(Path(args.live_contract))
            notes.append(f"live reducers from contract locks at {args.live_contract}")
        else:
            locks = await live_side.served_locks(client)
            if locks is not None:
                notes.append(f"live reducers from the contract the server serves at {live_side.CONTRACT_ROUTE}")
        live_graphs = await live_side.live_graphs(client, {g: assistants[g] for g in wanted}, locks)
        evaluator = Evaluator(live=live_graphs, candidates=candidates, registered=registered, strict=args.strict)
        progress = ProgressBar(enabled=args.format != "json" and not args.no_progress)
        try:
            for graph_id in wanted:
                evaluator.summary(graph_id)
                async for assistant in live_side.iter_assistants(client, graph_id):
                    evaluator.add_assistant(graph_id, assistant)
                async for thread in live_side.iter_threads(client, graph_id, progress=progress, live=live_graphs[graph_id]):
                    evaluator.add(thread)
        finally:
            progress.close()
        return GateReport(
            live_url=args.live,
            candidate=str(args.candidate),
            strict=args.strict,
            graphs=evaluator.summaries,
            findings=evaluator.findings(),
            notes=notes,
        )


def cmd_gate(args: argparse.Namespace) -> int:
    from migrations_playbook.candidate import load_candidate
    from migrations_playbook.render import render

    registered, candidates = load_candidate(Path(args.candidate), args.graph or None)
    if getattr(args, "checkpointer", None):
        from migrations_playbook import store_commands

        report = store_commands.gate(args, registered, candidates)
    else:
        report = asyncio.run(_scan(args, registered, candidates))
    print(render(report, args.format))
    return EXIT_BLOCKED if report.verdict == "block" else EXIT_PASS


# -- contract ------------------------------------------------------------------------


def _contracts(config: Path) -> dict[str, dict[str, Any]]:
    from migrations_playbook.candidate import contract_of, load_compiled

    return {gid: contract_of(gid, graph) for gid, graph in load_compiled(config).items()}


def cmd_contract(args: argparse.Namespace) -> int:
    from migrations_playbook import contract, settings

    config = Path(args.config).resolve()
    if not config.is_file():
        raise UsageError(f"config not found: {config}")
    try:
        paths = settings.contract_paths(config, contracts_flag=args.contracts_dir, records_flag=args.records_dir)
    except settings.SettingsError as exc:
        raise UsageError(str(exc)) from None
    contracts_dir, records_dir = paths.contracts_dir, paths.records_dir
    contracts = _contracts(config)
    if args.write:
        for graph_id, digest, changes in contract.write(contracts, contracts_dir):
            print(f"{graph_id} {digest}" + ("" if changes else "  (unchanged)"))
            for change in changes:
                print(f"  {change}")
        print(f"\nlocks written to {contracts_dir}; a record in {records_dir} must list each new hash")
        return EXIT_PASS
    failed = False
    for status in contract.check(contracts, contracts_dir, records_dir):
        mark = "FAIL" if status.problems else "ok"
        print(f"{mark:4}  {status.graph_id} {status.digest or ''}".rstrip())
        for change in status.changes:
            print(f"        {change}")
        for problem in status.problems:
            print(f"        {problem}")
        failed = failed or bool(status.problems)
    return EXIT_BLOCKED if failed else EXIT_PASS


# -- inflight ------------------------------------------------------------------------


async def _inflight(args: argparse.Namespace) -> dict[str, Any]:
    from migrations_playbook import live as live_side

    async with _live(args) as client:
        assistants = await live_side.live_graph_ids(client)
        wanted = _wanted_graphs(args.graph, assistants)
        counts: dict[str, dict[tuple[str, str, str], int]] = {}
        for graph_id in wanted:
            bucket = counts.setdefault(graph_id, {})
            async for thread in live_side.iter_threads(client, graph_id):
                version = thread.flow_version
                key = (
                    thread.status,
                    "none" if version is None else str(version),
                    ",".join(thread.pending) or "-",
                )
                bucket[key] = bucket.get(key, 0) + 1
        rows = {
            graph_id: [{"status": s, "flow_version": v, "next": n, "threads": c} for (s, v, n), c in sorted(bucket.items())]
            for graph_id, bucket in counts.items()
        }
        if args.running:
            args.refused = await _guard_refusals(client, args, wanted)
        return rows


async def _guard_refusals(client: Any, args: argparse.Namespace, graph_ids: list[str]) -> dict[str, Any]:
    """Per graph: the threads the running code's guard would refuse, by finding code."""
    from migrations_playbook import settings
    from migrations_playbook.guard import Guard

    running = Path(args.running).resolve()
    try:
        history = Path(args.lock_history) if args.lock_history else settings.contract_paths(running).contracts_dir
    except settings.SettingsError as exc:
        raise UsageError(str(exc)) from None
    guard = Guard.from_config(running, history)
    refused: dict[str, Any] = {}
    for graph_id in graph_ids:
        entry = refused.setdefault(graph_id, {"threads": 0, "by_code": {}, "thread_ids": []})
        offset = 0
        while True:
            page = await client.threads.search(
                metadata={"graph_id": graph_id},
                limit=500,
                offset=offset,
                select=["thread_id", "status", "values", "interrupts", "metadata"],
            )
            for thread in page:
                refusal = await guard.check(client, graph_id=graph_id, thread=thread)
                if refusal is None:
                    continue
                entry["threads"] += 1
                entry["thread_ids"] = (entry["thread_ids"] + [thread["thread_id"]])[:20]
                code = refusal.findings[0].code
                entry["by_code"][code] = entry["by_code"].get(code, 0) + 1
            if len(page) < 500:
                break
            offset += len(page)
    return refused


def cmd_inflight(args: argparse.Namespace) -> int:
    if getattr(args, "checkpointer", None):
        from migrations_playbook import store_commands

        data = store_commands.inflight(args)
    else:
        data = asyncio.run(_inflight(args))
    refused = getattr(args, "refused", None)
    if args.format == "json":
        print(json.dumps({"graphs": data, **({"refused": refused} if refused is not None else {})}, indent=2))
        return EXIT_PASS
    rows = [("graph", "status", "flow_version", "next", "threads")]
    for graph_id, entries in data.items():
        rows += [(graph_id, e["status"], e["flow_version"], e["next"], str(e["threads"])) for e in entries]
        if not entries:
            rows.append((graph_id, "-", "-", "-", "0"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    for graph_id, entry in (refused or {}).items():
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(entry["by_code"].items()))
        print(
            f"{graph_id}: the running code's guard would refuse {entry['threads']} thread(s)" + (f" ({codes})" if codes else "")
        )
    return EXIT_PASS


# -- replay --------------------------------------------------------------------------


def cmd_replay(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from migrations_playbook.render import render
    from migrations_playbook.replay import ResumeMapError, ResumeRule, StaleCopy, load_resume_map, replay, start_staging

    try:
        resume = json.loads(args.resume) if args.resume is not None else None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--resume must be JSON: {exc}") from None
    try:
        rule = ResumeRule(by_kind=load_resume_map(args.resume_map), derive=args.auto_resume, fallback=resume)
    except ResumeMapError as exc:
        raise UsageError(str(exc)) from None
    candidate = Path(args.candidate)
    if getattr(args, "checkpointer", None):  # a self-hosted store: the candidate in-process on a copy
        if args.persistence or args.staging_url:
            raise UsageError(
                "replay --checkpointer makes its own staging copy (a throwaway copy of the store): "
                "drop --persistence/--staging-url"
            )
        if args.plan:
            raise UsageError(
                "replay --plan runs on an Agent Server's staging copy (--persistence DIR or --staging-url URL). "
                "For a self-hosted store: copy the store (the SQLite file, or `createdb -T`), apply the plan "
                "there with `playbook migrate --checkpointer <the copy> --apply`, and resume its threads with "
                "the candidate on the copy"
            )
        from migrations_playbook.replay_store import replay as replay_store

        report = replay_store(args, rule)
        print(render(report, args.format))
        return EXIT_BLOCKED if report.verdict == "block" else EXIT_PASS
    if not (args.persistence or args.staging_url):  # as argparse says it for a required group
        args.parser.error(
            "replay needs a staging copy: one of --persistence DIR, --staging-url URL "
            "(or --checkpointer URI instead of --live, which makes one)"
        )
    with ExitStack() as stack:
        if args.persistence:
            try:
                staging_url = start_staging(candidate, Path(args.persistence), stack).url
            except FileNotFoundError as exc:
                raise UsageError(str(exc)) from None
        else:
            staging_url = args.staging_url
        try:
            if args.plan:
                from migrations_playbook.migrate import MigrateRefused
                from migrations_playbook.replay_plan import replay_with_plan

                try:
                    report = asyncio.run(replay_with_plan(args, rule, staging_url))
                except MigrateRefused as exc:
                    raise UsageError(str(exc)) from None
                print(render(report, args.format))
                return EXIT_BLOCKED if report.verdict == "block" else EXIT_PASS
            report = asyncio.run(
                replay(
                    live_url=args.live,
                    staging_url=staging_url,
                    candidate=str(candidate),
                    graph_ids=args.graph,
                    headers=args.headers,
                    rule=rule,
                )
            )
        except StaleCopy as exc:
            raise UsageError(str(exc)) from None
    print(render(report, args.format))
    return EXIT_BLOCKED if report.verdict == "block" else EXIT_PASS


# -- rules ---------------------------------------------------------------------------


def cmd_rules(args: argparse.Namespace) -> int:
    """The gate's rules, one per finding code (`migrations_playbook.rules`)."""
    from migrations_playbook.rules import ALL_RULES

    entries = [
        {"code": r.code, "severity": r.severity, "evidence": list(r.evidence), "why": r.why, "help": r.help} for r in ALL_RULES
    ]
    if args.format == "json":
        print(json.dumps({"rules": entries}, indent=2))
        return EXIT_PASS
    for entry in entries:
        print(f"{entry['code']}  ({entry['severity']}; evidence: {', '.join(entry['evidence'])})")
        print(f"  why: {entry['why']}")
        print(f"  fix: {entry['help']}")
    return EXIT_PASS


# -- snapshot ------------------------------------------------------------------------


async def _snapshot(args: argparse.Namespace) -> dict[str, Any]:
    from migrations_playbook import live as live_side

    async with _live(args) as client:
        assistants = await live_side.live_graph_ids(client)
        wanted = _wanted_graphs(args.graph, assistants)
        graphs = await live_side.live_graphs(client, {g: assistants[g] for g in wanted}, None)
        threads = []
        for graph_id in wanted:
            async for thread in live_side.iter_threads(client, graph_id):
                threads.append(thread.to_json())
        return {
            "snapshot_version": 1,
            "graphs": {g: {"topology": lg.topology.to_json() if lg.topology else None} for g, lg in graphs.items()},
            "threads": threads,
        }


def cmd_snapshot(args: argparse.Namespace) -> int:
    """Record what the gate reads from a live server, for offline evaluation and tests."""
    if getattr(args, "checkpointer", None):
        from migrations_playbook import store_commands

        data = store_commands.snapshot(args)
    else:
        data = asyncio.run(_snapshot(args))
    text = json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text)
        print(f"{len(data['threads'])} threads of {len(data['graphs'])} graphs written to {args.out}", file=sys.stderr)
    return EXIT_PASS


# -- turns / rerun --------------------------------------------------------------------


def _server_refusal(exc: Exception) -> str:
    """``<status>: <message>`` of an error status the server answered (langgraph-sdk or httpx error)."""
    from langgraph_sdk.errors import APIStatusError

    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", "?")
    if isinstance(exc, APIStatusError):
        detail = exc.message
        if detail.startswith(str(status)) and isinstance(exc.body, str) and exc.body.strip():
            detail = exc.body.strip()[:300]  # a plain-text (or HTML) body: the SDK keeps only "<status> <reason>"
    else:
        try:
            body = response.json() if response is not None else None
        except (ValueError, RuntimeError):  # not JSON, or a streamed body never read (httpx.ResponseNotRead)
            body = None
        reported = (body.get("detail") or body.get("message")) if isinstance(body, dict) else None
        detail = str(reported or exc)
    return detail if detail.startswith(str(status)) else f"{status}: {detail}"


async def _turns(args: argparse.Namespace) -> tuple[str | None, list[Any]]:
    from langgraph_sdk.errors import NotFoundError

    from migrations_playbook import turns

    async with _live(args) as client:
        try:
            history = await turns.fetch_history(client, args.thread_id)
        except NotFoundError:
            raise UsageError(f"thread {args.thread_id} not found on {args.live}") from None
        try:
            mapped = turns.turns_from_history(history, args.checkpoint)
        except turns.TurnsError as exc:
            raise UsageError(str(exc)) from None
        head = args.checkpoint or (history[0]["checkpoint"]["checkpoint_id"] if history else None)
        return head, mapped


def cmd_turns(args: argparse.Namespace) -> int:
    """Chat turns of one thread (HumanMessage boundaries) and their checkpoint ranges."""
    from migrations_playbook import turns

    head, mapped = asyncio.run(_turns(args))
    if args.format == "json":
        print(json.dumps(turns.to_json(args.thread_id, head, mapped), indent=2, ensure_ascii=False))
    elif not mapped:
        print(f"thread {args.thread_id} has no turns yet")
    else:
        print(turns.render_table(mapped))
    return EXIT_PASS


async def _rerun(args: argparse.Namespace, context: dict[str, Any] | None) -> Any:
    import httpx
    from langgraph_sdk.errors import APIStatusError, NotFoundError

    from migrations_playbook import turns

    async with _live(args) as client:
        try:
            return await turns.rerun_from_turn(
                client, args.thread_id, args.turn, args.input, context=context, assistant_id=args.assistant
            )
        except NotFoundError:
            raise UsageError(f"thread {args.thread_id} not found on {args.live}") from None
        except turns.TurnsError as exc:
            raise UsageError(str(exc)) from None
        except (APIStatusError, httpx.HTTPStatusError) as exc:
            raise UsageError(f"the server refused the rerun ({_server_refusal(exc)})") from None


def cmd_rerun(args: argparse.Namespace) -> int:
    """Rerun turn N with new text on a fork from the checkpoint before it."""
    from migrations_playbook import turns

    try:
        context = json.loads(args.context) if args.context is not None else None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--context must be JSON: {exc}") from None
    if context is not None and not isinstance(context, dict):
        raise UsageError("--context must be a JSON object")
    result = asyncio.run(_rerun(args, context))
    if args.format == "json":
        data = dataclasses.asdict(result)
        data["turns"] = turns.to_json(result.thread_id, result.new_head, result.turns)["turns"]
        print(json.dumps({"rerun_result_version": "1", **data}, indent=2, ensure_ascii=False))
    else:
        print(
            f"turn {result.turn} rerun on a fork from {result.fork_from}: run {result.run_id} {result.run_status}\n"
            f"original head {result.original_head} is untouched; new head {result.new_head}\n"
        )
        print(turns.render_table(result.turns))
    return EXIT_PASS if result.run_status == "success" else EXIT_BLOCKED


# -- activity --------------------------------------------------------------------------


def cmd_activity(args: argparse.Namespace) -> int:
    """Node entries per graph over a window, from LangSmith traces."""
    import os
    from datetime import UTC, datetime

    from migrations_playbook import activity

    try:
        window = activity.parse_since(args.since)
        until = datetime.fromisoformat(args.until) if args.until else None
        if until is not None and until.tzinfo is None:
            until = until.replace(tzinfo=UTC)
        known = None
        if args.config:
            from migrations_playbook.candidate import load_compiled

            compiled = load_compiled(Path(args.config).resolve())
            known = {gid: [n for n in graph.get_graph().nodes if not n.startswith("__")] for gid, graph in compiled.items()}
        project = args.project or os.environ.get(activity.PROJECT_ENV, "").strip() or activity.DEFAULT_PROJECT
        client = activity.make_client()
        report = activity.collect(
            client,
            project=project,
            window=window,
            until=until,
            graph_ids=args.graph,
            known_nodes=known,
            fields=args.fields,
        )
    except ValueError as exc:  # ActivityError, and a malformed --until
        raise UsageError(str(exc)) from None
    except activity.LangSmithUnreachable as exc:
        from migrations_playbook.live import LiveUnreachable

        raise LiveUnreachable(str(exc)) from None
    if args.format == "json":
        print(json.dumps(activity.to_json(report), indent=2))
    else:
        print(activity.render_table(report))
    return EXIT_PASS


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="playbook", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"playbook {version()} (langgraph-playbook)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def live_args(p: argparse.ArgumentParser, *, checkpointer: bool = False) -> None:
        if checkpointer:  # the source: an Agent Server, or a self-hosted checkpointer (store_commands.py)
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
        p.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="'Name: value'",
            help="extra HTTP header for the live server, e.g. 'Authorization: Bearer ...' (repeatable)",
        )

    gate = sub.add_parser("gate", help="check every live thread against candidate code")
    live_args(gate, checkpointer=True)
    gate.add_argument("--candidate", required=True, metavar="PATH/langgraph.json")
    gate.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    gate.add_argument("--strict", action="store_true", help="FIELD_DROPPED blocks instead of warning")
    gate.add_argument(
        "--live-contract",
        metavar="DIR",
        help="contract locks of the live code (for reducer checks; with --checkpointer, required: "
        "the live graph shape); default: what the server serves",
    )
    gate.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    gate.set_defaults(func=cmd_gate)

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
    contract.set_defaults(func=cmd_contract)

    inflight = sub.add_parser("inflight", help="drain monitor: threads by status x flow_version x next node")
    live_args(inflight, checkpointer=True)
    inflight.add_argument("--live-contract", metavar="DIR", help="with --checkpointer: contract locks of the live code")
    inflight.add_argument("--format", choices=("table", "json"), default="table")
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
    inflight.set_defaults(func=cmd_inflight)

    replay_parser = sub.add_parser(
        "replay", help="staging replay: serve a copy of the live threads with the candidate code and compare"
    )
    live_args(replay_parser, checkpointer=True)
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
    replay_parser.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    replay_parser.set_defaults(func=cmd_replay, parser=replay_parser)

    rules_parser = sub.add_parser("rules", help="every finding code: severity, evidence, why it breaks, how to fix it")
    rules_parser.add_argument("--format", choices=("table", "json"), default="table")
    rules_parser.set_defaults(func=cmd_rules)

    snapshot = sub.add_parser("snapshot", help="record the live threads and topology the gate reads (JSON)")
    live_args(snapshot, checkpointer=True)
    snapshot.add_argument("--live-contract", metavar="DIR", help="with --checkpointer: contract locks of the live code")
    snapshot.add_argument("--out", default="-", help="file to write (default: stdout)")
    snapshot.set_defaults(func=cmd_snapshot)

    def thread_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--live", required=True, metavar="URL", help="live Agent Server URL")
        p.add_argument("thread_id", metavar="THREAD_ID")
        p.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="'Name: value'",
            help="extra HTTP header for the live server, e.g. 'Authorization: Bearer ...' (repeatable)",
        )
        p.add_argument("--format", choices=("table", "json"), default="table")

    turns_parser = sub.add_parser("turns", help="a thread's chat turns (HumanMessage boundaries) -> checkpoint ranges")
    thread_args(turns_parser)
    turns_parser.add_argument("--checkpoint", metavar="ID", help="map the branch ending here (default: the newest checkpoint)")
    turns_parser.set_defaults(func=cmd_turns)

    rerun = sub.add_parser("rerun", help="rerun turn N with new text on a fork; the original branch is not touched")
    thread_args(rerun)
    rerun.add_argument("--turn", required=True, type=int, metavar="N", help="the turn to rerun (1-based, as `turns` shows)")
    rerun.add_argument("--input", required=True, metavar="TEXT", help="the new user message for that turn")
    rerun.add_argument("--context", metavar="JSON", help="run context (default: the context of the run that made turn N)")
    rerun.add_argument("--assistant", metavar="ID", help="assistant or graph id (default: the thread's assistant)")
    rerun.set_defaults(func=cmd_rerun)

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
    activity.add_argument("--format", choices=("table", "json"), default="table")
    activity.set_defaults(func=cmd_activity)

    from migrations_playbook.migrate_command import add_parser as add_migrate_parser  # its own module: migrate_command.py

    add_migrate_parser(sub)
    return parser


def _origin(exc: Exception) -> str:
    request = _request_of(exc)
    return f"{request.url.scheme}://{request.url.netloc.decode()}" if request is not None else "(unknown)"


def main(argv: Sequence[str] | None = None) -> int:
    import httpx
    from langgraph_sdk.errors import APIConnectionError

    from migrations_playbook.candidate import CandidateError
    from migrations_playbook.live import LiveUnreachable

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
    except (httpx.TransportError, APIConnectionError) as exc:  # outside `_live` (replay's two servers)
        print(f"playbook: error: server {_origin(exc)} is unreachable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except httpx.HTTPStatusError as exc:  # outside `_live`; exit 1 means blocked and nothing else
        print(f"playbook: error: server {_origin(exc)} {_refused(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("playbook: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
