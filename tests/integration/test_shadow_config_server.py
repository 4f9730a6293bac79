"""Issue 38, item 1: stored assistants and each side's whole langgraph.json, through `playbook check`.

A real `langgraph dev` serves tests/fixtures/config_project in token mode (its own auth: alice, bob and an
operator, tokens from langgraph.json's env; an http app; a graph reading a context field and a configurable
value; a stored value the server keeps pickled). Live data: two stored assistants (one sets the context's
``tone``, one the configurable ``style``; no thread ran with the first), threads of alice and bob. `check` runs
with the operator's ``--header`` and ``--identity`` alice and bob, on the same code and on candidates that
change the configuration, the auth, the http app, the serde settings or how the stored settings are read.
Each expectation is a fact of the copies: the findings name the threads (or assistants) it is about.

`make test` runs the same code and one breaking candidate (an auth keyed on another metadata field together
with a configurable value read under a new name); every other case is behind the ``matrix`` marker.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.integration.background import Background, ahead

pytestmark = pytest.mark.integration

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "config_project"
TOKENS = {"alice": "tok-alice", "bob": "tok-bob", "ops": "tok-ops"}


def _client(url: str, user: str) -> LangGraphClient:
    return get_client(url=url, headers={"Authorization": f"Bearer {TOKENS[user]}"}, api_key=None)


async def _live_data(url: str) -> dict[str, object]:
    alice, bob = _client(url, "alice"), _client(url, "bob")
    loud = await alice.assistants.create("notes", context={"tone": "shout"}, name="loud")
    long = await bob.assistants.create("notes", config={"configurable": {"style": "long"}}, name="long")
    threads: dict[str, list[str]] = {"alice": [], "bob": []}
    for user, client, assistant in (
        ("alice", alice, "notes"),
        ("alice", alice, long["assistant_id"]),
        ("bob", bob, "notes"),
    ):
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], assistant, input={"text": f"{user} writes about the rain in spring"})
        threads[user].append(thread["thread_id"])
    return {"loud": loud["assistant_id"], "long": long["assistant_id"], "threads": threads}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, dict]]:
    folder = tmp_path_factory.mktemp("config") / "live"
    shutil.copytree(FIXTURE, folder)
    with DevServer(folder / "langgraph.json", folder) as server:
        made = asyncio.run(_live_data(server.url))
    with DevServer(folder / "langgraph.json", folder) as server:  # a restart: what the live folder holds
        yield server.url, folder, made


def _candidate(tmp_path: Path, edits: list[tuple[str, str, str]]) -> Path:
    folder = tmp_path / "candidate"
    shutil.copytree(FIXTURE, folder)
    for name, old, new in edits:
        path = folder / name
        text = path.read_text()
        assert old in text, (name, old)
        path.write_text(text.replace(old, new))
    return folder / "langgraph.json"


def _check(url: str, folder: Path, candidate: Path) -> tuple[int, dict]:
    args = [
        sys.executable,
        "-m",
        "migrations_playbook",
        "check",
        "--live",
        url,
        "--persistence",
        str(folder),
        "--live-code",
        str(folder),
        "--candidate",
        str(candidate),
        "--header",
        f"Authorization: Bearer {TOKENS['ops']}",
        "--identity",
        f"alice=Authorization: Bearer {TOKENS['alice']}",
        "--identity",
        f"bob=Authorization: Bearer {TOKENS['bob']}",
        "--format",
        "json",
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, env={**os.environ}, check=False)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


def _blocks(report: dict) -> dict[str, dict]:
    return {f["code"]: f for f in report["findings"] if f["severity"] == "block"}


OWNER_KEY = ("auth.py", 'OWNER_KEY = "owner"', 'OWNER_KEY = "author"')
STYLE_RENAMED = ("notes.py", '.get("style", "short")', '.get("format", "short")')

BREAKING = {
    # auth: a filter keyed on another metadata field than the live threads carry
    "auth-owner-key": ([OWNER_KEY], {"SHADOW_OWNER_LOCKED_OUT"}),
    # langgraph.json: the tokens live clients hold are rotated in the env
    "env-tokens-rotated": (
        [("langgraph.json", "alice:tok-alice,bob:tok-bob", "alice:new-alice,bob:new-bob")],
        {"SHADOW_OWNER_LOCKED_OUT"},
    ),
    # http app: a middleware that refuses the API without a header live clients do not send
    "http-middleware-refuses": (
        [
            (
                "routes.py",
                'app = Starlette(routes=[Route("/about", about)])',
                "from starlette.middleware import Middleware\n"
                "from starlette.middleware.base import BaseHTTPMiddleware\n\n\n"
                "async def tenant_only(request, call_next):\n"
                "    if request.url.path.startswith('/threads') and 'x-tenant' not in request.headers:\n"
                "        return JSONResponse({'detail': 'x-tenant header required'}, status_code=403)\n"
                "    return await call_next(request)\n\n\n"
                'app = Starlette(routes=[Route("/about", about)], middleware=[Middleware(BaseHTTPMiddleware, '
                "dispatch=tenant_only)])",
            )
        ],
        {"SHADOW_OWNER_LOCKED_OUT"},
    ),
    # auth: the read filters dropped, so every user reads every thread
    "auth-filter-dropped": (
        [("auth.py", "    return None if ctx.user.identity in _operators() else _own(ctx)\n", "    return None\n")],
        {"SHADOW_THREAD_EXPOSED"},
    ),
    # serde: pickled values no longer read back
    "serde-no-pickle": (
        [("langgraph.json", '"http": {', '"checkpointer": {"serde": {"pickle_fallback": false}},\n  "http": {')],
        {"SHADOW_STORED_UNREADABLE"},
    ),
    # an assistant's stored context key renamed in the context schema: the stored value is dropped silently
    # (the context is coerced to the schema's fields), so the assistant falls back to the default
    "context-key-renamed": (
        [
            ("notes.py", '    tone: str = "plain"', '    voice: str = "plain"'),
            ("notes.py", "runtime.context.tone", "runtime.context.voice"),
        ],
        {"SHADOW_ASSISTANT_SETTING_IGNORED"},
    ),
    # the same rename, the new key required: every run through the stored assistant fails
    "context-key-renamed-required": (
        [
            ("notes.py", '    tone: str = "plain"', "    voice: str"),
            ("notes.py", "runtime.context.tone", "runtime.context.voice"),
        ],
        {"SHADOW_ASSISTANT_BROKEN"},
    ),
    # an assistant's stored configurable value read under a new name: every stored assistant falls back silently
    "configurable-read-renamed": ([STYLE_RENAMED], {"SHADOW_ASSISTANT_SETTING_IGNORED"}),
    # a stored configurable value the candidate rejects
    "configurable-value-rejected": (
        [
            (
                "notes.py",
                '    text = state["text"] if style == "long"',
                '    if style not in ("short", "medium"):\n        raise ValueError(f"unknown style {style}")\n'
                '    text = state["text"] if style == "medium"',
            )
        ],
        {"SHADOW_ASSISTANT_BROKEN"},
    ),
}

SAFE = {
    # langgraph.json: a new user, Studio's header no longer bypassing auth, the serde's default made explicit,
    # one more route in the http app
    "config-extended": [
        ("langgraph.json", "bob:tok-bob,", "bob:tok-bob,carol:tok-carol,"),
        ("langgraph.json", '"path": "./auth.py:auth"', '"path": "./auth.py:auth", "disable_studio_auth": true'),
        ("langgraph.json", '"http": {', '"checkpointer": {"serde": {"pickle_fallback": true}},\n  "http": {'),
        (
            "routes.py",
            'app = Starlette(routes=[Route("/about", about)])',
            'async def version(request: Request) -> JSONResponse:\n    return JSONResponse({"version": 2})\n\n\n'
            'app = Starlette(routes=[Route("/about", about), Route("/version", version)])',
        ),
    ],
    # a new optional context field, the stored ones still read (the reply's format changes: other values, a warning)
    "context-field-added": [
        ("notes.py", '    tone: str = "plain"', '    tone: str = "plain"\n    lang: str = "en"'),
        (
            "notes.py",
            'f"[{runtime.context.tone}/{style}] {reply}"',
            'f"[{runtime.context.tone}/{style}/{runtime.context.lang}] {reply}"',
        ),
    ],
}


SAME = "test_the_same_code_and_configuration_pass_reading_every_thread_as_its_owner"
BREAKING_BOTH = "test_an_auth_keyed_elsewhere_and_a_setting_read_under_a_new_name_block_naming_threads_and_assistant"


@pytest.fixture(scope="module")
def checked(
    request: pytest.FixtureRequest, live: tuple[str, Path, dict], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Background[tuple[int, dict]]]:
    """The `make test` tests' `check` runs, two at a time in the background (tests/integration/background.py)."""
    url, folder, _ = live
    root = tmp_path_factory.mktemp("breaking-both")
    yield from ahead(
        request,
        {
            SAME: lambda: _check(url, folder, folder / "langgraph.json"),
            BREAKING_BOTH: lambda: _check(url, folder, _candidate(root, [OWNER_KEY, STYLE_RENAMED])),
        },
    )


