"""Rehearse migration 0008 (campus_supervisor flow 2) on real `langgraph dev` servers.

    .venv/bin/python docs/rehearsals/rehearse_0008.py [--live-commit REV] [WORKDIR]

Prints the transcript pasted into migrations_playbook/records/0008-campus-answer-step.md:
each command as `$ playbook ...`, its output and exit code (server URLs shown as port 2024,
WORKDIR as $W), then the truth check. The live side is ``--live-commit`` (default: the
commit before the one that made flow 2, found by `git log`), the candidate this repo's HEAD
(both through `git archive`). Live threads of every shape flow 1 leaves (idle after a direct
answer, after a transfer, waiting for the library's or the academic agent's clarification,
several turns long) are created on the old code; the gate runs against them; then the
candidate serves a copy of them and each thread takes its next turn there, and the old code
takes the same turn on another copy: the answers, routing and stored turns must be equal.
Takes about two minutes.
"""

import argparse
import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import transcript  # docs/rehearsals/transcript.py, beside this script
from langgraph_sdk import get_client

from graphs.common.visible import stream_visible_text
from migrations_playbook.staging.server import DevServer

REPO = Path(__file__).resolve().parents[2]
GRAPH = "campus_supervisor"
FLOW_2_SUBJECT = "campus_supervisor flow 2"

CONVERSATIONS: dict[str, tuple[list[str], str]] = {
    "three-turns": (["오늘 학식 메뉴 뭐야?", "3층 좌석 남았어?", "자료구조 과제 마감 언제야?"], "5층 좌석 있어?"),
    "floor-question-ko": (["도서관 좌석 남았어?"], "2층"),
    "floor-question-en": (["Any free seats in the library?"], "the second floor"),
    "course-question": (["과제 마감 언제야?"], "자료구조"),
    "long": (
        [
            "오늘 학식 메뉴 뭐야?",
            "3층 좌석 남았어?",
            "운영체제 강의자료 보여줘",
            "점심 메뉴는?",
            "4층 자리 있어?",
            "What's for dinner?",
        ],
        "과제 마감 언제야?",
    ),
}
"""Turns on the old code, then the next turn on both codes (the truth check)."""


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live-commit", default=None, help="the deployed code (default: before flow 2)")
    parser.add_argument("workdir", nargs="?", type=Path, default=None)
    return parser.parse_args()


def before_flow_2() -> str:
    out = transcript.git(REPO, "log", "--format=%H %s", "--", "graphs/campus_supervisor/agents.py")
    # The oldest commit that says so (git log lists newest first; later ones touched agents.py too).
    made = [line.split()[0] for line in out.splitlines() if line.split(" ", 1)[1].startswith(FLOW_2_SUBJECT)][-1]
    return transcript.git(REPO, "rev-parse", f"{made}^")


URLS: list[str] = []


def playbook(root: Path, argv: list[str]) -> int:
    return transcript.playbook(root, URLS, argv).returncode


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def populate(url: str) -> dict[str, str]:
    client = get_client(url=url)
    threads = {}
    for name, (turns, _) in CONVERSATIONS.items():
        thread_id = (await client.threads.create(graph_id=GRAPH))["thread_id"]
        for text in turns:
            await client.runs.wait(thread_id, GRAPH, input=_user(text))
        threads[name] = thread_id
    await client.aclose()
    return threads


async def next_turns(url: str, threads: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each thread's next turn: visible text, routing, and the stored messages of that turn."""
    client = get_client(url=url)
    out = {}
    for name, thread_id in threads.items():
        text = CONVERSATIONS[name][1]
        visible = "".join([t async for t in stream_visible_text(client, thread_id, GRAPH, input=_user(text))])
        values = (await client.threads.get_state(thread_id))["values"]
        messages = values["messages"]
        start = max(i for i, m in enumerate(messages) if m["type"] == "human")
        turn = [(m["type"], m.get("name"), "<call>" if m.get("tool_calls") else m["content"]) for m in messages[start:]]
        out[name] = {
            "visible": visible,
            "routing": values.get("routing"),
            "turn": turn,
            "flow_version": values.get("flow_version"),
        }
    await client.aclose()
    return out


def serve_copy(root: Path, code: Path, live: Path, name: str) -> DevServer:
    """The live persistence folder, copied, served by ``code``."""
    folder = root / name
    folder.mkdir()
    shutil.copytree(live / ".langgraph_api", folder / ".langgraph_api")
    config = json.loads((code / "langgraph.json").read_text())
    config["dependencies"] = [str(code)]
    (folder / "langgraph.json").write_text(json.dumps(config, indent=2))
    return DevServer(folder / "langgraph.json", folder, env={"PYTHONPATH": str(code)}).start()


def main() -> int:
    args = parse()
    root = transcript.fresh_workdir(args, "rehearse-0008-")
    live_rev = args.live_commit or before_flow_2()
    head = transcript.git(REPO, "rev-parse", "HEAD")
    print(f"live code: {live_rev[:7]} (flow 1), candidate: {head[:7]} (flow 2)")
    live, cand = root / "live", root / "candidate"
    transcript.archive(REPO, live_rev, live)
    transcript.archive(REPO, "HEAD", cand)
    with DevServer(live / "langgraph.json", live) as server:
        threads = asyncio.run(populate(server.url))
    print("threads:", json.dumps(threads))
    # Stopped gracefully above (every record on disk); the live server again, on the old code:
    server = DevServer(live / "langgraph.json", live).start()
    URLS.append(server.url)
    try:
        playbook(root, ["inflight", "--live", server.url, "--graph", GRAPH])
        candidate = str(cand / "langgraph.json")
        gate = playbook(
            root,
            transcript.gate_argv(server.url, candidate, GRAPH),
        )
    finally:
        server.stop()
    results = {}
    for label, code in (("old code", live), ("candidate", cand)):
        copy = serve_copy(root, code, live, f"copy-{label.replace(' ', '-')}")
        try:
            results[label] = asyncio.run(next_turns(copy.url, threads))
        finally:
            copy.stop()
    print("\nTruth check: each live thread's next turn, on a copy served by the old code and by the candidate\n")
    print("| thread | next turn | visible text (both) | routing (both) | same stored turn |")
    print("|---|---|---|---|---|")
    equal = True
    for name in threads:
        old, new = results["old code"][name], results["candidate"][name]
        same_turn = [t for t in old["turn"] if t[2] != "<call>"] == [t for t in new["turn"] if t[2] != "<call>"]
        same = old["visible"] == new["visible"] and old["routing"] == new["routing"] and same_turn
        equal &= same
        visible = old["visible"] if old["visible"] == new["visible"] else f"{old['visible']!r} / {new['visible']!r}"
        routing = old["routing"] if old["routing"] == new["routing"] else f"{old['routing']} / {new['routing']}"
        print(f"| {name} | {CONVERSATIONS[name][1]} | {visible} | {routing} | {'yes' if same_turn else 'NO'} |")
    flow = {name: (results["old code"][name]["flow_version"], results["candidate"][name]["flow_version"]) for name in threads}
    print(f"\nflow_version (old code, candidate) after the turn: {flow}")
    print(f"\ngate exit {gate}; next turns equal on both codes: {equal}")
    return 0 if gate == 0 and equal else 1


if __name__ == "__main__":
    os.environ.pop("LANGGRAPH_CHECKPOINTER", None)
    raise SystemExit(main())