def test_the_same_code_and_configuration_pass_reading_every_thread_as_its_owner(checked: Background[tuple[int, dict]]) -> None:
    code, report = checked.result(SAME)
    assert (code, report["verdict"]) == (0, "pass"), _blocks(report)
    assert report["unproven"] == []
    notes = " | ".join(report["notes"])
    assert "3 thread(s) listed on each by the thread search of alice, bob" in notes, notes
    assert "read back as their owners (3 readable" in notes, notes
    assert "assistants: 2 stored assistant(s) on the live deployment; 2 run on both codes" in notes, notes


def test_an_auth_keyed_elsewhere_and_a_setting_read_under_a_new_name_block_naming_threads_and_assistant(
    live: tuple[str, Path, dict], checked: Background[tuple[int, dict]]
) -> None:
    _, _, made = live
    code, report = checked.result(BREAKING_BOTH)
    blocks = _blocks(report)
    assert code == 1 and {"SHADOW_OWNER_LOCKED_OUT", "SHADOW_ASSISTANT_SETTING_IGNORED"} <= set(blocks), report["findings"]
    locked = [f for f in report["findings"] if f["code"] == "SHADOW_OWNER_LOCKED_OUT"]
    assert {t for f in locked for t in f["thread_ids"]} == set(made["threads"]["alice"]) | set(made["threads"]["bob"])
    assert blocks["SHADOW_ASSISTANT_SETTING_IGNORED"]["assistant_ids"] == [made["long"]]


@pytest.mark.matrix
@pytest.mark.parametrize("name", sorted(BREAKING), ids=sorted(BREAKING))
def test_breaking_configuration_and_assistant_changes_block(live: tuple[str, Path, dict], tmp_path: Path, name: str) -> None:
    url, folder, made = live
    edits, expected = BREAKING[name]
    code, report = _check(url, folder, _candidate(tmp_path, edits))
    blocks = _blocks(report)
    assert code == 1 and expected <= set(blocks), report["findings"]
    for found in expected:
        finding = blocks[found]
        assert finding["thread_ids"] or finding["assistant_ids"], finding
        if found.startswith("SHADOW_ASSISTANT"):
            assert set(finding["assistant_ids"]) <= {made["loud"], made["long"]}


@pytest.mark.matrix
@pytest.mark.parametrize("name", sorted(SAFE), ids=sorted(SAFE))
def test_safe_configuration_and_assistant_changes_pass(live: tuple[str, Path, dict], tmp_path: Path, name: str) -> None:
    url, folder, _ = live
    code, report = _check(url, folder, _candidate(tmp_path, SAFE[name]))
    assert (code, report["verdict"]) == (0, "pass"), _blocks(report)
